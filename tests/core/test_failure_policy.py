"""The failure policy's pure functions (core/failure_policy.py), table-tested: the crash-loop back-off schedule,
``backoffLimit``, deadline arithmetic, the restart plan (with its records as a fixed point) and the policy as a
whole."""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.core.failure_policy import (
    DEFAULT_CRASH_LOOP,
    CrashLoopBackoff,
    PolicyOutcome,
    ReplicaRecord,
    ReplicaSlot,
    RestartPlan,
    container_restarts,
    deadline_at,
    evaluate,
    forget_pods,
    past_backoff_limit,
    plan_restarts,
    read_history,
    with_lost_replicas,
)
from mxjob_controller.core.framework import Verdict
from mxjob_controller.core.job_status import next_status
from mxjob_controller.core.pods import PodFailure, ReplicaState
from mxjob_controller.kube.timefmt import rfc3339
from mxjob_controller.kubeflow_api.run_policy import RunPolicy
from mxjob_controller.kubeflow_api.status import ReplicaCounts
from mxjob_controller.mxnet.api import with_mxjob_replica_counts
from tests.core.bodies import NOW, T0, evicted, worker


def plan(pods: dict[int, dict[str, Any] | None], policy: str = "ExitCode", status: dict | None = None,
         now: float = T0, replicas: int | None = None) -> RestartPlan:
    count = replicas if replicas is not None else max(pods, default=-1) + 1
    slots = [ReplicaSlot("Worker", i, policy, pods.get(i)) for i in range(count)]
    return plan_restarts(job_name="j", slots=slots, status=status, now=now, container="mxnet")


def status_of(p: RestartPlan) -> dict[str, Any]:
    return {k: v for k, v in p.status_fields().items() if v is not None}


# --- crash-loop back-off and backoffLimit ----------------------------------------------------------------

def test_the_crash_loop_schedule_doubles_from_10s_to_5min() -> None:
    assert [DEFAULT_CRASH_LOOP.delay(n) for n in range(9)] == [0, 10, 20, 40, 80, 160, 300, 300, 300]
    assert DEFAULT_CRASH_LOOP.delay(10_000) == 300
    assert CrashLoopBackoff(initial=1, cap=4).delay(5) == 4


@pytest.mark.parametrize(("ran_for", "resets"), [(None, False), (0.0, False), (599.0, False), (600.0, True),
                                                 (3600.0, True)])
def test_ten_minutes_of_running_reset_the_crash_loop(ran_for: float | None, resets: bool) -> None:
    assert DEFAULT_CRASH_LOOP.resets(ran_for) is resets


@pytest.mark.parametrize(("restarts", "limit", "past"), [
    (0, None, False), (100, None, False), (0, 0, False), (1, 0, True), (3, 4, False), (4, 4, True), (5, 4, True),
    (1, 2, False), (2, 2, True),
])
def test_past_backoff_limit(restarts: int, limit: int | None, past: bool) -> None:
    assert past_backoff_limit(restarts, limit) is past


# --- deadline ------------------------------------------------------------------------------------

def test_deadline_arithmetic() -> None:
    assert deadline_at(None, 2) is None and deadline_at(T0, None) is None
    assert deadline_at(T0, 2) == T0 + 2 and deadline_at(T0, 0) == T0


# --- restarts --------------------------------------------------------------------------------------------

def test_a_retryable_exit_restarts_at_once_and_is_counted_once() -> None:
    first = plan({0: worker(phase="Failed", exit_code=137)})
    assert [f.exit_code for f in first.new_restarts] == [137]
    assert first.restart_count == 1 and first.restarting and first.wake_at is None
    assert [d.pod["metadata"]["uid"] for d in first.due] == ["uid-0"] and not first.due[0].force
    assert first.history == {"worker-0": ReplicaRecord(pod_uid="uid-0", restarts=1, next_restart_time=NOW,
                                                       restarting=True)}
    again = plan({0: worker(phase="Failed", exit_code=137)}, status=status_of(first), now=T0 + 1)
    assert again.history == first.history and again.restart_count == 1 and not again.new_restarts
    assert len(again.due) == 1   # still due (the deletion failed, or is not seen yet): not counted twice


@pytest.mark.parametrize("code", [1, 2, 126, 127, 128, 139])
def test_a_permanent_exit_is_not_restarted(code: int) -> None:
    p = plan({0: worker(phase="Failed", exit_code=code)})
    assert not p.new_restarts and not p.due and p.restart_count == 0 and p.history == {}


def test_an_evicted_pod_is_restarted_under_exit_code() -> None:
    p = plan({0: evicted()})
    assert [(f.exit_code, f.reason) for f in p.new_restarts] == [(None, "Evicted")] and p.due


