"""Walks of JSON values by a compiled :class:`~.schema.Type`, as structured-merge-diff's ``typed`` package
does them: a value's field set, the comparison of two values, merging an applied configuration into an object,
and removing paths.

Values are plain JSON (dicts, lists, scalars, ``None`` for null); :data:`ABSENT` stands for a missing field,
which kube tells apart from an explicit null. An associative list's items are matched by their key
(``k:{"name":"c"}``) or, in a set, by value (``v:"x"``), never by position.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from mxjob_controller.local.apiserver.managedfields import fieldpath as fp
from mxjob_controller.local.apiserver.managedfields.fieldpath import FieldSet, Path
from mxjob_controller.local.apiserver.managedfields.schema import (
    ASSOCIATIVE,
    ATOMIC,
    DEDUCED,
    DEDUCED_TYPE,
    LIST,
    MAP,
    SET,
    Type,
)


class _Absent:
    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


class FieldSetError(ValueError):
    """A value the schema cannot index: a list item without its key, duplicates in an applied list, a field the
    schema does not declare. The message is kube's, prefixed with the path."""


# --- shapes ------------------------------------------------------------------------------------------------

_LEAF, _GMAP, _GLIST = 0, 1, 2


def _shape(t: Type, value: Any) -> int:
    """How a value is walked: one leaf, a granular map or a granular (set or associative) list."""
    if t.kind == MAP:
        return _LEAF if t.atomic else _GMAP
    if t.kind == LIST:
        return _LEAF if t.list_type == ATOMIC else _GLIST
    if t.kind == DEDUCED and type(value) is dict:
        return _GMAP
    return _LEAF


def _empty(value: Any) -> bool:
    return value is ABSENT or value is None or ((type(value) is dict or type(value) is list) and not value)


def _child_type(t: Type, name: str, path: Path | None = None) -> Type:
    """The type of key ``name`` of a map. Strict (``path`` given): an undeclared field is kube's error; else it
    is deduced from its value (a stored object may hold fields a changed schema no longer declares)."""
    if t.kind == DEDUCED:
        return DEDUCED_TYPE
    ct = t.child(name)
    if ct is None:
        if path is not None:
            raise FieldSetError(f"{fp.path_string((*path, fp.field(name)))}: field not declared in schema")
        return DEDUCED_TYPE
    return ct


def item_element(t: Type, item: Any, path: Path = ()) -> str:
    """The path element of one item of a set or associative list (kube's ``listItemToPathElement``)."""
    if t.list_type == SET or not t.keys:
        if t.list_type != SET:
            raise FieldSetError(f"{fp.path_string(path)}: associative list without keys has an element that is "
                                "not a scalar")
        if type(item) is dict or type(item) is list or item is None:
            raise FieldSetError(f"{fp.path_string(path)}: associative list without keys has an element that is a "
                                f"{'map' if type(item) is dict else 'list' if type(item) is list else 'null'} type")
        return fp.set_value(item)
    if type(item) is not dict:
        raise FieldSetError(f"{fp.path_string(path)}: associative list with keys has an element that is not a map "
                            "type")
    fields = {}
    defaults = t.elem.defaults if t.elem is not None else {}
    for k in t.keys:
        if k in item:
            fields[k] = item[k]
        elif k in defaults:
            fields[k] = defaults[k]
        else:
            raise FieldSetError(f"{fp.path_string(path)}: associative list with keys has an element that omits key "
                                f'field "{k}" (and doesn\'t have default value)')
    return fp.key(fields)


# --- the field set of a value ------------------------------------------------------------------------------

def to_set(value: Any, t: Type, strict: bool = False) -> FieldSet:
    """Every path ``value`` sets (kube's ``ToFieldSet``): leaves, list items, and maps that are empty, null or
    under a key the schema does not declare. ``strict``: a field the schema does not declare is an error (an
    applied configuration), else its type is deduced."""
    out: list[Path] = []
    _to_set(value, t, (), out, strict)
    return frozenset(out)


