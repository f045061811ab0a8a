"""The in-memory, versioned object store behind the embedded API server.

It plays etcd plus kube-apiserver's watch cache:
- one global resourceVersion, strictly increasing across every kind, bumped by each committed write;
- compare-and-swap writes (``expect_rv``), so concurrent updates conflict instead of overwriting;
- per-kind bounded history for watch resumption and consistent paginated lists;
- watchers registered atomically with their backlog, so none misses or duplicates an event;
- commit hooks called in commit order (under the lock), so what they index follows the store exactly;
- only what JSON can carry is stored: each object is encoded at commit time, and one that cannot be is refused
  whole (:class:`Unserialisable`) before anything changes.

Objects are plain dicts and are never mutated once stored: readers may hand them out without copying.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mxjob_controller.local.apiserver.watch import (
    ADDED,
    DELETED,
    MODIFIED,
    Entry,
    Event,
    History,
    Matcher,
    Watcher,
    encode_json,
    now,
)

log = logging.getLogger(__name__)

ObjKey = tuple[str, str]  # (namespace, name); namespace is "" for cluster-scoped objects


class Conflict(Exception):  # noqa: N818 - mirrors the API's reason
    """A compare-and-swap lost: the object changed (or vanished) since the caller read it."""


class Exists(Exception):  # noqa: N818
    """Create of a key that is taken."""


class Missing(Exception):  # noqa: N818
    """Update or delete of a key that is absent."""


class Unserialisable(ValueError):  # noqa: N818
    """A write of an object JSON cannot encode (a date, NaN, ...): refused, the store is unchanged."""


class TooOld(Exception):  # noqa: N818
    """A resourceVersion older than the retained history."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


@dataclass(frozen=True, slots=True)
class StoreOptions:
    history_events: int = 10_000   # per kind
    history_age: float = 900.0     # seconds; 0 keeps events until the count bound drops them
    watcher_queue: int = 10_000    # events a watcher may lag behind before it is disconnected


CommitHook = Callable[[str, Event], None]


