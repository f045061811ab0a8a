"""OpenAPI v3 documents: ``/openapi/v3`` (an index) and one document per group-version.

kubectl needs them: ``create``/``apply`` look for the ``fieldValidation`` parameter on a kind's PATCH
operation to decide whether the server validates fields, ``apply`` reads the patch strategies and merge
keys of built-in kinds, and ``explain`` reads the schemas. Built-in schemas come from Kubernetes' own
definitions (``kube.k8s_schemas``); a custom resource's from its CRD. ``/openapi/v2`` (``openapi_v2``) is one
Swagger 2.0 document converted from these, served as JSON and gnostic protobuf: kubectl falls back to it when v3
has no path for a manifest's kind, and ``explain --output=plaintext-openapiv2`` reads it.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

from mxjob_controller.kube import k8s_schemas
from mxjob_controller.local.apiserver.resources import Registry, ResourceType

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_COMMON = [_META + n for n in ("ObjectMeta", "ListMeta", "Status", "DeleteOptions", "Patch", "WatchEvent")]
REF_PREFIX = "#/components/schemas/"


def _to_v3(node: Any) -> Any:
    """A kubernetes-validate (JSON Schema) node → an OpenAPI v3 schema node, as kube-openapi emits it."""
    if isinstance(node, list):
        return [_to_v3(v) for v in node]
    if not isinstance(node, dict):
        return node
    if isinstance(node.get("$ref"), str):  # (a property may itself be named "$ref")
        ref = {"$ref": REF_PREFIX + k8s_schemas.ref_name(node["$ref"])}
        extra = {k: _to_v3(v) for k, v in node.items() if k != "$ref"}
        return {"allOf": [ref], **extra} if extra else ref
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k == "type" and isinstance(v, list):
            types = [t for t in v if t != "null"]
            if len(types) == 1:
                out[k] = types[0]
            continue
        if k == "additionalProperties" and v is False:
            continue
        out[k] = _to_v3(v)
    return out


_INT_OR_STRING = {"type": "string", "format": "int-or-string",
                  "description": "IntOrString is a type that can hold an int32 or a string."}
_QUANTITY = {"type": "string", "description": "Quantity is a fixed-point representation of a number."}


def _builtin_schema(name: str) -> dict[str, Any]:
    if name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
        return dict(_INT_OR_STRING)
    if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
        return dict(_QUANTITY)
    return _to_v3(k8s_schemas.definitions()[name])


_SCALE = "io.k8s.api.autoscaling.v1.Scale"


def _crd_group_prefix(group: str) -> str:
    """kube names CRD schemas by the reversed group: ``kubeflow.org`` → ``org.kubeflow``."""
    return ".".join(reversed(group.split(".")))


def _param(name: str, where: str, description: str, schema: dict | None = None,
           required: bool = False) -> dict[str, Any]:
    p: dict[str, Any] = {"name": name, "in": where, "description": description,
                         "schema": schema or {"type": "string", "uniqueItems": True}}
    if required:
        p["required"] = True
    return p


_WRITE_PARAMS = [
    _param("dryRun", "query", "When present, indicates that modifications should not be persisted."),
    _param("fieldManager", "query", "fieldManager is a name associated with the actor or entity that is "
           "making these changes."),
    _param("fieldValidation", "query", "fieldValidation instructs the server on how to handle objects in the "
           "request containing unknown or duplicate fields. Valid values are: Ignore, Warn (default), Strict."),
]
_PRETTY = _param("pretty", "query", "If 'true', then the output is pretty printed.")


def _op(action: str, rt: ResourceType, op_id: str, schema_ref: str, *, params: list | None = None,
        body: list[str] | None = None, codes: tuple[str, ...] = ("200",)) -> dict[str, Any]:
    gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    ok = {"description": "OK", "content": {"application/json": {"schema": {"$ref": schema_ref}}}}
    op: dict[str, Any] = {
        "tags": [rt.group.replace(".", "_") + "_" + rt.version if rt.group else "core_" + rt.version],
        "operationId": op_id,
        "parameters": params or [],
        "responses": {c: ok for c in codes} | {"401": {"description": "Unauthorized"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk,
    }
    if body:
        op["requestBody"] = {"content": {ct: {"schema": {"$ref": REF_PREFIX + (
            _META + "Patch" if "patch" in ct else schema_ref.removeprefix(REF_PREFIX))}} for ct in body},
            "required": True}
    return op


def _gv_id(rt: ResourceType) -> str:
    """The group-version part of kube's operation ids: ``CoreV1``, ``AppsV1``, ``KubeflowOrgV1``."""
    group = "Core" if not rt.group else "".join(p.capitalize() for p in rt.group.replace("-", ".").split("."))
    return group + rt.version.capitalize()


