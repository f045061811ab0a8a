"""Suspend and resume (``runPolicy.suspend``), and jobs handed to another controller (``runPolicy.managedBy``):
a job suspended at creation gets nothing; suspending a running one deletes its pods and services and says so
(``Suspended``, one event); resuming resets ``startTime`` and recreates the pods (one event); resyncs repeat no
event; a job managed elsewhere gets not one write (the server's audit log says so); and ``managedBy`` cannot change
after creation (the CRD's transition rule, enforced by the embedded API server as by a real one)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from mxjob_controller.kube.timefmt import rfc3339
from tests.reconciler_support import DEADLINE, Harness, jobs_path, metric, mxjob
from tests.support import Kubectl, wait_for

NS = "default"
T0 = 1_700_000_000.0



class Wall:
    """The controller's wall clock, moved by the test: times written into the status are exact."""

    def __init__(self, now: float) -> None:
        self.now = now
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


def suspended(job: dict[str, Any], value: bool = True) -> dict[str, Any]:
    job["spec"].setdefault("runPolicy", {})["suspend"] = value
    return job


def event_counts(h: Harness, uid: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for event in h.events(NS, uid):
        out[event["reason"]] = out.get(event["reason"], 0) + event["count"]
    return out


def test_a_job_suspended_at_creation_gets_no_pod_and_no_start_time(h: Harness) -> None:
    controller = h.start()
    h.create_job(suspended(mxjob("j", scheduler=1, server=1, worker=2)))
    cond = h.wait_condition(NS, "j", "Suspended")
    assert (cond["reason"], cond["message"]) == ("MXJobSuspended", "MXJob j is suspended.")
    for _ in range(3):
        h.settle(controller, f"{NS}/j")
    status = h.job(NS, "j")["status"]
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [("Created", "True"), ("Suspended", "True")]
    assert "startTime" not in status
    assert status["replicaStatuses"] == {"Scheduler": {}, "Server": {}, "Worker": {}}
    assert h.pods(NS, "j") == [] and h.services(NS, "j") == []
    assert not h.writes("create", "pods") and not h.writes("create", "services")
    assert controller.recorder.flush(DEADLINE)
    uid = h.job(NS, "j")["metadata"]["uid"]
    assert [(e["type"], e["message"], e["count"]) for e in h.events(NS, uid, "MXJobSuspended")] == [
        ("Normal", "MXJob j is suspended.", 1)]
    assert metric(controller.registry, "created") == 1


@pytest.mark.as_service_account
def test_suspend_a_running_job_then_resume_it(h: Harness) -> None:
    wall = Wall(T0)
    controller = h.start(wall=wall)
    # few replicas: the events of two lifetimes stay within Kubernetes' spam filter (a burst of 25 per object)
    h.create_job(mxjob("j", scheduler=0, server=0, worker=2))
    first = h.wait_children(NS, "j", 2)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    wait_for(lambda: h.job(NS, "j")["status"]["replicaStatuses"]["Worker"] == {"active": 2}, timeout=DEADLINE,
             what="the workers active")
    assert h.job(NS, "j")["status"]["startTime"] == rfc3339(T0)

    wall.advance(60)
    h.patch_job(NS, "j", {"spec": {"runPolicy": {"suspend": True}}})
    h.wait_condition(NS, "j", "Suspended")
    wait_for(lambda: not h.pods(NS, "j") and not h.services(NS, "j"), timeout=DEADLINE,
             what="pods and services deleted")
    status = h.job(NS, "j")["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert (conditions["Running"]["status"], conditions["Running"]["reason"]) == ("False", "MXJobSuspended")
    assert status["replicaStatuses"] == status["mxReplicaStatuses"] == {"Worker": {}}
    assert status["startTime"] == rfc3339(T0)
    for _ in range(3):
        h.settle(controller, f"{NS}/j")
    since = time.time()
    h.settle(controller, f"{NS}/j")
    assert not h.writes("patch", "mxjobs", since=since, subresource="status")   # a resync writes nothing

    wall.advance(60)
    h.patch_job(NS, "j", {"spec": {"runPolicy": {"suspend": False}}})
    resumed = h.wait_condition(NS, "j", "Suspended", status="False")
    assert (resumed["reason"], resumed["message"]) == ("MXJobResumed", "MXJob j is resumed.")
    again = h.wait_children(NS, "j", 2)
    assert not {p["metadata"]["uid"] for p in again} & {p["metadata"]["uid"] for p in first}
    assert h.job(NS, "j")["status"]["startTime"] == rfc3339(T0 + 120)   # the deadline counts from the resume
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    for _ in range(3):
        h.settle(controller, f"{NS}/j")
    assert controller.recorder.flush(DEADLINE)
    counts = event_counts(h, h.job(NS, "j")["metadata"]["uid"])
    assert (counts["MXJobSuspended"], counts["MXJobResumed"], counts["MXJobRunning"]) == (1, 1, 2)
    assert counts["SuccessfulDeletePod"] == 2 and counts["SuccessfulDeleteService"] == 2
    assert counts["SuccessfulCreatePod"] == 4
    assert metric(controller.registry, "created") == 1


def test_suspending_keeps_the_counts_the_go_operator_wrote(h: Harness) -> None:
    """A job whose status the Go mxnet-operator wrote (counts only under ``mxReplicaStatuses``) keeps its succeeded
    and failed counts when suspended: the same reader as everywhere else, not ``replicaStatuses`` alone."""
    h.create_job(suspended(mxjob("j", scheduler=0, server=0, worker=3)))
    go_status = {"conditions": [{"type": "Created", "status": "True", "reason": "MXJobCreated",
                                 "message": "MXJob j is created.", "lastUpdateTime": rfc3339(T0),
                                 "lastTransitionTime": rfc3339(T0)}],
                 "mxReplicaStatuses": {"Worker": {"active": 1, "succeeded": 1, "failed": 1}},
                 "startTime": rfc3339(T0)}
    reply = h.kube.patch(jobs_path(NS, "j") + "/status", {"status": go_status})
    assert reply.ok, reply.body
    h.start()
    h.wait_condition(NS, "j", "Suspended")
    status = h.job(NS, "j")["status"]
    assert status["replicaStatuses"] == status["mxReplicaStatuses"] == {"Worker": {"succeeded": 1, "failed": 1}}


def test_the_deadline_counts_from_the_resume(h: Harness) -> None:
    wall = Wall(T0)
    controller = h.start(wall=wall)
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1, runPolicy={"activeDeadlineSeconds": 100}))
    h.wait_children(NS, "j", 1)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    wall.advance(60)
    h.patch_job(NS, "j", {"spec": {"runPolicy": {"suspend": True}}})
    h.wait_condition(NS, "j", "Suspended")
    wall.advance(90)    # T0 + 150: past the deadline counted from the first start
    h.patch_job(NS, "j", {"spec": {"runPolicy": {"suspend": False}}})
    h.wait_condition(NS, "j", "Suspended", status="False")
    h.wait_children(NS, "j", 1)
    h.settle(controller, f"{NS}/j")
    assert "Failed" not in h.conditions(NS, "j")
    assert h.job(NS, "j")["status"]["startTime"] == rfc3339(T0 + 150)
    wall.advance(101)   # T0 + 251: past the deadline counted from the resume
    h.settle(controller, f"{NS}/j")
    failed = h.wait_condition(NS, "j", "Failed")
    assert "deadline" in failed["message"]


