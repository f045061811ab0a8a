"""JSON request bodies decoded as kube-apiserver's strict decoder sees them: duplicate fields, with paths.

Python keeps the last of duplicate keys, as Go does; this records where they were, named as
``sigs.k8s.io/json`` names them (``metadata.labels.app``, ``spec.containers[0].name``), so the caller can
apply ``fieldValidation`` (fail, warn, or ignore). ``NaN`` and ``Infinity``, which Python's decoder takes
but JSON (and Go) does not, are refused: what is decoded here can always be encoded again.
"""

from __future__ import annotations

import json
from typing import Any

from mxjob_controller.kube.field_errors import child


def _not_json(token: str) -> Any:
    """Go's words for the tokens Python's decoder would take."""
    if token.startswith("-"):
        raise ValueError("invalid character 'I' in numeric literal")
    raise ValueError(f"invalid character '{token[0]}' looking for beginning of value")


def loads(body: bytes) -> Any:
    """``json.loads`` that refuses ``NaN``, ``Infinity`` and ``-Infinity`` (ValueError), as Go does."""
    return json.loads(body, parse_constant=_not_json)


def loads_with_duplicates(body: bytes) -> tuple[Any, list[str]]:
    """The decoded body and the paths of the duplicate fields it had (inner objects' first).

    Raises ValueError (json.JSONDecodeError) for malformed JSON. The common case (no duplicates) costs one
    length comparison per object.
    """
    found: list[tuple[dict, list[str]]] = []

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

    value = json.loads(body, object_pairs_hook=pairs_hook, parse_constant=_not_json)
    if not found:
        return value, []
    where = _paths_of({id(obj) for obj, _ in found}, value)
    return value, [child(where.get(id(obj), ""), key) for obj, keys in found for key in keys]


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
