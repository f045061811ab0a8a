"""The reconciler's children, end to end against the embedded API server over HTTP: upstream's table cases (a
1/4/2 job's 7 pods and 7 headless services, nothing more while pending, exactly the missing ones, scale-down),
what the pods carry (labels, annotations, owner, restart policy, the MXNet environment), children the job does
not control, adoption of the old operator's children, and failed writes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer
from tests.reconciler_support import DEADLINE, Harness, mxjob, replica
from tests.support import wait_for

NS = "default"



def names(objs: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env") or []}


JOB_1_4_2 = ["j-scheduler-0", "j-server-0", "j-server-1", "j-worker-0", "j-worker-1", "j-worker-2", "j-worker-3"]


@pytest.mark.as_service_account
def test_a_1_4_2_job_creates_7_pods_and_7_headless_services(h: Harness) -> None:
    h.start()
    job = h.create_job(mxjob("j", scheduler=1, server=2, worker=4))
    pods = h.wait_children(NS, "j", 7)
    services = h.services(NS, "j")
    assert names(pods) == names(services) == JOB_1_4_2
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "j", "uid": job["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    for pod in pods:
        name = pod["metadata"]["name"]
        rtype, index = name.split("-")[1:]
        assert pod["metadata"]["ownerReferences"] == [owner]
        labels = pod["metadata"]["labels"]
        assert {k: v for k, v in labels.items() if k != "training.kubeflow.org/job-role"} == {
            "training.kubeflow.org/operator-name": "mxjob-controller", "training.kubeflow.org/job-name": "j",
            "training.kubeflow.org/replica-type": rtype, "training.kubeflow.org/replica-index": index,
            "group-name": "kubeflow.org", "job-name": "j", "replica-type": rtype, "replica-index": index}
        assert ("training.kubeflow.org/job-role" in labels) is (rtype == "server")
        assert pod["spec"]["restartPolicy"] == "Never"
    for svc in services:
        name = svc["metadata"]["name"]
        rtype, index = name.split("-")[1:]
        assert svc["metadata"]["ownerReferences"] == [owner]
        assert svc["spec"]["clusterIP"] == "None"
        assert svc["spec"]["selector"] == {
            "training.kubeflow.org/operator-name": "mxjob-controller", "training.kubeflow.org/job-name": "j",
            "training.kubeflow.org/replica-type": rtype, "training.kubeflow.org/replica-index": index}
        assert [(p["name"], p["port"]) for p in svc["spec"]["ports"]] == [("mxjob-port", 9091)]
    wait_for(lambda: len(h.writes("create", "pods")) >= 7 and len(h.writes("create", "services")) >= 7,
             timeout=DEADLINE, what="the creates audited")
    assert len(h.writes("create", "pods")) == 7 and len(h.writes("create", "services")) == 7


def test_while_all_pods_pend_nothing_more_is_created_and_the_job_is_not_running(h: Harness) -> None:
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=2, worker=4))
    h.wait_children(NS, "j", 7)
    wait_for(lambda: "Created" in h.conditions(NS, "j"), timeout=DEADLINE, what="the Created condition")
    for _ in range(3):
        h.settle(controller, f"{NS}/j")
    assert len(h.writes("create", "pods")) == 7 and len(h.writes("create", "services")) == 7
    status = h.job(NS, "j")["status"]
    assert list(h.conditions(NS, "j")) == ["Created"]
    assert status["replicaStatuses"] == {"Scheduler": {}, "Server": {}, "Worker": {}}


def own_child(kind: str, job: dict[str, Any], rtype: str, index: int) -> dict[str, Any]:
    """A child as the controller would have made it (written by hand, not by the code under test)."""
    name = f"{job['metadata']['name']}-{rtype}-{index}"
    labels = {"training.kubeflow.org/operator-name": "mxjob-controller", "training.kubeflow.org/job-name": "j",
              "training.kubeflow.org/replica-type": rtype, "training.kubeflow.org/replica-index": str(index)}
    meta = {"name": name, "namespace": NS, "labels": labels, "ownerReferences": [
        {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": job["metadata"]["name"],
         "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]}
    if kind == "Pod":
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"restartPolicy": "Never", "containers": [{"name": "mxnet", "image": "mxjob/test:1"}]}}
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta,
            "spec": {"clusterIP": "None", "selector": labels, "ports": [{"name": "mxjob-port", "port": 9091}]}}


def create(h: Harness, body: dict[str, Any]) -> dict[str, Any]:
    plural = "pods" if body["kind"] == "Pod" else "services"
    reply = h.kube.post(f"/api/v1/namespaces/{NS}/{plural}", body)
    assert reply.status == 201, reply.body
    return reply.body


def test_with_3_of_7_missing_exactly_3_pods_and_3_services_are_created(h: Harness) -> None:
    job = h.create_job(mxjob("j", scheduler=1, server=2, worker=4))
    present = [("scheduler", 0), ("server", 1), ("worker", 0), ("worker", 3)]
    kept = set()
    for rtype, index in present:
        kept.add(create(h, own_child("Pod", job, rtype, index))["metadata"]["uid"])
        kept.add(create(h, own_child("Service", job, rtype, index))["metadata"]["uid"])
    h.start()
    h.wait_children(NS, "j", 7)
    wait_for(lambda: "Created" in h.conditions(NS, "j"), timeout=DEADLINE, what="the Created condition")
    wait_for(lambda: len(h.writes("create", "pods")) >= 3 and len(h.writes("create", "services")) >= 3,
             timeout=DEADLINE, what="the creates audited")
    assert len(h.writes("create", "pods")) == 3 and len(h.writes("create", "services")) == 3
    for objs in (h.pods(NS, "j"), h.services(NS, "j")):
        assert names([o for o in objs if o["metadata"]["uid"] not in kept]) == ["j-server-0", "j-worker-1",
                                                                               "j-worker-2"]


@pytest.mark.as_service_account
def test_scaling_workers_down_deletes_the_last_worker_and_its_service(h: Harness) -> None:
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=2))
    h.wait_children(NS, "j", 4)
    h.patch_job(NS, "j", {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 1}}}})
    h.wait_children(NS, "j", 3)
    assert names(h.pods(NS, "j")) == names(h.services(NS, "j")) == ["j-scheduler-0", "j-server-0", "j-worker-0"]
    wait_for(lambda: h.writes("delete", "pods") and h.writes("delete", "services"), timeout=DEADLINE,
             what="the deletes audited")
    assert [r.name for r in h.writes("delete", "pods")] == ["j-worker-1"]
    assert [r.name for r in h.writes("delete", "services")] == ["j-worker-1"]
    uid = h.job(NS, "j")["metadata"]["uid"]
    for reason in ("SuccessfulDeletePod", "SuccessfulDeleteService"):   # recorded once the delete has returned
        h.wait_events(NS, uid, reason)
    assert controller.recorder.flush(DEADLINE)
    assert [e["message"] for e in h.events(NS, uid, "SuccessfulDeletePod")] == ["Deleted pod: j-worker-1"]
    assert [e["message"] for e in h.events(NS, uid, "SuccessfulDeleteService")] == ["Deleted service: j-worker-1"]


def test_template_labels_annotations_and_finalizers_are_copied_and_our_keys_win(h: Harness) -> None:
    controller = h.start()
    meta = {"labels": {"team": "vision", "training.kubeflow.org/replica-type": "bogus"},
            "annotations": {"sidecar.istio.io/inject": "false"}, "finalizers": ["example.com/keep"]}
    body = mxjob("j", scheduler=0, server=0, worker=2)
    body["spec"]["mxReplicaSpecs"]["Worker"] = replica(2, metadata=meta, restartPolicy="Always")
    h.create_job(body)
    for pod in h.wait_children(NS, "j", 2):
        assert pod["metadata"]["labels"]["team"] == "vision"
        assert pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "worker"
        assert pod["metadata"]["annotations"] == {"sidecar.istio.io/inject": "false"}
        assert pod["metadata"]["finalizers"] == ["example.com/keep"]
        assert pod["spec"]["restartPolicy"] == "Never"   # the replica's, not the template's
    uid = h.job(NS, "j")["metadata"]["uid"]
    h.wait_events(NS, uid, "SetPodTemplateRestartPolicy")
    assert controller.recorder.flush(DEADLINE)
    [warning] = h.events(NS, uid, "SetPodTemplateRestartPolicy")   # one per generation, not one per pod
    assert warning["type"] == "Warning" and warning["count"] == 1
    for pod in h.pods(NS, "j"):   # let the pods go (their finalizer would hold them)
        h.kube.patch(f"/api/v1/namespaces/{NS}/pods/{pod['metadata']['name']}", {"metadata": {"finalizers": None}})


def test_the_exact_environment_of_a_1_1_1_job(h: Harness) -> None:
    h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    pods = {p["metadata"]["name"]: p for p in h.wait_children(NS, "j", 3)}
    for name, role in (("j-scheduler-0", "scheduler"), ("j-server-0", "server"), ("j-worker-0", "worker")):
        env = env_of(pods[name])
        config = json.loads(env.pop("MX_CONFIG"))
        assert config["cluster"] == {"scheduler": [{"url": "j-scheduler-0", "port": 9091}],
                                     "server": [{"url": "j-server-0", "port": 9091}],
                                     "worker": [{"url": "j-worker-0", "port": 9091}]}
        assert config["labels"] == {"scheduler": "", "server": "", "worker": ""}
        assert config["task"] == {"type": role, "index": 0}
        expected = {"DMLC_PS_ROOT_PORT": "9091", "DMLC_PS_ROOT_URI": "j-scheduler-0", "DMLC_NUM_SERVER": "1",
                    "DMLC_NUM_WORKER": "1", "DMLC_ROLE": role, "DMLC_USE_KUBERNETES": "1"}
        if role == "worker":
            expected["DMLC_WORKER_ID"] = "0"
        assert env == expected


def test_a_1_2_2_job_counts_and_numbers_its_replicas(h: Harness) -> None:
    h.start()
    h.create_job(mxjob("j", scheduler=1, server=2, worker=2))
    for pod in h.wait_children(NS, "j", 5):
        env = env_of(pod)
        rtype, index = pod["metadata"]["name"].split("-")[1:]
        assert (env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"], env["DMLC_ROLE"]) == ("2", "2", rtype)
        assert env.get("DMLC_WORKER_ID") == (index if rtype == "worker" else None)
        assert json.loads(env["MX_CONFIG"])["task"] == {"type": rtype, "index": int(index)}


def foreign_pod(name: str, index: str) -> dict[str, Any]:
    """A pod with our labels and name pattern, controlled by a TFJob (a kind this server does not serve, so its
    garbage collector leaves it alone)."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": name, "namespace": NS,
        "labels": {"training.kubeflow.org/operator-name": "mxjob-controller", "training.kubeflow.org/job-name": "j",
                   "training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": index},
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "j", "uid": "tfjob-uid",
                             "controller": True}]},
        "spec": {"containers": [{"name": "mxnet", "image": "tf:1"}]}}


