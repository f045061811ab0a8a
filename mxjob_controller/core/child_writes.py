"""Every write of a job's children: what is created (pure builders), the writes themselves (create, delete, adopt;
guarded by expectations, reported as events), their slow-start batches in slices, and the bounded thread pool
they run on; and the deletions that carry out due restarts.

A job creates one pod and one headless service per replica. The pod is the replica's template (already wired by the
framework) with: the child name, the template's labels with the controller's labels on top (controller keys win),
the template's annotations and finalizers, one controller ownerReference to the job, and the replica's restart
policy (``ExitCode`` runs as ``Never``: the controller, not the kubelet, decides about restarts). The service is
headless (``clusterIP: None``), selects exactly that pod and exposes the ports the framework names.

The writes run on a small, bounded pool of named threads (:class:`WritePool`). Why not ``concurrent.futures``: every
thread of this process is named, stops within a deadline, and every wait has a timeout;
``ThreadPoolExecutor.shutdown`` cannot be bounded. Tasks are plain callables; each write they make has the API
client's own timeouts, so a task never runs unbounded.

Guarantees: at most ``size`` tasks run at once, in submission order; a task's exception is kept for its submitter,
never lost and never fatal to the thread; after :meth:`WritePool.stop` no new task starts and queued ones fail with
:class:`PoolStoppedError`.

Writes go out as Kubernetes' Job and ReplicaSet controllers create pods (``slowStartBatch``): in parallel batches of
1, 2, 4, 8 … and the run stops after the first batch with a failure. A job needing 100 pods takes 7 round trips
instead of 100 (training-operator created them one by one: #2361), yet a failing API (quota, admission webhook down)
sees a handful of doomed requests, not a hundred.

A run can be a *slice* (:class:`Slice`): no batch is larger than ``max_batch``, no new batch starts once the slice's
time is up or its write budget is spent, and none once ``cancelled()`` says the work is no longer wanted (its job
was deleted). What was not attempted is left for the next reconcile, so one large job makes progress in bounded
steps while other jobs get their turn on the shared write pool and client budget (kube's ReplicaSet and Job
controllers bound a sync the same way: at most 500 creates or deletes per sync).

Each child write (:class:`ChildControl`) is guarded by expectations and reported as an event. Expectations are
raised just before each write and lowered when it fails, so a failed write never leaves the job waiting for an event
that cannot come; a successful one is lowered by the informer event it causes.

- Create: ``SuccessfulCreate<Kind>`` ("Created pod: <name>") or ``FailedCreate<Kind>`` ("Error creating: ...").
  A create answered 409 is looked up: an object the job controls counts as done (no error, no event; its missing
  labels are patched in); an object the job does not control *blocks* the name, which the caller reports once.
- Delete: preconditioned on the child's UID, so a newer object of the same name is never deleted by mistake;
  ``SuccessfulDelete<Kind>`` / ``FailedDelete<Kind>``. An object already gone, or already being deleted, is done.
- Adopt: a child the old operator made (legacy labels only, our job as controller) gets our labels patched in.

The restarts a status write recorded are carried out by deleting each pod whose restart is due (the child sync
creates its replacement, under the same name, once the deletion is observed). Thin I/O around the restart plan
(core/failure_policy.py).

Each deletion is preconditioned on the pod's UID and guarded by expectations (``ChildControl.delete``); a pod
whose node is gone (phase Unknown) is deleted with grace 0. All due pods go at once; the first error is returned
for the caller to raise, so the job is retried with back-off and the restart, still recorded in its status, is
attempted again without being counted twice.
"""

from __future__ import annotations

import enum
import functools
import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.core.failure_policy import DueRestart
from mxjob_controller.core.framework import JobContext
from mxjob_controller.core.job_vocabulary import is_controlled_by, missing_labels, needs_adoption
from mxjob_controller.core.pods import is_deleting, pod_restart_policy
from mxjob_controller.runtime.client import (
    PODS,
    SERVICES,
    AlreadyExists,
    ApiError,
    Cancelled,
    Client,
    Conflict,
    NotFound,
    Resource,
)
from mxjob_controller.runtime.clock import IDLE_WAIT
from mxjob_controller.runtime.events import NORMAL, WARNING, EventRecorder
from mxjob_controller.runtime.expectations import ControllerExpectations, ExpectationKey, pods_key, services_key

# --- child builders -----------------------------------------------------------------------------------------------

