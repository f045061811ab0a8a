"""Kubernetes Events about objects, written the way client-go's ``record.EventRecorder`` writes them.

    recorder = EventRecorder(client, component="my-operator").start()
    recorder.event(ObjectReference.of(job, "example.com/v1", "MyJob"), NORMAL, "SuccessfulCreatePod",
                   "Created pod: my-job-worker-0")
    ...
    recorder.stop(timeout=5)   # writes what is queued, within the deadline

What gets written: a core/v1 Event in the object's namespace, named ``<object name>.<hex nanoseconds>``, with
``source.component`` and ``reportingComponent`` set to ``component`` (``source.host`` / ``reportingInstance`` to
``host``), ``count`` 1 and first/last timestamps of the moment :meth:`EventRecorder.event` was called. Repeats and
floods are correlated as client-go does (see ``event_correlator``): a repeat PATCHes ``count`` and
``lastTimestamp`` of the existing Event.

Guarantees:
- :meth:`EventRecorder.event` never blocks and never raises: the event goes to a bounded queue, and when that is
  full it is dropped with a log line (a reconcile must never wait on events).
- One named thread (``events-<component>``) correlates and writes, in the order events were recorded.
- A write the server refuses (invalid, namespace terminating) is logged and dropped; a transport failure or a 5xx is
  retried a few times (``max_tries``, ``retry_delay`` apart), never once the recorder is stopping.
- :meth:`stop` writes what is queued within its deadline, then drops the rest and ends the thread.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube.names import dns1123_subdomain_errors
from mxjob_controller.kube.timefmt import rfc3339
from mxjob_controller.runtime.client import (
    EVENTS,
    AlreadyExists,
    ApiError,
    Client,
    KubeError,
    NotFound,
    ServerError,
    TooManyRequests,
)
from mxjob_controller.runtime.event_correlator import Correlation, CorrelatorOptions, EventCorrelator

log = logging.getLogger(__name__)

NORMAL = "Normal"
WARNING = "Warning"
EVENT_TYPES = (NORMAL, WARNING)
DEFAULT_QUEUE_SIZE = 1000  # client-go's maxQueuedEvents

_GET_TIMEOUT = 0.2


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """The ``involvedObject`` of an Event (core/v1 ObjectReference)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str = ""

    @classmethod
    def of(cls, obj: dict[str, Any], api_version: str | None = None, kind: str | None = None) -> ObjectReference:
        """A reference to ``obj``; ``api_version`` and ``kind`` for objects whose dict lacks them (list items)."""
        meta = obj.get("metadata") or {}
        return cls(api_version or obj.get("apiVersion") or "", kind or obj.get("kind") or "",
                   meta.get("namespace") or "", meta.get("name") or "", meta.get("uid") or "",
                   meta.get("resourceVersion") or "")

    def to_dict(self) -> dict[str, str]:
        out = {"kind": self.kind, "namespace": self.namespace, "name": self.name, "uid": self.uid,
               "apiVersion": self.api_version, "resourceVersion": self.resource_version}
        return {k: v for k, v in out.items() if v}


