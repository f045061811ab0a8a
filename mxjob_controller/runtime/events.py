"""Kubernetes Events about objects, written the way client-go's ``record.EventRecorder`` writes them.

    recorder = EventRecorder(client, component="my-operator").start()
    recorder.event(ObjectReference.of(job, "example.com/v1", "MyJob"), NORMAL, "SuccessfulCreatePod",
                   "Created pod: my-job-worker-0")
    ...
    recorder.stop(timeout=5)   # writes what is queued, within the deadline

What gets written: a core/v1 Event in the object's namespace, named ``<object name>.<hex nanoseconds>``, with
``source.component`` and ``reportingComponent`` set to ``component`` (``source.host`` / ``reportingInstance`` to
``host``), ``count`` 1 and first/last timestamps of the moment :meth:`EventRecorder.event` was called (or of its
``at``). Repeats and
floods are correlated as client-go does (see ``event_correlator``): a repeat PATCHes ``count`` and
``lastTimestamp`` of the existing Event.

Guarantees:
- :meth:`EventRecorder.event` never blocks and never raises: the event goes to a bounded queue (a reconcile must
  never wait on events).
- Two queues. Ordinary events wait in a queue bounded by their memory, ``queue_bytes`` (16 MiB, about 12,000
  events: a burst of thousands of jobs' creations; each event's size is estimated from its strings, see
  :meth:`EventRecorder.queued_bytes`), and by count only if ``queue_size`` is given (client-go's
  ``maxQueuedEvents`` was 1,000: most of a 300-job burst's events were dropped). Past the bound the incoming
  ordinary event is dropped, before its body is built, as client-go's broadcaster drops what its full channel
  cannot take, and counted in ``dropped``; the first drop is logged, then one line per ``DROP_LOG_INTERVAL``
  (10 s) at most, counting the drops since (client-go logs each one: thousands of lines in a flood, adding to the load).
  *Important* events (``important=True``: a job's ``Succeeded`` / ``Failed`` / ``Restarting``, the caller
  decides) wait in a queue of their own, are written first, are never dropped to make room for ordinary ones nor by
  the correlator's spam filter, and are tried ``important_max_tries`` times (client-go's 12) on server errors.
  Their queue is bounded too (``important_queue_size``, 10,000: memory, not a rate); beyond it one is dropped with
  an error line, and forgotten, so :meth:`EventRecorder.event_once` can record it again later.
- Past the bound, nothing waits and nothing grows: the controller goes on at full speed, the events already queued
  are all written (in order), and those recorded while the queue is full are lost (counted, logged), until the
  writers have made room. Only a backlog of more than the bound's worth of events gets there: the writers and
  the events budget keep up with a burst of hundreds of jobs.
- :meth:`EventRecorder.event_once` records an important event unless this process already recorded one with that
  reason about that object, or the API already holds one (the writer looks with one LIST, ``fieldSelector
  involvedObject.uid=…,reason=…``, before it creates it): after a restart, a controller announces what its
  predecessor may have left unwritten, and never writes it twice. A look-up that fails (after the retries) writes
  nothing and forgets the event, so a later ``event_once`` looks again: a gap is preferred to a duplicate.
- ``writers`` named threads (``events-<component>-<i>``) correlate and write, each for a share of the objects (by
  uid, :func:`shard_of`), with a correlator of its own (see ``event_sink``): one object's events are written in the
  order recorded, its important ones first, and a burst about many jobs is written by all of them at once. A
  job's terminal event waits for at most the one write its writer has in flight, never for the backlog.
- Give the recorder a client of its own (:meth:`Client.sibling`, as controller-runtime's recorder provider builds
  its events client from the manager's config, and the kubelet has ``--event-qps``): every request takes a token
  from its client's bucket, so on a shared client events wait behind pod creations and pod creations behind events.
- A write the server refuses (invalid, namespace terminating) is logged and dropped; a transport failure or a 5xx is
  retried a few times (``max_tries``, ``retry_delay`` apart), never once the recorder is stopping.
- :meth:`stop` writes what is queued (important events first) within its deadline, then drops the rest and ends
  the writers.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache

from mxjob_controller.kube.names import dns1123_subdomain_errors
from mxjob_controller.kube.timefmt import rfc3339
from mxjob_controller.runtime.client import Client
from mxjob_controller.runtime.clock import IDLE_WAIT
from mxjob_controller.runtime.event_correlator import CorrelatorOptions
from mxjob_controller.runtime.event_sink import EventSink

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
EVENT_TYPES = (NORMAL, WARNING)
DEFAULT_QUEUE_SIZE: int | None = None   # no bound by count: ordinary events are bounded by their bytes
# What queued ordinary events may hold: about 12,000 events, a burst of a few thousand jobs' creations (client-go's
# 1,000 events dropped most of a 300-job burst's).
DEFAULT_QUEUE_BYTES = 16 * 1024 * 1024
_EVENT_BASE_BYTES = 1280   # a queued event's memory besides its strings (its dicts, ObjectReference, stamps)
DEFAULT_IMPORTANT_QUEUE_SIZE = 10_000   # a memory bound: ten thousand jobs ending faster than their events are written
IMPORTANT_MAX_TRIES = 12                # client-go's maxTriesPerEvent
# Writer threads, each the sink of a share of the objects: a write mostly waits on the API (the GIL is free meanwhile),
# so one thread writes at the pace of the server's latency, and a burst of jobs records events faster than that.
DEFAULT_EVENT_WRITERS = 4
# The events client's budget. A controller writes about one event per API write (SuccessfulCreatePod...) plus some
# with none (ExitedWithCode, transitions), so the events budget must carry the main client's pace: at 20
# requests/s the kubelet's --event-qps / --event-burst (50/100) did, but without a client-side limit (a server with
# flow control) a burst of jobs writes children at the server's pace, and 50 events/s left the backlog written
# long after the children. A burst well above the kubelet's absorbs the start of such a burst.
DEFAULT_EVENT_QPS = 150.0
DEFAULT_EVENT_BURST = 300
# Seconds a node's part (the local kubelet, the local scheduler) gives its event budget's backlog at a stop: the
# rest is dropped, said in one line, as kube's kubelet drops its broadcaster's queue (at 50 a second, waiting out a
# burst's backlog would hold the stop for its whole timeout).
NODE_EVENTS_AT_STOP = 1.0

DROP_LOG_INTERVAL = 10.0   # seconds between log lines about dropped ordinary events (each line counts them)


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """The ``involvedObject`` of an Event (core/v1 ObjectReference)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str = ""
    field_path: str = ""        # a part of the object: ``spec.containers{main}`` (a kubelet's container events)

    @classmethod
    def of(cls, obj: dict[str, Any], api_version: str | None = None, kind: str | None = None) -> ObjectReference:
        """A reference to ``obj``; ``api_version`` and ``kind`` for objects whose dict lacks them (list items)."""
        meta = obj.get("metadata") or {}
        return cls(api_version or obj.get("apiVersion") or "", kind or obj.get("kind") or "",
                   meta.get("namespace") or "", meta.get("name") or "", meta.get("uid") or "",
                   meta.get("resourceVersion") or "")

    def to_dict(self) -> dict[str, str]:
        out = {"kind": self.kind, "namespace": self.namespace, "name": self.name, "uid": self.uid,
               "apiVersion": self.api_version, "resourceVersion": self.resource_version, "fieldPath": self.field_path}
        return {k: v for k, v in out.items() if v}


