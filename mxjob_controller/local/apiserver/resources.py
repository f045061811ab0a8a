"""What the server serves: resource types and the registry that maps URLs to them.

A :class:`ResourceType` is one (group, version, plural) the server answers for. Several versions of one
custom resource share a *storage key* (``group/plural``): conversion between them is ``None``, so only
``apiVersion`` differs. The registry changes live as CRDs come and go; listeners (discovery, OpenAPI)
are told so they can rebuild their documents.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mxjob_controller.kube.selectors import FieldGetter
from mxjob_controller.local.apiserver.errors import Resource

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """Where a kind's ``scale`` subresource reads and writes (a CRD's ``subresources.scale``, or kube's own for
    Deployments, ReplicaSets, StatefulSets and ReplicationControllers), as dotted paths from the object root.

    ``selector_form``: how the selector is stored: ``"string"`` (a CRD's ``labelSelectorPath``: served as it is),
    ``"label_selector"`` (a ``metav1.LabelSelector``) or ``"map"`` (a ReplicationController's ``map[string]string``);
    the Scale's ``status.selector`` is always the string form."""

    spec_replicas: str = "spec.replicas"
    status_replicas: str = "status.replicas"
    selector: str | None = "spec.selector"
    selector_form: str = "label_selector"


@dataclass(frozen=True, eq=False)
class ResourceType:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    status_subresource: bool = False
    extra_subresources: tuple[str, ...] = ()
    sets_generation: bool = False
    return_deleted_object: bool = False
    field_getters: Mapping[str, FieldGetter] = field(default_factory=dict)
    crd_name: str | None = None  # set for custom resources
    storage_version: str = ""  # the version objects are stored in (custom resources); default: version
    printer_columns: tuple[dict[str, Any], ...] = ()
    schema: Mapping[str, Any] | None = None  # openAPIV3Schema for custom resources
    # What a create leaves in ``status`` (kube's PrepareForCreate resets it, then Go encodes the zero struct's
    # non-omitempty fields); None: the request's status is kept (nodes, custom resources without /status).
    initial_status: Mapping[str, Any] | None = None
    storage_group: str | None = None  # stored with another group's objects (events.k8s.io's with core events)
    scale: ScalePaths | None = None  # the ``scale`` subresource, when the kind has one

    # The names below are asked for many times per request (the store's key ten times a write): built once per
    # resource type, which is immutable (a CRD change serves new ones).
    @cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @cached_property
    def storage_key(self) -> str:
        group = self.group if self.storage_group is None else self.storage_group
        return f"{group}/{self.plural}"

    @cached_property
    def storage_api_version(self) -> str:
        version = self.storage_version or self.version
        group = self.group if self.storage_group is None else self.storage_group
        return f"{group}/{version}" if group else version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def resource(self) -> Resource:
        return Resource(self.group, self.plural, self.kind)

    @property
    def subresources(self) -> tuple[str, ...]:
        scale = ("scale",) if self.scale is not None and "scale" not in self.extra_subresources else ()
        return (("status",) if self.status_subresource else ()) + scale + self.extra_subresources

    @property
    def is_custom(self) -> bool:
        return self.crd_name is not None

    def __repr__(self) -> str:
        return f"ResourceType({self.api_version}/{self.plural})"


Listener = Callable[[], None]


class Registry:
    """Thread-safe map from (group, version, plural) to ResourceType, plus lookups by kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._listeners: list[Listener] = []
        self._generation = 0

    def add_listener(self, fn: Listener) -> None:
        self._listeners.append(fn)

    def _changed(self) -> None:
        self._generation += 1
        for fn in list(self._listeners):
            fn()

    @property
    def generation(self) -> int:
        """Bumped on every change: caches keyed on it know when to rebuild."""
        return self._generation

    def add(self, *types: ResourceType) -> None:
        with self._lock:
            for rt in types:
                self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self._changed()

    def replace_crd(self, crd_name: str, types: list[ResourceType]) -> None:
        """Serve exactly ``types`` for ``crd_name`` (an empty list stops serving it)."""
        with self._lock:
            for key in [k for k, rt in self._by_gvr.items() if rt.crd_name == crd_name]:
                del self._by_gvr[key]
            for rt in types:
                self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
        self._changed()

    def get(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._by_gvr.values())

    def group_versions(self) -> dict[str, list[str]]:
        """group → served versions, preferred first (storage version first for CRDs, else sorted)."""
        out: dict[str, list[str]] = {}
        for rt in self.all():
            versions = out.setdefault(rt.group, [])
            if rt.version not in versions:
                versions.append(rt.version)
        for versions in out.values():
            versions.sort(key=_version_priority)
        return out

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return sorted((rt for rt in self.all() if rt.group == group and rt.version == version),
                      key=lambda rt: rt.plural)

    def by_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The resource a ``(apiVersion, kind)`` pair names: used for ownerReferences and GC."""
        group, _, version = api_version.rpartition("/")
        for rt in self.all():
            if rt.group == group and rt.version == version and rt.kind == kind:
                return rt
        return None

    def by_storage_key(self, key: str) -> list[ResourceType]:
        """Every served version of the resource stored under ``key``, the storage version first (serving it
        needs no conversion: the server's own controllers use it)."""
        types = [rt for rt in self.all() if rt.storage_key == key]
        types.sort(key=lambda rt: rt.storage_api_version != rt.api_version)
        return types


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, then higher numbers first (v1 > v1beta2 > v1beta1)."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not m:
        return (3, 0, 0)
    major = int(m.group(1))
    stage = {"alpha": 2, "beta": 1}.get(m.group(2) or "", 0)
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor)
