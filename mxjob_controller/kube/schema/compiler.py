"""Turn schemas into :mod:`nodes`: Kubernetes' own definitions, or a CRD's structural schema.

Two dialects, because kube-apiserver treats the two kinds of object differently:

- **built-in** (``kube.k8s_schemas`` definitions, JSON-Schema style with ``#/$defs/`` refs and
  ``type: [t, "null"]``): a ``null`` is an absent field (Go decoding), an object schema without properties
  is free-form (``RawExtension``, ``FieldsV1``), and ``enum``s are left to the rules that mirror Go
  validation (the order of kube's "supported values" is the Go code's, not the schema's).
- **structural** (a CRD version's ``openAPIV3Schema``): ``nullable``, ``default``, pruning of unknown
  fields, ``x-kubernetes-preserve-unknown-fields``, ``x-kubernetes-int-or-string``,
  ``x-kubernetes-embedded-resource``; a resource's ``metadata`` is ObjectMeta whatever the schema says.

Each definition is compiled once per compiler and shared; recursive definitions (``JSONSchemaProps``)
resolve to the node being built, so compiling never loops.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube import go_regexp
from mxjob_controller.kube.k8s_schemas import ref_name
from mxjob_controller.kube.schema.formats import NUMBER_RANGES, STRING_FORMATS
from mxjob_controller.kube.schema.nodes import (
    NO_DEFAULT,
    NONE_TYPE,
    AnyNode,
    ArrayNode,
    Node,
    ObjectNode,
    QuantityNode,
    Rule,
    ScalarNode,
)

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
RESOURCE_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
    "object": (dict,), "array": (list,),
}
_SCALARS = frozenset({"string", "integer", "number", "boolean"})


@dataclass(frozen=True, slots=True)
class Dialect:
    absent_nulls: bool          # null == field not given
    enforce_enum: bool
    defaults: bool              # ``default`` values are applied
    free_form_objects: bool     # ``type: object`` without properties keeps (and accepts) anything


BUILTIN = Dialect(absent_nulls=True, enforce_enum=False, defaults=False, free_form_objects=True)
STRUCTURAL = Dialect(absent_nulls=False, enforce_enum=True, defaults=True, free_form_objects=False)

RuleLookup = Callable[[str], tuple[Rule, ...]]


class Compiler:
    """Compiles schemas of one dialect; caches each named definition. Thread-safe."""

    def __init__(self, dialect: Dialect, definitions: Mapping[str, dict] | None = None,
                 rules: RuleLookup | None = None, object_meta: Callable[[], Node] | None = None,
                 required_elsewhere: frozenset[str] = frozenset()) -> None:
        self.dialect = dialect
        self._defs = definitions or {}
        self._rules = rules
        self._required_elsewhere = required_elsewhere  # definitions whose own validation words "required"
        self._object_meta = object_meta
        self._cache: dict[str, Node] = {}    # complete nodes only
        self._pending: dict[str, Node] = {}  # being compiled by the thread holding the lock
        self._lock = threading.RLock()

    def definition(self, name: str) -> Node:
        """The node of a named definition, compiled on first use."""
        node = self._cache.get(name)
        if node is not None:
            return node
        with self._lock:
            return self._definition(name)

    def _definition(self, name: str) -> Node:
        """With the lock held. Nodes are published together once the outermost definition is complete, so
        another thread never walks a node whose (possibly recursive) references are still being filled."""
        node = self._cache.get(name) or self._pending.get(name)
        if node is not None:
            return node
        schema = self._defs.get(name)
        if schema is None:
            raise KeyError(f"no schema definition named {name!r}")
        outermost = not self._pending
        node = self._shell(schema, name)
        self._pending[name] = node  # before filling: a recursive reference finds this node
        try:
            self._fill(node, schema, name)
        except BaseException:
            if outermost:
                self._pending.clear()
            raise
        if outermost:
            self._cache.update(self._pending)
            self._pending.clear()
        return node

    def compile(self, schema: Any) -> Node:
        """A node for an anonymous schema (a property, an item, a CRD version's root)."""
        with self._lock:
            return self._node(schema)

    # --- internals ------------------------------------------------------------------------------------

    def _node(self, schema: Any) -> Node:
        if not isinstance(schema, dict):
            node: Node = AnyNode()  # ``additionalProperties: true`` and the like
            node.finish()
            return node
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return self.definition(ref_name(ref))
        node = self._shell(schema, None)
        self._fill(node, schema, None)
        return node

    def _shell(self, schema: dict, name: str | None) -> Node:
        if name == QUANTITY:
            return QuantityNode()
        if name == INT_OR_STRING or schema.get("x-kubernetes-int-or-string"):
            return ScalarNode()
        types, _ = _types(schema)
        if types == ["object"] or (not types and ("properties" in schema or "additionalProperties" in schema
                                                  or schema.get("x-kubernetes-embedded-resource"))):
            return ObjectNode()
        if types == ["array"]:
            return ArrayNode()
        if types and all(t in _SCALARS for t in types):
            return ScalarNode()
        return AnyNode()

    def _fill(self, node: Node, schema: dict, name: str | None) -> None:
        types, nullable = _types(schema)
        node.nullable = nullable
        if name == INT_OR_STRING or schema.get("x-kubernetes-int-or-string"):
            types = ["integer", "string"]
        if self.dialect.enforce_enum and isinstance(schema.get("enum"), list):
            node.enum = list(schema["enum"])
        if "default" in schema and self.dialect.defaults:
            node.default = schema["default"]
        else:
            node.default = NO_DEFAULT
        if name not in (QUANTITY, INT_OR_STRING):
            node.any_of = [self._node(s) for s in schema.get("anyOf") or ()]
            node.one_of = [self._node(s) for s in schema.get("oneOf") or ()]
            node.all_of = [self._node(s) for s in schema.get("allOf") or ()]
            node.not_ = self._node(schema["not"]) if isinstance(schema.get("not"), dict) else None
        if isinstance(node, ObjectNode):
            self._fill_object(node, schema, name)
        elif isinstance(node, ArrayNode):
            self._fill_array(node, schema)
        elif isinstance(node, ScalarNode):
            self._fill_scalar(node, schema, types)
        if nullable:
            node.types = node.types | {NONE_TYPE}
        node.finish()

    def _fill_object(self, node: ObjectNode, schema: dict, name: str | None) -> None:
        props = schema.get("properties") or {}
        node.props = {k: self._node(v) for k, v in props.items()}
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            node.additional = self._node(extra)
        elif extra is True:
            node.additional = self._node(True)
        node.preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or (
            self.dialect.free_form_objects and not props and extra is None)
        if name not in self._required_elsewhere:
            node.required = tuple(r for r in schema.get("required") or () if isinstance(r, str))
        node.absent_nulls = self.dialect.absent_nulls
        node.min_props = _int(schema.get("minProperties"))
        node.max_props = _int(schema.get("maxProperties"))
        if schema.get("x-kubernetes-embedded-resource"):
            self.make_resource(node, require_type_meta=True)
        if name is not None and self._rules is not None:
            node.rules = self._rules(name)

    def make_resource(self, node: ObjectNode, require_type_meta: bool) -> None:
        """An object that is a Kubernetes resource: apiVersion and kind strings, ObjectMeta metadata."""
        node.meta_fields = RESOURCE_META_FIELDS
        for key in ("apiVersion", "kind"):
            if key not in node.props:
                text = ScalarNode()
                text.types, text.type_name = frozenset({str}), "string"
                text.finish()
                node.props[key] = text
        if self._object_meta is not None:
            node.props["metadata"] = self._object_meta()
        if require_type_meta:
            node.required = tuple(dict.fromkeys(("apiVersion", "kind", *node.required)))

    def _fill_array(self, node: ArrayNode, schema: dict) -> None:
        items = schema.get("items")
        node.items = self._node(items) if isinstance(items, dict) else None
        node.min_items = _int(schema.get("minItems"))
        node.max_items = _int(schema.get("maxItems"))
        node.unique = bool(schema.get("uniqueItems"))

    def _fill_scalar(self, node: ScalarNode, schema: dict, types: list[str]) -> None:
        py: set[type] = set()
        for t in types:
            py.update(_PY_TYPES.get(t, ()))
        node.types = frozenset(py)
        node.type_name = ",".join(types)
        node.int_ok = "integer" in types and "number" not in types
        node.minimum = _number(schema.get("minimum"))
        node.maximum = _number(schema.get("maximum"))
        node.exclusive_min = schema.get("exclusiveMinimum") is True
        node.exclusive_max = schema.get("exclusiveMaximum") is True
        node.multiple_of = _number(schema.get("multipleOf"))
        node.min_length = _int(schema.get("minLength"))
        node.max_length = _int(schema.get("maxLength"))
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                node.pattern = go_regexp.compile(pattern)   # RE2: Go's syntax, linear time
                node.pattern_text = pattern
            except go_regexp.GoRegexpError:
                node.pattern = None  # kube-apiserver refuses such a CRD; nothing sensible to check here
        fmt = schema.get("format")
        if isinstance(fmt, str):
            node.fmt = fmt
            if "string" in types:
                node.fmt_check = STRING_FORMATS.get(fmt)
            if len(types) == 1 and ((types[0] == "integer" and fmt in ("int32", "int64"))
                                    or (types[0] == "number" and fmt == "float")):
                node.range = NUMBER_RANGES[fmt]


def _types(schema: dict) -> tuple[list[str], bool]:
    """The non-null type names of a schema, and whether it admits null."""
    raw = schema.get("type")
    nullable = bool(schema.get("nullable"))
    if isinstance(raw, str):
        return [raw], nullable
    if isinstance(raw, list):
        names = [t for t in raw if isinstance(t, str) and t != "null"]
        return names, nullable or "null" in raw
    return [], nullable


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def _number(value: Any) -> int | float | None:
    return value if type(value) in (int, float) else None
