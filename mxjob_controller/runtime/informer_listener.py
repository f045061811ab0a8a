"""One event handler of an informer, with its own queue and named thread (client-go's
``processorListener``). Internal to the informer.

Guarantees:
- A handler sees notifications in exactly the order the informer produced them, one at a time.
- A slow handler delays only itself: the informer appends to an unbounded queue and never waits for it.
- An exception in a handler is logged and delivery goes on with the next notification.
- :meth:`stop` ends the thread promptly; notifications still queued are dropped.

An *inline* listener has no queue and no thread: :meth:`push` calls the handler at once, on the thread that
produced the notification, under the informer's lock (so still one at a time, in order). It is for handlers that
only queue keys and never block, as the controller's own: in CPython, handing every notification to another thread
costs more than such a handler (the GIL and the cache lines change cores), and made the informer ingest 40% slower
(``make bench``: ``ingest``). A slow inline handler delays the whole informer.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from mxjob_controller.runtime.clock import IDLE_WAIT

log = logging.getLogger(__name__)

ADD, UPDATE, DELETE, SYNCED = "add", "update", "delete", "synced"
Notification = tuple[Any, ...]   # (ADD, obj) | (UPDATE, old, new) | (DELETE, obj_or_tombstone) | (SYNCED,)

OnAdd = Callable[[dict[str, Any]], None]
OnUpdate = Callable[[dict[str, Any], dict[str, Any]], None]
OnDelete = Callable[[Any], None]  # the last object seen, or a DeletedFinalStateUnknown


class Listener:
    def __init__(self, thread_name: str, on_add: OnAdd | None, on_update: OnUpdate | None,
                 on_delete: OnDelete | None, resync_period: float, inline: bool = False) -> None:
        self.thread_name = thread_name
        self.inline = inline
        self.on_add = on_add
        self.on_update = on_update
        self.on_delete = on_delete
        self.resync_period = resync_period
        self.next_resync = 0.0
        self.synced = threading.Event()  # set once the notifications of the initial list were all handled
        self.delivered = 0
        self._queue: deque[Notification] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def push(self, note: Notification) -> None:
        if self.inline:
            if not self._stopping:
                self._deliver(note)
            return
        with self._cond:
            self._queue.append(note)
            if len(self._queue) == 1:   # else the thread is awake: it drains the queue before it waits again
                self._cond.notify()

    def pending(self) -> int:
        with self._cond:
            return len(self._queue)

    def start(self) -> None:
        if self._thread is None and not self.inline:
            self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float) -> bool:
        """Stop the thread; False if it did not end within ``timeout`` (a handler still running)."""
        with self._cond:
            self._stopping = True
            self._queue.clear()
            self._cond.notify_all()
        thread = self._thread
        if thread is None or thread is threading.current_thread():
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def _run(self) -> None:
        # The thread takes everything queued at once, so that a burst of notifications costs one wake-up and one
        # lock round-trip, not one per notification (half of the informer's ingest time went to the hand-off).
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait(timeout=IDLE_WAIT)   # push() and stop() notify
                if self._stopping:
                    return
                batch, self._queue = self._queue, deque()
            for note in batch:
                if self._stopping:
                    return
                self._deliver(note)

    def _deliver(self, note: Notification) -> None:
        kind = note[0]
        if kind == SYNCED:
            self.synced.set()
            return
        try:
            if kind == ADD and self.on_add is not None:
                self.on_add(note[1])
            elif kind == UPDATE and self.on_update is not None:
                self.on_update(note[1], note[2])
            elif kind == DELETE and self.on_delete is not None:
                self.on_delete(note[1])
        except Exception:
            log.exception("event handler failed on %s notification (thread %s)", kind, self.thread_name)
        finally:
            self.delivered += 1
