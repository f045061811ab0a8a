"""What happens to a job once its ``Succeeded`` or ``Failed`` condition is written: its children are cleaned up as
``cleanPodPolicy`` says (:func:`cleanup_plan`), then ``ttlSecondsAfterFinished`` deletes the job itself
(:func:`ttl_decision`).

Thin I/O around those pure decisions. Guarantees:

- cleanup deletes each child once: it works from the cache, skips what is already being deleted, and the caller
  waits for the expectations of earlier deletions before calling again; a child already gone is no error and no
  event (``ChildControl.delete``);
- the TTL deletion happens through a delayed requeue of the job (``Result.after``), never a sleep; it is
  preconditioned on the job's UID (a new job of the same name is never deleted), recorded as ``SuccessfulDeleteJob``
  and counted in ``jobs_deleted_total`` only once the API has accepted it;
- a finished job with nothing left to clean and no TTL makes no API call and records no event;
- its terminal event (``MXJobSucceeded`` / ``MXJobFailed``, as the reconcile that finished it recorded it) exists
  once, also after a restart (:meth:`FinishedJobs.announce`): a job finished while no controller ran, or whose
  event was still queued when the controller was killed, gets it from the first process that sees the job finished
  within an hour of its end; a process that (or whose predecessor) wrote it does not write it again. Cost: one
  LIST of the job's events of that reason, on the events client, per such job per process; nothing on later
  reconciles (the recorder remembers).

``cleanPodPolicy`` selects, pure:

- ``All``: every pod and every service of the job;
- ``Running``: the pods still Running or Pending (a Pending pod would start later and hold its resources for
  nothing), with their services (a pod and its service share a name), and the services of pods gone or going;
- ``Unfinished`` (GenericJob's ``cleanUpPolicy``): as ``Running``, and also pods in phase Unknown (not finished
  either: their node stopped reporting);
- ``None``: nothing; the pods stay for their logs (training-operator ignored it when the backoff limit hit, #3419).

Objects already being deleted are not selected again, and objects already gone are not in the cache: a finished
job that was cleaned selects nothing, so a resync makes no API call and records no event (training-operator
deleted them again on every resync, with error events, #997).

``ttlSecondsAfterFinished`` (pure): the job is deleted ``ttl`` seconds after its ``status.completionTime`` (``0``:
at once; unset: never; not while the job is suspended). A finished job without a completion time (written by an
older controller, or removed by hand) gets one set to now rather than being dereferenced (kubeflow/common #170
crashed the operator on it). A completion time in the future means the clocks disagree: the deletion waits for it,
with a warning.

A finished job with nothing left to do (nothing to clean, no TTL or one still waiting in the work queue's delayed
heap) is *settled* (:class:`SettledJobs`) at the resourceVersion it was judged at: the informer's periodic resync of
it is then a dict lookup in the job handler, not a reconcile (no parse, no cleanup plan, no status diff). Any real
change of the job has a new resourceVersion, and any change of a child queues the job as before: both reconcile it
and judge it afresh.
"""

from __future__ import annotations

import enum
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core import job_vocabulary as cond
from mxjob_controller.core.child_writes import (
    POD,
    SERVICE,
    UNBOUNDED,
    ChildControl,
    ChildKind,
    Slice,
    SlowStartOutcome,
    WritePool,
    slow_start,
)
from mxjob_controller.core.framework import JobContext
from mxjob_controller.core.job_status import ANNOUNCE_WINDOW, StatusWriter, terminal_event
from mxjob_controller.core.job_vocabulary import replica_of
from mxjob_controller.core.metrics import JobMetrics
from mxjob_controller.core.pods import PENDING, RUNNING, is_deleting, phase
from mxjob_controller.kube.timefmt import parse_time, rfc3339
from mxjob_controller.runtime.client import Client, Conflict, NotFound
from mxjob_controller.runtime.controller import DONE, Result, after_failed_write, requeue_in
from mxjob_controller.runtime.events import NORMAL, EventRecorder

# --- cleanup ------------------------------------------------------------------------------------------------------

CLEAN_ALL, CLEAN_RUNNING, CLEAN_UNFINISHED, CLEAN_NONE = "All", "Running", "Unfinished", "None"
_UNFINISHED_PHASES = {CLEAN_RUNNING: (RUNNING, PENDING), CLEAN_UNFINISHED: (RUNNING, PENDING, "Unknown")}


@dataclass(frozen=True, slots=True)
class CleanupPlan:
    pods: tuple[dict[str, Any], ...] = ()
    services: tuple[dict[str, Any], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pods or self.services)