def test_a_pod_controlled_by_another_kind_is_never_counted_or_touched(h: Harness) -> None:
    held = create(h, foreign_pod("j-worker-0", "0"))
    stray = create(h, foreign_pod("j-worker-7", "7"))
    h.kubelet.run(NS, "j-worker-0")
    controller = h.start(blocked_retry=0.2)
    h.create_job(mxjob("j", scheduler=1, server=0, worker=2))
    wait_for(lambda: len(h.services(NS, "j")) == 3, timeout=DEADLINE, what="the services")
    h.wait_condition(NS, "j", "Created")   # written first; the blocked name is added once the create is refused
    wait_for(lambda: 'Cannot create pod "j-worker-0": the name is held by an object MXJob j does not control' in
             h.conditions(NS, "j")["Created"]["message"], timeout=DEADLINE, what="the blocked name in Created")
    uid = h.job(NS, "j")["metadata"]["uid"]
    wait_for(lambda: h.reconciles(controller, f"{NS}/j") >= 4, timeout=DEADLINE, what="blocked retries")
    h.run_all(NS, "j")   # the foreign pod runs too, yet must not make our worker count
    wait_for(lambda: h.job(NS, "j")["status"]["replicaStatuses"].get("Worker") == {"active": 1},
             timeout=DEADLINE, what="one active worker")
    for original in (held, stray):
        now = h.kubelet.pod(NS, original["metadata"]["name"])
        assert now["metadata"]["uid"] == original["metadata"]["uid"]
        assert now["metadata"]["labels"] == original["metadata"]["labels"]
        assert now["metadata"]["ownerReferences"] == original["metadata"]["ownerReferences"]
    touched = {r.name for verb in ("delete", "patch", "update") for r in h.writes(verb, "pods")}
    assert not touched & {"j-worker-0", "j-worker-7"}
    h.wait_events(NS, uid, "FailedCreatePod")   # recorded after the status write that counts the active worker
    assert controller.recorder.flush(DEADLINE)
    [warning] = h.events(NS, uid, "FailedCreatePod")   # one clear warning, however many retries
    assert warning["type"] == "Warning" and warning["count"] == 1 and "j-worker-0" in warning["message"]
    # once the name is free, the job gets its pod
    assert h.kube.delete(f"/api/v1/namespaces/{NS}/pods/j-worker-0").ok
    wait_for(lambda: any(p["metadata"]["ownerReferences"][0]["uid"] == uid and p["metadata"]["name"] == "j-worker-0"
                         for p in h.pods(NS, "j")), timeout=DEADLINE, what="our j-worker-0")
    wait_for(lambda: h.conditions(NS, "j")["Created"]["message"] == "MXJob j is created.", timeout=DEADLINE,
             what="the Created message cleared")


