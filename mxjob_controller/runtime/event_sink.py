"""Where a recorded Event goes: the API, through client-go's correlator, with retries (client-go's ``recordToSink``).

One :class:`EventSink` per writer thread of an :class:`~mxjob_controller.runtime.events.EventRecorder`, each with a
correlator of its own: the recorder gives every object's events to one writer, and every correlator key (dedupe,
aggregation, spam filter) names the object, so each correlator sees all the events of its objects, as client-go's
single one does.

- :meth:`EventSink.write` correlates an event, then creates it, or PATCHes the Event it repeats (its ``count``,
  ``lastTimestamp`` and ``message``: client-go's ``strategic`` patch); an Event deleted meanwhile is created again
  under its name. A write the server refuses (invalid, namespace terminating) is logged and not retried; a
  transport failure, a 5xx or a 429 is retried up to ``max_tries``, ``retry_delay`` apart, never once ``stopping``
  is set. A write waiting for its client's token (the kubelet's ``--event-qps`` budget) ends when ``stopping`` is
  set, unsent and unlogged: the recorder's stop says in one line how many events it left.
- :meth:`EventSink.exists` looks an Event up by its object's uid and reason (one LIST with a field selector), for
  events written at most once across restarts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from mxjob_controller.runtime.client import (
    EVENTS,
    AlreadyExists,
    ApiError,
    Cancelled,
    Client,
    KubeError,
    NotFound,
    ServerError,
    TooManyRequests,
)
from mxjob_controller.runtime.event_correlator import Correlation, CorrelatorOptions, EventCorrelator

log = logging.getLogger(__name__)


def field_value(value: str) -> str:
    """A field selector value, escaped (apimachinery's ``fields.EscapeValue``)."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


class EventSink:
    def __init__(self, client: Client, stopping: threading.Event, *, options: CorrelatorOptions | None,
                 wall: Callable[[], float], retry_delay: float) -> None:
        self.client = client
        self.retry_delay = retry_delay
        self._stopping = stopping
        self._correlator = EventCorrelator(options, now=wall)

    def write(self, body: dict[str, Any], *, important: bool, max_tries: int) -> bool:
        """Correlate ``body`` (a new core/v1 Event, count 1) and write what the correlator says; False if it was
        not written (refused, or every try failed). An event the spam filter drops counts as handled (True)."""
        correlation = self._correlator.correlate(body, important=important)
        if correlation is None:
            return True
        event = correlation.event
        meta = event["metadata"]
        for attempt in range(1, max_tries + 1):
            try:
                written = self._send(correlation)
            except AlreadyExists:
                log.debug("event %s already exists; not retried", meta.get("name"))
                return True
            except Cancelled:   # the recorder stops: what is left is counted there, not logged one by one
                return False
            except (ServerError, TooManyRequests) as e:
                failure: Exception = e
            except ApiError as e:
                log.error("server rejected event %s (%s: %s); not retried", meta.get("name"), event.get("reason"),
                          e)
                return False
            except KubeError as e:
                failure = e
            else:
                self._correlator.update_state(correlation.key, written)
                return True
            if attempt == max_tries or not self._pause():
                log.error("unable to write event %s (%s) after %d attempts: %s", meta.get("name"),
                          event.get("reason"), attempt, failure)
                return False
        return False

    def exists(self, body: dict[str, Any], max_tries: int) -> bool | None:
        """Whether the API holds an Event with ``body``'s reason about its object (by uid); None when that could
        not be found out (logged)."""
        involved = body["involvedObject"]
        selector = (f"involvedObject.uid={field_value(involved.get('uid') or '')},"
                    f"reason={field_value(body['reason'])}")
        failure: Exception | None = None
        for attempt in range(1, max_tries + 1):
            try:
                # No limit: the answer is one object's events of one reason (a page may be short of a limit).
                found = self.client.list(EVENTS, body["metadata"]["namespace"], field_selector=selector)
            except (ServerError, TooManyRequests) as e:
                failure = e
            except ApiError as e:    # refused (RBAC without list?): retrying will not help
                failure = e
                break
            except KubeError as e:   # transport failure, rate-limit timeout, cancelled
                failure = e
            else:
                return bool(found.get("items"))
            if attempt == max_tries or not self._pause():
                break
        log.error("cannot tell whether event %s about %s/%s was written (%s); not written now", body["reason"],
                  involved.get("namespace"), involved.get("name"), failure)
        return None

    def _send(self, correlation: Correlation) -> dict[str, Any]:
        event = correlation.event
        meta = event["metadata"]
        if correlation.patch is not None:
            try:
                return self.client.patch(EVENTS, meta["name"], correlation.patch, meta["namespace"],
                                         patch_type="strategic", cancel=self._stopping)
            except NotFound:
                pass  # the Event expired or was deleted: write it anew under the same name
        fresh = {**event, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
        return self.client.create(EVENTS, fresh, meta["namespace"], cancel=self._stopping)

    def _pause(self) -> bool:
        """Wait before a retry; False once the recorder is stopping (no retries during shutdown)."""
        return not self._stopping.wait(self.retry_delay)
