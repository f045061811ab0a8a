"""URL → handler: non-resource paths (version, health, discovery, OpenAPI) and resource requests.

Resource URLs are parsed the way kube-apiserver's RequestInfoFactory parses them, including the special
case that ``/api/v1/namespaces/<name>[/status|/finalize]`` is the namespace object itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.encoding import kubeproto, openapi_v3
from mxjob_controller.local.apiserver.encoding.discovery import Discovery
from mxjob_controller.local.apiserver.encoding.openapi import OpenAPI
from mxjob_controller.local.apiserver.encoding.openapi_v2 import service as openapi_v2
from mxjob_controller.local.apiserver.http import observability
from mxjob_controller.local.apiserver.request import Exchange, Request, RequestInfo, Response, dumps, page_not_found
from mxjob_controller.local.apiserver.resources import Registry
from mxjob_controller.local.apiserver.rest import REST

_NAMESPACE_SUBRESOURCES = ("status", "finalize")
_HEALTH = ("/healthz", "/livez", "/readyz")

Interceptor = Callable[[Exchange], None]
"""Runs before a request is served and before its body is read (authentication and authorization, then fault
injection); may raise StatusError or delay."""
StreamWrapper = Callable[[Exchange, Response], Response]


class Router:
    def __init__(self, registry: Registry, rest: REST, discovery: Discovery, openapi: OpenAPI,
                 version: dict[str, str]) -> None:
        self._registry = registry
        self._rest = rest
        self._discovery = discovery
        self._openapi = openapi
        self._version = version
        self.interceptors: list[Interceptor] = []
        self.response_wrappers: list[StreamWrapper] = []
        # Further non-resource paths (``/metrics``): path → handler, asked before the built-in ones.
        self.non_resource_handlers: dict[str, Callable[[Exchange], Response]] = {}

    def __call__(self, ex: Exchange) -> Response:
        info = ex.info
        path = info.path.rstrip("/") or "/"
        parts = [unquote(p) for p in path.strip("/").split("/")] if path != "/" else []
        if parts and parts[0] in ("api", "apis") and self._fill_resource_info(info, parts, ex.query):
            for intercept in self.interceptors:
                intercept(ex)
            resp = self._resource(ex)
            for wrap in self.response_wrappers:
                resp = wrap(ex, resp)
            return resp
        info.verb = info.method.lower()
        for intercept in self.interceptors:
            intercept(ex)
        if info.method not in ("GET", "HEAD"):
            raise errors.method_not_allowed(f"the server does not allow this method on {info.path}")
        return self._non_resource(path, parts, ex)

    # --- non-resource paths ---------------------------------------------------------------------------

    def _non_resource(self, path: str, parts: list[str], ex: Exchange) -> Response:
        if path == "/version":   # kube's WriteRawJSON: indented, as json.MarshalIndent writes it
            return Response(200, json.dumps(self._version, indent=2).encode(), encoder_newline=False)
        if path in self.non_resource_handlers:
            return self.non_resource_handlers[path](ex)
        if path in _HEALTH or path.startswith(tuple(p + "/" for p in _HEALTH)):
            resp = observability.health(path, ex.query)
            if resp is not None:
                return resp
        if path == "/api":
            return _json(self._discovery.api_versions())
        if path == "/apis":
            return _json(self._discovery.group_list())
        if parts[:1] == ["api"] and len(parts) == 2:
            return _json_or_404(self._discovery.resource_list("", parts[1]))
        if parts[:1] == ["apis"] and len(parts) == 2:
            return _json_or_404(self._discovery.group(parts[1]))
        if parts[:1] == ["apis"] and len(parts) == 3:
            return _json_or_404(self._discovery.resource_list(parts[1], parts[2]))
        if path == "/openapi/v2":
            return openapi_v2(self._openapi, self._version.get("gitVersion", "")).serve(ex.headers)
        if path == "/openapi/v3":
            return Response(200, dumps(self._openapi.index()), encoder_newline=False)
        if parts[:2] == ["openapi", "v3"]:
            return openapi_v3.serve(self._openapi, "/".join(parts[2:]), ex.query, ex.headers)
        return page_not_found()

    # --- resources ------------------------------------------------------------------------------------

    def _fill_resource_info(self, info: RequestInfo, parts: list[str], query: dict[str, str]) -> bool:
        """Parse a resource URL into ``info``; False when it is a discovery path instead."""
        if parts[0] == "api":
            if len(parts) < 3:
                return False
            info.group, info.version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) < 4:
                return False
            info.group, info.version, rest = parts[1], parts[2], parts[3:]
        watch_prefix = False
        if rest[0] == "watch":
            watch_prefix, rest = True, rest[1:]
        if len(rest) >= 2 and rest[0] == "namespaces":
            if len(rest) == 2 or (len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES):
                info.resource, info.name = "namespaces", rest[1]
                info.subresource = rest[2] if len(rest) == 3 else ""
            else:
                info.namespace, rest = rest[1], rest[2:]
                self._fill_tail(info, rest)
        else:
            self._fill_tail(info, rest)
        info.resource_request = True
        method = info.method
        if method in ("GET", "HEAD"):
            if info.name and not watch_prefix:
                info.verb = "get"
            else:
                watch = watch_prefix or query.get("watch", "").lower() in ("1", "true")
                info.verb = "watch" if watch else "list"
        else:
            info.verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, "")
            if method == "DELETE":
                info.verb = "delete" if info.name else "deletecollection"
        return True

    @staticmethod
    def _fill_tail(info: RequestInfo, rest: list[str]) -> None:
        info.resource = rest[0] if rest else ""
        info.name = rest[1] if len(rest) > 1 else ""
        info.subresource = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3:
            info.subresource = "/".join(rest[2:])  # unknown: rejected as 404 below

    def _resource(self, ex: Exchange) -> Response:
        info = ex.info
        rt = self._registry.get(info.group, info.version, info.resource)
        if rt is None:   # go-restful's 404 inside a served group-version; Go's mux's outside every one
            if self._registry.in_group_version(info.group, info.version):
                raise errors.no_route()
            return page_not_found()
        if not info.verb:  # a method no verb maps to (FOO, OPTIONS): go-restful's 405, as kube words it
            raise errors.no_such_route()
        if info.namespace and not rt.namespaced:
            raise errors.no_route()
        if rt.namespaced and not info.namespace and info.verb not in ("list", "watch"):
            raise errors.no_route()
        if info.subresource and info.subresource not in rt.subresources:
            raise errors.no_route()
        if info.verb == "create" and info.name and not info.subresource:
            raise errors.method_not_allowed(f"POST is not supported on {info.resource}/{info.subresource or ''}")
        if info.verb in ("update", "patch") and not info.name:
            raise errors.method_not_allowed(f"{info.method} requires a resource name")
        query = ex.query
        if info.verb == "watch" and info.name:
            query = dict(query)
            query["fieldSelector"] = ",".join(filter(None, [query.get("fieldSelector"),
                                                            f"metadata.name={info.name}"]))
        req = Request(verb=info.verb, rt=rt, namespace=info.namespace or None,
                      name=(info.name or None) if info.verb != "watch" else None,
                      subresource=info.subresource or None, query=query,
                      content_type=ex.headers.get("Content-Type", "") or "", body=ex.read_body(),
                      accept=ex.headers.get("Accept", "") or "", user_agent=info.user_agent, user=ex.user,
                      audit_annotations=ex.audit_annotations, upgrade=_upgrade(ex.headers))
        return kubeproto.respond(self._rest.handle, req)


def _json(obj: Any) -> Response:
    return Response(200, dumps(obj))


def _json_or_404(obj: Any) -> Response:
    return page_not_found() if obj is None else _json(obj)


def _upgrade(headers: Any) -> dict[str, str]:
    """What a client asking to switch protocols sent, for pods/portforward (empty for a plain request)."""
    if not headers.get("Upgrade"):
        return {}
    names = ("Upgrade", "X-Stream-Protocol-Version", "Sec-WebSocket-Key", "Sec-WebSocket-Protocol")
    return {name.lower(): ",".join(v.strip() for value in (headers.get_all(name) or []) for v in value.split(","))
            for name in names}
