"""The informer's cache: a thread-safe map from key to object with secondary indexes (client-go's
``cache.Indexer`` over ``threadSafeMap``).

Guarantees:
- Every read sees a state that some sequence of complete writes produced: an object and its index entries
  change together, under one lock.
- An index function that raises leaves the store unchanged (values are computed before anything is touched).
- Objects are stored and returned as they are, never copied: they belong to the cache, and callers must treat
  them as read-only (copy before changing one), as with client-go's listers.

Index functions must be pure functions of the object (as client-go's): the values a stored object is indexed under
are not kept beside it but computed again from it when it is replaced or removed (client-go's ``updateIndices``
does the same), since a dict and a list per object and index held a tenth of a large cache (issue 48).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from mxjob_controller.runtime.cache_keys import IndexFunc, KeyFunc, object_key

Obj = dict[str, Any]
Bucket = tuple[str, ...] | set[str]
"""The keys under one index value: a tuple while they are few (a job's three pods: 64 bytes where a set takes 216,
and a cache holds a bucket per job), a set from :data:`SMALL_BUCKET` on (one namespace's every object)."""
SMALL_BUCKET = 8


class Indexer:
    def __init__(self, key_func: KeyFunc = object_key, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self.key_func = key_func
        self._lock = threading.RLock()
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, IndexFunc] = {}
        self._indices: dict[str, dict[str, Bucket]] = {}   # index name -> value -> keys
        if indexers:
            self.add_indexers(indexers)

    # --- writes ---------------------------------------------------------------------------------------

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes (and index what is already stored). Re-adding the same function is a no-op; another
        function under a taken name is an error."""
        with self._lock:
            new = {}
            for name, func in indexers.items():
                existing = self._indexers.get(name)
                if existing is not None and existing is not func:
                    raise ValueError(f"index {name!r} already exists with another function")
                if existing is None:
                    new[name] = func
            computed = {key: {name: list(func(obj)) for name, func in new.items()} for key, obj in self._items.items()}
            for name, func in new.items():
                self._indexers[name] = func
                self._indices[name] = {}
            for key, by_name in computed.items():
                self._index(key, by_name)

    def upsert(self, obj: Obj, key: str | None = None) -> Obj | None:
        """Store ``obj`` under its key (``key`` when the caller computed it already); returns what it replaced."""
        if key is None:
            key = self.key_func(obj)
        with self._lock:
            values = self._compute(obj)
            old = self._items.get(key)
            old_values = self._compute(old) if old is not None else None
            self._items[key] = obj
            if old_values is not None:
                if old_values == values:   # the usual update (a pod's status): its index entries stay
                    return old
                self._unindex(key, old_values)
            self._index(key, values)
            return old

    def delete(self, key: str) -> Obj | None:
        """Remove the object under ``key``; returns it (None if there was none)."""
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._unindex(key, self._compute(old))
                del self._items[key]
            return old

    def replace(self, objs: Iterable[Obj]) -> None:
        """Make the store hold exactly ``objs``."""
        with self._lock:
            staged = [(self.key_func(obj), obj, self._compute(obj)) for obj in objs]
            self._items.clear()
            for name in self._indices:
                self._indices[name] = {}
            for key, obj, values in staged:
                if key in self._items:
                    self._unindex(key, self._compute(self._items[key]))
                self._items[key] = obj
                self._index(key, values)

    # --- reads ----------------------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        with self._lock:
            return self._items.get(key)

    def list(self) -> list[Obj]:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def items(self) -> list[tuple[str, Obj]]:
        with self._lock:
            return list(self._items.items())

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def by_index(self, index: str, value: str) -> list[Obj]:
        """The objects whose index function returned ``value`` (e.g. every pod a job controls)."""
        with self._lock:
            return [self._items[k] for k in self._index_keys(index, value)]

    def index_keys(self, index: str, value: str) -> list[str]:
        with self._lock:
            return list(self._index_keys(index, value))

    def indexers(self) -> dict[str, IndexFunc]:
        with self._lock:
            return dict(self._indexers)

    # --- internals ------------------------------------------------------------------------------------

    def _require(self, index: str) -> None:
        if index not in self._indexers:
            raise KeyError(f"index {index!r} does not exist")

    def _index_keys(self, index: str, value: str) -> Collection[str]:
        self._require(index)
        return self._indices[index].get(value, ())

    def _compute(self, obj: Obj) -> dict[str, list[str]]:
        return {name: list(func(obj)) for name, func in self._indexers.items()}

    def _index(self, key: str, values: dict[str, list[str]]) -> None:
        for name, vals in values.items():
            index = self._indices[name]
            for v in vals:
                keys = index.get(v)
                if keys is None:
                    index[v] = (key,)
                elif isinstance(keys, set):
                    keys.add(key)
                elif key not in keys:
                    index[v] = (*keys, key) if len(keys) < SMALL_BUCKET else {*keys, key}

    def _unindex(self, key: str, values: dict[str, list[str]]) -> None:
        for name, vals in values.items():
            index = self._indices[name]
            for v in vals:
                keys = index.get(v)
                if keys is None:
                    continue
                if isinstance(keys, set):
                    keys.discard(key)
                elif key in keys:
                    keys = tuple(k for k in keys if k != key)
                    index[v] = keys
                if not keys:
                    del index[v]