def _to_set(value: Any, t: Type, path: Path, out: list[Path], strict: bool) -> None:
    shape = _shape(t, value)
    if shape == _GMAP and type(value) is dict:
        for k, v in value.items():
            p = (*path, "f:" + k)
            ct = _child_type(t, k, path if strict else None)
            _to_set(v, ct, p, out, strict)
            if v is None or (type(v) is dict and not v) or t.kind == DEDUCED or not t.declares(k):
                out.append(p)
    elif shape == _GLIST and type(value) is list:
        seen: set[str] = set()
        duplicates: set[str] = set()
        elements = []
        for item in value:
            pe = item_element(t, item, path)
            if pe in seen and pe not in duplicates:
                out.append((*path, pe))
                duplicates.add(pe)
            seen.add(pe)
            elements.append(pe)
        for item, pe in zip(value, elements, strict=True):
            if pe in duplicates:
                continue
            p = (*path, pe)
            _to_set(item, t.elem or DEDUCED_TYPE, p, out, strict)
            out.append(p)
    elif shape == _LEAF and path:
        out.append(path)


def check_no_duplicates(value: Any, t: Type, path: Path = ()) -> None:
    """Raise kube's error for an associative list with one key twice (an applied configuration may have none)."""
    shape = _shape(t, value)
    if shape == _GMAP and type(value) is dict:
        for k, v in value.items():
            check_no_duplicates(v, _child_type(t, k), (*path, "f:" + k))
    elif shape == _GLIST and type(value) is list:
        seen: set[str] = set()
        for item in value:
            pe = item_element(t, item, path)
            if pe in seen:
                raise FieldSetError(f"{fp.path_string(path)}: duplicate entries for key {fp.element_string(pe)}")
            seen.add(pe)
            check_no_duplicates(item, t.elem or DEDUCED_TYPE, (*path, pe))


# --- comparison ----------------------------------------------------------------------------------------------

class Comparison:
    """What changed from one value to another: paths added, modified (leaves only) and removed."""

    __slots__ = ("added", "modified", "removed")

    def __init__(self) -> None:
        self.added: list[Path] = []
        self.modified: list[Path] = []
        self.removed: list[Path] = []

    def changed(self, ignore: FieldSet = fp.EMPTY) -> FieldSet:
        """Added and modified paths, less ``ignore`` and all below it."""
        return fp.recursive_difference(frozenset(self.added) | frozenset(self.modified), ignore)

    def gone(self, ignore: FieldSet = fp.EMPTY) -> FieldSet:
        return fp.recursive_difference(frozenset(self.removed), ignore)


def compare(old: Any, new: Any, t: Type) -> Comparison:
    """kube's ``Compare``: a map or list new in ``new`` is added with all it holds; list items match by key."""
    cmp = Comparison()
    _compare(old, new, t, (), cmp)
    return cmp


def _compare(lhs: Any, rhs: Any, t: Type, path: Path, cmp: Comparison) -> None:
    if lhs is rhs or (lhs is not ABSENT and rhs is not ABSENT and lhs == rhs):
        return
    _compare_unequal(lhs, rhs, t, path, cmp)


def _compare_unequal(lhs: Any, rhs: Any, t: Type, path: Path, cmp: Comparison) -> None:
    """:func:`_compare` of values known to differ. A map's keys are compared before their paths and types are
    made: most of what a write compares is equal (an update's metadata, a status write's spec)."""
    ls = _shape(t, lhs) if lhs is not ABSENT else None
    rs = _shape(t, rhs) if rhs is not ABSENT else None
    shape = rs if ls is None else ls
    if (ls is not None and rs is not None and ls != rs) or shape == _LEAF or (_empty(lhs) and _empty(rhs)):
        if path:
            if lhs is ABSENT:
                cmp.added.append(path)
            elif rhs is ABSENT:
                cmp.removed.append(path)
            elif lhs != rhs:
                cmp.modified.append(path)
        return
    if shape == _GMAP:
        lmap = lhs if type(lhs) is dict else {}
        rmap = rhs if type(rhs) is dict else {}
        for k, lv in lmap.items():
            rv = rmap.get(k, ABSENT)
            if lv is not rv and (rv is ABSENT or lv != rv):
                _compare_unequal(lv, rv, _child_type(t, k), (*path, "f:" + k), cmp)
        for k, rv in rmap.items():
            if k not in lmap:
                _compare_unequal(ABSENT, rv, _child_type(t, k), (*path, "f:" + k), cmp)
    else:
        _compare_items(lhs if type(lhs) is list else [], rhs if type(rhs) is list else [], t, path, cmp)
    if path:
        if lhs is ABSENT:
            cmp.added.append(path)
        elif rhs is ABSENT:
            cmp.removed.append(path)


