"""What a typo probably meant: the nearest valid name for each unknown field or unsupported value the API server
named, so that ``spec.mxReplicaSpec`` is answered with "did you mean mxReplicaSpecs".

    hints(message, schema_of)   # one line per problem: 'spec.runPolicy.backofLimit: unknown field; did you mean
                                #  "backoffLimit"?'

The server's own words stay as they are (kube's ``strict decoding error: unknown field "…"`` and ``Unsupported
value: "…": supported values: …``); these lines come after them. The valid names of a field are read from the
kind's OpenAPI v3 schema as the server publishes it (``/openapi/v3/<group-version>``, what ``kubectl explain``
reads), so built-in kinds and custom resources are answered alike; ``schema_of`` is how the caller gets it.
Pure: the schema walk and the matching (``difflib``: the closest name above a similarity of 0.6, any case).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Schema = Mapping[str, Any]
SchemaOf = Callable[[], "tuple[Schema, Callable[[str], Schema | None]] | None"]
"""() → (the kind's root schema, a resolver of ``#/components/schemas/...`` references), or None."""

_UNKNOWN = re.compile(r'unknown field "([^"]+)"')
_UNSUPPORTED = re.compile(r'(?:(?P<field>\w[\w.\[\]-]*): )?Unsupported value: "(?P<value>[^"]*)": supported values: '
                          r'(?P<values>"[^"]*"(?:, "[^"]*")*)')
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
CUTOFF = 0.6


def unknown_fields(message: str) -> list[str]:
    """The paths of kube's ``unknown field "…"`` problems in ``message``, in order, each once."""
    return list(dict.fromkeys(_UNKNOWN.findall(message)))


def nearest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``name`` (case aside), if any is close enough to be a typo of it."""
    by_lower: dict[str, str] = {}
    for candidate in candidates:
        by_lower.setdefault(candidate.lower(), candidate)
    if name.lower() in by_lower and by_lower[name.lower()] != name:
        return by_lower[name.lower()]
    found = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=CUTOFF)
    return by_lower[found[0]] if found else None


def _resolved(node: Schema | None, resolve: Callable[[str], Schema | None]) -> Schema | None:
    """A schema node with its ``$ref`` (or single-``allOf`` reference, as kube-openapi writes one) followed."""
    for _ in range(32):   # references to references: bounded, a cycle cannot hang us
        if not isinstance(node, Mapping):
            return None
        ref = node.get("$ref")
        if ref is None and isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1:
            ref = (node["allOf"][0] or {}).get("$ref")
        if not isinstance(ref, str):
            return node
        node = resolve(ref)
    return None


def segments(path: str) -> list[str | int]:
    """``spec.containers[0].comand`` → ``["spec", "containers", 0, "comand"]``."""
    return [int(index) if index else name for name, index in _SEGMENT.findall(path)]


def parent_properties(root: Schema, path: Iterable[str | int], resolve: Callable[[str], Schema | None]) -> list[str]:
    """The field names valid beside the last segment of ``path`` (those of its parent object), or []."""
    parts = list(path)[:-1]
    node = _resolved(root, resolve)
    for part in parts:
        if node is None:
            return []
        if isinstance(part, int):
            node = _resolved(node.get("items"), resolve)
        elif part in (node.get("properties") or {}):
            node = _resolved(node["properties"][part], resolve)
        elif isinstance(node.get("additionalProperties"), Mapping):   # a map: the key is any name
            node = _resolved(node["additionalProperties"], resolve)
        else:
            return []
    return sorted((node or {}).get("properties") or {})


def hints(message: str, schema_of: SchemaOf) -> list[str]:
    """A line for each problem in the server's ``message`` that has a likely intended name."""
    out: list[str] = []
    unknown = unknown_fields(message)
    schema = schema_of() if unknown else None
    for path in unknown:
        parts = segments(path)
        if schema is None or not parts or not isinstance(parts[-1], str):
            continue
        guess = nearest(parts[-1], parent_properties(schema[0], parts, schema[1]))
        if guess:
            out.append(f'{path}: unknown field; did you mean "{guess}"?')
    for match in _UNSUPPORTED.finditer(message):
        values = re.findall(r'"([^"]*)"', match.group("values"))
        guess = nearest(match.group("value"), values)
        if guess and guess != match.group("value"):
            where = f"{match.group('field')}: " if match.group("field") else ""
            out.append(f'{where}"{match.group("value")}" is not supported; did you mean "{guess}"?')
    return list(dict.fromkeys(out))


def kind_schema(document: Schema, group: str, version: str,
                kind: str) -> tuple[Schema, Callable[[str], Schema | None]] | None:
    """The schema of ``kind`` in an OpenAPI v3 document, and the resolver of its references."""
    schemas = (document.get("components") or {}).get("schemas") or {}

    def resolve(ref: str) -> Schema | None:
        return schemas.get(ref.rpartition("/")[2])

    for schema in schemas.values():
        for gvk in schema.get("x-kubernetes-group-version-kind") or ():
            if (gvk.get("group") or "", gvk.get("version"), gvk.get("kind")) == (group, version, kind):
                return schema, resolve
    return None