class EventRecorder:
    def __init__(self, client: Client, component: str, *, host: str = "", queue_size: int = DEFAULT_QUEUE_SIZE,
                 options: CorrelatorOptions | None = None, wall: Callable[[], float] = time.time,
                 max_tries: int = 3, retry_delay: float = 1.0) -> None:
        if not component:
            raise ValueError("an event recorder needs a component name (it is the events' source)")
        self.client = client
        self.component = component
        self.host = host
        self.max_tries = max(1, max_tries)
        self.retry_delay = retry_delay
        self._wall = wall
        self._correlator = EventCorrelator(options, now=wall)
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=max(1, queue_size))
        self._cond = threading.Condition()
        self._unfinished = 0        # queued or being written
        self._last_ns = 0
        self._name_lock = threading.Lock()
        self._stopping = threading.Event()
        self._deadline = float("inf")  # monotonic time after which nothing more is written
        self._thread: threading.Thread | None = None
        self.dropped = 0

    # --- recording ------------------------------------------------------------------------------------

    def event(self, ref: ObjectReference, event_type: str, reason: str, message: str) -> bool:
        """Queue an event about ``ref``; False if it was dropped (queue full, stopped, or a bad type)."""
        if event_type not in EVENT_TYPES:
            log.error("event %s about %s/%s has unsupported type %r; not recorded", reason, ref.namespace, ref.name,
                      event_type)
            return False
        if self._stopping.is_set():
            log.warning("event recorder stopped; dropping event %s about %s/%s", reason, ref.namespace, ref.name)
            return False
        body = self._make_event(ref, event_type, reason, message)
        with self._cond:
            try:
                self._queue.put_nowait(body)
            except queue.Full:
                self.dropped += 1
                log.error("too many queued events; dropping event %s about %s/%s: %s", reason, ref.namespace,
                          ref.name, message)
                return False
            self._unfinished += 1
        return True

    def _make_event(self, ref: ObjectReference, event_type: str, reason: str, message: str) -> dict[str, Any]:
        now = self._wall()
        stamp = rfc3339(now)
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
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"events-{self.component}", daemon=True)
            self._thread.start()
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

    def stop(self, timeout: float = 5.0) -> bool:
        """Write what is queued within ``timeout``, then end the thread; False if events were left unwritten or the
        thread outlived the deadline."""
        deadline = time.monotonic() + timeout
        flushed = self.flush(timeout) if self._thread is not None else self._unfinished == 0
        self._deadline = deadline
        self._stopping.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                log.warning("event recorder %s: writer still busy after %.1fs", self.component, timeout)
                return False
        if not flushed:
            log.warning("event recorder %s: %d events not written before the deadline", self.component,
                        self._unfinished)
        return flushed

    # --- the writer -----------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            try:
                body = self._queue.get(timeout=_GET_TIMEOUT)
            except queue.Empty:
                if self._stopping.is_set():
                    return
                continue
            try:
                if not self._stopping.is_set() or time.monotonic() < self._deadline:
                    correlation = self._correlator.correlate(body)
                    if correlation is not None:
                        self._write(correlation)
            except Exception:
                log.exception("event recorder %s: unexpected failure writing an event", self.component)
            finally:
                with self._cond:
                    self._unfinished -= 1
                    self._cond.notify_all()

    def _write(self, correlation: Correlation) -> None:
        event = correlation.event
        meta = event["metadata"]
        for attempt in range(1, self.max_tries + 1):
            try:
                written = self._send(correlation)
            except AlreadyExists:
                log.debug("event %s already exists; not retried", meta.get("name"))
                return
            except (ServerError, TooManyRequests) as e:
                failure: Exception = e
            except ApiError as e:
                log.error("server rejected event %s (%s: %s); not retried", meta.get("name"), event.get("reason"),
                          e)
                return
            except KubeError as e:
                failure = e
            else:
                self._correlator.update_state(correlation.key, written)
                return
            if attempt == self.max_tries or not self._pause():
                log.error("unable to write event %s (%s) after %d attempts: %s", meta.get("name"),
                          event.get("reason"), attempt, failure)
                return

    def _send(self, correlation: Correlation) -> dict[str, Any]:
        event = correlation.event
        meta = event["metadata"]
        if correlation.patch is not None:
            try:
                return self.client.patch(EVENTS, meta["name"], correlation.patch, meta["namespace"],
                                         patch_type="strategic")
            except NotFound:
                pass  # the Event expired or was deleted: write it anew under the same name
        fresh = {**event, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
        return self.client.create(EVENTS, fresh, meta["namespace"])

    def _pause(self) -> bool:
        """Wait before a retry; False once the recorder is stopping (no retries during shutdown)."""
        return not self._stopping.wait(self.retry_delay)
