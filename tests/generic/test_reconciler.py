"""GenericJobs through the real controller, over HTTP against the embedded API server (a stand-in kubelet moves the
pods): names, labels, Services and variables; success and failure rules; restarts under their per-type limit
(also across a controller stopped between counting a restart and carrying it out); a finished job left alone;
``cleanUpPolicy``; debug mode; pause and resume; the immutable run-mode fields; the T9k scheduler's PodGroup, with
and without its API; an invalid spec; ``kubectl get gj``. Research note §3 and its checklist §5.2 are the spec."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.generic.api import validate_genericjob
from mxjob_controller.local.apiserver.server import APIServer
from tests.gang_support import t9k_crd
from tests.generic_support import (
    EXAMPLES,
    PLURAL,
    T9K_PODGROUPS,
    GenericHarness,
    genericjob,
    replica,
)
from tests.reconciler_support import DEADLINE, jobs_path, metric, wait_metric, wait_settled
from tests.support import Kube, Kubectl, wait_for

NS = "default"
SUCCESS = "The job has finished successfully."


@pytest.fixture
def gj(apiserver: APIServer, kube: Kube, tmp_path: Path) -> Iterator[GenericHarness]:
    with GenericHarness(apiserver, kube, tmp_path) as harness:
        yield harness


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status.get("conditions") or ()}


def uid_of(gj: GenericHarness, name: str) -> str:
    return gj.kubelet.pod(NS, name)["metadata"]["uid"]


def wait_new_pod(gj: GenericHarness, name: str, old_uid: str) -> dict[str, Any]:
    """Wait until ``name`` is a new pod (another UID than ``old_uid``); the pod."""
    def fresh() -> dict[str, Any] | None:
        reply = gj.kube.get(f"/api/v1/namespaces/{NS}/pods/{name}")
        return reply.body if reply.ok and reply.body["metadata"]["uid"] != old_uid else None
    return wait_for(fresh, timeout=DEADLINE, what=f"{name} recreated")


def restart_counts(gj: GenericHarness, name: str) -> dict[str, int]:
    return {t["type"]: t["restartCount"] for t in gj.status(NS, name).get("tasks") or ()}


def test_the_keras_example_gets_named_labelled_pods_services_and_tf_config_then_succeeds_by_worker_0(gj):
    body = yaml.safe_load((EXAMPLES / "keras-multiworker.yaml").read_text())
    body["metadata"]["namespace"] = NS
    uid = gj.create_job(body)["metadata"]["uid"]
    controller = gj.start_generic()
    pods = gj.wait_children(NS, "keras-mnist", 4)
    assert names(pods) == [f"keras-mnist-worker-{r}" for r in range(4)]
    hosts = [f"keras-mnist-worker-{r}:2222" for r in range(4)]
    for rank, pod in enumerate(pods):
        assert pod["metadata"]["labels"] == {
            "genericjob": "keras-mnist", "genericjob-replica": f"keras-mnist-worker-{rank}",
            "tensorstack.dev/component": "genericjob", "tensorstack.dev/component-type": "user",
            "training.kubeflow.org/operator-name": "genericjob-controller",
            "training.kubeflow.org/job-name": "keras-mnist", "training.kubeflow.org/replica-type": "worker",
            "training.kubeflow.org/replica-index": str(rank)}
        [owner] = pod["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["uid"], owner["controller"]) == ("GenericJob", uid, True)
        assert pod["spec"]["restartPolicy"] == "Never", "the controller owns restarts"
        [env] = pod["spec"]["containers"][0]["env"]
        assert json.loads(env["value"]) == {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": rank}}
    services = gj.services(NS, "keras-mnist")
    assert names(services) == names(pods)
    for service, pod in zip(services, pods, strict=True):
        assert service["spec"]["clusterIP"] == "None"
        assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("http", 2222)]
        labels = pod["metadata"]["labels"]
        assert all(labels[k] == v for k, v in service["spec"]["selector"].items()), "selects exactly its pod"

    status = gj.wait_phase(NS, "keras-mnist", "Running")
    assert conditions(status)["Initialized"] == ("True", "-", "The job has been initialized successfully.")
    gj.run_all(NS, "keras-mnist")
    wait_for(lambda: gj.status(NS, "keras-mnist")["aggregate"]["running"] == 4, timeout=DEADLINE,
             what="4 running")
    gj.kubelet.succeed(NS, "keras-mnist-worker-0")
    status = gj.wait_phase(NS, "keras-mnist", "Succeeded")
    assert {k: v for k, v in conditions(status).items() if k in ("Running", "Completed", "Failed")} == {
        "Running": ("False", "Succeeded", SUCCESS), "Completed": ("True", "Succeeded", SUCCESS),
        "Failed": ("False", "Succeeded", SUCCESS)}
    wait_for(lambda: names(gj.pods(NS, "keras-mnist")) == ["keras-mnist-worker-0"], timeout=DEADLINE,
             what="the unfinished workers cleaned up (cleanUpPolicy Unfinished)")
    wait_for(lambda: gj.status(NS, "keras-mnist")["aggregate"] == {
        "creating": 0, "pending": 0, "running": 0, "succeeded": 1, "failed": 0, "unknown": 0, "deleted": 3},
        timeout=DEADLINE, what="the cleaned-up replicas counted as deleted")
    assert gj.status(NS, "keras-mnist")["phase"] == "Succeeded"

    gj.wait_events(NS, uid, "GenericJobSucceeded")   # announced and counted after the status write
    wait_metric(controller.registry, "successful", namespace=NS, framework="generic")
    assert controller.recorder.flush(DEADLINE)
    assert [e["message"] for e in gj.events(NS, uid, "GenericJobSucceeded")] == [SUCCESS]
    assert len(gj.events(NS, uid, "GenericJobRunning")) == 1
    assert {e["source"]["component"] for e in gj.events(NS, uid)} == {"genericjob-controller"}
    for what in ("created", "successful"):
        assert metric(controller.registry, what, NS, framework="generic") == 1, what
    assert metric(controller.registry, "failed", NS, framework="generic") == 0


def test_a_job_without_spec_service_has_pods_and_no_services_and_loses_the_port_less_ones_it_had(gj):
    """T9k: ``spec.service`` "Defaults to empty and no service will be created". A port-less headless Service an
    older version of this controller made for such a job is deleted."""
    uid = gj.create_job(genericjob("nosvc", NS, replica("worker", 2)))["metadata"]["uid"]
    labels = {"training.kubeflow.org/operator-name": "genericjob-controller",
              "training.kubeflow.org/job-name": "nosvc", "training.kubeflow.org/replica-type": "worker",
              "training.kubeflow.org/replica-index": "0"}
    old = {"apiVersion": "v1", "kind": "Service", "metadata": {
        "name": "nosvc-worker-0", "namespace": NS, "labels": labels, "ownerReferences": [{
            "apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob", "name": "nosvc", "uid": uid,
            "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"clusterIP": "None", "selector": labels}}
    assert gj.kube.post(f"/api/v1/namespaces/{NS}/services", old).status == 201
    assert names(gj.services(NS, "nosvc")) == ["nosvc-worker-0"]
    gj.start_generic()
    pods = gj.wait_pods(NS, "nosvc", 2)
    assert names(pods) == ["nosvc-worker-0", "nosvc-worker-1"]
    gj.wait_phase(NS, "nosvc", "Running")   # every replica created: nothing waits for a Service
    wait_for(lambda: gj.services(NS, "nosvc") == [], timeout=DEADLINE, what="the port-less Service deleted")
    assert gj.kube.get(f"/api/v1/namespaces/{NS}/services").body["items"] == [], "no Service of any name"


def test_a_failure_rule_fails_the_job_naming_the_rule_and_the_failed_pod(gj):
    gj.create_job(genericjob("fr", NS, replica("master"), replica("worker", 3, policy="Never"),
                             successRules=[{"master": [0]}], failureRules=[{"worker": ["1"]}]))
    controller = gj.start_generic()
    gj.wait_pods(NS, "fr", 4)
    gj.run_all(NS, "fr")
    gj.kubelet.fail(NS, "fr-worker-1", 127)
    status = gj.wait_phase(NS, "fr", "Failed")
    message = 'The job is failed with rule: {"worker":["1"]}'
    got = conditions(status)
    assert (got["Failed"], got["Completed"], got["Running"]) == (
        ("True", "Failed", message), ("True", "Failed", message), ("False", "Failed", message))
    assert got["ReplicaFailure"] == ("True", "ErrorInPod", "Pod[fr-worker-1] exited with error code 127")
    assert gj.kubelet.pod(NS, "fr-worker-1")["status"]["phase"] == "Failed", "never restarted (policy Never)"
    gj.wait_events(NS, reason="GenericJobFailed")   # announced and counted after the status write
    wait_metric(controller.registry, "failed", namespace=NS, framework="generic")
    assert controller.recorder.flush(DEADLINE)
    assert [(e["type"], e["message"]) for e in gj.events(NS, reason="GenericJobFailed")] == [("Warning", message)]
    assert metric(controller.registry, "failed", NS, framework="generic") == 1


def test_restarts_recreate_the_pod_under_its_name_and_count_per_type_until_the_limit(gj):
    gj.create_job(genericjob("rs", NS, replica("worker", 2, policy="OnFailure", limit=2)))
    controller = gj.start_generic()
    gj.wait_pods(NS, "rs", 2)
    gj.run_all(NS, "rs")
    for failures, name in enumerate(("rs-worker-0", "rs-worker-1"), start=1):
        old = uid_of(gj, name)
        gj.kubelet.fail(NS, name, 3)
        wait_new_pod(gj, name, old)
        wait_for(lambda n=failures: restart_counts(gj, "rs") == {"worker": n}, timeout=DEADLINE,
                 what=f"{failures} restarts of the worker type")
        gj.kubelet.run(NS, name)
    assert gj.status(NS, "rs")["phase"] == "Running"
    gj.kubelet.fail(NS, "rs-worker-0", 3)   # the type's 2 restarts are used up: worker 0 has failed for good
    status = gj.wait_phase(NS, "rs", "Failed")
    assert conditions(status)["Failed"][2] == 'The job is failed with rule: {"worker":["0"]}', \
        "no failureRules: any replica failed for good fails the job"
    assert restart_counts(gj, "rs") == {"worker": 2}
    assert controller.recorder.flush(DEADLINE)
    assert sorted(e["message"] for e in gj.events(NS, reason="GenericJobRestarting")) == [
        "Restarting pod rs-worker-0: it exited with code 3 (restart 1 of 2 for worker)",
        "Restarting pod rs-worker-1: it exited with code 3 (restart 2 of 2 for worker)"]
    assert metric(controller.registry, "restarted", NS, framework="generic") == 2


def test_always_restarts_a_succeeded_replica_until_its_limit_and_a_success_rule_still_ends_the_job(gj):
    gj.create_job(genericjob("al", NS, replica("master", policy="Never"), replica("worker", policy="Always", limit=1),
                             successRules=[{"master": [0]}]))
    gj.start_generic()
    gj.wait_pods(NS, "al", 2)
    gj.run_all(NS, "al")
    old = uid_of(gj, "al-worker-0")
    gj.kubelet.succeed(NS, "al-worker-0")
    wait_new_pod(gj, "al-worker-0", old)
    assert restart_counts(gj, "al") == {"master": 0, "worker": 1}
    gj.kubelet.succeed(NS, "al-worker-0")
    wait_for(lambda: gj.status(NS, "al")["aggregate"]["succeeded"] == 1, timeout=DEADLINE,
             what="the worker's second success kept: its limit is used up")
    assert gj.status(NS, "al")["phase"] == "Running", "worker 0 is in no success rule"
    gj.kubelet.succeed(NS, "al-master-0")
    gj.wait_phase(NS, "al", "Succeeded")
    assert restart_counts(gj, "al") == {"master": 0, "worker": 1}


def test_a_restart_counted_before_the_controller_stopped_is_carried_out_without_counting_it_again(gj):
    gj.create_job(genericjob("cr", NS, replica("worker", policy="OnFailure", limit=5)))
    controller = gj.start_generic()
    gj.wait_pods(NS, "cr", 1)
    gj.run_all(NS, "cr")
    gj.wait_phase(NS, "cr", "Running")
    gj.stop(controller)
    failed = uid_of(gj, "cr-worker-0")
    gj.kubelet.fail(NS, "cr-worker-0", 1)
    # What a controller stopped between its status write and the deletion leaves: the restart counted, the UID noted.
    status = gj.status(NS, "cr")
    status["tasks"][0].update(restartCount=1, restarting=[failed])
    reply = gj.kube.patch(jobs_path(NS, "cr", PLURAL) + "/status", {"status": {"tasks": status["tasks"]}})
    assert reply.ok, reply.body
    gj.start_generic()
    wait_new_pod(gj, "cr-worker-0", failed)
    wait_for(lambda: "restarting" not in gj.status(NS, "cr")["tasks"][0], timeout=DEADLINE,
             what="the UID dropped once its pod is gone")
    assert restart_counts(gj, "cr") == {"worker": 1}, "counted once"
    assert gj.status(NS, "cr")["phase"] == "Running"


def test_when_no_success_rule_can_be_fulfilled_the_job_fails(gj):
    gj.create_job(genericjob("ns", NS, replica("master", policy="Never"), replica("worker", policy="Never"),
                             successRules=[{"master": [0], "worker": [0]}], failureRules=[{"master": [0]}]))
    gj.start_generic()
    gj.wait_pods(NS, "ns", 2)
    gj.run_all(NS, "ns")
    gj.kubelet.fail(NS, "ns-worker-0", 2)
    status = gj.wait_phase(NS, "ns", "Failed")
    assert conditions(status)["Failed"] == ("True", "Failed", "The job is failed: no success rule can be fulfilled")


def test_a_finished_job_never_changes_phase_nor_recreates_pods_and_costs_no_write_when_unchanged(gj):
    gj.create_job(genericjob("fin", NS, replica("worker", 2, policy="OnFailure", limit=3),
                             successRules=[{"worker": [0]}]))
    controller = gj.start_generic()
    gj.wait_pods(NS, "fin", 2)
    gj.run_all(NS, "fin")
    gj.kubelet.succeed(NS, "fin-worker-0")
    finished = gj.wait_phase(NS, "fin", "Succeeded")
    gj.kubelet.fail(NS, "fin-worker-1", 1)   # with budget left, but the job has finished: no restart
    assert gj.kube.delete(f"/api/v1/namespaces/{NS}/pods/fin-worker-0").ok
    wait_for(lambda: gj.status(NS, "fin")["aggregate"]["deleted"] == 1, timeout=DEADLINE,
             what="the deleted pod counted")
    status = gj.status(NS, "fin")
    assert (status["phase"], status["conditions"]) == (finished["phase"], finished["conditions"])
    assert status["aggregate"]["failed"] == 1 and restart_counts(gj, "fin") == {"worker": 0}
    since = time.time()
    gj.settle(controller, f"{NS}/fin")
    assert names(gj.pods(NS, "fin")) == ["fin-worker-1"], "nothing recreated"
    assert gj.writes("patch", PLURAL, since=since) == [], "an unchanged finished job: no status write"
    assert gj.writes("create", "pods", since=since) == []


def test_a_resync_of_a_finished_job_reconciles_nothing_and_a_change_of_it_does(gj):
    """As an MXJob's (issue 35): a finished GenericJob with nothing left to write or clean costs its resyncs one
    dict lookup, no reconcile; a change of the job, or of its pods, is reconciled as ever, and it settles again."""
    controller = gj.start_generic(resync_period=0.2)
    for name in ("done", "busy"):
        gj.create_job(genericjob(name, NS, replica("worker", policy="Never"), cleanUpPolicy="None"))
    gj.wait_pods(NS, "done", 1)
    gj.kubelet.succeed(NS, "done-worker-0")
    gj.wait_phase(NS, "done", "Succeeded")
    gj.wait_pods(NS, "busy", 1)
    gj.kubelet.run(NS, "busy-worker-0")
    gj.wait_phase(NS, "busy", "Running")
    done, busy = f"{NS}/done", f"{NS}/busy"
    wait_settled(gj, controller, done, busy, confirm=5)
    gj.settle(controller, done)                       # its own change: reconciled
    since = time.monotonic()
    assert gj.kube.delete(f"/api/v1/namespaces/{NS}/pods/done-worker-0").ok   # a change of its pod: reconciled
    wait_for(lambda: gj.status(NS, "done")["aggregate"]["deleted"] == 1, timeout=DEADLINE,
             what="the deleted pod counted")
    # the trace's record is written when the reconcile ends, after the status write seen above
    wait_for(lambda: gj.reconciles(controller, done, since) >= 1, timeout=DEADLINE, what="the pod's change reconciled")
    wait_settled(gj, controller, done, busy)  # and settled again
    assert gj.status(NS, "done")["phase"] == "Succeeded"


def test_a_finished_job_edited_into_an_invalid_spec_stays_finished_and_never_runs_again(gj):
    gj.create_job(genericjob("done", NS, replica("worker", policy="Never")))
    controller = gj.start_generic()
    gj.wait_pods(NS, "done", 1)
    gj.kubelet.succeed(NS, "done-worker-0")
    finished = gj.wait_phase(NS, "done", "Succeeded")
    gj.patch_job(NS, "done", {"spec": {"successRules": [{"worker": [5]}]}})   # the CRD accepts it; we do not
    gj.settle(controller, f"{NS}/done")
    status = gj.status(NS, "done")
    assert (status["phase"], status["conditions"]) == (finished["phase"], finished["conditions"])
    gj.patch_job(NS, "done", {"spec": {"successRules": None}})
    gj.settle(controller, f"{NS}/done")
    assert gj.status(NS, "done")["phase"] == "Succeeded"
    assert [p["status"]["phase"] for p in gj.pods(NS, "done")] == ["Succeeded"], "nothing recreated"


@pytest.mark.parametrize(("policy", "pods_left", "services_left"), [
    ("None", ["cu-worker-0", "cu-worker-1", "cu-worker-2"], ["cu-worker-0", "cu-worker-1", "cu-worker-2"]),
    ("Unfinished", ["cu-worker-0", "cu-worker-2"], ["cu-worker-0", "cu-worker-2"]),
    ("All", [], []),
])
def test_clean_up_policies(gj, policy, pods_left, services_left):
    gj.create_job(genericjob("cu", NS, replica("worker", 3, policy="Never"), cleanUpPolicy=policy,
                             successRules=[{"worker": [0]}], failureRules=[{"worker": [0]}],
                             service={"ports": [{"name": "p", "port": 80}]}))
    gj.start_generic()
    gj.wait_children(NS, "cu", 3)
    gj.kubelet.run(NS, "cu-worker-1")           # Running: unfinished
    gj.kubelet.fail(NS, "cu-worker-2", 1)       # Failed: finished (in no failure rule)
    wait_for(lambda: gj.status(NS, "cu")["aggregate"]["failed"] == 1, timeout=DEADLINE, what="worker 2 failed")
    gj.kubelet.succeed(NS, "cu-worker-0")
    gj.wait_phase(NS, "cu", "Succeeded")
    wait_for(lambda: names(gj.pods(NS, "cu")) == pods_left and names(gj.services(NS, "cu")) == services_left,
             timeout=DEADLINE, what=f"cleanUpPolicy {policy}: pods {pods_left}, services {services_left}")


def test_debug_mode_runs_the_debug_command_evaluates_no_rule_and_restarts_nothing(gj):
    init = [{"name": "fetch", "image": "busybox", "command": ["true"]}]
    master = replica("master", policy="OnFailure", limit=5, command=["train"], args=["--epochs", "3"])
    master["template"]["spec"]["initContainers"] = init
    worker = replica("worker", 2, command=["train"], args=["--rank", "$(rank)"])
    worker["template"]["spec"]["initContainers"] = init
    gj.create_job(genericjob("dbg", NS, master, worker, runMode={"debug": {"enabled": True, "replicaSpecs": [
        {"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd", "-p", "$(rank)"]}]}}))
    gj.start_generic()
    pods = {p["metadata"]["name"]: p["spec"] for p in gj.wait_pods(NS, "dbg", 3)}
    assert pods["dbg-master-0"]["containers"][0]["command"] == ["sleep", "inf"]
    assert "args" not in pods["dbg-master-0"]["containers"][0]
    assert [c["name"] for c in pods["dbg-master-0"]["initContainers"]] == ["fetch"], "kept for master"
    assert pods["dbg-worker-1"]["containers"][0]["command"] == ["/usr/bin/sshd", "-p", "1"]
    assert "initContainers" not in pods["dbg-worker-1"]
    status = gj.wait_phase(NS, "dbg", "Running")
    assert conditions(status)["Running"][:2] == ("True", "Debug")
    gj.run_all(NS, "dbg")
    gj.kubelet.fail(NS, "dbg-master-0", 1)
    gj.kubelet.succeed(NS, "dbg-worker-0")
    wait_for(lambda: gj.status(NS, "dbg")["aggregate"]["failed"] == 1, timeout=DEADLINE, what="master failed")
    status = gj.status(NS, "dbg")
    assert status["phase"] == "Running" and restart_counts(gj, "dbg") == {"master": 0, "worker": 0}
    assert gj.kubelet.pod(NS, "dbg-master-0")["status"]["phase"] == "Failed", "not restarted in debug mode"


def test_pause_deletes_the_pods_keeps_the_services_and_resume_recreates_them_with_the_resume_specs(gj):
    gj.create_job(genericjob("pz", NS, replica("worker", 2, policy="OnFailure", limit=3, command=["train"]),
                             service={"ports": [{"name": "p", "port": 80}]},
                             runMode={"pause": {"enabled": False, "resumeSpecs": [
                                 {"type": "worker", "command": ["train", "--resume"], "args": ["$(rank)"]}]}}))
    controller = gj.start_generic()
    gj.wait_children(NS, "pz", 2)
    gj.run_all(NS, "pz")
    old = uid_of(gj, "pz-worker-1")
    gj.kubelet.fail(NS, "pz-worker-1", 1)
    wait_new_pod(gj, "pz-worker-1", old)
    gj.patch_job(NS, "pz", {"spec": {"runMode": {"pause": {"enabled": True}}}})
    wait_for(lambda: gj.pods(NS, "pz") == [], timeout=DEADLINE, what="every pod deleted")
    status = wait_for(lambda: s if conditions(s := gj.status(NS, "pz")).get("Paused", ("",))[0] == "True" else None,
                      timeout=DEADLINE, what="Paused=True")
    assert status["phase"] == "Paused"
    assert conditions(status)["Paused"] == ("True", "Paused", "The job is paused: all its pods are deleted.")
    assert conditions(status)["Running"] == ("False", "Paused", "The job is paused.")
    assert status["aggregate"]["deleted"] == 2
    assert names(gj.services(NS, "pz")) == ["pz-worker-0", "pz-worker-1"], "Services stay"

    gj.patch_job(NS, "pz", {"spec": {"runMode": {"pause": {"enabled": False}}}})
    pods = gj.wait_children(NS, "pz", 2)
    for rank, pod in enumerate(pods):
        container = pod["spec"]["containers"][0]
        assert (container["command"], container["args"]) == (["train", "--resume"], [str(rank)])
    status = gj.wait_phase(NS, "pz", "Running")
    assert conditions(status)["Paused"] == ("False", "Resumed", "The job is resumed.")
    assert restart_counts(gj, "pz") == {"worker": 1}, "kept across the pause"
    gj.wait_events(NS, reason="GenericJobResumed")
    assert controller.recorder.flush(DEADLINE)
    assert len(gj.events(NS, reason="GenericJobPaused")) == 1
    assert len(gj.events(NS, reason="GenericJobResumed")) == 1


def test_resume_specs_and_debug_mode_cannot_change_but_pause_can_be_toggled(gj):
    gj.create_job(genericjob("im", NS, runMode={"pause": {"resumeSpecs": [{"type": "worker", "command": ["a"]}]}}))
    path = jobs_path(NS, "im", PLURAL)
    reply = gj.kube.patch(path, {"spec": {"runMode": {"pause": {"resumeSpecs": [{"type": "worker",
                                                                                  "command": ["b"]}]}}}})
    assert reply.status == 422, reply.body
    assert "spec.runMode.pause.resumeSpecs: Invalid value: field is immutable: set resumeSpecs when the job is " \
           "created" in reply.body["message"]
    reply = gj.kube.patch(path, {"spec": {"runMode": {"debug": {"enabled": True}}}})
    assert reply.status == 422 and "spec.runMode.debug.enabled" in reply.body["message"], reply.body
    assert gj.kube.patch(path, {"spec": {"runMode": {"pause": {"enabled": True}}}}).ok


def test_the_t9k_scheduler_gets_a_podgroup_of_the_whole_job_and_the_pods_join_it(gj):
    gj.apiserver.create(t9k_crd())
    podgroups = T9K_PODGROUPS.format(namespace=NS)
    wait_for(lambda: gj.kube.get(podgroups).ok, timeout=DEADLINE, what="T9k PodGroups served")
    uid = gj.create_job(genericjob("sch", NS, replica("ps", policy="Never"), replica("worker", 4, policy="Never"),
                                   successRules=[{"worker": [0]}],
                                   scheduler={"t9kScheduler": {"queue": "default", "priority": 10}}))["metadata"]["uid"]
    gj.start_generic()
    pods = gj.wait_pods(NS, "sch", 5)
    group = gj.kube.get(f"{podgroups}/sch").body
    assert group["spec"] == {"minMember": 5, "queue": "default", "priority": 10,
                             "roles": [{"name": "ps", "minMember": 1}, {"name": "worker", "minMember": 4}]}
    assert [(o["kind"], o["uid"]) for o in group["metadata"]["ownerReferences"]] == [("GenericJob", uid)]
    for pod in pods:
        labels = pod["metadata"]["labels"]
        assert pod["spec"]["schedulerName"] == "t9k-scheduler"
        assert (labels["scheduler.tensorstack.dev/group-name"], labels["scheduler.tensorstack.dev/queue"],
                labels["scheduler.tensorstack.dev/role"]) == ("sch", "default",
                                                              labels["training.kubeflow.org/replica-type"])
    gj.run_all(NS, "sch")
    gj.kubelet.succeed(NS, "sch-worker-0")
    gj.wait_phase(NS, "sch", "Succeeded")
    wait_for(lambda: gj.kube.get(f"{podgroups}/sch").status == 404, timeout=DEADLINE,
             what="the PodGroup deleted once the job finished")


def test_without_the_podgroup_api_the_job_runs_on_the_default_scheduler_with_one_warning(gj):
    uid = gj.create_job(genericjob("nosch", NS, scheduler={"t9kScheduler": {"queue": "q"}}))["metadata"]["uid"]
    controller = gj.start_generic()
    [pod] = gj.wait_pods(NS, "nosch", 1)
    assert "schedulerName" not in pod["spec"] or pod["spec"]["schedulerName"] == "default-scheduler"
    assert "scheduler.tensorstack.dev/group-name" not in pod["metadata"]["labels"]
    gj.run_all(NS, "nosch")
    gj.kubelet.succeed(NS, "nosch-worker-0")
    gj.wait_phase(NS, "nosch", "Succeeded")
    assert controller.recorder.flush(DEADLINE)
    [warning] = gj.events(NS, uid, "SchedulerUnavailable")
    assert warning["type"] == "Warning" and "podgroups.scheduler.tensorstack.dev" in warning["message"]


def test_an_invalid_spec_fails_with_every_field_error_and_a_fixed_one_runs(gj):
    gj.create_job(genericjob("bad", NS, replica("worker", 2), successRules=[{"worker": [5], "chief": [0]}]))
    controller = gj.start_generic()
    status = gj.wait_phase(NS, "bad", "Failed")
    failed = conditions(status)["Failed"]
    assert failed[:2] == ("True", "InvalidSpec")
    assert 'spec.successRules[0].worker[0]: Invalid value: 5: out of range: worker has 2 replicas' in failed[2]
    assert 'spec.successRules[0].chief: Unsupported value: "chief": supported values: "worker"' in failed[2]
    assert gj.pods(NS, "bad") == []
    gj.wait_events(NS, reason="InvalidSpec")   # recorded after the status write
    assert controller.recorder.flush(DEADLINE)
    assert len(gj.events(NS, reason="InvalidSpec")) == 1
    gj.patch_job(NS, "bad", {"spec": {"successRules": [{"worker": [1]}]}})
    gj.wait_pods(NS, "bad", 2)
    status = gj.wait_phase(NS, "bad", "Running")
    assert "Failed" not in conditions(status)


def test_kubectl_gets_genericjobs_by_short_name_with_their_phase(gj, kubectl: Kubectl):
    gj.create_job(genericjob("kc", NS))
    gj.start_generic()
    gj.wait_phase(NS, "kc", "Running")
    out = kubectl.ok("get", "gj", "-n", NS)
    header, row = out.splitlines()
    assert header.split() == ["NAME", "PHASE", "AGE"]
    assert row.split()[:2] == ["kc", "Running"]


def test_kubectl_applies_the_crd_and_creates_every_example_which_validates(kubectl: Kubectl):
    kubectl.ok("apply", "-f", str(Path(__file__).resolve().parents[2] / "manifests" / "crd" /
                                  "batch.tensorstack.dev_genericjobs.yaml"))
    kubectl.ok("wait", "--for", "condition=established", "crd/genericjobs.batch.tensorstack.dev", "--timeout=60s")
    resources = kubectl.ok("api-resources", "--api-group", "batch.tensorstack.dev")
    assert "genericjobs" in resources and "gj" in resources and "GenericJob" in resources
    examples = sorted(EXAMPLES.glob("*.yaml"))
    assert len(examples) >= 3
    for example in examples:
        kubectl.ok("create", "-f", str(example))
    stored = kubectl.json("get", "gj", "-o", "json")["items"]
    assert sorted(j["metadata"]["name"] for j in stored) == sorted(
        yaml.safe_load(e.read_text())["metadata"]["name"] for e in examples)
    for job in stored:
        assert validate_genericjob(job) == [], job["metadata"]["name"]
    keras = kubectl.json("get", "gj", "keras-mnist")
    assert keras["spec"]["successRules"] == [{"worker": [0]}], "rules are kept as written"
