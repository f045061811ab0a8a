"""A running job's failure policy in one pure evaluation (:func:`evaluate`): restarts of its replicas, the
crash-loop back-off of each index, ``backoffLimit`` and ``activeDeadlineSeconds`` (kube's ``pod_failure_policy.go``
and ``backoff_utils.go`` hold the same rules). Which failed pod restarts and which fails the job is decided in one
place, :func:`~mxjob_controller.core.pods.failed_pod_outcome`.

The reconciler evaluates it once per pass, on the status it read: the outcome gives the status to write, and,
once that status is stored, what to act on (delete the pods whose restart is due) and when to look again (the next
restart, an Unknown pod's timeout, the deadline), which it asks of the work queue as a delayed requeue. That reuse
is sound because the outcome's records make an evaluation on the status it wrote a fixed point: the same pods to
delete, the same time to look again (every time it computes is one the status stores, in whole seconds). Only a
write that stored something else is evaluated again, on what was stored.

Which failure wins when several hold at once: a failed replica (its message names the pods), then success, then
the backoff limit, then the deadline.

Crash-loop back-off, as a kubelet restarts a crashing container: the first restart of an index is immediate, the
next ones wait 10 s, 20 s, 40 s … doubling up to 5 minutes; a pod that ran for 10 minutes before it failed starts
the sequence again (the kubelet forgets a back-off after twice its cap). A controller that deletes and recreates
pods without it turns one bad node or one bad input into an API storm.

``backoffLimit`` counts restarts (the kubelet's container restarts of ``OnFailure``/``Always`` pods, and the
controller's own pod restarts); the job fails when the count reaches the limit. ``0`` allows no restart at all: the
first one fails the job. No limit: restarts go on for ever (each one still backs off).

``activeDeadlineSeconds`` bounds how long a job may be active, counted from its ``status.startTime``. The start time
is the one the controller persisted in the job's first status write (resuming a suspended job moves it), so the
deadline survives a controller restart (training-operator lost it when ``startTime`` was never written, PR #1643).
The reconciler turns :func:`deadline_at` into a delayed requeue of the job, so the deadline fires on time even when
nothing else about the job changes (#3358: the requeue went to a queue nobody read).

Restarts of a job's replicas, and what the controller must remember about each replica index to decide them:
from the pods the cache holds, the job's status and the time, :func:`plan_restarts` computes the new records,
the restarts decided, the pods to delete now, the replicas lost for good, and when to look again.

Per replica policy:

- ``ExitCode`` (pods run with ``Never``): a Failed pod is restarted when its main container's exit is retryable
  (130, 137, 138, 143, or no terminated state: an eviction); otherwise it fails the job.
- ``OnFailure`` / ``Always``: the kubelet restarts containers (their ``restartCount`` is counted); a pod that
  failed anyway (evicted) is restarted by the controller.
- ``Never``: a Failed pod fails the job, and so does a pod that disappears after it was seen running (deleted by a
  user: Kubeflow's operators recreated it silently, mxnet-operator #12); one that disappears before it ran is
  simply recreated.
- Any policy: a pod in phase ``Unknown`` for 5 minutes (its node is gone) is deleted at once (grace 0: nobody is
  left to confirm a graceful deletion) and restarted (training-operator left it there for ever, #956).

A restart deletes the pod (the child sync then recreates it under the same name once it is gone). Restarts of one
index back off as a kubelet's crash loop (above): the failed pod is kept until its restart time, so the
job's status shows it meanwhile. An index is *restarting* from the decision until its new pod runs.

What must survive a controller restart lives in the job's status:

``status.restartCount``
    restarts counted against ``backoffLimit``: the kubelet's container restarts of ``OnFailure``/``Always`` pods
    plus the controller's own restarts.
``status.replicaHistory.<type>-<index>`` (e.g. ``worker-0``; only indices with something to remember)
    ``podUID`` (the pod the record follows), ``started`` (it was seen Running or Succeeded), ``containerRestarts``
    (its restarts already counted), ``unknownSince`` (first seen in phase Unknown), ``restarts`` (controller
    restarts of the index since its back-off last reset), ``nextRestartTime`` (the restart of that pod is due
    then), ``restarting`` (restarted, and no new pod has run yet).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core.framework import RunPolicySpec
from mxjob_controller.core.job_vocabulary import child_name
from mxjob_controller.core.pods import (
    FAIL_JOB,
    FAILED,
    RESTART_ALWAYS,
    RESTART_NEVER,
    RESTART_ON_FAILURE,
    RUNNING,
    SUCCEEDED,
    UNKNOWN,
    PodFailure,
    ReplicaState,
    failed_pod_outcome,
    failure_of,
    phase,
    terminated_state,
)
from mxjob_controller.kube.timefmt import parse_time, rfc3339
from mxjob_controller.runtime.backoff import exponential_delay

# --- backoff ------------------------------------------------------------------------------------------------------

BACKOFF_LIMIT_MESSAGE = "Job {name} has failed because it has reached the specified backoff limit"


@dataclass(frozen=True, slots=True)
class CrashLoopBackoff:
    initial: float = 10.0        # the delay before the second restart
    cap: float = 300.0           # the longest delay
    reset_after: float = 600.0   # a pod that ran this long before failing starts the sequence again

    def delay(self, restarts_before: int) -> float:
        """Seconds to wait before a restart when the index was already restarted ``restarts_before`` times
        (since the last reset): 0, 10, 20, 40 … up to ``cap``."""
        if restarts_before <= 0:
            return 0.0
        return exponential_delay(self.initial, restarts_before - 1, self.cap)

    def resets(self, ran_for: float | None) -> bool:
        """Whether a pod that ran ``ran_for`` seconds before it failed (None: unknown) resets the sequence."""
        return ran_for is not None and ran_for >= self.reset_after


DEFAULT_CRASH_LOOP = CrashLoopBackoff()


def past_backoff_limit(restarts: int, limit: int | None) -> bool:
    """Whether ``restarts`` counted restarts exhaust ``backoffLimit`` (None: unlimited)."""
    if limit is None:
        return False
    return restarts > 0 and restarts >= limit


def backoff_limit_message(name: str) -> str:
    return BACKOFF_LIMIT_MESSAGE.format(name=name)


# --- deadlines ---------------------------------------------------------------------------------------------------

DEADLINE_MESSAGE = "Job {name} has failed because it was active longer than specified deadline"


def deadline_at(start_time: float | None, active_deadline_seconds: int | None) -> float | None:
    """When the job's deadline passes (Unix time); None without a deadline or before the job has started."""
    if active_deadline_seconds is None or start_time is None:
        return None
    return start_time + active_deadline_seconds


