"""The worker loop: N named threads drain a rate-limited work queue and reconcile one key at a time
(controller-runtime's ``Controller``).

    controller = Controller("myjob", reconcile, workers=4, registry=registry)
    informer.add_handler(on_add=lambda obj: controller.queue.add(object_key(obj)), ...)
    controller.start()
    ...
    controller.shutdown_with_drain(timeout=30)

``reconcile(key)`` returns a :class:`Result` (or None, meaning done) or raises. What happens next, as
controller-runtime decides it:

- raised: the exception is logged with the key and its traceback, counted (``result="error"``), and the key is
  re-added with rate limiting (5 ms, 10 ms, 20 ms ... per key, 10 qps overall); the worker thread carries on. A
  request the API server refused as unauthenticated or forbidden (401/403: RBAC) is logged as an error with the
  server's message, which names the verb, resource and namespace, and no traceback; ``on_error`` (if given) is then
  told, e.g. to put a Warning event on the object;
- ``requeue_after > 0``: the key's back-off is reset and it comes back after that many seconds;
- ``requeue``: re-added with rate limiting, like an error but not counted as one;
- otherwise (done): the key's back-off is reset (``forget``).

Guarantees: a key is reconciled by at most one thread at a time (the queue's guarantee; the optional trace lets a
test prove it); no exception ever ends a worker; :meth:`Controller.shutdown_with_drain` starts no new reconcile
once called and returns only when every in-flight one has finished or its deadline has passed.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from mxjob_controller.runtime.client import ApiError
from mxjob_controller.runtime.client.errors import refused
from mxjob_controller.runtime.clock import IDLE_WAIT, Clock
from mxjob_controller.runtime.controller_metrics import (
    ERROR,
    REQUEUE,
    REQUEUE_AFTER,
    SUCCESS,
    ControllerMetrics,
    NoControllerMetrics,
)
from mxjob_controller.runtime.reconcile_trace import ReconcileTrace
from mxjob_controller.runtime.workqueue import QueueShutDownError, RateLimitingQueue

log = logging.getLogger(__name__)

# How long a worker blocks on an empty queue before re-checking whether it should stop (shutdown wakes it anyway).


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for next: nothing (the default), a rate-limited retry, or a retry after a delay."""

    requeue: bool = False
    requeue_after: float = 0.0

    @classmethod
    def after(cls, seconds: float) -> Result:
        return cls(requeue_after=seconds)


DONE = Result()
REQUEUE_RATE_LIMITED = Result(requeue=True)

# A due time that the clocks' rounding puts a hair in the future is looked at again shortly, not lost, and never
# busy-loops: a delayed requeue waits at least this long (seconds).
MIN_REQUEUE = 0.05


def requeue_in(seconds: float) -> Result:
    """Look at the key again in ``seconds`` (at least :data:`MIN_REQUEUE`)."""
    return Result.after(max(seconds, MIN_REQUEUE))


def after_failed_write(error: BaseException, done: int, retry_after: float, extra: dict[str, Any]) -> Result:
    """The next pass after one whose writes (creations, deletions) stopped at ``error``. When ``done`` others went
    through, the API works and the failure was sporadic (a 500, a 429 out of retries): look again ``retry_after``
    seconds later. Otherwise ``error`` is raised, for the growing per-key back-off meant for an API that refuses
    everything (a quota, a webhook down); a large job crawled under sporadic faults with that back-off."""
    if not done:
        raise error
    log.warning("%d writes done, one failed: %s; next pass in %gs", done, error, retry_after, extra=extra)
    return Result.after(retry_after)


def soonest(a: Result, b: Result) -> Result:
    """The result that comes back first (a delayed requeue of 0 means none)."""
    delays = [r.requeue_after for r in (a, b) if r.requeue_after > 0]
    return Result.after(min(delays)) if delays else DONE

Reconcile = Callable[[Hashable], "Result | None"]
ErrorHandler = Callable[[Hashable, Exception], None]
"""Told of every exception a reconcile raised, after it was logged (must not raise; errors are logged)."""


