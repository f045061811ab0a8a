"""A work queue that can add an item later (client-go's ``delayingType``): requeue after a failure or a deadline
without a hot loop.

Guarantees: an item given to :meth:`DelayingQueue.add_after` is added once its time comes, never before (by the
queue's clock). If it is already waiting, the earliest of the two times wins and it is added once. A named timer
thread keeps the waiting items in a heap ordered by time; it starts with the first delayed add (a queue that never
delays, or is never used, costs no thread) and stops on shutdown, dropping what still waits, as client-go does.
Shutting down waits for the timer thread no longer than the caller's ``timeout``.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Hashable

from prometheus_client import CollectorRegistry

from mxjob_controller.runtime.clock import Clock
from mxjob_controller.runtime.workqueue.queue import WorkQueue

# The timer thread re-checks at least this often (clock seconds): insurance, as client-go's 10 s heartbeat.
MAX_WAIT = 10.0
DEFAULT_SHUTDOWN_TIMEOUT = 5.0  # how long shutdown() waits for the timer thread when the caller names no deadline

_Entry = tuple[float, int, Hashable]  # (ready at, insertion order to break ties FIFO, item)


class DelayingQueue(WorkQueue):
    """A :class:`WorkQueue` with :meth:`add_after`."""

    def __init__(self, name: str = "", *, registry: CollectorRegistry | None = None, controller: str | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(name, registry=registry, controller=controller, clock=clock)
        self._timer_cond = threading.Condition(threading.Lock())
        self._waiting: list[_Entry] = []  # a heap; entries superseded by an earlier time stay until popped
        self._waiting_by_item: dict[Hashable, _Entry] = {}  # the live entry of each waiting item
        self._order = itertools.count()
        # Set without the lock, so a stop is seen even if the timer thread is stuck holding it.
        self._timer_stop = threading.Event()
        self._timer: threading.Thread | None = None  # started by the first delayed add

    def add_after(self, item: Hashable, delay: float) -> None:
        """Add ``item`` after ``delay`` seconds (at once if ``delay <= 0``); counts as a retry in the metrics."""
        if self.shutting_down:
            return
        self._metrics.retry()
        if delay <= 0:
            self.add(item)
            return
        entry = (self.clock.now() + delay, next(self._order), item)
        with self._timer_cond:
            if self._timer_stop.is_set():
                return
            if self._timer is None:
                self._timer = threading.Thread(target=self._run_timer, name=f"workqueue-delay:{self.name or id(self)}",
                                               daemon=True)
                self._timer.start()
            known = self._waiting_by_item.get(item)
            if known is not None and known[0] <= entry[0]:
                return  # already due no later than that
            self._waiting_by_item[item] = entry
            heapq.heappush(self._waiting, entry)
            if len(self._waiting) > 2 * len(self._waiting_by_item) + 16:
                # Mostly superseded entries: rebuild, so memory follows the items waiting, not the calls made.
                self._waiting = list(self._waiting_by_item.values())
                heapq.heapify(self._waiting)
            if self._waiting[0] is entry:
                self._timer_cond.notify()  # the timer sleeps until an older, later head: wake it

    def shutdown(self, timeout: float = DEFAULT_SHUTDOWN_TIMEOUT) -> bool:
        """Shut down (see :meth:`WorkQueue.shutdown`) and stop the timer thread, waiting for it at most
        ``timeout`` seconds; False if it was still running then."""
        super().shutdown()
        return self._stop_timer(timeout)

    def shutdown_with_drain(self, timeout: float) -> bool:
        """As :meth:`WorkQueue.shutdown_with_drain`, the timer's stop included in ``timeout``."""
        deadline = time.monotonic() + timeout
        timer_stopped = self._stop_timer(timeout)
        return super().shutdown_with_drain(max(0.0, deadline - time.monotonic())) and timer_stopped

    def _stop_timer(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        self._timer_stop.set()
        if self._timer_cond.acquire(timeout=max(0.0, timeout)):
            try:
                self._waiting.clear()
                self._waiting_by_item.clear()
                self._timer_cond.notify_all()
                timer = self._timer
            finally:
                self._timer_cond.release()
        else:
            timer = self._timer
        if timer is None or timer is threading.current_thread():
            return True
        timer.join(max(0.0, deadline - time.monotonic()))
        return not timer.is_alive()

    def _run_timer(self) -> None:
        with self._timer_cond:
            while not self._timer_stop.is_set():
                now = self.clock.now()
                while self._waiting and self._waiting[0][0] <= now:
                    entry = heapq.heappop(self._waiting)
                    item = entry[2]
                    if self._waiting_by_item.get(item) is entry:
                        del self._waiting_by_item[item]
                        self.add(item)
                while self._waiting and self._waiting_by_item.get(self._waiting[0][2]) is not self._waiting[0]:
                    heapq.heappop(self._waiting)  # superseded by an earlier time: no reason to wake for it
                deadline = min(self._waiting[0][0], now + MAX_WAIT) if self._waiting else now + MAX_WAIT
                self.clock.wait_until(self._timer_cond, deadline)