def _name(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


def cleanup_plan(policy: str, pods: Sequence[dict[str, Any]], services: Sequence[dict[str, Any]]) -> CleanupPlan:
    """The children of a finished job to delete under ``policy`` (``pods`` and ``services``: the job's own)."""
    if policy == CLEAN_NONE:
        return CleanupPlan()
    if policy == CLEAN_ALL:
        doomed = [p for p in pods if not is_deleting(p)]
    else:
        unfinished = _UNFINISHED_PHASES.get(policy, _UNFINISHED_PHASES[CLEAN_RUNNING])
        doomed = [p for p in pods if not is_deleting(p) and phase(p) in unfinished]
    staying = {_name(p) for p in pods if not is_deleting(p)} - {_name(p) for p in doomed}
    services_doomed = [s for s in services if not is_deleting(s) and (policy == CLEAN_ALL or _name(s) not in staying)]
    return CleanupPlan(tuple(doomed), tuple(services_doomed))


# --- ttl ---------------------------------------------------------------------------------------------------------

class TTLAction(enum.Enum):
    KEEP = "keep"                        # no TTL (or suspended): the job stays
    SET_COMPLETION_TIME = "set"          # finished without a completion time: write one, then wait the TTL
    WAIT = "wait"                        # not yet: look again in ``wait`` seconds
    DELETE = "delete"                    # expired: delete the job now


@dataclass(frozen=True, slots=True)
class TTLDecision:
    action: TTLAction
    wait: float = 0.0        # seconds until the job expires (WAIT, SET_COMPLETION_TIME)
    skewed: bool = False     # the completion time lies in the future


def ttl_decision(now: float, completion_time: float | None, ttl_seconds: int | None,
                 suspended: bool = False) -> TTLDecision:
    """What to do about a finished job's TTL at ``now`` (Unix times)."""
    if ttl_seconds is None or suspended:
        return TTLDecision(TTLAction.KEEP)
    if completion_time is None:
        return TTLDecision(TTLAction.SET_COMPLETION_TIME, wait=float(ttl_seconds))
    expires = completion_time + ttl_seconds
    if now >= expires:
        return TTLDecision(TTLAction.DELETE)
    return TTLDecision(TTLAction.WAIT, wait=expires - now, skewed=completion_time > now)


# --- settled finished jobs ---------------------------------------------------------------------------------------

class SettledJobs:
    """The finished jobs whose last reconcile left nothing to do, each with the resourceVersion it was judged at.

    Written by reconciles (one key is never on two workers at once), read by the job informer's handler thread:
    single dict operations, atomic under the GIL, so no lock."""

    def __init__(self) -> None:
        self._versions: dict[str, str] = {}

    def settle(self, key: str, resource_version: str) -> None:
        if resource_version:
            self._versions[key] = resource_version

    def unsettle(self, key: str) -> None:
        self._versions.pop(key, None)

    def holds(self, key: str, resource_version: str) -> bool:
        """Whether the job ``key`` at ``resource_version`` is settled: a resync of it has nothing to do."""
        return bool(resource_version) and self._versions.get(key) == resource_version

    def __len__(self) -> int:
        return len(self._versions)


# --- finished jobs -----------------------------------------------------------------------------------------------

log = logging.getLogger(__name__)

SUCCESSFUL_DELETE_JOB = "SuccessfulDeleteJob"


class FinishedJobs:
    def __init__(self, client: Client, control: ChildControl, pool: WritePool, recorder: EventRecorder,
                 metrics: JobMetrics, status: StatusWriter, *, wall: Callable[[], float], write_timeout: float) -> None:
        self.client = client
        self.control = control
        self.pool = pool
        self.recorder = recorder
        self.metrics = metrics
        self.status = status
        self.wall = wall
        self.write_timeout = write_timeout
        self.settled = SettledJobs()

    def handle(self, ctx: JobContext, pods: Sequence[dict[str, Any]], services: Sequence[dict[str, Any]],
               extra: dict[str, Any], within: Slice = UNBOUNDED, next_slice: float = 0.05,
               retry_after_progress: float = 0.5) -> Result:
        """Clean up (as much as ``within`` allows: the rest ``next_slice`` seconds later), then apply the TTL.
        A failed deletion is raised (the job is retried with back-off) unless others went through in the same pass:
        then the next pass comes ``retry_after_progress`` seconds later (``requeue.after_failed_write``).
        A pass that deleted nothing and leaves only a TTL (or nothing) settles the job (:class:`SettledJobs`)."""
        cleaned = self.clean(ctx, pods, services, within)
        if cleaned.error is not None:
            return after_failed_write(cleaned.error, len(cleaned.results), retry_after_progress, extra)
        if cleaned.deferred:
            return Result.after(next_slice)
        return self.expire(ctx, extra, settle=not cleaned.attempted)

    def announce(self, ctx: JobContext) -> None:
        """Record the finished job's terminal event unless this process, or the API, already has it (the recorder's
        ``event_once``); a job that ended over :data:`ANNOUNCE_WINDOW` seconds ago gets nothing (its Event would
        have expired by now anyway). Never blocks: the look-up is the event writer's."""
        announce = terminal_event(ctx.kind, (ctx.obj.get("status") or {}).get("conditions"))
        if announce is None or not ctx.uid:
            return
        if announce.at is None or self.wall() - announce.at > ANNOUNCE_WINDOW:
            return
        if self.recorder.event_once(ctx.ref(), announce.event_type, announce.reason, announce.message,
                                    at=announce.at):
            log.debug("finished job seen for the first time by this process: its %s event will be written unless "
                      "it exists", announce.reason, extra=ctx.extra())

    # --- cleanPodPolicy -------------------------------------------------------------------------------------------

    def clean(self, ctx: JobContext, pods: Sequence[dict[str, Any]], services: Sequence[dict[str, Any]],
              within: Slice = UNBOUNDED) -> SlowStartOutcome:
        policy = ctx.spec.run_policy.clean_pod_policy
        plan = cleanup_plan(policy, pods, services)
        why = f"the job has finished (cleanPodPolicy {policy})"
        tasks = self._deletions(ctx, POD, plan.pods, why) + self._deletions(ctx, SERVICE, plan.services, why)
        if not tasks:
            return SlowStartOutcome()
        log.info("cleaning up %d pods and %d services (cleanPodPolicy %s)", len(plan.pods), len(plan.services),
                 policy, extra=ctx.extra())
        return slow_start(tasks, self.pool, timeout=self.write_timeout, initial_batch=len(tasks), within=within)

    def _deletions(self, ctx: JobContext, kind: ChildKind, objs: Sequence[dict[str, Any]],
                   why: str) -> list[Callable[[], Any]]:
        tasks: list[Callable[[], Any]] = []
        for obj in objs:
            replica = replica_of((obj.get("metadata") or {}).get("labels"))
            if replica is None:
                continue   # labels naming no replica: its deletion could not be matched to an expectation
            rtype, index = replica
            tasks.append(functools.partial(self.control.delete, ctx, kind, obj, rtype, ctx.extra(rtype, index), why))
        return tasks

    # --- ttlSecondsAfterFinished ----------------------------------------------------------------------------------

    def expire(self, ctx: JobContext, extra: dict[str, Any], settle: bool = False) -> Result:
        """Apply the TTL; with ``settle``, a job kept or left waiting for it is settled at the version judged."""
        status = ctx.obj.get("status") or {}
        policy = ctx.spec.run_policy
        suspended = policy.suspend or cond.is_suspended(status.get("conditions"))
        now = self.wall()
        decision = ttl_decision(now, parse_time(status.get("completionTime")), policy.ttl_seconds_after_finished,
                                suspended)
        if decision.action is TTLAction.SET_COMPLETION_TIME:
            written = self._set_completion_time(ctx, rfc3339(now), extra)
            if written is None:
                return DONE   # gone, or no longer finished: nothing to expire
            decision = ttl_decision(now, parse_time(written), policy.ttl_seconds_after_finished, suspended)
        if decision.action is not TTLAction.DELETE and settle:
            self.settled.settle(ctx.key, (ctx.obj.get("metadata") or {}).get("resourceVersion") or "")
        if decision.action is TTLAction.KEEP:
            return DONE
        if decision.action is TTLAction.WAIT:
            if decision.skewed:
                log.warning("the job finished in the future (%s): the clocks disagree; its deletion is deferred "
                            "until %gs after that", status.get("completionTime"), policy.ttl_seconds_after_finished,
                            extra=extra)
            return requeue_in(decision.wait)
        self._delete_job(ctx, extra)
        return DONE

    def _set_completion_time(self, ctx: JobContext, now: str, extra: dict[str, Any]) -> str | None:
        """Give a finished job without ``completionTime`` one (kubeflow/common #170); the time stored, or None."""
        def desired(job: dict[str, Any]) -> dict[str, Any] | None:
            status = dict(job.get("status") or {})
            if not cond.is_finished(status.get("conditions")):
                return None
            status.setdefault("completionTime", now)
            return status

        write = self.status.update(ctx.obj, desired, extra)
        if write is None:
            return None
        if write.written:
            log.info("the finished job had no completionTime: set to %s", now, extra=extra)
        return write.after.get("completionTime") or now

    def _delete_job(self, ctx: JobContext, extra: dict[str, Any]) -> None:
        resource = ctx.framework.resource
        try:
            self.client.delete(resource, ctx.name, ctx.namespace, precondition_uid=ctx.uid,
                               propagation_policy="Background")
        except (NotFound, Conflict):
            log.info("the job is already gone (or replaced): nothing to delete", extra=extra)
            return
        log.info("deleted the job: ttlSecondsAfterFinished (%ss) has passed",
                 ctx.spec.run_policy.ttl_seconds_after_finished, extra=extra)
        self.metrics.deleted(ctx.namespace)
        self.recorder.event(ctx.ref(), NORMAL, SUCCESSFUL_DELETE_JOB, f"Deleted job: {ctx.name}")
