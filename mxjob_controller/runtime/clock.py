"""Injectable time: the real monotonic clock, and a fake one tests advance by hand.

Why: the work queue's delays (5 ms to 1000 s), its latency metrics and the expectations' 5-minute expiry are all
about time. Tests must check them exactly and fast, so every component reads time through a :class:`Clock` and
sleeps through :meth:`Clock.wait_until`, never through ``time`` directly (as client-go injects ``clock.WithTicker``).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

# How long an idle thread (a worker, a writer, an accept loop) sleeps between looks at its state, where every way of
# stopping it also wakes it (a notify, a queue shut down, a sentinel, a socket pair): a long wait costs no latency,
# and an idle process then wakes almost never (it used to spend most of its idle CPU on 0.2-1 s polls).
IDLE_WAIT = 30.0

# The longest a fake-clock sleeper blocks in real time before re-checking: a guard, since step() wakes it anyway.
_FAKE_REAL_WAIT_CAP = 1.0


class Clock(Protocol):
    """Monotonic seconds, and a way to sleep on a condition until a point in that time."""

    def now(self) -> float:
        """Seconds on a monotonic scale (only differences mean anything)."""
        ...

    def wait_until(self, cond: threading.Condition, deadline: float) -> None:
        """Wait on ``cond`` (held by the caller) until ``deadline`` or a notify, whichever is first.

        May return early (spurious wake-up, real-time cap): callers re-check their state and the time in a loop.
        """
        ...


class RealClock:
    """``time.monotonic``: immune to wall-clock jumps, like Go's monotonic reading."""

    def now(self) -> float:
        return time.monotonic()

    def wait_until(self, cond: threading.Condition, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining > 0:
            cond.wait(timeout=remaining)


class FakeClock:
    """A clock that moves only when :meth:`step` is called; sleepers wake at once when it passes their deadline.

    Guarantee: a sleeper registered in :meth:`wait_until` is notified by every later :meth:`step`, so no wake-up is
    lost. :meth:`sleepers` tells a test when every sleeping thread has seen the current time, which makes
    "nothing happened yet" assertions deterministic instead of timed.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._lock = threading.Lock()
        self._now = start
        # token -> (time the sleeper last saw, its deadline, its condition)
        self._sleepers: dict[object, tuple[float, float, threading.Condition]] = {}

    def now(self) -> float:
        with self._lock:
            return self._now

    def step(self, seconds: float) -> None:
        """Advance the time by ``seconds`` and wake every sleeper so it re-checks."""
        if seconds < 0:
            raise ValueError("a clock never goes back")
        with self._lock:
            self._now += seconds
            conds = {id(c): c for _, _, c in self._sleepers.values()}
        for cond in conds.values():
            with cond:
                cond.notify_all()

    def sleepers(self) -> list[float]:
        """Deadlines of the threads asleep that have seen the current time, earliest first."""
        with self._lock:
            return sorted(deadline for seen, deadline, _ in self._sleepers.values() if seen == self._now)

    def wait_until(self, cond: threading.Condition, deadline: float) -> None:
        token = object()
        with self._lock:
            # Registered before the time check, under the same lock step() takes: a step either is seen here or
            # finds this sleeper and notifies it (it needs ``cond``, which the caller holds until cond.wait).
            self._sleepers[token] = (self._now, deadline, cond)
            due = self._now >= deadline
        try:
            if not due:
                cond.wait(timeout=_FAKE_REAL_WAIT_CAP)
        finally:
            with self._lock:
                del self._sleepers[token]
