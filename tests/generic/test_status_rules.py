"""GenericJob's finish rules and restart policy (pure): :func:`judge` over hand-built pods. Success rules first
(any rule all of whose replicas succeeded), then restarts within each type's budget (a sum over the type's
replicas), then failure rules (every replica failed for good), then "no success rule can be fulfilled"; the implicit
rules when none are written; and restarts already under way are counted once."""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.generic.api import GenericJobView
from mxjob_controller.generic.status_rules import (
    NO_SUCCESS_POSSIBLE,
    Judgement,
    Restart,
    failure_message,
    implicit_failure_rules,
    implicit_success_rules,
    judge,
)
from tests.generic_support import genericjob, replica, view

JOB = "g"
R, S, F, P = "Running", "Succeeded", "Failed", "Pending"


def pod(name: str, phase: str | None = R, uid: str | None = None, code: int | None = None,
        deleting: bool = False) -> dict[str, Any]:
    """A replica pod as the API server shows it; a terminated container with ``code`` (default: 0 when Succeeded,
    1 when Failed)."""
    status: dict[str, Any] = {}
    if phase is not None:
        status["phase"] = phase
    if phase in (S, F):
        exit_code = code if code is not None else (0 if phase == S else 1)
        status["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": exit_code}}}]
    elif phase == R:
        status["containerStatuses"] = [{"name": "main", "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": meta, "status": status}


def pods(**phases: list[str | None]) -> dict[str, dict[int, dict[str, Any]]]:
    """type → rank → pod, from each type's phases by rank (None: no pod)."""
    return {rtype: {rank: pod(f"{JOB}-{rtype}-{rank}", p) for rank, p in enumerate(ps) if p is not None}
            for rtype, ps in phases.items()}


def restarted(judgement: Judgement) -> list[tuple[str, int]]:
    return [(r.replica_type, r.rank) for r in judgement.restarts]


def verdict(judgement: Judgement) -> str:
    if judgement.succeeded:
        assert not judgement.failure and not judgement.restarts
        return "Succeeded"
    if judgement.failure:
        assert not judgement.restarts, "a finished job restarts nothing"
        return judgement.failure
    return ""


# --- success rules -------------------------------------------------------------------------------------------

def test_a_success_rule_fulfilled_while_others_still_run() -> None:
    """Checklist 11: successRules {worker:[0]}, worker-0 Succeeded while the 3 others run."""
    job = view(genericjob(JOB, "default", replica("worker", 4), successRules=[{"worker": [0]}],
                          failureRules=[{"worker": [i]} for i in range(4)]))
    judgement = judge(job, pods(worker=[S, R, R, R]), {})
    assert judgement == Judgement(succeeded=True, restart_counts={"worker": 0}, outcomes={
        ("worker", 0): "succeeded", ("worker", 1): "active", ("worker", 2): "active", ("worker", 3): "active"})
    assert judgement.finished


MULTI = view(genericjob(JOB, "default", replica("master", 3), replica("worker", 2),
                        successRules=[{"master": [2], "worker": [0, 1]}]))


@pytest.mark.parametrize(("master", "worker", "succeeded"), [
    ([R, R, S], [S, S], True),
    ([R, R, S], [S, R], False),
    ([R, R, S], [R, S], False),
    ([R, R, R], [S, S], False),
    ([S, S, R], [S, S], False),
    ([R, R, S], [S, None], False),
    ([S, S, S], [S, S], True),
    ([P, P, S], [S, S], True),
])
def test_a_multi_member_rule_needs_every_member(master: list[str | None], worker: list[str | None],
                                                succeeded: bool) -> None:
    """Checklist 12: {master:[2], worker:[0,1]} holds only when all three have succeeded."""
    judgement = judge(MULTI, pods(master=master, worker=worker), {})
    assert judgement.succeeded is succeeded
    assert judgement.failure == ""


# T9k's manual: success when master-0 is done; or workers 0, 1 and 2; or master-2 and workers 0 and 1
MANUAL = view(genericjob(JOB, "default", replica("master", 3), replica("worker", 3),
                         successRules=[{"master": [0]}, {"worker": [0, 1, 2]}, {"master": [2], "worker": [0, 1]}],
                         failureRules=[{"master": [0]}]))


@pytest.mark.parametrize(("master", "worker", "expected"), [
    ([S, R, R], [R, R, R], "Succeeded"),
    ([R, R, R], [S, S, S], "Succeeded"),
    ([R, R, S], [S, S, R], "Succeeded"),
    ([R, S, S], [S, R, S], ""),
    ([R, S, R], [S, S, R], ""),
    ([R, R, R], [S, S, R], ""),
    ([R, R, S], [S, R, R], ""),
    ([R, R, R], [R, R, R], ""),
    ([F, R, R], [R, R, R], failure_message((("master", (0,)),))),
    ([F, R, R], [S, S, S], "Succeeded"),
    ([R, F, F], [F, R, R], ""),
    ([R, R, F], [F, R, R], ""),
])
def test_the_manuals_three_success_rules(master: list[str | None], worker: list[str | None], expected: str) -> None:
    assert verdict(judge(MANUAL, pods(master=master, worker=worker), {})) == expected


def test_the_manuals_rules_fail_once_none_can_hold() -> None:
    """Master-0 running, but master-2 and worker-0 failed for good (Never): no rule can be fulfilled."""
    job = view(genericjob(JOB, "default", replica("master", 3, policy="Never"), replica("worker", 3, policy="Never"),
                          successRules=[{"master": [0]}, {"worker": [0, 1, 2]}, {"master": [2], "worker": [0, 1]}],
                          failureRules=[{"master": [0]}]))
    assert verdict(judge(job, pods(master=[R, R, F], worker=[F, R, R]), {})) == ""   # master-0 may still succeed
    assert verdict(judge(job, pods(master=[F, R, F], worker=[F, R, R]), {})) == \
        'The job is failed with rule: {"master":["0"]}'
    job2 = view(genericjob(JOB, "default", replica("master", 3, policy="Never"), replica("worker", 3, policy="Never"),
                           successRules=[{"worker": [0, 1, 2]}, {"master": [2], "worker": [0, 1]}],
                           failureRules=[{"master": [0]}]))
    assert verdict(judge(job2, pods(master=[R, R, R], worker=[R, F, R]), {})) == NO_SUCCESS_POSSIBLE
    assert verdict(judge(job2, pods(master=[R, R, R], worker=[R, R, F]), {})) == ""


# --- failure rules -------------------------------------------------------------------------------------------

def test_a_failure_rule_with_never() -> None:
    """Checklist 13: failureRules {worker:[1]}, policy Never, worker-1 exits 127."""
    job = view(genericjob(JOB, "default", replica("worker", 4, policy="Never", limit=5),
                          successRules=[{"worker": [0]}], failureRules=[{"worker": [1]}]))
    state = pods(worker=[R, R, R, R])
    state["worker"][1] = pod("g-worker-1", F, code=127)
    judgement = judge(job, state, {})
    assert judgement.failure == 'The job is failed with rule: {"worker":["1"]}'
    assert not judgement.succeeded and judgement.restarts == ()
    assert judgement.outcomes[("worker", 1)] == "failed"
    assert dict(judgement.restart_counts) == {"worker": 0}


@pytest.mark.parametrize(("rule", "worker", "expected"), [
    ({"worker": [0, 1]}, [F, R, R], ""),
    ({"worker": [0, 1]}, [F, F, R], 'The job is failed with rule: {"worker":["0","1"]}'),
    ({"worker": [1, 0]}, [F, F, R], 'The job is failed with rule: {"worker":["1","0"]}'),
    ({"worker": ["2"]}, [R, R, F], 'The job is failed with rule: {"worker":["2"]}'),
    ({"worker": [2]}, [F, F, R], ""),
    ({"worker": [2]}, [F, S, R], "Succeeded"),
    ({"worker": [0, 1, 2]}, [F, F, F], 'The job is failed with rule: {"worker":["0","1","2"]}'),
])
def test_a_failure_rule_needs_every_member_failed_for_good(rule: dict[str, list[Any]], worker: list[str | None],
                                                            expected: str) -> None:
    job = view(genericjob(JOB, "default", replica("worker", 3, policy="Never"),
                          successRules=[{"worker": [0]}, {"worker": [1]}, {"worker": [2]}], failureRules=[rule]))
    assert verdict(judge(job, pods(worker=worker), {})) == expected


def test_the_first_fulfilled_failure_rule_is_the_one_reported() -> None:
    job = view(genericjob(JOB, "default", replica("master", policy="Never"), replica("worker", 2, policy="Never"),
                          failureRules=[{"worker": [0, 1]}, {"master": [0]}, {"worker": [1]}]))
    assert verdict(judge(job, pods(master=[F], worker=[R, F]), {})) == 'The job is failed with rule: {"master":["0"]}'
    assert verdict(judge(job, pods(master=[F], worker=[F, F]), {})) == \
        'The job is failed with rule: {"worker":["0","1"]}'


def test_success_is_judged_before_failure() -> None:
    job = view(genericjob(JOB, "default", replica("master", policy="Never"), replica("worker", policy="Never"),
                          successRules=[{"master": [0]}], failureRules=[{"worker": [0]}]))
    assert verdict(judge(job, pods(master=[S], worker=[F]), {})) == "Succeeded"


# --- restarts --------------------------------------------------------------------------------------------------

def test_a_failed_replica_with_budget_left_restarts_instead_of_failing_the_job() -> None:
    """Checklist 14: the failure rule {worker:[1]} is not fulfilled while worker-1 can restart."""
    job = view(genericjob(JOB, "default", replica("worker", 2, policy="OnFailure", limit=1),
                          failureRules=[{"worker": [1]}]))
    state = pods(worker=[R, F])
    judgement = judge(job, state, {})
    assert judgement == Judgement(restarts=(Restart("worker", 1, state["worker"][1]),),
                                  restart_counts={"worker": 1},
                                  outcomes={("worker", 0): "active", ("worker", 1): "restarting"})
    assert not judgement.finished


@pytest.mark.parametrize(("count", "worker", "expected_restarts", "expected_count", "expected"), [
    (0, [F, R, R], [("worker", 0)], 1, ""),
    (1, [R, F, R], [("worker", 1)], 2, ""),
    (2, [F, R, R], [], 2, 'The job is failed with rule: {"worker":["0"]}'),
    (2, [R, R, F], [], 2, 'The job is failed with rule: {"worker":["2"]}'),
    (0, [F, F, R], [("worker", 0), ("worker", 1)], 2, ""),
    (1, [F, F, F], [], 1, 'The job is failed with rule: {"worker":["1"]}'),
    (3, [R, R, R], [], 3, ""),
])
def test_on_failure_with_limit_2_counts_restarts_per_type(count: int, worker: list[str | None],
                                                          expected_restarts: list[tuple[str, int]],
                                                          expected_count: int, expected: str) -> None:
    """Checklist 15: the third failure of any worker is final; the budget is the type's, summed over its replicas.
    No failureRules: any replica failed for good fails the job."""
    job = view(genericjob(JOB, "default", replica("worker", 3, policy="OnFailure", limit=2)))
    judgement = judge(job, pods(worker=worker), {"worker": count})
    assert restarted(judgement) == expected_restarts
    assert dict(judgement.restart_counts) == {"worker": expected_count}
    assert verdict(judgement) == expected


def test_limit_2_over_three_passes() -> None:
    """The same replica failing three times: restarted twice, then failed for good."""
    job = view(genericjob(JOB, "default", replica("worker", 2, policy="OnFailure", limit=2),
                          failureRules=[{"worker": [0]}]))
    counts: dict[str, int] = {}
    for attempt in range(3):
        judgement = judge(job, pods(worker=[F, R]), counts)
        counts = dict(judgement.restart_counts)
        if attempt < 2:
            assert (restarted(judgement), counts, judgement.finished) == ([("worker", 0)], {"worker": attempt + 1},
                                                                          False)
    assert judgement.failure == 'The job is failed with rule: {"worker":["0"]}'
    assert counts == {"worker": 2}


def test_budgets_are_per_type() -> None:
    job = view(genericjob(JOB, "default", replica("ps", policy="OnFailure", limit=1),
                          replica("worker", 2, policy="OnFailure", limit=1)))
    judgement = judge(job, pods(ps=[F], worker=[R, F]), {"ps": 1})
    assert judgement.outcomes == {("ps", 0): "failed", ("worker", 0): "active", ("worker", 1): "restarting"}
    assert judgement.restarts == (), "a finished job restarts nothing"
    assert judgement.failure == 'The job is failed with rule: {"ps":["0"]}'
    assert dict(judgement.restart_counts) == {"ps": 1, "worker": 0}, "a finished job's restarts are not counted"
    judgement = judge(job, pods(ps=[R], worker=[R, F]), {"ps": 1, "chief": 9})
    assert restarted(judgement) == [("worker", 1)]
    assert dict(judgement.restart_counts) == {"ps": 1, "worker": 1}


def test_restarts_go_in_spec_order_then_rank_order() -> None:
    job = view(genericjob(JOB, "default", replica("worker", 3, policy="Always", limit=9),
                          replica("ps", 2, policy="OnFailure", limit=9), successRules=[{"ps": [0], "worker": [0]}]))
    judgement = judge(job, pods(worker=[F, R, F], ps=[F, F]), {})
    assert restarted(judgement) == [("worker", 0), ("worker", 2), ("ps", 0), ("ps", 1)]
    assert dict(judgement.restart_counts) == {"worker": 2, "ps": 2}


def test_two_failures_with_one_restart_left_the_lower_rank_restarts() -> None:
    job = view(genericjob(JOB, "default", replica("worker", 3, policy="OnFailure", limit=2),
                          successRules=[{"worker": [2]}], failureRules=[{"worker": [0, 1]}]))
    state = pods(worker=[F, F, R])
    judgement = judge(job, state, {"worker": 1})
    assert judgement == Judgement(restarts=(Restart("worker", 0, state["worker"][0]),), restart_counts={"worker": 2},
                                  outcomes={("worker", 0): "restarting", ("worker", 1): "failed",
                                            ("worker", 2): "active"})


def test_two_failures_with_one_restart_left_the_higher_rank_fails_the_job() -> None:
    job = view(genericjob(JOB, "default", replica("worker", 3, policy="OnFailure", limit=2)))
    judgement = judge(job, pods(worker=[R, F, F]), {"worker": 1})
    assert judgement.failure == 'The job is failed with rule: {"worker":["2"]}'
    assert judgement.outcomes == {("worker", 0): "active", ("worker", 1): "restarting", ("worker", 2): "failed"}
    assert (judgement.restarts, dict(judgement.restart_counts)) == ((), {"worker": 1})


@pytest.mark.parametrize(("policy", "limit", "phase", "expected_restarts", "expected_outcome"), [
    ("Never", 5, F, [], "failed"),
    ("Never", 5, S, [], "succeeded"),
    ("OnFailure", 0, F, [], "failed"),
    ("OnFailure", 1, F, [("worker", 1)], "restarting"),
    ("OnFailure", 1, S, [], "succeeded"),
    ("Always", 0, F, [], "failed"),
    ("Always", 0, S, [], "succeeded"),
    ("Always", 1, F, [("worker", 1)], "restarting"),
    ("Always", 1, S, [("worker", 1)], "restarting"),
    ("OnFailure", 1, R, [], "active"),
    ("Always", 1, P, [], "active"),
    ("Always", 1, "Unknown", [], "active"),
    ("Always", 1, None, [], "active"),
])
def test_what_each_policy_restarts(policy: str, limit: int, phase: str | None,
                                   expected_restarts: list[tuple[str, int]], expected_outcome: str) -> None:
    job = view(genericjob(JOB, "default", replica("master", policy="Never"),
                          replica("worker", 2, policy=policy, limit=limit),
                          successRules=[{"master": [0]}], failureRules=[{"master": [0]}]))
    judgement = judge(job, pods(master=[R], worker=[R, phase]), {})
    assert restarted(judgement) == expected_restarts
    assert judgement.outcomes[("worker", 1)] == expected_outcome
    assert judgement.restart_counts["worker"] == len(expected_restarts)


def test_the_default_policy_restarts_nothing() -> None:
    """OnFailure with limit 0, the seed's literal defaults: any failure is final."""
    job = view(genericjob(JOB, "default", replica("worker", 2, None)))
    judgement = judge(job, pods(worker=[F, R]), {})
    assert (restarted(judgement), judgement.failure) == ([], 'The job is failed with rule: {"worker":["0"]}')


# --- Always ------------------------------------------------------------------------------------------------

def test_always_restarts_a_succeeded_replica_until_the_limit() -> None:
    """Checklist 16: master (Always, limit 2) succeeds; the job's success rule names a worker."""
    job = view(genericjob(JOB, "default", replica("master", policy="Always", limit=2), replica("worker"),
                          successRules=[{"worker": [0]}]))
    state = pods(master=[S], worker=[R])
    for count in (0, 1):
        judgement = judge(job, state, {"master": count})
        assert restarted(judgement) == [("master", 0)]
        assert dict(judgement.restart_counts) == {"master": count + 1, "worker": 0}
        assert not judgement.finished
    judgement = judge(job, state, {"master": 2})
    assert (restarted(judgement), judgement.outcomes[("master", 0)], judgement.finished) == ([], "succeeded", False)


def test_always_does_not_restart_a_replica_that_fulfilled_a_success_rule() -> None:
    job = view(genericjob(JOB, "default", replica("master", policy="Always", limit=2), replica("worker"),
                          successRules=[{"master": [0]}]))
    judgement = judge(job, pods(master=[S], worker=[R]), {})
    assert judgement == Judgement(succeeded=True, restart_counts={"master": 0, "worker": 0},
                                  outcomes={("master", 0): "succeeded", ("worker", 0): "active"})


def test_always_with_the_implicit_rule_restarts_until_all_succeed_at_once() -> None:
    job = view(genericjob(JOB, "default", replica("worker", 2, policy="Always", limit=3)))
    judgement = judge(job, pods(worker=[S, R]), {})
    assert restarted(judgement) == [("worker", 0)]
    assert judge(job, pods(worker=[S, S]), {}).succeeded


def test_an_always_success_uses_the_budget_before_a_later_failure() -> None:
    """Spec order, then rank order, while the budget lasts: a succeeded worker-0 under Always takes the last
    restart, and a failed worker-1 is then failed for good."""
    job = view(genericjob(JOB, "default", replica("worker", 2, policy="Always", limit=1)))
    judgement = judge(job, pods(worker=[S, F]), {})
    assert judgement.failure == 'The job is failed with rule: {"worker":["1"]}'
    assert judgement.outcomes == {("worker", 0): "restarting", ("worker", 1): "failed"}


# --- nothing can succeed any more ------------------------------------------------------------------------------

@pytest.mark.parametrize(("success_rules", "worker", "counts", "expected"), [
    ([{"worker": [0]}], [F, R, R], {"worker": 1}, NO_SUCCESS_POSSIBLE),
    ([{"worker": [0]}], [F, R, R], {"worker": 0}, ""),
    ([{"worker": [0]}, {"worker": [1]}], [F, R, R], {"worker": 1}, ""),
    ([{"worker": [0]}, {"worker": [1]}], [F, F, R], {"worker": 1}, NO_SUCCESS_POSSIBLE),
    ([{"worker": [0, 2]}, {"worker": [1, 2]}], [R, R, F], {"worker": 1}, NO_SUCCESS_POSSIBLE),
    ([{"worker": [0, 2]}, {"worker": [1]}], [R, R, F], {"worker": 1}, ""),
    ([], [R, R, F], {"worker": 1}, NO_SUCCESS_POSSIBLE),
])
def test_restarts_exhausted_and_every_success_rule_broken(success_rules: list[dict[str, list[int]]],
                                                          worker: list[str | None], counts: dict[str, int],
                                                          expected: str) -> None:
    """Checklist 17: no failure rule matches ({worker:[0,1,2]} needs all three), but nothing can succeed."""
    job = view(genericjob(JOB, "default", replica("worker", 3, policy="OnFailure", limit=1),
                          successRules=success_rules, failureRules=[{"worker": [0, 1, 2]}]))
    judgement = judge(job, pods(worker=worker), counts)
    assert verdict(judgement) == expected
    if expected == "" and counts["worker"] == 0:
        assert restarted(judgement) == [("worker", 0)]


# --- empty rule lists ------------------------------------------------------------------------------------------

EMPTY = view(genericjob(JOB, "default", replica("ps", policy="Never"), replica("worker", 3, policy="Never")))


@pytest.mark.parametrize(("ps", "worker", "expected"), [
    ([S], [S, S, S], "Succeeded"),
    ([R], [S, S, S], ""),
    ([S], [S, S, R], ""),
    ([S], [S, S, None], ""),
    ([R], [R, F, R], 'The job is failed with rule: {"worker":["1"]}'),
    ([F], [R, F, R], 'The job is failed with rule: {"ps":["0"]}'),
    ([S], [S, S, F], 'The job is failed with rule: {"worker":["2"]}'),
])
def test_empty_rules(ps: list[str | None], worker: list[str | None], expected: str) -> None:
    """Checklist 18: all replicas must succeed; any replica failed for good fails the job."""
    assert verdict(judge(EMPTY, pods(ps=ps, worker=worker), {})) == expected


def test_the_implicit_rules() -> None:
    assert implicit_success_rules(EMPTY) == ((("ps", (0,)), ("worker", (0, 1, 2))),)
    assert implicit_failure_rules(EMPTY) == ((("ps", (0,)),), (("worker", (0,)),), (("worker", (1,)),),
                                             (("worker", (2,)),))
    written = view(genericjob(JOB, "default", replica("worker", 2), successRules=[{"worker": [1]}],
                              failureRules=[{"worker": ["0"]}]))
    assert implicit_success_rules(written) == ((("worker", (1,)),),)
    assert implicit_failure_rules(written) == ((("worker", (0,)),),)


def test_only_failure_rules_written_keeps_the_implicit_success_rule() -> None:
    job = view(genericjob(JOB, "default", replica("worker", 2, policy="Never"), failureRules=[{"worker": [0]}]))
    assert verdict(judge(job, pods(worker=[R, F]), {})) == NO_SUCCESS_POSSIBLE
    assert verdict(judge(job, pods(worker=[S, S]), {})) == "Succeeded"


def test_only_success_rules_written_keeps_the_implicit_failure_rules() -> None:
    job = view(genericjob(JOB, "default", replica("worker", 2, policy="Never"), successRules=[{"worker": [0]}]))
    assert verdict(judge(job, pods(worker=[R, F]), {})) == 'The job is failed with rule: {"worker":["1"]}'


# --- restarts already under way ------------------------------------------------------------------------------

def test_a_pod_already_restarting_is_not_counted_twice() -> None:
    job = view(genericjob(JOB, "default", replica("worker", 2, policy="OnFailure", limit=1),
                          failureRules=[{"worker": [1]}]))
    state = pods(worker=[R, F])
    judgement = judge(job, state, {"worker": 1}, restarting=["uid-g-worker-1"])
    assert judgement == Judgement(restart_counts={"worker": 1},
                                  outcomes={("worker", 0): "active", ("worker", 1): "restarting"})
    assert not judgement.finished


def test_a_restarting_pod_does_not_count_as_succeeded_either() -> None:
    job = view(genericjob(JOB, "default", replica("worker", policy="Always", limit=1)))
    judgement = judge(job, pods(worker=[S]), {"worker": 1}, restarting={"uid-g-worker-0"})
    assert (judgement.succeeded, judgement.outcomes, judgement.restarts) == (False, {("worker", 0): "restarting"}, ())


def test_restarting_uids_of_old_pods_do_not_hide_the_new_pod() -> None:
    """The replacement pod has a new UID: its own failure is judged (and here, out of budget, fails the job)."""
    job = view(genericjob(JOB, "default", replica("worker", policy="OnFailure", limit=1)))
    judgement = judge(job, pods(worker=[F]), {"worker": 1}, restarting=["uid-of-the-old-pod"])
    assert judgement.failure == 'The job is failed with rule: {"worker":["0"]}'


def test_missing_pods_are_active() -> None:
    job: GenericJobView = view(genericjob(JOB, "default", replica("worker", 2, policy="Never")))
    assert judge(job, {}, {}) == Judgement(restart_counts={"worker": 0},
                                          outcomes={("worker", 0): "active", ("worker", 1): "active"})


def test_a_succeeded_pod_being_deleted_is_not_counted_as_succeeded() -> None:
    job = view(genericjob(JOB, "default", replica("worker", policy="Never")))
    state = {"worker": {0: pod("g-worker-0", S, deleting=True)}}
    assert judge(job, state, {}).outcomes == {("worker", 0): "active"}


def test_a_failed_pod_being_deleted_with_budget_left_does_not_fail_the_job() -> None:
    job = view(genericjob(JOB, "default", replica("worker", 2, policy="OnFailure", limit=3)))
    state = {"worker": {0: pod("g-worker-0", F, deleting=True), 1: pod("g-worker-1", R)}}
    judgement = judge(job, state, {})
    assert judgement.failure == ""
    assert judgement.outcomes[("worker", 0)] != "failed"
