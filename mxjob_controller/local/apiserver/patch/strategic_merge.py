"""Strategic merge patch (``application/strategic-merge-patch+json``), applied as kube-apiserver applies it.

This is apimachinery's ``strategicpatch.StrategicMergeMapPatch`` with the server's options (parallel lists
merged, unmatched nulls ignored): maps merge key by key, ``null`` deletes; a list merges only where the
field's patch strategy says ``merge`` (by its merge key for lists of objects, as a set for lists of
scalars) and is replaced otherwise; and the directives ``kubectl apply`` sends are honoured:

- ``$patch: replace | delete`` on a map, ``{$patch: delete, <key>: v}`` / ``{$patch: replace}`` in a list;
- ``$setElementOrder/<list>``: the order of the result (patch items as listed, server-only items kept
  near their old neighbours);
- ``$deleteFromPrimitiveList/<list>``: scalars to remove (finalizers);
- ``$retainKeys``: the only keys the map keeps (a union type's other members are cleared).

Patch metadata (strategy, merge key) comes from a :class:`PatchSchema`; :func:`schema_for` builds one from
Kubernetes' own definitions. Ordering reproduces Go's algorithms step for step (including its stable sort),
so lists come out in the order kube-apiserver stores them.

Errors are :class:`StrategicPatchError` with the HTTP code kube-apiserver answers: 400 for a malformed
directive, 422 for lists of lists, 500 for the rest (as it does: they are plain Go errors there).
"""

from __future__ import annotations

import functools
import heapq
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube import k8s_schemas
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.local.apiserver.encoding.gofmt import go_format

DIRECTIVE = "$patch"
DELETE, REPLACE, MERGE = "delete", "replace", "merge"
RETAIN_KEYS = "$retainKeys"
SET_ELEMENT_ORDER = "$setElementOrder"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList"

BAD_JSON_DOC = "invalid JSON document"
NO_LIST_OF_LISTS = "lists of lists are not supported"
BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
BAD_SET_ELEMENT_ORDER = "invalid patch format of setElementOrder list"
UNSUPPORTED_FORMAT = "strategic merge patch format is not supported"


class StrategicPatchError(Exception):
    """A patch kube-apiserver refuses; ``code`` is its HTTP status (400, 422 or 500)."""

    def __init__(self, message: str, code: int = 500) -> None:
        super().__init__(message)
        self.code = code


def _bad(message: str) -> StrategicPatchError:
    return StrategicPatchError(message, 400)


# --- patch metadata -------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class PatchMeta:
    """A field's ``patchStrategy`` (split on commas) and ``patchMergeKey`` struct tags."""

    strategies: tuple[str, ...] = ()
    merge_key: str = ""


class PatchSchema:
    """Where in a Go type the patch is: answers apimachinery's ``LookupPatchMetadataFor{Struct,Slice}``.

    Built from JSON schema nodes (Kubernetes' definitions or any dict of the same shape): a node with
    ``properties`` is a struct, ``additionalProperties`` alone a map, ``items`` a slice, a scalar type a
    scalar, and no type at all an ``interface{}``.
    """

    __slots__ = ("_defs", "_node", "kind", "name")

    def __init__(self, defs: Mapping[str, Any], node: Mapping[str, Any] | None, name: str = "") -> None:
        self._defs = defs
        node, ref_name = _resolve(defs, node or {})
        self._node = node
        self.name = ref_name or name
        self.kind = _go_kind(node, bool(ref_name))

    def field(self, key: str) -> tuple[PatchSchema, PatchMeta]:
        """The struct field a JSON key names (exact match first, then case-insensitive, as Go's JSON does)."""
        if self.kind != "struct":
            raise StrategicPatchError("merging an object in json but data type is not struct, instead is: "
                                      f"{self.kind}")
        props = self._node.get("properties") or {}
        prop = props.get(key)
        if prop is None:
            prop = next((v for k, v in props.items() if k.lower() == key.lower()), None)
        if prop is None:
            raise StrategicPatchError(f'unable to find api field in struct {self.name} for the json field "{key}"')
        strategy = prop.get("x-kubernetes-patch-strategy") or ""
        meta = PatchMeta(tuple(strategy.split(",")), prop.get("x-kubernetes-patch-merge-key") or "")
        return PatchSchema(self._defs, prop), meta

    def list_field(self, key: str) -> tuple[PatchSchema, PatchMeta]:
        """The element type of the slice field a JSON key names."""
        sub, meta = self.field(key)
        if sub.kind != "slice":
            raise StrategicPatchError(f"expected slice or array type, but got: {self.kind}")
        items = PatchSchema(self._defs, sub._node.get("items"))
        if items.kind == "slice":
            raise StrategicPatchError("unexpected slice of slice")
        return items, meta


