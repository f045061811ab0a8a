"""A shared informer: one list+watch of a resource (in a namespace, with selectors) feeding a local cache and
any number of event handlers (client-go's ``sharedIndexInformer``).

    informer = SharedInformer(client, PODS, namespace="ns", label_selector="app=x",
                              transform=drop_managed_fields, indexers={"job": label_index("job-name")})
    informer.add_handler(on_add=..., on_update=..., on_delete=...)
    informer.start()
    informer.wait_for_cache_sync(timeout=30)
    informer.store.by_index("job", "my-job")

Guarantees:
- The store always equals the server's state as of some resourceVersion the reflector reached (selectors and
  transform applied): it is changed only by the reflector's thread, each change together with its notifications.
- Every handler sees, in order, an add for each object it did not know, an update (old, new) for each change, a
  delete for each removal. A removal that happened while no watch was open is delivered as a delete of a
  :class:`DeletedFinalStateUnknown` tombstone (key + last object seen). A handler added late first gets an add
  for everything already cached.
- A relist does not re-deliver objects whose resourceVersion did not change; a handler that wants periodic
  re-delivery asks for a resync period and then gets update(obj, obj) for every cached object each period.
- Handlers run on their own named threads (``informer-<name>-h<N>``), never on the reflector's, unless added with
  ``inline=True`` (for handlers that only queue keys: see ``informer_listener``); one failing handler never stops
  delivery to itself or to others.
- The label and field selectors are sent to the server: objects that do not match are never transferred, never
  cached, never delivered (an object that stops matching is delivered as deleted).
- :meth:`stop` ends every thread of the informer, each join bounded by its timeout.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from mxjob_controller.runtime.backoff import Backoff, BackoffPolicy
from mxjob_controller.runtime.cache_keys import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    IndexFunc,
    KeyFunc,
    namespace_index,
    object_key,
)
from mxjob_controller.runtime.cache_reflector import DELETED, Reflector
from mxjob_controller.runtime.cache_store import Indexer
from mxjob_controller.runtime.client import Client, Resource
from mxjob_controller.runtime.informer_listener import (
    ADD,
    DELETE,
    SYNCED,
    UPDATE,
    Listener,
    Notification,
    OnAdd,
    OnDelete,
    OnUpdate,
)

log = logging.getLogger(__name__)

Transform = Callable[[dict[str, Any]], dict[str, Any]]
"""Applied to every object before it is cached or delivered (client-go's SetTransform). It receives a dict
freshly decoded from the server and owned by nobody else: it may change it in place and return it."""

_RESYNC_IDLE_WAIT = 60.0  # longest the resync thread sleeps before re-checking (it is also woken on changes)


def drop_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The transform most controllers want: ``metadata.managedFields`` is large and never read by them."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def informer_name(resource: Resource, namespace: str | None, label_selector: str | None,
                  field_selector: str | None) -> str:
    name = resource.qualified
    if namespace:
        name += f"@{namespace}"
    selectors = ",".join(s for s in (label_selector, field_selector) if s)
    return f"{name}[{selectors}]" if selectors else name


class HandlerRegistration:
    """What :meth:`SharedInformer.add_handler` returns: the handler's sync state, and a way to remove it."""

    def __init__(self, informer: SharedInformer, listener: Listener) -> None:
        self._informer = informer
        self._listener = listener

    def has_synced(self) -> bool:
        """True once this handler has been given (and has handled) every object of the initial list."""
        return self._listener.synced.is_set()

    def wait_for_sync(self, timeout: float) -> bool:
        return self._listener.synced.wait(timeout)

    def remove(self, timeout: float = 5.0) -> None:
        self._informer.remove_handler(self, timeout)


class SharedInformer:
    def __init__(self, client: Client, resource: Resource, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 resync_period: float = 0.0, transform: Transform | None = None,
                 indexers: Mapping[str, IndexFunc] | None = None, key_func: KeyFunc = object_key,
                 backoff_policy: BackoffPolicy | None = None, page_size: int = 500,
                 watch_timeout: tuple[int, int] = (300, 600), name: str | None = None) -> None:
        namespace = namespace if resource.namespaced else None
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector or None
        self.field_selector = field_selector or None
        self.resync_period = resync_period
        self.transform = transform
        self.name = name or informer_name(resource, namespace, self.label_selector, self.field_selector)
        self.store = Indexer(key_func, {NAMESPACE_INDEX: namespace_index, **(indexers or {})})
        self._lock = threading.RLock()  # store writes + distribution, vs. handler registration
        self._listeners: list[Listener] = []
        self._handler_count = 0
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._resync_wake = threading.Event()
        self._started = False
        self._threads: list[threading.Thread] = []
        self.reflector = Reflector(client, resource, self, name=self.name, namespace=namespace,
                                   label_selector=self.label_selector, field_selector=self.field_selector,
                                   page_size=page_size, backoff=Backoff(backoff_policy), watch_timeout=watch_timeout,
                                   prepare=self._transformed)

    # --- handlers -------------------------------------------------------------------------------------

    def add_handler(self, on_add: OnAdd | None = None, on_update: OnUpdate | None = None,
                    on_delete: OnDelete | None = None, *, resync_period: float | None = None,
                    inline: bool = False) -> HandlerRegistration:
        """Register callbacks; ``resync_period`` (default: the informer's; 0 = never) asks for update(obj, obj)
        of every cached object that often. ``inline``: call them on the informer's own threads, for handlers that
        never block (no thread of their own)."""
        with self._lock:
            self._handler_count += 1
            period = self.resync_period if resync_period is None else resync_period
            listener = Listener(f"informer-{self.name}-h{self._handler_count}", on_add, on_update, on_delete, period,
                                inline=inline)
            listener.next_resync = time.monotonic() + period
            for obj in self.store.list():   # a late handler first learns what is already known
                listener.push((ADD, obj))
            if self._synced.is_set():
                listener.push((SYNCED,))
            self._listeners.append(listener)
            if self._started and not self._stop.is_set():
                listener.start()
                if period > 0:
                    self._ensure_resync_thread()
        self._resync_wake.set()
        return HandlerRegistration(self, listener)

    def remove_handler(self, registration: HandlerRegistration, timeout: float = 5.0) -> None:
        listener = registration._listener
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)
        listener.stop(timeout)

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> SharedInformer:
        with self._lock:
            if self._started:
                return self
            if self._stop.is_set():
                raise RuntimeError(f"informer {self.name} was stopped; create a new one")
            self._started = True
            for listener in self._listeners:
                listener.start()
            thread = threading.Thread(target=self.reflector.run, name=f"informer-{self.name}", daemon=True)
            self._threads.append(thread)
            thread.start()
            if any(listener.resync_period > 0 for listener in self._listeners):
                self._ensure_resync_thread()
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the reflector, the resync thread and every handler thread; False if one outlived ``timeout``."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        self._resync_wake.set()
        self.reflector.stop()
        clean = True
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
                clean = clean and not thread.is_alive()
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            clean = listener.stop(max(0.0, deadline - time.monotonic())) and clean
        if not clean:
            log.warning("informer %s: some threads did not stop within %.1fs", self.name, timeout)
        return clean

    @property
    def started(self) -> bool:
        return self._started

    def has_synced(self) -> bool:
        """True once the initial list is in the store."""
        return self._synced.is_set()

    def wait_for_cache_sync(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    # --- the reflector's sink -------------------------------------------------------------------------

    def replace(self, objs: list[dict[str, Any]], resource_version: str) -> None:
        """A (re)list: make the store equal ``objs`` (transformed already: the reflector applies the transform to
        each page as it arrives) and tell handlers what that changed."""
        with self._lock:
            before = dict(self.store.items())
            self.store.replace(objs)
            notes: list[Notification] = []
            seen: set[str] = set()
            for obj in objs:
                key = self.store.key_func(obj)
                seen.add(key)
                old = before.get(key)
                if old is None:
                    notes.append((ADD, obj))
                elif _rv(old) != _rv(obj):
                    notes.append((UPDATE, old, obj))
            for key, old in before.items():
                if key not in seen:
                    notes.append((DELETE, DeletedFinalStateUnknown(key, old)))
            first = not self._synced.is_set()
            if first:
                self._synced.set()
                notes.append((SYNCED,))
            self._distribute(notes)
        if not first:
            log.info("informer %s: relisted at %s: %d objects, %d changes", self.name, resource_version, len(objs),
                     len(notes))

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        """One watch event."""
        obj = self._transformed(obj)
        key = self.store.key_func(obj)
        with self._lock:
            if event_type == DELETED:
                if self.store.delete(key) is not None:  # unknown objects' deletions are dropped, as client-go does
                    self._distribute([(DELETE, obj)])
                return
            old = self.store.upsert(obj, key)
            note = (ADD, obj) if old is None else (UPDATE, old, obj)
            for listener in self._listeners:   # _distribute's loop, inline: the one hot path (every watch event)
                listener.push(note)

    def _transformed(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.transform is None:
            return obj
        try:
            return self.transform(obj)
        except Exception:
            log.exception("informer %s: transform failed; caching the object as received", self.name)
            return obj

    def _distribute(self, notes: list[Notification]) -> None:
        for listener in self._listeners:
            for note in notes:
                listener.push(note)

    # --- resync ---------------------------------------------------------------------------------------

    def _ensure_resync_thread(self) -> None:
        if any(t.name.endswith("-resync") for t in self._threads):
            return
        thread = threading.Thread(target=self._resync_loop, name=f"informer-{self.name}-resync", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _resync_loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                periodic = [listener for listener in self._listeners if listener.resync_period > 0]
                due_at = min((listener.next_resync for listener in periodic), default=None)
            wait = _RESYNC_IDLE_WAIT if due_at is None else min(_RESYNC_IDLE_WAIT, due_at - time.monotonic())
            if wait > 0:
                self._resync_wake.wait(wait)
                self._resync_wake.clear()
                continue
            self._resync_due()

    def _resync_due(self) -> None:
        with self._lock:
            now = time.monotonic()
            due = [listener for listener in self._listeners
                   if listener.resync_period > 0 and listener.next_resync <= now]
            if not self._synced.is_set():  # nothing to re-deliver before the first list
                for listener in due:
                    listener.next_resync = now + listener.resync_period
                return
            objs = self.store.list()
            for listener in due:
                for obj in objs:
                    listener.push((UPDATE, obj, obj))
                listener.next_resync = now + listener.resync_period


def _rv(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("resourceVersion") or ""
