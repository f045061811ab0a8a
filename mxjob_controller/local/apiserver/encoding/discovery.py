"""Discovery documents (``/api``, ``/apis``, ``/apis/<group>[/<version>]``), rebuilt as CRDs come and go.

kubectl asks for aggregated discovery first and falls back to these documents when the answer is plain
``application/json``, which is what we send.
"""

from __future__ import annotations

import threading
from typing import Any

from mxjob_controller.local.apiserver.resources import Registry, ResourceType

# Subresources are listed as their own resources, with the verbs they take and the kind they return.
_SUBRESOURCE_SHAPES: dict[str, tuple[tuple[str, ...], str | None, str, str]] = {
    # name: (verbs, group, version, kind); None group/kind means "the parent's"
    "status": (("get", "patch", "update"), None, "", ""),
    "log": (("get",), None, "", ""),
    "binding": (("create",), None, "", "Binding"),
    "finalize": (("update",), None, "", ""),
    "scale": (("get", "patch", "update"), "autoscaling", "v1", "Scale"),
    "token": (("create",), "authentication.k8s.io", "v1", "TokenRequest"),
    "approval": (("get", "patch", "update"), None, "", ""),
}


class Discovery:
    def __init__(self, registry: Registry, server_address: str = "") -> None:
        self._registry = registry
        self.server_address = server_address
        self._lock = threading.Lock()
        self._cache: dict[str, Any] = {}
        self._cache_gen = -1

    def _cached(self, key: str, build: Any) -> Any:
        with self._lock:
            if self._cache_gen != self._registry.generation:
                self._cache = {}
                self._cache_gen = self._registry.generation
            if key not in self._cache:
                self._cache[key] = build()
            return self._cache[key]

    def api_versions(self) -> dict[str, Any]:
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": self.server_address}]}

    def _group(self, name: str, versions: list[str]) -> dict[str, Any]:
        entries = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
        return {"name": name, "versions": entries, "preferredVersion": entries[0]}

    def group_list(self) -> dict[str, Any]:
        def build() -> dict[str, Any]:
            groups = [self._group(g, vs) for g, vs in sorted(self._registry.group_versions().items()) if g]
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
        return self._cached("/apis", build)

    def group(self, name: str) -> dict[str, Any] | None:
        versions = self._registry.group_versions().get(name)
        if not name or not versions:
            return None
        return {"kind": "APIGroup", "apiVersion": "v1", **self._group(name, versions)}

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        def build() -> dict[str, Any] | None:
            types = self._registry.in_group_version(group, version)
            if not types:
                return None
            resources: list[dict[str, Any]] = []
            for rt in types:
                resources.append(_resource_entry(rt))
                for sub in rt.subresources:
                    verbs, sgroup, sversion, skind = _SUBRESOURCE_SHAPES.get(sub, (("get",), None, "", ""))
                    entry: dict[str, Any] = {"name": f"{rt.plural}/{sub}", "singularName": "",
                                             "namespaced": rt.namespaced, "kind": skind or rt.kind,
                                             "verbs": list(verbs)}
                    if sgroup is not None:
                        entry["group"], entry["version"] = sgroup, sversion
                    resources.append(entry)
            if not any(rt.is_custom for rt in types):   # kube's installer registers the paths sorted
                resources.sort(key=lambda entry: entry["name"])
            gv = f"{group}/{version}" if group else version
            return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
        return self._cached(f"{group}/{version}", build)


def _resource_entry(rt: ResourceType) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                             "kind": rt.kind, "verbs": list(rt.verbs)}
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    return entry
