"""Kubernetes' own schemas turned into structural CRD schemas (what ``openAPIV3Schema`` accepts).

kubernetes-validate ships Kubernetes' definitions as JSON Schema; a CRD needs something narrower
(apiextensions-apiserver's structural-schema rules). The conversion, per node:

- ``$ref`` is inlined (a CRD schema is one self-contained tree);
- descriptions are dropped, and so is every keyword a CRD does not accept (``x-kubernetes-patch-*``,
  ``x-kubernetes-unions``, ...): only the keywords in ``_KEPT`` survive;
- ``type: [T, "null"]`` becomes ``type: T`` (a null field without a default is pruned by the API server);
- IntOrString becomes ``x-kubernetes-int-or-string: true``; Quantity too, plus controller-gen's pattern;
- ``x-kubernetes-list-type: map`` is kept only when every list-map key is a required scalar property (the
  rule apiextensions enforces; ``ports`` keyed by ``protocol``, which Kubernetes defaults in Go code, is
  therefore left as an untyped, i.e. atomic, list); ``set`` only over scalar items;
- an embedded ObjectMeta keeps only the fields a pod template may carry (as controller-gen does).

:func:`structural_problems` re-checks a finished schema against those rules, so a new Kubernetes
version that brings a construct the conversion does not know fails loudly in the tests.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube import k8s_schemas
from mxjob_controller.kube.quantity import QUANTITY_PATTERN
from mxjob_controller.kube.schema.compiler import INT_OR_STRING, OBJECT_META, QUANTITY

#: What a pod template's metadata may hold; the rest of ObjectMeta is set by the API server.
TEMPLATE_META_FIELDS = ("annotations", "finalizers", "labels", "name", "namespace")

_KEPT = frozenset({
    "type", "format", "properties", "additionalProperties", "items", "required", "enum",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern",
    "minItems", "maxItems", "multipleOf", "minProperties", "maxProperties",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
    "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields",
})
_SCALARS = frozenset({"string", "integer", "number", "boolean"})


class SchemaConversionError(ValueError):
    """A Kubernetes definition uses a construct a CRD schema cannot express."""


def structural(definition: str) -> dict[str, Any]:
    """The structural CRD schema of a Kubernetes definition (e.g. ``io.k8s.api.core.v1.PodTemplateSpec``)."""
    defs = k8s_schemas.definitions()
    if definition not in defs:
        raise SchemaConversionError(f"no Kubernetes definition named {definition}")
    return _convert_ref(definition, defs, ())


def _convert_ref(name: str, defs: k8s_schemas.Definitions, stack: tuple[str, ...]) -> dict[str, Any]:
    if name in stack:
        raise SchemaConversionError(f"recursive definition {' -> '.join((*stack, name))}")
    if name == INT_OR_STRING:
        return {"x-kubernetes-int-or-string": True}
    if name == QUANTITY:
        return {"pattern": QUANTITY_PATTERN, "x-kubernetes-int-or-string": True}
    node = _convert(defs[name], defs, (*stack, name))
    if name == OBJECT_META:
        props = node.get("properties") or {}
        node["properties"] = {k: props[k] for k in TEMPLATE_META_FIELDS if k in props}
    return node


def _convert(node: dict[str, Any], defs: k8s_schemas.Definitions, stack: tuple[str, ...]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str):
        return _convert_ref(k8s_schemas.ref_name(ref), defs, stack)
    if "oneOf" in node or "anyOf" in node or "allOf" in node:
        raise SchemaConversionError(f"cannot express a union in a CRD schema: {sorted(node)} under {stack[-1:]}")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _KEPT:
            continue
        if key == "type":
            out[key] = _single_type(value, stack)
        elif key == "properties":
            out[key] = {p: _convert(v, defs, stack) for p, v in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _convert(value, defs, stack)
        elif key == "additionalProperties" and value is True:
            out["x-kubernetes-preserve-unknown-fields"] = True
        elif key == "additionalProperties":
            continue  # ``false`` is the structural default (unknown fields are pruned)
        else:
            out[key] = value
    _drop_invalid_list_markers(out)
    return out


def _single_type(value: Any, stack: tuple[str, ...]) -> str:
    types = [value] if isinstance(value, str) else [t for t in value if t != "null"]
    if len(types) != 1:
        raise SchemaConversionError(f"cannot express type {value!r} in a CRD schema under {stack[-1:]}")
    return types[0]


def _drop_invalid_list_markers(node: dict[str, Any]) -> None:
    list_type = node.get("x-kubernetes-list-type")
    items = node.get("items") or {}
    if list_type == "map":
        required = set(items.get("required") or ())
        props = items.get("properties") or {}
        keys = node.get("x-kubernetes-list-map-keys") or []
        if items.get("type") != "object" or not keys or not all(
                k in required and (props.get(k) or {}).get("type") in _SCALARS for k in keys):
            node.pop("x-kubernetes-list-type", None)
            node.pop("x-kubernetes-list-map-keys", None)
    elif list_type == "set" and items.get("type") not in _SCALARS:
        node.pop("x-kubernetes-list-type", None)


def structural_problems(schema: Any, path: str = "openAPIV3Schema") -> list[str]:
    """Where ``schema`` breaks the CRD rules this module relies on; empty when it is fine.

    Checked: no ``$ref`` or unions, no unknown keywords, one type per node (or int-or-string), a type on
    every node, ``items`` on arrays, no ``properties`` with ``additionalProperties``, valid list markers.
    """
    if not isinstance(schema, dict):
        return [f"{path}: not an object"]
    problems = [f"{path}: keyword {k} is not allowed" for k in schema
                if k not in _KEPT and k not in ("description", "default", "nullable", "x-kubernetes-validations")]
    if not schema.get("type") and not schema.get("x-kubernetes-int-or-string") \
            and not schema.get("x-kubernetes-preserve-unknown-fields"):
        problems.append(f"{path}: type must not be empty")
    if "type" in schema and not isinstance(schema["type"], str):
        problems.append(f"{path}: type must be one string")
    if schema.get("type") == "array" and not isinstance(schema.get("items"), dict):
        problems.append(f"{path}: an array needs items")
    if "properties" in schema and "additionalProperties" in schema:
        problems.append(f"{path}: properties and additionalProperties are mutually exclusive")
    list_type = schema.get("x-kubernetes-list-type")
    items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    if list_type == "map":
        required = set(items.get("required") or ())
        for key in schema.get("x-kubernetes-list-map-keys") or ["<none>"]:
            if key not in required:
                problems.append(f"{path}: list-map key {key} must be a required property")
    if list_type == "set" and items.get("type") not in _SCALARS:
        problems.append(f"{path}: a set needs scalar items")
    for name, sub in (schema.get("properties") or {}).items():
        problems += structural_problems(sub, fe.key_child(fe.child(path, "properties"), name))
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            problems += structural_problems(schema[key], fe.child(path, key))
    return problems
