"""Delayed requeues of a job: for a time that falls due, and after a pass whose child writes partly failed.

A due time that the clocks' rounding puts a hair in the future is looked at again shortly, not lost, and never
busy-loops: the delay is at least :data:`MIN_REQUEUE`.
"""

from __future__ import annotations

import logging
from typing import Any

from mxjob_controller.runtime.controller import DONE, Result

log = logging.getLogger(__name__)

MIN_REQUEUE = 0.05   # seconds


def requeue_in(seconds: float) -> Result:
    """Look at the job again in ``seconds`` (at least :data:`MIN_REQUEUE`)."""
    return Result.after(max(seconds, MIN_REQUEUE))


def after_failed_write(error: BaseException, done: int, retry_after: float, extra: dict[str, Any]) -> Result:
    """The next pass after one whose writes (creations, deletions) stopped at ``error``. When ``done`` others went
    through, the API works and the failure was sporadic (a 500, a 429 out of retries): look again ``retry_after``
    seconds later. Otherwise ``error`` is raised, for the growing per-job back-off meant for an API that refuses
    everything (a quota, a webhook down); a large job crawled under sporadic faults with that back-off."""
    if not done:
        raise error
    log.warning("%d writes done, one failed: %s; next pass in %gs", done, error, retry_after, extra=extra)
    return Result.after(retry_after)


def soonest(a: Result, b: Result) -> Result:
    """The result that comes back first (a delayed requeue of 0 means none)."""
    delays = [r.requeue_after for r in (a, b) if r.requeue_after > 0]
    return Result.after(min(delays)) if delays else DONE
