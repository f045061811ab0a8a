"""The reflector's retry delays (client-go's ``wait.Backoff`` with ``DelayWithReset``, reflector defaults).

Delays start at 0.8 s and double up to a 30 s cap, each stretched by a random jitter of up to 100 % (so
0.8-1.6 s, 1.6-3.2 s, ..., 30-60 s: many informers failing together do not retry in lockstep). After a quiet
spell of 2 minutes without a failure the sequence starts over. A server's ``Retry-After`` wins when longer.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    initial: float = 0.8
    cap: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0


class Backoff:
    def __init__(self, policy: BackoffPolicy | None = None, rng: random.Random | None = None,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.policy = policy or BackoffPolicy()
        self._rng = rng or random.Random()
        self._now = now
        self._lock = threading.Lock()
        self._next = self.policy.initial
        self._last: float | None = None

    def next_delay(self, retry_after: float | None = None) -> float:
        """The delay before the next attempt; each call counts as one more failure."""
        p = self.policy
        with self._lock:
            now = self._now()
            if self._last is not None and now - self._last > p.reset_after:
                self._next = p.initial
            self._last = now
            base = self._next
            self._next = min(p.cap, self._next * p.factor)
            delay = base + (self._rng.random() * p.jitter * base if p.jitter > 0 else 0.0)
        return max(delay, retry_after or 0.0)

    def reset(self) -> None:
        with self._lock:
            self._next = self.policy.initial
            self._last = None
