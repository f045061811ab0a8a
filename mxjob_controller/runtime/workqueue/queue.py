"""The work queue: fair, stingy, safe for many producers and consumers (client-go's ``workqueue.Typed``).

Guarantees, the ones a controller's correctness rests on:

- **Fair**: items are handed out in the order they were first added (FIFO), except those added with
  :meth:`WorkQueue.add_first`, which go to the front (a new object waiting for its first answer; controller-runtime's
  priority queue orders by priority the same way).
- **Stingy**: an item added several times before a worker gets it is handed out once (the *dirty* set).
- **Never concurrent**: an item is handed to at most one worker at a time. If it is added again while a worker
  has it, it waits and is handed out again after that worker calls :meth:`WorkQueue.done` (the *processing* set),
  so no change is lost and no two threads reconcile the same key.
- **Shutdown**: :meth:`WorkQueue.shutdown` ignores new adds and wakes every waiting worker; workers still get the
  items already queued, then :class:`QueueShutDownError`. :meth:`WorkQueue.shutdown_with_drain` also waits, up to a
  deadline, for in-flight items to be done.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Hashable

from prometheus_client import CollectorRegistry

from mxjob_controller.runtime.clock import Clock, RealClock
from mxjob_controller.runtime.workqueue.metrics import NoMetrics, QueueMetrics, WorkQueueMetrics


class QueueShutDownError(Exception):
    """The queue is shut down and has nothing left to hand out: the worker should return."""


class WorkQueue:
    """A FIFO of hashable items (typically ``namespace/name`` keys) with client-go's work-queue semantics.

    ``name`` labels the metrics; metrics are recorded only when a ``registry`` is given (``controller`` defaults to
    ``name``, as controller-runtime sets it). ``clock`` measures the latencies the metrics report.
    """

    def __init__(self, name: str = "", *, registry: CollectorRegistry | None = None, controller: str | None = None,
                 clock: Clock | None = None) -> None:
        self.name = name
        self.clock: Clock = clock or RealClock()
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[Hashable] = deque()  # every element is dirty and not processing
        self._dirty: set[Hashable] = set()  # everything that needs processing
        self._processing: set[Hashable] = set()  # what workers hold now (may also be dirty)
        self._shutting_down = False
        self._drain = False
        if registry is not None:
            if not name:
                raise ValueError("a work queue needs a name to report metrics")
            self._metrics: QueueMetrics | NoMetrics = WorkQueueMetrics.for_registry(registry).for_queue(
                name, controller or name, self.clock)
        else:
            self._metrics = NoMetrics()

    def add(self, item: Hashable) -> None:
        """Mark ``item`` as needing processing; a no-op once the queue is shutting down."""
        self._add(item, first=False)

    def add_first(self, item: Hashable) -> None:
        """As :meth:`add`, but ahead of everything queued. Use sparingly (what nothing else waited for yet, e.g. a
        new job): items added this way overtake the rest, so a flood of them would starve it."""
        self._add(item, first=True)

    def _add(self, item: Hashable, *, first: bool) -> None:
        with self._cond:
            if self._shutting_down or item in self._dirty:
                return
            self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                return  # done() queues it again
            if first:
                self._queue.appendleft(item)
            else:
                self._queue.append(item)
            self._cond.notify()

    def get(self, timeout: float) -> Hashable:
        """The next item, blocking up to ``timeout`` seconds. The caller must call :meth:`done` with it.

        Raises ``TimeoutError`` if nothing came in time, :class:`QueueShutDownError` once the queue is shut down
        and empty.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self._queue and not self._shutting_down:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"work queue {self.name!r}: nothing to do within {timeout}s")
                self._cond.wait(remaining)
            if not self._queue:
                raise QueueShutDownError(f"work queue {self.name!r} is shut down")
            item = self._queue.popleft()
            self._metrics.get(item)
            self._processing.add(item)
            self._dirty.discard(item)
            return item

    def done(self, item: Hashable) -> None:
        """Mark ``item`` as processed; if it was added again meanwhile, queue it again (at the back).

        A no-op for an item no worker holds (client-go would queue a dirty one twice).
        """
        with self._cond:
            if item not in self._processing:
                return
            self._metrics.done(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()
            elif not self._processing:
                self._cond.notify_all()  # a drain may be waiting for the last in-flight item

    def __len__(self) -> int:
        """Items waiting to be handed out (informational: never gate add/get on it)."""
        with self._cond:
            return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def shutdown(self) -> None:
        """Ignore new adds, wake every waiting worker, and stop any drain in progress from waiting."""
        with self._cond:
            self._drain = False
            self._shutting_down = True
            self._cond.notify_all()
        self._metrics.close()

    def shutdown_with_drain(self, timeout: float) -> bool:
        """Shut down, then wait up to ``timeout`` seconds until no item is being processed.

        Returns True when drained, False on the deadline or if :meth:`shutdown` cut the wait short. Items still
        queued are handed out to workers meanwhile; workers must call :meth:`done` or this waits to the deadline.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            self._drain = True
            self._shutting_down = True
            self._cond.notify_all()
            while (self._processing or self._queue) and self._drain:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(remaining)
            drained = self._drain and not self._processing and not self._queue
        self._metrics.close()
        return drained