def _index(t: Type, items: list, path: Path) -> dict[str, list]:
    out: dict[str, list] = {}
    for item in items:
        out.setdefault(item_element(t, item, path), []).append(item)
    return out


def _compare_items(lhs: list, rhs: list, t: Type, path: Path, cmp: Comparison) -> None:
    left, right = _index(t, lhs, path), _index(t, rhs, path)
    elem = t.elem or DEDUCED_TYPE
    for pe in list(left) + [pe for pe in right if pe not in left]:
        ll, rl = left.get(pe, ()), right.get(pe, ())
        p = (*path, pe)
        if len(ll) <= 1 and len(rl) <= 1:
            _compare(ll[0] if ll else ABSENT, rl[0] if rl else ABSENT, elem, p, cmp)
        elif len(ll) >= 2 and len(rl) >= 2:
            if ll != rl:
                cmp.modified.append(p)
        elif len(ll) >= 2:
            if rl:
                _compare(ABSENT, rl[0], elem, p, cmp)
            cmp.removed.append(p)
        else:
            if ll:
                _compare(ll[0], ABSENT, elem, p, cmp)
            cmp.added.append(p)


# --- merge ------------------------------------------------------------------------------------------------------

def merge(live: Any, config: Any, t: Type, path: Path = ()) -> Any:
    """``config`` merged into ``live`` (kube's ``Merge``): the configuration wins on leaves, maps merge key by
    key, associative lists by item key, keeping the live order except where the configuration orders shared
    items. Neither input is changed; unchanged subtrees of ``live`` are shared."""
    if config is ABSENT:
        return live
    if live is ABSENT:
        return config
    ls, rs = _shape(t, live), _shape(t, config)
    if ls != rs or ls == _LEAF or (_empty(live) and _empty(config)):
        return config
    if ls == _GMAP:
        lmap = live if type(live) is dict else {}
        rmap = config if type(config) is dict else {}
        out = dict(lmap)
        for k, rv in rmap.items():
            lv = lmap.get(k, ABSENT)
            value = rv if lv is ABSENT else merge(lv, rv, _child_type(t, k), (*path, "f:" + k))
            if value is ABSENT:
                out.pop(k, None)
            else:
                out[k] = value
        return out if out else ABSENT
    return _merge_items(live if type(live) is list else [], config if type(config) is list else [], t, path)


