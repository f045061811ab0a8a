"""Namespace termination, as kube-controller-manager's namespace controller does it.

A deleted namespace is ``Terminating`` (the REST layer does that and refuses new content). This controller then
deletes everything in it (a background deletecollection per namespaced resource), reports progress in the
namespace's conditions (``NamespaceContentRemaining``, ``NamespaceFinalizersRemaining``, ...), and once nothing is
left removes its ``kubernetes`` finalizer through ``PUT /api/v1/namespaces/<name>/finalize``; the server then
removes the namespace (unless other finalizers remain).

It is event-driven: a commit hook queues a terminating namespace whenever something in it changes, so objects
that wait for finalizers or a graceful pod deletion are re-checked the moment they go, without polling. The work
runs on the thread ``apiserver-namespaces``.
"""

from __future__ import annotations

import json
import threading
from collections import Counter

from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.local.apiserver.controllers.workqueue import QueueController
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.patch.field_manager import KUBE_CONTROLLER_MANAGER, controller_manager_agent
from mxjob_controller.local.apiserver.request import Request
from mxjob_controller.local.apiserver.resources import Registry, ResourceType
from mxjob_controller.local.apiserver.rest import REST
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.storage.watch import DELETED, Event
from mxjob_controller.local.apiserver.verbs.deletion import BACKGROUND

KUBERNETES_FINALIZER = "kubernetes"
_USER_AGENT = controller_manager_agent("namespace-controller")

# (condition type, reason and message when all is well), in kube's order.
_OK_CONDITIONS = (
    ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered"),
    ("NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
    ("NamespaceDeletionContentFailure", "ContentDeleted",
     "All content successfully deleted, may be waiting on finalization"),
    ("NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"),
    ("NamespaceFinalizersRemaining", "ContentRemoved", "All content successfully removed"),
)


class NamespaceController(QueueController[str]):
    def __init__(self, registry: Registry, store: Store, rest: REST, namespaces_key: str = "/namespaces") -> None:
        self._registry = registry
        self._store = store
        self._rest = rest
        self._key = namespaces_key
        self._lock = threading.Lock()
        self._terminating: set[str] = set()
        super().__init__("apiserver-namespaces", store, self._sync)

    # --- events (writer threads: record and queue only) ---------------------------------------------

    def _record(self, key: str, ev: Event) -> None:
        meta = ev.entry.obj.get("metadata") or {}
        if key == self._key:
            name = meta.get("name") or ""
            with self._lock:
                if ev.type == DELETED or not meta.get("deletionTimestamp"):
                    self._terminating.discard(name)
                    return
                self._terminating.add(name)
            self._queue.add(name)
            return
        namespace = meta.get("namespace")
        if namespace:
            with self._lock:
                wake = namespace in self._terminating
            if wake:
                self._queue.add(namespace)

    # --- one pass over a terminating namespace --------------------------------------------------------

    def _sync(self, name: str) -> None:
        ns_rt = self._namespace_type()
        entry = self._store.get(self._key, ("", name))
        if ns_rt is None or entry is None:
            return
        ns = entry.obj
        if not (ns.get("metadata") or {}).get("deletionTimestamp") or not (ns.get("spec") or {}).get("finalizers"):
            return
        remaining, finalizers, failures = self._delete_content(name)
        self._write_conditions(ns_rt, name, remaining, finalizers, failures)
        if remaining or failures:
            return  # woken again when something in the namespace changes
        self._finalize(ns_rt, name)

    def _namespace_type(self) -> ResourceType | None:
        types = self._registry.by_storage_key(self._key)
        return types[0] if types else None

    def _content_types(self) -> list[ResourceType]:
        """One served version of every namespaced resource that can be deleted: the storage version where it is
        served (its objects need no conversion, which could fail)."""
        seen: dict[str, ResourceType] = {}
        for rt in self._registry.all():
            if rt.namespaced and "deletecollection" in rt.verbs and (
                    rt.storage_key not in seen or rt.storage_api_version == rt.api_version):
                seen[rt.storage_key] = rt
        return list(seen.values())

    def _delete_content(self, namespace: str) -> tuple[Counter[str], Counter[str], list[str]]:
        """Delete everything; what remains (per ``<resource>.<group>``), by finalizer, and failures."""
        remaining: Counter[str] = Counter()
        finalizers: Counter[str] = Counter()
        failures: list[str] = []
        body = json.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": BACKGROUND}).encode()
        for rt in self._content_types():
            items, _ = self._store.list(rt.storage_key, namespace)
            if not items:
                continue
            try:
                self._rest.handle(Request("deletecollection", rt, namespace=namespace, body=body,
                                          content_type="application/json", user_agent=_USER_AGENT))
            except StatusError as e:
                failures.append(f'failed to delete {rt.plural}.{rt.group}: {e.message}')
            items, _ = self._store.list(rt.storage_key, namespace)
            if items:
                remaining[f"{rt.plural}.{rt.group}"] += len(items)
                for _, item in items:
                    finalizers.update((item.obj.get("metadata") or {}).get("finalizers") or [])
        return remaining, finalizers, failures

    def _write_conditions(self, rt: ResourceType, name: str, remaining: Counter[str], finalizers: Counter[str],
                          failures: list[str]) -> None:
        """kube's namespaceConditionUpdater: one condition per type, True while something is wrong or left."""
        entry = self._store.get(self._key, ("", name))
        if entry is None:
            return
        status = dict(entry.obj.get("status") or {})
        bad: dict[str, tuple[str, str]] = {}
        if failures:
            bad["NamespaceDeletionContentFailure"] = (
                "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(failures)} remaining: {', '.join(sorted(failures))}")
        if remaining:
            listed = ", ".join(sorted(f"{r} has {n} resource instances" for r, n in remaining.items()))
            bad["NamespaceContentRemaining"] = ("SomeResourcesRemain", f"Some resources are remaining: {listed}")
        if finalizers:
            listed = ", ".join(sorted(f"{f} in {n} resource instances" for f, n in finalizers.items()))
            bad["NamespaceFinalizersRemaining"] = ("SomeFinalizerRemain", f"Some finalizers are remaining: {listed}")
        old = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
        conditions = [c for c in status.get("conditions") or []
                      if isinstance(c, dict) and c.get("type") not in {t for t, _, _ in _OK_CONDITIONS}]
        for ctype, ok_reason, ok_message in _OK_CONDITIONS:
            value, (reason, message) = ("True", bad[ctype]) if ctype in bad else ("False", (ok_reason, ok_message))
            previous = old.get(ctype) or {}
            since = previous.get("lastTransitionTime") if previous.get("status") == value else None
            conditions.append({"type": ctype, "status": value, "lastTransitionTime": since or now_rfc3339(),
                               "reason": reason, "message": message})
        if conditions != status.get("conditions"):
            status["conditions"] = conditions
            self._rest.update_status(rt, ("", name), status, KUBE_CONTROLLER_MANAGER)

    def _finalize(self, rt: ResourceType, name: str) -> None:
        """Drop the ``kubernetes`` finalizer through the finalize subresource (409 is retried by the queue)."""
        entry = self._store.get(self._key, ("", name))
        if entry is None:
            return
        ns = json.loads(entry.raw)
        spec = ns.setdefault("spec", {})
        spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != KUBERNETES_FINALIZER]
        try:
            self._rest.handle(Request("update", rt, name=name, subresource="finalize", body=json.dumps(ns).encode(),
                                      content_type="application/json", user_agent=_USER_AGENT))
        except StatusError as e:
            if e.code != 404:
                raise
