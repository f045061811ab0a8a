"""Reconcile one job: level-triggered, from the informer caches; the work queue guarantees one job is never on two
threads at once.

    job gone                  → forget its expectations
    being deleted             → nothing (the garbage collector removes its children)
    invalid                   → nothing yet, logged once per generation (never a crash, never a retry loop)
    Succeeded or Failed       → nothing
    expectations unsatisfied  → wait; requeued after the expectations' lifetime, so a lost event cannot stall it
    otherwise                 → sync the children (adopt, delete surplus, create services then pods), compute the
                                status, write it if it changed, then record the transitions it wrote: events
                                (``<Kind>Running`` / ``Succeeded`` / ``Failed``), job metrics, and one Warning per
                                name held by an object the job does not control.

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
from mxjob_controller.core.caches import JobCaches
from mxjob_controller.core.child_control import ChildControl
from mxjob_controller.core.child_sync import ChildSync
from mxjob_controller.core.children import classify
from mxjob_controller.core.framework import Framework
from mxjob_controller.core.job_context import JobContext
from mxjob_controller.core.job_status import next_status
from mxjob_controller.core.metrics import JobMetrics
from mxjob_controller.core.pod_status import replica_state
from mxjob_controller.core.status_writer import StatusWrite, StatusWriter
from mxjob_controller.core.write_pool import WritePool
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.timefmt import rfc3339
from mxjob_controller.runtime.client import Client
from mxjob_controller.runtime.controller import DONE, Result
from mxjob_controller.runtime.events import NORMAL, WARNING, EventRecorder, ObjectReference
from mxjob_controller.runtime.expectations import ControllerExpectations

log = logging.getLogger(__name__)

_TRANSITION_EVENTS = {cond.RUNNING: NORMAL, cond.SUCCEEDED: NORMAL, cond.FAILED: WARNING}


@dataclass(frozen=True, slots=True)
class ReconcilerOptions:
    blocked_retry: float = 30.0    # seconds before re-checking a name held by an object the job does not control
    status_attempts: int = 5       # status writes tried (re-reading the job after each conflict)
    write_timeout: float = 120.0   # longest wait for one batch of child writes


class JobReconciler:
    def __init__(self, framework: Framework, client: Client, caches: JobCaches, expectations: ControllerExpectations,
                 recorder: EventRecorder, metrics: JobMetrics, pool: WritePool,
                 options: ReconcilerOptions | None = None, wall: Callable[[], float] = time.time) -> None:
        self.framework = framework
        self.caches = caches
        self.expectations = expectations
        self.recorder = recorder
        self.metrics = metrics
        self.options = options or ReconcilerOptions()
        self.wall = wall
        self.children = ChildSync(framework, ChildControl(client, recorder, expectations), pool, recorder,
                                  write_timeout=self.options.write_timeout)
        self.status = StatusWriter(client, framework.resource, self.options.status_attempts)
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
        if meta.get("deletionTimestamp"):
            log.debug("job is being deleted: nothing to do", extra=extra)
            return DONE
        spec, errors = self.framework.parse(obj)
        if spec is None:
            self._log_invalid_once(meta, errors, extra)
            return DONE
        if cond.is_finished((obj.get("status") or {}).get("conditions")):
            log.debug("job has finished: nothing to do", extra=extra)
            return DONE
        if not self.expectations.job_satisfied(key):
            log.info("waiting for the cache to show the job's earlier writes", extra=extra)
            # Events mark expectations observed and requeue the job; this is the safety net for a lost one.
            return Result.after(max(self.expectations.time_left(key), 0.1))
        ctx = JobContext(key, obj, spec, self.framework)
        pods = self.caches.pods(ctx.uid)
        synced = self.children.sync(ctx, pods, self.caches.services(ctx.uid))
        desired = functools.partial(self._desired, pods, synced.blocked, rfc3339(self.wall()))
        write = self.status.update(obj, desired, extra)
        if write is not None and write.written:
            self._record(ctx, write, synced.blocked)
        if synced.error is not None:
            raise synced.error
        if synced.blocked:
            return Result.after(self.options.blocked_retry)
        return DONE

    # --- status -----------------------------------------------------------------------------------------

    def _desired(self, pods: Sequence[dict[str, Any]], blocked: Sequence[tuple[str, str]], now: str,
                 job: dict[str, Any]) -> dict[str, Any] | None:
        """The status ``job`` (as cached, or as re-read after a conflict) should have; None if it must not be
        written (invalid or finished by now)."""
        spec, _ = self.framework.parse(job)
        old = job.get("status") or {}
        if spec is None or cond.is_finished(old.get("conditions")):
            return None
        types = self.framework.replica_types(spec)
        children = classify(pods, spec.uid, spec.name, {t: spec.replicas[t].replicas for t in types})
        states = {t: replica_state(dict(children.by_type[t].kept), t, spec.replicas[t].restart_policy,
                                   self.framework.default_container) for t in types}
        verdict = self.framework.decide(spec, states)
        return next_status(old, kind=self.framework.resource.kind, name=spec.name,
                           counts={t: state.counts for t, state in states.items()}, verdict=verdict, now=now,
                           render_counts=self.framework.with_replica_counts,
                           blocked=[f'{kind.lower()} "{name}"' for kind, name in blocked])

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
                message = (cond.find(after, ctype) or {}).get("message") or ""
                self.recorder.event(ref, event_type, f"{ctx.kind}{ctype}", message)
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