def _merge_items(lhs: list, rhs: list, t: Type, path: Path) -> Any:
    """structured-merge-diff's ``visitListItems`` for merging, step for step (its ordering is the contract)."""
    elem = t.elem or DEDUCED_TYPE
    rhs_pes = [item_element(t, item, path) for item in rhs]
    observed_rhs: dict[str, Any] = {}
    for pe, item in zip(rhs_pes, rhs, strict=True):
        if pe in observed_rhs:
            raise FieldSetError(f"{fp.path_string(path)}: duplicate entries for key {fp.element_string(pe)}")
        observed_rhs[pe] = item
    lhs_pes = [item_element(t, item, path) for item in lhs]
    observed_lhs: dict[str, Any] = {}
    for pe, item in zip(lhs_pes, lhs, strict=True):
        observed_lhs[pe] = ABSENT if pe in observed_lhs else item  # duplicates merge with nothing
    shared = deque(pe for pe in rhs_pes if pe in observed_lhs)   # popped from the left: a deque keeps it linear
    next_shared = shared.popleft() if shared else None
    merged_rhs: set[str] = set()
    out: list = []

    def emit(pe: str, lchild: Any, rchild: Any) -> None:
        value = merge(lchild, rchild, elem, (*path, pe))
        if value is not ABSENT:
            out.append(value)

    li = ri = 0
    while li < len(lhs_pes) or ri < len(rhs_pes):
        if li < len(lhs_pes) and ri < len(rhs_pes):
            pe = lhs_pes[li]
            if pe == rhs_pes[ri]:
                merged_rhs.add(pe)
                emit(pe, observed_lhs.get(pe, ABSENT), observed_rhs[pe])
                li += 1
                ri += 1
                next_shared = shared.popleft() if shared else None
                continue
            if pe in observed_rhs and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(lhs_pes):
            pe = lhs_pes[li]
            if pe not in observed_rhs:
                emit(pe, lhs[li], ABSENT)
                li += 1
                continue
            if pe in merged_rhs:
                li += 1
        if ri < len(rhs_pes):
            pe = rhs_pes[ri]
            merged_rhs.add(pe)
            emit(pe, observed_lhs.get(pe, ABSENT), observed_rhs[pe])
            ri += 1
            if next_shared is not None and next_shared == pe:
                next_shared = shared.popleft() if shared else None
    return out if out else ABSENT


# --- removal ---------------------------------------------------------------------------------------------------

def remove(value: Any, paths: FieldSet, t: Type) -> Any:
    """``value`` without the paths in ``paths`` (each with everything below it); a map or list left empty goes
    too (ABSENT), as kube's ``RemoveItems`` leaves it null."""
    if not paths:
        return value
    shape = _shape(t, value)
    if shape == _GMAP and type(value) is dict and value:
        out = {}
        for k, v in value.items():
            pe = "f:" + k
            if (pe,) in paths:
                continue
            sub = fp.with_prefix(paths, (pe,))
            kept = remove(v, sub, _child_type(t, k)) if sub else v
            if kept is not ABSENT:
                out[k] = kept
        return out if out else ABSENT
    if shape == _GLIST and type(value) is list and value:
        items = []
        for item in value:
            pe = item_element(t, item)
            if (pe,) in paths:
                continue
            sub = fp.with_prefix(paths, (pe,))
            kept = remove(item, sub, t.elem or DEDUCED_TYPE) if sub else item
            if kept is not ABSENT:
                items.append(kept)
        return items if items else ABSENT
    if shape == _LEAF and (type(value) is dict or type(value) is list):
        return ABSENT  # below an atomic value: kube's walker leaves nothing
    return value


def ensure_named_fields(paths: Iterable[Path], t: Type) -> FieldSet:
    """``paths`` plus every declared struct field one of them lies below (not map keys, not list items): kube's
    ``EnsureNamedFieldsAreMembers``, which pruning uses so a struct that holds owned fields counts as owned."""
    out = set(paths)
    for path in list(out):
        cur: Type | None = t
        for i, pe in enumerate(path[:-1]):
            if cur is None:
                break
            if pe[0] == "f" and cur.kind == MAP:
                name = pe[2:]
                if cur.declares(name):
                    out.add(path[:i + 1])
                cur = cur.child(name)
            elif pe[0] in "kv" and cur.kind == LIST and cur.list_type in (SET, ASSOCIATIVE):
                cur = cur.elem
            else:
                cur = DEDUCED_TYPE if cur.kind == DEDUCED else None
    return frozenset(out)


# --- the fields a create adds ------------------------------------------------------------------------------------

def added_fields_v1(base: Any, value: Any, t: Type) -> dict:
    """The FieldsV1 document of ``compare(base, value).changed()`` for ``base`` a zero object (a create): built in
    one walk, already in kube's order, without the path sets the general comparison builds."""
    return _added(base, value, t) or {}


