"""The ``scale`` subresource: an ``autoscaling/v1`` Scale read from and written to the parent object, as kube serves
it for Deployments, ReplicaSets, StatefulSets, ReplicationControllers (``pkg/registry/apps/deployment/storage``'s
``ScaleREST``...) and custom resources whose CRD declares ``subresources.scale`` (apiextensions-apiserver's
``ScaleREST``), so ``kubectl scale``, HPA and KEDA work.

- GET answers ``{spec: {replicas}, status: {replicas, selector}}`` with the parent's name, namespace, uid,
  resourceVersion and creationTimestamp; the selector in its string form (``app=web``), a CRD's as stored at its
  ``labelSelectorPath``.
- PUT and PATCH (JSON, merge, strategic merge or apply, all applied to the Scale) set the parent's replicas and write
  the parent through the ordinary update path (its strategy, validation, admission and managed fields, recorded
  with ``subresource: scale``); a Scale ``resourceVersion`` that is not the parent's is a 409, a negative replica
  count kube's 422 on ``Scale.autoscaling``. The answer is the Scale of the written parent.
"""

from __future__ import annotations

import json
from typing import Any

from mxjob_controller.kube.field_errors import invalid
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.encoding.printers import format_label_selector, format_labels
from mxjob_controller.local.apiserver.errors import Resource
from mxjob_controller.local.apiserver.patch.patchers import json_patch, merge_patch
from mxjob_controller.local.apiserver.request import APPLY_PATCH, JSON_PATCH, MAX_BODY_BYTES, Request, Response, dumps
from mxjob_controller.local.apiserver.resources import ResourceType, ScalePaths
from mxjob_controller.local.apiserver.storage.store import Conflict
from mxjob_controller.local.apiserver.validation import strict_json
from mxjob_controller.local.apiserver.verbs.base import parse_rv
from mxjob_controller.local.apiserver.verbs.write import WRITE_ATTEMPTS, WriteVerbs

SCALE_API_VERSION = "autoscaling/v1"
SCALE = Resource("autoscaling", "scale", "Scale")
_MISSING = object()
_JSON_KIND = {str: "string", bool: "bool", float: "number", list: "array", dict: "object", type(None): "null"}


# --- the pure part: a Scale from an object, replicas into an object ---------------------------------------

def _at(obj: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            return _MISSING
        obj = obj[key]
    return obj


def _replicas(obj: dict, path: str) -> int:
    value = _at(obj, path)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def selector_string(obj: dict, paths: ScalePaths) -> str:
    if paths.selector is None:
        return ""
    value = _at(obj, paths.selector)
    if value is _MISSING or value is None:
        return ""
    if paths.selector_form == "string":
        return value if isinstance(value, str) else ""
    if paths.selector_form == "map":
        text = format_labels(value)
        return "" if text == "<none>" else text
    return format_label_selector(value)


def scale_of(obj: dict, paths: ScalePaths) -> dict[str, Any]:
    """The ``autoscaling/v1`` Scale kube serves for ``obj``."""
    meta = obj.get("metadata") or {}
    scale_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                  if meta.get(k)}
    status: dict[str, Any] = {"replicas": _replicas(obj, paths.status_replicas)}
    selector = selector_string(obj, paths)
    if selector:
        status["selector"] = selector
    return {"kind": "Scale", "apiVersion": SCALE_API_VERSION, "metadata": scale_meta,
            "spec": {"replicas": _replicas(obj, paths.spec_replicas)}, "status": status}


def with_replicas(obj: dict, path: str, replicas: int) -> dict:
    """A copy of ``obj`` with ``replicas`` at ``path`` (the objects on the way created as needed)."""
    out = deep_copy(obj)
    node = out
    *parents, last = path.split(".")
    for key in parents:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[last] = replicas
    return out


def validate_scale(scale: Any, name: str) -> int:
    """``ValidateScale``: the new replica count, or kube's 400/422."""
    if not isinstance(scale, dict):
        raise errors.bad_request("the object provided is unrecognized (must be of type Scale)")
    if scale.get("kind") not in (None, "Scale"):
        raise errors.bad_request(f'Scale in version "v1" cannot be handled as a Scale: no kind "{scale.get("kind")}" '
                                 f'is registered for version "{scale.get("apiVersion")}"')
    replicas = (scale.get("spec") or {}).get("replicas", 0) if isinstance(scale.get("spec"), dict) else 0
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise errors.bad_request('Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
                                 f"{_JSON_KIND.get(type(replicas), 'value')} into Go struct field "
                                 "ScaleSpec.spec.replicas of type int32")
    if replicas < 0:
        raise errors.invalid(SCALE, name, [invalid("spec.replicas", replicas, "must be greater than or equal to 0")])
    return replicas


# --- the verbs --------------------------------------------------------------------------------------------

class ScaleVerbs(WriteVerbs):
    """GET, PUT and PATCH of ``<resource>/<name>/scale``; everything else goes on to the ordinary verbs."""

    def _get(self, req: Request) -> Response:
        paths = _scale_paths(req.rt, req.subresource)
        if paths is None:
            return super()._get(req)   # type: ignore[misc]  # ReadVerbs' (after this class in REST's order)
        entry = self._served(req.rt, [self._get_entry(req)])[0]
        return Response(200, dumps(scale_of(entry.obj, paths)))

    def _update(self, req: Request) -> Response:
        paths = _scale_paths(req.rt, req.subresource)
        return super()._update(req) if paths is None else self._write_scale(req, paths)

    def _patch(self, req: Request) -> Response:
        paths = _scale_paths(req.rt, req.subresource)
        return super()._patch(req) if paths is None else self._write_scale(req, paths)

    def _write_scale(self, req: Request, paths: ScalePaths) -> Response:
        if len(req.body) > MAX_BODY_BYTES:
            raise errors.too_large(MAX_BODY_BYTES)
        try:
            body = strict_json.loads(req.body or b"null")
        except ValueError as e:
            raise errors.bad_request(f"the body of the request could not be decoded: {e}") from e
        options = "UpdateOptions" if req.verb == "update" else "PatchOptions"
        ctype = req.content_type.split(";")[0].strip().lower()
        manager = self.field_manager.manager(req.query, req.user_agent, options, apply=ctype == APPLY_PATCH)
        name = req.name or ""
        for _attempt in range(WRITE_ATTEMPTS):
            current = self._get_entry(req)
            old = self._served(req.rt, [current])[0].obj
            scale = scale_of(old, paths)
            if req.verb == "update":
                wanted = body
            elif ctype == JSON_PATCH:
                wanted = json_patch(req.rt, deep_copy(scale), body)
            else:   # merge, strategic merge (a Scale has no merge keys) and apply alike
                wanted = merge_patch(req.rt, deep_copy(scale), body)
            replicas = validate_scale(wanted, name)
            rv_text = ((wanted.get("metadata") or {}).get("resourceVersion") if isinstance(wanted, dict) else None)
            if rv_text and parse_rv(rv_text) != current.rv:
                raise errors.conflict(req.rt.resource, name, errors.STALE_OBJECT)
            new = with_replicas(old, paths.spec_replicas, replicas)
            new["metadata"].pop("managedFields", None)
            try:
                resp = self._write_update(req, new, current, old=old, manager=manager)
            except Conflict:
                continue
            written = json.loads(resp.body)
            out = Response(resp.code, dumps(scale_of(written, paths)))
            out.headers.update(resp.headers)
            return out
        raise errors.write_outlasted()


def _scale_paths(rt: ResourceType, subresource: str | None) -> ScalePaths | None:
    return rt.scale if subresource == "scale" else None
