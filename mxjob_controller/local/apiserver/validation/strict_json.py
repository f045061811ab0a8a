"""JSON request bodies decoded as kube-apiserver's strict decoder sees them: duplicate fields, with paths.

Python keeps the last of duplicate keys, as Go does; this records where they were, named as
``sigs.k8s.io/json`` names them (``metadata.labels.app``, ``spec.containers[0].name``), so the caller can
apply ``fieldValidation`` (fail, warn, or ignore). ``NaN`` and ``Infinity``, which Python's decoder takes
but JSON (and Go) does not, are refused: what is decoded here can always be encoded again.

Nesting is limited to :data:`MAX_DEPTH` levels (ValueError past it, worded as Go's, naming the character where
the limit was passed). A body with fewer brackets than that is decoded at once; otherwise the decoded value is
walked, and only a body that is really too deep (or malformed, to tell which error Go would meet first) has its
bytes scanned: scanning every body would cost the server a share of its time that shows when it serves a large
job's pods, whose ``MX_CONFIG`` holds hundreds of quoted braces.
Go's decoder stops at 10,000 (``invalid character '[' exceeded max depth``); Python cannot go that deep:
its decoder, and everything that walks an accepted object afterwards (copies, validation, patches, tables,
error messages, the YAML composer), recurses once to three times per level, and the interpreter stops at
1,000 frames (``RecursionError``: a 500). Measured on a request thread, the first of those paths fail
near 350 levels; 200 keeps a margin, and is far more than any Kubernetes object needs (a CRD with a full
pod template in its schema is about 35 deep).
"""

from __future__ import annotations

import json
import re
import threading
from array import array
from itertools import accumulate
from typing import Any

from mxjob_controller.kube.field_errors import child

#: The deepest nesting of arrays and objects a request body may have (see the module's docstring).
MAX_DEPTH = 200

_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # JSON strings, whose brackets do not nest
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # as signed bytes: +1 opens a level, -1 closes one


def check_depth(body: bytes) -> None:
    """ValueError, worded as Go's, when ``body`` nests arrays and objects deeper than :data:`MAX_DEPTH`.

    Costs a regex pass and a translation (C speed): a 3 MiB body takes a few milliseconds."""
    brackets = _STRINGS.sub(b"", body).translate(None, _NOT_BRACKETS)
    if brackets.count(b"[") + brackets.count(b"{") <= MAX_DEPTH:
        return  # cannot be deeper than the number of levels opened
    steps = array("b", brackets.translate(_STEPS))
    if max(accumulate(steps)) <= MAX_DEPTH:
        return
    at = next(i for i, level in enumerate(accumulate(steps)) if level > MAX_DEPTH)
    raise ValueError(f"invalid character '{chr(brackets[at])}' exceeded max depth of {MAX_DEPTH}")


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest in ``value`` more than ``limit`` levels (the outermost is level 1)."""
    stack = [(value, 1)] if isinstance(value, (dict, list)) else []
    while stack:
        node, level = stack.pop()
        if level > limit:
            return True
        for item in node.values() if isinstance(node, dict) else node:
            if isinstance(item, (dict, list)):
                stack.append((item, level + 1))
    return False


def _loads(body: bytes | str, decoder: json.JSONDecoder) -> Any:
    """``json.loads(body, ...)`` with a decoder built before (``json.loads`` builds one, and its scanner, on every
    call given options): the same checks of what it is given."""
    if isinstance(body, str):
        if body.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", body, 0)
    elif isinstance(body, (bytes, bytearray)):
        body = body.decode(json.detect_encoding(body), "surrogatepass")
    else:
        raise TypeError(f"the JSON object must be str, bytes or bytearray, not {body.__class__.__name__}")
    return decoder.decode(body)


# Past this many bytes the brackets are not counted first: a large body opens more than MAX_DEPTH levels anyway
# (a 1,000-peer MX_CONFIG opens some 2,000, in its string), so the count was two passes over it for nothing, and
# the walk of the decoded value (:func:`_deeper_than`) costs what its containers are, not its bytes.
_COUNTED = 16 * 1024


def _decode(body: bytes, decoder: json.JSONDecoder) -> Any:
    """``json.loads`` with the depth limit, errors as a sequential decoder (Go's) meets them."""
    if len(body) <= _COUNTED and body.count(b"[") + body.count(b"{") <= MAX_DEPTH:
        return _loads(body, decoder)   # cannot be deeper than the number of levels opened
    try:
        value = _loads(body, decoder)
    except RecursionError:
        check_depth(body)   # raises: only a body far past the limit gets here
        raise ValueError(f"exceeded max depth of {MAX_DEPTH}") from None
    except json.JSONDecodeError as e:
        check_depth(e.doc[:e.pos].encode())   # the depth error, if it comes before the syntax error
        raise
    if _deeper_than(value, MAX_DEPTH):
        check_depth(body)   # raises, naming the character
    return value


def _not_json(token: str) -> Any:
    """Go's words for the tokens Python's decoder would take."""
    if token.startswith("-"):
        raise ValueError("invalid character 'I' in numeric literal")
    raise ValueError(f"invalid character '{token[0]}' looking for beginning of value")


_PLAIN = json.JSONDecoder(parse_constant=_not_json)


def loads(body: bytes) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity`` and nesting past :data:`MAX_DEPTH`
    (ValueError), as Go does."""
    return _decode(body, _PLAIN)


class _DuplicatesDecoder(threading.local):
    """A thread's decoder for :func:`loads_with_duplicates`, built once, and the duplicates its hook finds: the
    hook must know the call it serves, and a decoder built per call costs more than the common case's hook."""

    def __init__(self) -> None:
        self.found: list[tuple[dict, list[str]]] = []
        found = self.found

        def pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
            obj = dict(pairs)
            if len(obj) != len(pairs):
                seen: set[str] = set()
                dups = []
                for key, _ in pairs:
                    if key in seen and key not in dups:
                        dups.append(key)
                    seen.add(key)
                found.append((obj, dups))
            return obj

        self.decoder = json.JSONDecoder(object_pairs_hook=pairs_hook, parse_constant=_not_json)


_DUPLICATES = _DuplicatesDecoder()


def loads_with_duplicates(body: bytes) -> tuple[Any, list[str]]:
    """The decoded body and the paths of the duplicate fields it had (inner objects' first).

    Raises ValueError (json.JSONDecodeError) for malformed JSON, and for nesting past :data:`MAX_DEPTH`. The
    common case (no duplicates) costs one length comparison per object.
    """
    local = _DUPLICATES
    found = local.found
    found.clear()
    try:
        value = _decode(body, local.decoder)
        if not found:
            return value, []
        where = _paths_of({id(obj) for obj, _ in found}, value)
        return value, [child(where.get(id(obj), ""), key) for obj, keys in found for key in keys]
    finally:
        found.clear()


def _paths_of(targets: set[int], root: Any) -> dict[int, str]:
    """The path of each object in ``targets`` (by identity) within ``root``."""
    out: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack and len(out) < len(targets):
        value, path = stack.pop()
        if isinstance(value, dict):
            if id(value) in targets:
                out[id(value)] = path
            stack.extend((v, child(path, k)) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, child(path, i)) for i, v in enumerate(value))
    return out
