"""Repeated values of cached objects held once: interned strings and shared read-only sub-dicts (issue 48).

A controller's caches hold tens of thousands of small objects whose values repeat: every child of a job carries the
same label keys and values, the same owner reference, the same namespace, apiVersion and kind; every finished pod the
same phase and reasons. ``json.loads`` makes a new string for each value (and for each key of an object decoded
alone, as a watch event is), and a new dict for each labels map, so at 10,000 + 1,000 jobs the same few hundred
distinct values were held some hundreds of thousands of times. The cache transforms keep each once:

- :func:`interned`: a deep copy of JSON data with every key and string value interned (``sys.intern``: mortal in
  CPython, an interned string is freed with its last reference, so deleted objects leave nothing behind);
- :class:`SharedValues`: one canonical object per distinct value of a small flat sub-dict (labels) or list of flat
  dicts (owner references), and (:meth:`SharedValues.tree`) per distinct large subtree of a job's ``spec`` (the
  replica specs and pod templates that a sweep's jobs, and every job of one template, repeat): such a subtree is
  keyed by a digest of its JSON, found equal before it is shared. Its table holds a reference to each canonical
  object; entries that no cached object uses any more (only the table refers to them) are dropped whenever the
  table has doubled since the last sweep, so the table stays within twice what the caches use.

Cached objects are read-only (``runtime/informer``): sharing a sub-dict between two of them is then invisible to
their readers, which see the same values as before.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from typing import Any

_SCALARS = (str, int, float, bool, type(None))
TREE_MIN_BYTES = 256   # a smaller subtree is copied, not shared: its digest and table entry would cost about as much


def interned(value: Any) -> Any:
    """``value`` (JSON data) copied with every dict key and every string interned."""
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k) if isinstance(k, str) else k: interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [interned(v) for v in value]
    return value


def _flat_key(d: dict[str, Any]) -> tuple[tuple[str, type, Any], ...] | None:
    """The dict's items (with each value's type: ``True`` equals ``1`` and ``1.0``, but is not the same JSON) as a
    hashable key, or None when a key is not a string or a value not a scalar."""
    key = []
    for k, v in d.items():
        if not isinstance(k, str) or not isinstance(v, _SCALARS):
            return None
        key.append((k, type(v), v))
    return tuple(key)


class SharedValues:
    """One canonical copy per distinct flat dict or list of flat dicts, for cache transforms (thread-safe: the
    transforms of several informers run on their reflectors' threads)."""

    MIN_SWEEP = 1024

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: dict[Any, Any] = {}
        self._sweep_at = self.MIN_SWEEP

    def __len__(self) -> int:
        return len(self._table)

    def flat_dict(self, d: Any) -> Any:
        """The canonical copy of ``d`` (a dict of string keys and scalar values, strings interned); anything else is
        returned as it is."""
        if not isinstance(d, dict):
            return d
        key = _flat_key(d)
        if key is None:
            return interned(d)
        return self._canonical(("d", key), lambda: interned(d))

    def dict_list(self, entries: Any) -> Any:
        """The canonical copy of ``entries`` (a list of flat dicts); anything else is returned as it is."""
        if not isinstance(entries, list):
            return entries
        keys = []
        for e in entries:
            key = _flat_key(e) if isinstance(e, dict) else None
            if key is None:
                return interned(entries)
            keys.append(key)
        return self._canonical(("l", tuple(keys)), lambda: interned(entries))

    def tree(self, value: Any, min_bytes: int = TREE_MIN_BYTES) -> Any:
        """``value`` (JSON data) copied with strings interned, and each dict or list of it whose JSON takes at least
        ``min_bytes`` replaced by the canonical copy of an equal one (shared by every cached object that holds it)."""
        if isinstance(value, str):
            return sys.intern(value)
        if isinstance(value, dict):
            copy: Any = {sys.intern(k) if isinstance(k, str) else k: self.tree(v, min_bytes) for k, v in value.items()}
        elif isinstance(value, list):
            copy = [self.tree(v, min_bytes) for v in value]
        else:
            return value
        try:
            encoded = json.dumps(copy, separators=(",", ":"), allow_nan=False).encode()
        except (TypeError, ValueError):   # not JSON (a tuple key, NaN): held as it is
            return copy
        if len(encoded) < min_bytes:
            return copy
        key = ("t", hashlib.blake2b(encoded, digest_size=16).digest())
        with self._lock:
            found = self._table.get(key)
        if found is not None and found == copy:
            return found
        return copy if found is not None else self._canonical(key, lambda: copy)

    def _canonical(self, key: Any, build: Any) -> Any:
        with self._lock:
            found = self._table.get(key)
            if found is not None:
                return found
            value = build()
            self._table[key] = value
            if len(self._table) >= self._sweep_at:
                self._sweep()
            return value

    def _sweep(self) -> None:
        """Drop the entries only the table refers to (``getrefcount``: the table's reference and its argument's)."""
        table = self._table
        for key in list(table):
            if sys.getrefcount(table[key]) <= 2:
                del table[key]
        self._sweep_at = max(self.MIN_SWEEP, 2 * len(table))
