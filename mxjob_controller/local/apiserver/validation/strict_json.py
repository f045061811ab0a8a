"""JSON request bodies decoded as kube-apiserver's strict decoder sees them: duplicate fields, with paths.

Python keeps the last of duplicate keys, as Go does; this records where they were, named as
``sigs.k8s.io/json`` names them (``metadata.labels.app``, ``spec.containers[0].name``), so the caller can
apply ``fieldValidation`` (fail, warn, or ignore).
"""

from __future__ import annotations

import json
from typing import Any


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

    value = json.loads(body, object_pairs_hook=pairs_hook)
    if not found:
        return value, []
    where = _paths_of({id(obj) for obj, _ in found}, value)
    return value, [f"{where[id(obj)]}.{key}" if where.get(id(obj)) else key for obj, keys in found for key in keys]


def _paths_of(targets: set[int], root: Any) -> dict[int, str]:
    """The path of each object in ``targets`` (by identity) within ``root``."""
    out: dict[int, str] = {}
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack and len(out) < len(targets):
        value, path = stack.pop()
        if isinstance(value, dict):
            if id(value) in targets:
                out[id(value)] = path
            stack.extend((v, f"{path}.{k}" if path else k) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
    return out
