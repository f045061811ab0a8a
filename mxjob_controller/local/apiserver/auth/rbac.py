"""RBAC as kube-apiserver evaluates it: pure functions over Role, ClusterRole and binding dicts.

The rules are those of ``plugin/pkg/auth/authorizer/rbac`` and ``pkg/apis/rbac/v1/evaluation_helpers.go``:

- a rule allows a resource request when its verbs, apiGroups and resources match (each list may hold ``*``) and its
  resourceNames is empty or holds the request's name; the resource is matched as ``resource`` or
  ``resource/subresource``, also as ``*/subresource``, and a bare ``pods`` does not cover ``pods/status``;
- a rule allows a non-resource request (``/healthz``) when its verbs match and one of its nonResourceURLs is the
  path, ``*``, or a prefix ending in ``*``;
- ClusterRoleBindings are visited first, then the RoleBindings of the request's namespace; a RoleBinding grants its
  Role, or a ClusterRole, only inside its own namespace, so a cluster-scoped request needs a ClusterRoleBinding;
- a subject applies as ``User`` (the name), ``Group`` (one of the user's groups) or ``ServiceAccount`` (its user
  name; a RoleBinding's subject without a namespace means the binding's);
- nothing is ever denied explicitly: without an allowing rule the answer is "no opinion", with the reason naming
  every binding whose role could not be found (``RBAC: clusterrole.rbac.authorization.k8s.io "x" not found``).

An aggregated ClusterRole (``aggregationRule``) holds whatever rules the cluster-role aggregation controller wrote
into it: :func:`aggregated_rules` computes them as that controller does. ``system:masters`` is allowed before RBAC
is asked (:func:`authorize`), as kube-apiserver's privileged-group authorizer does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mxjob_controller.kube.selectors import SelectorError, selector_from_label_selector
from mxjob_controller.local.apiserver.auth.user import UserInfo
from mxjob_controller.local.apiserver.request import RequestInfo

ALL = "*"
Rule = Mapping[str, Any]
EVERYTHING: tuple[Rule, ...] = ({"verbs": [ALL], "apiGroups": [ALL], "resources": [ALL]},
                                {"verbs": [ALL], "nonResourceURLs": [ALL]})
"""What ``AlwaysAllow`` (and ``cluster-admin``) grants."""


@dataclass(slots=True)
class Attributes(RequestInfo):
    """What is asked: kube's ``authorizer.Attributes`` (a request, or the attributes of an access review), built as
    ``Attributes(user, verb, resource_request, group, version, resource, subresource, namespace, name, path)``; a
    resource request unless said otherwise."""

    resource_request: bool = True


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""          # "RBAC: allowed by ..." or the resolution errors of a refusal


# --- one rule -------------------------------------------------------------------------------------------------

def _listed(rule: Rule, key: str) -> Sequence[str]:
    value = rule.get(key)
    return value if isinstance(value, list) else ()


def verb_matches(rule: Rule, verb: str) -> bool:
    return any(v in (ALL, verb) for v in _listed(rule, "verbs"))


def api_group_matches(rule: Rule, group: str) -> bool:
    return any(g in (ALL, group) for g in _listed(rule, "apiGroups"))


def resource_matches(rule: Rule, combined: str, subresource: str) -> bool:
    for resource in _listed(rule, "resources"):
        if resource in (ALL, combined):
            return True
        if subresource and resource == f"{ALL}/{subresource}":
            return True
    return False


def resource_name_matches(rule: Rule, name: str) -> bool:
    names = _listed(rule, "resourceNames")
    return not names or name in names


def non_resource_url_matches(rule: Rule, path: str) -> bool:
    for url in _listed(rule, "nonResourceURLs"):
        if url in (ALL, path):
            return True
        if url.endswith(ALL) and path.startswith(url.rstrip(ALL)):
            return True
    return False


def rule_allows(attrs: Attributes, rule: Rule) -> bool:
    if attrs.resource_request:
        return (verb_matches(rule, attrs.verb) and api_group_matches(rule, attrs.group)
                and resource_matches(rule, attrs.combined_resource, attrs.subresource)
                and resource_name_matches(rule, attrs.name))
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)


# --- who a binding applies to ---------------------------------------------------------------------------------

def subject_applies(user: UserInfo, subject: Mapping[str, Any], namespace: str) -> bool:
    """kube's ``appliesToUser``; ``namespace`` is the binding's ("" for a ClusterRoleBinding)."""
    kind, name = subject.get("kind"), subject.get("name") or ""
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        sa_namespace = subject.get("namespace") or namespace
        return bool(sa_namespace) and user.name == f"system:serviceaccount:{sa_namespace}:{name}"
    return False


def _describe_subject(subject: Mapping[str, Any], namespace: str) -> str:
    kind, name = subject.get("kind"), subject.get("name") or ""
    if kind == "ServiceAccount":   # kube prints name/namespace, in that order
        return f'{kind} "{name}/{subject.get("namespace") or namespace}"'
    return f'{kind} "{name}"'


def _describe_binding(binding: Mapping[str, Any], subject: Mapping[str, Any]) -> str:
    meta = binding.get("metadata") or {}
    ref = binding.get("roleRef") or {}
    namespace = meta.get("namespace") or ""
    if binding.get("kind") == "RoleBinding":
        return (f'RoleBinding "{meta.get("name", "")}/{namespace}" of {ref.get("kind", "")} "{ref.get("name", "")}" '
                f"to {_describe_subject(subject, namespace)}")
    return (f'ClusterRoleBinding "{meta.get("name", "")}" of {ref.get("kind", "")} "{ref.get("name", "")}" '
            f'to {_describe_subject(subject, "")}')


# --- a whole policy -------------------------------------------------------------------------------------------

class Policy(Protocol):
    """Where roles and bindings are read from (the server's store, or a list of documents)."""

    def cluster_role_bindings(self) -> Iterable[Mapping[str, Any]]: ...

    def role_bindings(self, namespace: str) -> Iterable[Mapping[str, Any]]: ...

    def cluster_role(self, name: str) -> Mapping[str, Any] | None: ...

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...


class StaticPolicy:
    """A policy of fixed objects (table tests; manifests rendered by kustomize)."""

    def __init__(self, docs: Iterable[Mapping[str, Any] | None]) -> None:
        self._cluster_roles: dict[str, Mapping[str, Any]] = {}
        self._roles: dict[tuple[str, str], Mapping[str, Any]] = {}
        self._crbs: list[Mapping[str, Any]] = []
        self._rbs: list[Mapping[str, Any]] = []
        for doc in docs:
            if not doc or not str(doc.get("apiVersion", "")).startswith("rbac.authorization.k8s.io/"):
                continue
            meta = doc.get("metadata") or {}
            kind = doc.get("kind")
            if kind == "ClusterRole":
                self._cluster_roles[meta.get("name", "")] = doc
            elif kind == "Role":
                self._roles[(meta.get("namespace") or "", meta.get("name", ""))] = doc
            elif kind == "ClusterRoleBinding":
                self._crbs.append(doc)
            elif kind == "RoleBinding":
                self._rbs.append(doc)
        filled = aggregate_all(list(self._cluster_roles.values()))
        for name, rules in filled.items():
            self._cluster_roles[name] = {**self._cluster_roles[name], "rules": rules}

    def cluster_role_bindings(self) -> Iterable[Mapping[str, Any]]:
        return self._crbs

    def role_bindings(self, namespace: str) -> Iterable[Mapping[str, Any]]:
        return [b for b in self._rbs if (b.get("metadata") or {}).get("namespace") == namespace]

    def cluster_role(self, name: str) -> Mapping[str, Any] | None:
        return self._cluster_roles.get(name)

    def role(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self._roles.get((namespace, name))


def _role_rules(policy: Policy, ref: Mapping[str, Any], namespace: str) -> tuple[list[Rule], str | None]:
    """kube's ``GetRoleReferenceRules``: the rules a binding's roleRef names, or the error finding them."""
    kind, name = ref.get("kind"), ref.get("name") or ""
    if kind == "Role":
        role = policy.role(namespace, name) if namespace else None
        if role is None:
            return [], f'role.rbac.authorization.k8s.io "{name}" not found'
    elif kind == "ClusterRole":
        role = policy.cluster_role(name)
        if role is None:
            return [], f'clusterrole.rbac.authorization.k8s.io "{name}" not found'
    else:
        return [], f'unsupported role reference kind: "{kind}"'
    rules = role.get("rules")
    return [r for r in rules if isinstance(r, Mapping)] if isinstance(rules, list) else [], None


def visit_rules(policy: Policy, user: UserInfo, namespace: str) -> Iterator[tuple[str, Rule | None, str | None]]:
    """Every rule that applies to ``user`` in ``namespace`` ("": cluster-wide only), with the binding it came
    through, and every error resolving a binding that applies (rule None), in kube's order."""
    scopes: list[tuple[str, Iterable[Mapping[str, Any]]]] = [("", policy.cluster_role_bindings())]
    if namespace:
        scopes.append((namespace, policy.role_bindings(namespace)))
    for scope, bindings in scopes:
        for binding in bindings:
            subjects = binding.get("subjects")
            subject = next((s for s in subjects if isinstance(s, Mapping) and subject_applies(user, s, scope)),
                           None) if isinstance(subjects, list) else None
            if subject is None:
                continue
            rules, error = _role_rules(policy, binding.get("roleRef") or {}, scope)
            if error is not None:
                yield "", None, error
                continue
            source = _describe_binding(binding, subject)
            for rule in rules:
                yield source, rule, None


def _aggregate_errors(errors: Sequence[str]) -> str:
    """apimachinery's ``NewAggregate(errs).Error()``: one message alone, several (deduplicated) in brackets."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


def authorize(policy: Policy, attrs: Attributes) -> Decision:
    """``system:masters``, then RBAC: allowed with the reason naming the first binding whose rule allows it."""
    if attrs.user.is_master:
        return Decision(True)
    errors: list[str] = []
    for source, rule, error in visit_rules(policy, attrs.user, attrs.namespace):
        if rule is not None and rule_allows(attrs, rule):
            return Decision(True, f"RBAC: allowed by {source}")
        if error is not None:
            errors.append(error)
    return Decision(False, f"RBAC: {_aggregate_errors(errors)}" if errors else "")


def rules_for(policy: Policy, user: UserInfo, namespace: str) -> tuple[list[Rule], list[str]]:
    """Every rule ``user`` has in ``namespace`` and the errors resolving its bindings (a SelfSubjectRulesReview).
    ``system:masters`` has what it is bound to (``cluster-admin``, by the bootstrap policy)."""
    rules: list[Rule] = []
    errors: list[str] = []
    for _source, rule, error in visit_rules(policy, user, namespace):
        if rule is not None:
            rules.append(rule)
        if error is not None:
            errors.append(error)
    return rules, errors


# --- the 403 --------------------------------------------------------------------------------------------------

def forbidden_message(attrs: Attributes) -> str:
    """kube-apiserver's ``forbiddenMessage``: who cannot do what, where."""
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return (f'User "{user}" cannot {attrs.verb} resource "{attrs.combined_resource}" in API group "{attrs.group}" '
            f"{where}")


def forbidden_status(attrs: Attributes, reason: str = "") -> tuple[str, dict[str, Any]]:
    """The 403's message and details, as ``responsewriters.Forbidden`` and ``apierrors.NewForbidden`` build them:
    ``pods "p" is forbidden: User "u" cannot get resource "pods" in API group "" in the namespace "ns"``."""
    why = forbidden_message(attrs) + (f": {reason}" if reason else "")
    details: dict[str, Any] = {}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.resource_request and attrs.group:
        details["group"] = attrs.group
    if attrs.resource_request and attrs.resource:
        details["kind"] = attrs.resource
    if not attrs.resource_request or not attrs.resource:
        return f"forbidden: {why}", details
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    if attrs.name:
        return f'{qualified} "{attrs.name}" is forbidden: {why}', details
    return f"{qualified} is forbidden: {why}", details


# --- escalation -----------------------------------------------------------------------------------------------

def breakdown(rule: Rule) -> list[dict[str, list[str]]]:
    """kube's ``BreakdownRule``: ``rule`` as rules of one group, resource, verb (and resource name) each, or one
    non-resource URL and verb each, so that each is covered by one owner rule or by none."""
    groups, resources, verbs = _listed(rule, "apiGroups"), _listed(rule, "resources"), _listed(rule, "verbs")
    names = _listed(rule, "resourceNames")
    out: list[dict[str, list[str]]] = []
    for group in groups:
        for resource in resources:
            for verb in verbs:
                base = {"apiGroups": [group], "resources": [resource], "verbs": [verb]}
                out += [{**base, "resourceNames": [name]} for name in names] if names else [base]
    out += [{"nonResourceURLs": [url], "verbs": [verb]} for url in _listed(rule, "nonResourceURLs") for verb in verbs]
    return out


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if ALL in owned or set(wanted) <= set(owned):
        return True
    for resource in wanted:   # a subresource is also covered by ``*/<subresource>``
        if resource in owned:
            continue
        _, slash, sub = resource.partition("/")
        if not slash or f"{ALL}/{sub}" not in owned:
            return False
    return True


def _urls_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    return all(any(o == url or (o.endswith(ALL) and url.startswith(o.rstrip(ALL))) for o in owned) for url in wanted)


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """kube's ``ruleCovers``: whether ``owner`` grants all of ``sub`` (a rule from :func:`breakdown`)."""
    def covers_all(key: str) -> bool:
        owned = _listed(owner, key)
        return ALL in owned or set(_listed(sub, key)) <= set(owned)

    owner_names, sub_names = _listed(owner, "resourceNames"), _listed(sub, "resourceNames")
    names = not owner_names or (bool(sub_names) and set(sub_names) <= set(owner_names))
    return (covers_all("verbs") and covers_all("apiGroups")
            and _resources_cover(_listed(owner, "resources"), _listed(sub, "resources"))
            and _urls_cover(_listed(owner, "nonResourceURLs"), _listed(sub, "nonResourceURLs")) and names)


def uncovered(owner_rules: Iterable[Rule], rules: Iterable[Rule]) -> list[dict[str, list[str]]]:
    """kube's ``Covers``: the parts of ``rules`` that no rule of ``owner_rules`` grants (empty: all covered)."""
    owned = list(owner_rules)
    return [sub for rule in rules for sub in breakdown(rule) if not any(rule_covers(o, sub) for o in owned)]


def compact(rules: Iterable[Rule]) -> list[dict[str, list[str]]]:
    """kube's ``CompactRules``: rules of one group and one resource (and at most one name) that differ only by
    verb, merged into one."""
    merged: dict[tuple[str, str, tuple[str, ...]], dict[str, list[str]]] = {}
    others: list[dict[str, list[str]]] = []
    for rule in rules:
        groups, resources = _listed(rule, "apiGroups"), _listed(rule, "resources")
        names = _listed(rule, "resourceNames")
        simple = (len(groups) == len(resources) == 1 and len(names) <= 1
                  and set(k for k, v in rule.items() if v) <= {"apiGroups", "resources", "verbs", "resourceNames"})
        if not simple:
            others.append({k: list(v) for k, v in rule.items() if v})
            continue
        key = (groups[0], resources[0], tuple(names))
        if key in merged:
            merged[key]["verbs"] += [v for v in _listed(rule, "verbs") if v not in merged[key]["verbs"]]
        else:
            merged[key] = {k: list(v) for k, v in rule.items() if v}
    return others + list(merged.values())


def _go_quoted_list(values: Sequence[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(json.dumps(v, ensure_ascii=False) for v in values) + "]"


def compact_string(rule: Rule) -> str:
    """kube's ``CompactString`` of a rule, as escalation refusals list them:
    ``{APIGroups:[""], Resources:["pods"], Verbs:["get"]}``."""
    parts = [f"{label}:{_go_quoted_list(_listed(rule, key))}"
             for label, key in (("APIGroups", "apiGroups"), ("Resources", "resources"),
                                ("NonResourceURLs", "nonResourceURLs"), ("ResourceNames", "resourceNames"),
                                ("Verbs", "verbs")) if _listed(rule, key)]
    return "{" + ", ".join(parts) + "}"


def escalation(policy: Policy, user: UserInfo, namespace: str, rules: Iterable[Rule]) -> str | None:
    """kube's ``ConfirmNoEscalation``: None when ``user`` already holds every one of ``rules`` in ``namespace``
    ("": cluster-wide), else why not: ``user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC
    permissions not currently held:`` and each missing rule on a line of its own."""
    owned, errors = rules_for(policy, user, namespace)
    missing = uncovered(owned, rules)
    if not missing:
        return None
    lines = sorted({compact_string(rule) for rule in compact(missing)})
    message = (f"user {json.dumps(user.name, ensure_ascii=False)} (groups={_go_quoted_list(user.groups)}) is "
               "attempting to grant RBAC permissions not currently held:\n" + "\n".join(lines))
    if errors:
        message += f"; resolution errors: [{_aggregate_errors(errors)}]"
    return message


# --- aggregation ----------------------------------------------------------------------------------------------

def aggregated_rules(role: Mapping[str, Any],
                     cluster_roles: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]] | None:
    """The rules kube's cluster-role aggregation controller writes into ``role``: for each selector in order, the
    rules of every other ClusterRole it matches (by name), each rule once. None when ``role`` aggregates nothing."""
    selectors = ((role.get("aggregationRule") or {}).get("clusterRoleSelectors"))
    if not isinstance(selectors, list):
        return None
    name = (role.get("metadata") or {}).get("name")
    ordered = sorted(cluster_roles, key=lambda r: (r.get("metadata") or {}).get("name") or "")
    rules: list[dict[str, Any]] = []
    seen: set[str] = set()
    for raw in selectors:
        try:
            selector = selector_from_label_selector(raw if isinstance(raw, Mapping) else None)
        except (SelectorError, KeyError, TypeError):
            continue
        for other in ordered:
            meta = other.get("metadata") or {}
            if meta.get("name") == name or not selector.matches(meta.get("labels") or {}):
                continue
            for rule in other.get("rules") or ():
                key = json.dumps(rule, sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    rules.append(dict(rule))
    return rules


def aggregate_all(cluster_roles: list[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The filled rules of every aggregated ClusterRole whose rules would change, repeated until nothing changes:
    an aggregated role can itself be aggregated (Kubeflow's view is part of edit, edit of admin), and the controller
    converges the same way, one re-aggregation per change."""
    current = {(r.get("metadata") or {}).get("name") or "": dict(r) for r in cluster_roles}
    changed: dict[str, list[dict[str, Any]]] = {}
    for _ in range(len(current) + 1):
        progress = False
        for name, role in current.items():
            rules = aggregated_rules(role, current.values())
            if rules is not None and rules != (role.get("rules") or []):
                role["rules"] = rules
                changed[name] = rules
                progress = True
        if not progress:
            break
    return changed
