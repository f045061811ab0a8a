"""The informer event handlers (core/handlers.py), fed objects as an informer delivers them (tombstones included),
with real expectations: which job a child wakes and which expectations it satisfies. Handlers write nothing
(``ExitedWithCode`` is the reconcile's: tests/core/reconciler/test_status.py).

And the cached views of pods and services: everything the core reads survives the transform, so every decision over
the views equals the decision over the whole objects; what nobody reads is gone."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core import job_vocabulary as lb
from mxjob_controller.core.child_sync import classify
from mxjob_controller.core.failure_policy import container_restarts, ran_for
from mxjob_controller.core.finished_jobs import cleanup_plan
from mxjob_controller.core.handlers import (
    ChildHandlers,
    JobHandlers,
    job_cache_view,
    pod_cache_view,
    service_cache_view,
)
from mxjob_controller.core.job_status import exit_message
from mxjob_controller.core.pods import failure_of, replica_state, termination
from mxjob_controller.runtime.cache_keys import DeletedFinalStateUnknown, controller_uid_index, object_key
from mxjob_controller.runtime.expectations import ControllerExpectations, pods_key
from tests.core.bodies import UID

JOB = {"metadata": {"namespace": "ns", "name": "j", "uid": UID}}


def pod(rv: str = "1", *, kind: str = "MXJob", uid: str = UID, api_version: str = "kubeflow.org/v1",
        labelled: bool = True, exit_code: int | None = None) -> dict[str, Any]:
    labels = {"training.kubeflow.org/replica-type": "worker", "training.kubeflow.org/replica-index": "0"} \
        if labelled else {}
    body: dict[str, Any] = {"metadata": {"namespace": "ns", "name": "j-worker-0", "resourceVersion": rv,
                                         "labels": labels, "ownerReferences": [
                                             {"apiVersion": api_version, "kind": kind, "name": "j", "uid": uid,
                                              "controller": True}]},
                            "status": {"phase": "Running"}}
    if exit_code is not None:
        body["status"] = {"phase": "Failed", "containerStatuses": [
            {"name": "mxnet", "state": {"terminated": {"exitCode": exit_code, "finishedAt": "t"}}}]}
    return body


class Fixture:
    def __init__(self, observe: bool = True) -> None:
        self.queued: list[str] = []
        self.expectations = ControllerExpectations()
        self.jobs = {"ns/j": JOB}
        self.handlers = ChildHandlers(
            kind="MXJob", group="kubeflow.org", resolve_job=self.jobs.get, enqueue=self.queued.append,
            expectations=self.expectations if observe else None, expectation_key=pods_key)
        self.key = pods_key("ns/j", "Worker")

    def pending(self) -> tuple[int, int] | None:
        return self.expectations.pending(self.key)


@pytest.fixture
def f() -> Fixture:
    return Fixture()


def test_an_added_child_satisfies_a_creation_and_queues_its_job(f: Fixture) -> None:
    f.expectations.raise_expectations(f.key, adds=2)
    f.handlers.on_add(pod())
    assert f.pending() == (1, 0) and f.queued == ["ns/j"]


@pytest.mark.parametrize("deleted", [pod(), DeletedFinalStateUnknown("ns/j-worker-0", pod())])
def test_a_deletion_is_observed_even_as_a_tombstone(f: Fixture, deleted: Any) -> None:
    f.expectations.raise_expectations(f.key, dels=1)
    f.handlers.on_delete(deleted)
    assert f.pending() == (0, 0) and f.queued == ["ns/j"]


@pytest.mark.parametrize("child", [pod(kind="TFJob"), pod(api_version="other.io/v1")])
def test_children_of_other_kinds_wake_nothing(f: Fixture, child: dict) -> None:
    f.expectations.raise_expectations(f.key, adds=1)
    f.handlers.on_add(child)
    f.handlers.on_delete(child)
    assert f.pending() == (1, 0) and f.queued == []


def test_a_child_of_a_replaced_job_does_not_queue_the_new_job(f: Fixture) -> None:
    f.handlers.on_add(pod(uid="old-job-uid"))
    assert f.queued == []


def test_legacy_handlers_queue_but_never_observe() -> None:
    legacy = Fixture(observe=False)
    legacy.expectations.raise_expectations(legacy.key, adds=1, dels=1)
    legacy.handlers.on_add(pod())
    legacy.handlers.on_delete(pod())
    assert legacy.pending() == (1, 1) and legacy.queued == ["ns/j", "ns/j"]


def test_resyncs_are_ignored_and_changes_queue(f: Fixture) -> None:
    same = pod("5")
    f.handlers.on_update(same, same)
    f.handlers.on_update(pod("5"), pod("5"))
    assert f.queued == []
    f.handlers.on_update(pod("5"), pod("6"))
    assert f.queued == ["ns/j"]


def test_a_controller_change_queues_both_jobs(f: Fixture) -> None:
    f.jobs["ns/k"] = {"metadata": {"namespace": "ns", "name": "k", "uid": "k-uid"}}
    moved = pod("2")
    moved["metadata"]["ownerReferences"][0].update(name="k", uid="k-uid")
    f.handlers.on_update(pod("1"), moved)
    assert f.queued == ["ns/j", "ns/k"]


def test_unlabelled_children_queue_without_observing(f: Fixture) -> None:
    f.expectations.raise_expectations(f.key, adds=1)
    f.handlers.on_add(pod(labelled=False))
    assert f.pending() == (1, 0) and f.queued == ["ns/j"]


def test_the_job_handlers_queue_every_change() -> None:
    queued: list[str] = []
    handlers = JobHandlers(queued.append)
    handlers.on_add(JOB)
    handlers.on_update(JOB, JOB)
    handlers.on_delete(DeletedFinalStateUnknown("ns/j", JOB))
    assert queued == ["ns/j"] * 3


def test_the_job_handlers_skip_only_the_resync_of_a_settled_job() -> None:
    queued: list[str] = []
    settled = {("ns/j", "7")}
    handlers = JobHandlers(queued.append, settled=lambda key, rv: (key, rv) in settled)
    job = {"metadata": {**JOB["metadata"], "resourceVersion": "7"}}
    handlers.on_update(job, job)                                       # a resync of the settled version: nothing
    assert queued == []
    handlers.on_update({"metadata": {**job["metadata"], "resourceVersion": "6"}}, job)   # a change: queued
    newer = {"metadata": {**job["metadata"], "resourceVersion": "8"}}
    handlers.on_update(newer, newer)                                   # a resync of another version: queued
    assert queued == ["ns/j", "ns/j"]


def test_the_job_handlers_cancel_a_pass_on_a_deletion_a_deletion_timestamp_or_a_new_uid_before_queueing() -> None:
    """Issue 48: the pass's writes stop when the informer sees the change, not when the queue gets to the key."""
    seen: list[tuple[str, Any]] = []   # cancels and keys queued, in their order
    handlers = JobHandlers(lambda key: seen.append(("queued", key)),
                           cancel=lambda key, uid: seen.append(("cancel", (key, uid))))
    changed = {"metadata": {**JOB["metadata"], "resourceVersion": "2", "labels": {"a": "b"}}}
    handlers.on_update(JOB, changed)                                   # an ordinary change: no cancel
    handlers.on_update(changed, changed)                               # a resync: none either
    assert seen == [("queued", "ns/j")] * 2
    seen.clear()
    deleting = {"metadata": {**JOB["metadata"], "deletionTimestamp": "2026-12-02T00:00:00Z"}}
    handlers.on_update(JOB, deleting)
    replaced = {"metadata": {**JOB["metadata"], "uid": "another"}}
    handlers.on_update(JOB, replaced)                                  # its deletion missed (a relist): the old one's
    handlers.on_delete(JOB)
    handlers.on_delete(DeletedFinalStateUnknown("ns/j", replaced))    # a tombstone: its last known UID
    assert seen == [("cancel", ("ns/j", UID)), ("queued", "ns/j"), ("cancel", ("ns/j", UID)), ("queued", "ns/j"),
                    ("cancel", ("ns/j", UID)), ("queued", "ns/j"), ("cancel", ("ns/j", "another")),
                    ("queued", "ns/j")]


