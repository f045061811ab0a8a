"""The embedded API server's RBAC evaluation (``local/apiserver/auth/rbac.py``), table-tested as pure functions:
the same table as the manifests' evaluator (``tests/rbac.py``, written apart from it) must come out the same, plus
kube's exact 403 wording, the reasons an access review gives, ``system:masters``, missing roles, aggregation, and
the rule coverage of kube's escalation check (``Covers``, ``CompactRules``, ``CompactString``)."""

from __future__ import annotations

import pytest
import yaml

from mxjob_controller.local.apiserver.auth.rbac import (
    Attributes,
    Decision,
    StaticPolicy,
    aggregate_all,
    authorize,
    compact,
    compact_string,
    escalation,
    forbidden_status,
    rules_for,
    uncovered,
)
from mxjob_controller.local.apiserver.auth.user import ADMIN, UserInfo, service_account_user
from tests.deploy import test_rbac as manifests_table
from tests.rbac import Policy, Request, ServiceAccount

SA = service_account_user("ops", "bot")


def attributes(who: ServiceAccount | UserInfo, req: Request) -> Attributes:
    """The server's attributes for the manifests evaluator's request (its name as authorization sees it)."""
    user = service_account_user(who.namespace, who.name) if isinstance(who, ServiceAccount) else who
    if not req.resource:
        return Attributes(user, req.verb, resource_request=False, path=req.path)
    return Attributes(user, req.verb, True, req.group, "v1", req.resource, req.subresource, req.namespace,
                      req.authorized_name)


@pytest.fixture(scope="module")
def policy() -> StaticPolicy:
    return StaticPolicy(yaml.safe_load_all(manifests_table.POLICY))


@pytest.mark.parametrize(("who", "request_", "allowed", "why"), manifests_table.CASES,
                         ids=[c[3] for c in manifests_table.CASES])
def test_the_server_decides_as_the_manifests_evaluator(policy, who, request_, allowed, why):
    oracle = Policy.from_documents(yaml.safe_load_all(manifests_table.POLICY))
    assert oracle.allows(who, request_) is allowed, "the two evaluators' shared table"
    assert authorize(policy, attributes(who, request_)).allowed is allowed, why


def test_the_reason_names_the_binding_that_allowed_it(policy):
    decision = authorize(policy, Attributes(SA, "get", True, "", "v1", "pods", namespace="any", name="p"))
    assert decision.reason == ('RBAC: allowed by ClusterRoleBinding "reader" of ClusterRole "reader" to '
                               'ServiceAccount "bot/ops"')
    decision = authorize(policy, Attributes(SA, "create", True, "coordination.k8s.io", "v1", "leases",
                                            namespace="team-a"))
    assert decision.reason == ('RBAC: allowed by RoleBinding "leases/team-a" of Role "leases" to '
                               'ServiceAccount "bot/ops"')
    refused = authorize(policy, Attributes(SA, "delete", True, "", "v1", "pods", namespace="any"))
    assert refused == Decision(False, ""), "no opinion, and no reason when every role was found"


def test_system_masters_may_do_anything_even_without_a_binding():
    empty = StaticPolicy([])
    assert authorize(empty, Attributes(ADMIN, "deletecollection", True, "x.io", "v1", "things")).allowed
    assert authorize(empty, Attributes(ADMIN, "get", False, path="/anything")).allowed
    assert not authorize(empty, Attributes(SA, "get", False, path="/healthz")).allowed


def test_missing_roles_are_the_reason_of_a_refusal_and_do_not_hide_other_grants():
    docs = yaml.safe_load_all("""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gone}
subjects: [{kind: Group, name: "system:serviceaccounts"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: b, namespace: ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: also-gone}
subjects: [{kind: ServiceAccount, name: bot, namespace: ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: c, namespace: ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: present}
subjects: [{kind: User, name: "system:serviceaccount:ops:bot"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: d, namespace: ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: not-mine}
subjects: [{kind: User, name: somebody-else}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: present}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
""")
    policy = StaticPolicy(docs)
    refused = authorize(policy, Attributes(SA, "list", True, "", "v1", "pods", namespace="ns"))
    assert not refused.allowed
    assert refused.reason == ('RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, '
                              'role.rbac.authorization.k8s.io "also-gone" not found]'), "only bindings that apply"
    assert authorize(policy, Attributes(SA, "get", True, "", "v1", "configmaps", namespace="ns", name="x")).allowed
    cluster_wide = authorize(policy, Attributes(SA, "list", True, "", "v1", "pods"))
    assert cluster_wide.reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found', "one: no brackets"
    rules, errors = rules_for(policy, SA, "ns")
    assert rules == [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]
    assert len(errors) == 2


