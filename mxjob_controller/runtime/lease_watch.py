"""A watch on one Lease that tells a waiting candidate when the Lease is released or deleted.

Why: a standby polls the Lease every retry period (2 to 4.4 s with client-go's jitter), so a release written just
after a poll would wait for the next one. The watch turns "released" into an immediate retry, so a graceful
handover takes one round trip instead of up to a retry period. It is only a wake-up hint: what the candidate then
does is decided by its usual read of the Lease, so a lost, late or duplicated event changes nothing but timing.

Why not a SharedInformer: that would list Leases, which the leader-election Role does not grant (it grants get,
update and watch on the one Lease); a single watch with a ``metadata.name`` field selector is all a hint needs.

Guarantees: one named thread (``<name>-watch``); every read has a timeout; :meth:`LeaseWatch.stop` closes the open
stream and joins the thread; errors never end the thread. Failures back off as the reflector does (``backoff``:
0.8 s doubling to 30 s, jittered, or the server's ``Retry-After`` when longer), and so does a watch that ends at
once without an event, or a 410 that comes back before any event arrived: never a tight reconnect loop.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from mxjob_controller.runtime.backoff import Backoff
from mxjob_controller.runtime.cache_reflector import SHORT_WATCH
from mxjob_controller.runtime.client import LEASES, ApiError, Cancelled, Client, Gone, KubeError, WatchStream
from mxjob_controller.runtime.client.errors import refused

log = logging.getLogger(__name__)

_WATCH_SECONDS = (240, 360)   # server-side timeout of each watch, randomized as reflectors do
_JOIN_TIMEOUT = 5.0


def released(event: dict[str, Any]) -> bool:
    """The event shows the Lease deleted or without a holder."""
    obj = event.get("object") or {}
    return event.get("type") == "DELETED" or not ((obj.get("spec") or {}).get("holderIdentity"))


class LeaseWatch:
    """Calls ``on_released()`` for every event showing the Lease ``namespace/name`` released or deleted."""

    def __init__(self, client: Client, namespace: str, name: str, on_released: Callable[[], None], *,
                 thread_name: str, backoff: Backoff | None = None) -> None:
        self._client = client
        self._namespace = namespace
        self._name = name
        self._on_released = on_released
        self._backoff = backoff or Backoff()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._thread = threading.Thread(target=self._run, name=f"{thread_name}-watch", daemon=True)
        self._resource_version: str | None = None
        self.watches = 0  # watches opened and events received (for tests and debugging)
        self.events = 0

    def start(self) -> LeaseWatch:
        self._thread.start()
        return self

    def stop(self, timeout: float = _JOIN_TIMEOUT) -> bool:
        self._stop.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _notify(self) -> None:
        try:
            self._on_released()
        except Exception:
            log.exception("lease watch %s/%s: the release callback failed", self._namespace, self._name)

    def _run(self) -> None:
        gone_in_a_row = 0  # 410s with no event in between: the first starts over at once, later ones back off
        while not self._stop.is_set():
            delay = 0.0
            events_before = self.events
            try:
                self._watch_once()
            except Cancelled:
                break
            except Gone as e:
                self._resource_version = None  # resume point forgotten: start over (an ADDED event shows the state)
                gone_in_a_row = 1 if self.events > events_before else gone_in_a_row + 1
                delay = self._backoff.next_delay(e.retry_after) if gone_in_a_row > 1 else 0.0
            except Exception as e:  # KubeError, or the transport's own error when stop() closes it mid-read
                if self._stop.is_set():
                    break
                delay = self._backoff.next_delay(e.retry_after if isinstance(e, ApiError) else None)
                log.log(logging.ERROR if refused(e) else logging.DEBUG, "lease watch %s/%s: %s; retrying in %.2fs",
                        self._namespace, self._name, e, delay)
            if delay > 0 and self._stop.wait(delay):
                break

    def _watch_once(self) -> None:
        """One watch until its stream ends. Raises what opening or reading raised, and :class:`KubeError` for a
        stream that ended at once without any event (a failure, to back off)."""
        stream = self._client.watch(LEASES, self._namespace, field_selector=f"metadata.name={self._name}",
                                    resource_version=self._resource_version,
                                    timeout_seconds=random.randint(*_WATCH_SECONDS), cancel=self._stop)
        self.watches += 1
        with self._lock:
            self._stream = stream
        opened = time.monotonic()
        events = 0
        try:
            if self._stop.is_set():
                return
            for event in stream:
                events += 1
                self.events += 1
                meta = (event.get("object") or {}).get("metadata") or {}
                self._resource_version = meta.get("resourceVersion") or self._resource_version
                if released(event):
                    self._notify()
        finally:
            stream.close()
            with self._lock:
                self._stream = None
        if events == 0 and not self._stop.is_set() and time.monotonic() - opened < SHORT_WATCH:
            raise KubeError(f"watch closed after {time.monotonic() - opened:.3f}s without any event")
