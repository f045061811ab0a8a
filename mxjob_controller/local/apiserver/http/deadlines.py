"""Request deadlines: one thread that fires a callback for each request still unanswered at its deadline.

kube-apiserver ends a non-long-running request after ``--request-timeout`` (60 s) with a 504 ``Status``, while
the handler's goroutine runs on, its result thrown away. A Python thread cannot be stopped either, so it is the
same here: the HTTP layer answers 504 from this thread and drops the handler's late answer. One thread for all
requests, not a timer each: a request that ends in time costs a heap entry, cancelled.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 60.0  # kube-apiserver's --request-timeout default
_MAX_WAIT = 1.0  # the longest the thread sleeps between looks at the clock and the stop flag


@dataclass(order=True, slots=True)
class Deadline:
    """One registered deadline; :meth:`cancel` before it passes and the callback never runs."""

    at: float
    seq: int
    callback: Callable[[], float | None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class Deadlines:
    """Runs each callback when its deadline passes. A callback may return a number of seconds to be asked again
    after (it could not act yet); else it is done. Callbacks run on this thread, one at a time: they must not
    block for long."""

    def __init__(self, name: str = "apiserver-request-deadlines") -> None:
        self._heap: list[Deadline] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> Deadlines:
        self._thread.start()
        return self

    def add(self, at: float, callback: Callable[[], float | None]) -> Deadline:
        entry = Deadline(at, next(self._seq), callback)
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._heap[0] is entry:
                self._cond.notify()
        return entry

    def stop(self, timeout: float = 1.0) -> bool:
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    while self._heap and self._heap[0].cancelled:
                        heapq.heappop(self._heap)
                    now = time.monotonic()
                    if self._heap and self._heap[0].at <= now:
                        entry = heapq.heappop(self._heap)
                        break
                    wait = min(_MAX_WAIT, self._heap[0].at - now) if self._heap else _MAX_WAIT
                    self._cond.wait(wait)
                else:
                    return
            try:
                again = entry.callback()
            except Exception:
                log.exception("request deadline callback failed")
                again = None
            if again is not None and not entry.cancelled:
                entry.at = time.monotonic() + again
                with self._cond:
                    if not self._stopped:
                        heapq.heappush(self._heap, entry)
