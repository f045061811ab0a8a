"""The server's own health and metrics endpoints, as kube-apiserver serves them.

- ``/healthz``, ``/livez``, ``/readyz``: ``ok``; with ``?verbose`` one ``[+]<check> ok`` line per check and
  ``<name> check passed``; ``?exclude=<check>`` skips a check (``[+]<check> excluded: ok``); ``/readyz/<check>``
  runs one check. An unknown check is Go's mux 404 (``404 page not found``). Every check here passes: this
  server has no etcd to lose and its post-start hooks are done once it listens.
- ``/metrics``: Prometheus text with kube's most basic apiserver metrics: ``apiserver_request_total`` (labels as
  kube's ``metrics.MonitorRequest``), ``apiserver_current_inflight_requests`` (by ``request_kind``, long-running
  requests excluded as kube's max-in-flight filter does) and ``apiserver_storage_objects`` (per resource); what
  the store keeps, encoded: ``apiserver_resource_size_estimate_bytes`` (its current objects, per resource, as
  kube's), ``apiserver_storage_history_size_bytes`` (the earlier versions and deletions its watch history keeps
  alive, per resource: this server's own, kube's watch cache counts only events) and ``apiserver_storage_size_bytes``
  (both, every kind: what kube reports as its etcd database's size).

Authorization is the router's: both are non-resource URLs, so RBAC needs ``get`` on the path (``/metrics`` is not
among the public URLs; kube grants it to the ``system:monitoring`` group).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mxjob_controller.kube.vocabulary import TEXT_MEDIA_TYPE
from mxjob_controller.local.apiserver.request import Exchange, Response, page_not_found

_POST_START_HOOKS = (
    "start-apiserver-admission-initializer", "generic-apiserver-start-informers",
    "priority-and-fairness-config-consumer",
    "priority-and-fairness-filter", "storage-object-count-tracker-hook", "start-apiextensions-informers",
    "start-apiextensions-controllers", "crd-informer-synced", "start-system-namespaces-controller",
    "bootstrap-controller", "rbac/bootstrap-roles", "scheduling/bootstrap-system-priority-classes",
    "start-cluster-authentication-info-controller", "aggregator-reload-proxy-client-cert",
    "start-kube-aggregator-informers", "apiservice-registration-controller", "apiservice-status-available-controller",
    "apiservice-discovery-controller", "kube-apiserver-autoregistration", "autoregister-completion",
    "apiservice-openapi-controller", "apiservice-openapiv3-controller",
)
_LIVEZ = ("ping", "log", "etcd", *(f"poststarthook/{h}" for h in _POST_START_HOOKS))
CHECKS: dict[str, tuple[str, ...]] = {
    "healthz": _LIVEZ,
    "livez": _LIVEZ,
    "readyz": ("ping", "log", "etcd", "etcd-readiness", "informer-sync",
               *(f"poststarthook/{h}" for h in _POST_START_HOOKS), "shutdown"),
}


def health(path: str, query: dict[str, str]) -> Response | None:
    """The answer to a health path (``/readyz``, ``/readyz/ping``...); None when ``path`` is no health path."""
    name, _, check = path.strip("/").partition("/")
    checks = CHECKS.get(name)
    if checks is None:
        return None
    headers = {"X-Content-Type-Options": "nosniff"}
    if check:
        if check not in checks:
            return page_not_found()
        return Response(200, b"ok", content_type=TEXT_MEDIA_TYPE, headers=headers)
    if "verbose" not in query:
        return Response(200, b"ok", content_type=TEXT_MEDIA_TYPE, headers=headers)
    excluded = [c for c in query.get("exclude", "").split(",") if c] if "exclude" in query else []
    lines = []
    for c in checks:
        if c in excluded:
            excluded = [e for e in excluded if e != c]
            lines.append(f"[+]{c} excluded: ok")
        else:
            lines.append(f"[+]{c} ok")
    if excluded:
        quoted = ",".join(f'"{e}"' for e in sorted(set(excluded)))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
    lines.append(f"{name} check passed")
    return Response(200, ("\n".join(lines) + "\n").encode(), content_type=TEXT_MEDIA_TYPE, headers=headers)


# --- metrics ----------------------------------------------------------------------------------------------

StorageSizes = tuple[dict[tuple[str, str], tuple[int, int]], int]
"""(group, resource) → (bytes of its current objects, bytes its history keeps alive), and the store's total."""
STORAGE_CLUSTER_ID = "embedded"   # kube labels the size with its etcd cluster's id; this store is in the process


_REQUEST_LABELS = ("code", "component", "dry_run", "group", "resource", "scope", "subresource", "verb", "version")
_LONG_RUNNING = ("watch", "proxy", "log", "exec", "attach", "portforward")


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _scope(ex: Exchange) -> str:
    info = ex.info
    if not info.resource_request:
        return ""
    if info.name and info.verb not in ("list", "watch"):
        return "resource"
    return "namespace" if info.namespace else "cluster"


def _verb(ex: Exchange) -> str:
    """kube's ``CleanVerb(CanonicalVerb(method, scope))``: LIST, WATCH, APPLY beside the HTTP methods."""
    info = ex.info
    method = info.method.upper()
    if info.resource_request and info.verb == "watch":
        return "WATCH"
    if method in ("GET", "HEAD"):
        scope = _scope(ex)
        return "LIST" if scope not in ("resource", "") else "GET"
    if method == "PATCH" and (ex.headers.get("Content-Type") or "").split(";")[0].strip() == \
            "application/apply-patch+yaml":
        return "APPLY"
    return method