# --- the cached views ------------------------------------------------------------------------------------

def whole_pod(index: int, phase: str, *, exit_code: int | None = None, reason: str = "", deleting: bool = False,
        restarts: int = 0) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {"startedAt": "2024-01-01T00:00:05Z"}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": reason, "message": "m",
                                "startedAt": "2024-01-01T00:00:05Z", "finishedAt": "2024-01-01T00:10:05Z"}}
    meta: dict[str, Any] = {
        "name": f"j-worker-{index}", "namespace": "ns", "uid": f"pod-{index}", "resourceVersion": str(10 + index),
        "creationTimestamp": "2024-01-01T00:00:00Z", "generateName": "x-",
        "labels": {lb.REPLICA_TYPE: "worker", lb.REPLICA_INDEX: str(index), "app": "a"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 500 + "}"},
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "j", "uid": UID,
                             "controller": True, "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:20:00Z"
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"containers": [{"name": "mxnet", "image": "i", "env": [{"name": "MX_CONFIG", "value": "{}" * 200}]}],
                 "restartPolicy": "Never", "volumes": [{"name": "v", "emptyDir": {}}]},
        "status": {"phase": phase, "reason": reason, "message": "msg", "startTime": "2024-01-01T00:00:01Z",
                   "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}],
                   "initContainerStatuses": [{"name": "init", "restartCount": 1, "image": "i",
                                              "state": {"terminated": {"exitCode": 0}}}],
                   "containerStatuses": [{"name": "mxnet", "restartCount": restarts, "image": "i", "imageID": "d",
                                          "ready": True, "lastState": {"terminated": {"exitCode": 1}},
                                          "state": state}]}}