class OpenAPI:
    def __init__(self, registry: Registry, version_info: dict[str, str]) -> None:
        self._registry = registry
        self._info = {"title": "Kubernetes", "version": version_info.get("gitVersion", "")}
        self._lock = threading.Lock()
        self._docs: dict[str, tuple[bytes, str]] = {}
        self._gen = -1

    def _refresh(self) -> None:
        """Recompute each group-version's fingerprint when the registry changed; drop stale documents."""
        if self._gen == self._registry.generation:
            return
        docs: dict[str, tuple[bytes, str]] = {}
        for group, versions in self._registry.group_versions().items():
            for v in versions:
                path = f"apis/{group}/{v}" if group else f"api/{v}"
                digest = self._fingerprint(group, v)
                old = self._docs.get(path)
                docs[path] = old if old is not None and old[1] == digest else (b"", digest)
        self._docs = docs
        self._gen = self._registry.generation

    def _fingerprint(self, group: str, version: str) -> str:
        """A hash that changes whenever the document would: what kubectl keys its cache on."""
        h = hashlib.sha512(json.dumps(self._info).encode())
        for rt in self._registry.in_group_version(group, version):
            h.update(json.dumps([rt.plural, rt.kind, rt.namespaced, rt.subresources, rt.schema],
                                sort_keys=True, default=str).encode())
        return h.hexdigest().upper()

    def index(self) -> dict[str, Any]:
        with self._lock:
            self._refresh()
            return {"paths": {path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
                              for path, (_, digest) in sorted(self._docs.items())}}

    def document(self, path: str) -> tuple[bytes, str] | None:
        """The serialised document for ``api/v1`` or ``apis/<group>/<version>`` and its hash."""
        with self._lock:
            self._refresh()
            if path not in self._docs:
                return None
            body, digest = self._docs[path]
            if not body:
                parts = path.split("/")
                group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
                body = json.dumps(self._build(group, version), separators=(",", ":")).encode()
                self._docs[path] = (body, digest)
            return body, digest

    # --- building -------------------------------------------------------------------------------------

    def _build(self, group: str, version: str) -> dict[str, Any]:
        types = self._registry.in_group_version(group, version)
        schemas: dict[str, Any] = {}
        builtin_roots = list(_COMMON)
        paths: dict[str, Any] = {}
        for rt in types:
            if rt.is_custom:
                name, list_name = self._custom_schemas(rt, schemas)
            else:
                name = k8s_schemas.definition_name(group, version, rt.kind) or ""
                list_name = k8s_schemas.definition_name(group, version, rt.list_kind) or ""
                builtin_roots += [n for n in (name, list_name) if n]
            if name:
                paths.update(self._paths(rt, name, list_name))
            if rt.scale is not None and _SCALE not in builtin_roots:
                builtin_roots.append(_SCALE)
        defs = k8s_schemas.definitions()
        for n in k8s_schemas.reachable(builtin_roots, defs):
            schemas[n] = _builtin_schema(n)
        return {"openapi": "3.0.0", "info": self._info, "paths": paths, "components": {"schemas": schemas}}

    def _custom_schemas(self, rt: ResourceType, schemas: dict[str, Any]) -> tuple[str, str]:
        prefix = f"{_crd_group_prefix(rt.group)}.{rt.version}."
        name, list_name = prefix + rt.kind, prefix + rt.list_kind
        schema = json.loads(json.dumps(rt.schema or {"type": "object",
                                                     "x-kubernetes-preserve-unknown-fields": True}))
        props = schema.setdefault("properties", {})
        props["apiVersion"] = {"type": "string", "description": "APIVersion defines the versioned schema of "
                               "this representation of an object."}
        props["kind"] = {"type": "string", "description": "Kind is a string value representing the REST "
                         "resource this object represents."}
        props["metadata"] = {"allOf": [{"$ref": REF_PREFIX + _META + "ObjectMeta"}],
                             "description": "Standard object's metadata."}
        schema["x-kubernetes-group-version-kind"] = [{"group": rt.group, "kind": rt.kind,
                                                      "version": rt.version}]
        schemas[name] = schema
        schemas[list_name] = {
            "type": "object", "required": ["items"],
            "description": f"{rt.kind}List is a list of {rt.kind}",
            "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "items": {"type": "array", "items": {"$ref": REF_PREFIX + name}},
                "metadata": {"allOf": [{"$ref": REF_PREFIX + _META + "ListMeta"}]},
            },
            "x-kubernetes-group-version-kind": [{"group": rt.group, "kind": rt.list_kind,
                                                 "version": rt.version}],
        }
        return name, list_name

    def _paths(self, rt: ResourceType, name: str, list_name: str) -> dict[str, Any]:
        base = f"/apis/{rt.group}/{rt.version}" if rt.group else f"/api/{rt.version}"
        coll = f"{base}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{base}/{rt.plural}"
        ref, list_ref = REF_PREFIX + name, REF_PREFIX + (list_name or name)
        kind_id = _gv_id(rt) + rt.kind
        ns = "Namespaced" if rt.namespaced else ""
        op_id = _gv_id(rt) + ns + rt.kind   # kube's: verb, group-version, scope, kind (listAppsV1NamespacedDeployment)
        name_param = _param("name", "path", f"name of the {rt.kind}", {"type": "string", "uniqueItems": True},
                            required=True)
        path_params = [name_param]
        coll_params: list[dict[str, Any]] = [_PRETTY]
        if rt.namespaced:
            ns_param = _param("namespace", "path", "object name and auth scope, such as for teams and projects",
                              {"type": "string", "uniqueItems": True}, required=True)
            path_params.append(ns_param)
            coll_params.append(ns_param)
        patch_types = ["application/json-patch+json", "application/merge-patch+json",
                       "application/apply-patch+yaml"]
        if not rt.is_custom:
            patch_types.insert(2, "application/strategic-merge-patch+json")
        item = {
            "get": _op("get", rt, f"read{op_id}", ref),
            "put": _op("put", rt, f"replace{op_id}", ref, params=list(_WRITE_PARAMS),
                       body=["application/json"], codes=("200", "201")),
            "patch": _op("patch", rt, f"patch{op_id}", ref,
                         params=[*_WRITE_PARAMS, _param("force", "query", "Force is going to \"force\" Apply "
                                                        "requests.", {"type": "boolean", "uniqueItems": True})],
                         body=patch_types, codes=("200", "201")),
            "delete": _op("delete", rt, f"delete{op_id}", REF_PREFIX + _META + "Status",
                          params=[_param("dryRun", "query", "When present, indicates that modifications "
                                         "should not be persisted."),
                                  _param("gracePeriodSeconds", "query", "The duration in seconds before the "
                                         "object should be deleted.", {"type": "integer", "uniqueItems": True}),
                                  _param("propagationPolicy", "query", "Whether and how garbage collection "
                                         "will be performed.")],
                          codes=("200", "202")),
            "parameters": [*path_params, _PRETTY],
        }
        listing = {
            "get": _op("list", rt, f"list{op_id}", list_ref, params=[
                _param(p, "query", p) for p in ("allowWatchBookmarks", "continue", "fieldSelector",
                                                "labelSelector", "limit", "resourceVersion", "timeoutSeconds",
                                                "watch")]),
            "post": _op("post", rt, f"create{op_id}", ref, params=list(_WRITE_PARAMS),
                        body=["application/json"], codes=("200", "201", "202")),
            "delete": _op("deletecollection", rt, f"deletecollection{op_id}",
                          REF_PREFIX + _META + "Status"),
            "parameters": coll_params,
        }
        if "deletecollection" not in rt.verbs:   # namespaces: kube's storage has no collection DELETE
            del listing["delete"]
        out = {coll: listing, f"{coll}/{{name}}": item}
        if rt.status_subresource:
            out[f"{coll}/{{name}}/status"] = {
                "get": _op("get", rt, f"read{op_id}Status", ref),
                "put": _op("put", rt, f"replace{op_id}Status", ref, params=list(_WRITE_PARAMS),
                           body=["application/json"], codes=("200", "201")),
                "patch": _op("patch", rt, f"patch{op_id}Status", ref, params=list(_WRITE_PARAMS),
                             body=patch_types, codes=("200", "201")),
                "parameters": [*path_params, _PRETTY],
            }
        if rt.scale is not None:   # an autoscaling/v1 Scale (verbs/scale.py)
            scale = REF_PREFIX + _SCALE
            out[f"{coll}/{{name}}/scale"] = {
                "get": _op("get", rt, f"read{op_id}Scale", scale),
                "put": _op("put", rt, f"replace{op_id}Scale", scale, params=list(_WRITE_PARAMS),
                           body=["application/json"], codes=("200", "201")),
                "patch": _op("patch", rt, f"patch{op_id}Scale", scale, params=list(_WRITE_PARAMS),
                             body=patch_types, codes=("200", "201")),
                "parameters": [*path_params, _PRETTY],
            }
        if rt.namespaced:
            out[f"{base}/{rt.plural}"] = {"get": _op("list", rt, f"list{kind_id}ForAllNamespaces", list_ref)}
        return out