def _long_running(ex: Exchange) -> bool:
    info = ex.info
    return info.resource_request and (info.verb == "watch" or info.subresource in _LONG_RUNNING)


class Metrics:
    """Counts requests (an ``APIHTTPServer`` observer), tracks those in flight (:meth:`wrap` the application) and
    renders ``/metrics`` with ``objects`` (resource label → count) read when scraped."""

    def __init__(self, objects: Callable[[], dict[str, int]],
                 sizes: Callable[[], StorageSizes] | None = None) -> None:
        self._objects = objects
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, ...], int] = {}
        self._inflight = {"mutating": 0, "readOnly": 0}
        self.sources: list[Callable[[], list[str]]] = []  # more metric families' lines (sizes, flow control's)
        if sizes is not None:
            self.sources.append(lambda: _size_lines(sizes()))

    def wrap(self, app: Callable[[Exchange], Response]) -> Callable[[Exchange], Response]:
        def serve(ex: Exchange) -> Response:
            kind = "readOnly" if ex.info.method.upper() in ("GET", "HEAD", "OPTIONS") else "mutating"
            with self._lock:
                self._inflight[kind] += 1
            try:
                return app(ex)
            finally:
                with self._lock:
                    self._inflight[kind] -= 1
        return serve

    def observe(self, ex: Exchange, elapsed: float) -> None:
        info = ex.info
        resource = info.resource if info.resource_request else ""
        subresource = info.subresource if info.resource_request else info.path
        dry_run = ex.query.get("dryRun", "") if info.resource_request else ""
        key = (str(ex.code), "apiserver" if info.resource_request else "", dry_run, info.group, resource, _scope(ex),
               subresource, _verb(ex), info.version)
        with self._lock:
            self._requests[key] = self._requests.get(key, 0) + 1

    def render(self) -> Response:
        with self._lock:
            requests = sorted(self._requests.items())
            inflight = dict(self._inflight)
        objects = sorted(self._objects().items())
        out: list[str] = [
            "# HELP apiserver_current_inflight_requests [STABLE] Maximal number of currently used inflight request "
            "limit of this apiserver per request kind in last second.",
            "# TYPE apiserver_current_inflight_requests gauge",
            *(f'apiserver_current_inflight_requests{{request_kind="{k}"}} {v}' for k, v in sorted(inflight.items())),
            "# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run "
            "value, group, version, resource, scope, component, and HTTP response code.",
            "# TYPE apiserver_request_total counter",
        ]
        for key, count in requests:
            labels = ",".join(f'{n}="{_escape(v)}"' for n, v in zip(_REQUEST_LABELS, key, strict=True))
            out.append(f"apiserver_request_total{{{labels}}} {count}")
        out += [
            "# HELP apiserver_storage_objects [STABLE] Number of stored objects at the time of last check split by "
            "kind. In case of a fetching error, the value will be -1.",
            "# TYPE apiserver_storage_objects gauge",
            *(f'apiserver_storage_objects{{resource="{_escape(r)}"}} {n}' for r, n in objects),
        ]
        for source in self.sources:
            out += source()
        return Response(200, ("\n".join(out) + "\n").encode(),
                        content_type="text/plain; version=0.0.4; charset=utf-8")


def storage_counts(store: Any, registry: Any) -> Callable[[], dict[str, int]]:
    """``apiserver_storage_objects``' values: every served resource's object count, labelled ``plural[.group]``."""
    def counts() -> dict[str, int]:
        out: dict[str, int] = {}
        for rt in registry.all():
            if "list" not in rt.verbs:  # the access reviews store nothing
                continue
            label = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
            if label not in out:
                out[label] = sum(1 for _ in store.iter_all(rt.storage_key))
        return out
    return counts


def _size_lines(sizes: StorageSizes) -> list[str]:
    per_resource, total = sizes
    rows = sorted(per_resource.items())
    return [
        "# HELP apiserver_resource_size_estimate_bytes [ALPHA] Estimated size of stored objects in database. "
        "Estimate is based on sum of last observed sizes of serialized objects. In case of a fetching error, the "
        "value will be -1.",
        "# TYPE apiserver_resource_size_estimate_bytes gauge",
        *(f'apiserver_resource_size_estimate_bytes{{group="{_escape(g)}",resource="{_escape(r)}"}} {o}'
          for (g, r), (o, _h) in rows),
        "# HELP apiserver_storage_history_size_bytes [ALPHA] Size of the earlier versions and deletions the watch "
        "history keeps, serialized, split by resource.",
        "# TYPE apiserver_storage_history_size_bytes gauge",
        *(f'apiserver_storage_history_size_bytes{{group="{_escape(g)}",resource="{_escape(r)}"}} {h}'
          for (g, r), (_o, h) in rows),
        "# HELP apiserver_storage_size_bytes [STABLE] Size of the storage database file physically allocated in "
        "bytes.",
        "# TYPE apiserver_storage_size_bytes gauge",
        f'apiserver_storage_size_bytes{{storage_cluster_id="{STORAGE_CLUSTER_ID}"}} {total}',
    ]


def storage_sizes(store: Any, registry: Any) -> Callable[[], StorageSizes]:
    """The size gauges' values: every served resource's bytes (``Store.footprint``), and every kind's together."""
    def sizes() -> StorageSizes:
        footprint = store.footprint()
        out: dict[tuple[str, str], tuple[int, int]] = {}
        for rt in registry.all():
            if "list" in rt.verbs and (rt.group, rt.plural) not in out:
                out[(rt.group, rt.plural)] = footprint.get(rt.storage_key, (0, 0))
        return out, sum(o + h for o, h in footprint.values())
    return sizes
