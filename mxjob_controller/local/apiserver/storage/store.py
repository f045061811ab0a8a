"""The in-memory, versioned object store behind the embedded API server.

It plays etcd plus kube-apiserver's watch cache:
- one global resourceVersion, strictly increasing across every kind, bumped by each committed write;
- compare-and-swap writes (``expect_rv``), so concurrent updates conflict instead of overwriting;
- per-kind history for watch resumption and consistent paginated lists, bounded by count per kind, by age (also
  on a timer, :meth:`Store.start_pruning`, so a quiet kind's history goes too: a deleted object's old versions
  with it) and by the bytes all kinds' histories keep alive together (the oldest events go first, whatever their
  kind, as an etcd compaction takes the oldest revisions); a resume from before what is kept gets 410;
- watchers registered atomically with their backlog, so none misses or duplicates an event; a watch from a version
  the store has not reached yet starts there (it gets only later events, as kube's watch cache gives them);
- a wait for a version the store has not reached (:meth:`Store.wait_until`, the watch cache's
  ``waitUntilFreshAndBlock``): bounded by ``block_timeout`` (kube's 3 s), on a condition every write signals, so the
  waiter holds no store lock and delays no writer;
- commit hooks called in commit order (under the lock), so what they index follows the store exactly;
- only what JSON can carry is stored: each object is encoded at commit time, and one that cannot be is refused
  whole (:class:`Unserialisable`) before anything changes; so is one whose encoding passes etcd's request limit
  (:class:`TooLarge`, 1.5 MiB: what kube-apiserver's etcd refuses, however the object grew: a patch, an apply).

Objects are plain dicts and are never mutated once stored: readers may hand them out without copying.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mxjob_controller.kube.limits import MAX_OBJECT_BYTES
from mxjob_controller.kube.vocabulary import BOOKMARK
from mxjob_controller.local.apiserver.storage.json_parts import encode_stored
from mxjob_controller.local.apiserver.storage.memory import release_free_memory
from mxjob_controller.local.apiserver.storage.watch import (
    ADDED,
    DELETED,
    MAX_BACKLOG_BYTES,
    MODIFIED,
    Entry,
    Event,
    History,
    Matcher,
    SharedEncodings,
    Watcher,
    event_bytes,
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


class TooLarge(Exception):  # noqa: N818
    """A write of an object whose encoding passes the store's limit: refused, the store is unchanged. kube-apiserver
    answers etcd's refusal as an error it has no Status for: 500, ``etcdserver: request is too large``."""

    MESSAGE = "etcdserver: request is too large"

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(self.MESSAGE)
        self.size = size
        self.limit = limit


