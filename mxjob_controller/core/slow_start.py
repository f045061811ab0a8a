"""Slow-start batches, as Kubernetes' Job and ReplicaSet controllers create pods (``slowStartBatch``).

Writes go out in parallel batches of 1, 2, 4, 8 … and the run stops after the first batch with a failure. A job
needing 100 pods takes 7 round trips instead of 100 (training-operator created them one by one: #2361), yet a
failing API (quota, admission webhook down) sees a handful of doomed requests, not a hundred.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.core.write_pool import WritePool


@dataclass(slots=True)
class SlowStartOutcome:
    results: list[Any] = field(default_factory=list)   # results of the tasks that succeeded, in task order
    error: BaseException | None = None                 # the first failure, if any
    attempted: int = 0                                 # tasks started (the rest were skipped after a failure)
    batches: list[int] = field(default_factory=list)   # size of each batch run


def slow_start(tasks: Sequence[Callable[[], Any]], pool: WritePool, *, timeout: float,
               initial_batch: int = 1) -> SlowStartOutcome:
    """Run ``tasks`` on ``pool`` in doubling batches; stop after a batch with a failure. ``timeout`` bounds the wait
    for each batch (a task still running then counts as failed; its own writes have their own timeouts)."""
    outcome = SlowStartOutcome()
    remaining = list(tasks)
    size = max(1, initial_batch)
    while remaining:
        batch, remaining = remaining[:size], remaining[size:]
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
        size *= 2
    return outcome
