"""Retries the server asked for (429, or a 5xx, with ``Retry-After``): how long to wait, and their count on
``/metrics`` as client-go's ``rest_client_request_retries_total{code, host, verb}``.

Why jitter: APF answers every client it turns away with the same ``Retry-After``; clients that all come back on
the same tick are turned away together again. Each wait is the server's, plus up to :data:`RETRY_JITTER` of it at
random: never sooner than asked (the server would refuse again), and bounded by the call's deadline.

Why a tally rather than a prometheus Counter: the client exists before the process's registry does (the manager
connects first), and one client's siblings (informers, events) share its tally; the registry reads the tallies when
scraped (``runtime/rest_client_metrics.py``, apart so that importing the client does not load prometheus_client).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable

RETRY_JITTER = 0.2   # at most this fraction of the server's Retry-After is added at random


def jittered_wait(retry_after: float, left: float, jitter: float = RETRY_JITTER,
                  draw: Callable[[], float] = random.random) -> float | None:
    """Seconds to wait before a retry the server asked for in ``retry_after`` seconds, ``left`` seconds before the
    call's deadline: the server's wait plus up to ``jitter`` of it, cut at the deadline; None when even the server's
    own wait does not fit."""
    base = max(0.0, retry_after)
    if base > left:
        return None
    return min(base * (1.0 + jitter * draw()), left)


class RetryTally:
    """Retries counted by (status code, HTTP verb), for one server (``host``); thread-safe."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._lock = threading.Lock()
        self._counts: Counter[tuple[int, str]] = Counter()

    def count(self, code: int, verb: str) -> None:
        with self._lock:
            self._counts[(code, verb)] += 1

    def snapshot(self) -> dict[tuple[int, str], int]:
        with self._lock:
            return dict(self._counts)