class TooOld(Exception):  # noqa: N818
    """A resourceVersion older than the retained history."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


HISTORY_AGE = 75.0        # kube's watch cache keeps at least this much (its eventFreshDuration)
HISTORY_BYTES = 64 << 20  # what every kind's history together may keep alive, encoded
RELEASE_AFTER = 16 << 20  # bytes freed before the pruner hands free memory back to the system
RELEASE_EVERY = 30.0      # seconds: and at least this often (answers and requests are freed too, not only history)
PRUNE_EVERY = 5.0         # seconds between prunings, at most
BLOCK_TIMEOUT = 3.0       # seconds a read waits for a version not reached yet (the watch cache's blockTimeout)


@dataclass(frozen=True, slots=True)
class StoreOptions:
    history_events: int = 10_000         # per kind
    history_age: float = HISTORY_AGE     # seconds; 0 keeps events until the count or bytes bound drops them
    watcher_queue: int = 10_000          # events a watcher may lag behind before it is disconnected
    history_bytes: int = HISTORY_BYTES   # across kinds (event_bytes); 0: no bound
    watcher_bytes: int = MAX_BACKLOG_BYTES  # encoded bytes of live events a watcher may lag behind; 0: no bound
    max_object_bytes: int = MAX_OBJECT_BYTES  # an object's encoded size, at most (TooLarge past it); 0: no bound
    block_timeout: float = BLOCK_TIMEOUT  # seconds :meth:`Store.wait_until` waits for a version at most


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
        self._object_bytes: dict[str, int] = {}   # encoded bytes of the current objects, per key
        self._history_bytes = 0                   # the sum of every history's bytes
        self._freed = 0                           # bytes dropped since free memory was last handed back
        self._pruner: threading.Thread | None = None
        self._pruning_stops = threading.Event()
        self.encodings = SharedEncodings()   # the forms of objects that watch frames share
        # Signalled by every committed write (under the store's lock, briefly); waited on without it (wait_until).
        self._advanced = threading.Condition(threading.Lock())
        self._waiting = 0   # readers in wait_until now (kube's watch cache counts them too: waitingUntilFresh)
        self._waits_ended = False   # end_waits: the server is stopping, no reader waits any more

    # --- reads ----------------------------------------------------------------------------------------

    @property
    def lock(self) -> threading.RLock:
        """Held by every write; hold it to read several keys consistently."""
        return self._lock

    @property
    def resource_version(self) -> int:
        return self._rv

    def wait_until(self, rv: int, timeout: float | None = None) -> bool:
        """Block until the store has reached ``rv`` (True), or ``timeout`` seconds (default ``block_timeout``) have
        passed (False): the watch cache's ``waitUntilFreshAndBlock``. Holds no store lock while it waits: writers
        signal a condition of its own, so a waiting reader delays neither writers nor other readers."""
        if self._rv >= rv:
            return True
        wait = self.options.block_timeout if timeout is None else timeout
        with self._advanced:
            self._waiting += 1
            try:
                self._advanced.wait_for(lambda: self._rv >= rv or self._waits_ended, wait)
                return self._rv >= rv
            finally:
                self._waiting -= 1

    def end_waits(self) -> None:
        """End every :meth:`wait_until` now, and any later one at once (the server is stopping: its readers answer
        rather than hold the stop up to ``block_timeout``)."""
        with self._advanced:
            self._waits_ended = True
            self._advanced.notify_all()

    def waiting(self) -> int:
        """How many readers are in :meth:`wait_until` now."""
        with self._advanced:
            return self._waiting

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
            self.require_history(key, rv)
            hist = self._hist(key)
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

    def require_history(self, key: str, rv: int) -> None:
        """TooOld unless the history of ``key`` still reaches back to ``rv``: a paged list's snapshot at ``rv`` may
        be read only as long as etcd would still answer at that revision."""
        with self._lock:
            hist = self._hist(key)
            if rv < hist.compacted_rv:
                raise TooOld(rv, hist.oldest_available())

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
            self._count_object(key, entry, None)
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
            entry = self._commit(key, obj, old)
            objs[okey] = entry
            self._count_object(key, entry, old)
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
            entry = self._commit(key, final, old)
            del objs[okey]
            self._count_object(key, None, old)
            self._publish(key, Event(DELETED, entry.rv, entry, old, now()))
        return entry

    def _commit(self, key: str, obj: dict, prior: Entry | None = None) -> Entry:
        """The next version of ``obj`` (of ``prior``, the version it replaces), encoded (the parts it shares with
        ``prior`` copied from its bytes); Unserialisable (nothing changed) if JSON cannot carry it."""
        rv = self._rv + 1
        obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
        try:
            if prior is None:
                raw, spans = encode_stored(obj)
            else:
                raw, spans = encode_stored(obj, prior.obj, prior.raw, prior.spans)
        except (TypeError, ValueError) as e:
            raise Unserialisable(f"cannot store {key} object: {e}") from e
        limit = self.options.max_object_bytes
        if limit and len(raw) + len(key) > limit:   # etcd counts the key with the value
            log.info("refusing a %s object of %d bytes: over the %d-byte limit", key, len(raw), limit)
            raise TooLarge(len(raw), limit)
        self._rv = rv
        return Entry(obj, rv, raw, spans)

    def _hist(self, key: str) -> History:
        hist = self._history.get(key)
        if hist is None:
            hist = self._history[key] = History(self.options.history_events, self.options.history_age)
        return hist

    def _count_object(self, key: str, new: Entry | None, old: Entry | None) -> None:
        change = (len(new.raw) if new is not None else 0) - (len(old.raw) if old is not None else 0)
        self._object_bytes[key] = self._object_bytes.get(key, 0) + change

    def _record(self, key: str, ev: Event) -> None:
        """Append to ``key``'s history, then drop the oldest events of any kind while the histories keep more
        bytes than the bound."""
        hist = self._hist(key)
        before, added = hist.bytes, event_bytes(ev)
        hist.append(ev)   # which may drop its oldest events (count, age)
        dropped = before + added - hist.bytes
        self._history_bytes += added - dropped
        self._freed += dropped
        bound = self.options.history_bytes
        while bound and self._history_bytes > bound:
            oldest = min((h for h in self._history.values() if h.events), key=lambda h: h.events[0].rv, default=None)
            if oldest is None:
                break
            self._shrink(oldest, oldest.drop_oldest)

    def _shrink(self, hist: History, drop: Callable[[], None]) -> None:
        """Run ``drop`` (which forgets events of ``hist``), counting the bytes it lets go."""
        before = hist.bytes
        drop()
        self._history_bytes -= before - hist.bytes
        self._freed += before - hist.bytes

    def _publish(self, key: str, ev: Event) -> None:
        """Record, tell the watchers, then the hooks: all under the lock, so in commit order; then wake the readers
        waiting for a version (:meth:`wait_until`)."""
        self._record(key, ev)
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
        if self._waiting:   # read unlocked: a reader counted after this read sees the new _rv before it waits
            with self._advanced:
                self._advanced.notify_all()

    def add_commit_hook(self, hook: CommitHook) -> None:
        """Call ``hook(key, event)`` for every committed write, on the writer's thread, under the store's lock.

        Hooks therefore see the writes in commit order, never two at once. A hook must only record and queue:
        no blocking, no write to the store, and no lock that is held elsewhere while waiting for the store's.
        """
        with self._lock:
            self._hooks = [*self._hooks, hook]

    # --- watch ----------------------------------------------------------------------------------------

    def watch(self, key: str, matcher: Matcher, since: int | None,
              namespace: str | None = None, initial_events_end: bool = False) -> Watcher:
        """Register a watcher on ``key``.

        ``since`` None: synthetic ADDED events for every current object, then changes (RV unset or "0"); with
        ``initial_events_end``, a BOOKMARK event at the store's resourceVersion right after those ADDED events
        (a WatchList's end of initial events: its entry is empty).
        ``since`` N: every retained change after N, then live ones; TooOld if history no longer reaches N. An N the
        store has not reached: the changes after N only, when they come (kube's watch cache does not wait there:
        "clients can wait for events without unnecessary blocking").
        """
        with self._lock:
            w = Watcher(key, matcher, self.options.watcher_queue, self.options.watcher_bytes)
            if since is None:
                backlog = [Event(ADDED, e.rv, e, None, now())
                           for k, e in sorted(self._objects.get(key, {}).items())
                           if namespace is None or k[0] == namespace]
            else:
                hist = self._hist(key)
                if since < hist.compacted_rv:
                    raise TooOld(since, hist.oldest_available())
                backlog = hist.since(since)
                if since > self._rv:
                    w.after = since
            for ev in backlog:
                if not w.offer(ev, initial=True):
                    break
            if initial_events_end and since is None:
                w.mark(Event(BOOKMARK, self._rv, Entry({}, self._rv), None, now()))
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
            if w.pending() or self._rv < w.after:
                return None
            return self._rv

    def compact(self, key: str | None = None) -> int:
        """Forget all history (of ``key`` or every kind) up to now; returns the compaction point."""
        with self._lock:
            rv = self._rv
            for k in [key] if key else list(set(self._history) | set(self._objects)):
                hist = self._hist(k)
                self._shrink(hist, lambda h=hist: h.compact(rv))
            return rv

    # --- what it keeps ------------------------------------------------------------------------------

    def footprint(self) -> dict[str, tuple[int, int]]:
        """Storage key → (encoded bytes of its current objects, bytes its watch history keeps alive beside them)."""
        with self._lock:
            return {k: (self._object_bytes.get(k, 0), h.bytes if (h := self._history.get(k)) else 0)
                    for k in set(self._object_bytes) | set(self._history)}

    def prune(self, at: float | None = None) -> int:
        """Forget every kind's events older than the age bound at ``at`` (default now), whether or not a later
        event of that kind came; returns the bytes let go since the last call that reported them."""
        at = now() if at is None else at
        with self._lock:
            for hist in list(self._history.values()):
                self._shrink(hist, lambda h=hist: h.prune(at))
            freed, self._freed = self._freed, 0
        return freed

    def start_pruning(self) -> None:
        """Prune on a named thread (until :meth:`stop_pruning`) a few times per age bound, at most every
        ``PRUNE_EVERY`` seconds, and hand free memory back to the system once the store has let go of enough, and
        every ``RELEASE_EVERY`` seconds for what requests and answers left behind: the allocator keeps it
        otherwise."""
        if self._pruner is not None:
            return
        age = self.options.history_age
        interval = min(PRUNE_EVERY, age / 4) if age > 0 else PRUNE_EVERY
        self._pruning_stops.clear()

        def run() -> None:
            pending, released = 0, time.monotonic()
            while not self._pruning_stops.wait(interval):
                pending += self.prune()
                if pending >= RELEASE_AFTER or time.monotonic() - released >= RELEASE_EVERY:
                    pending, released = 0, time.monotonic()
                    release_free_memory()

        self._pruner = threading.Thread(target=run, name="apiserver-history-pruner", daemon=True)
        self._pruner.start()

    def stop_pruning(self, timeout: float = 5.0) -> bool:
        """End the pruning thread; False if it is still running after ``timeout`` seconds."""
        pruner, self._pruner = self._pruner, None
        if pruner is None:
            return True
        self._pruning_stops.set()
        pruner.join(timeout)
        return not pruner.is_alive()

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
