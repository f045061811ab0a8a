"""The client-side rate limit: a token bucket shared by every request of one client (client-go's
``flowcontrol.NewTokenBucketRateLimiter``: ``qps`` tokens a second, at most ``burst`` saved, full at start).

Guarantees: over any window of T seconds at most ``burst + qps*T`` requests are granted; callers are served in
the order they asked (each takes a reservation, as golang.org/x/time/rate does, so a steady stream of callers
cannot starve one); nobody waits longer than the timeout it gave - it gets :class:`RateLimitTimeout` at once
instead, and its reservation is returned.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from mxjob_controller.runtime.client.errors import Cancelled, RateLimitTimeout


class TokenBucket:
    def __init__(self, qps: float, burst: int, now: Callable[[], float] = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs qps > 0 and burst >= 1 (got qps={qps}, burst={burst})")
        self.qps = float(qps)
        self.burst = int(burst)
        self._now = now
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = now()

    def reserve(self, timeout: float | None = None) -> float:
        """Take one token, possibly one that will only exist later; return how long the caller must wait before
        using it. Raises RateLimitTimeout (taking nothing) when that wait would exceed ``timeout``."""
        with self._lock:
            now = self._now()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
            self._last = now
            wait = 0.0 if self._tokens >= 1 else (1 - self._tokens) / self.qps
            if timeout is not None and wait > timeout:
                raise RateLimitTimeout(f"client rate limiter (qps={self.qps:g}, burst={self.burst}) would need "
                                       f"{wait:.3f}s, more than the {timeout:.3f}s allowed")
            self._tokens -= 1
            return wait

    def _give_back(self) -> None:
        with self._lock:
            self._tokens = min(self.burst, self._tokens + 1)

    def acquire(self, timeout: float | None = None, cancel: threading.Event | None = None) -> float:
        """Block until a request may be sent; returns the seconds waited.

        Raises RateLimitTimeout (without waiting) when that would take longer than ``timeout``, and Cancelled
        when ``cancel`` is set during the wait.
        """
        wait = self.reserve(timeout)
        if wait <= 0:
            return 0.0
        if cancel is not None:
            if cancel.wait(wait):
                self._give_back()
                raise Cancelled("cancelled while waiting for the client rate limiter")
        else:
            time.sleep(wait)
        return wait

    def try_acquire(self) -> bool:
        """Take a token only if one is available now."""
        try:
            return self.reserve(0.0) == 0.0
        except RateLimitTimeout:
            return False