def test_a_job_managed_by_another_controller_gets_no_write_at_all(h: Harness) -> None:
    controller = h.start()
    h.create_job(mxjob("theirs", scheduler=1, server=1, worker=1,
                       runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    h.create_job(mxjob("dropin", scheduler=0, server=0, worker=1,
                       runPolicy={"managedBy": "kubeflow.org/training-operator"}))
    h.create_job(mxjob("mine", scheduler=0, server=0, worker=1,
                       runPolicy={"managedBy": "kubeflow.org/mxjob-controller"}))
    for name in ("dropin", "mine"):
        h.wait_children(NS, name, 1)
        h.wait_condition(NS, name, "Created")
    for _ in range(3):
        h.settle(controller, f"{NS}/theirs")
    assert controller.recorder.flush(DEADLINE)
    assert "status" not in h.job(NS, "theirs") and h.pods(NS, "theirs") == []
    writes = [r for r in h.apiserver.audit.records(user_agent="mxjob-controller/")
              if r.verb not in ("get", "list", "watch")]
    assert writes and not [r for r in writes if r.name.startswith("theirs")]
    assert not [e for e in h.events(NS) if e["involvedObject"]["name"] == "theirs"]


def test_a_malformed_manager_is_no_hand_over(h: Harness) -> None:
    """Not a domain-prefixed path: the job stays ours, and validation says what is wrong with it."""
    h.start()
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1, runPolicy={"managedBy": "somebody"}))
    failed = h.wait_condition(NS, "j", "Failed")
    assert "spec.runPolicy.managedBy" in failed["message"]


def immutable(reply: Any) -> list[tuple[str, str, str]]:
    assert reply.status == 422, reply.body
    return [(c["reason"], c["field"], c["message"]) for c in reply.body["details"]["causes"]]


IMMUTABLE = [("FieldValueInvalid", "spec.runPolicy.managedBy", "Invalid value: field is immutable")]


def test_managed_by_cannot_be_changed_added_or_removed(h: Harness) -> None:
    h.create_job(mxjob("handed", scheduler=0, server=0, worker=1, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    h.create_job(mxjob("plain", scheduler=0, server=0, worker=1))
    path = jobs_path(NS, "handed")
    assert immutable(h.kube.patch(path, {"spec": {"runPolicy": {"managedBy": "kubeflow.org/mxjob-controller"}}})) \
        == IMMUTABLE
    assert immutable(h.kube.patch(path, {"spec": {"runPolicy": {"managedBy": None}}})) == IMMUTABLE
    assert immutable(h.kube.patch(path, {"spec": {"runPolicy": None}})) == IMMUTABLE
    assert immutable(h.kube.patch(jobs_path(NS, "plain"), {"spec": {"runPolicy": {
        "managedBy": "kueue.x-k8s.io/multikueue"}}})) == IMMUTABLE
    # the rest of the spec stays mutable, and so does the status
    assert h.kube.patch(path, {"spec": {"runPolicy": {"suspend": True}}}).ok
    assert h.kube.patch(path + "/status", {"status": {"startTime": rfc3339(T0)}}).ok
    job = h.job(NS, "handed")
    assert job["spec"]["runPolicy"] == {"managedBy": "kueue.x-k8s.io/multikueue", "suspend": True}
    put = dict(job, spec=dict(job["spec"], runPolicy={"suspend": True}))
    assert immutable(h.kube.put(path, put)) == IMMUTABLE


def test_kubectl_shows_why_managed_by_cannot_change(h: Harness, kubectl: Kubectl) -> None:
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1, runPolicy={"managedBy": "kueue.x-k8s.io/multikueue"}))
    proc = kubectl.run("patch", "mxjob", "j", "--type", "merge", "-p",
                       '{"spec":{"runPolicy":{"managedBy":"kubeflow.org/training-operator"}}}')
    assert proc.returncode == 1
    assert 'The MXJob "j" is invalid: spec.runPolicy.managedBy: Invalid value: field is immutable' in proc.stderr
