"""Reading pods (counts, failures, terminations) and computing the job status to write: pure functions."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core.framework import Verdict
from mxjob_controller.core.job_status import failure_message, next_status
from mxjob_controller.core.pods import PodFailure, count_pods, failure_of, replica_state, termination
from mxjob_controller.kubeflow_api.status import ReplicaCounts
from mxjob_controller.mxnet.api import with_mxjob_replica_counts

NOW, LATER = "2024-01-01T00:00:00Z", "2024-01-01T01:00:00Z"


def pod(name: str = "j-worker-0", phase: str = "Pending", *, exit_code: int | None = None, exit_reason: str = "",
        container: str = "mxnet", deleting: bool = False, finished_at: str = NOW, **status: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"name": name}, "status": {"phase": phase, **status}}
    if deleting:
        body["metadata"]["deletionTimestamp"] = NOW
    if exit_code is not None:
        body["status"]["containerStatuses"] = [{"name": container, "state": {"terminated": {
            "exitCode": exit_code, "reason": exit_reason, "finishedAt": finished_at}}}]
    return body


# --- pods ------------------------------------------------------------------------------------------------

def test_counts_follow_training_operator() -> None:
    pods = [pod(phase="Running"), pod(phase="Running", deleting=True), pod(phase="Succeeded"), pod(phase="Failed"),
            pod(phase="Pending"), pod(phase="Unknown"), {"metadata": {"name": "no-status"}}]
    assert count_pods(pods) == ReplicaCounts(active=1, succeeded=1, failed=2)


@pytest.mark.parametrize(("obj", "expected"), [
    (pod(phase="Failed", exit_code=137, exit_reason="OOMKilled"),
     PodFailure("j-worker-0", "Worker", 0, 137, "OOMKilled")),
    (pod(phase="Failed", exit_code=3, exit_reason="Error", container="sidecar"),
     PodFailure("j-worker-0", "Worker", 0, 3, "Error")),
    (pod(phase="Failed", reason="Evicted", message="low memory"),
     PodFailure("j-worker-0", "Worker", 0, None, "Evicted", "low memory")),
])
def test_failure_of_names_the_exit_code_and_reason(obj: dict, expected: PodFailure) -> None:
    assert failure_of(obj, "Worker", 0, "mxnet") == expected


def test_failure_descriptions() -> None:
    assert PodFailure("p", "Worker", 0, 137, "OOMKilled").describe() == "p exited with code 137 (OOMKilled)"
    assert PodFailure("p", "Worker", 0, 1, "").describe() == "p exited with code 1"
    assert PodFailure("p", "Worker", 0, None, "Evicted", "low").describe() == "p failed (Evicted: low)"
    assert PodFailure("p", "Worker", 0, None, "").describe() == "p failed"


@pytest.mark.parametrize(("policy", "fails"), [("Never", True), ("ExitCode", True), ("OnFailure", False),
                                               ("Always", False)])
def test_which_failed_pods_fail_the_job(policy: str, fails: bool) -> None:
    state = replica_state({0: pod(phase="Failed", exit_code=1), 1: pod("j-worker-1", "Running")}, "Worker", policy,
                          "mxnet")
    assert state.counts == ReplicaCounts(active=1, failed=1)
    assert bool(state.failures) is fails


@pytest.mark.parametrize(("obj", "expected"), [
    (pod(phase="Running"), None),
    (pod(phase="Failed", exit_code=137), (137, NOW)),
    (pod(phase="Succeeded", exit_code=0), (0, NOW)),
    (pod(phase="Failed", exit_code=1, finished_at=LATER), (1, LATER)),       # exited again: another termination
    (pod(phase="Failed", exit_code=2, container="sidecar"), None),           # not the framework's container
])
def test_a_termination_is_its_exit_code_and_finish_time(obj: dict, expected: tuple[int, str] | None) -> None:
    assert termination(obj, "mxnet") == expected


# --- the status ------------------------------------------------------------------------------------------

COUNTS = {"Scheduler": ReplicaCounts(active=1), "Worker": ReplicaCounts(active=2, failed=0)}


IDLE = Verdict()


def status(old: dict | None, verdict: Verdict = IDLE, counts: dict | None = None, now: str = NOW,
           blocked: tuple[str, ...] = ()) -> dict[str, Any]:
    return next_status(old, kind="MXJob", name="j", counts=COUNTS if counts is None else counts, verdict=verdict,
                       now=now, render_counts=with_mxjob_replica_counts, blocked=blocked)


def test_the_first_status_is_created_with_start_time_and_counts() -> None:
    first = status(None)
    assert first["conditions"] == [{"type": "Created", "status": "True", "reason": "MXJobCreated",
                                    "message": "MXJob j is created.", "lastUpdateTime": NOW,
                                    "lastTransitionTime": NOW}]
    assert first["startTime"] == NOW and first["lastReconcileTime"] == NOW and "completionTime" not in first
    assert first["replicaStatuses"] == first["mxReplicaStatuses"] == {"Scheduler": {"active": 1},
                                                                      "Worker": {"active": 2}}


def test_an_idle_recompute_changes_nothing_not_even_the_reconcile_time() -> None:
    first = status(None, Verdict(running=True))
    assert status(first, Verdict(running=True), now=LATER) == first


def test_a_count_change_is_written_with_the_reconcile_time() -> None:
    first = status(None)
    second = status(first, counts={"Scheduler": ReplicaCounts(active=1), "Worker": ReplicaCounts(active=1)},
                    now=LATER)
    assert second["replicaStatuses"]["Worker"] == {"active": 1} and second["lastReconcileTime"] == LATER
    assert second["startTime"] == NOW


def test_success_moves_active_counts_and_sets_completion_time_in_the_same_write() -> None:
    running = status(None, Verdict(running=True))
    done = status(running, Verdict(running=True, succeeded=True), now=LATER,
                  counts={"Scheduler": ReplicaCounts(succeeded=1), "Worker": ReplicaCounts(active=2)})
    assert [(c["type"], c["status"]) for c in done["conditions"]] == [
        ("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    assert done["replicaStatuses"] == {"Scheduler": {"succeeded": 1}, "Worker": {"succeeded": 2}}
    assert done["completionTime"] == LATER and done["startTime"] == NOW


def test_failure_names_pods_codes_and_reasons() -> None:
    failures = (PodFailure("j-worker-0", "Worker", 0, 137, "OOMKilled"),
                PodFailure("j-worker-1", "Worker", 1, None, "Evicted", "low memory"),
                PodFailure("j-server-0", "Server", 0, 2, "Error"))
    failed = status(status(None), Verdict(failures=failures), now=LATER)
    cond = failed["conditions"][-1]
    assert (cond["type"], cond["reason"]) == ("Failed", "MXJobFailed")
    assert cond["message"] == failure_message("MXJob", "j", failures) == (
        "MXJob j has failed because 2 Worker, 1 Server replica(s) failed: j-worker-0 exited with code 137 "
        "(OOMKilled); j-worker-1 failed (Evicted: low memory); j-server-0 exited with code 2 (Error).")
    assert failed["completionTime"] == LATER


def test_a_finished_status_is_returned_unchanged() -> None:
    done = status(status(None), Verdict(succeeded=True))
    snapshot = copy.deepcopy(done)
    assert status(done, Verdict(running=True), counts={"Worker": ReplicaCounts(active=5)}, now=LATER) == snapshot
    assert done == snapshot


def test_blocked_names_are_told_in_the_created_message_and_cleared_after() -> None:
    blocked = status(None, blocked=('pod "j-worker-0"',))
    message = blocked["conditions"][0]["message"]
    assert message.startswith("MXJob j is created. Cannot create pod \"j-worker-0\": the name is held by an object")
    cleared = status(blocked, now=LATER)
    assert cleared["conditions"][0]["message"] == "MXJob j is created."
    assert cleared["conditions"][0]["lastTransitionTime"] == NOW


def test_the_old_status_is_not_modified() -> None:
    old = status(None)
    snapshot = copy.deepcopy(old)
    status(old, Verdict(succeeded=True), now=LATER)
    assert old == snapshot


def test_replica_state_names_the_indices_that_completed() -> None:
    """Succeeded with the framework's container exited 0: what TensorFlow's worker-0 rule reads."""
    pods = {0: pod("j-worker-0", "Succeeded", exit_code=0), 1: pod("j-worker-1", "Running"),
            2: pod("j-worker-2", "Failed", exit_code=1), 3: pod("j-worker-3", "Succeeded", exit_code=0,
                                                              container="sidecar")}
    assert replica_state(pods, "Worker", "Never", "mxnet").completed == frozenset({0})


def test_two_frameworks_count_their_jobs_on_one_registry() -> None:
    from prometheus_client import CollectorRegistry

    from mxjob_controller.core.metrics import JobMetrics

    registry = CollectorRegistry()
    mx, tf = JobMetrics(registry, "mxnet"), JobMetrics(registry, "tensorflow")   # no duplicate-series error
    mx.transitions("ns", ["Created"])
    tf.transitions("ns", ["Created", "Succeeded"])
    tf.deleted("ns")

    def value(what: str, framework: str) -> float | None:
        return registry.get_sample_value(f"training_operator_jobs_{what}_total",
                                         {"job_namespace": "ns", "framework": framework})
    assert (value("created", "mxnet"), value("created", "tensorflow")) == (1.0, 1.0)
    assert (value("successful", "tensorflow"), value("successful", "mxnet"), value("deleted", "tensorflow")) == (
        1.0, None, 1.0)


def _job(namespace: str, created: str, *true_conditions: str) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "creationTimestamp": created},
            "status": {"conditions": [{"type": c, "status": "True"} for c in true_conditions]}}


@pytest.mark.parametrize(("conditions", "state"), [
    ((), "Created"), (("Created",), "Created"), (("Created", "Running"), "Running"),
    (("Created", "Restarting"), "Restarting"), (("Created", "Suspended"), "Suspended"),
    (("Created", "Running", "Succeeded"), "Succeeded"), (("Created", "Suspended", "Failed"), "Failed"),
])
def test_a_job_is_counted_under_one_state(conditions: tuple[str, ...], state: str) -> None:
    from mxjob_controller.core.metrics import job_state
    assert job_state(_job("a", "2026-01-01T00:00:00Z", *conditions)) == state


def test_the_oldest_waiting_job_is_the_oldest_neither_running_suspended_nor_finished() -> None:
    from mxjob_controller.core.metrics import summarise
    from mxjob_controller.kube.timefmt import parse_time

    now = parse_time("2026-01-01T01:00:00Z")
    jobs = [_job("a", "2026-01-01T00:00:00Z", "Created", "Running"),      # older, but running
            _job("a", "2026-01-01T00:10:00Z", "Created", "Suspended"),    # older, but suspended
            _job("b", "2026-01-01T00:30:00Z", "Created"),                 # the oldest waiting: 30 min
            _job("b", "2026-01-01T00:50:00Z")]                            # not acknowledged yet: waiting too
    counts, oldest = summarise(jobs, now)
    assert counts == {("a", "Running"): 1, ("a", "Suspended"): 1, ("b", "Created"): 2}
    assert oldest == 1800.0
    assert summarise([], now) == ({}, 0.0)


def test_the_state_gauges_are_read_from_each_frameworks_cache_at_scrape_time() -> None:
    from mxjob_controller.core.metrics import JobStateCollector
    from mxjob_controller.runtime.registry import families_for, new_registry

    registry, cache = new_registry(), [_job("a", "2026-01-01T00:00:00Z", "Created")]
    collector = families_for(JobStateCollector, registry)
    assert families_for(JobStateCollector, registry) is collector      # one per registry: no duplicate series
    collector.add("mxnet", lambda: cache)
    collector.add("tensorflow", list)
    labels = {"framework": "mxnet", "job_namespace": "a", "state": "Created"}
    assert registry.get_sample_value("mxjob_controller_jobs", labels) == 1.0
    cache.append(_job("a", "2026-01-01T00:00:00Z", "Created", "Running"))     # seen at the next scrape
    assert registry.get_sample_value("mxjob_controller_jobs", {**labels, "state": "Running"}) == 1.0
    assert registry.get_sample_value("mxjob_controller_oldest_waiting_job_seconds", {"framework": "tensorflow"}) == 0
