"""A small, bounded pool of named threads for a controller's API writes (creates, deletes, patches).

Why not ``concurrent.futures``: every thread of this process is named, stops within a deadline, and every wait has a
timeout; ``ThreadPoolExecutor.shutdown`` cannot be bounded. Tasks are plain callables; each write they make has
the API client's own timeouts, so a task never runs unbounded.

Guarantees: at most ``size`` tasks run at once, in submission order; a task's exception is kept for its submitter,
never lost and never fatal to the thread; after :meth:`WritePool.stop` no new task starts and queued ones fail with
:class:`PoolStoppedError`.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

_GET_TIMEOUT = 0.5


class PoolStoppedError(RuntimeError):
    """The pool was stopped before the task could run."""


class Task:
    """One submitted callable: wait for it, then read :attr:`result` or :attr:`error`."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.result: Any = None
        self.error: BaseException | None = None
        self._done = threading.Event()

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as e:  # kept for the submitter, who decides
            self.error = e
        finally:
            self._done.set()

    def fail(self, error: BaseException) -> None:
        self.error = error
        self._done.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)

    @property
    def done(self) -> bool:
        return self._done.is_set()


class WritePool:
    def __init__(self, name: str, size: int) -> None:
        if size < 1:
            raise ValueError("a write pool needs at least one thread")
        self.name = name
        self.size = size
        self._tasks: queue.Queue[Task | None] = queue.Queue()   # None wakes a thread to stop
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> WritePool:
        with self._lock:
            if self._stopping.is_set():
                raise PoolStoppedError(f"write pool {self.name} was stopped")
            self._start_threads()
        return self

    def _start_threads(self) -> None:
        """Start the threads if not yet started (the caller holds the lock)."""
        if not self._threads:
            self._threads = [threading.Thread(target=self._work, name=f"{self.name}-{i}", daemon=True)
                             for i in range(self.size)]
            for thread in self._threads:
                thread.start()

    def submit(self, fn: Callable[[], Any]) -> Task:
        task = Task(fn)
        with self._lock:   # against stop(): a task is either queued before the drain, or refused
            if self._stopping.is_set():
                task.fail(PoolStoppedError(f"write pool {self.name} is stopped"))
            else:
                self._start_threads()
                self._tasks.put(task)
        return task

    def stop(self, timeout: float) -> bool:
        """Start no new task, fail the queued ones, join the threads; False if one outlived ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._stopping.set()
        while True:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is not None:
                task.fail(PoolStoppedError(f"write pool {self.name} stopped"))
        with self._lock:
            threads = list(self._threads)
        for _ in threads:
            self._tasks.put(None)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        stuck = [t.name for t in threads if t.is_alive()]
        if stuck:
            log.warning("write pool %s: still writing after %.1fs: %s", self.name, timeout, ", ".join(stuck))
        return not stuck

    def _work(self) -> None:
        while not self._stopping.is_set():
            try:
                task = self._tasks.get(timeout=_GET_TIMEOUT)
            except queue.Empty:
                continue
            if task is None:
                return
            if self._stopping.is_set():
                task.fail(PoolStoppedError(f"write pool {self.name} stopped"))
                continue
            task.run()
