"""Authentication, authorization and TLS of the embedded API server, over HTTPS with the official client, our own
client and the real kubectl: the CA the kubeconfig carries, 401 and 403 as kube-apiserver answers them,
service-account tokens (issued before the account exists, revoked with it), TokenRequest, the review APIs behind
``kubectl auth can-i`` and ``kubectl auth whoami``, ClusterRole aggregation, and the audit log's user."""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.local.apiserver import server as server_module
from mxjob_controller.local.apiserver.auth.tokens import TokenAuthenticator, bearer_token
from mxjob_controller.local.apiserver.auth.user import ADMIN
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from mxjob_controller.runtime.client import Client, Forbidden, TransportError, Unauthorized
from mxjob_controller.runtime.client.incluster import load_in_cluster
from tests.support import Kube, Kubectl, configmap, wait_for

SA_USER = "system:serviceaccount:ops:bot"
UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
                "reason": "Unauthorized", "code": 401}
POLICY = """
apiVersion: v1
kind: Namespace
metadata: {name: ops}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bot, namespace: ops}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: configmaps, namespace: default}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, create]}
- {apiGroups: [""], resources: [pods/status], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bot, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmaps}
subjects: [{kind: ServiceAccount, name: bot, namespace: ops}]
"""


@pytest.fixture
def server_options() -> ServerOptions:
    return ServerOptions(bookmark_interval=0.2, tls=True)


def apply(kubectl: Kubectl, text: str) -> None:
    kubectl.ok("apply", "-f", "-", input=text)


def kubectl_as(apiserver: APIServer, tmp_path: Path, token: str, name: str) -> Kubectl:
    return Kubectl(apiserver.write_kubeconfig(tmp_path / f"kubeconfig-{name}", token=token), tmp_path / "cache")


