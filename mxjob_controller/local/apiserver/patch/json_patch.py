"""JSON patch (RFC 6902): ``application/json-patch+json``, applied the way kube-apiserver applies it.

kube-apiserver runs ``gopkg.in/evanphx/json-patch.v4``, which is more lenient than the RFC in places and
this module keeps its quirks, because a client that works against a real cluster must work here too:

- ``replace`` of a missing object member adds it; ``add`` at array index ``-1`` appends; negative array
  indices count from the end;
- ``test`` of a missing (or ``null``) member passes when the expected value is ``null`` or absent;
- an operation without ``value`` writes ``null``;
- the root (``""``) can be tested and replaced, not added to or removed;
- scalars compare by their JSON text (``1`` is not ``1.0``), objects by members, arrays element-wise.

:func:`decode_patch` checks the shape of the operations as the server's strict decoder does (a
:class:`JSONPatchDecodeError` is a 400); :func:`apply_json_patch` applies them (a :class:`JSONPatchError`
is what kube-apiserver answers with 422). Neither argument is modified.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from mxjob_controller.kube.jsoncopy import deep_copy

#: kube-apiserver refuses longer patches (413), and caps what ``copy`` operations may add (3 MiB).
MAX_OPERATIONS = 10_000
MAX_COPY_BYTES = 3 * 1024 * 1024

_MISSING = "missing value"
_INVALID_INDEX = "invalid index referenced"
_TEST_FAILED = "test failed"
_ATOI = re.compile(r"[+-]?[0-9]+")
_ABSENT = object()  # an operation member that is not there at all (distinct from JSON null)


class JSONPatchError(Exception):
    """An operation that does not apply (kube-apiserver: 422)."""


class JSONPatchDecodeError(Exception):
    """A patch that is not a list of operations (kube-apiserver: 400 ``error decoding patch: ...``)."""


class TooManyOperationsError(Exception):
    """More than :data:`MAX_OPERATIONS` operations (kube-apiserver: 413)."""


def escape_pointer_token(token: str) -> str:
    """One JSON pointer reference token: ``~`` becomes ``~0`` and ``/`` becomes ``~1`` (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape_pointer_token(token: str) -> str:
    """The inverse of :func:`escape_pointer_token` (``~1`` first, then ``~0``, as RFC 6901 orders it)."""
    return token.replace("~1", "/").replace("~0", "~")


def pointer(*tokens: str | int) -> str:
    """A JSON pointer from unescaped tokens: ``pointer("metadata", "labels", "a/b")`` → ``/metadata/labels/a~1b``."""
    return "".join("/" + escape_pointer_token(str(t)) for t in tokens)


# --- decoding -------------------------------------------------------------------------------------------

_GO_JSON_TYPE = {dict: "object", list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def decode_patch(ops: Any) -> list[dict | None]:
    """Check ``ops`` (decoded JSON) is a list of operations whose ``op``/``path``/``from`` are strings.

    JSON ``null`` is an empty patch, as Go's decoder makes it.
    """
    if ops is None:
        return []
    if not isinstance(ops, list):
        raise JSONPatchDecodeError(f"json: cannot unmarshal {_GO_JSON_TYPE[type(ops)]} into Go value of type "
                                   "[]handlers.jsonPatchOp")
    for op in ops:
        if op is None:
            continue
        if not isinstance(op, dict):
            raise JSONPatchDecodeError(f"json: cannot unmarshal {_GO_JSON_TYPE[type(op)]} into Go value of type "
                                       "handlers.jsonPatchOp")
        for name in ("op", "path", "from"):
            value = op.get(name)
            if value is not None and not isinstance(value, str):
                raise JSONPatchDecodeError(f"json: cannot unmarshal {_GO_JSON_TYPE[type(value)]} into Go struct "
                                           f"field jsonPatchOp.{name} of type string")
    if len(ops) > MAX_OPERATIONS:
        raise TooManyOperationsError(f"The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, "
                                f"got {len(ops)}")
    return ops


# --- applying -------------------------------------------------------------------------------------------

def apply_json_patch(doc: Any, ops: Any) -> Any:
    """``doc`` with the operations ``ops`` applied, or :class:`JSONPatchError` for the first that fails."""
    state = _Patching(deep_copy(doc))
    for decoded in decode_patch(ops):
        op = decoded or {}
        kind = op.get("op")
        handler = _OPERATIONS.get(kind if isinstance(kind, str) else "unknown")
        if handler is None:
            raise JSONPatchError(f"Unexpected kind: {kind if isinstance(kind, str) else 'unknown'}")
        handler(state, op)
    return state.doc


class _Patching:
    """The document being patched (its root can be replaced) and the bytes ``copy`` has added so far."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc
        self.copied = 0




def _member(op: dict, name: str) -> Any:
    return op.get(name, _ABSENT)


def _path(op: dict, name: str = "path") -> str | None:
    value = op.get(name)
    return value if isinstance(value, str) else None


def _missing_member(name: str) -> str:
    return "operation missing path field: missing value" if name == "path" else \
        "operation, missing from field: missing value"


def _value(op: dict) -> Any:
    """The operation's value: JSON ``null`` when absent, as the library stores it."""
    value = _member(op, "value")
    return None if value is _ABSENT else deep_copy(value)


class _Container:
    """An object or an array that a pointer's last token addresses, with the library's access rules."""

    def __init__(self, target: dict | list) -> None:
        self.target = target

    def get(self, key: str) -> Any:
        t = self.target
        if isinstance(t, dict):
            return t.get(key)
        return t[self._index(key, len(t), for_insert=False)]

    def set(self, key: str, value: Any) -> None:
        t = self.target
        if isinstance(t, dict):
            t[key] = value
            return
        idx = _atoi(key)
        if idx < 0:
            if idx < -len(t):
                raise _ContainerError(f"Unable to access invalid index: {idx}: {_INVALID_INDEX}")
            idx += len(t)
        t[idx] = value

    def add(self, key: str, value: Any) -> None:
        t = self.target
        if isinstance(t, dict):
            t[key] = value
            return
        if key == "-":
            t.append(value)
            return
        if not _ATOI.fullmatch(key):
            raise _ContainerError(f"value was not a proper array index: '{key}': strconv.Atoi: parsing "
                                  f"{json.dumps(key)}: invalid syntax")
        t.insert(self._index(key, len(t) + 1, for_insert=True), value)

    def remove(self, key: str) -> None:
        t = self.target
        if isinstance(t, dict):
            if key not in t:
                raise _ContainerError(f"Unable to remove nonexistent key: {key}: {_MISSING}")
            del t[key]
            return
        del t[self._index(key, len(t), for_insert=False)]

    @staticmethod
    def _index(key: str, size: int, for_insert: bool) -> int:
        idx = _atoi(key)
        if idx >= size:
            raise _ContainerError(f"Unable to access invalid index: {idx}: {_INVALID_INDEX}")
        if idx < 0:
            if idx < -size:
                raise _ContainerError(f"Unable to access invalid index: {idx}: {_INVALID_INDEX}")
            idx += size
        return idx


class _ContainerError(Exception):
    pass


def _atoi(key: str) -> int:
    if not _ATOI.fullmatch(key):
        raise _ContainerError(f"strconv.Atoi: parsing {json.dumps(key)}: invalid syntax")
    return int(key)


def _find(doc: Any, path: str) -> tuple[_Container, str] | None:
    """The container holding ``path``'s last token, and that token; None where the library finds none."""
    tokens = path.split("/")
    if len(tokens) < 2:
        return None
    node: Any = doc
    if not isinstance(node, (dict, list)):
        return None
    for token in tokens[1:-1]:
        try:
            node = _Container(node).get(unescape_pointer_token(token))
        except _ContainerError:
            return None
        if not isinstance(node, (dict, list)):
            return None
    return _Container(node), unescape_pointer_token(tokens[-1])


def _add(state: _Patching, op: dict) -> None:
    path = _path(op)
    if path is None:
        raise JSONPatchError(f"add operation failed to decode path: {_MISSING}")
    found = _find(state.doc, path)
    if found is None:
        raise JSONPatchError(f'add operation does not apply: doc is missing path: "{path}": {_MISSING}')
    try:
        found[0].add(found[1], _value(op))
    except _ContainerError as e:
        raise JSONPatchError(f"error in add for path: '{path}': {e}") from None


def _remove(state: _Patching, op: dict) -> None:
    path = _path(op)
    if path is None:
        raise JSONPatchError(f"remove operation failed to decode path: {_MISSING}")
    found = _find(state.doc, path)
    if found is None:
        raise JSONPatchError(f'remove operation does not apply: doc is missing path: "{path}": {_MISSING}')
    try:
        found[0].remove(found[1])
    except _ContainerError as e:
        raise JSONPatchError(f"error in remove for path: '{path}': {e}") from None


def _replace(state: _Patching, op: dict) -> None:
    path = _path(op)
    if path is None:
        raise JSONPatchError(f"replace operation failed to decode path: {_missing_member('path')}")
    if path == "":
        value = _value(op)
        if not isinstance(value, (dict, list)):
            raise JSONPatchError("replace operation value must be object or array: %!w(<nil>)")
        state.doc = value
        return
    found = _find(state.doc, path)
    if found is None:
        raise JSONPatchError(f"replace operation does not apply: doc is missing path: {path}: {_MISSING}")
    container, key = found
    try:
        container.get(key)
    except _ContainerError:
        raise JSONPatchError(f"replace operation does not apply: doc is missing key: {path}: {_MISSING}") from None
    try:
        container.set(key, _value(op))
    except _ContainerError as e:
        raise JSONPatchError(f"error in remove for path: '{path}': {e}") from None


def _move(state: _Patching, op: dict) -> None:
    source = _path(op, "from")
    if source is None:
        raise JSONPatchError(f"move operation failed to decode from: {_missing_member('from')}")
    found = _find(state.doc, source)
    if found is None:
        raise JSONPatchError(f"move operation does not apply: doc is missing from path: {source}: {_MISSING}")
    container, key = found
    try:
        value = container.get(key)
        container.remove(key)
    except _ContainerError as e:
        raise JSONPatchError(f"error in move for path: '{key}': {e}") from None
    path = _path(op)
    if path is None:
        raise JSONPatchError(f"move operation failed to decode path: {_missing_member('path')}")
    found = _find(state.doc, path)
    if found is None:
        raise JSONPatchError(f"move operation does not apply: doc is missing destination path: {path}: {_MISSING}")
    try:
        found[0].add(found[1], value)
    except _ContainerError as e:
        raise JSONPatchError(f"error in move for path: '{path}': {e}") from None


def _test(state: _Patching, op: dict) -> None:
    path = _path(op)
    if path is None:
        raise JSONPatchError(f"test operation failed to decode path: {_missing_member('path')}")
    expected = _member(op, "value")
    if path == "":
        if expected is not _ABSENT and json_equal(state.doc, expected):
            return
        raise JSONPatchError(f"testing value {path} failed: {_TEST_FAILED}")
    found = _find(state.doc, path)
    if found is None:
        raise JSONPatchError(f"test operation does not apply: is missing path: {path}: {_MISSING}")
    try:
        actual = found[0].get(found[1])
    except _ContainerError as e:
        raise JSONPatchError(f"error in test for path: '{path}': {e}") from None
    if actual is None:
        if expected is _ABSENT or expected is None:
            return
    elif expected is not _ABSENT and json_equal(actual, expected):
        return
    raise JSONPatchError(f"testing value {path} failed: {_TEST_FAILED}")


def _copy_op(state: _Patching, op: dict) -> None:
    source = _path(op, "from")
    if source is None:
        raise JSONPatchError(f"copy operation failed to decode from: {_missing_member('from')}")
    found = _find(state.doc, source)
    if found is None:
        raise JSONPatchError(f"copy operation does not apply: doc is missing from path: {source}: {_MISSING}")
    try:
        value = found[0].get(found[1])
    except _ContainerError as e:
        raise JSONPatchError(f"error in copy for from: '{source}': {e}") from None
    path = _path(op)
    if path is None:
        raise JSONPatchError(f"copy operation failed to decode path: {_MISSING}")
    found = _find(state.doc, path)
    if found is None:
        raise JSONPatchError(f"copy operation does not apply: doc is missing destination path: {path}: {_MISSING}")
    if value is not None:
        state.copied += len(json.dumps(value, separators=(",", ":")))
        if state.copied > MAX_COPY_BYTES:
            raise JSONPatchError(f"Unable to complete the copy, the accumulated size increase of copy is "
                                 f"{state.copied}, exceeding the limit {MAX_COPY_BYTES}")
    try:
        found[0].add(found[1], deep_copy(value))
    except _ContainerError as e:
        raise JSONPatchError(f"error while adding value during copy: {e}") from None


_OPERATIONS: dict[str, Callable[[_Patching, dict], None]] = {
    "add": _add, "remove": _remove, "replace": _replace, "move": _move, "test": _test, "copy": _copy_op,
}


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality as the library judges it: scalars by type and value (``1`` ≠ ``1.0``, ``true`` ≠ ``1``)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b
