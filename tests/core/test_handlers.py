"""The informer event handlers, fed objects as an informer delivers them (tombstones included), with real
expectations: which job a child wakes and which expectations it satisfies. Handlers write nothing (``ExitedWithCode``
is the reconcile's: tests/core/reconciler/test_status.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.core.handlers import ChildHandlers, JobHandlers
from mxjob_controller.runtime.cache_keys import DeletedFinalStateUnknown
from mxjob_controller.runtime.expectations import ControllerExpectations, pods_key

JOB = {"metadata": {"namespace": "ns", "name": "j", "uid": "job-uid"}}


def pod(rv: str = "1", *, kind: str = "MXJob", uid: str = "job-uid", api_version: str = "kubeflow.org/v1",
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
