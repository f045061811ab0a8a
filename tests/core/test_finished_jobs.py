"""A finished job's pure decisions (core/finished_jobs.py), table-tested: ``ttlSecondsAfterFinished`` (with a
skewed clock) and which children ``cleanPodPolicy`` deletes."""

from __future__ import annotations

import pytest

from mxjob_controller.core.finished_jobs import TTLAction, cleanup_plan, ttl_decision
from tests.core.bodies import NOW, T0

# --- TTL -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("now", "completion", "ttl", "suspended", "action", "wait", "skewed"), [
    (T0, T0, None, False, TTLAction.KEEP, 0.0, False),               # unset: never
    (T0 + 99, T0, 2, True, TTLAction.KEEP, 0.0, False),              # suspended: not applied
    (T0, None, 2, False, TTLAction.SET_COMPLETION_TIME, 2.0, False),  # #170: set, never dereferenced
    (T0, T0, 0, False, TTLAction.DELETE, 0.0, False),                # 0: at once
    (T0 + 0.5, T0, 2, False, TTLAction.WAIT, 1.5, False),
    (T0 + 2, T0, 2, False, TTLAction.DELETE, 0.0, False),
    (T0, T0 + 30, 2, False, TTLAction.WAIT, 32.0, True),             # clock skew: deferred, with a warning
])
def test_ttl_decisions(now: float, completion: float | None, ttl: int | None, suspended: bool, action: TTLAction,
                       wait: float, skewed: bool) -> None:
    decision = ttl_decision(now, completion, ttl, suspended)
    assert (decision.action, decision.wait, decision.skewed) == (action, wait, skewed)


# --- cleanup ---------------------------------------------------------------------------------------------

def children_1_4_2(phase: str) -> tuple[list[dict], list[dict]]:
    names = ["j-scheduler-0", "j-server-0", "j-server-1", *(f"j-worker-{i}" for i in range(4))]
    return ([{"metadata": {"name": n}, "status": {"phase": phase}} for n in names],
            [{"metadata": {"name": n}} for n in names])


@pytest.mark.parametrize(("policy", "phase", "deleted"), [
    ("All", "Running", 7), ("Running", "Running", 7), ("Running", "Succeeded", 0), ("None", "Succeeded", 0),
    ("All", "Succeeded", 7), ("Running", "Pending", 7), ("Running", "Failed", 0), ("None", "Running", 0),
])
def test_upstreams_cleanup_table(policy: str, phase: str, deleted: int) -> None:
    pods, services = children_1_4_2(phase)
    plan_ = cleanup_plan(policy, pods, services)
    assert (len(plan_.pods), len(plan_.services)) == (deleted, deleted)


def test_cleanup_skips_what_is_going_and_takes_the_services_of_pods_gone() -> None:
    pods = [{"metadata": {"name": "a", "deletionTimestamp": NOW}, "status": {"phase": "Running"}},
            {"metadata": {"name": "b"}, "status": {"phase": "Succeeded"}},
            {"metadata": {"name": "c"}, "status": {"phase": "Running"}}]
    services = [{"metadata": {"name": n}} for n in ("a", "b", "c", "d")]
    running = cleanup_plan("Running", pods, services)
    assert [p["metadata"]["name"] for p in running.pods] == ["c"]
    assert [s["metadata"]["name"] for s in running.services] == ["a", "c", "d"]
    assert not cleanup_plan("All", [pods[0]], [])   # already being deleted: nothing to do, no API call
