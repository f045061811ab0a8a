"""Helpers of the work-queue tests: the fake clock's start, draining a queue, and waiting for its timer thread."""

from __future__ import annotations

from mxjob_controller.runtime.clock import FakeClock
from mxjob_controller.runtime.workqueue import WorkQueue
from tests.support import wait_for

T0 = 1000.0  # FakeClock's start


def drain(q: WorkQueue) -> list:
    """Everything queued now, in order, each marked done."""
    items = []
    while len(q):
        item = q.get(timeout=1)
        items.append(item)
        q.done(item)
    return items


def settled(clock: FakeClock, *deadlines: float) -> None:
    """Wait until the timer thread has seen the clock's current time and sleeps until ``deadlines``."""
    wait_for(lambda: clock.sleepers() == list(deadlines), timeout=10, what=f"timer asleep until {deadlines}")
