"""A watch on one Lease that tells a waiting candidate when the Lease is released or deleted.

Why: a standby polls the Lease every retry period (2 to 4.4 s with client-go's jitter), so a release written just
after a poll would wait for the next one. The watch turns "released" into an immediate retry, so a graceful
handover takes one round trip instead of up to a retry period. It is only a wake-up hint: what the candidate then
does is decided by its usual read of the Lease, so a lost, late or duplicated event changes nothing but timing.

Guarantees: one named thread (``<name>-watch``); every read has a timeout; :meth:`LeaseWatch.stop` closes the open
stream and joins the thread; errors back off ``retry_period`` seconds and never end the thread.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from mxjob_controller.runtime.client import LEASES, Client, Expired, Gone, KubeError, WatchStream

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
                 retry_period: float, thread_name: str) -> None:
        self._client = client
        self._namespace = namespace
        self._name = name
        self._on_released = on_released
        self._retry_period = retry_period
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: WatchStream | None = None
        self._thread = threading.Thread(target=self._run, name=f"{thread_name}-watch", daemon=True)

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
        resource_version: str | None = None
        while not self._stop.is_set():
            try:
                stream = self._client.watch(LEASES, self._namespace, field_selector=f"metadata.name={self._name}",
                                            resource_version=resource_version,
                                            timeout_seconds=random.randint(*_WATCH_SECONDS))
            except (Expired, Gone):
                resource_version = None  # resume point forgotten: start over (an ADDED event shows the state)
                continue
            except KubeError as e:
                log.debug("lease watch %s/%s: %s", self._namespace, self._name, e)
                self._stop.wait(self._retry_period)
                continue
            with self._lock:
                self._stream = stream
            if self._stop.is_set():
                stream.close()
            try:
                for event in stream:
                    meta = (event.get("object") or {}).get("metadata") or {}
                    resource_version = meta.get("resourceVersion") or resource_version
                    if released(event):
                        self._notify()
            except (Expired, Gone):
                resource_version = None
            except Exception as e:  # KubeError, or the transport's own error when stop() closes it mid-read
                if not self._stop.is_set():
                    log.debug("lease watch %s/%s ended: %s", self._namespace, self._name, e)
                    self._stop.wait(self._retry_period)
            finally:
                stream.close()
                with self._lock:
                    self._stream = None