def deadline_message(name: str) -> str:
    return DEADLINE_MESSAGE.format(name=name)


# --- restarts ----------------------------------------------------------------------------------------------------

RESTART_COUNT_FIELD = "restartCount"
HISTORY_FIELD = "replicaHistory"
#: How long a pod may stay in phase Unknown before it is given up and restarted.
UNKNOWN_TIMEOUT = 300.0
VANISHED_REASON = "Deleted"
VANISHED_MESSAGE = "the pod disappeared after it had started"


@dataclass(frozen=True, slots=True)
class ReplicaRecord:
    """What the controller remembers about one replica index (``status.replicaHistory.<type>-<index>``)."""

    pod_uid: str = ""
    started: bool = False
    container_restarts: int = 0
    unknown_since: str = ""
    restarts: int = 0
    next_restart_time: str = ""
    restarting: bool = False

    def worth_keeping(self) -> bool:
        return bool(self.started or self.container_restarts or self.unknown_since or self.restarts
                    or self.restarting)

    def to_dict(self) -> dict[str, Any]:
        out = {"podUID": self.pod_uid, "started": self.started, "containerRestarts": self.container_restarts,
               "unknownSince": self.unknown_since, "restarts": self.restarts,
               "nextRestartTime": self.next_restart_time, "restarting": self.restarting}
        return {k: v for k, v in out.items() if v}

    @classmethod
    def from_dict(cls, raw: Any) -> ReplicaRecord:
        """A record as stored; a field of the wrong type (edited by hand) reads as unset."""
        raw = raw if isinstance(raw, dict) else {}

        def text(key: str) -> str:
            value = raw.get(key)
            return value if isinstance(value, str) else ""

        def count(key: str) -> int:
            value = raw.get(key)
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0

        return cls(pod_uid=text("podUID"), started=raw.get("started") is True,
                   container_restarts=count("containerRestarts"), unknown_since=text("unknownSince"),
                   restarts=count("restarts"), next_restart_time=text("nextRestartTime"),
                   restarting=raw.get("restarting") is True)


@dataclass(frozen=True, slots=True)
class ReplicaSlot:
    """One replica index of the job, and the pod that currently stands for it (None: none in the cache)."""

    replica_type: str
    index: int
    restart_policy: str
    pod: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class DueRestart:
    """A pod whose restart is due: delete it (``force``: with grace 0, its node is gone)."""

    replica_type: str
    index: int
    pod: dict[str, Any]
    force: bool


