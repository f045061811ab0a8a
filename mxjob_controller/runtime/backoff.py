"""Retry delays: the capped exponential step every back-off here is built on, and the reflector's back-off.

:func:`exponential_delay` is the one formula (``base * factor**attempt``, capped, safe for any attempt count) used by
the work queue's per-item limiter, the reflector and lease watch (:class:`Backoff`), and offered to anything else
that doubles a delay up to a cap.

:class:`Backoff` is client-go's ``wait.Backoff`` with ``DelayWithReset`` and the reflector's defaults: delays start
at 0.8 s and double up to a 30 s cap, each stretched by a random jitter of up to 100 % (so 0.8-1.6 s, 1.6-3.2 s, ...,
30-60 s: many informers failing together do not retry in lockstep). After a quiet spell of 2 minutes without a
failure the sequence starts over. A server's ``Retry-After`` wins when longer.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


def exponential_delay(base: float, attempt: int, cap: float, factor: float = 2.0) -> float:
    """``base * factor**attempt`` seconds, at most ``cap`` (attempt 0: ``base``). Never overflows: a count past
    what a float holds is simply the cap."""
    try:
        delay = base * factor ** max(attempt, 0)
    except OverflowError:
        return cap
    return min(delay, cap)


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0


class Backoff:
    """Successive failures of one loop (thread-safe); each :meth:`next_delay` counts one more."""

    def __init__(self, policy: BackoffPolicy | None = None, rng: random.Random | None = None,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy or BackoffPolicy()
        self._rng = rng or random.Random()
        self._now = now
        self._lock = threading.Lock()
        self._failures = 0
        self._last: float | None = None

    def next_delay(self, retry_after: float | None = None) -> float:
        """The delay before the next attempt; each call counts as one more failure."""
        p = self.policy
        with self._lock:
            now = self._now()
            if self._last is not None and now - self._last > p.reset_after:
                self._failures = 0
            self._last = now
            base = exponential_delay(p.initial, self._failures, p.cap, p.factor)
            self._failures += 1
            delay = base + (self._rng.random() * p.jitter * base if p.jitter > 0 else 0.0)
        return max(delay, retry_after or 0.0)

    def reset(self) -> None:
        with self._lock:
            self._failures = 0
            self._last = None
