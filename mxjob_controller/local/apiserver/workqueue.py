"""A small de-duplicating work queue with one named worker thread, for the server's built-in controllers.

The garbage collector and the namespace controller react to commit hooks, which run on the writer's thread
and must never block: they only ``add`` keys here. The worker does the work later, one key at a time.

Guarantees (those of client-go's workqueue that the controllers rely on):
- a key queued several times before it is processed is processed once;
- a key added while it is being processed is processed again afterwards (no lost wake-up);
- a failed key is retried with exponential backoff; a key that raises :class:`Park` waits for ``unpark()``
  (e.g. an owner kind that is not served yet: retried when the served kinds change);
- ``wait_idle`` tells tests when nothing is queued, delayed or running.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

_BACKOFF_BASE = 0.005
_BACKOFF_MAX = 5.0
_MAX_WAIT = 0.5  # the worker re-checks for stop at least this often
_WARN_AFTER = 8  # consecutive failures of one key before it is logged as a warning


class Park(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a handler: this key cannot make progress until ``unpark()`` (not an error, no backoff)."""


class WorkQueue(Generic[K]):
    def __init__(self, name: str, handle: Callable[[K], None]) -> None:
        self.name = name
        self._handle = handle
        self._cond = threading.Condition()
        self._ready: list[K] = []
        self._queued: set[K] = set()
        self._running: set[K] = set()
        self._dirty: set[K] = set()  # added again while running
        self._delayed: list[tuple[float, int, K]] = []
        self._delayed_keys: set[K] = set()
        self._parked: set[K] = set()
        self._failures: dict[K, int] = {}
        self._seq = itertools.count()
        self._stopping = False
        self._thread: threading.Thread | None = None

    # --- producers (any thread, never blocks for long) ------------------------------------------------

    def add(self, key: K) -> None:
        with self._cond:
            self._parked.discard(key)
            if key in self._running:
                self._dirty.add(key)
            elif key not in self._queued:
                self._queued.add(key)
                self._ready.append(key)
                self._cond.notify_all()

    def add_after(self, key: K, delay: float) -> None:
        with self._cond:
            if key in self._delayed_keys:
                return
            self._delayed_keys.add(key)
            heapq.heappush(self._delayed, (time.monotonic() + delay, next(self._seq), key))
            self._cond.notify_all()

    def unpark(self) -> None:
        """Retry every parked key (the condition they waited on may have changed)."""
        with self._cond:
            parked, self._parked = list(self._parked), set()
        for key in parked:
            self.add(key)

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> None:
        with self._cond:
            if self._thread is not None:
                return
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stopping = True
            thread, self._thread = self._thread, None
            self._cond.notify_all()
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("%s did not stop within %.1fs", self.name, timeout)

    def idle(self) -> bool:
        with self._cond:
            return not (self._ready or self._running or self._delayed)

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is queued, delayed or running (parked keys do not count); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._ready or self._running or self._delayed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, _MAX_WAIT))
            return True

    def parked(self) -> list[K]:
        with self._cond:
            return list(self._parked)

    # --- the worker -----------------------------------------------------------------------------------

    def _next(self) -> K | None:
        with self._cond:
            while not self._stopping:
                now = time.monotonic()
                while self._delayed and self._delayed[0][0] <= now:
                    _, _, key = heapq.heappop(self._delayed)
                    self._delayed_keys.discard(key)
                    if key not in self._queued and key not in self._running:
                        self._queued.add(key)
                        self._ready.append(key)
                    elif key in self._running:
                        self._dirty.add(key)
                if self._ready:
                    key = self._ready.pop(0)
                    self._queued.discard(key)
                    self._running.add(key)
                    return key
                wait = _MAX_WAIT if not self._delayed else min(_MAX_WAIT, self._delayed[0][0] - now)
                self._cond.wait(max(wait, 0.001))
            return None

    def _done(self, key: K, retry_in: float | None, park: bool) -> None:
        with self._cond:
            self._running.discard(key)
            if park:
                self._parked.add(key)
            if key in self._dirty:
                self._dirty.discard(key)
                self._parked.discard(key)
                if key not in self._queued:
                    self._queued.add(key)
                    self._ready.append(key)
            elif retry_in is not None and key not in self._delayed_keys:
                self._delayed_keys.add(key)
                heapq.heappush(self._delayed, (time.monotonic() + retry_in, next(self._seq), key))
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            key = self._next()
            if key is None:
                return
            retry_in: float | None = None
            park = False
            try:
                self._handle(key)
                self._failures.pop(key, None)
            except Park:
                park = True
                self._failures.pop(key, None)
            except Exception:
                n = self._failures.get(key, 0) + 1
                self._failures[key] = n
                retry_in = min(_BACKOFF_BASE * (2 ** (n - 1)), _BACKOFF_MAX)
                level = logging.WARNING if n in (_WARN_AFTER, _WARN_AFTER * 4) else logging.DEBUG
                log.log(level, "%s: %r failed (attempt %d), retrying in %.3fs", self.name, key, n, retry_in,
                        exc_info=True)
            self._done(key, retry_in, park)