class Store:
    def __init__(self, options: StoreOptions | None = None) -> None:
        self.options = options or StoreOptions()
        self._lock = threading.RLock()
        self._rv = 0
        self._objects: dict[str, dict[ObjKey, Entry]] = {}
        self._history: dict[str, History] = {}
        self._watchers: dict[str, set[Watcher]] = {}
        self._hooks: list[CommitHook] = []

    # --- reads ----------------------------------------------------------------------------------------

    @property
    def lock(self) -> threading.RLock:
        """Held by every write; hold it to read several keys consistently."""
        return self._lock

    @property
    def resource_version(self) -> int:
        return self._rv

    def get(self, key: str, okey: ObjKey) -> Entry | None:
        return self._objects.get(key, {}).get(okey)

    def list(self, key: str, namespace: str | None = None) -> tuple[list[tuple[ObjKey, Entry]], int]:
        """Every object of ``key`` (in ``namespace`` if given), sorted by (namespace, name), and the RV."""
        with self._lock:
            objs = self._objects.get(key, {})
            items = [(k, e) for k, e in objs.items() if namespace is None or k[0] == namespace]
            rv = self._rv
        items.sort(key=lambda kv: kv[0])
        return items, rv

    def list_at(self, key: str, rv: int, namespace: str | None = None) -> list[tuple[ObjKey, Entry]]:
        """The objects of ``key`` as they were at ``rv`` (consistent pagination); TooOld if forgotten."""
        with self._lock:
            hist = self._hist(key)
            if rv < hist.compacted_rv:
                raise TooOld(rv, hist.oldest_available())
            state = dict(self._objects.get(key, {}))
            for ev in reversed(hist.since(rv)):
                okey = _okey(ev.entry.obj)
                if ev.type == ADDED:
                    state.pop(okey, None)
                elif ev.prev is not None:
                    state[okey] = ev.prev
        items = [(k, e) for k, e in state.items() if namespace is None or k[0] == namespace]
        items.sort(key=lambda kv: kv[0])
        return items

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._objects)

    def iter_all(self, key: str) -> Iterator[Entry]:
        with self._lock:
            entries = list(self._objects.get(key, {}).values())
        return iter(entries)

    # --- writes ---------------------------------------------------------------------------------------

    def create(self, key: str, obj: dict) -> Entry:
        """Store a new object, setting ``metadata.resourceVersion``. Raises Exists."""
        okey = _okey(obj)
        with self._lock:
            objs = self._objects.setdefault(key, {})
            if okey in objs:
                raise Exists(okey)
            entry = self._commit(key, obj)
            objs[okey] = entry
            self._publish(key, Event(ADDED, entry.rv, entry, None, now()))
        return entry

    def update(self, key: str, obj: dict, expect_rv: int | None) -> Entry:
        """Replace an object if its stored RV is ``expect_rv`` (None: unconditionally).

        Raises Missing or Conflict. An update that changes nothing keeps the old version and sends no
        event, as etcd-backed kube-apiserver does.
        """
        okey = _okey(obj)
        with self._lock:
            objs = self._objects.get(key, {})
            old = _expect(objs, okey, expect_rv)
            if _same_apart_from_rv(old.obj, obj):
                return old
            entry = self._commit(key, obj)
            objs[okey] = entry
            self._publish(key, Event(MODIFIED, entry.rv, entry, old, now()))
        return entry

    def delete(self, key: str, okey: ObjKey, expect_rv: int | None = None,
               expect_uid: str | None = None) -> Entry:
        """Remove an object; returns its last state with the deletion's resourceVersion."""
        with self._lock:
            objs = self._objects.get(key, {})
            old = _expect(objs, okey, expect_rv)
            if expect_uid is not None and old.obj.get("metadata", {}).get("uid") != expect_uid:
                raise Conflict(okey)
            final = dict(old.obj)
            final["metadata"] = dict(old.obj.get("metadata", {}))
            entry = self._commit(key, final)
            del objs[okey]
            self._publish(key, Event(DELETED, entry.rv, entry, old, now()))
        return entry

    def _commit(self, key: str, obj: dict) -> Entry:
        """The next version of ``obj``, encoded; Unserialisable (nothing changed) if JSON cannot carry it."""
        rv = self._rv + 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
        try:
            raw = encode_json(obj)
        except (TypeError, ValueError) as e:
            raise Unserialisable(f"cannot store {key} object: {e}") from e
        self._rv = rv
        return Entry(obj, rv, raw)

    def _hist(self, key: str) -> History:
        hist = self._history.get(key)
        if hist is None:
            hist = self._history[key] = History(self.options.history_events, self.options.history_age)
        return hist

    def _publish(self, key: str, ev: Event) -> None:
        """Record, tell the watchers, then the hooks: all under the lock, so in commit order."""
        self._hist(key).append(ev)
        watchers = self._watchers.get(key)
        if watchers:
            for w in list(watchers):
                if not w.offer(ev):
                    watchers.discard(w)
        for hook in self._hooks:
            try:
                hook(key, ev)
            except Exception:  # the write is committed: a hook's bug must not fail it, nor skip the others
                log.exception("commit hook %r failed on %s event of %s", hook, ev.type, key)

    def add_commit_hook(self, hook: CommitHook) -> None:
        """Call ``hook(key, event)`` for every committed write, on the writer's thread, under the store's lock.

        Hooks therefore see the writes in commit order, never two at once. A hook must only record and queue:
        no blocking, no write to the store, and no lock that is held elsewhere while waiting for the store's.
        """
        with self._lock:
            self._hooks = [*self._hooks, hook]

    # --- watch ----------------------------------------------------------------------------------------

    def watch(self, key: str, matcher: Matcher, since: int | None,
              namespace: str | None = None) -> Watcher:
        """Register a watcher on ``key``.

        ``since`` None: synthetic ADDED events for every current object, then changes (RV unset or "0").
        ``since`` N: every retained change after N, then live ones; TooOld if history no longer reaches N.
        """
        with self._lock:
            w = Watcher(key, matcher, self.options.watcher_queue)
            if since is None:
                backlog = [Event(ADDED, e.rv, e, None, now())
                           for k, e in sorted(self._objects.get(key, {}).items())
                           if namespace is None or k[0] == namespace]
            else:
                hist = self._hist(key)
                if since < hist.compacted_rv:
                    raise TooOld(since, hist.oldest_available())
                backlog = hist.since(since)
            for ev in backlog:
                if not w.offer(ev):
                    break
            if not w.closed.is_set():
                self._watchers.setdefault(key, set()).add(w)
            return w

    def stop_watch(self, w: Watcher) -> None:
        with self._lock:
            self._watchers.get(w.key, set()).discard(w)
        w.close(w.close_reason or "stopped")

    def watchers(self, key: str | None = None) -> list[Watcher]:
        with self._lock:
            if key is not None:
                return list(self._watchers.get(key, ()))
            return [w for ws in self._watchers.values() for w in ws]

    def bookmark_rv(self, w: Watcher) -> int | None:
        """A resourceVersion the watcher has seen everything up to, or None while it has events queued."""
        with self._lock:
            if w.pending():
                return None
            return self._rv

    def compact(self, key: str | None = None) -> int:
        """Forget all history (of ``key`` or every kind) up to now; returns the compaction point."""
        with self._lock:
            for k in [key] if key else list(set(self._history) | set(self._objects)):
                self._hist(k).compact(self._rv)
            return self._rv

    def close_watchers(self, reason: str = "server shutting down") -> None:
        with self._lock:
            for ws in self._watchers.values():
                for w in ws:
                    w.close(reason)
            self._watchers.clear()


def _expect(objs: dict[ObjKey, Entry], okey: ObjKey, expect_rv: int | None) -> Entry:
    """The stored entry a write replaces: Missing if absent, Conflict if not at ``expect_rv``."""
    old = objs.get(okey)
    if old is None:
        raise Missing(okey)
    if expect_rv is not None and old.rv != expect_rv:
        raise Conflict(okey)
    return old


def _okey(obj: dict) -> ObjKey:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _same_apart_from_rv(a: dict, b: dict) -> bool:
    if a.keys() != b.keys():
        return False
    for k, v in a.items():
        if k == "metadata":
            ma, mb = v, b[k]
            if {x for x in ma if x != "resourceVersion"} != {x for x in mb if x != "resourceVersion"}:
                return False
            if any(ma[x] != mb[x] for x in ma if x != "resourceVersion"):
                return False
        elif v != b[k]:
            return False
    return True
