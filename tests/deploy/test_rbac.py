"""Least privilege: the RBAC evaluator (``tests/rbac.py``) decides as kube's authorizer does, and ``manifests/``
grants the controller's service account exactly the permissions listed here: the shared ones and each job kind's,
all of them in the install, one in an overlay for one framework (the GenericJob one without what only Kubeflow's
job model needs). That each of them is used, and that nothing the controller requests is denied, is proven from
the audit log of the end-to-end runs (``test_e2e_run.py``).
"""

from __future__ import annotations

import pytest
import yaml

from mxjob_controller.local.apiserver.http.audit import AuditRecord
from tests.manifests import INSTALL_NAMESPACE, render
from tests.rbac import Permission, Policy, Request, ServiceAccount, audit_report

BOT = ServiceAccount("ops", "bot")
OTHER = ServiceAccount("ops", "other")
STRANGER = ServiceAccount("elsewhere", "bot")

POLICY = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reader}
rules:
- {apiGroups: [""], resources: [pods], verbs: [get, list]}
- {apiGroups: [kubeflow.org], resources: [mxjobs/status], verbs: [patch]}
- {apiGroups: [apiextensions.k8s.io], resources: [customresourcedefinitions], resourceNames: [mxjobs.kubeflow.org],
   verbs: [get]}
