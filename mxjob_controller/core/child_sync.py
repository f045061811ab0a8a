"""Bring a job's children to what its spec asks for: adopt, delete the surplus, create what is missing.

Which child stands for which replica, and which are surplus, is the core of "diff desired vs actual". Pure: given
the children a cache holds (pods or services) and the job's replica counts, :func:`classify` keeps only those whose
controller reference carries the job's UID, reads their (type, index) from their labels, and sorts them:

- ``kept``: one child per index ``< replicas`` (when an index has several, the one named ``<job>-<type>-<index>``
  wins, then one not being deleted, then the oldest);
- ``missing``: indices ``< replicas`` with no child (to create);
- ``excess``: the other children of an index, children with an index ``>= replicas``, and children of a replica
  type the job no longer has (to delete);
- ``unindexed``: controlled children whose labels name no type and index (left alone: nothing says what they are).

One pass, from the informer cache:

1. adopt children the old operator made (legacy labels, our job as controller): our labels are patched in;
2. delete surplus children (index out of range, duplicates, replica types the job no longer has), pods and
   services alike, all at once;
3. create missing services and pods in two slow starts run in step (``slow_start_lanes``: each round sends the
   next batch of both, the pods one round behind their Services, so a pod's Service exists when it starts; each
   kind doubles on its own, so a small job's children take 4 round trips, not 6, and a pod API that fails, a
   quota, still sees one doomed pod); a failure stops the creations (the job is requeued with back-off by the
   caller). One log line per kind names what was created.

All of it within one :class:`~mxjob_controller.core.child_writes.Slice` of writes (its first batch's worth always
goes, so a small job is created in one pass however slow the API is): what the slice leaves is counted in
``deferred`` (the caller comes back for it), and a cancelled slice (the job was deleted) stops at once, down to
the writes already queued, which check before they go, and those already waiting in the client for a token or a
retry, which the slice's cancel event stops before they are sent (core/cancellation.py). A slow start begins at
the number of children of that kind that already exist (at most a batch), so a job created over many slices does
not climb from 1 again each time.

A name held by an object the job does not control is reported in the result (``blocked``), not retried here.
Creations can be held back (``create=False``: a gang scheduler has not admitted the job yet); adoption and
deletion of the surplus still run. A ``pod_decorator`` gets each new pod's template last (gang membership).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.core.child_writes import (
    POD,
    SERVICE,
    UNBOUNDED,
    ChildControl,
    ChildKind,
    Created,
    Slice,
    SlowStartOutcome,
    WritePool,
    build_pod,
    build_service,
    slow_start_lanes,
    template_restart_policy,
)
from mxjob_controller.core.framework import Framework, JobContext, OncePerGeneration
from mxjob_controller.core.job_vocabulary import (
    child_name,
    is_controlled_by,
    needs_adoption,
    replica_labels,
    replica_of,
    service_selector,
)
from mxjob_controller.core.pods import is_deleting
from mxjob_controller.runtime.events import WARNING, EventRecorder

# --- children -----------------------------------------------------------------------------------------------------

OUT_OF_RANGE = "index out of range"
DUPLICATE = "duplicate of its index"
UNKNOWN_TYPE = "replica type not in the job"
NO_SERVICE = "the job asks for no Service"


@dataclass(frozen=True, slots=True)
class Excess:
    obj: dict[str, Any]
    replica_type: str   # as labelled (lower case) for unknown types, else canonical
    index: int
    why: str


@dataclass(frozen=True, slots=True)
class ReplicaChildren:
    kept: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    missing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Children:
    by_type: Mapping[str, ReplicaChildren]   # canonical type → children, for every type of the job
    excess: tuple[Excess, ...] = ()
    unindexed: tuple[dict[str, Any], ...] = ()

    def kept(self) -> Iterable[tuple[str, int, dict[str, Any]]]:
        for rtype, children in self.by_type.items():
            for index, obj in sorted(children.kept.items()):
                yield rtype, index, obj


def _name(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


def _preference(obj: dict[str, Any], expected_name: str) -> tuple[bool, bool, str, str]:
    meta = obj.get("metadata") or {}
    return (_name(obj) != expected_name, is_deleting(obj), meta.get("creationTimestamp") or "", _name(obj))


def classify(objs: Iterable[dict[str, Any]], job_uid: str, job_name: str, replicas: Mapping[str, int]) -> Children:
    """Sort ``objs`` (any children in the job's namespace) for the job with ``job_uid``; ``replicas`` maps each of
    its canonical replica types to its replica count."""
    canonical = {rtype.lower(): rtype for rtype in replicas}
    grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
    excess: list[Excess] = []
    unindexed: list[dict[str, Any]] = []
    seen: set[str] = set()
    for obj in objs:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid") or _name(obj)
        if uid in seen or not is_controlled_by(obj, job_uid):
            continue
        seen.add(uid)
        found = replica_of(meta.get("labels"))
        if found is None:
            unindexed.append(obj)
            continue
        lowered, index = found
        rtype = canonical.get(lowered)
        if rtype is None:
            excess.append(Excess(obj, lowered, index, UNKNOWN_TYPE))
        elif index >= replicas[rtype]:
            excess.append(Excess(obj, rtype, index, OUT_OF_RANGE))
        else:
            grouped.setdefault((rtype, index), []).append(obj)
    by_type: dict[str, ReplicaChildren] = {}
    for rtype, count in replicas.items():
        kept: dict[int, dict[str, Any]] = {}
        for index in range(count):
            candidates = sorted(grouped.get((rtype, index), ()),
                                key=lambda o, i=index: _preference(o, child_name(job_name, rtype, i)))
            if candidates:
                kept[index] = candidates[0]
                excess.extend(Excess(o, rtype, index, DUPLICATE) for o in candidates[1:])
        by_type[rtype] = ReplicaChildren(kept, tuple(i for i in range(count) if i not in kept))
    excess.sort(key=lambda e: (e.replica_type, e.index, _name(e.obj)))
    return Children(by_type, tuple(excess), tuple(unindexed))


def _without_unwanted(services: Children, replicas: Mapping[str, int]) -> Children:
    """``services`` classified without the types that get no Service, their Services (an older version made
    port-less ones) told apart from those of types the job no longer has."""
    canonical = {rtype.lower() for rtype in replicas}
    excess = tuple(dataclasses.replace(e, why=NO_SERVICE) if e.why == UNKNOWN_TYPE and e.replica_type in canonical
                   else e for e in services.excess)
    return Children(services.by_type, excess, services.unindexed)


# --- child sync --------------------------------------------------------------------------------------------------

log = logging.getLogger(__name__)

PodDecorator = Callable[[JobContext, str, dict[str, Any]], None]   # (job, replica type, pod template), in place

SET_TEMPLATE_RESTART_POLICY = "SetPodTemplateRestartPolicy"
TEMPLATE_RESTART_POLICY_MESSAGE = ("Restart policy in pod template will be overwritten by restart policy in "
                                   "replica spec")


@dataclass(frozen=True, slots=True)
class SyncResult:
    pods: Children
    services: Children
    blocked: tuple[tuple[str, str], ...] = ()   # (kind, name) of children whose names objects we do not control hold
    error: BaseException | None = None      # the first failed write
    deferred: int = 0                       # writes left for a later pass (the slice was used up)
    done: int = 0                           # writes that succeeded (a pass with a failure may still progress)
    cancelled: bool = False                 # the job was deleted or replaced meanwhile: writes stopped


class ChildSync:
    def __init__(self, framework: Framework, control: ChildControl, pool: WritePool, recorder: EventRecorder, *,
                 write_timeout: float, pod_decorator: PodDecorator | None = None) -> None:
        self.framework = framework
        self.pod_decorator = pod_decorator
        self.control = control
        self.pool = pool
        self.recorder = recorder
        self.write_timeout = write_timeout
        self._warned = OncePerGeneration()

    def sync(self, ctx: JobContext, pods: Sequence[dict[str, Any]], services: Sequence[dict[str, Any]], *,
             create: bool = True, within: Slice = UNBOUNDED) -> SyncResult:
        spec = ctx.spec
        replicas = {rtype: spec.replicas[rtype].replicas for rtype in self.framework.replica_types(spec)}
        pod_children = classify(pods, ctx.uid, ctx.name, replicas)
        svc_children = _without_unwanted(classify(services, ctx.uid, ctx.name, {
            rtype: n for rtype, n in replicas.items() if self.framework.service_ports(spec, rtype) is not None}),
            replicas)
        for obj in (*pod_children.unindexed, *svc_children.unindexed):
            log.info("%s is controlled by the job but its labels name no replica: left alone",
                     (obj.get("metadata") or {}).get("name"), extra=ctx.extra())
        budget = _Budget(within)
        upkeep = self._adoptions(ctx, POD, pod_children) + self._adoptions(ctx, SERVICE, svc_children) \
            + self._deletions(ctx, POD, pod_children) + self._deletions(ctx, SERVICE, svc_children)
        error: BaseException | None = None
        if upkeep:
            outcome = budget.run(upkeep, self.pool, self.write_timeout, initial_batch=within.max_batch)
            error = outcome.error
        blocked: list[tuple[str, str]] = []
        lanes = [self._creations(ctx, kind, children, within)
                 for kind, children in ((SERVICE, svc_children), (POD, pod_children))] \
            if create and error is None else []
        if any(lanes):
            outcome = budget.run_lanes(lanes, self.pool, self.write_timeout,
                                       initial_batches=[len(services), len(pods)], lags=[0, 1])
            if any(created is Created.CANCELLED for _, _, created in outcome.results):
                budget.cancelled = True   # stopped in the client: nothing left for a later pass either
            for kind in (SERVICE, POD):
                done = [(name, created) for k, name, created in outcome.results if k is kind]
                blocked += [(kind.kind, name) for name, created in done if created is Created.BLOCKED]
                names = [name for name, created in done if created is Created.CREATED]
                if names:
                    log.info("created %d %s%s: %s", len(names), kind.noun, "" if len(names) == 1 else "s",
                             _names(names), extra=ctx.extra())
            if outcome.error is not None:
                skipped = sum(len(lane) for lane in lanes) - outcome.attempted
                log.warning("creating children stopped at the first failure (%d not attempted): %s", skipped,
                            outcome.error, extra=ctx.extra())
                error = outcome.error
        if budget.cancelled:
            log.info("the job was deleted or replaced: its remaining child writes were dropped", extra=ctx.extra())
        return SyncResult(pod_children, svc_children, tuple(blocked), error,
                          deferred=0 if budget.cancelled else budget.deferred, done=budget.done,
                          cancelled=budget.cancelled)

    # --- planning -------------------------------------------------------------------------------------------------

    def _labels(self, ctx: JobContext, rtype: str, index: int, master: bool = False) -> dict[str, str]:
        return replica_labels(self.framework.operator_name, self.framework.group_label, ctx.name, rtype, index,
                              master)

    def _adoptions(self, ctx: JobContext, kind: ChildKind, children: Children) -> list[Callable[[], Any]]:
        tasks: list[Callable[[], Any]] = []
        for rtype, index, obj in children.kept():
            if needs_adoption((obj.get("metadata") or {}).get("labels")):
                master = kind is POD and self.framework.is_master(ctx.spec, rtype, index)
                tasks.append(functools.partial(self.control.adopt, ctx, kind, obj, rtype,
                                               self._labels(ctx, rtype, index, master), ctx.extra(rtype, index)))
        return tasks

    def _deletions(self, ctx: JobContext, kind: ChildKind, children: Children) -> list[Callable[[], Any]]:
        return [functools.partial(self.control.delete, ctx, kind, surplus.obj, surplus.replica_type,
                                  ctx.extra(surplus.replica_type, surplus.index), surplus.why)
                for surplus in children.excess]

    def _creations(self, ctx: JobContext, kind: ChildKind, children: Children,
                   within: Slice) -> list[Callable[[], Any]]:
        """One task per missing child; its body is built when the task runs (a slice leaves most of them)."""
        return [functools.partial(self._create, ctx, kind, rtype, index, within)
                for rtype, replica_children in children.by_type.items() for index in replica_children.missing]

    def _create(self, ctx: JobContext, kind: ChildKind, rtype: str, index: int,
                within: Slice) -> tuple[ChildKind, str, Created]:
        """Create one child, unless its job was deleted since the task was queued, or is deleted while the create
        waits in the client for its token or a retry (then :attr:`Created.CANCELLED`: ``within.cancel``)."""
        name = child_name(ctx.name, rtype, index)
        if within.cancelled():
            return kind, name, Created.CANCELLED
        body = self._pod(ctx, rtype, index) if kind is POD else self._service(ctx, rtype, index)
        return kind, name, self.control.create(ctx, kind, rtype, index, body, cancel=within.cancel)

    def _pod(self, ctx: JobContext, rtype: str, index: int) -> dict[str, Any]:
        template = self.framework.pod_template(ctx.spec, rtype, index)
        if template_restart_policy(template):
            self._warn_template_restart_policy(ctx)
        if self.pod_decorator is not None:
            self.pod_decorator(ctx, rtype, template)
        master = self.framework.is_master(ctx.spec, rtype, index)
        return build_pod(template, name=child_name(ctx.name, rtype, index), namespace=ctx.namespace,
                         labels=self._labels(ctx, rtype, index, master), owner=ctx.owner(),
                         restart_policy=ctx.spec.replicas[rtype].restart_policy)

    def _service(self, ctx: JobContext, rtype: str, index: int) -> dict[str, Any]:
        return build_service(name=child_name(ctx.name, rtype, index), namespace=ctx.namespace,
                             labels=self._labels(ctx, rtype, index),
                             selector=service_selector(self.framework.operator_name, ctx.name, rtype, index),
                             owner=ctx.owner(), ports=self.framework.service_ports(ctx.spec, rtype))

    def _warn_template_restart_policy(self, ctx: JobContext) -> None:
        """One Warning per job generation (upstream warned for every pod it created)."""
        if not self._warned.first(ctx.uid, ctx.spec.generation):
            return
        log.warning(TEMPLATE_RESTART_POLICY_MESSAGE, extra=ctx.extra())
        self.recorder.event(ctx.ref(), WARNING, SET_TEMPLATE_RESTART_POLICY, TEMPLATE_RESTART_POLICY_MESSAGE)


class _Budget:
    """What is left of one pass's :class:`Slice` across its several slow starts (upkeep, services, pods)."""

    def __init__(self, within: Slice) -> None:
        self.within = within
        self.ends = time.monotonic() + within.seconds
        self.spent = 0
        self.done = 0
        self.deferred = 0
        self.cancelled = False

    def run(self, tasks: Sequence[Callable[[], Any]], pool: WritePool, timeout: float, *,
            initial_batch: int) -> SlowStartOutcome:
        return self.run_lanes([tasks], pool, timeout, initial_batches=[initial_batch])

    def run_lanes(self, lanes: Sequence[Sequence[Callable[[], Any]]], pool: WritePool, timeout: float, *,
                  initial_batches: Sequence[int], lags: Sequence[int] = ()) -> SlowStartOutcome:
        left = self.within.writes - self.spent
        floor = max(0, self.within.max_batch - self.spent)   # a pass always gets a batch's worth of writes
        used_up = self.spent and (left <= 0 or (not floor and time.monotonic() >= self.ends))
        if self.cancelled or (used_up and self.within.contended()):
            waiting = sum(len(lane) for lane in lanes)
            self.deferred += waiting
            return SlowStartOutcome(deferred=waiting, cancelled=self.cancelled)
        outcome = slow_start_lanes(lanes, pool, timeout=timeout,
                                   initial_batches=[max(1, min(n, self.within.max_batch)) for n in initial_batches],
                                   lags=lags,
                                   within=Slice(writes=left, seconds=max(0.0, self.ends - time.monotonic()),
                                                max_batch=self.within.max_batch, cancelled=self.within.cancelled,
                                                floor=floor, contended=self.within.contended))
        self.spent += outcome.attempted
        self.done += len(outcome.results)
        self.deferred += outcome.deferred
        self.cancelled = self.cancelled or outcome.cancelled
        return outcome


def _names(names: list[str], shown: int = 3) -> str:
    """A few names of a list, for a log line that stays short for a job of thousands."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