FORBIDDEN = [
    # (attributes, message, details), as kube-apiserver's responsewriters.Forbidden words them
    (Attributes(SA, "create", True, "", "v1", "pods", namespace="default"),
     'pods is forbidden: User "system:serviceaccount:ops:bot" cannot create resource "pods" in API group "" in the '
     'namespace "default"', {"kind": "pods"}),
    (Attributes(SA, "patch", True, "kubeflow.org", "v1", "mxjobs", "status", "default", "j"),
     'mxjobs.kubeflow.org "j" is forbidden: User "system:serviceaccount:ops:bot" cannot patch resource "mxjobs/status" '
     'in API group "kubeflow.org" in the namespace "default"',
     {"name": "j", "group": "kubeflow.org", "kind": "mxjobs"}),
    (Attributes(SA, "list", True, "", "v1", "pods"),
     'pods is forbidden: User "system:serviceaccount:ops:bot" cannot list resource "pods" in API group "" at the '
     'cluster scope', {"kind": "pods"}),
    (Attributes(SA, "get", True, "apiextensions.k8s.io", "v1", "customresourcedefinitions", name="mxjobs.kubeflow.org"),
     'customresourcedefinitions.apiextensions.k8s.io "mxjobs.kubeflow.org" is forbidden: User '
     '"system:serviceaccount:ops:bot" cannot get resource "customresourcedefinitions" in API group '
     '"apiextensions.k8s.io" at the cluster scope',
     {"name": "mxjobs.kubeflow.org", "group": "apiextensions.k8s.io", "kind": "customresourcedefinitions"}),
    (Attributes(SA, "get", False, path="/metrics"),
     'forbidden: User "system:serviceaccount:ops:bot" cannot get path "/metrics"', {}),
]


@pytest.mark.parametrize(("attrs", "message", "details"), FORBIDDEN, ids=[f[1][:40] for f in FORBIDDEN])
def test_forbidden_is_worded_as_kube_words_it(attrs, message, details):
    assert forbidden_status(attrs) == (message, details)


def test_a_refusal_reason_follows_the_message():
    message, _ = forbidden_status(Attributes(SA, "get", False, path="/x"), 'RBAC: role.rbac.authorization.k8s.io "r" '
                                                                           "not found")
    assert message.endswith('cannot get path "/x": RBAC: role.rbac.authorization.k8s.io "r" not found')