def test_restarts_of_one_index_back_off_and_the_replacement_running_ends_the_restart() -> None:
    first = plan({0: worker(phase="Failed", exit_code=137, uid="a")})
    gone = plan({0: None}, status=status_of(first), now=T0 + 1)            # deleted: waiting for the new pod
    assert gone.restarting and gone.history["worker-0"].restarts == 1
    pending = plan({0: worker(phase="Pending", uid="b")}, status=status_of(gone), now=T0 + 2)
    assert pending.restarting and pending.history["worker-0"].pod_uid == "b"
    running = plan({0: worker(uid="b")}, status=status_of(pending), now=T0 + 3)
    assert not running.restarting and running.history["worker-0"] == ReplicaRecord(pod_uid="b", started=True,
                                                                                   restarts=1)
    second = plan({0: worker(phase="Failed", exit_code=143, uid="b")}, status=status_of(running), now=T0 + 4)
    assert second.restart_count == 2 and not second.due and second.wake_at == T0 + 14
    assert second.history["worker-0"].next_restart_time == rfc3339(T0 + 14)
    again = worker(phase="Failed", exit_code=143, uid="b")
    assert plan({0: again}, status=status_of(second), now=T0 + 13.9).due == ()
    assert len(plan({0: again}, status=status_of(second), now=T0 + 14).due) == 1


def test_a_pod_that_ran_ten_minutes_restarts_without_waiting() -> None:
    status = {"restartCount": 5, "replicaHistory": {"worker-0": {"podUID": "z", "started": True, "restarts": 5}}}
    long_run = worker(phase="Failed", exit_code=137, started=T0 - 600, finished=T0)
    assert plan({0: long_run}, status=status).due                                  # step reset: delay 0
    short_run = worker(phase="Failed", exit_code=137, started=T0 - 60, finished=T0)
    p = plan({0: short_run}, status=status)
    assert not p.due and p.wake_at == T0 + 160 and p.history["worker-0"].restarts == 6   # the 6th: 160 s


def test_a_delay_never_ends_early_on_a_fractional_clock() -> None:
    p = plan({0: worker(phase="Failed", exit_code=137)},
             status={"replicaHistory": {"worker-0": {"podUID": "old", "restarts": 1}}}, now=T0 + 0.4)
    assert p.history["worker-0"].next_restart_time == rfc3339(T0 + 11)


def test_under_never_a_pod_gone_after_it_ran_is_lost_and_one_gone_before_is_recreated() -> None:
    ran = plan({0: worker()}, policy="Never")
    assert ran.history == {"worker-0": ReplicaRecord(pod_uid="uid-0", started=True)}
    lost = plan({0: None}, policy="Never", status=status_of(ran))
    assert [(f.pod, f.reason) for f in lost.vanished] == [("j-worker-0", "Deleted")]
    assert plan({0: worker(uid="other", phase="Pending")}, policy="Never", status=status_of(ran)).vanished
    pending = plan({0: worker(phase="Pending")}, policy="Never")
    assert pending.history == {} and not plan({0: None}, policy="Never", status=status_of(pending)).vanished
    for policy in ("OnFailure", "Always", "ExitCode"):
        ran = plan({0: worker()}, policy=policy)
        assert not plan({0: None}, policy=policy, status=status_of(ran)).vanished


def test_container_restarts_are_counted_by_their_increase() -> None:
    assert container_restarts({"status": {"initContainerStatuses": [{"restartCount": 2}],
                                          "containerStatuses": [{"restartCount": 1}, {"restartCount": 3}]}}) == 6
    four = plan({i: worker(i, restarts=1) for i in range(4)}, policy="OnFailure")
    assert four.restart_count == 4
    same = plan({i: worker(i, restarts=1) for i in range(4)}, policy="OnFailure", status=status_of(four))
    assert same.restart_count == 4 and same.history == four.history
    bumped = plan({0: worker(0, restarts=3)}, policy="OnFailure", status=status_of(four), replicas=1)
    assert bumped.restart_count == 6
    replaced = plan({0: worker(0, restarts=1, uid="new")}, policy="OnFailure", status=status_of(bumped), replicas=1)
    assert replaced.restart_count == 7 and replaced.history["worker-0"].pod_uid == "new"
    assert plan({0: worker(restarts=5)}, policy="Never").restart_count == 0   # not the kubelet's under Never


def test_an_onfailure_pod_that_failed_anyway_is_restarted_by_the_controller() -> None:
    p = plan({0: evicted()}, policy="OnFailure")
    assert p.restart_count == 1 and p.due


def test_a_pod_unknown_for_five_minutes_is_restarted_with_grace_zero() -> None:
    seen = plan({0: worker(phase="Unknown")}, policy="Never")
    assert seen.history["worker-0"].unknown_since == NOW and seen.wake_at == T0 + 300 and not seen.due
    later = plan({0: worker(phase="Unknown")}, policy="Never", status=status_of(seen), now=T0 + 299)
    assert not later.due and later.history == seen.history
    due = plan({0: worker(phase="Unknown")}, policy="Never", status=status_of(seen), now=T0 + 300)
    assert [d.force for d in due.due] == [True] and due.restart_count == 1 and due.restarting
    assert due.new_restarts[0].reason == "Unknown"
    back = plan({0: worker()}, policy="Never", status=status_of(seen), now=T0 + 10)
    assert back.history["worker-0"].unknown_since == ""   # it came back: the clock starts again next time
    gone = plan({0: None}, policy="Never", status=status_of(due), now=T0 + 301)
    assert not gone.vanished and gone.restarting          # our own deletion is no lost replica


