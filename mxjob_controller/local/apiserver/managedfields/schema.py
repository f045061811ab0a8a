"""The shape server-side apply needs of a type: what is a struct, a granular or atomic map, and what kind of
list (atomic, set, or map keyed by which fields), built as kube-openapi's ``schemaconv`` builds it.

- ``x-kubernetes-list-type`` decides a list: ``atomic``, ``set``, ``map`` (keys from
  ``x-kubernetes-list-map-keys``). Without it, a ``merge`` patch strategy makes a map keyed by the patch
  merge key (a set when there is none); anything else is atomic. So a custom resource's list without a
  list type is atomic, as in kube.
- ``x-kubernetes-map-type: atomic`` makes a map or struct one leaf; every other map is granular.
- A node without a type, or under ``x-kubernetes-preserve-unknown-fields``, is *deduced* from the value:
  maps granular, lists atomic.

Types are compiled once per schema and shared read-only; recursive definitions resolve lazily.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from typing import Any

from mxjob_controller.kube import k8s_schemas
from mxjob_controller.kube.schema.compiler import OBJECT_META

SCALAR, MAP, LIST, DEDUCED = "scalar", "map", "list", "deduced"
ATOMIC, SET, ASSOCIATIVE = "atomic", "set", "map"
# Kinds kube converts by hand: a quantity or int-or-string is a scalar, a RawExtension one atomic leaf.
_SCALAR_DEFS = {"io.k8s.apimachinery.pkg.api.resource.Quantity", "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
                "io.k8s.apimachinery.pkg.apis.meta.v1.Time", "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"}
_ATOMIC_DEFS = {"io.k8s.apimachinery.pkg.runtime.RawExtension"}
# The ``+default`` markers on list-map key fields (kube's OpenAPI has them; the schemas we ship drop every
# default): a port listed without its protocol is keyed as TCP.
_KEY_DEFAULTS = {"io.k8s.api.core.v1.ContainerPort": {"protocol": "TCP"},
                 "io.k8s.api.core.v1.ServicePort": {"protocol": "TCP"}}
# Optional struct fields that are Go values, not pointers, in the kinds the local server serves: Go serializes them
# even when zero, so a zero object has them and a creator's field set gets no "." for them. (The published schema
# does not tell a value from a pointer.)
_VALUE_STRUCTS = {"io.k8s.api.apps.v1.DeploymentSpec": ("strategy",),
                  "io.k8s.api.apps.v1.DaemonSetSpec": ("updateStrategy",),
                  "io.k8s.api.apps.v1.StatefulSetSpec": ("updateStrategy",),
                  "io.k8s.api.core.v1.PersistentVolumeClaimSpec": ("resources",),
                  "io.k8s.api.core.v1.PodTemplate": ("template",),
                  "io.k8s.api.networking.v1.NetworkPolicySpec": ("podSelector",),
                  "io.k8s.api.discovery.v1.Endpoint": ("conditions",),
                  "io.k8s.api.events.v1.Event": ("deprecatedSource",)}


class Type:
    """One compiled type. ``kind`` is SCALAR, MAP, LIST or DEDUCED.

    MAP: ``fields`` (declared struct fields, resolved lazily), ``elem`` (the type of any other key: a map's
    values, or DEDUCED where unknown fields are kept, else None), ``atomic``, and ``defaults`` (declared
    fields' schema defaults, which fill missing list-map keys). LIST: ``elem``, ``list_type`` (ATOMIC, SET
    or ASSOCIATIVE) and ``keys``.
    """

    __slots__ = ("_fields", "_resolve", "atomic", "defaults", "elem", "keys", "kind", "list_type", "zero")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._fields: dict[str, Any] = {}
        self._resolve: Any = None
        self.elem: Type | None = None
        self.atomic = False
        self.defaults: dict[str, Any] = {}
        self.list_type = ATOMIC
        self.keys: tuple[str, ...] = ()
        self.zero: dict | None = None

    @property
    def fields(self) -> dict[str, Type]:
        """The declared fields' types, compiled on first use (under :data:`_COMPILING`; the resolved map is in place
        before ``_resolve`` is cleared, so whoever sees it cleared, as :meth:`child` looks, sees them resolved)."""
        if self._resolve is not None:
            with _COMPILING:
                if self._resolve is not None:
                    resolve = self._resolve
                    self._fields = {name: resolve(node) for name, node in self._fields.items()}
                    self._resolve = None
        return self._fields

    def child(self, name: str) -> Type | None:
        """The type of a map's key ``name``: its declared field, else the element type."""
        t = (self._fields if self._resolve is None else self.fields).get(name)
        return t if t is not None else self.elem

    def declares(self, name: str) -> bool:
        return name in self.fields