PODS = [whole_pod(0, "Running"), whole_pod(1, "Succeeded", exit_code=0),
        whole_pod(2, "Failed", exit_code=137, reason="OOMKilled"), whole_pod(3, "Running", deleting=True, restarts=2),
        whole_pod(4, "Failed", reason="Evicted"), whole_pod(5, "Pending")]


def test_the_view_drops_what_nobody_reads() -> None:
    view = pod_cache_view(copy.deepcopy(PODS[2]))
    assert "spec" not in view
    assert set(view["metadata"]) == {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels",
                                     "ownerReferences"}
    assert set(view["status"]) == {"phase", "reason", "message", "startTime", "initContainerStatuses",
                                   "containerStatuses"}
    assert view["status"]["containerStatuses"] == [{"name": "mxnet", "restartCount": 0,
                                                    "state": PODS[2]["status"]["containerStatuses"][0]["state"]}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": PODS[0]["metadata"],
               "spec": {"clusterIP": "None", "ports": [{"port": 9091}]}}
    assert service_cache_view(service) == {"apiVersion": "v1", "kind": "Service",
                                           "metadata": pod_cache_view(PODS[0])["metadata"]}


def test_the_original_is_left_alone() -> None:
    original = copy.deepcopy(PODS[0])
    pod_cache_view(original)
    assert original == PODS[0]


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "Always", "ExitCode"])
def test_decisions_over_views_equal_decisions_over_whole_pods(policy: str) -> None:
    views = [pod_cache_view(copy.deepcopy(p)) for p in PODS]
    for whole, view in zip(PODS, views, strict=True):
        assert object_key(view) == object_key(whole)
        assert controller_uid_index(view) == controller_uid_index(whole)
        assert termination(view, "mxnet") == termination(whole, "mxnet")
        assert failure_of(view, "Worker", 0, "mxnet") == failure_of(whole, "Worker", 0, "mxnet")
        assert container_restarts(view) == container_restarts(whole)
        assert ran_for(view, "mxnet", 1e10) == ran_for(whole, "mxnet", 1e10)
        assert exit_message(view, 1) == exit_message(whole, 1)
    kept_whole = classify(PODS, UID, "j", {"Worker": 7}).by_type["Worker"]
    kept_view = classify(views, UID, "j", {"Worker": 7}).by_type["Worker"]
    assert kept_view.missing == kept_whole.missing
    assert {i: o["metadata"]["uid"] for i, o in kept_view.kept.items()} == \
        {i: o["metadata"]["uid"] for i, o in kept_whole.kept.items()}
    assert replica_state(dict(kept_view.kept), "Worker", policy, "mxnet") == \
        replica_state(dict(kept_whole.kept), "Worker", policy, "mxnet")
    for clean in ("All", "Running", "None"):
        whole_plan, view_plan = cleanup_plan(clean, PODS, PODS), cleanup_plan(clean, views, views)
        assert [o["metadata"]["uid"] for o in view_plan.pods] == [o["metadata"]["uid"] for o in whole_plan.pods]
        assert [o["metadata"]["uid"] for o in view_plan.services] == \
            [o["metadata"]["uid"] for o in whole_plan.services]


