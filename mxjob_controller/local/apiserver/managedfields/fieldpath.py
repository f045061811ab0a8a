"""Paths into an object and sets of them, in the FieldsV1 vocabulary kube stores in ``managedFields``.

A path element is kept as its FieldsV1 key: ``f:<field>``, ``k:<json of the key fields, sorted>``,
``v:<json value>`` (an item of a set list) or ``i:<index>``. A path is a tuple of elements and a field set
is a frozenset of paths, so union, difference and intersection are Python's own set operations.

FieldsV1 is the trie of a set: each element maps to its children, ``{}`` for a member without children and
``".": {}`` first when a member also has children. :func:`to_fields_v1` writes it in structured-merge-diff's
element order (fields, then keys, then values, then indexes; numbers compare as numbers), so the bytes match
kube's; :func:`from_fields_v1` reads it back, re-sorting key elements as kube does.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from mxjob_controller.kube.field_errors import format_value

Path = tuple[str, ...]
FieldSet = frozenset[Path]
EMPTY: FieldSet = frozenset()
MEMBER = "."


class FieldsV1Error(ValueError):
    """A FieldsV1 document that is not a valid trie of path elements."""


# --- path elements -------------------------------------------------------------------------------------------

def go_json(value: Any) -> str:
    """Compact JSON as Go's encoding/json writes it (``<``, ``>``, ``&`` and U+2028/9 escaped)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    if any(c in text for c in "<>&\u2028\u2029"):
        text = (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
                .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
    return text


def field(name: str) -> str:
    return "f:" + name


def key(fields: Mapping[str, Any]) -> str:
    """The element of an associative-list item keyed by ``fields`` (sorted by name, as kube sorts them)."""
    items = tuple(fields.items()) if len(fields) == 1 else tuple(sorted(fields.items()))
    try:
        return _cached_key(items)
    except TypeError:  # a key field holding a map or list: rare, not cached
        return "k:" + go_json(dict(items))


def key_of(name: str, value: Any) -> str:
    """``key({name: value})``: the element of an item keyed by one field."""
    try:
        return _cached_key(((name, value),))
    except TypeError:  # a key field holding a map or list: rare, not cached
        return "k:" + go_json({name: value})


@functools.lru_cache(maxsize=8192)
def _cached_key(items: tuple) -> str:
    """Keys repeat across objects (a container's name, an env var's): encoded once."""
    return "k:" + go_json(dict(items))


def set_value(value: Any) -> str:
    return "v:" + go_json(value)


def index(i: int) -> str:
    return "i:" + str(i)


def _value_order(value: Any) -> tuple:
    """structured-merge-diff's value order: numbers (numerically) < strings < booleans < lists < maps < null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value.encode())
    if isinstance(value, list):
        return (3, tuple(_value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k.encode(), _value_order(v)) for k, v in sorted(value.items())))
    return (5,)


@functools.lru_cache(maxsize=8192)
def element_order(pe: str) -> tuple:
    """Sort key of an element: fields (bytewise) < keys < values < indexes (numeric)."""
    kind, rest = pe[0], pe[2:]
    if kind == "f":
        return (0, rest.encode())
    if kind == "k":
        fields = json.loads(rest)
        return (1, tuple((k.encode(), _value_order(v)) for k, v in sorted(fields.items())))
    if kind == "v":
        return (2, _value_order(json.loads(rest)))
    return (3, int(rest))


def element_string(pe: str) -> str:
    """An element as kube prints it in a path: ``.name``, ``[name="c"]``, ``[="x"]``, ``[0]``."""
    kind, rest = pe[0], pe[2:]
    if kind == "f":
        return "." + rest
    if kind == "k":
        fields = json.loads(rest)
        return "[" + ",".join(f"{k}={format_value(v)}" for k, v in sorted(fields.items())) + "]"
    if kind == "v":
        return "[=" + format_value(json.loads(rest)) + "]"
    return "[" + rest + "]"


def path_string(path: Path) -> str:
    """A path as kube prints it in a conflict (``.spec.containers[name="c"].image``)."""
    return "".join(element_string(pe) for pe in path)


# --- sets ------------------------------------------------------------------------------------------------------

def recursive_difference(paths: FieldSet, remove: FieldSet) -> FieldSet:
    """``paths`` less every path in ``remove`` and everything below one (kube's reset-field filter)."""
    if not remove or not paths:
        return paths
    depth = max(len(r) for r in remove)
    if depth == 1:
        return frozenset(p for p in paths if p[:1] not in remove)
    return frozenset(p for p in paths if not any(p[:i] in remove for i in range(1, min(len(p), depth) + 1)))


def fields_v1_has(doc: Mapping[str, Any], path: Path) -> bool:
    """Whether ``path`` is a member of the set a FieldsV1 document holds (without reading the rest of it)."""
    node: Any = doc
    for pe in path:
        node = node.get(pe) if isinstance(node, dict) else None
        if node is None:
            return False
    return isinstance(node, dict) and (not node or MEMBER in node)


def prune_fields_v1(doc: dict, remove: Iterable[Path], members_only: bool = False) -> dict:
    """``doc`` less the subtrees at ``remove`` (``members_only``: less those exact paths, their descendants kept),
    and less the parents that leaves empty and unowned. ``doc`` itself is not changed."""
    out = doc
    for path in remove:
        out = _prune(out, path, members_only)
    return out


def _prune(node: dict, path: Path, members_only: bool) -> dict:
    child = node.get(path[0])
    if child is None:
        return node
    out = dict(node)
    if len(path) == 1:
        if members_only and len(child) > (1 if MEMBER in child else 0):
            out[path[0]] = {k: v for k, v in child.items() if k != MEMBER}
        else:
            del out[path[0]]
        return out
    pruned = _prune(child, path[1:], members_only)
    if not pruned or pruned == {MEMBER: {}}:
        if MEMBER in child:
            out[path[0]] = {}
        else:
            del out[path[0]]
    else:
        out[path[0]] = pruned
    return out


def with_prefix(paths: Iterable[Path], prefix: Path) -> FieldSet:
    """The paths below ``prefix``, relative to it."""
    n = len(prefix)
    return frozenset(p[n:] for p in paths if len(p) > n and p[:n] == prefix)


def sorted_paths(paths: Iterable[Path]) -> list[Path]:
    """Paths in structured-merge-diff's iteration order (each level: members first, then children)."""
    out: list[Path] = []
    _walk_sorted(_trie(paths), (), out)
    return out


def _walk_sorted(node: dict, prefix: Path, out: list[Path]) -> None:
    # a module function, not a closure: see _emit
    order = sorted((pe for pe in node if pe != MEMBER), key=element_order)
    for pe in order:
        child = node[pe]
        if not child or MEMBER in child:
            out.append((*prefix, pe))
    for pe in order:
        child = node[pe]
        if len(child) > (1 if MEMBER in child else 0):
            _walk_sorted(child, (*prefix, pe), out)


# --- FieldsV1 ------------------------------------------------------------------------------------------------

def _trie(paths: Iterable[Path]) -> dict:
    root: dict = {}
    for path in paths:
        node = root
        last = len(path) - 1
        for i, pe in enumerate(path):
            child = node.get(pe)
            if child is None:
                child = node[pe] = {}
                if i == last:
                    child[MEMBER] = {}
            elif i == last:
                child[MEMBER] = {}
            node = child
    return root


def to_fields_v1(paths: Iterable[Path]) -> dict:
    """The FieldsV1 document of a set, ordered as kube orders it."""
    return _emit(_trie(paths))


# The recursions below are module functions, not closures: a closure that calls itself is a reference cycle
# (function, cell) left behind by every call, for the cyclic collector to find, on every write.
def _emit(node: dict) -> dict:
    out: dict = {}
    kids = [pe for pe in node if pe != MEMBER]
    if MEMBER in node and kids:
        out[MEMBER] = {}
    for pe in sorted(kids, key=element_order):
        out[pe] = _emit(node[pe])
    return out


def from_fields_v1(doc: Any) -> FieldSet:
    """The set a FieldsV1 document holds; raises FieldsV1Error for what kube cannot parse."""
    if not isinstance(doc, dict):
        raise FieldsV1Error("expected an object")
    out: list[Path] = []
    _walk(doc, (), out)
    return frozenset(out)


def _walk(node: dict, prefix: Path, out: list[Path]) -> None:
    """Append to ``out`` the paths of a FieldsV1 document's ``node`` (found under ``prefix``)."""
    for raw, child in node.items():
        if raw == MEMBER:
            continue
        if len(raw) < 2 or raw[1] != ":":
            raise FieldsV1Error(f"unexpected path element {raw!r}")
        pe = _canonical(raw)
        if pe is None:
            continue  # an unknown prefix: kube skips it
        if not isinstance(child, dict):
            raise FieldsV1Error(f"expected an object at {raw!r}")
        path = (*prefix, pe)
        if not child or MEMBER in child:
            out.append(path)
        _walk(child, path, out)


def _canonical(raw: str) -> str | None:
    kind = raw[0]
    if kind == "f":
        return raw
    if kind in "kv":
        try:
            value = json.loads(raw[2:])
        except ValueError as e:
            raise FieldsV1Error(f"invalid path element {raw!r}: {e}") from None
        if kind == "k":
            if not isinstance(value, dict):
                raise FieldsV1Error(f"invalid key element {raw!r}")
            return key(value)
        return set_value(value)
    if kind == "i":
        try:
            return index(int(raw[2:]))
        except ValueError:
            raise FieldsV1Error(f"invalid index element {raw!r}") from None
    return None
