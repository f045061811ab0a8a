"""Reconcile one job (Kubeflow's model; :class:`ReconcilerBase` holds the prologue GenericJob's reconciler
shares): level-triggered, from the informer caches; the work queue guarantees one job is never on two
threads at once.

    job gone                  → forget its expectations
    managed by another        → nothing at all: no write of any kind (``runPolicy.managedBy``, core/framework.py)
    being deleted             → nothing (the garbage collector removes its children)
    (from here on, every pass)  one ``ExitedWithCode`` event per pod termination not reported yet
                                (core/job_status.py)
    invalid                   → ``Failed`` (``<Kind>FailedValidation``, every field error), one Warning event, no
                                pods, no retry; a fixed spec undoes it (core/job_status.py)
    Succeeded or Failed       → clean up per ``cleanPodPolicy``, then ``ttlSecondsAfterFinished`` deletes the job
                                (core/finished_jobs.py); with gang scheduling its PodGroup is deleted, once (a
                                failed delete is retried with back-off, and does not hold the cleanup back);
                                once nothing is left to do it is settled: its resyncs reconcile nothing
    expectations unsatisfied  → wait; requeued after the expectations' lifetime, so a lost event cannot stall it
    suspended                 → delete its pods, services and PodGroup; status ``Suspended`` (core/suspend.py)
    gang scheduling           → create or update its PodGroup first; no pod before the scheduler admits the gang
    otherwise                 → sync the children (adopt, delete surplus, create services then pods), compute the
                                status, write it if it changed, then record the transitions it wrote: events
                                (``<Kind>Running`` / ``Succeeded`` / ``Failed``), job metrics, and one Warning per
                                name held by an object the job does not control. The failure policy
                                (core/failure_policy.py: restarts, backoffLimit, activeDeadlineSeconds) is part of
                                that status; after the write, the restarts it recorded are carried out
                                (core/child_writes.py), a job it finished is cleaned up at once, and the next due
                                time (a restart, an Unknown pod's timeout, the deadline) is a delayed requeue.

A failed write re-raises after the status is written, so the controller requeues the job with back-off; a blocked
name requeues it after ``blocked_retry`` seconds (the object holding the name is not watched).

Hot path: a pass parses its job once (:class:`ParsedJob`; again only for a job re-read after a write conflict) and
decides once, as kube's ``syncJob``: children classified, failure policy evaluated, status computed, in one
:class:`Decision` (the status that decides whether to create pods is the one written, unless a name was blocked
meanwhile). After a write that stored what it computed, the restarts and the next due time come from that decision
(the evaluation on the stored status would be a fixed point: core/failure_policy.py); only a write that stored
something else is evaluated again. The failure policy judges with the exact time, the status stores whole seconds.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core import job_vocabulary as cond
from mxjob_controller.core import suspend
from mxjob_controller.core.cancellation import Cancellations
from mxjob_controller.core.child_sync import Children, ChildSync, classify
from mxjob_controller.core.child_writes import (
    ChildControl,
    Slice,
    WritePool,
    delete_due,
)
from mxjob_controller.core.failure_policy import (
    PolicyOutcome,
    evaluate,
    forget_pods,
    slots_of,
    with_lost_replicas,
)
from mxjob_controller.core.finished_jobs import FinishedJobs
from mxjob_controller.core.framework import (
    Framework,
    JobContext,
    JobSpec,
    KubeflowFramework,
    OncePerGeneration,
    managed_elsewhere,
)
from mxjob_controller.core.gang import GangScheduling
from mxjob_controller.core.handlers import JobCaches
from mxjob_controller.core.job_status import (
    ExitReports,
    StatusWrite,
    StatusWriter,
    failed_validation,
    invalid_status,
    names_blocked,
    next_status,
    restarting_message,
    transition_event,
    validation_reason,
    without_validation_failure,
)
from mxjob_controller.core.metrics import JobMetrics
from mxjob_controller.core.pods import replica_state
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.timefmt import rfc3339
from mxjob_controller.runtime.client import Client
from mxjob_controller.runtime.controller import DONE, Result, after_failed_write, requeue_in, soonest
from mxjob_controller.runtime.events import WARNING, EventRecorder, ObjectReference
from mxjob_controller.runtime.expectations import ControllerExpectations

# --- reconciler --------------------------------------------------------------------------------------------------

log = logging.getLogger(__name__)


class ParsedJob:
    """The parsed spec of the job a status is computed from. One reconcile parses its cached job once; a job
    re-read after a write conflict (a new object, whose spec may have changed) is parsed afresh.

    Used by one reconcile, on one thread."""

    __slots__ = ("errors", "framework", "job", "spec")

    def __init__(self, framework: Framework, job: dict[str, Any]) -> None:
        self.framework = framework
        self.job = job
        self.spec, self.errors = framework.parse(job)

    def of(self, job: dict[str, Any]) -> JobSpec | None:
        """The spec of ``job``, parsed only if it is not the object parsed last."""
        if job is not self.job:
            self.job = job
            self.spec, self.errors = self.framework.parse(job)
        return self.spec


@dataclass(frozen=True, slots=True)
class Decision:
    """A pass's decision: the job's status, and the failure policy it records (None: a suspended job's)."""

    status: dict[str, Any]
    policy: PolicyOutcome | None = None


class Decisions:
    """A status write's ``desired``: the decision for each job it is asked about (as cached, or re-read after a
    conflict; the one made for ``known`` reused), the last one kept to act on after the write. One reconcile's."""

    __slots__ = ("_decide", "_known", "last")

    def __init__(self, decide: Callable[[dict[str, Any]], Decision | None],
                 known: tuple[dict[str, Any], Decision | None] | None = None) -> None:
        self._decide = decide
        self._known = known
        self.last: Decision | None = None

    def __call__(self, job: dict[str, Any]) -> dict[str, Any] | None:
        known = self._known
        decision = known[1] if known is not None and job is known[0] else self._decide(job)
        self.last = decision
        return None if decision is None else decision.status

    def policy_stored(self, write: StatusWrite) -> PolicyOutcome | None:
        """The failure policy of the status ``write`` stored if it is the one last decided, else None."""
        last = self.last
        return last.policy if last is not None and write.after == last.status else None


@dataclass(frozen=True, slots=True)
class ReconcilerOptions:
    blocked_retry: float = 30.0    # seconds before re-checking a name held by an object the job does not control
    status_attempts: int = 5       # status writes tried (re-reading the job after each conflict)
    write_timeout: float = 120.0   # longest wait for one batch of child writes
    # One pass's child writes (core/child_writes.py): at most slice_writes, in batches of at most slice_batch, none
    # started after slice_seconds; the rest wait for the next pass, next_slice seconds later at the latest, so a
    # large job is created in steps while other jobs get their turn (kube's ReplicaSet: 500 per sync).
    slice_writes: int = 500
    slice_seconds: float = 1.0
    slice_batch: int = 32
    next_slice: float = 0.05
    retry_after_progress: float = 0.5   # the next pass after one that failed a write but did others


def current_job(key: str, caches: JobCaches, expectations: ControllerExpectations,
                status: StatusWriter) -> dict[str, Any] | None:
    """The job to reconcile: as cached, or as our last status write stored it while the cache does not show that
    write yet; None when it is gone (its expectations and remembered writes are then forgotten)."""
    obj = caches.job(key)
    if obj is None:
        expectations.delete_expectations(key)
        status.forget(key)
        log.info("job is gone: its expectations are forgotten", extra={"key": key})
        return None
    return status.freshest(key, obj)


def pass_slice(caches: JobCaches, ctx: JobContext, options: ReconcilerOptions, contended: Callable[[], bool],
               cancel: threading.Event | None = None) -> Slice:
    """One pass's share of the child writes; stopped as soon as the job is deleted or replaced: by ``cancel`` (the
    pass's event, which the job informer's handler sets: core/cancellation.py) or by the cache, whichever says so
    first (the cache also sets the event, so writes waiting in the client stop too)."""
    event = cancel if cancel is not None else threading.Event()

    def cancelled() -> bool:
        if event.is_set():
            return True
        current = caches.job(ctx.key)
        meta = (current or {}).get("metadata") or {}
        if current is None or meta.get("uid") != ctx.uid or meta.get("deletionTimestamp"):
            event.set()
            return True
        return False

    return Slice(writes=options.slice_writes, seconds=options.slice_seconds, max_batch=options.slice_batch,
                 cancelled=cancelled, contended=contended, cancel=event)


class ReconcilerBase:
    """What every reconcile loop of the core does before its job model takes over, in this order: the current job
    (gone: its expectations forgotten), left alone while being deleted, one ``ExitedWithCode`` event per new pod
    termination, the spec parsed (invalid: :meth:`_invalid`), and the expectations waited for. A subclass brings
    the job model: :meth:`_sync`, and what may not wait for expectations (:meth:`_without_expectations`).

    Constructed as :class:`~mxjob_controller.core.job_controller.JobController` constructs any reconciler.
    """

    #: Whether ``--gang-scheduler-name`` (Volcano, scheduler-plugins) applies to this reconciler's jobs.
    uses_gang_scheduler = True

    def __init__(self, framework: Framework, client: Client, caches: JobCaches,
                 expectations: ControllerExpectations,
                 recorder: EventRecorder, metrics: JobMetrics, pool: WritePool,
                 options: ReconcilerOptions | None = None, wall: Callable[[], float] = time.time,
                 gang: GangScheduling | None = None, contended: Callable[[], bool] = lambda: True) -> None:
        """``contended``: whether other jobs wait for a worker (the controller: keys ready in its queue); a pass
        yields after its slice of writes only then."""
        self.framework = framework
        self.contended = contended
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
        self.exits = ExitReports(recorder, framework.default_container)
        self._invalid_logged = OncePerGeneration()
        # The cancel events of the passes under way, which the job informer's handler sets on a deletion.
        self.cancellations = Cancellations()

    def __call__(self, key: Hashable) -> Result:
        return self.reconcile(str(key))

    def reconcile(self, key: str) -> Result:
        try:
            return self._reconcile(key)
        finally:
            self.cancellations.release(key)

    def _reconcile(self, key: str) -> Result:
        self.finished.settled.unsettle(key)   # judged afresh: this pass settles it again if nothing is left to do
        obj = current_job(key, self.caches, self.expectations, self.status)
        if obj is None:
            self.exits.forget(key)
            return DONE
        meta = obj.get("metadata") or {}
        extra = {"key": key, "job_namespace": meta.get("namespace"), "job_name": meta.get("name"),
                 "job_uid": meta.get("uid")}
        if self._left_alone(obj, extra):
            return DONE
        self.exits.report(key, ObjectReference.of(obj, self.framework.resource.api_version,
                                                  self.framework.resource.kind),
                          self.caches.pods(meta.get("uid") or ""))
        parsed = ParsedJob(self.framework, obj)
        if parsed.spec is None:
            return self._invalid(parsed, extra)
        early = self._without_expectations(key, parsed, extra)
        if early is not None:
            return early
        if not self.expectations.job_satisfied(key):
            log.info("waiting for the cache to show the job's earlier writes", extra=extra)
            # Events mark expectations observed and requeue the job; this is the safety net for a lost one.
            return Result.after(max(self.expectations.time_left(key), 0.1))
        return self._sync(key, parsed, extra)

    def _left_alone(self, obj: dict[str, Any], extra: dict[str, Any]) -> bool:
        """Whether this job is not to be reconciled at all: it is being deleted (the garbage collector removes its
        children)."""
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            log.debug("job is being deleted: nothing to do", extra=extra)
            return True
        return False

    def _without_expectations(self, key: str, parsed: ParsedJob, extra: dict[str, Any]) -> Result | None:
        """The pass of a valid job that must not wait for its expectations; None (the default): wait."""
        return None

    def _invalid(self, parsed: ParsedJob, extra: dict[str, Any]) -> Result:
        """Record that the job's spec is invalid (``parsed.errors``)."""
        raise NotImplementedError

    def _sync(self, key: str, parsed: ParsedJob, extra: dict[str, Any]) -> Result:
        """One pass over a valid job whose expectations are satisfied."""
        raise NotImplementedError

    def _slice(self, ctx: JobContext) -> Slice:
        return pass_slice(self.caches, ctx, self.options, self.contended, self.cancellations.event(ctx.key, ctx.uid))


class JobReconciler(ReconcilerBase):
    """Kubeflow's job model (the table at the top of this module)."""

    framework: KubeflowFramework

    def _left_alone(self, obj: dict[str, Any], extra: dict[str, Any]) -> bool:
        manager = managed_elsewhere(obj, self.framework.managers)
        if manager is not None:
            log.debug("job is managed by %s: left alone", manager, extra=extra)
            return True
        return super()._left_alone(obj, extra)

    def _without_expectations(self, key: str, parsed: ParsedJob, extra: dict[str, Any]) -> Result | None:
        """A finished job (not one failed by validation, which a fixed spec reopens) is cleaned up at once."""
        obj, spec = parsed.job, parsed.spec
        status = obj.get("status") or {}
        if spec is not None and cond.is_finished(status.get("conditions")) \
                and not failed_validation(status, self.framework.resource.kind):
            return self._finished(JobContext(key, obj, spec, self.framework), extra)
        return None

    def _sync(self, key: str, parsed: ParsedJob, extra: dict[str, Any]) -> Result:
        obj, spec = parsed.job, parsed.spec
        assert spec is not None
        ctx = JobContext(key, obj, spec, self.framework)
        if spec.run_policy.suspend:
            return self._suspend(ctx, parsed, extra)
        gang = self.gang.sync(ctx) if self.gang is not None else None
        pods, services = self.caches.pods(ctx.uid), self.caches.services(ctx.uid)
        now = self.wall()
        decisions = Decisions(functools.partial(self._decide, parsed, pods, None, now),   # None: blocked names stay
                              known=(obj, self._decide(parsed, pods, None, now, obj)))   # decided once, here
        # The status goes first: a new job shows Created at once, and a large one its counts after every slice.
        write = self.status.update(obj, decisions, extra)
        if write is not None and write.written:
            self._record(ctx, write, ())
        ending = write is None or cond.is_finished(write.after.get("conditions"))   # then nothing is created
        synced = self.children.sync(ctx, pods, services, create=(gang is None or not gang.holds_pods) and not ending,
                                    within=self._slice(ctx))
        if write is not None and (synced.blocked or names_blocked(write.after)):   # the Created message names them
            blocked = Decisions(functools.partial(self._decide, parsed, pods, synced.blocked, now))
            blocked_write = self.status.update(write.job, blocked, extra)
            if blocked_write is not None:
                if blocked_write.written:
                    self._record(ctx, blocked_write, synced.blocked)
                write, decisions = blocked_write, blocked
        policy = decisions.policy_stored(write) if write is not None else None
        result = self._after_write(ctx, parsed, write, pods, services, now, extra, policy)
        if synced.error is not None:
            result = soonest(result, after_failed_write(synced.error, synced.done, self.options.retry_after_progress,
                                                         extra))
        if gang is not None and gang.error is not None:
            raise gang.error
        if synced.blocked:
            result = soonest(result, Result.after(self.options.blocked_retry))
        if synced.deferred:
            log.info("%d child writes left for the next pass", synced.deferred, extra=extra)
            result = soonest(result, Result.after(self.options.next_slice))
        return result

    def _suspend(self, ctx: JobContext, parsed: ParsedJob, extra: dict[str, Any]) -> Result:
        """A suspended job: its children and PodGroup deleted, its status saying so."""
        replicas = {rtype: ctx.spec.replicas[rtype].replicas for rtype in self.framework.replica_types(ctx.spec)}
        deleted = suspend.delete_children(ctx, self.children.control, self.children.pool, self.caches.pods(ctx.uid),
                                          self.caches.services(ctx.uid), replicas,
                                          timeout=self.options.write_timeout, within=self._slice(ctx))
        error = deleted.error
        if self.gang is not None:
            try:
                self.gang.release(ctx, finished=False)
            except Exception as e:   # the status is written all the same; the job is retried
                error = error or e
        write = self.status.update(ctx.obj, Decisions(functools.partial(self._decide, parsed, (), (), self.wall())),
                                   extra)
        if write is not None and write.written:
            self._record(ctx, write, ())
        if error is not None and error is deleted.error:
            return after_failed_write(error, len(deleted.results), self.options.retry_after_progress, extra)
        if error is not None:
            raise error
        return Result.after(self.options.next_slice) if deleted.deferred else DONE

    # --- status ---------------------------------------------------------------------------------------------------

    def _decide(self, parsed: ParsedJob, pods: Sequence[dict[str, Any]],
                blocked: Sequence[tuple[str, str]] | None, at: float, job: dict[str, Any]) -> Decision | None:
        """The status ``job`` (as cached, or as re-read after a conflict) should have at ``at`` (Unix time), with
        the failure policy it records; None if it must not be written (invalid or finished by now). ``blocked``
        None: keep the names the ``Created`` message gives."""
        spec = parsed.of(job)
        now = rfc3339(at)   # what the status says; the failure policy judges with the exact time
        kind = self.framework.resource.kind
        old = without_validation_failure(job.get("status"), kind)   # a fixed spec is reconciled afresh
        if spec is None or cond.is_finished(old.get("conditions")):
            return None
        types = self.framework.replica_types(spec)
        if spec.run_policy.suspend:   # its pods go on purpose: their absence is no replica lost (forget_pods)
            return Decision(forget_pods(suspend.suspended_status(old, kind=kind, name=spec.name, types=types, now=now,
                                                                 counts=self.framework.replica_counts(old),
                                                                 render_counts=self.framework.with_replica_counts)))
        old = suspend.resumed_status(old, kind=kind, name=spec.name, now=now)
        children = classify(pods, spec.uid, spec.name, {t: spec.replicas[t].replicas for t in types})
        states = {t: replica_state(dict(children.by_type[t].kept), t, spec.replicas[t].restart_policy,
                                   self.framework.default_container) for t in types}
        policy = self._policy(spec, children, old, at)
        plan = policy.plan
        verdict = self.framework.decide(spec, with_lost_replicas(states, plan.vanished))
        status = next_status(old, kind=self.framework.resource.kind, name=spec.name,
                             counts={t: state.counts for t, state in states.items()}, verdict=verdict, now=now,
                             render_counts=self.framework.with_replica_counts,
                             blocked=None if blocked is None else [f'{kind.lower()} "{name}"'
                                                                   for kind, name in blocked],
                             job_failure=policy.job_failure,
                             restarting=restarting_message(kind, spec.name, plan.new_restarts) if plan.restarting
                             else "",
                             fields=plan.status_fields())
        return Decision(status, policy)

    # --- failure policy, finished and invalid jobs (issue 9) ------------------------------------------------------

    def _policy(self, spec: JobSpec, children: Children, status: dict[str, Any], now: float) -> PolicyOutcome:
        types = self.framework.replica_types(spec)
        slots = slots_of({t: children.by_type[t].kept for t in types}, {t: spec.replicas[t].replicas for t in types},
                         {t: spec.replicas[t].restart_policy for t in types})
        return evaluate(job_name=spec.name, run_policy=spec.run_policy, slots=slots, status=status, now=now,
                        container=self.framework.default_container)

    def _after_write(self, ctx: JobContext, parsed: ParsedJob, write: StatusWrite | None,
                     pods: Sequence[dict[str, Any]], services: Sequence[dict[str, Any]], now: float,
                     extra: dict[str, Any], policy: PolicyOutcome | None = None) -> Result:
        """Act on the status as stored (``policy``: its failure policy if the pass decided it, None: evaluated here):
        clean up a job it finished, or carry out the restarts it recorded; then a delayed requeue for the next due."""
        spec = parsed.spec   # of the job the write was computed from (re-read after a conflict, maybe)
        if write is None or spec is None:
            return DONE   # gone, invalid or finished meanwhile: its own event brings it back
        stored = JobContext(ctx.key, write.job, spec, self.framework)
        if cond.is_finished(write.after.get("conditions")):
            return self.finished.handle(stored, pods, services, extra, self._slice(stored), self.options.next_slice,
                                        self.options.retry_after_progress)
        if policy is None:
            types = self.framework.replica_types(spec)
            children = classify(pods, spec.uid, spec.name, {t: spec.replicas[t].replicas for t in types})
            policy = self._policy(spec, children, write.after, now)
        error = delete_due(stored, self.children.control, self.children.pool, policy.plan.due,
                           timeout=self.options.write_timeout).error
        if error is not None:
            raise error
        wake = policy.wake_at
        return DONE if wake is None else requeue_in(wake - now)

    def _finished(self, ctx: JobContext, extra: dict[str, Any]) -> Result:
        """A finished job: its PodGroup released, its children cleaned up, its TTL applied. A PodGroup that cannot
        be deleted does not hold the cleanup back: the error is raised after it (a retry with back-off). Its
        terminal event is recorded if a previous process may have left it unwritten (``FinishedJobs.announce``)."""
        self.finished.announce(ctx)
        release_error: Exception | None = None
        if self.gang is not None:
            try:
                self.gang.release(ctx, finished=True)
            except Exception as e:   # logged and reported as an event by release()
                release_error = e
        if not self.expectations.job_satisfied(ctx.key):
            log.info("waiting for the cache to show the job's earlier writes", extra=extra)
            return Result.after(max(self.expectations.time_left(ctx.key), 0.1))
        result = self.finished.handle(ctx, self.caches.pods(ctx.uid), self.caches.services(ctx.uid), extra,
                                      self._slice(ctx), self.options.next_slice, self.options.retry_after_progress)
        if release_error is not None:
            self.finished.settled.unsettle(ctx.key)   # the PodGroup is still to delete: resyncs retry it too
            raise release_error
        return result

    def _invalid(self, parsed: ParsedJob, extra: dict[str, Any]) -> Result:
        """Record the validation failure in the status (once per distinct set of errors); never retried."""
        obj = parsed.job
        self._log_invalid_once(obj.get("metadata") or {}, parsed.errors, extra)
        kind = self.framework.resource.kind
        name = (obj.get("metadata") or {}).get("name") or ""
        now = rfc3339(self.wall())

        def desired(job: dict[str, Any]) -> dict[str, Any] | None:
            if parsed.of(job) is not None:
                return None   # fixed meanwhile: its update event brings it back
            return invalid_status(job.get("status"), kind=kind, name=name, errors=parsed.errors, now=now)

        write = self.status.update(obj, desired, extra)
        if write is None or not write.written:
            return DONE
        before, after = write.before.get("conditions"), write.after.get("conditions")
        self.metrics.transitions((obj.get("metadata") or {}).get("namespace") or "", cond.became_true(before, after))
        message = (cond.find(after, cond.FAILED) or {}).get("message") or ""
        if failed_validation(write.after, kind) and message != (cond.find(before, cond.FAILED) or {}).get("message"):
            ref = ObjectReference.of(write.job, self.framework.resource.api_version, kind)
            self.recorder.event(ref, WARNING, validation_reason(kind), message, important=True)
        return DONE

    def _record(self, ctx: JobContext, write: StatusWrite, blocked: Sequence[tuple[str, str]]) -> None:
        """Events and metrics for what the write recorded, judged against the status it was computed from."""
        before, after = write.before.get("conditions"), write.after.get("conditions")
        became = cond.became_true(before, after)
        self.metrics.transitions(ctx.namespace, became)
        ref = ObjectReference.of(write.job, self.framework.resource.api_version, ctx.kind)
        log.info("status written%s", f": now {', '.join(became)}" if became else "", extra=ctx.extra())
        for ctype in became:
            announce = transition_event(ctx.kind, ctype, after)   # Succeeded/Failed/Restarting: important
            if announce is not None:
                self.recorder.event(ref, announce.event_type, announce.reason, announce.message,
                                    important=announce.important)
        for event_type, reason, message in suspend.transition_events(before, after, ctx.kind):
            self.recorder.event(ref, event_type, reason, message)
        announced = (cond.find(before, cond.CREATED) or {}).get("message") or ""
        for kind, name in blocked:
            if f'{kind.lower()} "{name}"' not in announced:
                self.recorder.event(ref, WARNING, f"FailedCreate{kind}",
                                    f'Error creating: {kind.lower()} "{name}" already exists and is not controlled '
                                    f"by {ctx.kind} {ctx.name}")

    def _log_invalid_once(self, meta: dict[str, Any], errors: Sequence[FieldError], extra: dict[str, Any]) -> None:
        if not self._invalid_logged.first(meta.get("uid") or "", meta.get("generation") or 0):
            return
        log.warning("job is invalid, not reconciled: %s", "; ".join(str(e) for e in errors), extra=extra)
