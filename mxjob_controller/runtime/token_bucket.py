"""A token bucket: ``qps`` tokens a second, at most ``burst`` saved, full at start (golang.org/x/time/rate's
``Limiter`` as client-go uses it, for the API client's request rate and the work queue's overall retry rate).

Arithmetic only: it never sleeps. :meth:`TokenBucket.reserve` takes a token, possibly one that will only exist later,
and says how long the caller must wait before using it; the caller waits as it sees fit (interruptibly).

Guarantees: over any window of T seconds at most ``burst + qps*T`` tokens become usable; callers are served in the
order they reserved (a steady stream of callers cannot starve one); a reservation refused for exceeding the
caller's ``max_wait`` takes nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


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

    def reserve(self, max_wait: float | None = None) -> float | None:
        """Take one token; return the seconds until it may be used (0: at once). None, taking nothing, when that
        wait would exceed ``max_wait``."""
        with self._lock:
            now = self._now()
            if now > self._last:
                self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
                self._last = now
            wait = 0.0 if self._tokens >= 1 else (1 - self._tokens) / self.qps
            if max_wait is not None and wait > max_wait:
                return None
            self._tokens -= 1
            return wait

    def give_back(self) -> None:
        """Return a reserved token that will not be used (its caller gave up waiting)."""
        with self._lock:
            self._tokens = min(float(self.burst), self._tokens + 1)
