"""Deciding requests: the attributes of an HTTP request, and RBAC over the roles and bindings the server stores.

:class:`StorePolicy` reads the server's own Roles, ClusterRoles and bindings, so what ``kubectl apply`` creates is
in force for the next request. It keeps a snapshot of them, rebuilt after any RBAC write (a commit hook counts
them): requests read the snapshot, never the store, so authorizing costs no lock in the steady state.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.kube.selectors import SelectorError, parse_field_selector
from mxjob_controller.local.apiserver import builtin
from mxjob_controller.local.apiserver.auth import rbac
from mxjob_controller.local.apiserver.auth.rbac import Attributes, Decision
from mxjob_controller.local.apiserver.auth.user import UserInfo
from mxjob_controller.local.apiserver.request import RequestInfo
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.storage.watch import Event

ALWAYS_ALLOW = "AlwaysAllow"
RBAC = "RBAC"
MODES = (ALWAYS_ALLOW, RBAC)   # kube-apiserver's --authorization-mode values this server knows
_RBAC_KEYS = {rt.storage_key: rt.kind for rt in (builtin.ROLES, builtin.CLUSTERROLES, builtin.ROLEBINDINGS,
                                                 builtin.CLUSTERROLEBINDINGS)}


def request_attributes(info: RequestInfo, query: Mapping[str, str], user: UserInfo) -> Attributes:
    """What kube's RequestInfoFactory hands the authorizer: a list or watch whose field selector pins
    ``metadata.name`` is a request for that name (so ``resourceNames`` can grant a single-object watch), and a
    namespace object's namespace is its own name."""
    if not info.resource_request:
        return Attributes(user, info.verb, resource_request=False, path=info.path)
    name, namespace = info.name, info.namespace
    if not name and info.verb in ("list", "watch") and query.get("fieldSelector"):
        try:
            pinned = parse_field_selector(query["fieldSelector"]).value_of("metadata.name")
        except SelectorError:
            pinned = None
        if pinned and pinned not in (".", "..") and "/" not in pinned and "%" not in pinned:
            name = pinned
    if info.resource == "namespaces" and not info.group and info.name and not namespace:
        namespace = info.name
    return Attributes(user, info.verb, True, info.group, info.version, info.resource, info.subresource, namespace,
                      name)


@dataclass(frozen=True)
class _Snapshot:
    generation: int
    cluster_roles: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    roles: dict[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    cluster_role_bindings: list[Mapping[str, Any]] = field(default_factory=list)
    role_bindings: dict[str, list[Mapping[str, Any]]] = field(default_factory=dict)


class StorePolicy:
    """The RBAC objects in ``store``, as an :class:`rbac.Policy`."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._generation = 0
        self._snapshot: _Snapshot | None = None
        self._lock = threading.Lock()
        store.add_commit_hook(self._on_commit)

    def _on_commit(self, key: str, _event: Event) -> None:
        if key in _RBAC_KEYS:
            self._generation += 1   # under the store's lock: commits are counted in order

    def snapshot(self) -> _Snapshot:
        snap = self._snapshot
        if snap is not None and snap.generation == self._generation:
            return snap
        with self._lock, self._store.lock:
            generation = self._generation
            snap = _Snapshot(generation)
            for entry in self._store.iter_all(builtin.CLUSTERROLES.storage_key):
                snap.cluster_roles[entry.obj["metadata"]["name"]] = entry.obj
            for entry in self._store.iter_all(builtin.ROLES.storage_key):
                meta = entry.obj["metadata"]
                snap.roles[(meta.get("namespace") or "", meta["name"])] = entry.obj
            snap.cluster_role_bindings.extend(sorted(
                (e.obj for e in self._store.iter_all(builtin.CLUSTERROLEBINDINGS.storage_key)),
                key=lambda o: o["metadata"]["name"]))
            for entry in sorted(self._store.iter_all(builtin.ROLEBINDINGS.storage_key),
                                key=lambda e: e.obj["metadata"]["name"]):
                snap.role_bindings.setdefault(entry.obj["metadata"].get("namespace") or "", []).append(entry.obj)
            self._snapshot = snap
        return snap

    def cluster_role_bindings(self) -> Iterable[Mapping[str, Any]]:
        return self.snapshot().cluster_role_bindings

    def role_bindings(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        return self.snapshot().role_bindings.get(namespace, ())

    def cluster_role(self, name: str) -> Mapping[str, Any] | None:
        return self.snapshot().cluster_roles.get(name)

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.snapshot().roles.get((namespace, name))


class Authorizer:
    """``AlwaysAllow``, or ``RBAC`` (with ``system:masters`` allowed first) over ``policy``."""

    def __init__(self, mode: str, policy: rbac.Policy) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown authorization mode {mode!r}: one of {', '.join(MODES)}")
        self.mode = mode
        self.policy = policy

    def authorize(self, attrs: Attributes) -> Decision:
        if self.mode == ALWAYS_ALLOW:
            return Decision(True)
        return rbac.authorize(self.policy, attrs)

    def rules_for(self, user: UserInfo, namespace: str) -> tuple[list[rbac.Rule], list[str]]:
        if self.mode == ALWAYS_ALLOW:
            return list(rbac.EVERYTHING), []
        return rbac.rules_for(self.policy, user, namespace)
