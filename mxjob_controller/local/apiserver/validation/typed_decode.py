"""What decoding a body into a built-in kind's Go struct does before any validation, as kube-apiserver does it.

- A value of the wrong JSON type is a decode error, not a schema error: the write is a 400 ``BadRequest``
  ``Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field
  ContainerPort.spec.containers.ports.containerPort of type int32`` (Go's ``UnmarshalTypeError``: the first one in
  document order; the innermost struct's name, then the JSON path of struct fields from the root, without list
  indices or map keys; the Go type of the field). A quantity that does not parse ends decoding at once, with
  apimachinery's own message and no field (``quantities must match the regular expression ...``).
- Quantities (``resource.Quantity`` fields) are stored canonically (``1000m`` → ``1``, ``0.5`` → ``500m``,
  ``1.5Gi`` → ``1536Mi``; a JSON number becomes a string), since kube re-encodes the decoded struct.

Custom resources are never decoded into structs: neither applies to them.
"""

from __future__ import annotations

import functools
from typing import Any

from mxjob_controller.kube import k8s_schemas
from mxjob_controller.kube import quantity as kube_quantity
from mxjob_controller.kube.schema.compiler import QUANTITY
from mxjob_controller.kube.schema.formats import QUANTITY_FORMAT_WRONG, parse_quantity
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.resources import ResourceType

_ANY = "any"   # decoded by its own UnmarshalJSON (int-or-string, times, raw JSON): not checked here
_CUSTOM_DECODERS = frozenset({
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime", "io.k8s.apimachinery.pkg.runtime.RawExtension",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
})
_JSON_KIND = {str: "string", bool: "bool", list: "array", dict: "object", int: "number", float: "number"}


class _QuantityError(Exception):
    pass