def template_restart_policy(template: dict[str, Any]) -> str:
    """The restart policy a user wrote into the pod template ("" when none): it is overwritten, with a warning."""
    return ((template.get("spec") or {}).get("restartPolicy")) or ""


def with_env(env: list[Any] | None, additions: list[dict[str, str]]) -> list[Any]:
    """The user's ``env`` followed by each addition whose name the user did not set: what a framework's wiring
    adds to a container never overrides a variable the user chose."""
    user = list(env or [])
    taken = {e.get("name") for e in user if isinstance(e, dict)}
    return user + [dict(a) for a in additions if a["name"] not in taken]


def build_pod(template: dict[str, Any], *, name: str, namespace: str, labels: dict[str, str],
              owner: dict[str, Any], restart_policy: str) -> dict[str, Any]:
    """The pod to create; ``template`` is not modified.

    The pod shares the template's nested values (nothing is copied twice on the hot path): pass a template of the
    caller's own, as ``Framework.pod_template`` hands out, and do not change it afterwards."""
    tmeta = template.get("metadata") or {}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "labels": {**(tmeta.get("labels") or {}), **labels},
                                "ownerReferences": [dict(owner)]}
    if tmeta.get("annotations"):
        metadata["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        metadata["finalizers"] = list(tmeta["finalizers"])
    spec = dict(template.get("spec") or {})
    spec["restartPolicy"] = pod_restart_policy(restart_policy)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def build_service(*, name: str, namespace: str, labels: dict[str, str], selector: dict[str, str],
                  owner: dict[str, Any], ports: list[dict[str, Any]]) -> dict[str, Any]:
    """The headless service giving a replica its stable DNS name (``<name>.<namespace>.svc``)."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels),
                         "ownerReferences": [dict(owner)]},
            "spec": {"clusterIP": "None", "selector": dict(selector), "ports": [dict(p) for p in ports]}}


# --- write pool --------------------------------------------------------------------------------------------------

log = logging.getLogger(__name__)


class PoolStoppedError(RuntimeError):
    """The pool was stopped before the task could run."""


class Task:
    """One submitted callable: wait for it, then read :attr:`result` or :attr:`error`."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.result: Any = None
        self.error: BaseException | None = None
        self._done = threading.Event()

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as e:  # kept for the submitter, who decides
            self.error = e
        finally:
            self._done.set()

    def fail(self, error: BaseException) -> None:
        self.error = error
        self._done.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)

    @property
    def done(self) -> bool:
        return self._done.is_set()


