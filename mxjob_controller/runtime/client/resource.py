"""Which resource a request is about, and its URL: the client is generic over (group, version, plural).

Paths follow kube-apiserver's layout: ``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...``
otherwise; ``/namespaces/<ns>`` only for namespaced resources (a cluster-scoped resource given a namespace is a
programming error, reported at once rather than as a confusing 404).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote


@dataclass(frozen=True, slots=True)
class Resource:
    group: str          # "" for the core group
    version: str
    plural: str
    namespaced: bool = True
    kind: str = ""      # informational (messages, logs)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def qualified(self) -> str:
        """How kube names it in messages: ``pods``, ``mxjobs.kubeflow.org``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str | None = None) -> str:
        """The URL path; ``namespace`` None on a namespaced resource means all namespaces (list, watch)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace is not None:
            if not self.namespaced:
                raise ValueError(f"{self.qualified} is cluster-scoped: no namespace ({namespace!r}) applies")
            if not namespace:
                raise ValueError(f"{self.qualified}: empty namespace (use None for all namespaces)")
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            if not name:
                raise ValueError(f"{self.qualified}: empty name")
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        elif subresource:
            raise ValueError("a subresource needs an object name")
        return base

    def __str__(self) -> str:
        return f"{self.qualified}/{self.version}"


NAMESPACES = Resource("", "v1", "namespaces", namespaced=False, kind="Namespace")
PODS = Resource("", "v1", "pods", kind="Pod")
SERVICES = Resource("", "v1", "services", kind="Service")
CONFIGMAPS = Resource("", "v1", "configmaps", kind="ConfigMap")
SECRETS = Resource("", "v1", "secrets", kind="Secret")
EVENTS = Resource("", "v1", "events", kind="Event")
NODES = Resource("", "v1", "nodes", namespaced=False, kind="Node")
LEASES = Resource("coordination.k8s.io", "v1", "leases", kind="Lease")
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", namespaced=False,
                kind="CustomResourceDefinition")