def _resolve(defs: Mapping[str, Any], node: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    all_of = node.get("allOf")
    if isinstance(all_of, list) and all_of:
        node = all_of[0]
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = k8s_schemas.ref_name(ref)
        return defs.get(name) or {}, name.rsplit(".", 1)[-1]
    return node, ""


def _types(node: Mapping[str, Any]) -> set[str]:
    t = node.get("type")
    return set(t if isinstance(t, list) else [t] if t else []) - {"null"}


def _go_kind(node: Mapping[str, Any], named: bool) -> str:
    types = _types(node)
    if "properties" in node or (named and (not types or "object" in types) and "additionalProperties" not in node):
        return "struct"  # named types without fields (Time, Quantity, IntOrString, RawExtension) are structs too
    if "object" in types:
        return "map"
    if "array" in types:
        return "slice"
    for json_type, go_kind in (("string", "string"), ("integer", "int64"), ("number", "float64"),
                               ("boolean", "bool")):
        if json_type in types:
            return go_kind
    return "interface"


@functools.cache
def schema_for(group: str, version: str, kind: str) -> PatchSchema | None:
    """The patch schema of a built-in kind, from Kubernetes' definitions; None for kinds it does not know."""
    name = k8s_schemas.definition_name(group, version, kind)
    if name is None:
        return None
    defs = k8s_schemas.definitions()
    return PatchSchema(defs, {"$ref": "#/$defs/" + name})


# --- applying -------------------------------------------------------------------------------------------

def apply_strategic_patch(original: Mapping[str, Any], patch: Mapping[str, Any], schema: PatchSchema) -> dict:
    """``original`` with ``patch`` applied; neither argument is modified.

    Directive keys left over where a patch adds whole new subtrees are dropped from the result, as
    kube-apiserver's decoding into its typed object drops them.
    """
    if not isinstance(patch, Mapping):
        raise _bad(BAD_JSON_DOC)
    result = _merge_map(deep_copy(original), deep_copy(patch), schema)
    return _strip_directives(result)


def _merge_map(original: dict | None, patch: dict, schema: PatchSchema) -> dict:
    if DIRECTIVE in patch:
        return _map_directive(patch[DIRECTIVE], patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch)
    _merge_ordered_lists(original, patch, schema)
    for patch_key, value in list(patch.items()):
        is_delete_list = patch_key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        key = _directive_target(patch_key, DELETE_FROM_PRIMITIVE_LIST) if is_delete_list else patch_key
        if value is None:
            original.pop(key, None)
            continue
        if key not in original or type(original[key]) is not type(value):
            if not is_delete_list:
                _discard_nulls(value)
                kept, keep = _remove_directives(value)
                if keep:
                    original[key] = kept
                else:
                    original.pop(key, None)
            continue
        if isinstance(value, dict):
            sub, meta = schema.field(key)
            strategy = _strategy(meta)
            original[key] = _merge_map(original[key], value, sub) if strategy != REPLACE else value
        elif isinstance(value, list):
            sub, meta = schema.list_field(key)
            original[key] = _merge_list_field(original[key], value, sub, _strategy(meta), meta.merge_key,
                                              is_delete_list)
        else:
            original[key] = value
    return original


def _map_directive(directive: Any, patch: dict) -> dict:
    if directive == REPLACE:
        del patch[DIRECTIVE]
        return patch
    if directive == DELETE:
        return {}
    raise StrategicPatchError(f"unknown patch type: {_go_str(directive)} in map: {go_format(patch)}")


def _strategy(meta: PatchMeta) -> str:
    """The strategy besides ``retainKeys`` (extractRetainKeysPatchStrategy)."""
    strategies = list(meta.strategies) or [""]
    if len(strategies) == 1:
        return "" if strategies[0] == "retainKeys" else strategies[0]
    if len(strategies) == 2:
        if strategies[0] == "retainKeys":
            return strategies[1]
        if strategies[1] == "retainKeys":
            return strategies[0]
    raise StrategicPatchError(f"unexpected patch strategy: [{' '.join(strategies)}]")


def _directive_target(key: str, prefix: str) -> str:
    head, sep, tail = key.partition("/")
    if not sep or head != prefix:
        raise _bad(BAD_PRIMITIVE_LIST if prefix == DELETE_FROM_PRIMITIVE_LIST else BAD_SET_ELEMENT_ORDER)
    return tail


def _apply_retain_keys(original: dict, patch: dict) -> None:
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not isinstance(retain, list):
        raise _bad(BAD_RETAIN_KEYS)
    keep = _hashable_set(retain)
    for key, value in patch.items():
        if value is None or key.startswith((DELETE_FROM_PRIMITIVE_LIST, SET_ELEMENT_ORDER)):
            continue
        if _key(key) not in keep:
            raise _bad(BAD_RETAIN_KEYS)
    for key in [k for k in original if _key(k) not in keep]:
        del original[key]


def _merge_ordered_lists(original: dict, patch: dict, schema: PatchSchema) -> None:
    """Merge each list named by a ``$setElementOrder/<list>`` directive and put it in that order."""
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        order = patch.pop(key)
        if not isinstance(order, list):
            raise StrategicPatchError(f"expected a []interface {{}}, but received a {_go_type(order)}")
        target = _directive_target(key, SET_ELEMENT_ORDER)
        # A stored null is an absent list: kube's typed objects cannot hold one.
        in_original, in_patch = original.get(target) is not None, target in patch
        original_list = original.get(target)
        patch_list = patch.get(target)
        if in_original and not isinstance(original_list, list):
            raise StrategicPatchError(f"expected a []interface {{}}, but received a {_go_type(original_list)}")
        if in_patch and not isinstance(patch_list, list):
            raise StrategicPatchError(f"expected a []interface {{}}, but received a {_go_type(patch_list)}")
        original_items: list = original_list if in_original else []
        patch_items: list = patch_list if in_patch else []
        sub, meta = schema.list_field(target)
        strategy = _strategy(meta)
        _check_order(patch_items, order, meta.merge_key)
        if in_original and not in_patch:
            merged = original_items
        elif in_patch and not in_original:
            merged = _remove_directives(patch_items)[0]
        elif in_original and in_patch:
            merged = _merge_list_field(original_items, patch_items, sub, strategy, meta.merge_key, False)
        else:
            continue
        if not original_items and not patch_items:
            original[target] = merged  # Go fails here ("no elements"); only stores laxer than kube's get here
            patch.pop(target, None)
            continue
        if meta.merge_key:
            listed, server_only = _partition_maps(merged, order, meta.merge_key)
        else:
            listed, server_only = _partition_scalars(merged, order)
        is_map = _element_kind(original_items, patch_items) is dict
        original[target] = _normalize_order(listed, server_only, order, original_items, meta.merge_key, is_map)
        patch.pop(target, None)


def _check_order(patch_items: list, order: list, merge_key: str) -> None:
    """validatePatchWithSetOrderList: the patch's items appear in the order list, in its order."""
    if not order or not patch_items:
        return
    items = _split_deletions(patch_items)[0] if merge_key else patch_items
    i = j = 0
    while i < len(items) and j < len(order):
        if isinstance(items[i], dict) and DIRECTIVE in items[i]:
            i += 1
            continue
        if _merge_key_equal(items[i], order[j], merge_key):
            i += 1
        j += 1
    if i < len(items) and j >= len(order):
        raise StrategicPatchError(f"The order in patch list:\n{go_format(patch_items)}\n doesn't match "
                                  f"{SET_ELEMENT_ORDER} list:\n{go_format(order)}\n")


def _merge_key_equal(left: Any, right: Any, merge_key: str) -> bool:
    if not merge_key:
        return _go_eq(left, right)
    for item in (left, right):
        if not isinstance(item, dict):
            raise StrategicPatchError(f"expected a map[string]interface {{}}, but received a {_go_type(item)}")
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
    return _go_eq(left[merge_key], right[merge_key])


def _merge_list_field(original: list, patch: list, schema: PatchSchema, strategy: str, merge_key: str,
                      is_delete_list: bool) -> list:
    if strategy == MERGE or is_delete_list:
        return _merge_list(original, patch, schema, merge_key, is_delete_list)
    return patch


def _merge_list(original: list, patch: list, schema: PatchSchema, merge_key: str, is_delete_list: bool) -> list:
    if not original and not patch:
        return original
    is_map = _element_kind(original, patch) is dict
    if not is_map:
        if is_delete_list:
            drop = _hashable_set(patch)
            return [v for v in original if _key(v) not in drop]
        merged = _dedupe_scalars(original + patch)
        server_order = original
    else:
        if not merge_key:
            raise StrategicPatchError(f"cannot merge lists without merge key for {schema.name or schema.kind}")
        items = _GoSlice(original)
        patch = _apply_list_directives(items, patch, merge_key)
        server_order = items.items()
        merged = _merge_by_key(items, patch, merge_key, schema)
        items.publish()
    if merge_key:
        listed, server_only = _partition_maps(merged, patch, merge_key)
    else:
        listed, server_only = _partition_scalars(merged, patch)
    return _normalize_order(listed, server_only, patch, server_order, merge_key, is_map)


class _GoSlice:
    """A list being merged, with the Go slice semantics the result's order depends on.

    apimachinery deletes from and appends to the live list in place: deletions shift the elements of
    the caller's backing array (leaving its last element duplicated), appends land in it while there
    is room, and the caller goes on to order server-only items by what it then sees. ``publish`` makes
    ``view`` (the caller's list) show exactly that. The model takes the backing array to be as long as
    the list (the capacity Kubernetes' conversions allocate).
    """

    def __init__(self, view: list) -> None:
        self.view = view
        self.backing = list(view)
        self.length = len(view)
        self.shared = True

    def items(self) -> list:
        return self.backing[:self.length]

    def delete(self, index: int) -> None:
        b = self.backing
        b[index:self.length - 1] = b[index + 1:self.length]
        self.length -= 1

    def delete_by_key(self, merge_key: str, value: Any) -> None:
        """Delete each item whose merge key equals ``value``, first match first, scanning as Go does."""
        while (index := _find_by_key(self.items(), merge_key, value)) is not None:
            self.delete(index)

    def delete_by_keys(self, merge_key: str, values: list, positions: dict) -> None:
        """``delete_by_key`` for each of ``values`` in turn, in one pass; ``positions`` maps each merge-key
        value of the live items to its positions (``_positions_by_value``).

        The result is what deleting each matching item in turn leaves: survivors in order, and past them
        what Go's shifting copies leave behind. When the length drops to ``p + 1``, slot ``p`` holds the
        last live item and no later shift writes it again.
        """
        live = self.items()
        dead = [False] * len(live)
        last, length, frozen = len(live) - 1, len(live), {}
        for value in values:
            for index in positions.pop(_key(value), ()) if _is_hashable(value) else ():
                dead[index] = True
                length -= 1
                while last >= 0 and dead[last]:
                    last -= 1
                if last >= 0:
                    frozen[length - 1] = live[last]
        if length == len(live):
            return
        survivors = [item for item, gone in zip(live, dead, strict=True) if not gone]
        left_behind = [frozen.get(p, live[p]) for p in range(length, len(live))]
        self.backing[:len(live)] = survivors + left_behind
        self.length = length

    def set(self, index: int, value: Any) -> None:
        self.backing[index] = value

    def append(self, value: Any) -> None:
        if self.shared and self.length < len(self.backing):
            self.backing[self.length] = value
        else:
            self.detach()  # the backing list is private from here on: grow it in place
            del self.backing[self.length:]
            self.backing.append(value)
        self.length += 1

    def replace(self, items: list) -> None:
        self.detach()
        self.backing, self.length = list(items), len(items)

    def detach(self) -> None:
        """From here on edits go to a new array: the caller's view keeps what it has now."""
        if self.shared:
            self.publish()
            self.shared = False

    def publish(self) -> None:
        if self.shared:
            self.view[:] = self.backing[:len(self.view)]


def _apply_list_directives(items: _GoSlice, patch: list, merge_key: str) -> list:
    """mergeSliceWithSpecialElements: ``$patch: delete`` items remove by key, ``$patch: replace`` replaces.

    Returns the patch without its directive items (empty after a replace).
    """
    plain, deleted, replace = [], [], False
    # With a map or list as a merge key, Go panics while deleting: delete in turn, so errors come in order.
    positions = _positions_by_value(items.items(), merge_key)
    for item in patch:
        if DIRECTIVE not in item:
            plain.append(item)
            continue
        directive = item[DIRECTIVE]
        if directive == DELETE:
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            if positions is None:
                items.delete_by_key(merge_key, item[merge_key])
            else:
                deleted.append(item[merge_key])
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise StrategicPatchError("merging lists cannot yet be specified in the patch")
        else:
            raise StrategicPatchError(f"unknown patch type: {_go_str(directive)} in map: {go_format(item)}")
    if positions is not None:
        items.delete_by_keys(merge_key, deleted, positions)
    if replace:
        items.replace(plain)
        return []
    return plain


def _merge_by_key(items: _GoSlice, patch: list, merge_key: str, schema: PatchSchema) -> list:
    """mergeSliceWithoutSpecialElements: merge each patch item into the item with its key, or append it."""
    index = _KeyIndex(items.items(), merge_key)
    for item in patch:
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        value = item[merge_key]
        position = index.find(value)
        if position is None:
            items.append(item)
            index.appended(item)
        else:
            merged = _merge_map(items.backing[position], item, schema)
            items.set(position, merged)
            index.merged(position, value, merged)
    return items.items()


class _KeyIndex:
    """``_find_by_key`` answered from a dict: each merge-key value's positions, first first.

    The scan stays for lists holding a map or list as a merge key (Go panics comparing those) or an
    item that is not a map (Go fails on it), so errors come out as before.
    """

    __slots__ = ("items", "merge_key", "positions")

    def __init__(self, items: list, merge_key: str) -> None:
        self.items, self.merge_key = items, merge_key
        positions = _positions_by_value(items, merge_key)
        self.positions = None if positions is None else {k: deque(v) for k, v in positions.items()}

    def find(self, value: Any) -> int | None:
        if self.positions is None:
            return _find_by_key(self.items, self.merge_key, value)
        if not _is_hashable(value):
            return None  # every merge key here is a scalar: none equals a map or list
        found = self.positions.get(_key(value))
        return found[0] if found else None

    def appended(self, item: dict) -> None:
        """``item`` was appended to the indexed list."""
        self.items.append(item)
        if self.positions is None:
            return
        value = item[self.merge_key]
        if _is_hashable(value):
            self.positions.setdefault(_key(value), deque()).append(len(self.items) - 1)
        else:
            self.positions = None

    def merged(self, position: int, value: Any, item: dict) -> None:
        """The item found for ``value`` at ``position`` is now ``item`` (a null in the patch drops its key)."""
        self.items[position] = item
        if self.positions is None or (self.merge_key in item and _go_eq(item[self.merge_key], value)):
            return
        if self.merge_key in item:
            self.positions = None  # a new key in place: let the scan answer
        else:
            self.positions[_key(value)].popleft()


def _positions_by_value(items: list, merge_key: str) -> dict | None:
    """Each merge-key value's positions in ``items`` (ascending), items without the key skipped; None when
    an item is not a map or a value is a map or list."""
    positions: dict = {}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            return None
        if merge_key not in item:
            continue
        value = item[merge_key]
        if not _is_hashable(value):
            return None
        positions.setdefault(_key(value), []).append(i)
    return positions


def _find_by_key(items: list, merge_key: str, value: Any) -> int | None:
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise StrategicPatchError(f"value for key {i} is not a map")
        if _matches(item, merge_key, value):
            return i
    return None


def _matches(item: Any, merge_key: str, value: Any) -> bool:
    if not isinstance(item, dict):
        raise StrategicPatchError("value for key is not a map")
    return merge_key in item and _go_eq(item[merge_key], value)


def _partition_scalars(items: list, listed_by: list) -> tuple[list, list]:
    listed = _hashable_set(listed_by)
    return [v for v in items if _key(v) in listed], [v for v in items if _key(v) not in listed]


def _partition_maps(items: list, listed_by: list, merge_key: str) -> tuple[list, list]:
    listed, server_only = [], []
    index = _KeyIndex(listed_by, merge_key)
    for item in items:
        if not isinstance(item, dict):
            raise StrategicPatchError(f"expected a map[string]interface {{}}, but received a {_go_type(item)}")
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        (listed if index.find(item[merge_key]) is not None else server_only).append(item)
    return listed, server_only


def _normalize_order(listed: list, server_only: list, listed_order: list, server_order: list, merge_key: str,
                     is_map: bool) -> list:
    """normalizeElementOrder: sort each part by its reference order, then interleave them."""
    listed = _sort_by_order(listed, listed_order, merge_key, is_map)
    server_only = _sort_by_order(server_only, server_order, merge_key, is_map)
    return _interleave(server_only, listed, server_order, merge_key, is_map)


def _sort_by_order(items: list, order: list, merge_key: str, is_map: bool) -> list:
    deletions: list = []
    if is_map:
        for lst in (items, order):
            for item in lst:
                if not isinstance(item, dict):
                    raise StrategicPatchError(f"expected a map[string]interface {{}}, but received a "
                                              f"{_go_type(item)}")
                if merge_key not in item:
                    raise _no_merge_key(item, merge_key)
        items, deletions = _split_deletions(items)
    items = list(items)
    index = _indexer(order, merge_key, is_map)

    def less(i: int, j: int) -> bool:
        ii = index(items[i])
        if ii >= 0:
            ij = index(items[j])
            if ij >= 0:
                return ii < ij
        return True

    go_stable_sort(items, less)
    return items + deletions


def _split_deletions(items: list) -> tuple[list, list]:
    keep, deletions = [], []
    for item in items:
        if not isinstance(item, dict):
            raise StrategicPatchError(f"expected a map[string]interface {{}}, but received a {_go_type(item)}")
        (deletions if item.get(DIRECTIVE) == DELETE else keep).append(item)
    return keep, deletions


def _interleave(left: list, right: list, server_order: list, merge_key: str, is_map: bool) -> list:
    """mergeSortedSlice: insert the server-only items (left) among the patch items (right)."""
    index = _indexer(server_order, merge_key, is_map)
    out: list = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li, ri = index(left[i]), index(right[j])
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _indexer(order: list, merge_key: str, is_map: bool) -> Callable[[Any], int]:
    """``index()``: the position of an item in ``order`` (by merge key for maps), or -1.

    A dict of first positions answers when every value in ``order`` is a scalar; otherwise the scan does
    (Go panics comparing maps or lists, and so must we).
    """
    def value(item: Any) -> Any:
        if is_map:
            return item.get(merge_key) if isinstance(item, dict) else None
        return item

    def scan(item: Any) -> int:
        wanted = value(item)
        for i, candidate in enumerate(order):
            if _go_eq(wanted, value(candidate)):
                return i
        return -1

    positions: dict = {}
    for i, candidate in enumerate(order):
        candidate_value = value(candidate)
        if not _is_hashable(candidate_value):
            return scan
        positions.setdefault(_key(candidate_value), i)

    def lookup(item: Any) -> int:
        wanted = value(item)
        return positions.get(_key(wanted), -1) if _is_hashable(wanted) else -1

    return lookup


def _element_kind(*lists: list) -> type:
    """sliceElementType: every element of the lists has one type, and it is not a list."""
    found: type | None = None
    for lst in lists:
        for item in lst:
            if found is None:
                found = type(item)
                if found is list:
                    raise StrategicPatchError(NO_LIST_OF_LISTS, 422)
            elif type(item) is not found:
                raise StrategicPatchError("list element types are not identical: "
                                          + go_format(list(lists)))
    if found is None:
        raise StrategicPatchError("no elements in any of the given slices")
    return found


def _dedupe_scalars(items: list) -> list:
    """deduplicateScalars, including its habit of moving the last item into a duplicate's place.

    Go scans, for each item, the rest of the list for its duplicates, and fills each duplicate's place
    with the list's last item. Here each value's positions sit in a heap, so the next duplicate is found
    without the scan; a moved item's new place joins its value's heap, and stale entries are skipped.
    """
    s = list(items)
    if len(_hashable_set(s)) == len(s):
        return s
    heaps: dict = {}
    for position, item in enumerate(s):
        heaps.setdefault(_key(item), []).append(position)  # ascending: already a heap
    i = 0
    while i < len(s) - 1:
        key = _key(s[i])
        heap = heaps[key]
        while heap:
            j = heapq.heappop(heap)
            if j <= i or j >= len(s) or _key(s[j]) != key:
                continue
            while True:  # s[j] = s[last]; s = s[:last]; and look at j again
                moved = s.pop()
                if j == len(s):
                    break
                s[j] = moved
                if _key(moved) != key:
                    heapq.heappush(heaps[_key(moved)], j)
                    break
        i += 1
    return s


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """removeDirectives: drop maps carrying ``$patch`` (at any depth); False when ``value`` itself is one."""
    if isinstance(value, dict):
        if DIRECTIVE in value:
            return None, False
        for k in list(value):
            kept, keep = _remove_directives(value[k])
            if keep:
                value[k] = kept
            else:
                del value[k]
        return value, True
    if isinstance(value, list):
        out = []
        for item in value:
            kept, keep = _remove_directives(item)
            if keep:
                out.append(kept)
        return out, True
    return value, True


def _discard_nulls(value: Any) -> None:
    if isinstance(value, dict):
        for k in list(value):
            if value[k] is None:
                del value[k]
            else:
                _discard_nulls(value[k])
    elif isinstance(value, list):
        for item in value:
            _discard_nulls(item)


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not _is_directive_key(k)}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def _is_directive_key(key: str) -> bool:
    return key in (DIRECTIVE, RETAIN_KEYS) or key.startswith((SET_ELEMENT_ORDER + "/",
                                                              DELETE_FROM_PRIMITIVE_LIST + "/"))


