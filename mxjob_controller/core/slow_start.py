"""Slow-start batches, as Kubernetes' Job and ReplicaSet controllers create pods (``slowStartBatch``), in slices.

Writes go out in parallel batches of 1, 2, 4, 8 … and the run stops after the first batch with a failure. A job
needing 100 pods takes 7 round trips instead of 100 (training-operator created them one by one: #2361), yet a
failing API (quota, admission webhook down) sees a handful of doomed requests, not a hundred.

A run can be a *slice* (:class:`Slice`): no batch is larger than ``max_batch``, no new batch starts once the slice's
time is up or its write budget is spent, and none once ``cancelled()`` says the work is no longer wanted (its job
was deleted). What was not attempted is left for the next reconcile, so one large job makes progress in bounded
steps while other jobs get their turn on the shared write pool and client budget (kube's ReplicaSet and Job
controllers bound a sync the same way: at most 500 creates or deletes per sync).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.core.write_pool import WritePool

SMALLEST_BATCH_CAP, LARGEST_BATCH_CAP = 32, 128
BATCH_SECONDS = 1.5   # what the client budget sends in this long is the most one batch may hold


def batch_cap_for_budget(qps: float) -> int:
    """The largest slow-start batch for a client allowed ``qps`` requests a second (negative: no client limit; 0:
    client-go's default of 5). A batch holds its job's worker until every write in it is answered, so at the
    default 20 req/s a batch is at most 32 (1.6 s of the budget; 128 would hold the worker ~6 s), while without a
    limit a 1/32/256 job goes in 5 steady rounds of 128 instead of 18 of 32."""
    if qps < 0 or not math.isfinite(qps):   # what the client takes for "no limit"
        return LARGEST_BATCH_CAP
    return max(SMALLEST_BATCH_CAP, min(LARGEST_BATCH_CAP, int((qps or 5.0) * BATCH_SECONDS)))


@dataclass(frozen=True, slots=True)
class Slice:
    """The most one run may do: ``writes`` tasks, started within ``seconds`` (the first ``floor`` start whatever the
    time: a small job is never split over passes, each of which waits its turn in the queue), in batches of at most
    ``max_batch``; ``cancelled`` is asked before every batch. The write and time bounds are there so that other
    work gets its turn: they end a run only while ``contended()`` says other work waits (a large job alone goes on
    in one pass instead of yielding to no one)."""

    writes: int
    seconds: float
    max_batch: int
    cancelled: Callable[[], bool] = lambda: False
    floor: int = 0
    contended: Callable[[], bool] = lambda: True


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