SCALAR_TYPE = Type(SCALAR)
DEDUCED_TYPE = Type(DEDUCED)
ATOMIC_TYPE = Type(MAP)
ATOMIC_TYPE.atomic = True
ATOMIC_TYPE.elem = DEDUCED_TYPE


# Compiling happens on first use, on whichever request threads get there first: one thread at a time compiles or
# resolves fields (re-entrant: definitions recurse), and nothing half-built is visible to the others.
_COMPILING = threading.RLock()


class Compiler:
    """Compiles JSON schema nodes (refs into ``defs``) into :class:`Type`s, memoising definitions. Safe to share
    between threads: definitions being compiled are visible only to the compiling thread (as placeholders, for
    recursive definitions) until the outermost definition is done."""

    def __init__(self, defs: Mapping[str, Any]) -> None:
        self._defs = defs
        self._by_name: dict[str, Type] = {}   # finished: read without the lock
        self._pending: dict[str, Type] = {}   # being compiled, under _COMPILING
        self._depth = 0

    def definition(self, name: str) -> Type:
        t = self._by_name.get(name)
        if t is not None:
            return t
        with _COMPILING:
            t = self._by_name.get(name) or self._pending.get(name)
            if t is not None:
                return t
            self._depth += 1
            try:
                if name in _SCALAR_DEFS:
                    t = SCALAR_TYPE
                elif name in _ATOMIC_DEFS:
                    t = ATOMIC_TYPE
                else:
                    t = self._pending[name] = Type(MAP)  # placeholder first: definitions may recurse
                    self._fill(t, self._defs.get(name) or {}, preserve=False)
                    t.defaults = {**_KEY_DEFAULTS.get(name, {}), **t.defaults}
                    if name in _VALUE_STRUCTS:
                        t.zero = {**(t.zero or {}), **dict.fromkeys(_VALUE_STRUCTS[name])}
                self._pending[name] = t
            except BaseException:
                if self._depth == 1:   # nothing half-built is kept
                    self._pending.clear()
                raise
            finally:
                self._depth -= 1
            if self._depth == 0:   # the outermost definition is done: all it needed is complete
                self._by_name.update(self._pending)
                self._pending.clear()
            return t

    def compile(self, node: Mapping[str, Any] | None, preserve: bool = False) -> Type:
        if not node:
            return DEDUCED_TYPE
        ref = _ref_of(node)
        if ref is not None:
            t = self.definition(ref)
            map_type = node.get("x-kubernetes-map-type")
            if map_type == "atomic" and t.kind == MAP and not t.atomic:
                atomic = Type(MAP)
                atomic.atomic, atomic.elem = True, t.elem
                return atomic
            return t
        t = Type(MAP)
        self._fill(t, node, preserve)
        return t

    def _fill(self, t: Type, node: Mapping[str, Any], preserve: bool) -> None:
        preserve = preserve or bool(node.get("x-kubernetes-preserve-unknown-fields"))
        types = node.get("type")
        if isinstance(types, list):
            types = next((x for x in types if x != "null"), None)
        props = node.get("properties") or {}
        if node.get("x-kubernetes-int-or-string") or (not types and not props and ("oneOf" in node or "anyOf" in node)):
            t.kind = SCALAR
            return
        if types == "array":
            t.kind = LIST
            t.elem = self.compile(node.get("items"), preserve)
            t.list_type, t.keys = _list_type(node)
            return
        if types in ("string", "integer", "number", "boolean"):
            t.kind = SCALAR
            return
        if not types and not props and "additionalProperties" not in node:
            t.kind = DEDUCED if node.get("x-kubernetes-map-type") != "atomic" else MAP
            t.atomic = t.kind == MAP
            t.elem = DEDUCED_TYPE
            return
        t.kind = MAP
        t.atomic = node.get("x-kubernetes-map-type") == "atomic"
        t._fields = dict(props)
        t._resolve = functools.partial(self.compile, preserve=preserve)
        t.defaults = {name: p["default"] for name, p in props.items() if isinstance(p, dict) and "default" in p}
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            t.elem = self.compile(extra, preserve)
        elif extra is True or preserve or not props:
            t.elem = DEDUCED_TYPE
        t.zero = _zero_hint(node)


