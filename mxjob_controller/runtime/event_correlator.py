"""Event correlation as client-go's ``tools/record`` EventCorrelator does it, so our events look like any Kubernetes
controller's: repeats bump a count instead of piling up, floods of similar events collapse into one, and a source
cannot spam one object.

Three stages, in client-go's order, for every event about to be written:

1. **Aggregator**: events alike in everything but the message (same source, object, type, reason) are grouped; once
   ``max_events`` distinct messages were seen within ``max_interval`` seconds, further ones become one event whose
   message is ``"(combined from similar events): <message>"``.
2. **Logger** (dedupe): an event identical to one already written (same source, object, type, reason, message)
   becomes a PATCH of that Event's ``count``, ``lastTimestamp`` and ``message`` instead of a new object. Unlike
   client-go, a repeat only merges into an occurrence seen within ``dedupe_window`` seconds: after a long quiet
   period it is a new Event object (kube-apiserver deletes Events an hour after their last write anyway).
3. **Spam filter**: a token bucket per source and object (``burst`` events, refilled at ``qps``) drops the rest.
   Unlike client-go, an *important* event (a job's ``Succeeded`` / ``Failed`` / ``Restarting``, see ``events``) is
   never dropped: it takes a token when there is one, and passes when there is none. A job records a handful of
   them in its life, so they cannot flood; an object that used up its burst on pod creations must still get them.

Not thread-safe on purpose: one writer thread owns a correlator (as client-go's ``recordToSink`` does).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache

from mxjob_controller.kube.timefmt import rfc3339

COMBINED_PREFIX = "(combined from similar events): "


@dataclass(frozen=True, slots=True)
class CorrelatorOptions:
    """client-go's defaults (``events_cache.go``)."""

    lru_size: int = 4096
    burst: int = 25
    qps: float = 1.0 / 300.0
    max_events: int = 10
    max_interval: float = 600.0
    dedupe_window: float = 600.0


@dataclass(frozen=True, slots=True)
class Correlation:
    """What to write: ``event`` as a new object, or (``patch`` set) a PATCH of the existing ``event['metadata']
    ['name']``. ``key`` identifies the occurrence record to update with the server's answer."""

    event: dict[str, Any]
    key: str
    patch: dict[str, Any] | None = None


@dataclass(slots=True)
class _Occurrence:
    count: int
    first_timestamp: str
    name: str
    resource_version: str
    seen_at: float


@dataclass(slots=True)
class _Similar:
    messages: set[str] = field(default_factory=set)
    last_seen: float = float("-inf")


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


def _involved(event: dict[str, Any]) -> dict[str, Any]:
    return event.get("involvedObject") or {}


def event_key(event: dict[str, Any]) -> str:
    """Everything that makes two events the same event (client-go's ``getEventKey``)."""
    obj, source = _involved(event), event.get("source") or {}
    return "\x00".join(str(v or "") for v in (
        source.get("component"), source.get("host"), obj.get("kind"), obj.get("namespace"), obj.get("name"),
        obj.get("fieldPath"), obj.get("uid"), obj.get("apiVersion"), event.get("type"), event.get("reason"),
        event.get("message")))


def similar_key(event: dict[str, Any]) -> str:
    """Everything but the message (client-go's ``EventAggregatorByReasonFunc``)."""
    obj, source = _involved(event), event.get("source") or {}
    return "\x00".join(str(v or "") for v in (
        source.get("component"), source.get("host"), obj.get("kind"), obj.get("namespace"), obj.get("name"),
        obj.get("uid"), obj.get("apiVersion"), event.get("type"), event.get("reason"),
        event.get("reportingComponent"), event.get("reportingInstance")))


def spam_key(event: dict[str, Any]) -> str:
    """Source and object (client-go's ``getSpamKey``)."""
    obj, source = _involved(event), event.get("source") or {}
    return "\x00".join(str(v or "") for v in (
        source.get("component"), source.get("host"), obj.get("kind"), obj.get("namespace"), obj.get("name"),
        obj.get("uid"), obj.get("apiVersion"), event.get("type")))


class EventCorrelator:
    def __init__(self, options: CorrelatorOptions | None = None, now: Callable[[], float] = time.time,
                 name_for: Callable[[str, float], str] | None = None) -> None:
        self.options = options or CorrelatorOptions()
        self._now = now
        self._name_for = name_for or (lambda obj_name, ts: f"{obj_name}.{int(ts * 1e9):x}")
        size = self.options.lru_size
        self._similar: LRUCache[str, _Similar] = LRUCache(maxsize=size)
        self._occurrences: LRUCache[str, _Occurrence] = LRUCache(maxsize=size)
        self._buckets: LRUCache[str, _Bucket] = LRUCache(maxsize=size)

    def correlate(self, event: dict[str, Any], *, important: bool = False) -> Correlation | None:
        """The write to make for ``event`` (a complete core/v1 Event with count 1), or None when the spam filter
        drops it (never when ``important``). ``event`` is not modified."""
        now = self._now()
        aggregated, key = self._aggregate(event, now)
        correlation = self._observe(aggregated, key, now)
        if not self._allow(correlation.event, now) and not important:
            return None
        return correlation

    def update_state(self, key: str, written: dict[str, Any]) -> None:
        """Remember the name and resourceVersion the server gave the Event written for ``key``."""
        occurrence = self._occurrences.get(key)
        meta = written.get("metadata") or {}
        if occurrence is not None:
            occurrence.name = meta.get("name") or occurrence.name
            occurrence.resource_version = meta.get("resourceVersion") or ""

    # --- stages -----------------------------------------------------------------------------------------

    def _aggregate(self, event: dict[str, Any], now: float) -> tuple[dict[str, Any], str]:
        group_key = similar_key(event)
        record = self._similar.get(group_key)
        if record is None or now - record.last_seen > self.options.max_interval:
            record = _Similar()
        record.messages.add(event.get("message") or "")
        record.last_seen = now
        self._similar[group_key] = record
        if len(record.messages) < self.options.max_events:
            return event, event_key(event)
        record.messages.pop()  # keep the set bounded, as client-go does
        stamp = rfc3339(now)
        combined = {**event, "metadata": {"name": self._name_for(_involved(event).get("name") or "", now),
                                          "namespace": (event.get("metadata") or {}).get("namespace")},
                    "message": COMBINED_PREFIX + (event.get("message") or ""), "count": 1,
                    "firstTimestamp": stamp, "lastTimestamp": stamp}
        return combined, group_key

    def _observe(self, event: dict[str, Any], key: str, now: float) -> Correlation:
        last = self._occurrences.get(key)
        if last is not None and now - last.seen_at > self.options.dedupe_window:
            last = None
        if last is None:
            self._occurrences[key] = _Occurrence(1, event.get("firstTimestamp") or "",
                                                 (event.get("metadata") or {}).get("name") or "", "", now)
            return Correlation(event, key)
        last.count += 1
        last.seen_at = now
        meta = {**(event.get("metadata") or {}), "name": last.name}
        if last.resource_version:
            meta["resourceVersion"] = last.resource_version
        repeated = {**event, "metadata": meta, "count": last.count, "firstTimestamp": last.first_timestamp}
        patch = {"count": last.count, "lastTimestamp": event.get("lastTimestamp"), "message": event.get("message")}
        return Correlation(repeated, key, patch)

    def _allow(self, event: dict[str, Any], now: float) -> bool:
        key = spam_key(event)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(float(self.options.burst), now)
        bucket.tokens = min(float(self.options.burst), bucket.tokens + (now - bucket.at) * self.options.qps)
        bucket.at = now
        self._buckets[key] = bucket
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return True
        return False
