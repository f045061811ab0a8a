"""The user roles the install ships (``kubeflow-mxjobs-*``, ``kubeflow-tfjobs-*``, ``kubeflow-genericjobs-*``) grant
people exactly what their names say, as ``kubectl auth can-i`` answers on a TLS server enforcing RBAC: ``kubectl
apply -k manifests/install``, then Kubeflow's aggregated ``kubeflow-admin`` / ``kubeflow-edit`` / ``kubeflow-view``
(defined as Kubeflow's ``common/kubeflow-roles`` defines them: view is part of edit, edit of admin), each bound to a
user in one namespace."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.manifests import MANIFESTS
from tests.support import Kubectl

# Each test starts the embedded API server or a process of its own (no server fixture).
pytestmark = pytest.mark.integration

NS, OTHER_NS = "team-a", "team-b"
USERS = {"alice": "kubeflow-admin", "bob": "kubeflow-edit", "carol": "kubeflow-view", "dave": None}
JOBS = {"mxjobs": "kubeflow.org", "tfjobs": "kubeflow.org", "genericjobs": "batch.tensorstack.dev"}   # → API group

KUBEFLOW_ROLES = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kubeflow-admin}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {rbac.authorization.kubeflow.org/aggregate-to-kubeflow-admin: "true"}}]
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kubeflow-edit
  labels: {rbac.authorization.kubeflow.org/aggregate-to-kubeflow-admin: "true"}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {rbac.authorization.kubeflow.org/aggregate-to-kubeflow-edit: "true"}}]
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kubeflow-view
  labels: {rbac.authorization.kubeflow.org/aggregate-to-kubeflow-edit: "true"}
aggregationRule:
  clusterRoleSelectors: [{matchLabels: {rbac.authorization.kubeflow.org/aggregate-to-kubeflow-view: "true"}}]
rules: []
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
"""

BINDING = """
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: %(user)s, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %(role)s}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %(user)s}]
"""

WRITE = ("create", "update", "patch", "delete", "deletecollection")
READ = ("get", "list", "watch")


def expected(user: str, verb: str, resource: str, namespace: str) -> bool:
    """What the role names say: admin and edit may do anything with jobs, view may read them; everyone who may
    read a job may read its status, nobody writes it (the controller's); nothing outside the bound namespace, and
    nothing else (pods: Kubeflow's other roles, not ours)."""
    role = USERS[user]
    if role is None or namespace != NS or resource.split("/", maxsplit=1)[0] not in JOBS:
        return False
    if resource.endswith("/status"):
        return verb == "get"
    return verb in READ or role in ("kubeflow-admin", "kubeflow-edit")


CHECKS = [(user, verb, resource, namespace)
          for user in USERS
          for resource in (*JOBS, "mxjobs/status", "genericjobs/status")
          for verb in (READ + WRITE if "/" not in resource else ("get", "patch", "update"))
          for namespace in (NS, OTHER_NS) if namespace == NS or verb == "list"]
CHECKS += [(user, "create", "pods", NS) for user in USERS]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[APIServer, dict[str, Kubectl]]]:
    tmp = tmp_path_factory.mktemp("user-roles")
    server = APIServer(ServerOptions(tls=True)).start()
    try:
        admin = Kubectl(server.write_kubeconfig(tmp / "admin"), tmp / "cache")
        admin.ok("apply", "-k", str(MANIFESTS / "install"), timeout=120)
        bindings = "".join(BINDING % {"user": u, "role": r} for u, r in USERS.items() if r)
        admin.ok("apply", "-f", "-", input=KUBEFLOW_ROLES + bindings)
        users = {u: Kubectl(server.write_kubeconfig(tmp / u, token=server.issue_user_token(u)), tmp / "cache")
                 for u in USERS}
        yield server, users
    finally:
        server.stop()


@pytest.mark.parametrize(("user", "verb", "resource", "namespace"), CHECKS,
                         ids=[f"{u}-{v}-{r}-{n}" for u, v, r, n in CHECKS])
def test_kubectl_auth_can_i(cluster, user: str, verb: str, resource: str, namespace: str) -> None:
    _server, users = cluster
    resource_name, _, sub = resource.partition("/")
    args = ["auth", "can-i", verb, resource_name, "-n", namespace] + (["--subresource", sub] if sub else [])
    done = users[user].run(*args)
    want = expected(user, verb, resource, namespace)
    assert (done.stdout.strip(), done.returncode) == (("yes", 0) if want else ("no", 1)), done.stderr


def test_no_user_role_lists_jobs_across_namespaces(cluster) -> None:
    _server, users = cluster
    for user, kubectl in users.items():
        for jobs in JOBS:
            assert kubectl.run("auth", "can-i", "list", jobs, "--all-namespaces").stdout.strip() == "no", (user, jobs)


def test_the_aggregated_roles_show_the_rules_they_hold(cluster, tmp_path: Path) -> None:
    server, _users = cluster
    admin = Kubectl(server.write_kubeconfig(tmp_path / "admin"), tmp_path / "cache")
    view = admin.json("get", "clusterrole", "kubeflow-view")["rules"]
    assert {(r["apiGroups"][0], tuple(r["resources"]), tuple(r["verbs"])) for r in view} == {
        rule for jobs, group in JOBS.items()
        for rule in ((group, (jobs,), READ), (group, (f"{jobs}/status",), ("get",)))}
    edit = admin.json("get", "clusterrole", "kubeflow-edit")["rules"]
    assert all(rule in edit for rule in view), "view is part of edit"
    assert all(rule in admin.json("get", "clusterrole", "kubeflow-admin")["rules"] for rule in edit)