AGGREGATION = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kubeflow-admin}
aggregationRule: {clusterRoleSelectors: [{matchLabels: {to-admin: "true"}}]}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kubeflow-edit, labels: {to-admin: "true"}}
aggregationRule: {clusterRoleSelectors: [{matchLabels: {to-edit: "true"}}]}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: jobs-edit, labels: {to-edit: "true"}}
rules: [{apiGroups: [kubeflow.org], resources: [mxjobs], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: another-edit, labels: {to-edit: "true", to-admin: "true"}}
rules: [{apiGroups: [kubeflow.org], resources: [mxjobs], verbs: [create]},
        {apiGroups: [""], resources: [pods], verbs: [get]}]
"""


def test_aggregation_chains_sorts_by_name_and_keeps_each_rule_once():
    filled = aggregate_all(list(yaml.safe_load_all(AGGREGATION)))
    create = {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"], "verbs": ["create"]}
    get_pods = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    assert filled["kubeflow-edit"] == [create, get_pods], "another-edit before jobs-edit; its duplicate dropped"
    assert filled["kubeflow-admin"] == [create, get_pods], "through kubeflow-edit (a chain), and another-edit itself"
    assert aggregate_all([{"metadata": {"name": n}, **r} for n, r in
                          [("plain", {"rules": [get_pods]})]]) == {}, "nothing aggregates: nothing changes"


# --- escalation: does what a user holds cover what she grants? -----------------------------------------------

def _rule(verbs: list[str], resources: list[str] | None = None, groups: list[str] | None = None,
          names: list[str] | None = None, urls: list[str] | None = None) -> dict:
    rule: dict = {"verbs": verbs}
    if urls is not None:
        return {**rule, "nonResourceURLs": urls}
    rule.update(apiGroups=groups if groups is not None else [""], resources=resources or [])
    return {**rule, "resourceNames": names} if names else rule


@pytest.mark.parametrize(("owned", "granted", "covered"), [
    ([_rule(["*"], ["*"], ["*"])], _rule(["get", "delete"], ["pods", "pods/log"], ["", "apps"]), True),
    ([_rule(["get"], ["pods"])], _rule(["get"], ["pods/status"]), False),          # pods does not cover pods/status
    ([_rule(["get"], ["*/status"])], _rule(["get"], ["pods/status"]), True),
    ([_rule(["get"], ["*/status"])], _rule(["get"], ["pods"]), False),
    ([_rule(["get"], ["pods"], names=["a"])], _rule(["get"], ["pods"]), False),   # one name does not cover all
    ([_rule(["get"], ["pods"], names=["a", "b"])], _rule(["get"], ["pods"], names=["b"]), True),
    ([_rule(["get"], ["pods"])], _rule(["get"], ["pods"], names=["x"]), True),
    ([_rule(["get"], urls=["/logs/*"])], _rule(["get"], urls=["/logs/kubelet"]), True),
    ([_rule(["get"], urls=["/logs"])], _rule(["get"], urls=["/logs/kubelet"]), False),
    ([_rule(["get"], ["pods"]), _rule(["list"], ["pods"])], _rule(["get", "list"], ["pods"]), True),   # split
    ([_rule(["get"], ["pods"], groups=["apps"])], _rule(["get"], ["pods"]), False),
    ([], _rule([], ["pods"]), True),   # a rule granting no verb grants nothing
])
def test_rule_coverage_as_kube_s_covers(owned, granted, covered):
    assert (uncovered(owned, [granted]) == []) is covered


def test_missing_rules_are_compacted_and_worded_as_kube_words_them():
    missing = uncovered([_rule(["get"], ["pods"])], [_rule(["get", "list", "delete"], ["pods", "services"])])
    assert sorted(compact_string(r) for r in compact(missing)) == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["list" "delete"]}',
        '{APIGroups:[""], Resources:["services"], Verbs:["get" "list" "delete"]}']
    assert compact_string(_rule(["get"], ["pods"], names=["a"])) == \
        '{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get"]}'
    assert compact_string(_rule(["*"], urls=["*"])) == '{NonResourceURLs:["*"], Verbs:["*"]}'


def test_escalation_names_the_user_the_missing_rules_and_resolution_errors():
    policy = StaticPolicy(yaml.safe_load_all("""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules: [{apiGroups: [""], resources: [pods], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: reader, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects: [{kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: gone, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gone}
subjects: [{kind: User, name: alice}]
"""))
    alice = UserInfo("alice", groups=("team", "system:authenticated"))
    assert escalation(policy, alice, "team-a", [_rule(["get"], ["pods"])]) is None
    assert escalation(policy, alice, "", [_rule(["get"], ["pods"])]) == (
        'user "alice" (groups=["team" "system:authenticated"]) is attempting to grant RBAC permissions not currently '
        'held:\n{APIGroups:[""], Resources:["pods"], Verbs:["get"]}'), "held in team-a only"
    assert escalation(policy, alice, "team-a", [_rule(["get", "watch"], ["pods"])]) == (
        'user "alice" (groups=["team" "system:authenticated"]) is attempting to grant RBAC permissions not currently '
        'held:\n{APIGroups:[""], Resources:["pods"], Verbs:["watch"]}; resolution errors: '
        '[role.rbac.authorization.k8s.io "gone" not found]')