@pytest.mark.as_service_account
def test_a_create_refused_because_the_job_already_owns_the_name_counts_as_done(h: Harness) -> None:
    """An owned pod the cache cannot see (its labels were stripped): the create gets 409, the pod is recognised
    by its controller reference, gets its labels back, and nothing is reported as failed or created."""
    job = h.create_job(mxjob("j", scheduler=0, server=0, worker=1))
    stripped = own_child("Pod", job, "worker", 0)
    stripped["metadata"]["labels"] = {"team": "a"}
    original = create(h, stripped)
    controller = h.start()
    [pod] = h.wait_children(NS, "j", 1)
    assert pod["metadata"]["uid"] == original["metadata"]["uid"]
    assert pod["metadata"]["labels"]["team"] == "a"
    # The pod existed before: seeing it says nothing of the controller's create, which comes after the service's.
    wait_for(lambda: h.writes("create", "pods"), timeout=DEADLINE, what="the pod's create audited")
    assert [r.code for r in h.writes("create", "pods")] == [409]
    assert controller.recorder.flush(DEADLINE)
    uid = job["metadata"]["uid"]
    assert not h.events(NS, uid, "FailedCreatePod") and not h.events(NS, uid, "SuccessfulCreatePod")
    assert "Cannot create" not in h.wait_condition(NS, "j", "Created")["message"]