class WritePool:
    def __init__(self, name: str, size: int) -> None:
        if size < 1:
            raise ValueError("a write pool needs at least one thread")
        self.name = name
        self.size = size
        self._tasks: queue.Queue[Task | None] = queue.Queue()   # None wakes a thread to stop
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> WritePool:
        with self._lock:
            if self._stopping.is_set():
                raise PoolStoppedError(f"write pool {self.name} was stopped")
            self._start_threads()
        return self

    def _start_threads(self) -> None:
        """Start the threads if not yet started (the caller holds the lock)."""
        if not self._threads:
            self._threads = [threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
                             for i in range(self.size)]
            for thread in self._threads:
                thread.start()

    def submit(self, fn: Callable[[], Any]) -> Task:
        task = Task(fn)
        with self._lock:   # against stop(): a task is either queued before the drain, or refused
            if self._stopping.is_set():
                task.fail(PoolStoppedError(f"write pool {self.name} is stopped"))
            else:
                self._start_threads()
                self._tasks.put(task)
        return task

    def stop(self, timeout: float) -> bool:
        """Start no new task, fail the queued ones, join the threads; False if one outlived ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._stopping.set()
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                task.fail(PoolStoppedError(f"write pool {self.name} stopped"))
        with self._lock:
            threads = list(self._threads)
        for _ in threads:
            self._tasks.put(None)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in threads if t.is_alive()]
        if stuck:
            log.warning("write pool %s: still writing after %.1fs: %s", self.name, timeout, ", ".join(stuck))
        return not stuck

    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                task = self._tasks.get(timeout=IDLE_WAIT)   # stop() wakes it: one None per thread
            except queue.Empty:
                continue
            if task is None:
                return
            if self._stopping.is_set():
                task.fail(PoolStoppedError(f"write pool {self.name} stopped"))
                continue
            task.run()


# --- slow start --------------------------------------------------------------------------------------------------

SMALLEST_BATCH_CAP, LARGEST_BATCH_CAP = 32, 128
BATCH_SECONDS = 1.5   # what the client budget sends in this long is the most one batch may hold


def batch_cap_for_budget(qps: float) -> int:
    """The largest slow-start batch for a client allowed ``qps`` requests a second (negative: no client limit; 0:
    client-go's default of 5). A batch holds its job's worker until every write in it is answered, so it is sized
    to :data:`BATCH_SECONDS` of the budget; without a limit, batches grow to :data:`LARGEST_BATCH_CAP`."""
    if qps < 0 or not math.isfinite(qps):   # what the client takes for "no limit"
        return LARGEST_BATCH_CAP
    return max(SMALLEST_BATCH_CAP, min(LARGEST_BATCH_CAP, int((qps or 5.0) * BATCH_SECONDS)))


@dataclass(frozen=True, slots=True)
class Slice:
    """The most one run may do: ``writes`` tasks, started within ``seconds`` (the first ``floor`` start whatever the
    time: a small job is never split over passes, each of which waits its turn in the queue), in batches of at most
    ``max_batch``; ``cancelled`` is asked before every batch. The write and time bounds are there so that other
    work gets its turn: they end a run only while ``contended()`` says other work waits (a large job alone goes on
    in one pass instead of yielding to no one). ``cancel``, when given, is the event ``cancelled()`` answers from
    (set the moment the work is no longer wanted): each create hands it to the client, whose waits it ends and
    which sends nothing once it is set (core/cancellation.py)."""

    writes: int
    seconds: float
    max_batch: int
    cancelled: Callable[[], bool] = lambda: False
    floor: int = 0
    contended: Callable[[], bool] = lambda: True
    cancel: threading.Event | None = None


UNBOUNDED = Slice(writes=1 << 62, seconds=float("inf"), max_batch=1 << 62)


@dataclass(slots=True)
class SlowStartOutcome:
    results: list[Any] = field(default_factory=list)   # results of the tasks that succeeded, in task order
    error: BaseException | None = None                 # the first failure, if any
    attempted: int = 0                                 # tasks started (the rest were skipped after a failure)
    batches: list[int] = field(default_factory=list)   # size of each batch run
    deferred: int = 0        # tasks left for a later run: the slice was used up (not after a failure)
    cancelled: bool = False  # the slice's work was cancelled before every task started


def slow_start(tasks: Sequence[Callable[[], Any]], pool: WritePool, *, timeout: float,
               initial_batch: int = 1, within: Slice = UNBOUNDED) -> SlowStartOutcome:
    """Run ``tasks`` on ``pool`` in doubling batches; stop after a batch with a failure, or when ``within`` is used
    up or cancelled. ``timeout`` bounds the wait for each batch (a task still running then counts as failed; its
    own writes have their own timeouts)."""
    return slow_start_lanes([tasks], pool, timeout=timeout, initial_batches=[initial_batch], within=within)


def slow_start_lanes(lanes: Sequence[Sequence[Callable[[], Any]]], pool: WritePool, *, timeout: float,
                     initial_batches: Sequence[int], lags: Sequence[int] = (),
                     within: Slice = UNBOUNDED) -> SlowStartOutcome:
    """Several slow starts in step, one per *lane* (a job's services, its pods): each round sends every lane's next
    batch together, and each lane doubles on its own, so kinds of writes share round trips (a small job's services
    and pods take 4 of them, not 6) while an API failing one kind still sees one request of it. Lane ``i`` starts
    ``lags[i]`` rounds late (a job's pods follow their Services by one round, so a pod's Service exists when it
    starts, as when all Services went first). A round holds at most ``within.max_batch`` tasks, shared evenly by
    the lanes with work in it. The run stops after the first round with a failure; ``results`` are in submission
    order."""
    outcome = SlowStartOutcome()
    remaining = [list(lane) for lane in lanes]
    sizes = [max(1, n) for n in initial_batches]
    starts = list(lags) + [0] * (len(lanes) - len(lags))
    ends = time.monotonic() + within.seconds
    rounds = 0
    while any(remaining):
        left = within.writes - outcome.attempted
        if within.cancelled():
            outcome.cancelled = True
            return outcome
        used_up = left <= 0 or (outcome.attempted and outcome.attempted >= within.floor and time.monotonic() >= ends)
        waiting = (used_up or left < within.max_batch) and within.contended()   # asked only when a bound binds
        if used_up and waiting:
            outcome.deferred = sum(len(lane) for lane in remaining)
            return outcome
        room = min(within.max_batch, left) if waiting else within.max_batch
        active = [i for i, lane in enumerate(remaining) if lane and starts[i] <= rounds] \
            or [i for i, lane in enumerate(remaining) if lane]   # nothing else left to wait for
        share = max(1, room // len(active))
        batch: list[Callable[[], Any]] = []
        took: list[int] = []
        for i in active:
            take = min(sizes[i], share, room - len(batch))
            if take <= 0:
                break
            batch += remaining[i][:take]
            remaining[i] = remaining[i][take:]
            took.append(i)
        outcome.batches.append(len(batch))
        outcome.attempted += len(batch)
        deadline = time.monotonic() + timeout
        submitted = [pool.submit(task) for task in batch]
        for task in submitted:
            if not task.wait(max(0.0, deadline - time.monotonic())):
                outcome.error = outcome.error or TimeoutError(f"a write did not finish within {timeout:g}s")
            elif task.error is not None:
                outcome.error = outcome.error or task.error
            else:
                outcome.results.append(task.result)
        if outcome.error is not None:
            return outcome
        for i in took:
            sizes[i] *= 2
        rounds += 1
    return outcome


# --- child control -----------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ChildKind:
    resource: Resource
    kind: str  # "Pod", "Service": the suffix of event reasons

    @property
    def noun(self) -> str:
        return self.kind.lower()

    def expectation_key(self, job_key: str, replica_type: str) -> ExpectationKey:
        return (pods_key if self.resource == PODS else services_key)(job_key, replica_type)


POD = ChildKind(PODS, "Pod")
SERVICE = ChildKind(SERVICES, "Service")


class Created(enum.Enum):
    CREATED = "created"
    EXISTS = "exists"        # the name was already ours: done
    BLOCKED = "blocked"      # the name is held by an object the job does not control
    CANCELLED = "cancelled"  # the job was deleted or replaced first: nothing was sent


class ChildVanishedError(RuntimeError):
    """A create was refused as a duplicate, yet the object was gone when looked up: retry later."""


def describe(error: BaseException) -> str:
    """An error as an event message shows it (the API's message, as client-go's ``%v`` of a StatusError)."""
    return error.message if isinstance(error, ApiError) and error.message else str(error)


class ChildControl:
    def __init__(self, client: Client, recorder: EventRecorder, expectations: ControllerExpectations) -> None:
        self.client = client
        self.recorder = recorder
        self.expectations = expectations

    def create(self, ctx: JobContext, kind: ChildKind, replica_type: str, index: int,
               body: dict[str, Any], cancel: threading.Event | None = None) -> Created:
        """``cancel``: set when the job is deleted; a create still waiting in the client then sends nothing and is
        :attr:`Created.CANCELLED`, its expectation lowered again (no event will come for it)."""
        key = kind.expectation_key(ctx.key, replica_type)
        name = body["metadata"]["name"]
        extra = ctx.extra(replica_type, index)
        self.expectations.raise_expectations(key, adds=1)
        try:
            self.client.create(kind.resource, body, ctx.namespace, cancel=cancel)
        except AlreadyExists:
            return self._exists(ctx, kind, key, body, extra)
        except Cancelled:
            self.expectations.lower_expectations(key, adds=1)
            if cancel is None or not cancel.is_set():
                raise   # the client was closed (the process stops): an error, as before
            log.debug("not creating %s %s: its job was deleted", kind.noun, name, extra=extra)
            return Created.CANCELLED
        except Exception as e:
            self.expectations.lower_expectations(key, adds=1)
            log.warning("creating %s %s failed: %s", kind.noun, name, e, extra=extra)
            self.recorder.event(ctx.ref(), WARNING, f"FailedCreate{kind.kind}", f"Error creating: {describe(e)}")
            raise
        log.debug("created %s %s", kind.noun, name, extra=extra)   # the pass logs one line per kind (child_sync)
        self.recorder.event(ctx.ref(), NORMAL, f"SuccessfulCreate{kind.kind}", f"Created {kind.noun}: {name}")
        return Created.CREATED

    def _exists(self, ctx: JobContext, kind: ChildKind, key: ExpectationKey, body: dict[str, Any],
                extra: dict[str, Any]) -> Created:
        name = body["metadata"]["name"]
        self.expectations.lower_expectations(key, adds=1)
        try:
            existing = self.client.get(kind.resource, name, ctx.namespace)
        except NotFound:
            raise ChildVanishedError(f"{kind.noun} {name} already existed, then vanished") from None
        if not is_controlled_by(existing, ctx.uid):
            log.warning("cannot create %s %s: the name is held by an object %s %s does not control", kind.noun,
                        name, ctx.kind, ctx.name, extra=extra)
            return Created.BLOCKED
        log.info("%s %s already exists and is ours: nothing to create", kind.noun, name, extra=extra)
        wanted = body["metadata"].get("labels") or {}
        if missing_labels((existing.get("metadata") or {}).get("labels"), wanted):
            self.adopt(ctx, kind, existing, key.replica_type, wanted, extra)
        return Created.EXISTS

    def delete(self, ctx: JobContext, kind: ChildKind, obj: dict[str, Any], replica_type: str,
               extra: dict[str, Any], why: str, *, force: bool = False) -> None:
        """``force``: grace period 0, for a pod whose node is gone (no kubelet will confirm a graceful deletion),
        sent even when a graceful deletion is already under way."""
        meta = obj.get("metadata") or {}
        name = meta.get("name") or ""
        if is_deleting(obj) and not force:
            log.debug("%s %s is already being deleted", kind.noun, name, extra=extra)
            return
        key = kind.expectation_key(ctx.key, replica_type)
        self.expectations.raise_expectations(key, dels=1)
        try:
            self.client.delete(kind.resource, name, ctx.namespace, precondition_uid=meta.get("uid"),
                               grace_period_seconds=0 if force else None)
        except (NotFound, Conflict):
            self.expectations.lower_expectations(key, dels=1)
            log.info("%s %s is already gone (or replaced): nothing to delete", kind.noun, name, extra=extra)
            return
        except Exception as e:
            self.expectations.lower_expectations(key, dels=1)
            log.warning("deleting %s %s failed: %s", kind.noun, name, e, extra=extra)
            self.recorder.event(ctx.ref(), WARNING, f"FailedDelete{kind.kind}", f"Error deleting: {describe(e)}")
            raise
        log.info("deleted %s %s (%s)", kind.noun, name, why, extra=extra)
        self.recorder.event(ctx.ref(), NORMAL, f"SuccessfulDelete{kind.kind}", f"Deleted {kind.noun}: {name}")

    def adopt(self, ctx: JobContext, kind: ChildKind, obj: dict[str, Any], replica_type: str,
              labels: dict[str, str], extra: dict[str, Any]) -> None:
        """Patch the labels ``obj`` lacks. A child without our operator label enters our cache by this patch, so
        its arrival is expected like a creation."""
        meta = obj.get("metadata") or {}
        patch = missing_labels(meta.get("labels"), labels)
        if not patch:
            return
        key = kind.expectation_key(ctx.key, replica_type)
        arrives = needs_adoption(meta.get("labels")) and not needs_adoption(labels)
        if arrives:
            self.expectations.raise_expectations(key, adds=1)
        try:
            self.client.patch(kind.resource, meta.get("name") or "", {"metadata": {"labels": patch}},
                              ctx.namespace)
        except Exception as e:
            if arrives:
                self.expectations.lower_expectations(key, adds=1)
            if isinstance(e, NotFound):
                log.info("%s %s vanished before it could be adopted", kind.noun, meta.get("name"), extra=extra)
                return
            raise
        log.info("adopted %s %s: labels %s added", kind.noun, meta.get("name"), ", ".join(sorted(patch)),
                 extra=extra)


# --- restart actions ---------------------------------------------------------------------------------------------

def delete_due(ctx: JobContext, control: ChildControl, pool: WritePool, due: Sequence[DueRestart], *,
               timeout: float, within: Slice = UNBOUNDED) -> SlowStartOutcome:
    """Delete the pods of ``due``, as much as ``within`` allows (``deferred`` are left for the next pass)."""
    tasks: list[Callable[[], Any]] = [
        functools.partial(control.delete, ctx, POD, restart.pod, restart.replica_type,
                          ctx.extra(restart.replica_type, restart.index),
                          "restart: its node is gone" if restart.force else "restart", force=restart.force)
        for restart in due]
    if not tasks:
        return SlowStartOutcome()
    return slow_start(tasks, pool, timeout=timeout, initial_batch=len(tasks), within=within)