@dataclass(frozen=True, slots=True)
class RestartPlan:
    history: Mapping[str, ReplicaRecord]
    restart_count: int
    new_restarts: tuple[PodFailure, ...] = ()   # restarts decided in this pass (each counted once)
    vanished: tuple[PodFailure, ...] = ()       # Never replicas gone after they ran: they fail the job
    due: tuple[DueRestart, ...] = ()            # pods to delete now
    wake_at: float | None = None                # the earliest time a restart or an Unknown timeout falls due

    @property
    def restarting(self) -> bool:
        return any(record.restarting for record in self.history.values())

    def status_fields(self) -> dict[str, Any]:
        """The status fields this plan owns; None removes a field."""
        history = {key: record.to_dict() for key, record in sorted(self.history.items())}
        return {RESTART_COUNT_FIELD: self.restart_count or None, HISTORY_FIELD: history or None}


def history_key(replica_type: str, index: int) -> str:
    return f"{replica_type.lower()}-{index}"


def read_history(status: Mapping[str, Any] | None) -> dict[str, ReplicaRecord]:
    raw = (status or {}).get(HISTORY_FIELD)
    return {key: ReplicaRecord.from_dict(value) for key, value in raw.items()} if isinstance(raw, dict) else {}


def read_restart_count(status: Mapping[str, Any] | None) -> int:
    value = (status or {}).get(RESTART_COUNT_FIELD)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def forget_pods(status: Mapping[str, Any]) -> dict[str, Any]:
    """``status`` without the per-index history, keeping ``restartCount``: for when the job's pods are deleted on
    purpose (suspend), so their absence is not taken for replicas lost."""
    return {k: v for k, v in status.items() if k != HISTORY_FIELD}


# --- reading pods ------------------------------------------------------------------------------------------------

def container_restarts(pod: dict[str, Any]) -> int:
    """Restarts of every container and init container of ``pod``, as the kubelet reports them."""
    status = pod.get("status") or {}
    total = 0
    for entry in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())):
        count = entry.get("restartCount") if isinstance(entry, dict) else None
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            total += count
    return total


def ran_for(pod: dict[str, Any], container: str, now: float) -> float | None:
    """How long ``pod`` ran before it stopped (its main container's start to finish, else the pod's start to
    ``now``); None when it has no start time."""
    terminated = terminated_state(pod, container) or {}
    start = parse_time(terminated.get("startedAt")) or parse_time((pod.get("status") or {}).get("startTime"))
    if start is None:
        return None
    end = parse_time(terminated.get("finishedAt")) or now
    return max(0.0, end - start)


def restart_time(now: float, delay: float) -> str:
    """The stored time of a restart ``delay`` seconds from ``now``: never earlier than that (status times have
    whole seconds), and due at once for no delay."""
    return rfc3339(now if delay <= 0 else math.ceil(now + delay))


# --- planning ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _IndexOutcome:
    record: ReplicaRecord | None
    restart: PodFailure | None = None
    vanished: PodFailure | None = None
    container_delta: int = 0
    due: DueRestart | None = None
    wake_at: float | None = None


