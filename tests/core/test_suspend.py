"""Suspending and resuming a job (core/suspend.py), table-tested: the status of a suspended job (Kubeflow's and
batch/v1 Job's: ``Suspended`` True, ``Running`` False, nothing active, no ``startTime`` for a job suspended at
creation), the resume that moves ``startTime`` so ``activeDeadlineSeconds`` counts from it, and one event per
transition a write recorded, never one per resync."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core.suspend import resumed_status, suspended_status, transition_events
from mxjob_controller.kubeflow_api.status import ReplicaCounts
from mxjob_controller.mxnet.api import mxjob_replica_counts, with_mxjob_replica_counts
from mxjob_controller.runtime.events import NORMAL

T0, T1, T2 = "2024-01-01T00:00:00Z", "2024-01-01T00:05:00Z", "2024-01-01T00:10:00Z"
TYPES = ("Scheduler", "Server", "Worker")


def cond(ctype: str, status: str = "True", reason: str = "", message: str = "", at: str = T0) -> dict[str, Any]:
    return {"type": ctype, "status": status, "reason": reason or f"MXJob{ctype}", "message": message or ctype,
            "lastUpdateTime": at, "lastTransitionTime": at}


def suspend(old: dict[str, Any] | None, now: str = T1) -> dict[str, Any]:
    return suspended_status(old, kind="MXJob", name="j", types=TYPES, now=now, counts=mxjob_replica_counts(old),
                            render_counts=with_mxjob_replica_counts)


def resume(old: dict[str, Any] | None, now: str = T2) -> dict[str, Any]:
    return resumed_status(old, kind="MXJob", name="j", now=now)


def kinds(status: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["type"], c["status"], c["reason"]) for c in status.get("conditions") or []]


RUNNING = with_mxjob_replica_counts(
    {"conditions": [cond("Created"), cond("Running")], "startTime": T0, "lastReconcileTime": T0},
    {"Scheduler": ReplicaCounts(active=1), "Server": ReplicaCounts(active=2),
     "Worker": ReplicaCounts(active=2, succeeded=1, failed=1)})


# --- suspended --------------------------------------------------------------------------------------------------

def test_a_job_suspended_at_creation_is_created_and_suspended_but_never_started() -> None:
    first = suspend(None)
    assert kinds(first) == [("Created", "True", "MXJobCreated"), ("Suspended", "True", "MXJobSuspended")]
    assert first["conditions"][1]["message"] == "MXJob j is suspended."
    assert "startTime" not in first and "completionTime" not in first
    assert first["lastReconcileTime"] == T1
    assert mxjob_replica_counts(first) == {t: ReplicaCounts() for t in TYPES}


def test_suspending_a_running_job_turns_running_off_and_zeroes_only_the_active_counts() -> None:
    suspended = suspend(RUNNING)
    assert kinds(suspended) == [("Created", "True", "MXJobCreated"), ("Running", "False", "MXJobSuspended"),
                                ("Suspended", "True", "MXJobSuspended")]
    running = suspended["conditions"][1]
    assert (running["message"], running["lastTransitionTime"]) == ("MXJob j is suspended.", T1)
    assert mxjob_replica_counts(suspended) == {"Scheduler": ReplicaCounts(), "Server": ReplicaCounts(),
                                               "Worker": ReplicaCounts(succeeded=1, failed=1)}
    assert suspended["startTime"] == T0, "the start stays until a resume moves it"
    assert suspended["replicaStatuses"] == suspended["mxReplicaStatuses"], "both count maps, as the Go operator"


def test_a_suspended_job_suspended_again_is_not_rewritten_not_even_its_reconcile_time() -> None:
    once = suspend(RUNNING)
    assert suspend(once, now=T2) == once


@pytest.mark.parametrize("final", ["Succeeded", "Failed"])
def test_a_finished_job_is_never_suspended(final: str) -> None:
    done = {**RUNNING, "conditions": [cond("Created"), cond("Running", "False"), cond(final)],
            "completionTime": T0}
    out = suspend(done)
    assert out == done and out is not done
    out["conditions"].append(cond("Suspended"))
    assert len(done["conditions"]) == 3, "a copy, not the old status"


def test_suspending_leaves_the_old_status_alone() -> None:
    old = copy.deepcopy(RUNNING)
    suspend(old)
    assert old == RUNNING


# --- resumed ----------------------------------------------------------------------------------------------------

def test_a_resume_sets_suspended_false_and_restarts_the_clock() -> None:
    resumed = resume(suspend(RUNNING))
    assert kinds(resumed)[-1] == ("Suspended", "False", "MXJobResumed")
    assert resumed["conditions"][-1]["message"] == "MXJob j is resumed."
    assert resumed["conditions"][-1]["lastTransitionTime"] == T2
    assert (resumed["startTime"], resumed["lastReconcileTime"]) == (T2, T2), \
        "activeDeadlineSeconds counts from the resume"


@pytest.mark.parametrize("status", [
    None,
    RUNNING,                                                             # never suspended
    {"conditions": [cond("Created"), cond("Suspended", "False", "MXJobResumed")], "startTime": T1},   # resumed
    {"conditions": [cond("Created"), cond("Suspended"), cond("Failed")], "completionTime": T1},       # finished
])
def test_a_job_that_is_not_suspended_is_not_resumed(status: dict[str, Any] | None) -> None:
    out = resume(status)
    assert out == (status or {})
    if status is not None:
        assert out is not status


# --- events -----------------------------------------------------------------------------------------------------

SUSPENDED = [cond("Created"), cond("Suspended", message="MXJob j is suspended.")]
RESUMED = [cond("Created"), cond("Suspended", "False", "MXJobResumed", "MXJob j is resumed.")]


@pytest.mark.parametrize(("before", "after", "events"), [
    (None, SUSPENDED, [(NORMAL, "MXJobSuspended", "MXJob j is suspended.")]),            # suspended at creation
    ([cond("Created"), cond("Running")], SUSPENDED, [(NORMAL, "MXJobSuspended", "MXJob j is suspended.")]),
    (SUSPENDED, SUSPENDED, []),                                                          # a resync: no repeat
    (SUSPENDED, RESUMED, [(NORMAL, "MXJobResumed", "MXJob j is resumed.")]),
    (RESUMED, RESUMED, []),
    (RESUMED, SUSPENDED, [(NORMAL, "MXJobSuspended", "MXJob j is suspended.")]),         # suspended again
    ([cond("Created")], [cond("Created"), cond("Running")], []),                         # no suspension at all
])
def test_one_event_per_transition_the_write_recorded(before: list | None, after: list,
                                                     events: list[tuple[str, str, str]]) -> None:
    assert transition_events(before, after, "MXJob") == events
