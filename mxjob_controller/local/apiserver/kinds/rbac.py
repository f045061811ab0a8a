"""RBAC objects: ClusterRole aggregation, and the immutable ``roleRef`` of bindings.

kube-controller-manager's cluster-role aggregation controller writes into every ClusterRole with an
``aggregationRule`` the rules of the ClusterRoles its selectors match; ``kubectl get clusterrole`` then shows them
and RBAC evaluates them. Here the same happens right after any ClusterRole is written or deleted (so the next
request sees it), by the rules of :func:`~mxjob_controller.local.apiserver.auth.rbac.aggregated_rules`, with a
compare-and-swap write that is retried when a client wrote meanwhile.
"""

from __future__ import annotations

import logging

from mxjob_controller.kube import field_errors
from mxjob_controller.local.apiserver.auth.rbac import aggregate_all
from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.store import Conflict, Missing, Store
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext

log = logging.getLogger(__name__)

_ATTEMPTS = 16


class ClusterRoleStrategy(Strategy):
    def __init__(self, store: Store, storage_key: str) -> None:
        self._store = store
        self._key = storage_key

    def after_commit(self, obj: dict, old: dict | None, ctx: WriteContext) -> None:
        self.aggregate()

    def after_delete(self, obj: dict) -> None:
        self.aggregate()

    def aggregate(self) -> None:
        """Bring every aggregated ClusterRole up to date (a no-op when none would change)."""
        for _ in range(_ATTEMPTS):
            entries = {e.obj["metadata"]["name"]: e for e in self._store.iter_all(self._key)}
            changed = aggregate_all([e.obj for e in entries.values()])
            lost = False
            for name, rules in changed.items():
                entry = entries[name]
                new = dict(entry.obj)
                new["metadata"] = dict(entry.obj["metadata"])
                new["rules"] = rules
                try:
                    self._store.update(self._key, new, expect_rv=entry.rv)
                except (Conflict, Missing):
                    lost = True   # written or deleted meanwhile: compute again from what is there now
            if not lost:
                return
        log.warning("gave up aggregating ClusterRoles after %d conflicting attempts", _ATTEMPTS)


class BindingStrategy(Strategy):
    """RoleBindings and ClusterRoleBindings: ``roleRef`` cannot change (delete and re-create the binding)."""

    def validate(self, obj: dict, old: dict | None, ctx: WriteContext) -> list[Cause]:
        causes = super().validate(obj, old, ctx)
        if old is not None and obj.get("roleRef") != old.get("roleRef"):
            causes.append(field_errors.invalid("roleRef", obj.get("roleRef"), "cannot change roleRef"))
        return causes