def _ref_of(node: Mapping[str, Any]) -> str | None:
    ref = node.get("$ref")
    if ref is None:
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            ref = all_of[0].get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    return None


def _list_type(node: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    list_type = node.get("x-kubernetes-list-type")
    if list_type == "set":
        return SET, ()
    if list_type == "map":
        return ASSOCIATIVE, tuple(node.get("x-kubernetes-list-map-keys") or ())
    if list_type is not None:
        return ATOMIC, ()
    strategy = str(node.get("x-kubernetes-patch-strategy") or "").split(",")
    if "merge" in strategy:
        merge_key = node.get("x-kubernetes-patch-merge-key")
        return (ASSOCIATIVE, (merge_key,)) if merge_key else (SET, ())
    return ATOMIC, ()


def _zero_hint(node: Mapping[str, Any]) -> dict:
    """Which fields a Go zero value of this struct serializes: the required ones (no ``omitempty``)."""
    return {name: None for name in node.get("required") or ()}


# --- the types of what the server serves --------------------------------------------------------------------

@functools.cache
def _builtin_compiler() -> Compiler:
    return Compiler(k8s_schemas.definitions())


def builtin_type(group: str, version: str, kind: str) -> Type | None:
    """The type of a built-in kind, or None when kube publishes no schema for it."""
    name = k8s_schemas.gvk_index().get((group, version, kind))
    return _builtin_compiler().definition(name) if name else None


def custom_type(schema: Mapping[str, Any] | None) -> Type:
    """The type of a custom resource from its version's openAPIV3Schema; ``metadata`` is ObjectMeta, as in kube."""
    compiler = Compiler(k8s_schemas.definitions())
    if not schema:
        return DEDUCED_TYPE
    root = compiler.compile(schema)
    if root.kind != MAP:
        return DEDUCED_TYPE
    fields = dict(root.fields)
    fields["metadata"] = _builtin_compiler().definition(OBJECT_META)
    fields.setdefault("apiVersion", SCALAR_TYPE)
    fields.setdefault("kind", SCALAR_TYPE)
    typed = Type(MAP)
    typed._fields, typed.elem, typed.defaults = fields, root.elem, root.defaults
    return typed


def zero_object(t: Type | None, top: bool = True) -> dict:
    """What a Go zero value of a built-in kind looks like as JSON: the object a create is compared against.

    Structs named ``metadata``, ``spec``, ``status`` and required struct fields are present (``{}``, recursively),
    required lists and maps are ``null``; that decides where a creator's field set gets a ``"."``.
    """
    if t is None or t.kind != MAP or t.atomic:
        return {}
    out: dict = {}
    required = t.zero or {}
    for name, ft in t.fields.items():
        struct = ft.kind == MAP and not ft.atomic and ft.fields
        if struct and (name in ("metadata", "spec", "status") or name in required):
            out[name] = zero_object(ft, False)
        elif name in required and ft.kind in (LIST, MAP):
            out[name] = None
    return out
