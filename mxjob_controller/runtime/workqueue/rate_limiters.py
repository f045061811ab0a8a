"""How long an item should wait before it is retried (client-go's ``default_rate_limiters.go``).

The controller default, :func:`default_controller_rate_limiter`, is the worst of two limits: per item, an
exponential back-off of 5 ms doubling to 1000 s (reset by :meth:`RateLimiter.forget`); overall, a token bucket of
10 retries a second with bursts of 100, so a storm of failures cannot hammer the API server.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Protocol

from mxjob_controller.runtime.backoff import exponential_delay
from mxjob_controller.runtime.clock import Clock, RealClock
from mxjob_controller.runtime.token_bucket import TokenBucket


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds ``item`` should wait now; counts as one more failure of it."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking ``item`` (it succeeded, or was given up on): its next delay starts from the beginning."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """Failures of ``item`` counted since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter:
    """``base * 2**failures`` seconds, capped at ``max_delay``: 5 ms, 10 ms, 20 ms, ... 1000 s by default."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        with self._lock:
            exponent = self._failures.get(item, 0)
            self._failures[item] = exponent + 1
        return exponential_delay(self.base_delay, exponent, self.max_delay)

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket (golang.org/x/time/rate's ``Reserve().Delay()``): ``burst`` retries at once, then
    one every ``1/qps`` seconds. Every call reserves a token, so delays grow for callers queued behind each other.
    It tracks no items: ``forget`` does nothing and ``num_requeues`` is 0."""

    def __init__(self, qps: float = 10.0, burst: int = 100, clock: Clock | None = None) -> None:
        self.qps = qps
        self.burst = burst
        self._bucket = TokenBucket(qps, burst, now=(clock or RealClock()).now)

    def when(self, item: Hashable) -> float:
        return self._bucket.reserve() or 0.0

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """Asks every limiter (each counts the failure) and returns the longest delay."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Hashable) -> float:
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's DefaultControllerRateLimiter: max(per-item 5 ms -> 1000 s, overall 10 qps / burst 100)."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(10.0, 100, clock))
