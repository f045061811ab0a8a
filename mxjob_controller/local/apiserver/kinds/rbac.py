"""RBAC objects: ClusterRole aggregation, the immutable ``roleRef`` of bindings, and no privilege escalation.

kube-controller-manager's cluster-role aggregation controller writes into every ClusterRole with an
``aggregationRule`` the rules of the ClusterRoles its selectors match; ``kubectl get clusterrole`` then shows them
and RBAC evaluates them. Here the same happens right after any ClusterRole is written or deleted (so the next
request sees it), by the rules of :func:`~mxjob_controller.local.apiserver.auth.rbac.aggregated_rules`, with a
compare-and-swap write that is retried when a client wrote meanwhile.

With RBAC enforced, writing a role or a binding cannot grant more than the writer holds (:class:`EscalationCheck`,
kube's ``pkg/registry/rbac/*/policybased``): otherwise whoever may create RoleBindings could bind ``cluster-admin``
to herself.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mxjob_controller.kube import field_errors
from mxjob_controller.local.apiserver import builtin, errors
from mxjob_controller.local.apiserver.auth import rbac
from mxjob_controller.local.apiserver.auth.authorizer import Authorizer
from mxjob_controller.local.apiserver.auth.rbac import Attributes, aggregate_all
from mxjob_controller.local.apiserver.auth.user import UserInfo
from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.storage.store import Conflict, Missing, Store
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


# --- no escalation --------------------------------------------------------------------------------------------

_GROUP = "rbac.authorization.k8s.io"
_ROLE_KINDS = {"Role": builtin.ROLES, "ClusterRole": builtin.CLUSTERROLES}
_BINDINGS = {builtin.ROLEBINDINGS.storage_key, builtin.CLUSTERROLEBINDINGS.storage_key}
_ROLES = {builtin.ROLES.storage_key, builtin.CLUSTERROLES.storage_key}
# What an aggregationRule needs (it can gather anything): kube's fullAuthority.
_FULL_AUTHORITY: tuple[rbac.Rule, ...] = rbac.EVERYTHING
_GC_FIELDS = ("ownerReferences", "finalizers", "selfLink", "resourceVersion", "managedFields")


def only_gc_fields_change(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """kube's ``IsOnlyMutatingGCFields``: the garbage collector may drop owner references and finalizers of an
    object whose rules its writer no longer holds."""
    def rest(obj: Mapping[str, Any]) -> dict[str, Any]:
        meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _GC_FIELDS}
        return {**{k: v for k, v in obj.items() if k not in ("metadata", "apiVersion", "kind")}, "metadata": meta}
    return rest(new) == rest(old)


class EscalationCheck:
    """A validating admission step for the four RBAC kinds, as kube's policy-based RBAC storage checks them.

    - a Role or ClusterRole may be written by whoever already holds every rule it grants (in the role's namespace
      for a Role), or may ``escalate`` roles / clusterroles; an ``aggregationRule`` needs every permission there is;
    - a RoleBinding or ClusterRoleBinding by whoever may ``bind`` the role it references (``resourceNames`` may name
      it), in the binding's namespace, or already holds every rule of that role there;
    - ``system:masters`` and the server's own writes (no user) pass, as does an update that changes only what the
      garbage collector changes (owner references, finalizers).

    A refusal is kube's 403: ``rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "alice"
    (groups=[...]) is attempting to grant RBAC permissions not currently held:`` and the missing rules.
    """

    def __init__(self, authorizer: Authorizer) -> None:
        self._authorizer = authorizer

    def __call__(self, rt: ResourceType, new: dict, old: dict | None, ctx: WriteContext) -> None:
        key = rt.storage_key
        user = ctx.user
        if (key not in _ROLES and key not in _BINDINGS) or not isinstance(user, UserInfo) or user.is_master:
            return
        if key in _ROLES:
            self._role(rt, new, old, user)
        elif old is None or not only_gc_fields_change(new, old):
            self._binding(rt, new, user)

    def _allowed(self, user: UserInfo, verb: str, resource: str, namespace: str, name: str,
                 group: str = _GROUP) -> bool:
        return self._authorizer.authorize(Attributes(user, verb, True, group, "*", resource, "", namespace,
                                                     name)).allowed

    def _role(self, rt: ResourceType, new: dict, old: dict | None, user: UserInfo) -> None:
        meta = new.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name") or ""
        # kube asks about the request's name: none on a create (a POST to the collection).
        if self._allowed(user, "escalate", rt.plural, namespace, name if old is not None else ""):
            return
        if old is not None and only_gc_fields_change(new, old):
            return
        rules = [r for r in new.get("rules") or () if isinstance(r, Mapping)]
        why = rbac.escalation(self._authorizer.policy, user, namespace, rules)
        if why is not None:
            raise errors.forbidden(rt.resource, name, why)
        aggregates = has_aggregation_rule(new) or (old is not None and has_aggregation_rule(old))
        if aggregates and rbac.escalation(self._authorizer.policy, user, "", _FULL_AUTHORITY) is not None:
            raise errors.forbidden(rt.resource, name, "must have cluster-admin privileges to use the aggregationRule")

    def _binding(self, rt: ResourceType, new: dict, user: UserInfo) -> None:
        meta = new.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name") or ""
        ref = new.get("roleRef") if isinstance(new.get("roleRef"), Mapping) else {}
        role_type = _ROLE_KINDS.get(str(ref.get("kind") or ""))
        role_name = str(ref.get("name") or "")
        if role_type is not None and self._allowed(user, "bind", role_type.plural, namespace, role_name,
                                                   str(ref.get("apiGroup") or "")):
            return
        if role_type is None:
            raise errors.forbidden(rt.resource, name, f'unsupported role reference kind: "{ref.get("kind") or ""}"')
        policy = self._authorizer.policy
        role = policy.role(namespace, role_name) if role_type is builtin.ROLES else policy.cluster_role(role_name)
        if role is None:   # kube answers with the role's own NotFound
            raise errors.not_found(role_type.resource, role_name)
        rules = [r for r in role.get("rules") or () if isinstance(r, Mapping)]
        why = rbac.escalation(policy, user, namespace, rules)
        if why is not None:
            raise errors.forbidden(rt.resource, name, why)


def has_aggregation_rule(role: Mapping[str, Any]) -> bool:
    """Whether a ClusterRole has an ``aggregationRule`` with selectors (kube's ``hasAggregationRule``)."""
    selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors")
    return isinstance(selectors, list) and bool(selectors)
