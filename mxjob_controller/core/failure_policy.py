"""A running job's failure policy in one pure evaluation: restarts (:mod:`restarts`), ``backoffLimit``
(:mod:`backoff`) and ``activeDeadlineSeconds`` (:mod:`deadlines`).

The reconciler evaluates it twice per pass: on the status it read, to compute the status to write, and on the
status the server stored, to act on what that write recorded (delete the pods whose restart is due) and to know
when to look again (the next restart, an Unknown pod's timeout, the deadline), which it asks of the work queue as a
delayed requeue. Both evaluations agree because the first one's records make the second a fixed point.

Which failure wins when several hold at once: a failed replica (its message names the pods), then success, then
the backoff limit, then the deadline.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core.backoff import backoff_limit_message, past_backoff_limit
from mxjob_controller.core.deadlines import deadline_at, deadline_message
from mxjob_controller.core.framework import RunPolicySpec
from mxjob_controller.core.pod_status import PodFailure, ReplicaState
from mxjob_controller.core.restarts import ReplicaSlot, RestartPlan, plan_restarts
from mxjob_controller.kube.timefmt import parse_time


@dataclass(frozen=True, slots=True)
class PolicyOutcome:
    plan: RestartPlan
    job_failure: str = ""             # why the whole job fails (backoff limit, deadline); "" if it does not
    deadline: float | None = None     # when ``activeDeadlineSeconds`` runs out (Unix time)

    @property
    def wake_at(self) -> float | None:
        """The earliest time something falls due: a restart, an Unknown pod's timeout, the deadline."""
        times = [t for t in (self.plan.wake_at, self.deadline) if t is not None]
        return min(times) if times else None


def evaluate(*, job_name: str, run_policy: RunPolicySpec, slots: Iterable[ReplicaSlot],
             status: Mapping[str, Any] | None, now: float, container: str) -> PolicyOutcome:
    """The failure policy of a running job at ``now``; a job without ``startTime`` starts now (its first status
    write sets it)."""
    plan = plan_restarts(job_name=job_name, slots=slots, status=status, now=now, container=container)
    start = parse_time((status or {}).get("startTime"))
    deadline = deadline_at(now if start is None else start, run_policy.active_deadline_seconds)
    failure = ""
    if past_backoff_limit(plan.restart_count, run_policy.backoff_limit):
        failure = backoff_limit_message(job_name)
    elif deadline is not None and now >= deadline:
        failure = deadline_message(job_name)
    return PolicyOutcome(plan, failure, deadline)


def with_lost_replicas(states: Mapping[str, ReplicaState], lost: Sequence[PodFailure]) -> dict[str, ReplicaState]:
    """``states`` with the replicas lost for good (``Never`` pods gone after they ran) added to their types'
    failures, so the framework's rules fail the job with them."""
    out = dict(states)
    for failure in lost:
        state = out.get(failure.replica_type) or ReplicaState()
        out[failure.replica_type] = dataclasses.replace(state, failures=(*state.failures, failure))
    return out
