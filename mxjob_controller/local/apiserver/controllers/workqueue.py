"""The work queue of the server's built-in controllers (garbage collector, namespace controller, namespace
content), and :class:`QueueController`, the lifecycle they share around it.

It is the runtime's rate-limited queue (:mod:`mxjob_controller.runtime.workqueue`, client-go's semantics: a key
queued several times is handled once, a key added while it is handled is handled again afterwards, a failed key
is retried with exponential backoff) driven by one named worker thread. Commit hooks run under the store's lock
and must never block: they only ``add`` keys here; the worker does the work later, one key at a time.

What it adds, because only these controllers need it:

- parking: a handler that raises :class:`Park` has its key wait, without backoff, until :meth:`ControllerQueue.unpark`
  (an owner whose kind is not served yet waits for the served kinds to change, as kube's garbage collector does);
- :meth:`ControllerQueue.wait_idle`: true once no key is queued, waiting for a retry, or being handled (parked
  keys do not count), so tests and ``APIServer.wait_idle`` know the controllers are done.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.storage.watch import Event
from mxjob_controller.runtime.workqueue import (
    ItemExponentialFailureRateLimiter,
    QueueShutDownError,
    RateLimitingQueue,
)

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

_BACKOFF_BASE = 0.005
_BACKOFF_MAX = 5.0
_MAX_WAIT = 0.5  # the worker re-checks for stop at least this often
_WARN_AFTER = 8  # consecutive failures of one key before it is logged as a warning


class Park(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a handler: this key cannot make progress until ``unpark()`` (not an error, no backoff)."""


_DONE, _PARKED, _FAILED = "done", "parked", "failed"


class ControllerQueue(Generic[K]):
    """A rate-limited work queue handled by one thread named ``name``; start it once, stop it once."""

    def __init__(self, name: str, handle: Callable[[K], None]) -> None:
        self.name = name
        self._handle = handle
        self._queue = RateLimitingQueue(name, rate_limiter=ItemExponentialFailureRateLimiter(_BACKOFF_BASE,
                                                                                             _BACKOFF_MAX))
        self._cond = threading.Condition()
        self._pending: set[K] = set()  # queued, waiting for a retry, or being handled
        self._handling: K | None = None
        self._added_while_handled = False
        self._parked: set[K] = set()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # --- producers (any thread, never blocks for long) ------------------------------------------------

    def add(self, key: K) -> None:
        with self._cond:
            self._parked.discard(key)
            self._pending.add(key)
            if key == self._handling:
                self._added_while_handled = True
        self._queue.add(key)

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
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Drop what is queued, let the key in hand finish for up to ``timeout`` seconds; False if it did not."""
        deadline = time.monotonic() + timeout
        self._stopping.set()
        self._queue.shutdown()  # wakes the worker; the queue's timer thread (retries) ends at once
        with self._cond:
            thread = self._thread
        if thread is None:
            return True
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            log.warning("%s did not stop within %.1fs", self.name, timeout)
            return False
        return True

    def idle(self) -> bool:
        with self._cond:
            return not self._pending

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is queued, waiting for a retry, or handled (parked keys do not count); False on
        timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, _MAX_WAIT))
            return True

    def parked(self) -> list[K]:
        with self._cond:
            return list(self._parked)

    # --- the worker -----------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                key = self._queue.get(_MAX_WAIT)
            except TimeoutError:
                continue
            except QueueShutDownError:
                return
            try:
                if not self._stopping.is_set():
                    self._handle_one(key)
            finally:
                self._queue.done(key)

    def _handle_one(self, key: K) -> None:
        with self._cond:
            self._handling, self._added_while_handled = key, False
        outcome = self._call(key)
        with self._cond:
            again = self._added_while_handled
            self._handling = None
            if outcome == _PARKED and not again:
                self._parked.add(key)
            if outcome != _FAILED and not again:
                self._pending.discard(key)
            self._cond.notify_all()
        if outcome != _FAILED:
            self._queue.forget(key)
        elif not again:  # added again meanwhile: the queue hands it out once more at once, that is the retry
            self._queue.add_rate_limited(key)

    def _call(self, key: K) -> str:
        try:
            self._handle(key)
            return _DONE
        except Park:
            return _PARKED
        except Exception:
            attempt = self._queue.num_requeues(key) + 1
            level = logging.WARNING if attempt in (_WARN_AFTER, _WARN_AFTER * 4) else logging.DEBUG
            log.log(level, "%s: %r failed (attempt %d), retrying with backoff", self.name, key, attempt,
                    exc_info=True)
            return _FAILED


class QueueController(Generic[K]):
    """A built-in controller of the server: store commits are recorded by :meth:`_record` (on the writer's thread,
    under the store's lock: record and ``add`` keys, nothing more) and the keys handled by ``handle`` on the
    queue's thread ``name``. Subclasses set their own state, then call this ``__init__``, which registers the hook.
    """

    def __init__(self, name: str, store: Store, handle: Callable[[K], None]) -> None:
        self._queue: ControllerQueue[K] = ControllerQueue(name, handle)
        store.add_commit_hook(self._on_commit)

    def start(self) -> None:
        self._queue.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """False if the work in hand did not end within ``timeout`` seconds."""
        return self._queue.stop(timeout)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """True once nothing is queued or in progress (parked keys do not count); False on timeout."""
        return self._queue.wait_idle(timeout)

    def _on_commit(self, key: str, ev: Event) -> None:
        try:
            self._record(key, ev)
        except Exception:  # the write is committed: a bug here must not fail the writer's request
            log.exception("%s: cannot record %s event on %s", self._queue.name, ev.type, key)

    def _record(self, key: str, ev: Event) -> None:
        """Queue the keys ``ev`` (a committed write to storage key ``key``) makes work for."""
        raise NotImplementedError
