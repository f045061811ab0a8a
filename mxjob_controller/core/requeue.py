"""Delayed requeues of a job for a time that falls due: the one floor every such requeue shares.

A due time that the clocks' rounding puts a hair in the future is looked at again shortly, not lost, and never
busy-loops: the delay is at least :data:`MIN_REQUEUE`.
"""

from __future__ import annotations

from mxjob_controller.runtime.controller import Result

MIN_REQUEUE = 0.05   # seconds


def requeue_in(seconds: float) -> Result:
    """Look at the job again in ``seconds`` (at least :data:`MIN_REQUEUE`)."""
    return Result.after(max(seconds, MIN_REQUEUE))
