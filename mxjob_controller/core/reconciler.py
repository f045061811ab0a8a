"""Reconcile one job: level-triggered, from the informer caches; the work queue guarantees one job is never on two
threads at once.

    job gone                  → forget its expectations
    managed by another        → nothing at all: no write of any kind (``runPolicy.managedBy``, core/managed_by.py)
    being deleted             → nothing (the garbage collector removes its children)
    invalid                   → ``Failed`` (``<Kind>FailedValidation``, every field error), one Warning event, no
                                pods, no retry; a fixed spec undoes it (core/validation_failure.py)
    Succeeded or Failed       → clean up per ``cleanPodPolicy``, then ``ttlSecondsAfterFinished`` deletes the job
                                (core/finished_jobs.py); with gang scheduling its PodGroup is deleted, once
    expectations unsatisfied  → wait; requeued after the expectations' lifetime, so a lost event cannot stall it
    suspended                 → delete its pods, services and PodGroup; status ``Suspended`` (core/suspend.py)
    gang scheduling           → create or update its PodGroup first; no pod before the scheduler admits the gang
    otherwise                 → sync the children (adopt, delete surplus, create services then pods), compute the
                                status, write it if it changed, then record the transitions it wrote: events
                                (``<Kind>Running`` / ``Succeeded`` / ``Failed``), job metrics, and one Warning per
                                name held by an object the job does not control. The failure policy
                                (core/failure_policy.py: restarts, backoffLimit, activeDeadlineSeconds) is part of
                                that status; after the write, the restarts it recorded are carried out
                                (core/restart_actions.py), a job it finished is cleaned up at once, and the next due
                                time (a restart, an Unknown pod's timeout, the deadline) is a delayed requeue.

A failed write re-raises after the status is written, so the controller requeues the job with back-off; a blocked
name requeues it after ``blocked_retry`` seconds (the object holding the name is not watched).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from mxjob_controller.core import conditions as cond
from mxjob_controller.core import suspend
from mxjob_controller.core.caches import JobCaches
from mxjob_controller.core.child_control import ChildControl
from mxjob_controller.core.child_sync import ChildSync
from mxjob_controller.core.children import Children, classify
from mxjob_controller.core.failure_policy import PolicyOutcome, evaluate, with_lost_replicas
from mxjob_controller.core.finished_jobs import FinishedJobs
from mxjob_controller.core.framework import Framework, JobSpec
from mxjob_controller.core.gang import GangScheduling
from mxjob_controller.core.job_context import JobContext
from mxjob_controller.core.job_status import next_status, restarting_message
from mxjob_controller.core.managed_by import managed_elsewhere
from mxjob_controller.core.metrics import JobMetrics
from mxjob_controller.core.pod_status import replica_state
from mxjob_controller.core.restart_actions import delete_due
from mxjob_controller.core.restarts import forget_pods, slots_of
from mxjob_controller.core.status_writer import StatusWrite, StatusWriter
from mxjob_controller.core.validation_failure import (
    failed_validation,
    invalid_status,
    validation_reason,
    without_validation_failure,
)
from mxjob_controller.core.write_pool import WritePool
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.timefmt import parse_time, rfc3339
from mxjob_controller.runtime.client import Client
from mxjob_controller.runtime.controller import DONE, Result
from mxjob_controller.runtime.events import NORMAL, WARNING, EventRecorder, ObjectReference
from mxjob_controller.runtime.expectations import ControllerExpectations

log = logging.getLogger(__name__)

_TRANSITION_EVENTS = {cond.RUNNING: NORMAL, cond.SUCCEEDED: NORMAL, cond.FAILED: WARNING, cond.RESTARTING: WARNING}
_MIN_REQUEUE = 0.05   # a due time the clocks' rounding puts a hair in the future is looked at again, not lost


@dataclass(frozen=True, slots=True)
class ReconcilerOptions:
    blocked_retry: float = 30.0    # seconds before re-checking a name held by an object the job does not control
    status_attempts: int = 5       # status writes tried (re-reading the job after each conflict)
    write_timeout: float = 120.0   # longest wait for one batch of child writes


class JobReconciler:
    def __init__(self, framework: Framework, client: Client, caches: JobCaches, expectations: ControllerExpectations,
                 recorder: EventRecorder, metrics: JobMetrics, pool: WritePool,
                 options: ReconcilerOptions | None = None, wall: Callable[[], float] = time.time,
                 gang: GangScheduling | None = None) -> None:
        self.framework = framework
        self.gang = gang
        self.caches = caches
        self.expectations = expectations
        self.recorder = recorder
        self.metrics = metrics
        self.options = options or ReconcilerOptions()
        self.wall = wall
        self.children = ChildSync(framework, ChildControl(client, recorder, expectations), pool, recorder,
                                  write_timeout=self.options.write_timeout,
                                  pod_decorator=gang.decorate if gang is not None else None)
        self.status = StatusWriter(client, framework.resource, self.options.status_attempts)
        self.finished = FinishedJobs(client, self.children.control, pool, recorder, metrics, self.status, wall=wall,
                                     write_timeout=self.options.write_timeout)
        self._invalid_logged: LRUCache[tuple[str, int], bool] = LRUCache(maxsize=4096)
        self._lock = threading.Lock()

    def __call__(self, key: Hashable) -> Result:
        return self.reconcile(str(key))

    def reconcile(self, key: str) -> Result:
        obj = self.caches.job(key)
        if obj is None:
            self.expectations.delete_expectations(key)
            log.info("job is gone: its expectations are forgotten", extra={"key": key})
            return DONE
        meta = obj.get("metadata") or {}
        extra = {"key": key, "job_namespace": meta.get("namespace"), "job_name": meta.get("name"),
                 "job_uid": meta.get("uid")}
        manager = managed_elsewhere(obj, self.framework.managers)
        if manager is not None:
            log.debug("job is managed by %s: left alone", manager, extra=extra)
            return DONE
        if meta.get("deletionTimestamp"):
            log.debug("job is being deleted: nothing to do", extra=extra)
            return DONE
        spec, errors = self.framework.parse(obj)
        if spec is None:
            self._log_invalid_once(meta, errors, extra)
            return self._invalid(obj, extra)
        status = obj.get("status") or {}
        if cond.is_finished(status.get("conditions")) and not failed_validation(status, self.framework.resource.kind):
            if self.gang is not None:
                self.gang.release(JobContext(key, obj, spec, self.framework), finished=True)
            return self._finished(key, obj, spec, extra)
        if not self.expectations.job_satisfied(key):
            log.info("waiting for the cache to show the job's earlier writes", extra=extra)
            # Events mark expectations observed and requeue the job; this is the safety net for a lost one.
            return Result.after(max(self.expectations.time_left(key), 0.1))
        ctx = JobContext(key, obj, spec, self.framework)
        if spec.run_policy.suspend:
            return self._suspend(ctx, extra)
        gang = self.gang.sync(ctx) if self.gang is not None else None
        pods, services = self.caches.pods(ctx.uid), self.caches.services(ctx.uid)
        now = self.wall()
        ending = self._ends(pods, rfc3339(now), obj)   # nothing is created for a job this pass will finish
        synced = self.children.sync(ctx, pods, services, create=(gang is None or not gang.holds_pods) and not ending)
        desired = functools.partial(self._desired, pods, synced.blocked, rfc3339(now))
        write = self.status.update(obj, desired, extra)
        if write is not None and write.written:
            self._record(ctx, write, synced.blocked)
        result = self._after_write(ctx, write, pods, services, now, extra)
        if synced.error is not None:
            raise synced.error
        if gang is not None and gang.error is not None:
            raise gang.error
        if synced.blocked:
            return _soonest(result, Result.after(self.options.blocked_retry))
        return result

    def _suspend(self, ctx: JobContext, extra: dict[str, Any]) -> Result:
        """A suspended job: its children and PodGroup deleted, its status saying so."""
        replicas = {rtype: ctx.spec.replicas[rtype].replicas for rtype in self.framework.replica_types(ctx.spec)}
        error = suspend.delete_children(ctx, self.children.control, self.children.pool, self.caches.pods(ctx.uid),
                                        self.caches.services(ctx.uid), replicas, timeout=self.options.write_timeout)
        if self.gang is not None:
            try:
                self.gang.release(ctx, finished=False)
            except Exception as e:   # the status is written all the same; the job is retried
                error = error or e
        desired = functools.partial(self._desired, (), (), rfc3339(self.wall()))
        write = self.status.update(ctx.obj, desired, extra)
        if write is not None and write.written:
            self._record(ctx, write, ())
        if error is not None:
            raise error
        return DONE

    # --- status -----------------------------------------------------------------------------------------

    def _desired(self, pods: Sequence[dict[str, Any]], blocked: Sequence[tuple[str, str]], now: str,
                 job: dict[str, Any]) -> dict[str, Any] | None:
        """The status ``job`` (as cached, or as re-read after a conflict) should have; None if it must not be
        written (invalid or finished by now)."""
        spec, _ = self.framework.parse(job)
        kind = self.framework.resource.kind
        old = without_validation_failure(job.get("status"), kind)   # a fixed spec is reconciled afresh
        if spec is None or cond.is_finished(old.get("conditions")):
            return None
        types = self.framework.replica_types(spec)
        if spec.run_policy.suspend:   # its pods go on purpose: their absence is no replica lost (forget_pods)
            return forget_pods(suspend.suspended_status(old, kind=kind, name=spec.name, types=types, now=now,
                                                        render_counts=self.framework.with_replica_counts))
        old = suspend.resumed_status(old, kind=kind, name=spec.name, now=now)
        children = classify(pods, spec.uid, spec.name, {t: spec.replicas[t].replicas for t in types})
        states = {t: replica_state(dict(children.by_type[t].kept), t, spec.replicas[t].restart_policy,
                                   self.framework.default_container) for t in types}
        policy = self._policy(spec, children, old, now)
        plan = policy.plan
        verdict = self.framework.decide(spec, with_lost_replicas(states, plan.vanished))
        return next_status(old, kind=self.framework.resource.kind, name=spec.name,
                           counts={t: state.counts for t, state in states.items()}, verdict=verdict, now=now,
                           render_counts=self.framework.with_replica_counts,
                           blocked=[f'{kind.lower()} "{name}"' for kind, name in blocked],
                           job_failure=policy.job_failure,
                           restarting=restarting_message(kind, spec.name, plan.new_restarts) if plan.restarting else "",
                           fields=plan.status_fields())

    # --- failure policy, finished and invalid jobs (issue 9) ---------------------------------------------

    def _policy(self, spec: JobSpec, children: Children, status: dict[str, Any], now: str) -> PolicyOutcome:
        types = self.framework.replica_types(spec)
        slots = slots_of({t: children.by_type[t].kept for t in types}, {t: spec.replicas[t].replicas for t in types},
                         {t: spec.replicas[t].restart_policy for t in types})
        return evaluate(job_name=spec.name, run_policy=spec.run_policy, slots=slots, status=status,
                        now=parse_time(now) or self.wall(), container=self.framework.default_container)

    def _ends(self, pods: Sequence[dict[str, Any]], now: str, job: dict[str, Any]) -> bool:
        """Whether this pass's status write will finish the job (then no pod is created for it)."""
        status = self._desired(pods, (), now, job)
        return status is not None and cond.is_finished(status.get("conditions"))

    def _after_write(self, ctx: JobContext, write: StatusWrite | None, pods: Sequence[dict[str, Any]],
                     services: Sequence[dict[str, Any]], now: float, extra: dict[str, Any]) -> Result:
        """Act on the status as stored: clean up a job it finished, or carry out the restarts it recorded; then
        a delayed requeue for the next due time."""
        if write is None:
            return DONE   # gone, invalid or finished meanwhile: its own event brings it back
        stored = JobContext(ctx.key, write.job, ctx.spec, self.framework)
        if cond.is_finished(write.after.get("conditions")):
            return self.finished.handle(stored, pods, services, extra)
        types = self.framework.replica_types(ctx.spec)
        children = classify(pods, ctx.uid, ctx.name, {t: ctx.spec.replicas[t].replicas for t in types})
        policy = self._policy(ctx.spec, children, write.after, rfc3339(now))
        error = delete_due(stored, self.children.control, self.children.pool, policy.plan.due,
                           timeout=self.options.write_timeout)
        if error is not None:
            raise error
        wake = policy.wake_at
        return DONE if wake is None else Result.after(max(wake - now, _MIN_REQUEUE))

    def _finished(self, key: str, obj: dict[str, Any], spec: JobSpec, extra: dict[str, Any]) -> Result:
        if not self.expectations.job_satisfied(key):
            log.info("waiting for the cache to show the job's earlier writes", extra=extra)
            return Result.after(max(self.expectations.time_left(key), 0.1))
        ctx = JobContext(key, obj, spec, self.framework)
        return self.finished.handle(ctx, self.caches.pods(ctx.uid), self.caches.services(ctx.uid), extra)

    def _invalid(self, obj: dict[str, Any], extra: dict[str, Any]) -> Result:
        """Record the validation failure in the status (once per distinct set of errors); never retried."""
        kind = self.framework.resource.kind
        name = (obj.get("metadata") or {}).get("name") or ""
        now = rfc3339(self.wall())

        def desired(job: dict[str, Any]) -> dict[str, Any] | None:
            spec, errors = self.framework.parse(job)
            if spec is not None:
                return None   # fixed meanwhile: its update event brings it back
            return invalid_status(job.get("status"), kind=kind, name=name, errors=errors, now=now)

        write = self.status.update(obj, desired, extra)
        if write is None or not write.written:
            return DONE
        before, after = write.before.get("conditions"), write.after.get("conditions")
        self.metrics.transitions((obj.get("metadata") or {}).get("namespace") or "", cond.became_true(before, after))
        message = (cond.find(after, cond.FAILED) or {}).get("message") or ""
        if failed_validation(write.after, kind) and message != (cond.find(before, cond.FAILED) or {}).get("message"):
            ref = ObjectReference.of(write.job, self.framework.resource.api_version, kind)
            self.recorder.event(ref, WARNING, validation_reason(kind), message)
        return DONE

    def _record(self, ctx: JobContext, write: StatusWrite, blocked: Sequence[tuple[str, str]]) -> None:
        """Events and metrics for what the write recorded, judged against the status it was computed from."""
        before, after = write.before.get("conditions"), write.after.get("conditions")
        became = cond.became_true(before, after)
        self.metrics.transitions(ctx.namespace, became)
        ref = ObjectReference.of(write.job, self.framework.resource.api_version, ctx.kind)
        log.info("status written%s", f": now {', '.join(became)}" if became else "", extra=ctx.extra())
        for ctype in became:
            event_type = _TRANSITION_EVENTS.get(ctype)
            if event_type is not None:
                written = cond.find(after, ctype) or {}
                self.recorder.event(ref, event_type, written.get("reason") or f"{ctx.kind}{ctype}",
                                    written.get("message") or "")
        for event_type, reason, message in suspend.transition_events(before, after, ctx.kind):
            self.recorder.event(ref, event_type, reason, message)
        announced = (cond.find(before, cond.CREATED) or {}).get("message") or ""
        for kind, name in blocked:
            if f'{kind.lower()} "{name}"' not in announced:
                self.recorder.event(ref, WARNING, f"FailedCreate{kind}",
                                    f'Error creating: {kind.lower()} "{name}" already exists and is not controlled '
                                    f"by {ctx.kind} {ctx.name}")

    def _log_invalid_once(self, meta: dict[str, Any], errors: Sequence[FieldError], extra: dict[str, Any]) -> None:
        key = (meta.get("uid") or "", meta.get("generation") or 0)
        with self._lock:
            if key in self._invalid_logged:
                return
            self._invalid_logged[key] = True
        log.warning("job is invalid, not reconciled: %s", "; ".join(str(e) for e in errors), extra=extra)


def _soonest(a: Result, b: Result) -> Result:
    """The result that comes back first (a delayed requeue of 0 means none)."""
    delays = [r.requeue_after for r in (a, b) if r.requeue_after > 0]
    return Result.after(min(delays)) if delays else DONE