def _types(schema: dict) -> set[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return {t}
    return {x for x in t or () if x != "null"}


def _def_go_name(name: str) -> str:
    parts = name.split(".")
    return f"{parts[-2]}.{parts[-1]}"


@functools.cache
def _named(name: str) -> tuple[str, Any]:
    """(kind of node, payload) of definition ``name``."""
    if name == QUANTITY:
        return "quantity", None
    if name in _CUSTOM_DECODERS:
        return _ANY, None
    return _shape(k8s_schemas.definitions()[name], name)


_SHAPES: dict[int, tuple[str, Any]] = {}   # by id() of a schema in the (cached, never freed) definitions


def _shape(schema: Any, name: str | None = None) -> tuple[str, Any]:
    if name is None and isinstance(schema, dict):
        shape = _SHAPES.get(id(schema))
        if shape is None:
            shape = _SHAPES[id(schema)] = _compute_shape(schema)
        return shape
    return _compute_shape(schema, name)


def _compute_shape(schema: Any, name: str | None = None) -> tuple[str, Any]:
    """A schema as ("struct", (go type, struct name, properties)), ("list"/"map", element schema), ("scalar",
    (python types, go type)), "quantity" or "any"."""
    if not isinstance(schema, dict):
        return _ANY, None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _named(k8s_schemas.ref_name(ref))
    if schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields"):
        return _ANY, None
    types = _types(schema)
    if "properties" in schema and (not types or types == {"object"}):
        short = name.rsplit(".", 1)[-1] if name else ""
        return "struct", (_def_go_name(name) if name else "struct", short, schema["properties"])
    if types == {"object"}:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            return "map", extra
        return _ANY, None
    if types == {"array"}:
        return "list", schema.get("items")
    if len(types) == 1:
        t = next(iter(types))
        fmt = schema.get("format", "")
        if t == "integer":
            return "scalar", ((int,), fmt if fmt in ("int32", "int64") else "int64")
        if t == "number":
            return "scalar", ((int, float), "float64")
        if t == "boolean":
            return "scalar", ((bool,), "bool")
        if t == "string":
            return "scalar", ((str,), "[]uint8" if fmt == "byte" else "string")
    return _ANY, None


def _go_type(schema: Any) -> str:
    kind, payload = _shape(schema)
    if kind == "struct":
        return payload[0]
    if kind == "list":
        return "[]" + _go_type(payload)
    if kind == "map":
        return "map[string]" + _go_type(payload)
    if kind == "scalar":
        return payload[1]
    if kind == "quantity":
        return "resource.Quantity"
    return "interface {}"


@functools.lru_cache(maxsize=4096)
def _canonical(text: str) -> str | None:
    """A quantity's canonical text; None when it does not parse (quantities repeat: cached)."""
    try:
        parse_quantity(text)
    except ValueError:
        return None
    return kube_quantity.normalized(text)


def _canonical_quantity(value: Any) -> str:
    """The canonical text of a quantity given as a JSON string or number; :class:`_QuantityError` if it is none."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _QuantityError
    text = value if isinstance(value, str) else repr(value) if isinstance(value, float) else str(value)
    canonical = _canonical(text.strip())
    if canonical is None:
        raise _QuantityError
    return canonical


class _Decoder:
    """One decode: finds the first type error (and a quantity that does not parse: :class:`_QuantityError`)."""

    def __init__(self) -> None:
        self.first: str | None = None

    def type_error(self, value: Any, struct: str, path: tuple[str, ...], go_type: str) -> None:
        if self.first is not None:
            return
        kind = _JSON_KIND.get(type(value), "number")
        if kind == "number" and isinstance(value, float):
            kind = f"number {value!r}"
        elif kind == "number" and go_type in ("int32", "int64"):
            kind = f"number {value}"  # an int out of range
        field = ".".join(path)
        where = f"Go struct field {struct}.{field}" if struct or field else "Go value"
        self.first = f"json: cannot unmarshal {kind} into {where} of type {go_type}"

    def value(self, schema: Any, value: Any, struct: str, path: tuple[str, ...],
              shape: tuple[str, Any] | None = None) -> Any:
        """Check ``value`` against ``schema``; ``value`` back. ``path``: the JSON field names from the root (joined
        only for an error message)."""
        if value is None:
            return None
        kind, payload = shape or _shape(schema)
        if kind == "quantity":
            _canonical_quantity(value)
            return value
        if kind == "scalar":
            types, go_type = payload
            ok = type(value) in types and not (isinstance(value, bool) and bool not in types)
            if not ok and go_type in ("int32", "int64") and isinstance(value, float) and value.is_integer():
                ok = True   # 2.0: accepted as 2 (the schema walk stores it so)
            if ok and go_type == "int32" and isinstance(value, int) and not -2**31 <= value < 2**31:
                ok = False
            if not ok:
                self.type_error(value, struct, path, go_type)
            return value
        if kind == "struct":
            go_type, name, props = payload
            if not isinstance(value, dict):
                self.type_error(value, struct, path, go_type)
                return value
            for key, item in value.items():
                sub = props.get(key)
                if sub is None or item is None:
                    continue  # unknown: fieldValidation's business
                sub_shape = _shape(sub)
                sub_kind = sub_shape[0]
                if sub_kind == _ANY:
                    continue
                if sub_kind == "scalar" and type(item) in sub_shape[1][0] and (
                        sub_shape[1][1] != "int32" or -2**31 <= item < 2**31):
                    continue   # the common case, without a call
                self.value(sub, item, name, (*path, key), sub_shape)
            return value
        if kind == "list":
            if not isinstance(value, list):
                self.type_error(value, struct, path, "[]" + _go_type(payload))
                return value
            item_shape = _shape(payload)
            if item_shape[0] == _ANY:
                return value
            for item in value:
                self.value(payload, item, struct, path, item_shape)
            return value
        if kind == "map":
            if not isinstance(value, dict):
                self.type_error(value, struct, path, "map[string]" + _go_type(payload))
                return value
            item_shape = _shape(payload)
            if item_shape[0] == _ANY:
                return value
            for item in value.values():
                self.value(payload, item, struct, path, item_shape)
            return value
        return value


def _root(rt: ResourceType) -> tuple[str, Any] | None:
    if rt.is_custom:
        return None
    name = k8s_schemas.definition_name(rt.group, rt.version, rt.kind)
    return _named(name) if name else None


_QUANTITY_KEYS: dict[int, tuple[str, ...]] = {}   # id(struct properties) → keys whose values may hold a quantity
_WITH_QUANTITY: dict[int, bool] = {}               # id(shape payload) → whether its values may hold a quantity


def _holds_quantity(shape: tuple[str, Any], visiting: frozenset[int] = frozenset()) -> bool:
    """Whether a value of this shape may contain a quantity (recursive definitions end as False on the cycle)."""
    kind, payload = shape
    if kind == "quantity":
        return True
    if kind not in ("struct", "list", "map"):
        return False
    key = id(payload)
    known = _WITH_QUANTITY.get(key)
    if known is not None:
        return known
    if key in visiting:
        return False
    if kind == "struct":
        props = payload[2]
        keys = tuple(k for k, sub in props.items() if _holds_quantity(_shape(sub), visiting | {key}))
        _QUANTITY_KEYS[id(props)] = keys
        result = bool(keys)
    else:
        result = _holds_quantity(_shape(payload), visiting | {key})
    _WITH_QUANTITY[key] = result
    return result


def _canonicalize(value: Any, shape: tuple[str, Any]) -> Any:
    """``value`` with its quantities canonical (in place where it is a container); walks only what may hold one."""
    if value is None:
        return None
    if shape[0] == "quantity":
        return _canonical_quantity(value)
    if not _holds_quantity(shape):
        return value
    return _within(value, shape)


#: id(struct properties) → (key, its shape) of the keys whose values may hold a quantity (``_QUANTITY_KEYS`` with
#: their shapes looked up once, not at every object walked).
_QUANTITY_CHILDREN: dict[int, tuple[tuple[str, tuple[str, Any]], ...]] = {}


def _within(value: Any, shape: tuple[str, Any]) -> Any:
    """:func:`_canonicalize` of a value not None of a shape that may hold a quantity (so may what it walks into)."""
    kind, payload = shape
    if kind == "struct":
        if isinstance(value, dict):
            props = payload[2]
            children = _QUANTITY_CHILDREN.get(id(props))
            if children is None:
                children = tuple((k, _shape(props[k])) for k in _QUANTITY_KEYS[id(props)])
                _QUANTITY_CHILDREN[id(props)] = children
            for key, sub in children:
                item = value.get(key)
                if item is not None:
                    new = _canonical_quantity(item) if sub[0] == "quantity" else _within(item, sub)
                    if new is not item:
                        value[key] = new
        return value
    if kind == "list" and isinstance(value, list):
        item_shape = _shape(payload)
        quantity = item_shape[0] == "quantity"
        for i, item in enumerate(value):
            if item is not None:
                new = _canonical_quantity(item) if quantity else _within(item, item_shape)
                if new is not item:
                    value[i] = new
    elif kind == "map" and isinstance(value, dict):
        item_shape = _shape(payload)
        quantity = item_shape[0] == "quantity"
        for key, item in value.items():
            if item is not None:
                new = _canonical_quantity(item) if quantity else _within(item, item_shape)
                if new is not item:
                    value[key] = new
    return value


def canonicalize(rt: ResourceType, obj: dict, strict: bool = True) -> None:
    """Rewrite the quantities of a built-in object canonically, in place; with ``strict`` (a create or update, whose
    body kube decodes), kube's 400 for one that does not parse (decoding stops there in kube, before anything else
    is looked at); a patched object's is left to validation. Nothing for custom resources."""
    root = _root(rt)
    if root is None or root[0] != "struct":
        return
    try:
        _canonicalize(obj, root)
    except _QuantityError:
        if strict:
            raise errors.bad_request(_cannot_handle(rt, QUANTITY_FORMAT_WRONG)) from None


def type_error(rt: ResourceType, obj: dict) -> None:
    """Kube's 400 if ``obj`` would not decode into ``rt``'s Go struct (a value of the wrong JSON type): the first
    error in document order. A full walk of the object: the caller runs it only once the schema has found a problem
    (a wrong type is one for the schema too), so a valid write does not pay for it."""
    root = _root(rt)
    if root is None or root[0] != "struct":
        return
    decoder = _Decoder()
    try:
        decoder.value(None, obj, "", (), root)
    except _QuantityError:
        raise errors.bad_request(_cannot_handle(rt, QUANTITY_FORMAT_WRONG)) from None
    if decoder.first is not None:
        raise errors.bad_request(_cannot_handle(rt, decoder.first))


def _cannot_handle(rt: ResourceType, detail: str) -> str:
    return f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {detail}'
