"""Watch plumbing: change events, per-resource bounded history, and one queue per watcher.

Guarantees:
- Events of one storage key reach a watcher in resourceVersion order, with none skipped: the watcher is
  registered and its backlog (history after the requested version) queued under the store's lock.
- A watcher that falls too far behind (by events, or by the bytes of the events queued since it started) is
  closed rather than allowed to block writers or hold memory (kube-apiserver closes a slow watcher too); its
  client resumes from the last version it saw. What a watch starts with (the current objects, or the history it
  resumes from) is not counted: those are alive already, as kube's watch cache sends its init events apart.
- An object's encodings other than its stored JSON (protobuf, another version, a Table) are made once per
  version and form and shared by every watcher (:class:`SharedEncodings`), within a bound of bytes.
- A resume from a version older than the retained history is refused (410 Expired).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from mxjob_controller.kube.vocabulary import ADDED, DELETED, MODIFIED
from mxjob_controller.local.apiserver.storage.json_parts import Spans, encode_json


class Entry:
    """One version of an object. ``obj`` is never mutated once stored; ``raw`` is its JSON.

    The store gives every entry it keeps its ``raw`` at commit time (so a stored object can always be served);
    entries built for an answer only (dry runs) encode lazily.
    """

    __slots__ = ("_raw", "obj", "rv", "spans")

    def __init__(self, obj: dict, rv: int, raw: bytes | None = None, spans: Spans | None = None) -> None:
        self.obj = obj
        self.rv = rv
        self._raw = raw
        self.spans = spans   # where its parts are in ``raw`` (json_parts.encode_stored), for the next version's

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = encode_json(self.obj)
        return self._raw


@dataclass(slots=True)
class Event:
    type: str
    rv: int
    entry: Entry  # the new state; for DELETED the last state carrying the deletion's resourceVersion
    prev: Entry | None
    time: float


def event_bytes(event: Event) -> int:
    """The encoded bytes an event keeps alive beside the current objects: the version it replaced (a modification's
    or deletion's ``prev``) and a deletion's final state. Summed over a history, each retained version counts once:
    an event's own new version is the next event's ``prev``, or still current (counted with the objects)."""
    held = len(event.prev.raw) if event.prev is not None else 0
    return held + len(event.entry.raw) if event.type == DELETED else held


class History:
    """The recent events of one storage key, bounded by count and age (the store bounds their bytes across keys).

    ``compacted_rv`` is the highest resourceVersion no longer retained: a watch can resume from any
    version ≥ it. ``bytes`` is what the retained events keep alive (:func:`event_bytes`).
    """

    def __init__(self, max_events: int, max_age: float) -> None:
        self.max_events = max_events
        self.max_age = max_age
        self.events: deque[Event] = deque()
        self.compacted_rv = 0
        self.bytes = 0

    def append(self, event: Event) -> None:
        self.events.append(event)
        self.bytes += event_bytes(event)
        while len(self.events) > self.max_events:
            self.drop_oldest()
        self.prune(event.time)

    def drop_oldest(self) -> None:
        event = self.events.popleft()
        self.bytes -= event_bytes(event)
        self.compacted_rv = max(self.compacted_rv, event.rv)

    def prune(self, at: float) -> None:
        """Forget the events older than ``max_age`` at time ``at`` (0: age keeps everything)."""
        if self.max_age > 0:
            horizon = at - self.max_age
            while self.events and self.events[0].time < horizon:
                self.drop_oldest()

    def compact(self, upto_rv: int) -> None:
        """Forget everything up to ``upto_rv`` (the fault injector's "compaction")."""
        while self.events and self.events[0].rv <= upto_rv:
            self.drop_oldest()
        self.compacted_rv = max(self.compacted_rv, upto_rv)

    def since(self, rv: int) -> list[Event]:
        return [e for e in self.events if e.rv > rv]

    def oldest_available(self) -> int:
        return self.events[0].rv if self.events else self.compacted_rv + 1


Matcher = Callable[[dict], bool]


MAX_BACKLOG_BYTES = 16 << 20  # the encoded bytes of live events a watcher may have queued (ten objects at etcd's limit)
SHARED_ENCODINGS_BYTES = 64 << 20  # the shared encodings kept, all watchers together


class Watcher:
    """One watch request's queue. Writers ``offer`` under the store lock; the HTTP thread ``next``s.

    An event that neither the new nor the previous state of its object matches is dropped at ``offer``: a filtered
    watcher (a controller's pods of one operator) is not woken for the objects of others. The queue is the C
    ``SimpleQueue``: a writer offers to every watcher of a kind under the store's lock, so each offer must cost
    little. The backlog's bytes are two counters, each written by one side (the writer adds under the store's
    lock, the reader counts what it took), so neither needs a lock of its own."""

    _ids = iter(range(1, 1 << 62))

    def __init__(self, key: str, matcher: Matcher, max_queue: int, max_bytes: int = MAX_BACKLOG_BYTES) -> None:
        self.id = next(self._ids)
        self.key = key
        self.matcher = matcher
        self.max_queue = max_queue
        self.max_bytes = max_bytes
        self._queue: queue.SimpleQueue[tuple[Event, int] | None] = queue.SimpleQueue()  # None: wake up, closed
        self._bytes_in = 0  # encoded bytes of the live events queued, ever (writers, under the store's lock)
        self._bytes_out = 0  # ... and of those taken (the reader)
        self.closed = threading.Event()
        self.overflowed = False
        self.close_reason = ""
        self.events_sent = 0
        self.after = 0   # events at or before this version are not for it (a watch from a version not reached yet)

    def offer(self, event: Event, initial: bool = False) -> bool:
        """Queue ``event`` if it concerns this watcher; returns False (and closes) when the watcher is too far
        behind. ``initial``: part of what the watch starts with, which the byte budget does not count."""
        if self.closed.is_set():
            return False
        if event.rv <= self.after or not self._concerns(event):
            return True
        if self._queue.qsize() >= self.max_queue:
            self.overflowed = True
            self.close("watcher too slow: its queue of events is full")
            return False
        size = 0 if initial else len(event.entry.raw)
        if size and self.max_bytes and self.backlog_bytes() + size > self.max_bytes:
            self.overflowed = True
            self.close(f"watcher too slow: its backlog of events is over {self.max_bytes} bytes")
            return False
        self._bytes_in += size
        self._queue.put((event, size))
        return True

    def backlog_bytes(self) -> int:
        """The encoded bytes of the live events queued and not yet taken."""
        return self._bytes_in - self._bytes_out

    def _concerns(self, event: Event) -> bool:
        """Whether :meth:`translate` could send anything for ``event`` (a matcher that fails says yes: the HTTP
        thread's translate then meets the failure, never the writer's commit)."""
        try:
            return self.matcher(event.entry.obj) or (
                event.type == MODIFIED and event.prev is not None and self.matcher(event.prev.obj))
        except Exception:
            return True

    def next(self, timeout: float) -> Event | None:
        """The next event, or None after ``timeout`` seconds or as soon as the watcher is closed."""
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is None:
            return None
        event, size = item
        self._bytes_out += size
        return event

    def pending(self) -> bool:
        return not self._queue.empty()

    def mark(self, event: Event) -> None:
        """Queue an event for this reader whatever its filter: the end of a WatchList's initial events."""
        if not self.closed.is_set():
            self._queue.put((event, 0))   # not counted: the byte budget is for live events

    def close(self, reason: str = "") -> None:
        if not self.closed.is_set():
            self.close_reason = reason
            self.closed.set()
            self._queue.put(None)  # wake a reader waiting in next(): its stream ends now (after what is queued)

    def translate(self, event: Event) -> tuple[str, Entry] | None:
        """Apply this watcher's filter the way kube's watch cache does.

        An object that starts matching is ADDED, one that stops matching is DELETED, so a filtered watch
        mirrors exactly the filtered list.
        """
        new_match = self.matcher(event.entry.obj)
        if event.type == MODIFIED:
            old_match = event.prev is not None and self.matcher(event.prev.obj)
            if new_match and old_match:
                return MODIFIED, event.entry
            if new_match:
                return ADDED, event.entry
            if old_match:
                return DELETED, event.entry
            return None
        return (event.type, event.entry) if new_match else None


class SharedEncodings:
    """The encodings of stored objects that watchers share (a protobuf form, another version, a Table), each made
    once per object version and form (``key``), the most recently used kept up to ``max_bytes`` in all.

    Made outside the lock (a conversion may call a webhook): two watchers asking at once may both make one, and the
    first kept is what both send. An encoding larger than the bound is made for each asker and kept by none."""

    def __init__(self, max_bytes: int = SHARED_ENCODINGS_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], bytes]) -> bytes:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
                return value
        value = make()
        if len(value) > self.max_bytes:
            return value
        with self._lock:
            kept = self._items.get(key)
            if kept is not None:
                return kept
            self._items[key] = value
            self._bytes += len(value)
            while self._bytes > self.max_bytes:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= len(dropped)
        return value

    def size(self) -> tuple[int, int]:
        """(encodings kept, their bytes)."""
        with self._lock:
            return len(self._items), self._bytes


def now() -> float:
    return time.time()
