"""Reconcile one GenericJob: T9k's job model on the core's child machinery. Level-triggered, from the informer
caches; the work queue guarantees one job is never on two threads at once.

    job gone                  → forget its expectations
    being deleted             → nothing (the garbage collector removes its children)
    (every pass from here)      one ``ExitedWithCode`` event per pod termination not reported yet
    invalid                   → phase Failed, ``InvalidSpec`` with every field error, one Warning event; a fixed
                                spec is reconciled afresh
    expectations unsatisfied  → wait (requeued after their lifetime, so a lost event cannot stall it)
    Succeeded or Failed       → clean up per ``cleanUpPolicy`` (None keeps everything; Unfinished deletes Pending,
                                Running and Unknown pods; All every pod, and the Services of the pods deleted),
                                delete its PodGroup, keep ``tasks``/``aggregate`` current; never recreate a pod
    paused                    → delete every pod (Services stay), phase Paused, ``Paused`` True once none is left
    otherwise                 → its PodGroup (T9k scheduler) first; judge the replicas
                                (``generic/status_rules.py``; not in debug mode), write the status if it changed
                                (``generic/status.py``), then delete the pods whose restart it recorded, and create the
                                missing Services and pods (the core's child sync: adoption, surplus deletion, slow
                                start, expectations)

Restarts are written before they are carried out: a status write records the restart in ``tasks[].restartCount``
and the pod's UID in ``tasks[].restarting``; only then is the pod deleted (and, once the deletion is seen, created
again under the same name by the child sync). A controller stopped in between finds the UID and deletes the pod
without counting it again; the UID leaves the status once the pod is gone.

Events: ``GenericJobRunning``, ``GenericJobSucceeded`` (Normal), ``GenericJobFailed`` (Warning) on those phase
transitions, ``GenericJobRestarting`` (Warning) per restart, ``GenericJobPaused`` / ``GenericJobResumed``; the
core's ``SuccessfulCreatePod``/``SuccessfulDeletePod``/``ExitedWithCode``; ``InvalidSpec`` and
``SchedulerUnavailable`` Warnings once per job generation. Metrics: the core's job counters (``created`` on the
first status write, ``successful``, ``failed``, ``restarted`` per restart) with ``framework="generic"``.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from mxjob_controller.core import job_vocabulary as cond
from mxjob_controller.core.child_sync import classify
from mxjob_controller.core.child_writes import POD, Slice, SlowStartOutcome, WritePool, slow_start
from mxjob_controller.core.framework import Framework, JobContext
from mxjob_controller.core.gang import GangScheduling
from mxjob_controller.core.handlers import JobCaches
from mxjob_controller.core.job_status import StatusWrite
from mxjob_controller.core.metrics import JobMetrics
from mxjob_controller.core.pods import is_deleting
from mxjob_controller.core.reconciler import ParsedJob, ReconcilerBase, ReconcilerOptions
from mxjob_controller.generic import status as gstatus
from mxjob_controller.generic import status_rules as rules
from mxjob_controller.generic.api import GenericJobView
from mxjob_controller.generic.scheduler import T9kPodGroups
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.timefmt import rfc3339
from mxjob_controller.runtime.client import Client
from mxjob_controller.runtime.controller import DONE, Result, after_failed_write, soonest
from mxjob_controller.runtime.events import NORMAL, WARNING, EventRecorder, ObjectReference
from mxjob_controller.runtime.expectations import ControllerExpectations

log = logging.getLogger(__name__)

INVALID_SPEC_EVENT = gstatus.INVALID_SPEC
_PHASE_EVENTS = {gstatus.PHASE_RUNNING: NORMAL, gstatus.PHASE_SUCCEEDED: NORMAL, gstatus.PHASE_FAILED: WARNING,
                 gstatus.PHASE_PAUSED: NORMAL}

Pods = Mapping[str, Mapping[int, dict[str, Any]]]


class GenericJobFramework(Framework, Protocol):
    """What this reconciler needs of its framework (``generic/framework.py``) beyond the core's protocol."""

    scheduler_name: str

    def parse(self, obj: dict[str, Any]) -> tuple[GenericJobView | None, list[FieldError]]: ...


