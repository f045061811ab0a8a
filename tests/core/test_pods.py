"""Reading pods (core/pods.py), table-tested: counts, failures and terminations, the exit codes that are retryable,
and the one decision whether a failed pod restarts or fails the job."""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.core.pods import (
    FAIL_JOB,
    RESTART,
    FailedPodOutcome,
    PodFailure,
    count_pods,
    exit_code,
    failed_pod_outcome,
    failure_of,
    is_retryable_exit,
    replica_state,
    termination,
)
from mxjob_controller.kubeflow_api.status import ReplicaCounts
from tests.core.bodies import evicted, worker

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


# --- counts, failures, terminations ----------------------------------------------------------------------

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
def test_a_replica_state_counts_a_failed_pod_and_fails_by_its_policy(policy: str, fails: bool) -> None:
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


def test_the_container_that_failed_speaks_for_a_pod_when_the_framework_names_none() -> None:
    failed = {"status": {"containerStatuses": [
        {"name": "aux", "state": {"terminated": {"exitCode": 0}}},
        {"name": "trainer", "state": {"terminated": {"exitCode": 3}}}]}}
    assert exit_code(failed, "") == 3 and exit_code(failed, "aux") == 0
    done = {"status": {"containerStatuses": [{"name": "a", "state": {"running": {}}},
                                             {"name": "b", "state": {"terminated": {"exitCode": 0}}}]}}
    assert exit_code(done, "") == 0 and exit_code({"status": {}}, "") is None


def test_replica_state_names_the_indices_that_completed() -> None:
    """Succeeded with the framework's container exited 0: what TensorFlow's worker-0 rule reads."""
    pods = {0: pod("j-worker-0", "Succeeded", exit_code=0), 1: pod("j-worker-1", "Running"),
            2: pod("j-worker-2", "Failed", exit_code=1), 3: pod("j-worker-3", "Succeeded", exit_code=0,
                                                              container="sidecar")}
    assert replica_state(pods, "Worker", "Never", "mxnet").completed == frozenset({0})


# --- exit codes ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [130, 137, 138, 143, None])
def test_retryable_exits(code: int | None) -> None:
    assert is_retryable_exit(code)


@pytest.mark.parametrize("code", [1, 2, 126, 127, 128, 139, 129, 200, 255, 0])
def test_permanent_exits_include_128_and_139(code: int) -> None:
    assert not is_retryable_exit(code)


@pytest.mark.parametrize(("policy", "obj", "fails"), [
    ("ExitCode", worker(phase="Failed", exit_code=1), True),
    ("ExitCode", worker(phase="Failed", exit_code=139), True),
    ("ExitCode", worker(phase="Failed", exit_code=137), False),
    ("ExitCode", evicted(), False),
    ("Never", worker(phase="Failed", exit_code=137), True),
    ("Never", evicted(), True),
    ("OnFailure", worker(phase="Failed", exit_code=1), False),
    ("Always", evicted(), False),
    ("Never", worker(phase="Running"), False),
])
def test_which_failed_pods_fail_the_job(policy: str, obj: dict, fails: bool) -> None:
    assert bool(replica_state({0: obj}, "worker", policy, "mxnet").failures) is fails


@pytest.mark.parametrize(("policy", "obj", "outcome"), [
    ("ExitCode", worker(phase="Failed", exit_code=1), FAIL_JOB),
    ("ExitCode", worker(phase="Failed", exit_code=137), RESTART),
    ("ExitCode", evicted(), RESTART),
    ("Never", evicted(), FAIL_JOB),
    ("OnFailure", worker(phase="Failed", exit_code=1), RESTART),
    ("Always", evicted(), RESTART),
])
def test_one_decision_restarts_a_failed_pod_or_fails_the_job(policy: str, obj: dict,
                                                              outcome: FailedPodOutcome) -> None:
    assert failed_pod_outcome(policy, obj, "mxnet") is outcome