- {apiGroups: ["*"], resources: ["*/scale"], verbs: [update]}
- {nonResourceURLs: [/healthz, /metrics/*], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: reader}
subjects: [{kind: ServiceAccount, name: bot, namespace: ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leases, namespace: team-a}
rules:
- {apiGroups: [coordination.k8s.io], resources: [leases], verbs: [create]}
- {apiGroups: [coordination.k8s.io], resources: [leases], resourceNames: [l1], verbs: [get, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: leases, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leases}
subjects: [{kind: ServiceAccount, name: bot, namespace: ops}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: view}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {agg: view}}]
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: view-jobs, labels: {agg: view}}
rules: [{apiGroups: [kubeflow.org], resources: [mxjobs], verbs: [get, list, watch]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: view-more, labels: {agg: view}}
aggregationRule:
  clusterRoleSelectors: [{matchExpressions: [{key: agg, operator: In, values: [more]}]}]
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: more-source, labels: {agg: more}}
rules: [{apiGroups: [""], resources: [services], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: view, namespace: team-b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: Group, name: "system:serviceaccounts:ops", apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: by-user, namespace: team-c}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: leases}
subjects: [{kind: User, name: "system:serviceaccount:ops:other", apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: leases, namespace: team-c}
rules: [{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [list]}]
"""


@pytest.fixture(scope="module")
def policy() -> Policy:
    return Policy.from_documents(yaml.safe_load_all(POLICY))


def req(verb: str, group: str, resource: str, namespace: str = "", name: str = "", subresource: str = "",
        field_selector: str = "", path: str = "") -> Request:
    return Request(verb, group, resource, subresource, namespace, name, field_selector, path)


CASES = [
    # (who, request, allowed, why)
    (BOT, req("get", "", "pods", "any", "p"), True, "ClusterRoleBinding: every namespace"),
    (BOT, req("list", "", "pods"), True, "cluster-wide list through a ClusterRoleBinding"),
    (BOT, req("watch", "", "pods", "any"), False, "verb not granted"),
    (BOT, req("get", "apps", "pods", "any", "p"), False, "other group"),
    (BOT, req("get", "", "pods", "any", "p", subresource="log"), False, "pods does not cover pods/log"),
    (BOT, req("patch", "kubeflow.org", "mxjobs", "any", "j"), False, "mxjobs/status does not cover mxjobs"),
    (BOT, req("patch", "kubeflow.org", "mxjobs", "any", "j", subresource="status"), True, "subresource rule"),
    (BOT, req("update", "apps", "deployments", "any", "d", subresource="scale"), True, "*/scale and group *"),
    (BOT, req("update", "apps", "deployments", "any", "d"), False, "*/scale is not the parent"),
    (BOT, req("get", "apiextensions.k8s.io", "customresourcedefinitions", name="mxjobs.kubeflow.org"), True,
     "resourceNames"),
    (BOT, req("get", "apiextensions.k8s.io", "customresourcedefinitions", name="tfjobs.kubeflow.org"), False,
     "another name"),
    (BOT, req("list", "apiextensions.k8s.io", "customresourcedefinitions"), False, "a list has no name"),
    (BOT, req("create", "coordination.k8s.io", "leases", "team-a"), True, "RoleBinding: in its namespace"),
    (BOT, req("create", "coordination.k8s.io", "leases", "team-b"), False, "RoleBinding: not elsewhere"),
    (BOT, req("get", "coordination.k8s.io", "leases", "team-a", "l1"), True, "named lease"),
    (BOT, req("get", "coordination.k8s.io", "leases", "team-a", "l2"), False, "other lease"),
    (BOT, req("watch", "coordination.k8s.io", "leases", "team-a", field_selector="metadata.name=l1"), True,
     "a watch pinned to a name is a request for that name"),
    (BOT, req("watch", "coordination.k8s.io", "leases", "team-a", field_selector="metadata.name!=l1"), False,
     "only = pins a name"),
    (BOT, req("watch", "coordination.k8s.io", "leases", "team-a"), False, "an unpinned watch"),
    (BOT, req("get", "", "", path="/healthz"), True, "non-resource URL"),
    (BOT, req("get", "", "", path="/metrics/extra"), True, "non-resource URL prefix"),
    (BOT, req("get", "", "", path="/readyz"), False, "unlisted URL"),
    (BOT, req("list", "kubeflow.org", "mxjobs", "team-b"), True, "aggregated ClusterRole via a Group"),
    (BOT, req("get", "", "services", "team-b", "s"), True, "aggregation chains"),
    (BOT, req("list", "kubeflow.org", "mxjobs", "team-a"), False, "RoleBinding to a ClusterRole: its namespace only"),
    (BOT, req("list", "kubeflow.org", "mxjobs"), False, "...and never cluster-wide"),
    (STRANGER, req("get", "", "pods", "any", "p"), False, "same name, other namespace"),
    (STRANGER, req("list", "kubeflow.org", "mxjobs", "team-b"), False, "group of another namespace"),
    (OTHER, req("list", "coordination.k8s.io", "leases", "team-c"), True, "User subject"),
    (OTHER, req("get", "", "pods", "any", "p"), False, "not bound"),
]


@pytest.mark.parametrize(("who", "request_", "allowed", "why"), CASES, ids=[c[3] for c in CASES])
def test_the_evaluator_decides_as_kube_does(policy, who, request_, allowed, why):
    assert policy.allows(who, request_) is allowed, why


def test_the_report_names_denied_requests_and_unused_permissions(policy):
    used = [req("get", "", "pods", "a", "p"), req("patch", "kubeflow.org", "mxjobs", "a", "j", "status"),
            req("delete", "", "pods", "a", "p")]
    report = audit_report(policy, BOT, used, exceptions={
        Permission("ClusterRole/reader", "", "/healthz", "get"): "probed by the kubelet, not by us"})
    assert report.denied == [used[2]]
    unused = {str(p) for p in report.unused}
    assert "list pods (ClusterRole/reader)" in unused
    assert "get pods (ClusterRole/reader)" not in unused
    assert "get /healthz (ClusterRole/reader)" not in unused, "a documented exception"
    assert "get customresourcedefinitions.apiextensions.k8s.io[mxjobs.kubeflow.org] (ClusterRole/reader)" in unused


def test_records_become_requests():
    record = AuditRecord(time=0, method="GET", path="/apis/coordination.k8s.io/v1/namespaces/k/leases", verb="watch",
                         group="coordination.k8s.io", version="v1", resource="leases", subresource="", namespace="k",
                         name="", user_agent="x", code=200, elapsed=0, field_selector="metadata.name=mxjob-controller")
    assert Request.of_audit(record).authorized_name == "mxjob-controller"


# --- the project's RBAC ---------------------------------------------------------------------------------------

CONTROLLER = ServiceAccount(INSTALL_NAMESPACE, "mxjob-controller")
CR, LE = "ClusterRole/mxjob-controller", f"Role/{INSTALL_NAMESPACE}/mxjob-controller-leader-election"
GANG = "ClusterRole/mxjob-controller-gang-scheduling"


def perms(role: str, group: str, resource: str, verbs: str, name: str = "") -> set[Permission]:
    return {Permission(role, group, resource, verb, name) for verb in verbs.split()}


#: Each job kind's API group.
GROUPS = {"mxjobs": "kubeflow.org", "tfjobs": "kubeflow.org", "genericjobs": "batch.tensorstack.dev"}


def job_kind(plural: str) -> set[Permission]:
    """What one framework's controller needs of its job kind (its own ClusterRole): Kubeflow's kinds are deleted by
    their TTL; a GenericJob never is (no TTL), and may ask for the T9k scheduler's PodGroup (created, deleted)."""
    role, group = f"ClusterRole/mxjob-controller-{plural}", GROUPS[plural]
    granted = (perms(role, "apiextensions.k8s.io", "customresourcedefinitions", "get", f"{plural}.{group}")
               | perms(role, group, plural, "get list watch" if plural == "genericjobs" else "get list watch delete")
               | perms(role, group, f"{plural}/status", "patch")
               | perms(role, group, f"{plural}/finalizers", "update"))
    if plural == "genericjobs":
        granted |= perms(role, "scheduler.tensorstack.dev", "podgroups", "get create delete")
    return granted


#: The terminal event's look-up after a restart: Kubeflow's job model only (not in the GenericJob-only install).
EVENTS_LIST = perms(CR, "", "events", "list")
SHARED = (perms(CR, "", "pods", "get list watch create patch delete")
          | perms(CR, "", "services", "get list watch create patch delete")
          | perms(CR, "", "events", "create patch") | EVENTS_LIST
          | perms(LE, "coordination.k8s.io", "leases", "create")
          | perms(LE, "coordination.k8s.io", "leases", "get update watch", "mxjob-controller"))
GRANTED = SHARED | job_kind("mxjobs") | job_kind("tfjobs") | job_kind("genericjobs")

GANG_GRANTED = (perms(GANG, "scheduling.volcano.sh", "podgroups", "get list watch create patch delete")
                | perms(GANG, "scheduling.x-k8s.io", "podgroups", "get list watch create patch delete")
                | perms(GANG, "scheduling.k8s.io", "priorityclasses", "list watch"))


def test_the_controller_is_granted_exactly_this():
    assert Policy.from_documents(render("install")).permissions(CONTROLLER) == GRANTED


#: What names a job kind in a rendered object: its plural, and the API groups only it uses.
NAMES = {"mxjobs": ("mxjobs",), "tfjobs": ("tfjobs",),
         "genericjobs": ("genericjobs", "tensorstack.dev")}   # batch.tensorstack.dev, scheduler.tensorstack.dev


@pytest.mark.parametrize(("overlay", "plural", "shared"), [
    ("overlays/mxnet-only", "mxjobs", SHARED), ("overlays/tensorflow-only", "tfjobs", SHARED),
    ("overlays/generic-only", "genericjobs", SHARED - EVENTS_LIST)], ids=["mxnet", "tensorflow", "generic"])
def test_an_install_of_one_framework_grants_nothing_of_the_other(overlay, plural, shared):
    docs = render(overlay)
    assert Policy.from_documents(docs).permissions(CONTROLLER) == shared | job_kind(plural)
    for other in set(GROUPS) - {plural}:
        for name in NAMES[other]:
            assert not [d for d in docs if name in str(d)], f"nothing names {name}: CRD, roles, user roles"


def test_gang_scheduling_adds_exactly_this():
    assert Policy.from_documents(render("overlays/gang-scheduling")).permissions(CONTROLLER) == GRANTED | GANG_GRANTED


@pytest.mark.parametrize("plural", list(GROUPS))
def test_user_roles_aggregate_into_kubeflow_s(plural):
    docs = render("install")
    policy = Policy.from_documents(docs)
    labels = {d["metadata"]["name"]: d["metadata"].get("labels", {}) for d in docs if d["kind"] == "ClusterRole"}
    assert labels[f"kubeflow-{plural}-admin"]["rbac.authorization.kubeflow.org/aggregate-to-kubeflow-admin"] == "true"
    assert labels[f"kubeflow-{plural}-edit"]["rbac.authorization.kubeflow.org/aggregate-to-kubeflow-edit"] == "true"
    assert labels[f"kubeflow-{plural}-view"]["rbac.authorization.kubeflow.org/aggregate-to-kubeflow-view"] == "true"
    admin = {(p.resource, p.verb) for rule in policy.roles[f"ClusterRole/kubeflow-{plural}-admin"].rules
             for p in rule.permissions("")}
    assert (plural, "deletecollection") in admin and (f"{plural}/status", "get") in admin
    assert (f"{plural}/status", "patch") not in admin, "status is the controller's to write"
    view = {(p.resource, p.verb) for rule in policy.roles[f"ClusterRole/kubeflow-{plural}-view"].rules
            for p in rule.permissions("")}
    assert view == {(plural, "get"), (plural, "list"), (plural, "watch"), (f"{plural}/status", "get")}
    assert not any(b.role_name.startswith(f"kubeflow-{plural}") for b in policy.bindings), "bound by Kubeflow"