@dataclass(slots=True)
class _Queued:
    body: dict[str, Any]
    important: bool
    once: bool = False   # look for an existing Event with its reason about its object before writing it
    size: int = 0        # its share of the ordinary queue's bytes


@dataclass(slots=True)
class _Shard:
    """One writer thread and the queues of the objects given to it: all the events of an object go to one shard,
    so they keep their order and one correlator sees them all."""

    wake: threading.Condition
    sink: EventSink
    important: deque[_Queued] = field(default_factory=deque)
    ordinary: deque[_Queued] = field(default_factory=deque)
    thread: threading.Thread | None = None


class EventRecorder:
    def __init__(self, client: Client, component: str, *, host: str = "", queue_size: int | None = DEFAULT_QUEUE_SIZE,
                 queue_bytes: int = DEFAULT_QUEUE_BYTES,
                 important_queue_size: int = DEFAULT_IMPORTANT_QUEUE_SIZE, options: CorrelatorOptions | None = None,
                 wall: Callable[[], float] = time.time, max_tries: int = 3,
                 important_max_tries: int = IMPORTANT_MAX_TRIES, retry_delay: float = 1.0,
                 writers: int = DEFAULT_EVENT_WRITERS) -> None:
        if not component:
            raise ValueError("an event recorder needs a component name (it is the events' source)")
        self.client = client
        self.component = component
        self.host = host
        self.max_tries = max(1, max_tries)
        self.important_max_tries = max(1, important_max_tries)
        self.retry_delay = retry_delay
        self._wall = wall
        self._queue_size = None if queue_size is None else max(1, queue_size)
        self._queue_bytes = max(1, queue_bytes)
        self._ordinary_bytes = 0    # the estimated memory of the queued ordinary events (queued_bytes())
        self._ordinary_count = 0    # ... and their number, over every shard
        self._important_count = 0   # the important events queued, over every shard
        self._important_size = max(1, important_queue_size)
        # (uid, reason) of the important events this process recorded. Larger than the important queue, so an event
        # still queued is always remembered (the queue is FIFO: the keys of queued events are the newest ones).
        self._recorded: LRUCache[tuple[str, str], bool] = LRUCache(maxsize=2 * self._important_size)
        # The latest Warning messages recorded about each object (uid → (wall time, message)), for warned().
        self._warnings: LRUCache[str, deque[tuple[float, str]]] = LRUCache(maxsize=4096)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)   # notified whenever an event is done (flush waits on it)
        self._unfinished = 0        # queued or being written
        self._left_at_stop = 0      # events the stop's deadline or cancel left unwritten
        self._last_ns = 0
        self._name_lock = threading.Lock()
        self._stopping = threading.Event()
        self._deadline = float("inf")  # monotonic time after which nothing more is written
        self._shards = [_Shard(threading.Condition(self._lock),
                               EventSink(client, self._stopping, options=options, wall=wall, retry_delay=retry_delay))
                        for _ in range(max(1, writers))]
        self.dropped = 0            # ordinary events dropped because their queue was full
        self._drop_logged_at = -float("inf")   # monotonic time of the last line about a dropped ordinary event
        self._drop_logged_count = 0            # self.dropped then
        self.dropped_important = 0  # important events dropped because theirs was (never expected)

    # --- recording ------------------------------------------------------------------------------------

    def event(self, ref: ObjectReference, event_type: str, reason: str, message: str, *, important: bool = False,
              at: float | None = None) -> bool:
        """Queue an event about ``ref``; False if it was dropped (queue full, stopped, or a bad type).

        ``important``: one of the few events that end a chapter of a job (``Succeeded``, ``Failed``,
        ``Restarting``): never dropped for ordinary ones, never spam-filtered. ``at``: when it happened (Unix
        time; default now), for its timestamps."""
        if not self._acceptable(ref, event_type, reason):
            return False
        key = (ref.uid, reason)
        with self._cond:
            if event_type == WARNING and ref.uid:
                recent = self._warnings.get(ref.uid)
                if recent is None:
                    recent = self._warnings[ref.uid] = deque(maxlen=16)
                recent.append((self._wall(), message))
            if not important and self._ordinary_full(_estimated_bytes(ref.name, ref.namespace, reason, message)):
                # Dropped before its body is built: under a flood (300 jobs' creations at once) most ordinary
                # events end here, and building each one and logging it was 7% of the controller's CPU.
                self._dropped_ordinary(reason, ref.namespace, ref.name, message)
                return False
        body = self._make_event(ref, event_type, reason, message, at)
        with self._cond:
            if important and ref.uid:
                self._recorded[key] = True
            return self._enqueue(_Queued(body, important), key)

    def warned(self, ref: ObjectReference, text: str, within: float = 60.0) -> bool:
        """Whether a Warning event about ``ref`` whose message contains ``text`` was recorded in the last ``within``
        seconds (so that one failure is not reported twice: ``FailedCreatePod`` already carries a 403's message)."""
        since = self._wall() - within
        with self._cond:
            recent = list(self._warnings.get(ref.uid) or ())
        return any(t >= since and text in message for t, message in recent)

    def event_once(self, ref: ObjectReference, event_type: str, reason: str, message: str, *,
                   at: float | None = None) -> bool:
        """Record an important event about ``ref`` unless one with this ``reason`` about this object (its uid) was
        recorded by this process, or exists in the API (looked up by the writer, with one LIST, before it writes).
        True if queued.

        For a finished job seen after a restart: its terminal event may have been queued by a process that died
        before writing it. Costs nothing once the object's event is known here, one LIST otherwise."""
        if not ref.uid:
            log.error("event %s about %s/%s: no uid to look an existing Event up by; not recorded", reason,
                      ref.namespace, ref.name)
            return False
        if not self._acceptable(ref, event_type, reason):
            return False
        key = (ref.uid, reason)
        with self._cond:
            if key in self._recorded:
                return False
            self._recorded[key] = True
            return self._enqueue(_Queued(self._make_event(ref, event_type, reason, message, at), True, once=True),
                                 key)

    def _acceptable(self, ref: ObjectReference, event_type: str, reason: str) -> bool:
        if event_type not in EVENT_TYPES:
            log.error("event %s about %s/%s has unsupported type %r; not recorded", reason, ref.namespace, ref.name,
                      event_type)
            return False
        if self._stopping.is_set():
            log.warning("event recorder stopped; dropping event %s about %s/%s", reason, ref.namespace, ref.name)
            return False
        return True

    def _enqueue(self, item: _Queued, key: tuple[str, str]) -> bool:
        """Queue ``item`` on its object's shard (the lock held); False, logged, if its queue is full."""
        body = item.body
        involved = body["involvedObject"]
        size = 0 if item.important else _estimated_bytes(involved.get("name") or "", involved.get("namespace") or "",
                                                         body["reason"], body["message"])
        if self._important_count >= self._important_size if item.important else self._ordinary_full(size):
            if item.important:
                self.dropped_important += 1
                self._recorded.pop(key, None)   # so that event_once can record it again
                log.error("%d important events queued: dropping event %s about %s/%s: %s (the event client's "
                          "budget is far too small for this load)", self._important_size, body["reason"],
                          involved.get("namespace"), involved.get("name"), body["message"])
            else:
                self._dropped_ordinary(body["reason"], involved.get("namespace"), involved.get("name"),
                                       body["message"])
            return False
        shard = self._shards[shard_of(involved, len(self._shards))]
        item.size = size
        if item.important:
            shard.important.append(item)
            self._important_count += 1
        else:
            shard.ordinary.append(item)
            self._ordinary_count += 1
            self._ordinary_bytes += size
        self._unfinished += 1
        shard.wake.notify()
        return True

    def _ordinary_full(self, size: int) -> bool:
        """Whether an ordinary event of ``size`` bytes would overflow its queue (the lock held)."""
        if self._queue_size is not None and self._ordinary_count >= self._queue_size:
            return True
        return self._ordinary_count > 0 and self._ordinary_bytes + size > self._queue_bytes

    def queued_bytes(self) -> int:
        """The estimated memory of the ordinary events waiting to be written."""
        with self._cond:
            return self._ordinary_bytes

    def _dropped_ordinary(self, reason: str, namespace: str | None, name: str | None, message: str) -> None:
        """Count an ordinary event dropped for a full queue (the condition held); log the first drop, then at most
        one line per :data:`DROP_LOG_INTERVAL` seconds with how many went since (client-go logs every one; a
        flood drops thousands, and a line each only adds to the load that caused it)."""
        self.dropped += 1
        now = time.monotonic()
        if now - self._drop_logged_at < DROP_LOG_INTERVAL:
            return
        since = self.dropped - self._drop_logged_count
        self._drop_logged_at, self._drop_logged_count = now, self.dropped
        log.error("too many queued events; dropping event %s about %s/%s: %s%s", reason, namespace, name, message,
                  f" ({since - 1} more dropped since the last such line)" if since > 1 else "")

    def _make_event(self, ref: ObjectReference, event_type: str, reason: str, message: str,
                    at: float | None = None) -> dict[str, Any]:
        now = self._wall()
        stamp = rfc3339(now if at is None else at)
        source = {"component": self.component, **({"host": self.host} if self.host else {})}
        return {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": self._event_name(ref.name, now), "namespace": ref.namespace or "default"},
            "involvedObject": ref.to_dict(), "reason": reason, "message": message,
            "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1, "type": event_type, "source": source,
            "reportingComponent": self.component, "reportingInstance": self.host,
        }

    def _event_name(self, object_name: str, now: float) -> str:
        """``<object>.<hex nanoseconds>`` (client-go's GenerateEventName), strictly increasing per recorder so two
        events of one instant never collide; a UUID when that would not be a valid name."""
        with self._name_lock:
            self._last_ns = max(int(now * 1e9), self._last_ns + 1)
            nanos = self._last_ns
        name = f"{object_name}.{nanos:x}"
        return name if not dns1123_subdomain_errors(name) else str(uuid.uuid4())

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> EventRecorder:
        with self._cond:
            for index, shard in enumerate(self._shards):
                if shard.thread is None:
                    name = f"events-{self.component}-{index}"
                    shard.thread = threading.Thread(target=self._run, args=(shard,), name=name, daemon=True)
                    shard.thread.start()
        return self

    def flush(self, timeout: float) -> bool:
        """Wait until every queued event was written (or dropped); False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._unfinished > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    def stop(self, timeout: float = 5.0, *, left_level: int = logging.WARNING) -> bool:
        """Write what is queued within ``timeout``, then end the writers; False if events were left unwritten or a
        writer outlived the deadline. ``left_level``: how loudly to say how many were left (a node shutting down
        with its event budget's backlog, as kube's kubelet drops its broadcaster's, is no warning)."""
        deadline = time.monotonic() + timeout
        started = any(shard.thread is not None for shard in self._shards)
        # The writers' last moment: a write waiting for its client's token ends when _stopping is set (the sink
        # passes it as the request's cancel), and needs a moment of the deadline to end its thread.
        reserve = min(0.5, timeout / 5)
        if started:
            self.flush(timeout - reserve)
        self._deadline = deadline
        self._stopping.set()
        with self._cond:
            for shard in self._shards:   # an idle writer waits on its condition, not on _stopping
                shard.wake.notify_all()
        busy = 0
        for shard in self._shards:
            thread = shard.thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
                busy += thread.is_alive()
        if busy:
            log.warning("event recorder %s: %d writers still busy after %.1fs", self.component, busy, timeout)
            return False
        with self._cond:   # the writers have ended: what they did not write at the stop was dropped
            left = self._left_at_stop + self._unfinished
        if left:
            log.log(left_level, "event recorder %s: %d events not written before the deadline", self.component, left)
        return not left

    # --- the writers ----------------------------------------------------------------------------------

    def _next(self, shard: _Shard) -> _Queued | None:
        """The shard's next event to write, important ones first; None when stopping or after :data:`IDLE_WAIT`
        without one."""
        with self._cond:
            if not shard.important and not shard.ordinary and not self._stopping.is_set():
                shard.wake.wait(IDLE_WAIT)
            if shard.important:
                self._important_count -= 1
                return shard.important.popleft()
            if shard.ordinary:
                item = shard.ordinary.popleft()
                self._ordinary_bytes -= item.size
                self._ordinary_count -= 1
                return item
            return None

    def _run(self, shard: _Shard) -> None:
        while True:
            item = self._next(shard)
            if item is None:
                if self._stopping.is_set():
                    return
                continue
            handled = False
            try:
                if not self._stopping.is_set() or time.monotonic() < self._deadline:
                    handled = self._process(shard.sink, item)
            except Exception:
                log.exception("event recorder %s: unexpected failure writing an event", self.component)
            finally:
                with self._cond:
                    self._unfinished -= 1
                    if not handled and self._stopping.is_set():
                        self._left_at_stop += 1
                    self._cond.notify_all()

    def _process(self, sink: EventSink, item: _Queued) -> bool:
        """Write one event; False if it was not (refused, failed, or cancelled by the stop)."""
        tries = self.important_max_tries if item.important else self.max_tries
        if item.once:
            found = sink.exists(item.body, self.important_max_tries)
            if found is None:   # a gap is preferred to a duplicate: forgotten, so a later event_once looks again
                self._forget(item.body)
            if found is not False:
                return found is True
        written = sink.write(item.body, important=item.important, max_tries=tries)
        if not written and item.important:
            self._forget(item.body)   # not written: event_once may record it again
        return written

    def _forget(self, body: dict[str, Any]) -> None:
        involved = body["involvedObject"]
        with self._cond:
            self._recorded.pop((involved.get("uid") or "", body["reason"]), None)


def shard_of(involved: dict[str, Any], shards: int) -> int:
    """The writer an object's events go to: by its uid (or namespace and name), the same in every process."""
    identity = involved.get("uid") or f"{involved.get('namespace')}/{involved.get('name')}"
    return zlib.crc32(identity.encode()) % shards


def _estimated_bytes(name: str, namespace: str, reason: str, message: str) -> int:
    """What an event holds in memory once built: a constant for its structure, plus its strings (the message twice
    over at most: the body's, and the warning memory's)."""
    return _EVENT_BASE_BYTES + 2 * len(message) + len(reason) + 2 * (len(name) + len(namespace))

