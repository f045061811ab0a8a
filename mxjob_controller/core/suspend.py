"""Suspending and resuming a job (``runPolicy.suspend``), as queueing systems such as Kueue use it.

While ``suspend`` is true a job has no pods, no services and no PodGroup; its status says so:

- ``Suspended`` True (``<Kind>Suspended``, "<Kind> <name> is suspended."), ``Running`` False with the same
  reason if it was True, every ``active`` count 0 (succeeded and failed counts are kept); the first write of a job
  suspended at creation also carries ``Created``, but no ``startTime``: the job has not started.
- Resuming: ``Suspended`` False (``<Kind>Resumed``, "<Kind> <name> is resumed.") and ``startTime`` set to now, in
  the write that follows the resume, so ``activeDeadlineSeconds`` counts from the resume; then the pods are
  created again as for a new job.

Events (one per transition, judged from the status a write was computed from and the one it stored, so a resync
never repeats them; training-operator re-emitted ``Suspended`` on every reconcile): ``<Kind>Suspended`` and
``<Kind>Resumed``, both Normal.

The status functions are pure; :func:`delete_children` performs the deletions through ``ChildControl`` (each
guarded by expectations and reported as ``SuccessfulDelete<Kind>``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mxjob_controller.core import job_vocabulary as cond
from mxjob_controller.core.child_sync import classify
from mxjob_controller.core.child_writes import (
    POD,
    SERVICE,
    UNBOUNDED,
    ChildControl,
    Slice,
    SlowStartOutcome,
    WritePool,
    slow_start,
)
from mxjob_controller.core.framework import JobContext
from mxjob_controller.core.job_status import RenderCounts, created_message
from mxjob_controller.core.job_vocabulary import ReplicaCounts
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.runtime.events import NORMAL


def suspended_message(kind: str, name: str) -> str:
    return f"{kind} {name} is suspended."


def resumed_message(kind: str, name: str) -> str:
    return f"{kind} {name} is resumed."


def _kept_counts(counts: Mapping[str, ReplicaCounts], types: Sequence[str]) -> dict[str, ReplicaCounts]:
    """Every type's counts with nothing active: a suspended job keeps what succeeded and failed."""
    out: dict[str, ReplicaCounts] = {}
    for rtype in types:
        known = counts.get(rtype) or ReplicaCounts()
        out[rtype] = ReplicaCounts(0, known.succeeded, known.failed)
    return out


def suspended_status(old: Mapping[str, Any] | None, *, kind: str, name: str, types: Sequence[str], now: str,
                     counts: Mapping[str, ReplicaCounts], render_counts: RenderCounts) -> dict[str, Any]:
    """The status of a suspended job (``old`` is not modified); a finished job's is returned as it is. ``counts``:
    the counts ``old`` holds, as the framework reads them (``Framework.replica_counts``)."""
    old = dict(old or {})
    conditions = old.get("conditions") or []
    if cond.is_finished(conditions):
        return deep_copy(old)
    message = suspended_message(kind, name)
    conditions = cond.set_condition(conditions, cond.CREATED, cond.TRUE, f"{kind}Created",
                                    created_message(kind, name), now)
    if cond.is_true(conditions, cond.RUNNING):
        conditions = cond.set_condition(conditions, cond.RUNNING, cond.FALSE, f"{kind}Suspended", message, now)
    conditions = cond.set_condition(conditions, cond.SUSPENDED, cond.TRUE, f"{kind}Suspended", message, now)
    status = deep_copy(old)
    status["conditions"] = conditions
    status = render_counts(status, _kept_counts(counts, types))
    if status != old:
        status["lastReconcileTime"] = now
    return status


def resumed_status(old: Mapping[str, Any] | None, *, kind: str, name: str, now: str) -> dict[str, Any]:
    """``old`` with the job resumed if it was suspended (``Suspended`` False, ``startTime`` now); else a copy."""
    status = deep_copy(dict(old or {}))
    conditions = status.get("conditions") or []
    if not cond.is_suspended(conditions) or cond.is_finished(conditions):
        return status
    status["conditions"] = cond.set_condition(conditions, cond.SUSPENDED, cond.FALSE, f"{kind}Resumed",
                                              resumed_message(kind, name), now)
    status["startTime"] = now
    status["lastReconcileTime"] = now
    return status


def transition_events(before: cond.Conditions | None, after: cond.Conditions | None,
                      kind: str) -> list[tuple[str, str, str]]:
    """(event type, reason, message) for the suspensions and resumes a status write recorded."""
    events: list[tuple[str, str, str]] = []
    now_suspended, was_suspended = cond.is_suspended(after), cond.is_suspended(before)
    current = cond.find(after, cond.SUSPENDED) or {}
    if now_suspended and not was_suspended:
        events.append((NORMAL, f"{kind}Suspended", current.get("message") or ""))
    elif was_suspended and current.get("status") == cond.FALSE:
        events.append((NORMAL, f"{kind}Resumed", current.get("message") or ""))
    return events


def delete_children(ctx: JobContext, control: ChildControl, pool: WritePool, pods: Sequence[dict[str, Any]],
                    services: Sequence[dict[str, Any]], replicas: Mapping[str, int], *,
                    timeout: float, within: Slice = UNBOUNDED) -> SlowStartOutcome:
    """Delete every pod and service the job controls and can name a replica for, as much as ``within`` allows
    (the outcome's ``deferred`` says how many are left for the next pass).

    Children whose labels name no replica are left alone, as by every other pass: their deletion could not be
    matched to an expectation.
    """
    tasks: list[Callable[[], Any]] = []
    for kind, objs in ((POD, pods), (SERVICE, services)):
        children = classify(objs, ctx.uid, ctx.name, replicas)
        doomed = [(rtype, obj) for rtype, _, obj in children.kept()] + \
            [(excess.replica_type, excess.obj) for excess in children.excess]
        tasks += [functools.partial(control.delete, ctx, kind, obj, rtype, ctx.extra(rtype), "the job is suspended")
                  for rtype, obj in doomed]
    if not tasks:
        return SlowStartOutcome()
    return slow_start(tasks, pool, timeout=timeout, initial_batch=len(tasks), within=within)