def legacy_child(kind: str, job: dict[str, Any], rtype: str, index: int) -> dict[str, Any]:
    """A child as the Go mxnet-operator (kubeflow/common v0.3) made it: legacy labels only."""
    body = own_child(kind, job, rtype, index)
    body["metadata"]["labels"] = {"group-name": "kubeflow.org", "job-name": "j", "replica-type": rtype,
                                  "replica-index": str(index)}
    if kind == "Service":
        body["spec"]["selector"] = dict(body["metadata"]["labels"])
    return body


@pytest.mark.as_service_account
def test_children_of_the_old_operator_are_adopted_not_recreated(h: Harness) -> None:
    job = h.create_job(mxjob("j", scheduler=1, server=1, worker=2))
    originals = {}
    for rtype, index in (("scheduler", 0), ("server", 0), ("worker", 0), ("worker", 1)):
        for kind in ("Pod", "Service"):
            made = create(h, legacy_child(kind, job, rtype, index))
            originals[(kind, made["metadata"]["name"])] = made["metadata"]["uid"]
    h.kubelet.run(NS, "j-scheduler-0")
    h.start()
    pods = h.wait_children(NS, "j", 4)   # found by the new job-name label: adopted
    for obj in (*pods, *h.services(NS, "j")):
        kind = "Pod" if obj in pods else "Service"
        assert originals[(kind, obj["metadata"]["name"])] == obj["metadata"]["uid"]
        labels = obj["metadata"]["labels"]
        assert labels["training.kubeflow.org/operator-name"] == "mxjob-controller"
        assert labels["replica-type"] == labels["training.kubeflow.org/replica-type"]
    assert not h.writes("create", "pods") and not h.writes("create", "services")
    assert not h.writes("delete", "pods") and not h.writes("delete", "services")
    h.wait_condition(NS, "j", "Running")


def test_a_failed_create_is_reported_and_retried(apiserver: APIServer, h: Harness) -> None:
    rule = apiserver.faults.add(FaultRule(verb="create", resource="pods", code=500, count=1,
                                          message="etcd is having a bad day"))
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    h.wait_children(NS, "j", 3)
    assert rule.fired == 1
    uid = h.job(NS, "j")["metadata"]["uid"]
    h.wait_events(NS, uid, "FailedCreatePod")
    h.wait_events(NS, uid, "SuccessfulCreatePod", 3)   # each recorded once its create has returned
    assert controller.recorder.flush(DEADLINE)
    [failed] = h.events(NS, uid, "FailedCreatePod")
    assert failed["type"] == "Warning" and "etcd is having a bad day" in failed["message"]
    assert len(h.events(NS, uid, "SuccessfulCreatePod")) == 3