def raw(apiserver: APIServer, path: str, token: str | None = None, method: str = "GET",
        body: dict | None = None, content_type: str = "application/json",
        authorization: str | None = None) -> tuple[int, Any]:
    """One request with the standard library, verifying the server against its CA: the code and the body (parsed
    when it is JSON). ``token`` is sent as ``Bearer <token>``; ``authorization`` as the whole header, as is."""
    context = ssl.create_default_context(cafile=apiserver.ca_file)
    headers = {"Content-Type": content_type}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    elif authorization is not None:
        headers["Authorization"] = authorization
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(apiserver.url + path, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            status, data = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, data = e.code, e.read()
    try:
        return status, json.loads(data or b"null")
    except ValueError:
        return status, data.decode()


# --- TLS ------------------------------------------------------------------------------------------------------

def test_https_with_a_ca_of_its_own_that_clients_verify(apiserver: APIServer, kubectl: Kubectl, tmp_path: Path):
    assert apiserver.url.startswith("https://127.0.0.1:")
    config = yaml.safe_load(Path(kubectl.kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    assert "certificate-authority-data" in cluster and "insecure-skip-tls-verify" not in cluster
    assert "default" in kubectl.ok("get", "namespaces", "-o", "name")
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        urllib.request.urlopen(apiserver.url + "/version", context=ssl.create_default_context(), timeout=10)
    for host in ("localhost", "127.0.0.1"):   # both are names in the serving certificate
        url = apiserver.url.replace("127.0.0.1", host)
        with urllib.request.urlopen(urllib.request.Request(url + "/version", headers={
                "Authorization": f"Bearer {apiserver.admin_token}"}),
                context=ssl.create_default_context(cafile=apiserver.ca_file), timeout=10) as resp:
            assert resp.status == 200
    with Client(apiserver.client_config()) as client:
        assert client.request("GET", "/version")["gitVersion"]
    with Client(apiserver.client_config(ca_file=None)) as unverified, \
            pytest.raises(TransportError, match="CERTIFICATE"):
        unverified.request("GET", "/version")   # the system's CAs do not know this one


def test_plain_http_to_the_tls_port_gets_go_s_answer(apiserver: APIServer):
    with socket.create_connection((apiserver.host, apiserver.port), timeout=10) as sock:
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    assert answer.startswith(b"HTTP/1.0 400 Bad Request\r\n")
    assert answer.endswith(b"Client sent an HTTP request to an HTTPS server.\n")


@pytest.mark.integration
def test_the_key_material_lives_in_a_private_directory_removed_at_stop():
    server = APIServer(ServerOptions(tls=True)).start()
    tls = server.security.tls
    assert tls is not None
    assert (tls.directory.stat().st_mode & 0o777) == 0o700
    assert sorted(p.name for p in tls.directory.iterdir()) == ["ca.crt", "tls.crt"], \
        "the key was on disk only while OpenSSL loaded it"
    server.stop()
    assert not tls.directory.exists()


def test_a_server_that_fails_to_build_leaves_no_key_material(monkeypatch, tmp_path: Path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))   # where TLSMaterial makes its directory

    def broken(*_args: Any) -> None:
        raise RuntimeError("broken after the TLS material was made")
    monkeypatch.setattr(server_module, "Router", broken)
    with pytest.raises(RuntimeError, match="broken after"):
        APIServer(ServerOptions(tls=True))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.integration
def test_a_process_that_exits_without_stopping_its_server_leaves_no_key_material(tmp_path: Path):
    script = ("import sys, tempfile; tempfile.tempdir = sys.argv[1]\n"
              "from mxjob_controller.local.apiserver.server import APIServer, ServerOptions\n"
              "server = APIServer(ServerOptions(tls=True)).start()\n"
              "print(sorted(p.name for p in server.security.tls.directory.iterdir()))\n")   # never stopped
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['ca.crt', 'tls.crt']"
    assert list(tmp_path.iterdir()) == [], "removed at exit"


@pytest.mark.parametrize(("bound", "client"), [("0.0.0.0", "127.0.0.1"), ("::", "::1")])
@pytest.mark.integration
def test_bound_to_every_address_clients_get_the_loopback_address_the_certificate_names(bound: str, client: str,
                                                                                        tmp_path: Path):
    with APIServer(ServerOptions(host=bound, tls=True)) as server:
        assert server.http.server_address[0] == bound and server.host == client
        url_host = f"[{client}]" if ":" in client else client
        assert server.url == f"https://{url_host}:{server.port}"
        assert yaml.safe_load(server.write_kubeconfig(tmp_path / "kc").read_text())["clusters"][0]["cluster"][
            "server"] == server.url
        with Client(server.client_config()) as admin:   # verifies the certificate against the CA, for that address
            assert admin.request("GET", "/api/v1/namespaces")["items"]


# --- authentication -------------------------------------------------------------------------------------------

def _with_header(apiserver: APIServer, path: str, header: str | None, method: str = "GET",
                 body: dict | None = None) -> tuple[int, Any]:
    return raw(apiserver, path, method=method, body=body, authorization=header)


@pytest.mark.parametrize("path", ["/api/v1/namespaces/default/configmaps", "/healthz", "/version", "/apis"])
def test_an_unknown_token_is_401_even_where_anonymous_may_go(apiserver: APIServer, path: str):
    assert _with_header(apiserver, path, "Bearer not-a-token") == (401, UNAUTHORIZED)


def _forbidden(message: str, **details: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": "Forbidden", "details": details, "code": 403}


@pytest.mark.parametrize("header", [None, "Bearer", "Basic YWRtaW46YWRtaW4="])
def test_without_a_token_a_request_is_anonymous_and_rbac_decides(apiserver: APIServer, header: str | None):
    """kube's anonymous authenticator: no bearer token (or an empty one, or another scheme) is system:anonymous in
    system:unauthenticated, which the bootstrap policy lets read health and version, and nothing else."""
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        assert _with_header(apiserver, path, header)[0] == 200, path
    assert _with_header(apiserver, "/apis", header) == (
        403, _forbidden('forbidden: User "system:anonymous" cannot get path "/apis"'))
    assert _with_header(apiserver, "/api/v1/namespaces/default/configmaps", header, "POST", configmap("c")) == (
        403, _forbidden('configmaps is forbidden: User "system:anonymous" cannot create resource "configmaps" in API '
                        'group "" in the namespace "default"', kind="configmaps"))
    records = apiserver.audit.records(resource="configmaps", verb="create")
    assert [(r.user, r.code) for r in records] == [("system:anonymous", 403)]


@pytest.mark.integration
def test_under_always_allow_there_is_no_anonymous_user(tmp_path: Path):
    """As kube-apiserver resets --anonymous-auth under AlwaysAllow (anonymous would be allowed everything)."""
    with APIServer(ServerOptions(tls=True, authorization="AlwaysAllow")) as server:
        assert _with_header(server, "/version", None) == (401, UNAUTHORIZED)
        assert _with_header(server, "/api/v1/namespaces", f"Bearer {server.issue_user_token('alice')}")[0] == 200


def _head_of_answer(sock: ssl.SSLSocket) -> bytes:
    """What the server answers, up to the end of its headers (and a little more): a recv that times out fails."""
    answer = b""
    while b"\r\n\r\n" not in answer:
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    return answer


@pytest.mark.parametrize(("header", "code"), [("Authorization: Bearer not-a-token\r\n", 401), ("", 403)])
def test_a_refused_request_is_answered_without_its_body_being_read(apiserver: APIServer, header: str, code: int):
    """Authentication and authorization come before the body: a refused client announcing a body as large as the
    server accepts, and sending none of it, is answered at once (the server does not wait for the body) and the
    connection closed."""
    context = ssl.create_default_context(cafile=apiserver.ca_file)
    head = (f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n{header}"
            f"Content-Type: application/json\r\nContent-Length: {3 * 1024 * 1024}\r\n\r\n")
    with socket.create_connection((apiserver.host, apiserver.port), timeout=10) as raw_sock, \
            context.wrap_socket(raw_sock, server_hostname="127.0.0.1") as sock:
        sock.sendall(head.encode())
        answer = _head_of_answer(sock)
    assert answer.startswith(f"HTTP/1.1 {code} ".encode()), answer[:200]
    assert b"\r\nConnection: close\r\n" in answer


def test_100_continue_is_sent_only_to_an_admitted_request(apiserver: APIServer):
    context = ssl.create_default_context(cafile=apiserver.ca_file)
    body = json.dumps(configmap("c")).encode()

    def send(token: str) -> bytes:
        with socket.create_connection((apiserver.host, apiserver.port), timeout=10) as raw_sock, \
                context.wrap_socket(raw_sock, server_hostname="127.0.0.1") as sock:
            sock.sendall((f"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: "
                          f"Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                          "Expect: 100-continue\r\nConnection: close\r\n\r\n").encode())
            first = _head_of_answer(sock)
            if not first.startswith(b"HTTP/1.1 100 "):
                return first
            sock.sendall(body)
            return first + _head_of_answer(sock)

    refused = send("not-a-token")
    assert refused.startswith(b"HTTP/1.1 401 ") and b"100 Continue" not in refused
    admitted = send(apiserver.admin_token or "")
    assert admitted.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 "), admitted[:200]


def test_a_small_unread_body_is_dropped_and_the_connection_kept(apiserver: APIServer):
    """As Go does after a handler that did not read the body: up to 256 KiB is read and dropped, so the connection
    can carry the next request."""
    context = ssl.create_default_context(cafile=apiserver.ca_file)
    body = json.dumps(configmap("c")).encode()
    with socket.create_connection((apiserver.host, apiserver.port), timeout=10) as raw_sock, \
            context.wrap_socket(raw_sock, server_hostname="127.0.0.1") as sock:
        sock.sendall(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        sock.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    first, second = answer.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"403 ") and second.startswith(b"200 "), answer[:400]


def test_bearer_header_parsing():
    assert bearer_token("Bearer abc") == "abc" and bearer_token("bearer  abc ") == "abc"
    assert bearer_token("Bearer") == "" and bearer_token("Basic abc") is None and bearer_token(None) is None


def test_a_service_account_token_works_while_its_account_exists(apiserver: APIServer, kubectl: Kubectl,
                                                                 tmp_path: Path):
    token = apiserver.issue_service_account_token("ops", "bot")   # before the account exists, as local up does
    assert raw(apiserver, "/version", token) == (401, UNAUTHORIZED)
    apply(kubectl, POLICY)
    status, body = raw(apiserver, "/api/v1/namespaces/default/configmaps", token)
    assert status == 200 and body["kind"] == "ConfigMapList"
    kubectl.ok("delete", "serviceaccount", "bot", "-n", "ops")
    assert raw(apiserver, "/version", token) == (401, UNAUTHORIZED), "revoked with its account"
    apply(kubectl, POLICY)   # the same name again: another account (uid), which the old token was not bound to
    assert raw(apiserver, "/version", token) == (401, UNAUTHORIZED)
    assert raw(apiserver, "/version", apiserver.issue_service_account_token("ops", "bot"))[0] == 200


def test_token_requests_expire():
    now = [1000.0]
    account = {"metadata": {"uid": "u1"}}
    tokens = TokenAuthenticator(lambda ns, name: account if (ns, name) == ("ops", "bot") else None, lambda: now[0])
    token = tokens.issue_service_account("ops", "bot", "u1", expiration_seconds=600)
    assert tokens.authenticate(token).name == SA_USER  # type: ignore[union-attr]
    now[0] += 599.9
    assert tokens.authenticate(token) is not None
    now[0] += 0.1
    assert tokens.authenticate(token) is None
    assert tokens.authenticate(tokens.issue_user(ADMIN)) == ADMIN


def test_expired_and_revoked_tokens_are_forgotten():
    now = [1000.0]
    accounts = {("ops", "bot"): {"metadata": {"uid": "u1"}}}
    tokens = TokenAuthenticator(lambda ns, name: accounts.get((ns, name)), lambda: now[0])
    admin = tokens.issue_user(ADMIN)
    for _ in range(100):   # TokenRequests of a long-lived server
        tokens.issue_service_account("ops", "bot", "u1", expiration_seconds=600)
    assert len(tokens) == 101
    now[0] += 600
    fresh = tokens.issue_service_account("ops", "bot", "u1", expiration_seconds=600)
    assert len(tokens) == 2, "the expired ones went when the next was issued"
    assert tokens.authenticate(admin) == ADMIN and tokens.authenticate(fresh) is not None
    del accounts[("ops", "bot")]
    assert tokens.authenticate(fresh) is None and len(tokens) == 1, "revoked with its account, for good"
    unbound = tokens.issue_service_account("ops", "later")   # its account may still come: kept
    assert tokens.authenticate(unbound) is None and len(tokens) == 2


def test_kubectl_create_token_for_an_existing_account(apiserver: APIServer, kubectl: Kubectl, tmp_path: Path):
    refused = kubectl.run("create", "token", "bot", "-n", "ops")
    assert refused.returncode != 0 and 'serviceaccounts "bot" not found' in refused.stderr
    apply(kubectl, POLICY)
    token = kubectl.ok("create", "token", "bot", "-n", "ops", "--duration", "20m").strip()
    bot = kubectl_as(apiserver, tmp_path, token, "bot")
    assert bot.ok("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}") == SA_USER
    too_short = kubectl.run("create", "token", "bot", "-n", "ops", "--duration", "5m")
    assert too_short.returncode != 0 and "may not specify a duration less than 10 minutes" in too_short.stderr


# --- authorization --------------------------------------------------------------------------------------------

def test_403_as_kube_apiserver_words_it(apiserver: APIServer, kubectl: Kubectl):
    apply(kubectl, POLICY)
    token = apiserver.issue_service_account_token("ops", "bot")
    assert raw(apiserver, "/api/v1/namespaces/default/configmaps", token, "POST", configmap("c"))[0] == 201
    cases = [
        ("DELETE", "/api/v1/namespaces/default/configmaps/c",
         'configmaps "c" is forbidden: User "system:serviceaccount:ops:bot" cannot delete resource "configmaps" in API '
         'group "" in the namespace "default"', {"name": "c", "kind": "configmaps"}),
        ("GET", "/api/v1/configmaps",
         'configmaps is forbidden: User "system:serviceaccount:ops:bot" cannot list resource "configmaps" in API group '
         '"" at the cluster scope', {"kind": "configmaps"}),
        ("PATCH", "/api/v1/namespaces/default/pods/p/status",
         'pods "p" is forbidden: User "system:serviceaccount:ops:bot" cannot patch resource "pods/status" in API group '
         '"" in the namespace "default"', {"name": "p", "kind": "pods"}),
        ("GET", "/apis/kubeflow.org/v1/namespaces/default/mxjobs",   # not even served: refused first, as kube does
         'mxjobs.kubeflow.org is forbidden: User "system:serviceaccount:ops:bot" cannot list resource "mxjobs" in API '
         'group "kubeflow.org" in the namespace "default"', {"group": "kubeflow.org", "kind": "mxjobs"}),
        ("GET", "/metrics", 'forbidden: User "system:serviceaccount:ops:bot" cannot get path "/metrics"', {}),
    ]
    for method, path, message, details in cases:
        status, body = raw(apiserver, path, token, method, {} if method == "PATCH" else None,
                           "application/merge-patch+json")
        assert (status, body) == (403, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                        "message": message, "reason": "Forbidden", "details": details,
                                        "code": 403}), path
    # What every authenticated user may: discovery, health, version, asking about itself.
    for path in ("/api", "/apis", "/api/v1", "/healthz", "/version", "/openapi/v3"):
        assert raw(apiserver, path, token)[0] == 200, path


def test_our_client_raises_the_typed_errors(apiserver: APIServer, kubectl: Kubectl):
    apply(kubectl, POLICY)
    bot = apiserver.client_config(apiserver.issue_service_account_token("ops", "bot"))
    with Client(bot) as client, pytest.raises(Forbidden, match='cannot list resource "configmaps" in API group "" at '
                                                               "the cluster scope"):
        client.request("GET", "/api/v1/configmaps")
    with Client(apiserver.client_config("wrong")) as client, pytest.raises(Unauthorized):
        client.request("GET", "/version")


def test_in_cluster_configuration_from_the_token_directory(apiserver: APIServer, kubectl: Kubectl, tmp_path: Path):
    apply(kubectl, POLICY)
    directory = apiserver.write_token_dir(tmp_path / "sa", "ops", "bot")
    assert sorted(p.name for p in directory.iterdir()) == ["ca.crt", "namespace", "token"]
    assert (directory / "token").stat().st_mode & 0o777 == 0o600 and (directory / "namespace").read_text() == "ops"
    config = load_in_cluster({"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(apiserver.port)},
                             str(directory))
    assert config.host == apiserver.url and config.namespace == "ops"
    with Client(config) as client:
        assert client.request("GET", "/api/v1/namespaces/default/configmaps")["kind"] == "ConfigMapList"
        with pytest.raises(Forbidden):
            client.request("GET", "/api/v1/namespaces/ops/configmaps")


def test_the_token_directory_is_renewed_when_its_service_account_is_made_anew(apiserver: APIServer,
                                                                              kubectl: Kubectl, tmp_path: Path):
    """Issue 33: deleting the ServiceAccount revokes the token on disk (bound to its uid); once an account of that
    name exists again, the directory holds a token of the new account, as a kubelet renews a pod's, and a client
    reading the directory (FileToken) goes on without a restart."""
    apply(kubectl, POLICY)
    directory = apiserver.write_token_dir(tmp_path / "sa", "ops", "bot")
    first = (directory / "token").read_text()
    config = load_in_cluster({"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(apiserver.port)},
                             str(directory))
    with Client(config) as client:
        assert client.request("GET", "/api/v1/namespaces/default/configmaps")["kind"] == "ConfigMapList"
        kubectl.ok("delete", "serviceaccount", "bot", "-n", "ops")
        assert raw(apiserver, "/version", first)[0] == 401
        assert (directory / "token").read_text() == first, "no account, no token to write"
        kubectl.ok("create", "serviceaccount", "bot", "-n", "ops")
        second = wait_for(lambda: t if (t := (directory / "token").read_text()) != first else None, timeout=10,
                          what="a token of the new account")
        assert (directory / "token").stat().st_mode & 0o777 == 0o600
        assert raw(apiserver, "/version", first)[0] == 401
        uid = kubectl.json("get", "serviceaccount", "bot", "-n", "ops")["metadata"]["uid"]
        assert apiserver.security.tokens.authenticate(second).uid == uid
        assert client.request("GET", "/api/v1/namespaces/default/configmaps")["kind"] == "ConfigMapList"


# --- the review APIs, through kubectl ---------------------------------------------------------------------------

def test_kubectl_auth_whoami(apiserver: APIServer, kubectl: Kubectl, tmp_path: Path):
    assert kubectl.ok("auth", "whoami").split() == ["ATTRIBUTE", "VALUE", "Username", "kubernetes-admin", "Groups",
                                                     "[system:masters", "system:authenticated]"]
    apply(kubectl, POLICY)
    bot = kubectl_as(apiserver, tmp_path, apiserver.issue_service_account_token("ops", "bot"), "bot")
    info = json.loads(bot.ok("auth", "whoami", "-o", "json"))["status"]["userInfo"]
    uid = kubectl.json("get", "serviceaccount", "bot", "-n", "ops")["metadata"]["uid"]
    assert info == {"username": SA_USER, "uid": uid,
                    "groups": ["system:serviceaccounts", "system:serviceaccounts:ops", "system:authenticated"]}
    alice = kubectl_as(apiserver, tmp_path, apiserver.issue_user_token("alice", ("team-a",)), "alice")
    assert json.loads(alice.ok("auth", "whoami", "-o", "json"))["status"]["userInfo"] == {
        "username": "alice", "groups": ["team-a", "system:authenticated"]}


@pytest.mark.parametrize(("args", "answer"), [
    (("get", "configmaps"), "yes"),
    (("create", "configmaps", "-n", "default"), "yes"),
    (("delete", "configmaps"), "no"),
    (("list", "configmaps", "-n", "ops"), "no"),
    (("list", "configmaps", "--all-namespaces"), "no"),
    (("get", "pods", "--subresource", "status"), "yes"),
    (("get", "pods"), "no"),
    (("create", "selfsubjectaccessreviews.authorization.k8s.io"), "yes"),
    (("get", "/healthz"), "yes"),
    (("get", "/metrics"), "no"),
])
def test_kubectl_auth_can_i(apiserver: APIServer, kubectl: Kubectl, tmp_path: Path, args: tuple[str, ...],
                            answer: str):
    apply(kubectl, POLICY)
    bot = kubectl_as(apiserver, tmp_path, apiserver.issue_service_account_token("ops", "bot"), "bot")
    done = bot.run("auth", "can-i", *args)
    assert (done.stdout.strip(), done.returncode) == (answer, 0 if answer == "yes" else 1), done.stderr
    assert kubectl.run("auth", "can-i", *args).stdout.strip() == "yes", "the administrator may do anything"


def test_kubectl_auth_can_i_list(apiserver: APIServer, kubectl: Kubectl, tmp_path: Path):
    apply(kubectl, POLICY)
    bot = kubectl_as(apiserver, tmp_path, apiserver.issue_service_account_token("ops", "bot"), "bot")
    rows = {" ".join(line.split()) for line in bot.ok("auth", "can-i", "--list").splitlines()[1:]}
    assert "configmaps [] [] [get list create]" in rows
    assert "pods/status [] [] [get]" in rows
    assert "selfsubjectaccessreviews.authorization.k8s.io [] [] [create]" in rows
    assert "[/healthz] [] [get]" in rows
    assert not any(row.startswith("*.*") for row in rows)
    assert "*.* [] [] [*]" in {" ".join(line.split()) for line in kubectl.ok("auth", "can-i", "--list").splitlines()}


def test_an_access_review_answers_with_kube_s_reason(apiserver: APIServer, kubectl: Kubectl):
    apply(kubectl, POLICY)
    token = apiserver.issue_service_account_token("ops", "bot")
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "configmaps"}}}
    status, body = raw(apiserver, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", token, "POST", review)
    assert status == 201 and body["status"] == {
        "allowed": True, "reason": 'RBAC: allowed by RoleBinding "bot/default" of Role "configmaps" to ServiceAccount '
                                   '"bot/ops"'}
    review["spec"] = {}
    status, body = raw(apiserver, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", token, "POST", review)
    assert status == 422 and body["message"].startswith('SelfSubjectAccessReview.authorization.k8s.io "" is invalid: '
                                                        "spec.resourceAttributes: Invalid value")


# --- RBAC objects -----------------------------------------------------------------------------------------------

def test_aggregated_cluster_roles_are_filled_and_kept_filled(kubectl: Kubectl):
    apply(kubectl, """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: all-jobs}
aggregationRule: {clusterRoleSelectors: [{matchLabels: {jobs: "true"}}]}
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: mxjobs, labels: {jobs: "true"}}
rules: [{apiGroups: [kubeflow.org], resources: [mxjobs], verbs: [get]}]
""")
    assert kubectl.json("get", "clusterrole", "all-jobs")["rules"] == [
        {"apiGroups": ["kubeflow.org"], "resources": ["mxjobs"], "verbs": ["get"]}]
    apply(kubectl, """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: tfjobs, labels: {jobs: "true"}}
rules: [{apiGroups: [kubeflow.org], resources: [tfjobs], verbs: [get]}]
""")
    kubectl.ok("delete", "clusterrole", "mxjobs")
    assert kubectl.json("get", "clusterrole", "all-jobs")["rules"] == [
        {"apiGroups": ["kubeflow.org"], "resources": ["tfjobs"], "verbs": ["get"]}]


def test_a_binding_s_role_cannot_change(kubectl: Kubectl):
    binding = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: %s}
subjects: [{kind: User, name: alice}]
"""
    apply(kubectl, binding % "view")
    changed = kubectl.run("apply", "-f", "-", input=binding % "edit")
    assert changed.returncode != 0 and "roleRef: Invalid value" in changed.stderr
    assert "cannot change roleRef" in changed.stderr


def test_discovery_serves_the_review_apis(kube: Kube, kubectl: Kubectl):
    groups = {g["name"] for g in kube.get("/apis").body["groups"]}
    assert {"authorization.k8s.io", "authentication.k8s.io"} <= groups
    resources = {r["name"]: r for r in kube.get("/apis/authorization.k8s.io/v1").body["resources"]}
    assert resources["selfsubjectaccessreviews"]["verbs"] == ["create"]
    assert not resources["selfsubjectaccessreviews"]["namespaced"]
    token = next(r for r in kube.get("/api/v1").body["resources"] if r["name"] == "serviceaccounts/token")
    assert (token["group"], token["version"], token["kind"], token["verbs"]) == \
        ("authentication.k8s.io", "v1", "TokenRequest", ["create"])
    assert "selfsubjectreviews" in kubectl.ok("api-resources", "--api-group", "authentication.k8s.io")
    assert kube.get("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").status == 405


def test_the_audit_log_names_the_user(apiserver: APIServer, kubectl: Kubectl):
    apply(kubectl, POLICY)
    token = apiserver.issue_service_account_token("ops", "bot")
    raw(apiserver, "/api/v1/namespaces/default/configmaps/x", token)
    raw(apiserver, "/api/v1/namespaces/default/configmaps/x", "bad")
    records = wait_for(lambda: len(r := apiserver.audit.records(name="x")) == 2 and r, timeout=10)
    assert [(r.user, r.code) for r in records] == [(SA_USER, 404), ("", 401)]
    assert apiserver.audit.records(user="kubernetes-admin"), "kubectl applied the policy"


@pytest.mark.integration
def test_without_tls_or_rbac_every_request_is_the_administrator(tmp_path: Path):
    server = APIServer(ServerOptions()).start()
    try:
        assert server.url.startswith("http://") and server.admin_token is None
        kubectl = Kubectl(server.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "cache")
        assert "kubernetes-admin" in kubectl.ok("auth", "whoami")
        assert kubectl.ok("auth", "can-i", "delete", "nodes").strip() == "yes"
        rows = {" ".join(line.split()) for line in kubectl.ok("auth", "can-i", "--list").splitlines()}
        assert "*.* [] [] [*]" in rows
        assert not server.audit.records(user="kubernetes-admin"), "nobody was authenticated"
    finally:
        server.stop()


@pytest.mark.integration
def test_rbac_without_tls_enforces_over_plain_http(tmp_path: Path):
    server = APIServer(ServerOptions(authorization="RBAC")).start()
    try:
        assert server.url.startswith("http://") and server.admin_token
        with Client(server.client_config()) as admin:
            assert admin.request("GET", "/api/v1/namespaces")["items"]
        with Client(server.client_config(server.issue_user_token("alice"))) as alice, pytest.raises(Forbidden):
            alice.request("GET", "/api/v1/namespaces")
    finally:
        server.stop()


def test_a_watch_over_tls_lasts_its_timeout_and_a_gone_client_is_noticed(apiserver: APIServer, kube: Kube):
    started = time.monotonic()
    events = list(kube.watch("/api/v1/namespaces/default/configmaps", timeout=20, timeoutSeconds=2))
    events = [e for e in events if e["object"]["metadata"]["name"] != "kube-root-ca.crt"]  # there, as in kube
    assert events == [] and 1.9 < time.monotonic() - started < 10, "idle, open until the server's timeout"
    context = ssl.create_default_context(cafile=apiserver.ca_file)
    with socket.create_connection((apiserver.host, apiserver.port), timeout=10) as raw_sock, \
            context.wrap_socket(raw_sock, server_hostname="127.0.0.1") as sock:
        sock.sendall(f"GET /api/v1/namespaces/default/configmaps?watch=1 HTTP/1.1\r\nHost: x\r\n"
                     f"Authorization: Bearer {apiserver.admin_token}\r\n\r\n".encode())
        assert sock.recv(4096).startswith(b"HTTP/1.1 200 OK")
        wait_for(lambda: apiserver.store.watchers("/configmaps"), timeout=10, what="the watch registered")
    wait_for(lambda: not apiserver.store.watchers("/configmaps"), timeout=10, what="the watch of a gone client ended")


# --- no privilege escalation through RBAC writes (kube's policy-based RBAC storage) --------------------------

RBAC_API = "/apis/rbac.authorization.k8s.io/v1"
ALICE = 'user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:'


def _cluster_role(name: str, *rules: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": list(rules), **extra}


def _binding(kind: str, name: str, role_kind: str, role: str, user: str, namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}


_grants = itertools.count()


def _grant(apiserver: APIServer, user: str, *rules: dict[str, Any], namespace: str = "") -> None:
    """``rules`` for ``user``: cluster-wide, or in ``namespace`` (a RoleBinding of a ClusterRole)."""
    name = f"{user}-{next(_grants)}"
    apiserver.create(_cluster_role(name, *rules))
    apiserver.create(_binding("RoleBinding", name, "ClusterRole", name, user, namespace) if namespace
                     else _binding("ClusterRoleBinding", name, "ClusterRole", name, user))


RBAC_WRITES = {"apiGroups": ["rbac.authorization.k8s.io"],
               "resources": ["roles", "clusterroles", "rolebindings", "clusterrolebindings"],
               "verbs": ["create", "update", "get"]}
GET_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}


@contextlib.contextmanager
def _as(apiserver: APIServer, user: str) -> Iterator[Kube]:
    kube = Kube.of(apiserver, token=apiserver.issue_user_token(user))
    try:
        yield kube
    finally:
        kube.close()


@pytest.fixture
def alice(apiserver: APIServer) -> Iterator[Kube]:
    """A user who may write roles and bindings, and holds nothing else."""
    _grant(apiserver, "alice", RBAC_WRITES)
    with _as(apiserver, "alice") as kube:
        yield kube


def test_creating_bindings_alone_cannot_bind_cluster_admin(apiserver: APIServer, alice: Kube):
    reply = alice.post(f"{RBAC_API}/clusterrolebindings",
                       _binding("ClusterRoleBinding", "mine", "ClusterRole", "cluster-admin", "alice"))
    assert (reply.status, reply.body["reason"], reply.body["details"]) == (
        403, "Forbidden", {"name": "mine", "group": "rbac.authorization.k8s.io", "kind": "clusterrolebindings"})
    assert reply.body["message"] == (
        f'clusterrolebindings.rbac.authorization.k8s.io "mine" is forbidden: {ALICE}\n'
        '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}')
    reply = alice.post(f"{RBAC_API}/namespaces/default/rolebindings",
                       _binding("RoleBinding", "mine", "ClusterRole", "cluster-admin", "alice", "default"))
    assert reply.status == 403 and ALICE in reply.body["message"], "not even in one namespace"
    assert alice.get("/api/v1/namespaces/default/pods").status == 403, "nothing was granted"


def test_binding_needs_the_bind_verb_on_that_role_or_every_rule_of_it(apiserver: APIServer, alice: Kube):
    apiserver.create(_cluster_role("pod-reader", GET_PODS))
    rb = _binding("RoleBinding", "bob-reads", "ClusterRole", "pod-reader", "bob", "default")
    reply = alice.post(f"{RBAC_API}/namespaces/default/rolebindings", rb)
    assert reply.status == 403 and reply.body["message"].endswith(
        f'{ALICE}\n{{APIGroups:[""], Resources:["pods"], Verbs:["get"]}}')
    _grant(apiserver, "alice", GET_PODS, namespace="default")   # she holds the rules there: she may pass them on
    assert alice.post(f"{RBAC_API}/namespaces/default/rolebindings", rb).status == 201
    crb = _binding("ClusterRoleBinding", "bob-reads", "ClusterRole", "pod-reader", "bob")
    assert alice.post(f"{RBAC_API}/clusterrolebindings", crb).status == 403, "held in default only, not everywhere"
    _grant(apiserver, "alice", {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                                "verbs": ["bind"], "resourceNames": ["pod-reader"]})
    assert alice.post(f"{RBAC_API}/clusterrolebindings", crb).status == 201, "bind on that role by name"
    admin = _binding("ClusterRoleBinding", "bob-admin", "ClusterRole", "cluster-admin", "bob")
    assert alice.post(f"{RBAC_API}/clusterrolebindings", admin).status == 403, "bind names pod-reader only"
    missing = alice.post(f"{RBAC_API}/namespaces/default/rolebindings",
                         _binding("RoleBinding", "x", "Role", "no-such-role", "bob", "default"))
    assert (missing.status, missing.body["message"]) == (
        404, 'roles.rbac.authorization.k8s.io "no-such-role" not found')


def test_a_role_may_grant_only_what_its_writer_holds_unless_she_may_escalate(apiserver: APIServer, alice: Kube):
    _grant(apiserver, "alice", GET_PODS, namespace="default")
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "readers", "namespace": "default"}, "rules": [GET_PODS]}
    assert alice.post(f"{RBAC_API}/namespaces/default/roles", role).status == 201
    apiserver.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ops"}})
    assert alice.post(f"{RBAC_API}/namespaces/ops/roles", {**role, "metadata": {"name": "readers", "namespace": "ops"}}
                      ).status == 403, "held in default only"
    more = {**role, "metadata": {"name": "deleters", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "delete"]}]}
    reply = alice.post(f"{RBAC_API}/namespaces/default/roles", more)
    assert reply.status == 403 and reply.body["message"] == (
        f'roles.rbac.authorization.k8s.io "deleters" is forbidden: {ALICE}\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["list" "delete"]}\n'
        '{APIGroups:[""], Resources:["pods/log"], Verbs:["get" "list" "delete"]}')
    current = alice.get(f"{RBAC_API}/namespaces/default/roles/readers").body
    assert alice.put(f"{RBAC_API}/namespaces/default/roles/readers", {**current, "rules": more["rules"]}
                     ).status == 403, "nor by an update"
    _grant(apiserver, "alice", {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
                                "verbs": ["escalate"]}, namespace="default")
    assert alice.post(f"{RBAC_API}/namespaces/default/roles", more).status == 201


def test_an_aggregation_rule_needs_every_permission(apiserver: APIServer, alice: Kube):
    aggregated = _cluster_role("gathers", aggregationRule={"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]})
    reply = alice.post(f"{RBAC_API}/clusterroles", aggregated)
    assert (reply.status, reply.body["message"]) == (
        403, 'clusterroles.rbac.authorization.k8s.io "gathers" is forbidden: must have cluster-admin privileges to '
             "use the aggregationRule")
    assert alice.post(f"{RBAC_API}/clusterroles", _cluster_role("empty")).status == 201, "no rules: nothing to hold"


def test_the_garbage_collector_s_fields_may_change_on_a_binding_its_writer_could_not_make(apiserver: APIServer,
                                                                                          alice: Kube):
    binding = _binding("ClusterRoleBinding", "bob-admin", "ClusterRole", "cluster-admin", "bob")
    binding["metadata"]["finalizers"] = ["example.com/hold"]
    apiserver.create(binding)
    current = alice.get(f"{RBAC_API}/clusterrolebindings/bob-admin").body
    path = f"{RBAC_API}/clusterrolebindings/bob-admin"
    assert alice.put(path, {**current, "metadata": {**current["metadata"], "finalizers": []}}).status == 200
    current = alice.get(path).body
    assert alice.put(path, {**current, "metadata": {**current["metadata"], "labels": {"a": "b"}}}).status == 403


@pytest.mark.integration
def test_without_rbac_nothing_is_checked(tmp_path: Path):
    with APIServer(ServerOptions(tls=True, authorization="AlwaysAllow")) as server, _as(server, "alice") as alice:
        assert alice.post(f"{RBAC_API}/clusterrolebindings",
                          _binding("ClusterRoleBinding", "mine", "ClusterRole", "cluster-admin", "alice")).status == 201


# --- owner references (admission.py) -------------------------------------------------------------------------

def test_owner_references_need_delete_on_update_not_on_create(apiserver: APIServer):
    """As upstream's gc admission: who creates an object may give it owners; changing the owners of one needs
    delete on it; blocking an owner's deletion needs update on its finalizers, on a create too."""
    _grant(apiserver, "alice", {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get", "update"]},
           namespace="default")
    owner = apiserver.create(configmap("owner"))
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    with _as(apiserver, "alice") as alice:
        owned = {**configmap("owned"), "metadata": {"name": "owned", "ownerReferences": [ref]}}
        created = alice.post("/api/v1/namespaces/default/configmaps", owned)
        assert created.status == 201, created.body
        reply = alice.put("/api/v1/namespaces/default/configmaps/owned",
                          {**created.body, "metadata": {**created.body["metadata"], "ownerReferences": []}})
        assert reply.status == 403 and "cannot set an ownerRef on a resource you can't delete" in reply.body["message"]
        blocking = {**configmap("blocking"), "metadata": {"name": "blocking",
                                                          "ownerReferences": [{**ref, "blockOwnerDeletion": True}]}}
        reply = alice.post("/api/v1/namespaces/default/configmaps", blocking)
        assert reply.status == 403 and "cannot set blockOwnerDeletion" in reply.body["message"]


# --- bodies the reviews cannot decode ------------------------------------------------------------------------

@pytest.mark.parametrize(("content_type", "body", "code"), [
    ("application/vnd.kubernetes.protobuf", b"k8s\x00\x0a\x04\x0a\x02v1", 400),   # no kind this server reads
    ("application/vnd.kubernetes.protobuf", b"not protobuf at all", 400),
    ("application/cbor", b"\xa0", 415),
])
def test_an_undecodable_review_is_400_an_unknown_media_type_415(apiserver: APIServer, content_type: str,
                                                                body: bytes, code: int):
    """As kube-apiserver answers: a body in an accepted media type that does not decode is a bad request."""
    context = ssl.create_default_context(cafile=apiserver.ca_file)
    request = urllib.request.Request(apiserver.url + "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                                     data=body, method="POST", headers={
                                         "Content-Type": content_type,
                                         "Authorization": f"Bearer {apiserver.admin_token}"})
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, context=context, timeout=10)
    assert info.value.code == code
    if code == 400:
        assert json.loads(info.value.read())["message"].startswith(
            "the object provided is unrecognized (must be of type SelfSubjectAccessReview)")


def test_a_token_bound_to_a_pod_dies_with_the_pod(apiserver: APIServer, kubectl: Kubectl):
    """Issue 44: bound service-account tokens outlived their pod. As kube's: ``kubectl create token
    --bound-object-kind Pod`` gives a token that authenticates while that pod (that uid) exists."""
    apply(kubectl, POLICY)
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ops}\n"
           "spec: {serviceAccountName: %s, containers: [{name: c, image: x}]}\n")
    apply(kubectl, pod % "bot")
    token = kubectl.ok("create", "token", "bot", "-n", "ops", "--bound-object-kind", "Pod",
                       "--bound-object-name", "p").strip()
    assert raw(apiserver, "/api/v1/namespaces/default/configmaps", token)[0] == 200
    kubectl.ok("delete", "pod", "p", "-n", "ops", "--wait=false")
    wait_for(lambda: kubectl.run("get", "pod", "p", "-n", "ops").returncode != 0, timeout=10, what="the pod gone")
    assert raw(apiserver, "/version", token) == (401, UNAUTHORIZED), "revoked with its pod"
    apply(kubectl, pod % "bot")   # the same name again: another pod (uid), which the token was not bound to
    assert raw(apiserver, "/version", token) == (401, UNAUTHORIZED)
    missing = kubectl.run("create", "token", "bot", "-n", "ops", "--bound-object-kind", "Pod",
                          "--bound-object-name", "nope")
    assert missing.returncode != 0 and 'pods "nope" not found' in missing.stderr
    apply(kubectl, (pod % "default").replace("name: p,", "name: other,"))
    other = kubectl.run("create", "token", "bot", "-n", "ops", "--bound-object-kind", "Pod",
                        "--bound-object-name", "other")
    assert other.returncode != 0
    assert 'cannot bind token for serviceaccount "bot" to pod running with different serviceaccount name.' in \
        other.stderr
