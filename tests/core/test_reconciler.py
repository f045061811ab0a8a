"""The reconciler's one decision per pass (core/reconciler.py), as pure functions: a status write's ``desired``
reuses the decision made for the cached job, decides anew for a job re-read after a conflict, and hands its failure
policy to the work after the write only when the write stored exactly the status decided. (The reconcile end to end:
tests/core/reconciler/.)"""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.core.failure_policy import PolicyOutcome, RestartPlan
from mxjob_controller.core.job_status import StatusWrite
from mxjob_controller.core.reconciler import Decision, Decisions

CACHED = {"metadata": {"name": "j", "resourceVersion": "1"}, "status": {}}
REREAD = {"metadata": {"name": "j", "resourceVersion": "2"}, "status": {"startTime": "2024-01-01T00:00:00Z"}}
POLICY = PolicyOutcome(RestartPlan(history={}, restart_count=0), deadline=1_700_000_060.0)
DECIDED = Decision({"startTime": "2024-01-01T00:00:00Z", "conditions": []}, POLICY)


def decisions() -> tuple[Decisions, list[dict[str, Any]]]:
    asked: list[dict[str, Any]] = []

    def decide(job: dict[str, Any]) -> Decision | None:
        asked.append(job)
        return Decision({**DECIDED.status, "restartCount": len(asked)}, PolicyOutcome(RestartPlan({}, len(asked))))

    return Decisions(decide, known=(CACHED, DECIDED)), asked


def test_the_cached_job_is_decided_once_and_a_reread_one_anew() -> None:
    desired, asked = decisions()
    assert desired(CACHED) is DECIDED.status and desired(CACHED) is DECIDED.status
    assert asked == [] and desired.last is DECIDED
    assert desired(REREAD) == {**DECIDED.status, "restartCount": 1}
    assert asked == [REREAD] and desired.last is not None and desired.last.policy == PolicyOutcome(RestartPlan({}, 1))


@pytest.mark.parametrize(("stored", "reused"), [
    (dict(DECIDED.status), True),                                   # what was decided, as the server echoes it
    ({**DECIDED.status, "conditions": [{"type": "Created"}]}, False),   # the server stored something else
    ({}, False),
])
def test_the_policy_goes_to_the_work_after_the_write_only_if_the_write_stored_the_decision(
        stored: dict[str, Any], reused: bool) -> None:
    desired, _ = decisions()
    desired(CACHED)
    write = StatusWrite(before=CACHED["status"], after=stored, job=CACHED, written=True)
    assert desired.policy_stored(write) is (POLICY if reused else None)


def test_no_decision_or_one_without_a_policy_is_evaluated_again() -> None:
    desired, _ = decisions()
    write = StatusWrite(before={}, after=dict(DECIDED.status), job=CACHED, written=False)
    assert desired.policy_stored(write) is None                      # nothing decided yet
    suspended = Decisions(lambda job: Decision(dict(DECIDED.status)))   # a suspended job's status: no policy
    suspended(CACHED)
    assert suspended.policy_stored(write) is None
    gone = Decisions(lambda job: None)                               # must not be written (finished meanwhile)
    assert gone(CACHED) is None and gone.policy_stored(write) is None
