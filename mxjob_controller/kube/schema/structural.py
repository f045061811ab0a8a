"""Custom resources: a CRD version's ``openAPIV3Schema`` compiled for pruning, defaulting and validation, and the
checks kube's CRD validation makes of it that this project mirrors (:func:`pattern_errors`)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

from mxjob_controller.kube import go_regexp
from mxjob_controller.kube.field_errors import FieldError, invalid
from mxjob_controller.kube.schema.builtin import compiler as builtin_compiler
from mxjob_controller.kube.schema.compiled import CompiledSchema
from mxjob_controller.kube.schema.compiler import OBJECT_META, STRUCTURAL, Compiler
from mxjob_controller.kube.schema.nodes import ObjectNode

# Compiled schemas by their schema's JSON text (key order included): a CRD whose status changes is served as new
# resource types with the same schemas, and a process may run several API servers (tests, `local up` restarted in
# place) serving the same CRDs; compiling one of the project's CRDs costs tens of milliseconds of CPU.
_COMPILED_MAX = 32
_compiled: OrderedDict[str, CompiledSchema] = OrderedDict()
_compiled_lock = threading.Lock()


def compile_structural(schema: dict[str, Any] | None) -> CompiledSchema:
    """Compile one CRD version's schema (once per process for equal schemas: the result is immutable).

    The root is a resource: ``apiVersion``, ``kind`` and ``metadata`` are never pruned, and ``metadata``
    is checked and pruned as ObjectMeta (kube-apiserver decodes it into the Go type), whatever the schema
    declares for it. Without a schema every field is kept.
    """
    key = json.dumps(schema, separators=(",", ":"))
    with _compiled_lock:
        compiled = _compiled.get(key)
        if compiled is None:
            compiled = _compiled[key] = _compile(schema)
            if len(_compiled) > _COMPILED_MAX:
                _compiled.popitem(last=False)
        else:
            _compiled.move_to_end(key)
        return compiled


def _compile(schema: dict[str, Any] | None) -> CompiledSchema:
    compiler = Compiler(STRUCTURAL, object_meta=lambda: builtin_compiler().definition(OBJECT_META))
    root = compiler.compile(schema) if schema else None
    if not isinstance(root, ObjectNode):
        root = ObjectNode()
        root.preserve = True
    compiler.make_resource(root, require_type_meta=False)
    root.finish()
    return CompiledSchema(root, sort_unknown=True)


# The keywords of a schema whose values are schemas (kube's JSONSchemaProps walk), by how they hold them.
_ONE_SCHEMA = ("not", "additionalProperties", "additionalItems")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SCHEMA_MAPS = ("properties", "patternProperties", "definitions", "dependencies")


def pattern_errors(schema: Any, path: str) -> list[FieldError]:
    """Every ``pattern`` in ``schema`` (at ``path``) that Go's ``regexp`` refuses, as kube's CRD validation
    reports it: ``<path>.pattern: Invalid value: "<pattern>": must be a valid regular expression, but isn't:
    error parsing regexp: ...``."""
    found: list[FieldError] = []
    stack = [(schema, path)]
    while stack:
        node, where = stack.pop()
        if not isinstance(node, dict):
            continue
        pattern = node.get("pattern")
        if isinstance(pattern, str) and pattern:
            try:
                go_regexp.compile(pattern)
            except go_regexp.GoRegexpError as e:
                found.append(invalid(f"{where}.pattern", pattern,
                                     f"must be a valid regular expression, but isn't: {e}"))
        items = node.get("items")
        if isinstance(items, list):
            stack += [(item, f"{where}.items[{i}]") for i, item in enumerate(items)]
        elif items is not None:
            stack.append((items, f"{where}.items"))
        stack += [(node.get(k), f"{where}.{k}") for k in _ONE_SCHEMA if isinstance(node.get(k), dict)]
        for k in _SCHEMA_LISTS:
            if isinstance(node.get(k), list):
                stack += [(sub, f"{where}.{k}[{i}]") for i, sub in enumerate(node[k])]
        for k in _SCHEMA_MAPS:
            if isinstance(node.get(k), dict):
                stack += [(sub, f"{where}.{k}[{name}]") for name, sub in node[k].items()]
    return sorted(found, key=lambda e: e.field)