def test_records_of_indices_the_job_no_longer_has_are_dropped_and_bad_records_read_as_unset() -> None:
    status = {"replicaHistory": {"worker-5": {"started": True}, "worker-0": {"restarts": "x", "started": "yes"}}}
    assert read_history(status)["worker-0"] == ReplicaRecord()
    assert plan({0: None}, policy="Never", status=status).history == {}
    assert forget_pods({"restartCount": 2, "replicaHistory": {}}) == {"restartCount": 2}
    assert ReplicaRecord(pod_uid="u", started=True).to_dict() == {"podUID": "u", "started": True}


# --- the policy as a whole -------------------------------------------------------------------------------

def test_the_backoff_limit_comes_before_the_deadline_and_a_job_without_start_time_starts_now() -> None:
    slots = [ReplicaSlot("Worker", 0, "OnFailure", worker(restarts=2))]
    both = evaluate(job_name="j", run_policy=RunPolicy(backoff_limit=2, active_deadline_seconds=1), slots=slots,
                    status={"startTime": rfc3339(T0 - 10)}, now=T0, container="mxnet")
    assert both.job_failure == "Job j has failed because it has reached the specified backoff limit"
    deadline = evaluate(job_name="j", run_policy=RunPolicy(active_deadline_seconds=1), slots=slots,
                        status={"startTime": rfc3339(T0 - 10)}, now=T0, container="mxnet")
    assert deadline.job_failure == "Job j has failed because it was active longer than specified deadline"
    fresh = evaluate(job_name="j", run_policy=RunPolicy(active_deadline_seconds=2), slots=slots, status={},
                     now=T0, container="mxnet")
    assert fresh.job_failure == "" and fresh.wake_at == T0 + 2


def test_lost_replicas_join_their_types_failures() -> None:
    lost = PodFailure("j-worker-1", "Worker", 1, None, "Deleted", "gone")
    states = with_lost_replicas({"Worker": ReplicaState()}, [lost])
    assert states["Worker"].failures == (lost,)




# --- one evaluation per pass -----------------------------------------------------------------------------

def evaluated(pods: dict[int, dict[str, Any] | None], policy: str, status: dict[str, Any], now: float,
              run_policy: RunPolicy) -> PolicyOutcome:
    slots = [ReplicaSlot("Worker", i, policy, pods.get(i)) for i in range(max(pods) + 1)]
    return evaluate(job_name="j", run_policy=run_policy, slots=slots, status=status, now=now, container="mxnet")


LATE = T0 + 0.4   # a pass's clock is not on a whole second; the status stores whole seconds
STARTED = {"startTime": NOW}
RESTARTED = {"startTime": NOW, "restartCount": 1,
             "replicaHistory": {"worker-0": {"podUID": "uid-0", "started": True, "restarts": 1}}}


@pytest.mark.parametrize(("pods", "policy", "status", "run_policy"), [
    ({0: worker()}, "Never", {}, RunPolicy(active_deadline_seconds=60)),             # a new job: its deadline
    ({0: worker()}, "Never", STARTED, RunPolicy(active_deadline_seconds=60)),
    ({0: worker(phase="Pending")}, "Never", {}, RunPolicy()),
    ({0: worker(phase="Failed", exit_code=137)}, "ExitCode", STARTED, RunPolicy()),  # restarted at once
    ({0: worker(phase="Failed", exit_code=137)}, "ExitCode", RESTARTED, RunPolicy(active_deadline_seconds=60)),
    ({0: worker(phase="Unknown")}, "Never", STARTED, RunPolicy()),                    # its timeout
    ({0: worker(phase="Unknown")}, "Never",
     {"startTime": NOW, "replicaHistory": {"worker-0": {"podUID": "uid-0", "unknownSince": rfc3339(T0 - 300)}}},
     RunPolicy()),                                                                     # timed out: due, grace 0
    ({0: worker(restarts=2), 1: None}, "OnFailure", STARTED, RunPolicy(backoff_limit=5)),
    ({0: worker(uid="new"), 1: evicted(1)}, "ExitCode", RESTARTED, RunPolicy()),
])
def test_an_evaluation_on_the_status_it_wrote_is_a_fixed_point(pods: dict, policy: str, status: dict[str, Any],
                                                               run_policy: RunPolicy) -> None:
    """Why the reconciler acts on a pass's one evaluation after its write: evaluated again on the status that
    write stored, the policy deletes the same pods and looks again at the same time."""
    first = evaluated(pods, policy, status, LATE, run_policy)
    stored = next_status(status, kind="MXJob", name="j", counts={"Worker": ReplicaCounts(active=1)},
                         verdict=Verdict(running=True), now=rfc3339(LATE), render_counts=with_mxjob_replica_counts,
                         job_failure=first.job_failure, fields=first.plan.status_fields())
    again = evaluated(pods, policy, stored, LATE, run_policy)
    assert (again.plan.due, again.wake_at, again.plan.history, again.plan.restart_count, again.job_failure) == (
        first.plan.due, first.wake_at, first.plan.history, first.plan.restart_count, first.job_failure)