def _fresh_node(value: Any, t: Type) -> dict:
    """``_added_node(ABSENT, value, t)``: the node of a value added where nothing was (most of a create's walk,
    so without the comparisons with a base)."""
    if type(value) is dict:
        kind = t.kind   # _shape(t, value) == _LEAF, inlined: a map's node unless atomic (or a scalar's)
        if not value or (t.atomic if kind == MAP else t.list_type == ATOMIC if kind == LIST else kind != DEDUCED):
            return {}
        out: dict = {fp.MEMBER: {}}
        deduced = kind == DEDUCED
        for k in sorted(value) if len(value) > 1 else value:   # kube's order (one key: no list to sort)
            v = value[k]
            if type(v) is dict or type(v) is list:   # _child_type(t, k), inlined: this loop is most of a create's
                out["f:" + k] = _fresh_node(v, DEDUCED_TYPE if deduced else (t.child(k) or DEDUCED_TYPE))
            else:
                out["f:" + k] = {}
        return out
    if type(value) is list and value and _shape(t, value) != _LEAF:
        below = _added(ABSENT, value, t)
        return {fp.MEMBER: {}, **below} if below else {}
    return {}


def _added(base: Any, value: Any, t: Type) -> dict | None:
    """The children of a granular node's added paths, ordered; None when nothing below it changed."""
    out: dict = {}
    if type(value) is dict:
        bmap = base if type(base) is dict else {}
        for k in sorted(value) if len(value) > 1 else value:
            v = value[k]
            b = bmap.get(k, ABSENT)
            if type(v) is not dict and type(v) is not list and v is not None:   # a scalar: always a leaf
                if b is ABSENT or b != v:
                    out["f:" + k] = {}
                continue
            node = _added_node(b, v, _child_type(t, k)) if b is not ABSENT else _fresh_node(v, _child_type(t, k))
            if node is not None:
                out["f:" + k] = node
    else:
        elem = t.elem or DEDUCED_TYPE
        elements = _elements(t, value)
        if len(set(elements)) == len(elements):   # no two items alike: the common case, in one sort (of indexes
            ranks = list(map(fp.element_order, elements))   # by their elements' order, without a call per item)
            for i in sorted(range(len(elements)), key=ranks.__getitem__):
                out[elements[i]] = _fresh_node(value[i], elem)
            return out or None
        seen: dict[str, int] = {}
        for pe in elements:
            seen[pe] = seen.get(pe, 0) + 1
        ordered = sorted(((fp.element_order(pe), pe, item)
                          for pe, item in zip(elements, value, strict=True) if seen[pe] == 1), key=lambda x: x[0])
        for _, pe, item in ordered:
            out[pe] = _fresh_node(item, elem)
        for pe in sorted({pe for pe, n in seen.items() if n > 1}, key=fp.element_order):
            out[pe] = {}
        if any(n > 1 for n in seen.values()):
            out = {pe: out[pe] for pe in sorted(out, key=fp.element_order)}
    return out or None


def _elements(t: Type, items: list) -> list[str]:
    """``[item_element(t, item) for item in items]``; an item of a list keyed by one field that it holds (most
    are: a container's ``name``) without a call to make its field map."""
    keys = t.keys
    if t.list_type != ASSOCIATIVE or len(keys) != 1:
        return [item_element(t, item) for item in items]
    name = keys[0]
    key = fp.key_of
    return [key(name, item[name]) if type(item) is dict and name in item else item_element(t, item)
            for item in items]


def _added_node(base: Any, value: Any, t: Type) -> dict | None:
    if base is not ABSENT and base == value:
        return None
    shape = _shape(t, value)
    if shape == _LEAF or (_empty(base) and _empty(value)) or (
            base is not ABSENT and base is not None and _shape(t, base) != shape):
        return {}   # a leaf added or modified
    below = _added(base, value, t) if (type(value) is dict or type(value) is list) else None
    if base is ABSENT:
        return {fp.MEMBER: {}, **below} if below else {}
    return below