def test_views_share_equal_labels_and_owners_and_keep_their_values() -> None:
    pod, other = pod_cache_view(copy.deepcopy(PODS[1])), pod_cache_view(copy.deepcopy(PODS[1]))
    assert pod == other
    assert pod["metadata"]["labels"] is other["metadata"]["labels"]
    assert pod["metadata"]["ownerReferences"] is other["metadata"]["ownerReferences"]
    assert pod["metadata"]["labels"] == PODS[1]["metadata"]["labels"]
    assert pod["metadata"]["ownerReferences"] == PODS[1]["metadata"]["ownerReferences"]
    service = service_cache_view({"apiVersion": "v1", "kind": "Service",
                                  "metadata": copy.deepcopy(PODS[1]["metadata"])})
    assert service["metadata"]["ownerReferences"] is pod["metadata"]["ownerReferences"]


def test_the_job_view_is_the_job_without_managed_fields() -> None:
    job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
           "metadata": {"name": "j", "namespace": "ns", "uid": UID, "managedFields": [{"manager": "m"}]},
           "spec": {"mxReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
               {"name": "mxnet", "image": "i"}]}}}}},
           "status": {"conditions": [{"type": "Created", "status": "True"}], "replicaStatuses": {"Worker": {}}}}
    view = job_cache_view(copy.deepcopy(job))
    expected = copy.deepcopy(job)
    del expected["metadata"]["managedFields"]
    assert view == expected


def test_job_views_share_replica_statuses_but_not_conditions() -> None:
    def job(name: str, state: str) -> dict:
        counts = {"Worker": {state: 2}, "Server": {state: 1}}
        return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
                "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}"},
                "status": {"conditions": [{"type": "Created", "status": "True", "reason": "MXJobCreated"}],
                           "replicaStatuses": counts, "mxReplicaStatuses": copy.deepcopy(counts),
                           "startTime": "2026-12-02T10:00:00Z"}}

    a, b, running = (job_cache_view(job(name, state)) for name, state in (("a", "succeeded"), ("b", "succeeded"),
                                                                          ("c", "active")))
    assert a == job("a", "succeeded") and running == job("c", "active")
    assert a["status"]["replicaStatuses"] is b["status"]["replicaStatuses"] is b["status"]["mxReplicaStatuses"]
    assert running["status"]["replicaStatuses"] is not a["status"]["replicaStatuses"]
    assert running["status"]["replicaStatuses"]["Server"] is not a["status"]["replicaStatuses"]["Server"]
    assert a["status"]["conditions"] == b["status"]["conditions"]
    assert a["status"]["conditions"] is not b["status"]["conditions"]   # a job's own: not worth a table entry
