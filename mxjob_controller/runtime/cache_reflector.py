"""The reflector: keeps a sink (the informer) in step with the server by list-then-watch (client-go's
``tools/cache/reflector.go``). Internal to the informer.

Guarantees:
- The sink first gets the whole (paginated) list via ``replace``, then every change after that list's
  resourceVersion via ``apply``, in the server's order; a watch that ends (server timeout, dropped connection)
  resumes from the last resourceVersion seen (bookmarks included), so no change is lost or applied twice.
- When the server no longer has that version (410 Expired/Gone, on opening the watch or as an ERROR event), the
  reflector lists again at once; the sink's ``replace`` then reconciles the gap (and reports what vanished).
  A 410 on a watch opened straight after such a list, before any event arrived, is backed off like other
  failures (no hot loop); a 410 on resuming a watch that ran relists at once, however quiet that watch was.
- Any other failure is retried after a backoff (0.8 s doubling to 30 s, jittered, reset after 2 quiet minutes,
  and whenever a watch was served: it delivered an event, or stayed open ``SHORT_WATCH`` seconds, however it
  ended. List and watch worked then, so the next sporadic failure starts from 0.8 s instead of the 30-60 s a run
  of them had reached: a quiet informer relisting after each compaction must not go blind for a minute over one
  failed list), or after the server's ``Retry-After`` when that is longer. Network and 5xx/429 failures of a
  watch resume the watch; other failures start over with a list.
- Watches ask for bookmarks and for a server-side timeout drawn at random from 5-10 minutes, spreading the
  reconnections of many informers.
- :meth:`stop` returns promptly: it ends the watch stream in progress and cancels waits.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from mxjob_controller.kube.vocabulary import ADDED, BOOKMARK, DELETED, MODIFIED
from mxjob_controller.runtime.backoff import Backoff
from mxjob_controller.runtime.client import (
    ApiError,
    Cancelled,
    Client,
    Gone,
    Resource,
    ServerError,
    TooManyRequests,
    TransportError,
    WatchStream,
)
from mxjob_controller.runtime.client.errors import refused

log = logging.getLogger(__name__)

LIST_PAGE_RETRIES = 2   # a later page of a list that fails transiently is asked again, not the whole list (a large
                        # cache's relist is many pages: each failing on its own would make the list fail often)
SHORT_WATCH = 1.0  # a watch that ends this fast without a single event counts as a failure (client-go's too); one
                   # that lasted longer was served, and resets the backoff


class ReflectorSink(Protocol):
    def replace(self, objs: list[dict[str, Any]], resource_version: str) -> None: ...

    def apply(self, event_type: str, obj: dict[str, Any]) -> None: ...


class _ShortWatch(Exception):  # noqa: N818 - internal signal
    pass


class Reflector:
    def __init__(self, client: Client, resource: Resource, sink: ReflectorSink, *, name: str,
                 namespace: str | None = None, label_selector: str | None = None, field_selector: str | None = None,
                 page_size: int = 500, backoff: Backoff | None = None,
                 watch_timeout: tuple[int, int] = (300, 600), rng: random.Random | None = None,
                 prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        """``prepare``: applied to each listed object as its page arrives (the sink's transform), so that a large
        list is never held whole as the server sent it; the sink's ``replace`` gets what it returned."""
        self.client = client
        self.prepare = prepare
        self.resource = resource
        self.sink = sink
        self.name = name
        self.namespace = namespace if resource.namespaced else None
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.backoff = backoff or Backoff()
        self.watch_timeout = watch_timeout
        self._rng = rng or random.Random()
        self._stop = threading.Event()
        self._watch_lock = threading.Lock()
        self._watch: WatchStream | None = None
        self.last_sync_resource_version = ""
        self.lists = 0     # (re)lists made, watches opened, events received: for tests and debugging
        self.watches = 0
        self.events = 0

    # --- control --------------------------------------------------------------------------------------

    def stop(self) -> None:
        self._stop.set()
        with self._watch_lock:
            stream = self._watch
        if stream is not None:
            stream.close()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def run(self) -> None:
        """List and watch until :meth:`stop` (meant to be the body of the informer's thread)."""
        need_list = True
        gone_in_a_row = 0  # 410s on watches opened straight after a list: the first relists at once, later back off
        while not self._stop.is_set():
            delay = 0.0
            events_before = self.events
            listed = need_list
            try:
                if need_list:
                    self._list()
                    need_list = False
                self._watch_once()
            except Cancelled:
                break
            except Gone as e:
                # Only a watch refused right after a fresh list with nothing in between could loop hot; a resumed
                # watch meeting a compaction (however quiet its predecessor was) relists at once.
                gone_in_a_row = gone_in_a_row + 1 if listed and self.events == events_before else 1
                delay = self.backoff.next_delay(e.retry_after) if gone_in_a_row > 1 else 0.0
                log.info("%s: resourceVersion %s is gone (%s); relisting in %.2fs", self.name,
                         self.last_sync_resource_version, e.message, delay)
                need_list = True
            except TooManyRequests as e:
                delay = self.backoff.next_delay(e.retry_after)
                log.info("%s: throttled (429); retrying in %.2fs", self.name, delay)
            except (TransportError, ServerError, _ShortWatch) as e:
                delay = self.backoff.next_delay(e.retry_after if isinstance(e, ApiError) else None)
                log.warning("%s: %s; retrying in %.2fs", self.name, e or "watch closed at once", delay)
            except ApiError as e:
                delay = self.backoff.next_delay(e.retry_after)
                need_list = True
                if refused(e):   # RBAC (or credentials): nothing will sync until someone acts
                    log.error("%s: the API server refuses to list and watch (%d %s): %s; retrying in %.2fs",
                              self.name, e.code, e.reason, e.message, delay)
                else:
                    log.warning("%s: %s; relisting in %.2fs", self.name, e, delay)
            except Exception:
                delay = self.backoff.next_delay()
                need_list = True
                log.exception("%s: unexpected error; relisting in %.2fs", self.name, delay)
            if delay > 0 and self._stop.wait(delay):
                break
        log.debug("%s: reflector stopped", self.name)

    # --- list -----------------------------------------------------------------------------------------

    def _list(self) -> None:
        result = self.client.list_all(self.resource, self.namespace, label_selector=self.label_selector,
                                      field_selector=self.field_selector, page_size=self.page_size,
                                      cancel=self._stop, page_retries=LIST_PAGE_RETRIES, each_page=self._page_items)
        self.lists += 1
        rv = (result.get("metadata") or {}).get("resourceVersion") or ""
        items = result.get("items") or []
        self.sink.replace(items, rv)
        self.last_sync_resource_version = rv
        log.debug("%s: listed %d objects at resourceVersion %s", self.name, len(items), rv)

    def _page_items(self, page: dict[str, Any]) -> list[dict[str, Any]]:
        """One list page's objects, typed (list items may omit their type; watch events always carry it) and
        prepared."""
        api_version, kind = page.get("apiVersion"), (page.get("kind") or "").removesuffix("List")
        items = page.get("items") or []
        for item in items:
            if api_version and "apiVersion" not in item:
                item["apiVersion"] = api_version
            if kind and "kind" not in item:
                item["kind"] = kind
        return items if self.prepare is None else [self.prepare(item) for item in items]

    # --- watch ----------------------------------------------------------------------------------------

    def _watch_once(self) -> None:
        """One watch, until its stream ends."""
        low, high = self.watch_timeout
        stream = self.client.watch(self.resource, self.namespace, resource_version=self.last_sync_resource_version,
                                   label_selector=self.label_selector, field_selector=self.field_selector,
                                   timeout_seconds=self._rng.randint(low, high), allow_bookmarks=True,
                                   cancel=self._stop)
        self.watches += 1
        with self._watch_lock:
            if self._stop.is_set():
                stream.close()
                return
            self._watch = stream
        started = time.monotonic()
        events = 0
        try:
            for event in stream:
                events += 1
                self.events += 1
                etype = event.get("type")
                obj = event.get("object")
                if not isinstance(obj, dict):
                    log.warning("%s: watch event without an object: %.200r", self.name, event)
                    continue
                if etype in (ADDED, MODIFIED, DELETED):
                    self.sink.apply(etype, obj)
                elif etype != BOOKMARK:
                    log.warning("%s: unknown watch event type %r", self.name, etype)
                    continue
                rv = (obj.get("metadata") or {}).get("resourceVersion")
                if rv:
                    self.last_sync_resource_version = rv
        finally:
            with self._watch_lock:
                self._watch = None
            stream.close()
            lasted = time.monotonic() - started
            served = events > 0 or lasted >= SHORT_WATCH
            if served:
                self.backoff.reset()   # earlier failures say nothing about the next one
        if not served and not self._stop.is_set():
            raise _ShortWatch(f"watch closed after {lasted:.3f}s without any event")
        log.debug("%s: watch ended after %d events; resuming from %s", self.name, events,
                  self.last_sync_resource_version)