def _no_merge_key(item: Any, merge_key: str) -> StrategicPatchError:
    return StrategicPatchError(f"map: {go_format(item)} does not contain declared merge key: {merge_key}")


# --- Go semantics ---------------------------------------------------------------------------------------

def _go_eq(a: Any, b: Any) -> bool:
    """Go's ``==`` on ``interface{}`` values decoded from JSON: same type and value; maps and slices panic."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (dict, list)):
        raise StrategicPatchError(f"runtime error: comparing uncomparable type {_go_type(a)}")
    return bool(a == b)


def _key(value: Any) -> tuple[type, Any]:
    """A hashable stand-in for a scalar as a Go map key (so ``1``, ``1.0`` and ``true`` stay distinct)."""
    if isinstance(value, (dict, list)):
        raise StrategicPatchError(f"runtime error: hash of unhashable type {_go_type(value)}")
    return type(value), value


def _is_hashable(value: Any) -> bool:
    return not isinstance(value, (dict, list))


def _hashable_set(values: list) -> set[tuple[type, Any]]:
    return {_key(v) for v in values}


def _go_type(value: Any) -> str:
    return {dict: "map[string]interface {}", list: "[]interface {}", str: "string", bool: "bool", int: "int64",
            float: "float64", type(None): "<nil>"}.get(type(value), type(value).__name__)


def _go_str(value: Any) -> str:
    return value if isinstance(value, str) else f"%!s({_go_type(value)}={go_format(value)})"


def go_stable_sort(items: list, less: Callable[[int, int], bool]) -> None:
    """Go's ``sort.SliceStable``, in place, step for step (insertion sort in blocks of 20, then SymMerge).

    Step-for-step matters because apimachinery's comparators are not strict weak orders: another stable
    sort would put some items elsewhere.
    """
    def swap(i: int, j: int) -> None:
        items[i], items[j] = items[j], items[i]

    def insertion_sort(a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and less(j, j - 1):
                swap(j, j - 1)
                j -= 1

    def swap_range(a: int, b: int, n: int) -> None:
        for i in range(n):
            swap(a + i, b + i)

    def rotate(a: int, m: int, b: int) -> None:
        i, j = m - a, b - m
        while i != j:
            if i > j:
                swap_range(m - i, m, j)
                i -= j
            else:
                swap_range(m - i, m + j - i, i)
                j -= i
        swap_range(m - i, m, i)

    def sym_merge(a: int, m: int, b: int) -> None:
        if m - a == 1:
            i, j = m, b
            while i < j:
                h = (i + j) >> 1
                if less(h, a):
                    i = h + 1
                else:
                    j = h
            for k in range(a, i - 1):
                swap(k, k + 1)
            return
        if b - m == 1:
            i, j = a, m
            while i < j:
                h = (i + j) >> 1
                if not less(m, h):
                    i = h + 1
                else:
                    j = h
            for k in range(m, i, -1):
                swap(k, k - 1)
            return
        mid = (a + b) >> 1
        n = mid + m
        if m > mid:
            start, r = n - b, mid
        else:
            start, r = a, m
        p = n - 1
        while start < r:
            c = (start + r) >> 1
            if not less(p - c, c):
                start = c + 1
            else:
                r = c
        end = n - start
        if start < m < end:
            rotate(start, m, end)
        if a < start < mid:
            sym_merge(a, start, mid)
        if mid < end < b:
            sym_merge(mid, end, b)

    n = len(items)
    block = 20
    a, b = 0, block
    while b <= n:
        insertion_sort(a, b)
        a, b = b, b + block
    insertion_sort(a, n)
    while block < n:
        a, b = 0, 2 * block
        while b <= n:
            sym_merge(a, a + block, b)
            a, b = b, b + 2 * block
        m = a + block
        if m < n:
            sym_merge(a, m, n)
        block *= 2