class _Planner:
    def __init__(self, job_name: str, now: float, container: str, crash_loop: CrashLoopBackoff,
                 unknown_timeout: float) -> None:
        self.job_name = job_name
        self.now = now
        self.container = container
        self.crash_loop = crash_loop
        self.unknown_timeout = unknown_timeout

    def _lost(self, slot: ReplicaSlot) -> PodFailure:
        name = child_name(self.job_name, slot.replica_type, slot.index)
        return PodFailure(name, slot.replica_type, slot.index, None, VANISHED_REASON, VANISHED_MESSAGE)

    def step(self, slot: ReplicaSlot, record: ReplicaRecord | None) -> _IndexOutcome:
        pod = slot.pod
        lost_if_gone = record is not None and slot.restart_policy == RESTART_NEVER and record.started \
            and not record.restarting
        if pod is None:
            if record is None:
                return _IndexOutcome(None)
            if lost_if_gone:
                return _IndexOutcome(record, vanished=self._lost(slot))
            if record.restarting:
                return _IndexOutcome(record)
            rest = ReplicaRecord(restarts=record.restarts)   # recreated: only the back-off step is remembered
            return _IndexOutcome(rest if rest.worth_keeping() else None)
        uid = (pod.get("metadata") or {}).get("uid") or ""
        if record is None:
            record = ReplicaRecord(pod_uid=uid)
        elif record.pod_uid != uid:
            if lost_if_gone:
                return _IndexOutcome(record, vanished=self._lost(slot))
            record = ReplicaRecord(pod_uid=uid, restarts=record.restarts, restarting=record.restarting)
        delta = 0
        if slot.restart_policy in (RESTART_ON_FAILURE, RESTART_ALWAYS):
            seen = container_restarts(pod)
            if seen > record.container_restarts:
                delta = seen - record.container_restarts
                record = dataclasses.replace(record, container_restarts=seen)
        outcome = self._phase_step(slot, pod, record)
        kept = outcome.record if outcome.record is not None and outcome.record.worth_keeping() else None
        return dataclasses.replace(outcome, record=kept, container_delta=delta)

    def _phase_step(self, slot: ReplicaSlot, pod: dict[str, Any], record: ReplicaRecord) -> _IndexOutcome:
        current = phase(pod)
        if current in (RUNNING, SUCCEEDED):
            return _IndexOutcome(dataclasses.replace(record, started=True, unknown_since="", restarting=False,
                                                     next_restart_time=""))
        if current not in (FAILED, UNKNOWN):
            return _IndexOutcome(record)   # Pending: nothing to decide yet
        if current == UNKNOWN and not record.unknown_since:
            record = dataclasses.replace(record, unknown_since=rfc3339(self.now))
        if record.next_restart_time:       # this pod's restart was decided already
            return self._when_due(slot, pod, record, parse_time(record.next_restart_time) or self.now)
        if current == FAILED:
            if failed_pod_outcome(slot.restart_policy, pod, self.container) is FAIL_JOB:
                return _IndexOutcome(record)   # the job's status counts it as the replica's failure
            why = failure_of(pod, slot.replica_type, slot.index, self.container)
        else:
            since = parse_time(record.unknown_since) or self.now
            if self.now < since + self.unknown_timeout:
                return _IndexOutcome(record, wake_at=since + self.unknown_timeout)
            why = PodFailure(child_name(self.job_name, slot.replica_type, slot.index), slot.replica_type, slot.index,
                             None, UNKNOWN, f"the pod's phase has been Unknown for {self.unknown_timeout:g}s")
        step = 0 if self.crash_loop.resets(ran_for(pod, self.container, self.now)) else record.restarts
        at = restart_time(self.now, self.crash_loop.delay(step))
        record = dataclasses.replace(record, restarts=step + 1, restarting=True, next_restart_time=at)
        outcome = self._when_due(slot, pod, record, parse_time(at) or self.now)
        return dataclasses.replace(outcome, restart=why)

    def _when_due(self, slot: ReplicaSlot, pod: dict[str, Any], record: ReplicaRecord, at: float) -> _IndexOutcome:
        if at <= self.now:
            return _IndexOutcome(record, due=DueRestart(slot.replica_type, slot.index, pod, phase(pod) == UNKNOWN))
        return _IndexOutcome(record, wake_at=at)


def plan_restarts(*, job_name: str, slots: Iterable[ReplicaSlot], status: Mapping[str, Any] | None, now: float,
                  container: str, crash_loop: CrashLoopBackoff = DEFAULT_CRASH_LOOP,
                  unknown_timeout: float = UNKNOWN_TIMEOUT) -> RestartPlan:
    """The restart plan for a job's replica ``slots`` (every index the job has), given the ``status`` it has."""
    planner = _Planner(job_name, now, container, crash_loop, unknown_timeout)
    old = read_history(status)
    count = read_restart_count(status)
    history: dict[str, ReplicaRecord] = {}
    new_restarts: list[PodFailure] = []
    vanished: list[PodFailure] = []
    due: list[DueRestart] = []
    wakes: list[float] = []
    for slot in slots:
        key = history_key(slot.replica_type, slot.index)
        outcome = planner.step(slot, old.get(key))
        if outcome.record is not None:
            history[key] = outcome.record
        count += outcome.container_delta
        if outcome.restart is not None:
            count += 1
            new_restarts.append(outcome.restart)
        if outcome.vanished is not None:
            vanished.append(outcome.vanished)
        if outcome.due is not None:
            due.append(outcome.due)
        if outcome.wake_at is not None:
            wakes.append(outcome.wake_at)
    return RestartPlan(history, count, tuple(new_restarts), tuple(vanished), tuple(due),
                       min(wakes) if wakes else None)


def slots_of(kept: Mapping[str, Mapping[int, dict[str, Any]]], replicas: Mapping[str, int],
             policies: Mapping[str, str]) -> list[ReplicaSlot]:
    """Every index of every replica type (``replicas``: type → count) with its kept pod, if any."""
    return [ReplicaSlot(rtype, index, policies[rtype], kept.get(rtype, {}).get(index))
            for rtype, count in replicas.items() for index in range(count)]


# --- failure policy ----------------------------------------------------------------------------------------------

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
    """The failure policy of a running job at ``now``; a job without ``startTime`` starts now, at the whole second
    its first status write stores (so the deadline is the one every later evaluation reads)."""
    plan = plan_restarts(job_name=job_name, slots=slots, status=status, now=now, container=container)
    start = parse_time((status or {}).get("startTime"))
    if start is None:
        start = parse_time(rfc3339(now))
    deadline = deadline_at(start, run_policy.active_deadline_seconds)
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
