"""What a job's pods say, read from their status, and the one decision about a failed pod: restart it, or fail
the job. Pure functions over pod dicts as the API server sends them.

The counting rules are training-operator's (``UpdateJobReplicaStatuses``): a Running pod is active, unless it is
being deleted (a pod stuck terminating on a dead node never reaches Failed, so it counts as failed); Succeeded and
Failed pods count as such; Pending pods do not count.

A Failed replica pod leads to one of two outcomes, decided in :func:`failed_pod_outcome` alone (as kube's Job
controller decides in ``matchPodFailurePolicy``); the restart planner and the job's status both ask it:

- ``Never``: the job fails;
- ``OnFailure`` / ``Always``: the kubelet restarts containers; a pod that failed anyway (evicted) is restarted by
  the controller;
- ``ExitCode`` (pods run with ``Never``, :func:`pod_restart_policy`): restarted when the main container's exit is
  retryable, else the job fails. The table is the one Kubeflow's operators document for ``ExitCode`` (the MXNet
  operator's README):

  - retryable, the process was stopped from outside and may well succeed when run again: 130 (SIGINT,
    Control-C), 137 (SIGKILL, which includes the kernel's OOM killer), 143 (SIGTERM), and 138 (SIGUSR1), reserved
    for user-defined retryable errors;
  - a Failed pod whose main container never terminated (an eviction: the kubelet killed the pod, not the program);
  - permanent, the program itself failed: every other code, 1, 2, 126, 127, 128 and 139 (SIGSEGV) included.

  training-operator retries any code >= 128 instead (``IsRetryableExitCode``): a segfault or an ``exit(200)`` is
  retried there and fails the job here, as the documented table says.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.core.job_vocabulary import ReplicaCounts
from mxjob_controller.kube.vocabulary import POD_FAILED as FAILED
from mxjob_controller.kube.vocabulary import POD_PENDING as PENDING
from mxjob_controller.kube.vocabulary import POD_RUNNING as RUNNING
from mxjob_controller.kube.vocabulary import POD_SUCCEEDED as SUCCEEDED
from mxjob_controller.kube.vocabulary import POD_UNKNOWN as UNKNOWN  # noqa: F401 (re-exported with the phases)

# Replica restart policies (kubeflow's ReplicaSpec.restartPolicy).
RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER, RESTART_EXIT_CODE = "Always", "OnFailure", "Never", "ExitCode"
RESTART_POLICIES = (RESTART_ALWAYS, RESTART_ON_FAILURE, RESTART_NEVER, RESTART_EXIT_CODE)

#: Exit codes of the main container that ``ExitCode`` retries, and what each means.
RETRYABLE_EXIT_CODES: dict[int, str] = {
    130: "SIGINT: terminated by Control-C",
    137: "SIGKILL: killed, e.g. by the OOM killer",
    138: "SIGUSR1: reserved for user-defined retryable errors",
    143: "SIGTERM: asked to stop",
}

#: The permanent codes the table names (any code not in RETRYABLE_EXIT_CODES is permanent too).
DOCUMENTED_PERMANENT_EXIT_CODES: dict[int, str] = {
    1: "general error",
    2: "misuse of shell builtins",
    126: "command cannot execute",
    127: "command not found",
    128: "invalid argument to exit",
    139: "SIGSEGV: invalid memory reference",
}




@dataclass(frozen=True, slots=True)
class PodFailure:
    """One failed replica pod, and why: the job's failure message is made of these."""

    pod: str
    replica_type: str
    index: int
    exit_code: int | None   # of the framework's container (else the first that failed); None if none terminated
    reason: str             # e.g. OOMKilled, Error, Evicted
    message: str = ""

    def describe(self) -> str:
        """``job-worker-0 exited with code 137 (OOMKilled)``, or ``job-worker-1 failed (Evicted: <message>)``."""
        if self.exit_code is not None:
            return f"{self.pod} exited with code {self.exit_code}" + (f" ({self.reason})" if self.reason else "")
        detail = ": ".join(part for part in (self.reason, self.message) if part)
        return f"{self.pod} failed" + (f" ({detail})" if detail else "")


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One replica type as its pods show it: counts, the failures that count against the job, and which indices
    have completed (a framework may decide on one replica: TensorFlow's worker 0)."""

    counts: ReplicaCounts = field(default_factory=ReplicaCounts)
    failures: tuple[PodFailure, ...] = ()
    completed: frozenset[int] = frozenset()


def phase(pod: dict[str, Any]) -> str:
    return (pod.get("status") or {}).get("phase") or PENDING


def is_deleting(obj: dict[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def count_pods(pods: Iterable[dict[str, Any]]) -> ReplicaCounts:
    active = succeeded = failed = 0
    for pod in pods:
        current = phase(pod)
        if current == RUNNING:
            if is_deleting(pod):
                failed += 1
            else:
                active += 1
        elif current == SUCCEEDED:
            succeeded += 1
        elif current == FAILED:
            failed += 1
    return ReplicaCounts(active, succeeded, failed)


def terminated_state(pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    """The ``state.terminated`` of ``container``, if it has terminated. ``""`` (a framework that names no container):
    the first container that exited non-zero, else the first that terminated (the kubelet lists containers by name,
    so "the first" means nothing more; a failure is what speaks for a pod)."""
    statuses = [s for s in (pod.get("status") or {}).get("containerStatuses") or [] if isinstance(s, dict)]
    if not container:
        ended = [t for s in statuses if isinstance(t := (s.get("state") or {}).get("terminated"), dict)]
        return next((t for t in ended if t.get("exitCode") not in (0, None)), ended[0] if ended else None)
    for status in statuses:
        if status.get("name") == container:
            terminated = (status.get("state") or {}).get("terminated")
            return terminated if isinstance(terminated, dict) else None
    return None


def exit_code(pod: dict[str, Any], container: str) -> int | None:
    """The exit code of ``container`` if it has terminated (None: still running, or never terminated)."""
    terminated = terminated_state(pod, container)
    code = terminated.get("exitCode") if terminated is not None else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def failure_of(pod: dict[str, Any], replica_type: str, index: int, container: str) -> PodFailure:
    """Why ``pod`` failed: its framework container's exit code and reason, else the first container that exited
    non-zero, else the pod's own reason (an evicted pod has no terminated container)."""
    name = (pod.get("metadata") or {}).get("name") or ""
    terminated = terminated_state(pod, container)
    if terminated is None:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            state = ((status or {}).get("state") or {}).get("terminated")
            if isinstance(state, dict) and state.get("exitCode"):
                terminated = state
                break
    if terminated is not None and isinstance(terminated.get("exitCode"), int):
        return PodFailure(name, replica_type, index, terminated["exitCode"], terminated.get("reason") or "",
                          terminated.get("message") or "")
    status = pod.get("status") or {}
    return PodFailure(name, replica_type, index, None, status.get("reason") or "", status.get("message") or "")


def completed(pod: dict[str, Any], container: str) -> bool:
    """The pod has Succeeded and its framework ``container`` exited 0 (training-operator's ``worker0Completed``)."""
    return phase(pod) == SUCCEEDED and exit_code(pod, container) == 0


def replica_state(pods_by_index: dict[int, dict[str, Any]], replica_type: str, restart_policy: str,
                  container: str) -> ReplicaState:
    """The state of one replica type from its pods (one per index)."""
    failures = tuple(failure_of(pod, replica_type, index, container)
                     for index, pod in sorted(pods_by_index.items()) if phase(pod) == FAILED
                     and failed_pod_outcome(restart_policy, pod, container) is FAIL_JOB)
    done = frozenset(index for index, pod in pods_by_index.items() if completed(pod, container))
    return ReplicaState(count_pods(pods_by_index.values()), failures, done)


def termination(pod: dict[str, Any], container: str) -> tuple[int, str] | None:
    """(exit code, ``finishedAt``) of ``container``'s current termination, None while it has not terminated: the
    identity of one exit, so an ``ExitedWithCode`` event is recorded once per termination, not on every reconcile
    (a container restarted and terminated again has another ``finishedAt``)."""
    code = exit_code(pod, container)
    if code is None:
        return None
    return code, str((terminated_state(pod, container) or {}).get("finishedAt") or "")


# --- a failed pod: restart it, or fail the job -------------------------------------------------------------------

def is_retryable_exit(exit_code: int | None) -> bool:
    """Whether a Failed pod whose main container exited with ``exit_code`` is restarted under ``ExitCode``.

    ``None`` means the container has no terminated state although the pod failed: the pod was evicted (or its
    node lost it), which says nothing against the program, so it is retried.
    """
    return exit_code is None or exit_code in RETRYABLE_EXIT_CODES


class FailedPodOutcome(enum.Enum):
    RESTART = "restart"     # the controller deletes the pod and the child sync recreates it
    FAIL_JOB = "fail"       # the replica has failed for good, and with it the job


RESTART, FAIL_JOB = FailedPodOutcome.RESTART, FailedPodOutcome.FAIL_JOB


def failed_pod_outcome(restart_policy: str, pod: dict[str, Any], container: str) -> FailedPodOutcome:
    """What a Failed replica ``pod`` leads to under its replica's ``restart_policy`` (the rules above), judged on its
    ``container``'s exit. Validation admits only the four policies; anything else is treated as ``Never``."""
    if restart_policy in (RESTART_ON_FAILURE, RESTART_ALWAYS):
        return RESTART
    if restart_policy == RESTART_EXIT_CODE:
        return RESTART if is_retryable_exit(exit_code(pod, container)) else FAIL_JOB
    return FAIL_JOB


def pod_restart_policy(replica_restart_policy: str) -> str:
    """The pod-level policy for a replica's policy: ``ExitCode`` is not a pod policy, it runs as ``Never``."""
    return RESTART_NEVER if replica_restart_policy == RESTART_EXIT_CODE else replica_restart_policy
