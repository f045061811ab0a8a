"""Impersonation (``kubectl --as``, ``--as-group``, ``--as-uid``, ``Impersonate-Extra-*``) on a TLS server enforcing
RBAC, through the real kubectl and raw HTTPS: the request gets the impersonated user's answer, the caller needs the
``impersonate`` verb on each part (kube's 403 otherwise), ``auth whoami`` and ``auth can-i`` answer for the
impersonated user, and the audit log keeps both users."""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mxjob_controller.local.apiserver.auth.impersonation import Target, impersonated_user, requested
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.http.connection import Headers
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.support import Kubectl, wait_for

CAROL = "system:serviceaccount:team:carol"
POLICY = """
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: carol, namespace: team}
---
apiVersion: v1
kind: Secret
metadata: {name: db-password, namespace: team}
stringData: {password: hunter2}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-alice}
rules:
- {apiGroups: [""], resources: [users], verbs: [impersonate], resourceNames: [alice]}
- {apiGroups: [""], resources: [groups], verbs: [impersonate], resourceNames: [devs]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bob-impersonates-alice}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-alice}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
"""
SECRET_READER = """
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: secret-reader, namespace: team}
rules: [{apiGroups: [""], resources: [secrets], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: carol-reads-secrets, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: secret-reader}
subjects: [{kind: ServiceAccount, name: carol, namespace: team}]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[APIServer, Kubectl, Kubectl]]:
    """A TLS server enforcing RBAC with POLICY applied: its administrator's kubectl, and bob's (who may impersonate
    the user alice and the group devs, and nothing else)."""
    tmp = tmp_path_factory.mktemp("impersonation")
    server = APIServer(ServerOptions(tls=True)).start()
    try:
        admin = Kubectl(server.write_kubeconfig(tmp / "admin"), tmp / "cache")
        admin.ok("apply", "-f", "-", input=POLICY)
        bob = Kubectl(server.write_kubeconfig(tmp / "bob", token=server.issue_user_token("bob")), tmp / "cache")
        yield server, admin, bob
    finally:
        server.stop()


@contextlib.contextmanager
def granted(admin: Kubectl, manifest: str) -> Iterator[None]:
    admin.ok("apply", "-f", "-", input=manifest)
    try:
        yield
    finally:
        admin.ok("delete", "-f", "-", input=manifest)


def send(server: APIServer, path: str, headers: list[tuple[str, str]], method: str = "GET",
         body: dict | None = None, token: str | None = None) -> tuple[int, Any]:
    """One HTTPS request with ``headers`` (repeated names allowed), as ``token``'s user (default: the
    administrator); the code and the parsed body."""
    context = ssl.create_default_context(cafile=server.ca_file)
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=10)
    try:
        data = json.dumps(body).encode() if body is not None else b""
        conn.putrequest(method, path)
        for name, value in [("Authorization", f"Bearer {token or server.admin_token}"),
                            ("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers]:
            conn.putheader(name, value)
        conn.endheaders(data)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def whoami(kubectl: Kubectl, *args: str) -> dict[str, Any]:
    return json.loads(kubectl.ok("auth", "whoami", "-o", "json", *args))["status"]["userInfo"]


def rows(output: str) -> set[str]:
    return {" ".join(line.split()) for line in output.splitlines()[1:]}


# --- what the impersonated user may do -----------------------------------------------------------------------

@pytest.mark.integration
def test_an_administrator_gets_the_impersonated_service_account_s_answer(cluster):
    server, admin, _bob = cluster
    assert "db-password" in admin.ok("get", "secrets", "-n", "team"), "the administrator's own view"
    refused = admin.run("get", "secrets", "-n", "team", f"--as={CAROL}")
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        f'Error from server (Forbidden): secrets is forbidden: User "{CAROL}" cannot list resource "secrets" in API '
        'group "" in the namespace "team"')
    with granted(admin, SECRET_READER):
        assert "db-password" in admin.ok("get", "secrets", "-n", "team", f"--as={CAROL}")
        denied = admin.run("get", "secrets", "-n", "default", f"--as={CAROL}")
        assert 'cannot list resource "secrets" in API group "" in the namespace "default"' in denied.stderr
    records = wait_for(lambda: len(r := server.audit.records(impersonated_user=CAROL, resource="secrets")) == 3 and r,
                       timeout=10)
    assert [(r.user, r.impersonated_user, r.namespace, r.code) for r in records] == [
        ("kubernetes-admin", CAROL, "team", 403), ("kubernetes-admin", CAROL, "team", 200),
        ("kubernetes-admin", CAROL, "default", 403)]
    assert records[0].to_json()["impersonatedUser"] == CAROL
    plain = server.audit.records(user="kubernetes-admin", resource="secrets", impersonated_user="")
    assert plain and plain[0].to_json()["impersonatedUser"] == "", "requests without --as impersonate nobody"


@pytest.mark.integration
def test_impersonating_needs_the_impersonate_verb_on_each_part(cluster):
    server, _admin, bob = cluster
    cases = [
        (("--as=dave",),
         'users "dave" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster '
         "scope"),
        ((f"--as={CAROL}",),
         'serviceaccounts "carol" is forbidden: User "bob" cannot impersonate resource "serviceaccounts" in API group '
         '"" in the namespace "team"'),
        (("--as=alice", "--as-group=devs", "--as-group=admins"),
         'groups "admins" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the '
         "cluster scope"),
        (("--as=alice", "--as-uid=1234"),
         'uids.authentication.k8s.io "1234" is forbidden: User "bob" cannot impersonate resource "uids" in API group '
         '"authentication.k8s.io" at the cluster scope'),
    ]
    for args, message in cases:
        done = bob.run("get", "namespaces", *args)
        assert (done.returncode, done.stderr.strip()) == (1, f"Error from server (Forbidden): {message}"), args
    # What bob may impersonate he gets, and then it is alice who is refused what she may not do.
    assert whoami(bob, "--as=alice", "--as-group=devs") == {"username": "alice",
                                                            "groups": ["devs", "system:authenticated"]}
    as_alice = bob.run("get", "namespaces", "--as=alice")
    assert 'User "alice" cannot list resource "namespaces"' in as_alice.stderr
    status, _body = send(server, "/apis/authentication.k8s.io/v1/selfsubjectreviews", [("Impersonate-User", "dave")],
                         "POST", {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert status == 201, "the administrator (system:masters) may impersonate anyone"
    records = wait_for(lambda: (r := server.audit.records(user="bob", code=403, resource="namespaces")) and r,
                       timeout=10)
    assert records[0].impersonated_user == "", "refused before anyone was impersonated"


@pytest.mark.integration
def test_the_refusal_is_kube_s_status(cluster):
    server, _admin, _bob = cluster
    status, body = send(server, "/api/v1/namespaces/team/secrets", [("Impersonate-User", "dave")],
                        token=server.issue_user_token("bob"))
    assert (status, body) == (403, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "Forbidden", "code": 403,
        "message": 'users "dave" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the '
                   "cluster scope",
        "details": {"name": "dave", "kind": "users"}})


# --- the review APIs answer for the impersonated user ---------------------------------------------------------

@pytest.mark.integration
def test_kubectl_auth_whoami_as(cluster):
    _server, admin, _bob = cluster
    assert "kubernetes-admin" in admin.ok("auth", "whoami")
    assert admin.ok("auth", "whoami", "--as=alice").split() == ["ATTRIBUTE", "VALUE", "Username", "alice", "Groups",
                                                                "[system:authenticated]"]
    assert whoami(admin, f"--as={CAROL}") == {
        "username": CAROL, "groups": ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"]}
    assert whoami(admin, f"--as={CAROL}", "--as-group=ops") == {"username": CAROL,
                                                                 "groups": ["ops", "system:authenticated"]}
    assert whoami(admin, "--as=alice", "--as-group=g", "--as-uid=u-1") == {
        "username": "alice", "uid": "u-1", "groups": ["g", "system:authenticated"]}
    # Not authenticated, the impersonated user may not even ask who it is (system:basic-user is for authenticated).
    unauthenticated = admin.run("auth", "whoami", "--as=alice", "--as-group=system:unauthenticated")
    assert "the selfsubjectreviews API is not enabled in the cluster or you do not have permission to call it" in \
        unauthenticated.stderr
    # system:anonymous is unauthenticated too: what everybody may (system:public-info-viewer), and no more.
    assert '"gitVersion"' in admin.ok("get", "--raw", "/version", "--as=system:anonymous")
    anonymous = admin.run("get", "namespaces", "--as=system:anonymous")
    assert 'User "system:anonymous" cannot list resource "namespaces"' in anonymous.stderr


@pytest.mark.integration
def test_extras_are_impersonated_with_their_keys_unescaped(cluster):
    server, _admin, _bob = cluster
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    status, body = send(server, "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                        [("Impersonate-User", "alice"), ("Impersonate-Extra-Acme.com%2FProject", "a"),
                         ("Impersonate-Extra-Acme.com%2FProject", "b"), ("Impersonate-Extra-Scopes", "view"),
                         ("Impersonate-Extra-Bad%zz", "kept")], "POST", review)
    assert status == 201, body
    assert body["status"]["userInfo"] == {"username": "alice", "groups": ["system:authenticated"],
                                          "extra": {"acme.com/project": ["a", "b"], "scopes": ["view"],
                                                    "bad%zz": ["kept"]}}


@pytest.mark.integration
def test_kubectl_auth_can_i_as(cluster):
    _server, admin, _bob = cluster
    assert admin.run("auth", "can-i", "list", "secrets", "-n", "team", f"--as={CAROL}").stdout.strip() == "no"
    assert admin.run("auth", "can-i", "list", "secrets", "-n", "team").stdout.strip() == "yes"
    before = rows(admin.ok("auth", "can-i", "--list", "-n", "team", f"--as={CAROL}"))
    assert "selfsubjectreviews.authentication.k8s.io [] [] [create]" in before
    assert not any("secrets" in row for row in before) and "*.* [] [] [*]" not in before
    with granted(admin, SECRET_READER):
        assert admin.run("auth", "can-i", "list", "secrets", "-n", "team", f"--as={CAROL}").stdout.strip() == "yes"
        after = rows(admin.ok("auth", "can-i", "--list", "-n", "team", f"--as={CAROL}"))
        assert "secrets [] [] [get list]" in after
    assert "*.* [] [] [*]" in rows(admin.ok("auth", "can-i", "--list", "-n", "team"))


# --- malformed requests ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("headers", "listed"), [
    ([("Impersonate-Group", "g")], "[{Group  g    }]"),
    ([("Impersonate-Uid", "u")], "[{UID  u  authentication.k8s.io/v1  }]"),
    ([("Impersonate-Extra-Scopes", "x")], "[{UserExtra  x  authentication.k8s.io/v1  scopes}]"),
])
@pytest.mark.integration
def test_groups_extras_or_a_uid_without_a_user_are_kube_s_500(cluster, headers, listed):
    server, _admin, _bob = cluster
    status, body = send(server, "/api/v1/namespaces", headers)
    assert (status, body["reason"], body["message"]) == (
        500, "InternalError", f'Internal Server Error: "/api/v1/namespaces": requested {listed} without '
                              "impersonating a user")


def _headers(*pairs: tuple[str, str]) -> Headers:
    return Headers([list(pair) for pair in pairs])


def test_what_the_headers_ask_for():
    assert requested(_headers(), "/") == []
    assert requested(_headers(("impersonate-user", "system:serviceaccount:ns:sa"), ("IMPERSONATE-GROUP", "a"),
                              ("Impersonate-Group", "b")), "/") == [
        Target("ServiceAccount", "sa", "ns"), Target("Group", "a"), Target("Group", "b")]
    for not_an_account in ("system:serviceaccount:Bad_NS:sa", "system:serviceaccount:ns", "system:serviceaccount:a:b:c",
                           "system:serviceaccount:ns:Sa"):
        assert requested(_headers(("Impersonate-User", not_an_account)), "/") == [Target("User", not_an_account)]
    with pytest.raises(StatusError) as refused:
        requested(_headers(("Impersonate-Group", "a")), "/api?x=1")
    assert refused.value.message == ('Internal Server Error: "/api?x=1": requested [{Group  a    }] without '
                                     "impersonating a user")


def test_the_impersonated_user_s_groups():
    sa = Target("ServiceAccount", "sa", "ns")
    assert impersonated_user([sa], groups_given=False).groups == (
        "system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated")
    assert impersonated_user([sa, Target("Group", "x")], groups_given=True).groups == ("x", "system:authenticated")
    assert impersonated_user([Target("User", "u"), Target("Group", "system:authenticated")], True).groups == (
        "system:authenticated",)
    assert impersonated_user([Target("User", "system:anonymous")], False).groups == ("system:unauthenticated",)
    assert impersonated_user([Target("User", "system:anonymous"), Target("Group", "system:authenticated")],
                             True).groups == ("system:authenticated", "system:unauthenticated")


# --- without enforcement --------------------------------------------------------------------------------------

def test_unenforced_the_administrator_may_impersonate_anyone(apiserver: APIServer, kubectl: Kubectl, tmp_path: Path):
    assert not apiserver.security.enforcing
    assert whoami(kubectl, "--as=alice") == {"username": "alice", "groups": ["system:authenticated"]}
    assert kubectl.ok("auth", "can-i", "delete", "nodes", "--as=alice").strip() == "yes", "AlwaysAllow"
    record = wait_for(lambda: apiserver.audit.records(impersonated_user="alice"), timeout=10)[0]
    assert (record.user, record.impersonated_user) == ("kubernetes-admin", "alice")
