"""Gang scheduling end to end, with the tests playing the scheduler: Volcano holds every pod back until its PodGroup
is admitted (``Inqueue``), then all are created; the PodGroup's ``minMember`` and ``minResources`` (ordered by
priority class values read from the API); no update of an unchanged PodGroup across 20 reconciles; a user's
scheduler name kept with one Warning; the PodGroup deleted once when the job finishes; scheduler-plugins'
PodGroup and pod label; a missing PodGroup CRD refused at start."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.mxnet.controller import ControllerOptions, MXJobController, PodGroupAPIMissingError
from mxjob_controller.runtime.client import Client, ClientConfig
from tests import gang_support as gs
from tests.reconciler_support import DEADLINE, Harness, container, mxjob, replica
from tests.support import wait_for

NS = "default"



@pytest.fixture
def volcano(h: Harness) -> gs.PodGroups:
    gs.install(h.kube, gs.volcano_crd())
    return gs.volcano(h.kube)


def podgroup_writes(h: Harness, verb: str, since: float | None = None) -> list[Any]:
    return h.writes(verb, "podgroups", since=since)


def resources(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if requests is not None:
        out["requests"] = requests
    if limits is not None:
        out["limits"] = limits
    return out


def with_template(job: dict[str, Any], rtype: str, **spec: Any) -> dict[str, Any]:
    job["spec"]["mxReplicaSpecs"][rtype]["template"]["spec"].update(spec)
    return job


@pytest.mark.as_service_account(install="overlays/gang-scheduling")
def test_a_podgroup_volcano_marks_unschedulable_is_said_on_the_job_once_per_reason(h: Harness,
                                                                                   volcano: gs.PodGroups) -> None:
    """Volcano's condition on a group it will not admit becomes a Warning PodGroupPending on the job (what Volcano's
    own job controller writes), once per message: a resync or another change of the group says nothing new."""
    controller = h.start(gang_scheduler_name="volcano")
    h.create_job(mxjob("j", worker=2))
    uid = h.job(NS, "j")["metadata"]["uid"]
    volcano.wait(NS, "j")

    def unschedulable(message: str) -> None:
        reply = h.kube.patch(volcano.path(NS, "j"), {"status": {"phase": "Pending", "conditions": [{
            "type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": message}]}})
        assert reply.ok, reply.body
    unschedulable("2/2 tasks in gang unschedulable: resource in cluster is overused")
    [event] = h.wait_events(NS, uid, "PodGroupPending")
    assert (event["type"], event["message"]) == (
        "Warning", "PodGroup default/j is unschedulable: 2/2 tasks in gang unschedulable: resource in cluster is "
                   "overused")
    volcano.set_phase(NS, "j", "Pending")            # the group changes, the reason does not
    h.settle(controller, f"{NS}/j")
    assert [e["count"] for e in h.events(NS, uid, "PodGroupPending")] == [1]
    unschedulable("2/2 tasks in gang unschedulable: cpu 2 short")
    events = h.wait_events(NS, uid, "PodGroupPending", count=2)
    assert sorted(e["message"].rpartition(": ")[2] for e in events) == ["cpu 2 short", "resource in cluster is "
                                                                                        "overused"]
    assert h.pods(NS, "j") == []


@pytest.mark.as_service_account(install="overlays/gang-scheduling")
def test_volcano_holds_every_pod_until_the_podgroup_is_admitted(h: Harness, volcano: gs.PodGroups) -> None:
    controller = h.start(gang_scheduler_name="volcano")
    h.create_job(mxjob("j", scheduler=1, server=1, worker=2) | {"metadata": {
        "name": "j", "namespace": NS, "annotations": {"team": "vision"}}})
    job = h.job(NS, "j")
    group = volcano.wait(NS, "j")
    assert group["spec"] == {"minMember": 4, "queue": "default", "minResources": {}}
    assert group["metadata"]["annotations"] == {"team": "vision"}     # the job's, as upstream
    assert group["metadata"]["ownerReferences"] == [{
        "apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "j", "uid": job["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True}]
    assert group["metadata"]["labels"]["training.kubeflow.org/operator-name"] == "mxjob-controller"
    h.wait_condition(NS, "j", "Created")
    h.settle(controller, f"{NS}/j")
    assert h.pods(NS, "j") == [] and h.services(NS, "j") == []     # no phase yet: held
    volcano.set_phase(NS, "j", "Pending")
    h.settle(controller, f"{NS}/j")
    assert h.pods(NS, "j") == []                                    # Pending: still held
    volcano.set_phase(NS, "j", "Inqueue")
    pods = h.wait_children(NS, "j", 4)                              # admitted: every pod at once
    for pod in pods:
        rtype = pod["metadata"]["labels"]["training.kubeflow.org/replica-type"]
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "j"
        assert pod["metadata"]["annotations"]["volcano.sh/task-spec"] == rtype
    assert len(podgroup_writes(h, "create")) == 1


@pytest.mark.as_service_account(install="overlays/gang-scheduling")
def test_a_podgroup_the_go_operator_made_is_adopted_and_anyone_elses_blocks_the_job(
        h: Harness, volcano: gs.PodGroups) -> None:
    ours = h.create_job(mxjob("ours", scheduler=0, server=0, worker=1))
    h.create_job(mxjob("taken", scheduler=0, server=0, worker=1))
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "ours", "uid": ours["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    for name, refs in (("ours", [owner]), ("taken", [])):   # training-operator's groups carry no labels
        reply = h.kube.post(volcano.path(NS), {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                                               "metadata": {"name": name, "ownerReferences": refs},
                                               "spec": {"minMember": 1, "queue": "old-queue"},
                                               "status": {"phase": "Inqueue"}})
        assert reply.status == 201, reply.body
    controller = h.start(gang_scheduler_name="volcano")
    h.wait_children(NS, "ours", 1)
    adopted = volcano.get(NS, "ours")
    assert adopted["metadata"]["labels"]["training.kubeflow.org/operator-name"] == "mxjob-controller"
    assert adopted["spec"] == {"minMember": 1, "queue": "old-queue"}   # its queue kept; no empty minResources added
    assert all(r.code == 409 for r in podgroup_writes(h, "create"))
    h.settle(controller, f"{NS}/taken")
    assert h.pods(NS, "taken") == []
    assert volcano.get(NS, "taken")["metadata"].get("labels") is None
    assert controller.recorder.flush(DEADLINE)
    taken = h.job(NS, "taken")["metadata"]["uid"]
    assert {e["message"] for e in h.events(NS, taken, "FailedCreatePodGroup")} == {
        'Error creating: podgroup "taken" already exists and is not controlled by MXJob taken'}


def test_min_member_and_min_resources_follow_priority_class_values(h: Harness, volcano: gs.PodGroups) -> None:
    gs.priority_class(h.kube, "high", 1000)
    gs.priority_class(h.kube, "low", -5)
    h.start(gang_scheduler_name="volcano")
    job = mxjob("j", scheduler=1, server=2, worker=2,
                runPolicy={"schedulingPolicy": {"minAvailable": 3, "queue": "research", "priorityClass": "high"}})
    with_template(job, "Worker", priorityClassName="high", containers=[container(resources=resources(
        {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}))])
    with_template(job, "Server", containers=[container(resources=resources(limits={"cpu": "500m",
                                                                                   "memory": "512Mi"}))])
    with_template(job, "Scheduler", priorityClassName="low", containers=[container(resources=resources(
        {"cpu": "250m"}))])
    h.create_job(job)
    group = volcano.wait(NS, "j")
    # the 3 pods with the highest priority: both workers (1000), then one server (no class: 0; limits count)
    assert group["spec"] == {"minMember": 3, "queue": "research", "priorityClassName": "high",
                             "minResources": {"cpu": "2500m", "memory": "2560Mi", "nvidia.com/gpu": "2"}}


def test_min_resources_given_by_the_job_are_used_as_they_are(h: Harness, volcano: gs.PodGroups) -> None:
    h.start(gang_scheduler_name="volcano")
    h.create_job(mxjob("j", scheduler=0, server=0, worker=3, runPolicy={"schedulingPolicy": {
        "minResources": {"cpu": "3000m", "memory": "1024Mi"}}}))
    assert volcano.wait(NS, "j")["spec"] == {"minMember": 3, "queue": "default",
                                             "minResources": {"cpu": "3", "memory": "1Gi"}}


def test_an_unchanged_podgroup_gets_no_update_and_a_changed_one_exactly_one(h: Harness,
                                                                            volcano: gs.PodGroups) -> None:
    controller = h.start(gang_scheduler_name="volcano")
    job = mxjob("j", scheduler=1, server=1, worker=2)
    with_template(job, "Worker", containers=[container(resources=resources({"cpu": "1000m"}))])
    h.create_job(job)
    volcano.wait(NS, "j")
    volcano.set_phase(NS, "j", "Inqueue")
    h.wait_children(NS, "j", 4)
    since = time.time()
    for _ in range(20):
        h.settle(controller, f"{NS}/j")
    assert podgroup_writes(h, "patch", since) == [] and podgroup_writes(h, "update", since) == []
    assert podgroup_writes(h, "create", since) == []
    h.patch_job(NS, "j", {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 3}}}})
    wait_for(lambda: volcano.get(NS, "j")["spec"]["minMember"] == 5, timeout=DEADLINE, what="minMember 5")
    for _ in range(3):
        h.settle(controller, f"{NS}/j")
    assert len(podgroup_writes(h, "patch", since)) == 1
    group = volcano.get(NS, "j")
    assert group["spec"] == {"minMember": 5, "queue": "default", "minResources": {"cpu": "3"}}
    assert group["status"] == {"phase": "Inqueue"}    # the scheduler's part is left alone


def test_a_scheduler_name_in_the_template_is_kept_with_one_warning(h: Harness, volcano: gs.PodGroups) -> None:
    controller = h.start(gang_scheduler_name="volcano")
    job = mxjob("j", scheduler=0, server=0, worker=2)
    with_template(job, "Worker", schedulerName="my-scheduler")
    h.create_job(job)
    volcano.wait(NS, "j")
    volcano.set_phase(NS, "j", "Inqueue")
    pods = h.wait_children(NS, "j", 2)
    assert {p["spec"]["schedulerName"] for p in pods} == {"my-scheduler"}
    assert all(p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "j" for p in pods)
    assert h.kube.delete(f"/api/v1/namespaces/{NS}/pods/j-worker-1").ok     # recreated: no second warning
    wait_for(lambda: len(h.pods(NS, "j")) == 2 and pods[1]["metadata"]["uid"] not in
             {p["metadata"]["uid"] for p in h.pods(NS, "j")}, timeout=DEADLINE, what="j-worker-1 recreated")
    assert controller.recorder.flush(DEADLINE)
    uid = h.job(NS, "j")["metadata"]["uid"]
    warnings = h.events(NS, uid, "SetPodTemplateSchedulerName")
    assert [(e["type"], e["count"], e["message"]) for e in warnings] == [
        ("Warning", 1, "Another scheduler is specified when gang-scheduling is enabled and it will not be "
                       "overwritten")]


@pytest.mark.as_service_account(install="overlays/gang-scheduling")
def test_the_podgroup_is_deleted_once_when_the_job_finishes(h: Harness, volcano: gs.PodGroups) -> None:
    controller = h.start(gang_scheduler_name="volcano")
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    volcano.wait(NS, "j")
    volcano.set_phase(NS, "j", "Running")
    h.wait_children(NS, "j", 3)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    h.kubelet.succeed(NS, "j-scheduler-0")
    h.wait_condition(NS, "j", "Succeeded")
    volcano.wait_gone(NS, "j")
    for _ in range(3):
        h.settle(controller, f"{NS}/j")
    assert len(podgroup_writes(h, "delete")) == 1
    assert controller.recorder.flush(DEADLINE)
    uid = h.job(NS, "j")["metadata"]["uid"]
    assert [(e["message"], e["count"]) for e in h.events(NS, uid, "JobTerminated")] == [
        ("Job has been terminated. Deleting PodGroup", 1)]
    assert [(e["message"], e["count"]) for e in h.events(NS, uid, "SuccessfulDeletePodGroup")] == [
        ("Deleted PodGroup: j", 1)]


def test_a_podgroup_that_cannot_be_deleted_does_not_hold_back_the_cleanup(apiserver: APIServer, h: Harness,
                                                                         volcano: gs.PodGroups) -> None:
    """The finished job's PodGroup delete keeps failing: its pods and services are cleaned up all the same (here by
    a later pass: the first pod delete fails once), the failure is reported (a Warning) and retried with back-off
    until the delete goes through."""
    rule = apiserver.faults.add(FaultRule(verb="delete", resource="podgroups", code=500))
    apiserver.faults.add(FaultRule(verb="delete", resource="pods", code=500, count=1))
    controller = h.start(gang_scheduler_name="volcano")
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    volcano.wait(NS, "j")
    volcano.set_phase(NS, "j", "Running")
    h.wait_children(NS, "j", 3)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    h.kubelet.succeed(NS, "j-scheduler-0")
    h.wait_condition(NS, "j", "Succeeded")
    wait_for(lambda: not h.pods(NS, "j") and not h.services(NS, "j"), timeout=DEADLINE,
             what="pods and services cleaned up while the PodGroup delete fails")
    wait_for(lambda: rule.fired >= 1, timeout=DEADLINE, what="the PodGroup delete refused")
    assert rule.fired >= 1 and volcano.get(NS, "j") is not None
    uid = h.job(NS, "j")["metadata"]["uid"]
    h.wait_events(NS, uid, "FailedDeletePodGroup")   # recorded once the refused delete has returned
    assert controller.recorder.flush(DEADLINE)
    assert h.events(NS, uid, "FailedDeletePodGroup")
    apiserver.faults.clear()
    volcano.wait_gone(NS, "j")   # retried (with back-off) once the API accepts it


def test_suspending_deletes_the_podgroup_and_resuming_makes_it_again(h: Harness, volcano: gs.PodGroups) -> None:
    h.start(gang_scheduler_name="volcano")
    h.create_job(mxjob("j", scheduler=0, server=0, worker=2))
    first = volcano.wait(NS, "j")
    volcano.set_phase(NS, "j", "Inqueue")
    h.wait_children(NS, "j", 2)
    h.patch_job(NS, "j", {"spec": {"runPolicy": {"suspend": True}}})
    h.wait_condition(NS, "j", "Suspended")
    volcano.wait_gone(NS, "j")
    wait_for(lambda: not h.pods(NS, "j"), timeout=DEADLINE, what="pods deleted")
    h.patch_job(NS, "j", {"spec": {"runPolicy": {"suspend": False}}})
    again = volcano.wait(NS, "j")
    assert again["metadata"]["uid"] != first["metadata"]["uid"]
    assert "status" not in again and h.pods(NS, "j") == []    # a new group, not admitted yet: pods wait
    volcano.set_phase(NS, "j", "Inqueue")
    h.wait_children(NS, "j", 2)


@pytest.mark.as_service_account(install="overlays/gang-scheduling")
def test_scheduler_plugins_podgroup_and_pods(h: Harness) -> None:
    gs.install(h.kube, gs.scheduler_plugins_crd())
    groups = gs.scheduler_plugins(h.kube)
    h.start(gang_scheduler_name="my-coscheduler")
    job = mxjob("j", scheduler=1, server=0, worker=2, runPolicy={"schedulingPolicy": {
        "scheduleTimeoutSeconds": 120}})
    job["spec"]["mxReplicaSpecs"]["Scheduler"] = replica(1)
    with_template(job, "Worker", containers=[container(resources=resources({"memory": "1Gi"}))])
    h.create_job(job)
    pods = h.wait_children(NS, "j", 3)     # never held back: the coscheduling plugin gates binding itself
    group = groups.get(NS, "j")
    assert group is not None
    assert group["spec"] == {"minMember": 3, "minResources": {"memory": "2Gi"}, "scheduleTimeoutSeconds": 120}
    for pod in pods:
        assert pod["spec"]["schedulerName"] == "my-coscheduler"
        assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "j"
        assert "scheduling.k8s.io/group-name" not in (pod["metadata"].get("annotations") or {})
    groups.set_phase(NS, "j", "Scheduled")   # the scheduler's status write leaves the spec alone
    assert groups.get(NS, "j")["spec"] == group["spec"]


def test_start_refuses_gang_scheduling_without_the_podgroup_crd(apiserver: APIServer, h: Harness) -> None:
    client = Client(ClientConfig(host=apiserver.url, qps=-1), component="mxjob-controller",
                    program="mxjob-controller")
    ours = ("mxjob-controller", "informer-", "events-")
    before = {t for t in threading.enumerate() if t.name.startswith(ours)}
    try:
        for name, crd in (("volcano", "podgroups.scheduling.volcano.sh (scheduling.volcano.sh/v1beta1)"),
                          ("my-coscheduler", "podgroups.scheduling.x-k8s.io (scheduling.x-k8s.io/v1alpha1)")):
            controller = MXJobController(client, ControllerOptions(gang_scheduler_name=name,
                                                                   registry=CollectorRegistry()))
            with pytest.raises(PodGroupAPIMissingError, match=r"needs the PodGroup CRD ") as raised:
                controller.start()
            assert crd in str(raised.value)
    finally:
        client.close()
    assert not [t for t in threading.enumerate() if t.name.startswith(ours) and t not in before and t.is_alive()]


@pytest.mark.parametrize("name", [None, "", "none", "None"])
def test_gang_scheduling_is_off_without_a_scheduler_name(h: Harness, name: str | None) -> None:
    controller = h.start(gang_scheduler_name=name)      # no PodGroup CRD needed
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1))
    [pod] = h.wait_children(NS, "j", 1)
    assert controller.gang is None
    assert pod["spec"].get("schedulerName", "default-scheduler") == "default-scheduler"
    assert "scheduling.k8s.io/group-name" not in (pod["metadata"].get("annotations") or {})
