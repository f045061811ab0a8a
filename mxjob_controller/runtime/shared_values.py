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
  replica specs and pod templates that a sweep's jobs, and every job of one template, repeat). Every entry is keyed
  by a 17-byte digest of the value's compact JSON (for a subtree, of its JSON with each large child's digest in
  place of the child: each node is encoded once), and found equal before it is shared. Keys holding the values'
  items instead (tuples, and through them the decoded strings of the first object seen, uninterned) cost 7.5 KB of
  a 1/1/1 job's 24 KB of cache (tracemalloc). The table holds a reference to each canonical object; entries that no
  cached object uses any more (only the table refers to them) are dropped whenever the table has doubled since the
  last sweep, so the table stays within twice what the caches use.

Cached objects are read-only (``runtime/informer``): sharing a sub-dict between two of them is then invisible to
their readers, which see the same values as before.
"""

from __future__ import annotations

import hashlib
import math
import sys
import threading
from json.encoder import encode_basestring_ascii
from typing import Any

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


_encode_string = encode_basestring_ascii   # a string's JSON, as json.dumps writes it (C)


def _scalar_json(value: Any) -> str | None:
    """A scalar's JSON as ``json.dumps`` writes it; None for what is not JSON (NaN, infinities, other types)."""
    if isinstance(value, str):
        return _encode_string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return float.__repr__(value) if math.isfinite(value) else None
    return None


def _flat_json(d: dict[str, Any]) -> str | None:
    """The dict's compact JSON (which tells ``True`` from ``1`` and ``1.0``, as Python's ``==`` does not), or None
    when a key is not a string or a value not a scalar."""
    parts = []
    for k, v in d.items():
        text = _scalar_json(v) if isinstance(k, str) else None
        if text is None:
            return None
        parts.append(f"{_encode_string(k)}:{text}")
    return "{" + ",".join(parts) + "}"


def _digest(kind: bytes, text: str) -> bytes:
    """The table key of a value whose JSON (or the JSON its digests stand in) is ``text``: 17 bytes, where the JSON
    itself or a tuple of its items would hold a second copy of every key and value of the first object seen."""
    return kind + hashlib.blake2b(text.encode(), digest_size=16).digest()


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
        text = _flat_json(d)
        if text is None:
            return interned(d)
        return self._shared(_digest(b"d", text), d, lambda: interned(d))

    def dict_list(self, entries: Any) -> Any:
        """The canonical copy of ``entries`` (a list of flat dicts); anything else is returned as it is."""
        if not isinstance(entries, list):
            return entries
        texts = []
        for e in entries:
            text = _flat_json(e) if isinstance(e, dict) else None
            if text is None:
                return interned(entries)
            texts.append(text)
        return self._shared(_digest(b"l", "[" + ",".join(texts) + "]"), entries, lambda: interned(entries))

    def tree(self, value: Any, min_bytes: int = TREE_MIN_BYTES) -> Any:
        """``value`` (JSON data) copied with strings interned, and each dict or list of it whose JSON takes at least
        ``min_bytes`` replaced by the canonical copy of an equal one (shared by every cached object that holds it)."""
        return self._tree(value, min_bytes)[0]

    def _tree(self, value: Any, min_bytes: int) -> tuple[Any, int, str | None]:
        """(the copy, the length of its compact JSON, its token), in one walk that encodes each node once (a
        ``json.dumps`` of each subtree, as this once did, made the walk O(size * depth)). The token of a node
        smaller than ``min_bytes`` is its compact JSON; a larger one's is ``"\0"`` and its digest, which stands for
        it in its parent's digest (as in a Merkle tree); None: not JSON (a non-string key, NaN, a tuple): then
        neither it nor anything holding it is shared."""
        if isinstance(value, str):
            value = sys.intern(value)
            text: str | None = _encode_string(value)
            return value, len(text), text
        if isinstance(value, dict):
            copy: Any = {}
            tokens: list[str] | None = []
            length = 1 + max(len(value), 1)   # the braces and the commas
            for raw_key, v in value.items():
                child, child_length, token = self._tree(v, min_bytes)
                k = sys.intern(raw_key) if isinstance(raw_key, str) else raw_key
                copy[k] = child
                if tokens is None:
                    continue
                if token is None or not isinstance(k, str):
                    tokens = None
                    continue
                key_text = _encode_string(k)
                tokens.append(f"{key_text}:{token}")
                length += len(key_text) + 1 + child_length
            opening, closing = "{", "}"
        elif isinstance(value, list):
            copy = []
            tokens = []
            length = 1 + max(len(value), 1)
            for v in value:
                child, child_length, token = self._tree(v, min_bytes)
                copy.append(child)
                if tokens is None:
                    continue
                if token is None:
                    tokens = None
                    continue
                tokens.append(token)
                length += child_length
            opening, closing = "[", "]"
        else:
            text = _scalar_json(value)
            return value, 0 if text is None else len(text), text
        if tokens is None:
            return copy, 0, None
        text = opening + ",".join(tokens) + closing
        if length < min_bytes:
            return copy, length, text
        key = _digest(b"t", text)
        return self._shared(key, copy, lambda: copy), length, "\0" + key.hex()

    def _shared(self, key: bytes, value: Any, build: Any) -> Any:
        """The canonical object under ``key`` if it equals ``value`` (digests of different values could collide),
        else (and then kept under it) ``build()``."""
        with self._lock:
            found = self._table.get(key)
        if found is None:
            return self._canonical(key, build)
        return found if found == value else build()

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
