"""A small RBAC authorizer over rendered manifests, with kube-apiserver's rules, to prove least privilege.

    policy = Policy.from_documents(yaml.safe_load_all(rendered))
    sa = ServiceAccount("kubeflow", "mxjob-controller")
    policy.allows(sa, Request("get", "apiextensions.k8s.io", "customresourcedefinitions", name="mxjobs.kubeflow.org"))
    report = audit_report(policy, sa, records)      # every request allowed? which granted permissions unused?

Semantics, as ``plugin/pkg/auth/authorizer/rbac`` and ``pkg/apis/rbac/v1/evaluation_helpers.go`` decide:

- a rule matches when its verbs, apiGroups and resources match (each list may hold ``*``), and its resourceNames is
  empty or holds the request's name; resources are matched as ``resource`` or ``resource/subresource`` (also
  ``*/subresource``); a bare ``pods`` does not cover ``pods/status``;
- a ClusterRoleBinding grants its ClusterRole everywhere; a RoleBinding grants its Role, or a ClusterRole, only in
  the binding's namespace; so a cluster-scoped request needs a ClusterRoleBinding;
- a subject matches a service account as ``kind: ServiceAccount`` (name and namespace), as the user
  ``system:serviceaccount:<ns>:<name>``, or through the groups ``system:serviceaccounts``,
  ``system:serviceaccounts:<ns>`` and ``system:authenticated``;
- a ClusterRole with an ``aggregationRule`` holds the rules of every ClusterRole its selectors match (what the
  cluster-role aggregation controller writes);
- a list or watch whose field selector pins ``metadata.name`` is a request for that name (kube-apiserver's
  RequestInfo; not a deletecollection), so ``resourceNames`` can grant a single-object watch.

Permissions are compared at the finest grain, one (role, apiGroup, resource, resourceName, verb) tuple each, so
"unused" names exactly the verb that could be removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.kube.selectors import parse_field_selector, selector_from_label_selector

ALL = "*"
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True)
class ServiceAccount:
    namespace: str
    name: str

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    @property
    def groups(self) -> frozenset[str]:
        return frozenset({"system:serviceaccounts", f"system:serviceaccounts:{self.namespace}",
                          "system:authenticated"})


@dataclass(frozen=True)
class Request:
    verb: str
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    field_selector: str = ""
    path: str = ""                       # for non-resource requests (resource == "")

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    @property
    def authorized_name(self) -> str:
        """The name authorization sees: the URL's, or a list/watch's ``metadata.name`` field selector."""
        if self.name or self.verb not in ("list", "watch") or not self.field_selector:
            return self.name
        pinned = parse_field_selector(self.field_selector).value_of("metadata.name")
        return pinned if pinned and "/" not in pinned and pinned not in (".", "..") else ""

    @classmethod
    def of_audit_line(cls, line: Mapping[str, Any]) -> Request:
        """From a line of ``local up --audit-log`` (the record's JSON form)."""
        return cls(verb=line["verb"], group=line["group"], resource=line["resource"],
                   subresource=line["subresource"], namespace=line["namespace"], name=line["name"],
                   field_selector=line.get("fieldSelector") or "", path=line["path"])

    @classmethod
    def of_audit(cls, record: Any) -> Request:
        """From an ``AuditRecord`` of the embedded API server."""
        return cls(verb=record.verb, group=record.group, resource=record.resource, subresource=record.subresource,
                   namespace=record.namespace, name=record.name,
                   field_selector=getattr(record, "field_selector", "") or "", path=record.path)


@dataclass(frozen=True)
class Permission:
    """One grantable unit: a verb on a resource (or one named object) through one role."""

    role: str                            # "ClusterRole/x" or "Role/ns/x"
    group: str
    resource: str                        # "pods", "mxjobs/status", or a non-resource URL
    verb: str
    resource_name: str = ""              # "" when the rule is not limited by name

    def __str__(self) -> str:
        target = f"{self.resource}.{self.group}" if self.group else self.resource
        named = f"[{self.resource_name}]" if self.resource_name else ""
        return f"{self.verb} {target}{named} ({self.role})"


@dataclass(frozen=True)
class Rule:
    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def of(cls, rule: Mapping[str, Any]) -> Rule:
        def t(key: str) -> tuple[str, ...]:
            return tuple(rule.get(key) or ())
        return cls(t("verbs"), t("apiGroups"), t("resources"), t("resourceNames"), t("nonResourceURLs"))

    def allows(self, req: Request) -> bool:
        return any(permission_allows(p, req) for p in self.permissions(""))

    def permissions(self, role: str) -> list[Permission]:
        if self.non_resource_urls:
            return [Permission(role, "", url, verb) for url in self.non_resource_urls for verb in self.verbs]
        names = self.resource_names or ("",)
        return [Permission(role, group, resource, verb, name) for group in self.api_groups
                for resource in self.resources for verb in self.verbs for name in names]


def permission_allows(p: Permission, req: Request) -> bool:
    """Whether the one permission ``p`` allows ``req`` (kube's VerbMatches, APIGroupMatches, ResourceMatches,
    ResourceNameMatches, NonResourceURLMatches)."""
    if p.verb not in (ALL, req.verb):
        return False
    if not req.resource:                                    # a non-resource request: /healthz, /api
        return not p.group and (p.resource in (ALL, req.path)
                                or (p.resource.endswith(ALL) and req.path.startswith(p.resource[:-1])))
    if p.group not in (ALL, req.group):
        return False
    subresource_wildcard = bool(req.subresource) and p.resource == f"{ALL}/{req.subresource}"
    if p.resource not in (ALL, req.combined_resource) and not subresource_wildcard:
        return False
    return not p.resource_name or p.resource_name == req.authorized_name


@dataclass
class Role:
    ref: str                             # "ClusterRole/x" or "Role/ns/x"
    rules: list[Rule]
    labels: dict[str, str] = field(default_factory=dict)
    aggregation: list[Mapping[str, Any]] | None = None


@dataclass(frozen=True)
class Binding:
    ref: str
    namespace: str                       # "" for a ClusterRoleBinding
    role_kind: str
    role_name: str
    subjects: tuple[Mapping[str, Any], ...]

    def applies_to(self, sa: ServiceAccount) -> bool:
        for s in self.subjects:
            kind, name = s.get("kind"), s.get("name")
            if kind == "ServiceAccount":
                # A RoleBinding's subject without a namespace means the binding's (kube defaults it so).
                if name == sa.name and (s.get("namespace") or self.namespace) == sa.namespace:
                    return True
            elif (kind == "User" and name == sa.username) or (kind == "Group" and name in sa.groups):
                return True
        return False


class Policy:
    def __init__(self) -> None:
        self.roles: dict[str, Role] = {}
        self.bindings: list[Binding] = []

    @classmethod
    def from_documents(cls, docs: Iterable[Mapping[str, Any] | None]) -> Policy:
        policy = cls()
        for doc in docs:
            if doc:
                policy.add(doc)
        policy.aggregate()
        return policy

    def add(self, obj: Mapping[str, Any]) -> None:
        kind, meta = obj.get("kind"), obj.get("metadata") or {}
        if str(obj.get("apiVersion", "")).split("/")[0] != RBAC_GROUP:
            return
        name, namespace = meta.get("name", ""), meta.get("namespace") or ""
        if kind in ("ClusterRole", "Role"):
            ref = f"ClusterRole/{name}" if kind == "ClusterRole" else f"Role/{namespace}/{name}"
            aggregation = (obj.get("aggregationRule") or {}).get("clusterRoleSelectors")
            self.roles[ref] = Role(ref, [Rule.of(r) for r in obj.get("rules") or ()], dict(meta.get("labels") or {}),
                                   aggregation if kind == "ClusterRole" else None)
        elif kind in ("ClusterRoleBinding", "RoleBinding"):
            role_ref = obj.get("roleRef") or {}
            ref = f"{kind}/{namespace + '/' if namespace else ''}{name}"
            self.bindings.append(Binding(ref, namespace if kind == "RoleBinding" else "", role_ref.get("kind", ""),
                                         role_ref.get("name", ""), tuple(obj.get("subjects") or ())))

    def aggregate(self) -> None:
        """Fill each aggregated ClusterRole with the rules of every ClusterRole its selectors match, until nothing
        changes (the cluster-role aggregation controller converges the same way, so aggregation chains)."""
        aggregated = [r for r in self.roles.values() if r.aggregation is not None]
        for _ in range(len(aggregated) + 1):
            changed = False
            for role in aggregated:
                selectors = [selector_from_label_selector(s) for s in role.aggregation or ()]
                rules = [rule for other in self.roles.values()
                         if other is not role and other.ref.startswith("ClusterRole/")
                         and any(sel.matches(other.labels) for sel in selectors) for rule in other.rules]
                if rules != role.rules:
                    role.rules, changed = rules, True
            if not changed:
                return

    def _role(self, binding: Binding) -> Role | None:
        if binding.role_kind == "ClusterRole":
            return self.roles.get(f"ClusterRole/{binding.role_name}")
        if binding.role_kind == "Role" and binding.namespace:
            return self.roles.get(f"Role/{binding.namespace}/{binding.role_name}")
        return None

    def grants(self, sa: ServiceAccount) -> list[tuple[Binding, Role]]:
        """Every (binding, role) that applies to ``sa``."""
        out = []
        for binding in self.bindings:
            role = self._role(binding)
            if role is not None and binding.applies_to(sa):
                out.append((binding, role))
        return out

    def used_by(self, sa: ServiceAccount, req: Request) -> list[Permission]:
        """The permissions allowing ``req`` for ``sa`` (empty: denied)."""
        used: list[Permission] = []
        for binding, role in self.grants(sa):
            if binding.namespace and binding.namespace != req.namespace:
                continue  # a RoleBinding grants only inside its namespace (and never cluster-scoped requests)
            used.extend(p for rule in role.rules for p in rule.permissions(role.ref) if permission_allows(p, req))
        return used

    def allows(self, sa: ServiceAccount, req: Request) -> bool:
        return bool(self.used_by(sa, req))

    def permissions(self, sa: ServiceAccount) -> set[Permission]:
        return {p for _binding, role in self.grants(sa) for rule in role.rules for p in rule.permissions(role.ref)}


#: What every cluster grants every authenticated client: kube-apiserver's bootstrap ``system:discovery`` role
#: (discovery, version, health and OpenAPI documents). Add it to a policy of manifests with ``BOOTSTRAP``.
BOOTSTRAP: tuple[dict[str, Any], ...] = (
    {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRole", "metadata": {"name": "system:discovery"},
     "rules": [{"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz",
                                    "/openapi", "/openapi/*", "/version", "/version/"], "verbs": ["get"]}]},
    {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "system:discovery"},
     "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "system:discovery"},
     "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": "system:authenticated"}]},
)


@dataclass
class AuditReport:
    denied: list[Request]
    unused: list[Permission]
    used: set[Permission]


def audit_report(policy: Policy, sa: ServiceAccount, requests: Iterable[Request],
                 exceptions: Mapping[Permission, str] | None = None) -> AuditReport:
    """Check every request against the policy; list the granted permissions no request used, except the
    documented ``exceptions`` (permission → why it is granted anyway)."""
    denied, used = [], set()
    for req in requests:
        found = policy.used_by(sa, req)
        if not found:
            denied.append(req)
        used.update(found)
    excused = set(exceptions or {})
    unused = sorted((p for p in policy.permissions(sa) if p not in used and p not in excused), key=str)
    return AuditReport(denied, unused, used)