class GenericJobReconciler(ReconcilerBase):
    #: ``--gang-scheduler-name`` does not apply: a GenericJob names its scheduler itself (``spec.scheduler``).
    uses_gang_scheduler = False

    framework: GenericJobFramework

    def __init__(self, framework: GenericJobFramework, client: Client, caches: JobCaches,
                 expectations: ControllerExpectations, recorder: EventRecorder, metrics: JobMetrics, pool: WritePool,
                 options: ReconcilerOptions | None = None, wall: Callable[[], float] = time.time,
                 gang: GangScheduling | None = None, contended: Callable[[], bool] = lambda: True) -> None:
        """The same signature as ``core.reconciler.ReconcilerBase`` (``gang`` is never given: see
        :attr:`uses_gang_scheduler`)."""
        super().__init__(framework, client, caches, expectations, recorder, metrics, pool, options, wall, gang,
                         contended)
        self.podgroups = T9kPodGroups(client, recorder)

    def _sync(self, key: str, parsed: ParsedJob, extra: dict[str, Any]) -> Result:
        obj, spec = parsed.job, parsed.spec
        assert isinstance(spec, GenericJobView)
        spec = self._for_this_pass(spec, gstatus.without_invalid(obj.get("status")))
        ctx = JobContext(key, obj, spec, self.framework)
        pods, services = self.caches.pods(ctx.uid), self.caches.services(ctx.uid)
        if gstatus.is_terminal(gstatus.without_invalid(obj.get("status"))):
            return self._finished(ctx, pods, services, extra)
        if spec.paused:
            return self._pause(ctx, pods, extra)
        if spec.scheduler is not None:
            self.podgroups.ensure(ctx, spec)
        write = self._write_status(ctx, pods, services, extra)
        if write is None:
            return DONE   # gone, or invalid or finished meanwhile: its own event brings it back
        if gstatus.is_terminal(write.after):
            return self._finished(JobContext(key, write.job, spec, self.framework), pods, services, extra)
        within = self._slice(ctx)
        restarted = self._carry_out_restarts(ctx, pods, write.after, within)
        synced = self.children.sync(ctx, pods, services, within=within)
        result = DONE
        for error, done in ((restarted.error, len(restarted.results)), (synced.error, synced.done)):
            if error is not None:
                result = after_failed_write(error, done, self.options.retry_after_progress, extra)
                break
        if synced.blocked:
            result = soonest(result, Result.after(self.options.blocked_retry))
        if synced.deferred or restarted.deferred:
            result = soonest(result, Result.after(self.options.next_slice))
        return result

    # --- one pass's view of the job ---------------------------------------------------------------------

    def _for_this_pass(self, spec: GenericJobView, status: Mapping[str, Any]) -> GenericJobView:
        """The spec with what only the status and the cluster say: resumed after a pause; the T9k scheduler's
        name while its PodGroups are served."""
        resumed = gstatus.find(status.get("conditions"), gstatus.PAUSED) is not None and not spec.paused
        scheduler = self.framework.scheduler_name if spec.scheduler is not None and self.podgroups.served() else ""
        return dataclasses.replace(spec, resumed=resumed, scheduler_name=scheduler)

    def _kept(self, spec: GenericJobView, pods: Sequence[dict[str, Any]]) -> dict[str, dict[int, dict[str, Any]]]:
        children = classify(pods, spec.uid, spec.name, {t: r.replicas for t, r in spec.replicas.items()})
        return {t: dict(children.by_type[t].kept) for t in spec.replicas}

    def _desired(self, ctx: JobContext, pods: Sequence[dict[str, Any]], services_ready: bool, now: str,
                 job: dict[str, Any]) -> dict[str, Any] | None:
        """The status ``job`` (as cached, or re-read after a conflict: parsed afresh) should have; None if it must
        not be written (invalid by now)."""
        spec = ctx.spec
        if job is not ctx.obj:
            fresh, _ = self.framework.parse(job)
            if fresh is None:
                return None
            spec = dataclasses.replace(fresh, resumed=spec.resumed, scheduler_name=spec.scheduler_name)
        old = gstatus.without_invalid(job.get("status"))
        kept = self._kept(spec, pods)
        restarting = gstatus.restarting_of(old)
        judgement = None
        if not (gstatus.is_terminal(old) or spec.paused or spec.debug):
            judgement = rules.judge(spec, kept, gstatus.restart_counts_of(old), restarting)
            restarting |= {(r.pod.get("metadata") or {}).get("uid") or "" for r in judgement.restarts}
        return gstatus.next_status(old, spec, kept, judgement=judgement, restarting=restarting,
                                   services_ready=services_ready, now=now)

    def _services_ready(self, spec: GenericJobView, services: Sequence[dict[str, Any]]) -> bool:
        if spec.service_ports is None:
            return True
        children = classify(services, spec.uid, spec.name, {t: r.replicas for t, r in spec.replicas.items()})
        return not any(children.by_type[t].missing for t in spec.replicas)

    def _write_status(self, ctx: JobContext, pods: Sequence[dict[str, Any]], services: Sequence[dict[str, Any]],
                      extra: dict[str, Any]) -> StatusWrite | None:
        desired = functools.partial(self._desired, ctx, pods, self._services_ready(ctx.spec, services),
                                    rfc3339(self.wall()))
        write = self.status.update(ctx.obj, desired, extra)
        if write is not None and write.written:
            self._record(ctx, write)
        return write

    # --- what a write recorded -------------------------------------------------------------------------

    def _record(self, ctx: JobContext, write: StatusWrite) -> None:
        """Events and metrics for the transition the write recorded (judged against the status it was computed
        from, so a resync never repeats them)."""
        before, after = write.before, write.after
        ref = ObjectReference.of(write.job, self.framework.resource.api_version, ctx.kind)
        became: list[str] = [cond.CREATED] if not before.get("phase") else []
        phase, old_phase = after.get("phase"), before.get("phase")
        if phase != old_phase:
            log.info("phase %s → %s", old_phase or "(none)", phase, extra=ctx.extra())
            if phase == gstatus.PHASE_SUCCEEDED:
                became.append(cond.SUCCEEDED)
            elif phase == gstatus.PHASE_FAILED:
                became.append(cond.FAILED)
            if phase in _PHASE_EVENTS:
                message = self._phase_message(after, phase)
                self.recorder.event(ref, _PHASE_EVENTS[phase], f"{ctx.kind}{phase}", message,
                                    important=phase in gstatus.TERMINAL_PHASES)
            if old_phase == gstatus.PHASE_PAUSED and phase != gstatus.PHASE_PAUSED:
                self.recorder.event(ref, NORMAL, f"{ctx.kind}Resumed", gstatus.RESUMED_MESSAGE)
        new_restarts = _restart_messages(ctx.spec, before, after)
        for message in new_restarts:
            self.recorder.event(ref, WARNING, f"{ctx.kind}Restarting", message, important=True)
        became += [cond.RESTARTING] * len(new_restarts)
        self.metrics.transitions(ctx.namespace, became)

    @staticmethod
    def _phase_message(status: Mapping[str, Any], phase: str) -> str:
        if phase == gstatus.PHASE_PAUSED:
            return gstatus.PAUSED_MESSAGE
        ctype = {gstatus.PHASE_SUCCEEDED: gstatus.COMPLETED, gstatus.PHASE_FAILED: gstatus.FAILED}.get(
            phase, gstatus.RUNNING)
        return (gstatus.find(status.get("conditions"), ctype) or {}).get("message") or f"The job is {phase}."

    # --- actions ---------------------------------------------------------------------------------------

    def _delete_pods(self, ctx: JobContext, pods: Sequence[tuple[str, dict[str, Any]]], why: str,
                     within: Slice) -> SlowStartOutcome:
        tasks = [functools.partial(self.children.control.delete, ctx, POD, pod, rtype, ctx.extra(rtype), why)
                 for rtype, pod in pods if not is_deleting(pod)]
        if not tasks:
            return SlowStartOutcome()
        return slow_start(tasks, self.children.pool, timeout=self.options.write_timeout, initial_batch=len(tasks),
                          within=within)

    def _carry_out_restarts(self, ctx: JobContext, pods: Sequence[dict[str, Any]], status: Mapping[str, Any],
                            within: Slice) -> SlowStartOutcome:
        """Delete the pods the stored status records as restarting (their replacements come from the child
        sync, once the deletions are seen)."""
        restarting = gstatus.restarting_of(status)
        if not restarting:
            return SlowStartOutcome()
        doomed = [(rtype, pod) for rtype, by_rank in self._kept(ctx.spec, pods).items() for pod in by_rank.values()
                  if (pod.get("metadata") or {}).get("uid") in restarting]
        return self._delete_pods(ctx, doomed, "restart", within)

    def _pause(self, ctx: JobContext, pods: Sequence[dict[str, Any]], extra: dict[str, Any]) -> Result:
        """Delete every pod of the job (its Services stay, for the resume), then say so in the status."""
        doomed = [(rtype, pod) for rtype, by_rank in self._kept(ctx.spec, pods).items() for pod in by_rank.values()]
        deleted = self._delete_pods(ctx, doomed, "the job is paused", self._slice(ctx))
        self._write_status(ctx, pods, (), extra)
        if deleted.error is not None:
            return after_failed_write(deleted.error, len(deleted.results), self.options.retry_after_progress, extra)
        return Result.after(self.options.next_slice) if deleted.deferred else DONE

    def _finished(self, ctx: JobContext, pods: Sequence[dict[str, Any]], services: Sequence[dict[str, Any]],
                  extra: dict[str, Any]) -> Result:
        """A finished job: its PodGroup released, its pods cleaned up as ``cleanUpPolicy`` says, its ``tasks`` and
        ``aggregate`` kept current (a cleaned-up pod shows as deleted). A pass that wrote and deleted nothing settles
        the job (``core.finished_jobs.SettledJobs``): its resyncs are then a dict lookup, as MXJob's are."""
        if ctx.spec.scheduler is not None:
            self.podgroups.release(ctx)
        write = self._write_status(ctx, pods, services, extra)
        cleaned = self.finished.clean(ctx, pods, services, self._slice(ctx))
        if cleaned.error is not None:
            return after_failed_write(cleaned.error, len(cleaned.results), self.options.retry_after_progress, extra)
        if cleaned.deferred:
            return Result.after(self.options.next_slice)
        if write is not None and not write.written and not cleaned.attempted:
            self.finished.settled.settle(ctx.key, (write.job.get("metadata") or {}).get("resourceVersion") or "")
        return DONE

    def _invalid(self, parsed: ParsedJob, extra: dict[str, Any]) -> Result:
        """Record the invalid spec in the status (once per distinct set of errors), one Warning per generation;
        never retried (a fixed spec comes back through its update event)."""
        obj, errors = parsed.job, parsed.errors
        meta = obj.get("metadata") or {}
        now = rfc3339(self.wall())
        if self._invalid_logged.first(meta.get("uid") or "", meta.get("generation") or 0):
            message = gstatus.invalid_message(errors)
            log.warning("job is invalid, not reconciled: %s", message, extra=extra)
            ref = ObjectReference.of(obj, self.framework.resource.api_version, self.framework.resource.kind)
            self.recorder.event(ref, WARNING, INVALID_SPEC_EVENT, message, important=True)

        def desired(job: dict[str, Any]) -> dict[str, Any] | None:
            fresh, fresh_errors = self.framework.parse(job)
            if fresh is not None:
                return None   # fixed meanwhile: its update event brings it back
            status = job.get("status")
            if gstatus.is_terminal(status) and not gstatus.is_invalid(status):
                return None   # it finished on a valid spec: a later edit changes nothing of that (nor reruns it)
            return gstatus.invalid_status(status, fresh_errors, now)

        write = self.status.update(obj, desired, extra)
        if write is not None and write.written and write.before.get("phase") != gstatus.PHASE_FAILED:
            self.metrics.transitions(meta.get("namespace") or "", [cond.FAILED])
        return DONE


def _restart_messages(spec: GenericJobView, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """One message per restart ``after`` records and ``before`` did not: ``Restarting pod <pod>: it exited with
    code 3 (restart 1 of 2 for worker)``."""
    old = gstatus.restarting_of(before)
    messages = []
    for task in after.get("tasks") or ():
        uids = set(task.get("restarting") or ()) - old
        new = [r for r in task.get("replicas") or () if r.get("uid") in uids]
        replica_spec = spec.replicas.get(task.get("type") or "")
        limit = replica_spec.limit if replica_spec is not None else "?"
        first = int(task.get("restartCount") or 0) - len(new) + 1
        for n, replica in enumerate(new, start=first):
            codes = [c["exitCode"] for c in replica.get("containers") or () if c.get("exitCode") not in (None, 0)]
            why = f"it exited with code {codes[0]}" if codes else \
                "it succeeded" if replica.get("phase") == gstatus.PHASE_SUCCEEDED else f"it is {replica.get('phase')}"
            messages.append(f"Restarting pod {replica['name']}: {why} (restart {n} of {limit} for {task['type']})")
    return messages