class Controller:
    """Reconciles the keys of :attr:`queue` on ``workers`` threads named ``<name>-worker-<i>``.

    ``queue`` defaults to a :class:`RateLimitingQueue` named ``name`` reporting on ``registry``. ``trace_path``
    appends a JSON line per reconcile (see ``reconcile_trace``).
    """

    def __init__(self, name: str, reconcile: Reconcile, *, workers: int = 1,
                 queue: RateLimitingQueue | None = None, registry: CollectorRegistry | None = None,
                 clock: Clock | None = None, trace_path: str | os.PathLike[str] | None = None,
                 on_error: ErrorHandler | None = None) -> None:
        if not name:
            raise ValueError("a controller needs a name (it labels its threads and metrics)")
        if workers < 1:
            raise ValueError("a controller needs at least one worker")
        self.name = name
        self.workers = workers
        self._reconcile = reconcile
        self.on_error = on_error
        self.queue = queue if queue is not None else RateLimitingQueue(name, registry=registry, controller=name,
                                                                        clock=clock)
        self._metrics: ControllerMetrics | NoControllerMetrics = (
            ControllerMetrics(registry, name, workers) if registry is not None else NoControllerMetrics())
        self._trace = ReconcileTrace(trace_path) if trace_path is not None else None
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> Controller:
        with self._lock:
            if self._threads:
                raise RuntimeError(f"controller {self.name} already started")
            if self._stopping.is_set():
                raise RuntimeError(f"controller {self.name} was shut down; create a new one")
            self._threads = [threading.Thread(target=self._work, name=f"{self.name}-worker-{i}", daemon=True)
                             for i in range(self.workers)]
            for thread in self._threads:
                thread.start()
        log.info("controller %s: started %d workers", self.name, self.workers)
        return self

    def shutdown_with_drain(self, timeout: float) -> bool:
        """Stop taking work, let in-flight reconciles finish, join the workers and the queue's timer thread; False
        if one outlived ``timeout`` (they are daemon threads, so they cannot keep the process alive).

        Keys still queued are dropped (the queue is shut down): after a restart or a leader change the informers'
        initial list queues every object again. The trace file is closed either way: a reconcile that outlives
        the deadline is no longer recorded.
        """
        deadline = time.monotonic() + timeout
        self._stopping.set()
        # Wakes idle workers (in-flight ones finish and see _stopping) and stops the queue's timer thread.
        timer_stopped = self.queue.shutdown(timeout=timeout)
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in threads if t.is_alive() and t is not threading.current_thread()]
        if stuck:
            log.warning("controller %s: reconciles still running after %.1fs: %s", self.name, timeout,
                        ", ".join(stuck))
        if self._trace is not None:
            self._trace.close()
        return not stuck and timer_stopped

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    # --- the worker -----------------------------------------------------------------------------------

    def _work(self) -> None:
        thread = threading.current_thread().name
        while not self._stopping.is_set():
            try:
                key = self.queue.get(timeout=IDLE_WAIT)   # shutting the queue down wakes it
            except TimeoutError:
                continue
            except QueueShutDownError:
                return
            try:
                if self._stopping.is_set():
                    return  # handed out after shutdown began: not started (finally marks it done)
                self._process(key, thread)
            finally:
                self.queue.done(key)

    def _process(self, key: Hashable, thread: str) -> None:
        """Reconcile ``key`` once and act on the outcome; never raises (short of BaseException)."""
        self._metrics.started()
        start = time.monotonic()
        outcome = ERROR
        try:
            try:
                result = self._reconcile(key)
                if result is None:
                    result = DONE
                elif not isinstance(result, Result):
                    raise TypeError(f"reconcile returned {type(result).__name__}, not a Result")
            except Exception as e:
                if refused(e):
                    assert isinstance(e, ApiError)
                    log.error("controller %s: reconcile of %r failed: the API server refused a request (%d %s): %s; "
                              "retrying with back-off", self.name, key, e.code, e.reason, e.message)
                else:
                    log.exception("controller %s: reconcile of %r failed; retrying with back-off", self.name, key)
                self.queue.add_rate_limited(key)
                self._report(key, e)
                return
            outcome = self._follow(key, result)
        finally:
            end = time.monotonic()
            self._metrics.finished(outcome, end - start)
            if self._trace is not None:
                self._trace.record(key, thread, start, end, outcome)

    def _report(self, key: Hashable, error: Exception) -> None:
        if self.on_error is None:
            return
        try:
            self.on_error(key, error)
        except Exception:
            log.exception("controller %s: reporting the failed reconcile of %r failed", self.name, key)

    def _follow(self, key: Hashable, result: Result) -> str:
        """Queue ``key`` as ``result`` asks; the metric result it counts as."""
        if result.requeue_after > 0:
            self.queue.forget(key)
            self.queue.add_after(key, result.requeue_after)
            return REQUEUE_AFTER
        if result.requeue:
            self.queue.add_rate_limited(key)
            return REQUEUE
        self.queue.forget(key)
        return SUCCESS
