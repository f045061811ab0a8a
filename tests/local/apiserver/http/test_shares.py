"""Each user's share of connections and long-running requests (issue 44, item 3): one user allowed to watch pods in
one namespace cannot lock the others out, and the cluster's administrator always gets in.

Attacked as the issue tried it: watches that are never read, by one user, past the connection cap.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import time
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver.auth.user import ADMIN_NAME
from mxjob_controller.local.apiserver.builtin import PODS
from mxjob_controller.local.apiserver.http.server import LONG_RUNNING_SHARE
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.support import wait_for

pytestmark = pytest.mark.integration
TEAM_PODS = "/api/v1/namespaces/team/pods"


def _grant_watch(api: APIServer, user: str, namespace: str = "team") -> None:
    """A Role that may only get, list and watch pods in ``namespace``, bound to ``user``."""
    api.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": f"{user}-pods", "namespace": namespace},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]})
    api.create({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": f"{user}-pods", "namespace": namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{user}-pods"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})


def _connect(api: APIServer) -> socket.socket:
    """A TLS connection to ``api``, as every client of ``local up`` makes one."""
    context = ssl.create_default_context(cafile=api.ca_file)
    return context.wrap_socket(socket.create_connection((api.host, api.port), timeout=10), server_hostname=api.host)


def _watch(api: APIServer, token: str) -> socket.socket:
    s = _connect(api)
    s.sendall(f"GET {TEAM_PODS}?watch=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    return s


def _kubectl_get_ns(kubeconfig: Path, tmp_path: Path) -> float:
    """How long the administrator's ``kubectl get ns`` took (it must succeed and list ``team``)."""
    started = time.monotonic()
    out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "--cache-dir", str(tmp_path / "cache"), "get",
                          "ns"], check=False, capture_output=True, text=True, timeout=30)
    took = time.monotonic() - started
    assert out.returncode == 0, out.stderr
    assert "team" in out.stdout
    return took


def _status_of(s: socket.socket) -> int:
    head = b""
    while b"\r\n" not in head:
        chunk = s.recv(4096)
        assert chunk, "closed without an answer"
        head += chunk
    return int(head.split(b" ", 2)[1])


def test_2100_unread_watches_of_one_user_leave_the_admin_answered_within_a_second(tmp_path: Path):
    """2,100 watches by one user, none ever read, on a server capped at 2,048 connections: the user holds at most
    its share (256) of long-running requests, the rest are refused 429 as APF refuses past a share, another user's
    watch still gets in, and the administrator's ``kubectl get ns`` answers within a second."""
    with APIServer(ServerOptions(tls=True)) as api:
        assert api._http is not None
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        _grant_watch(api, "mallory")
        _grant_watch(api, "bob")
        mallory = api.issue_user_token("mallory")
        share = api.options.max_connections // LONG_RUNNING_SHARE
        kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
        baseline = _kubectl_get_ns(kubeconfig, tmp_path)   # and its discovery cached, as for any later run
        held: list[socket.socket] = []
        try:
            cpu = time.process_time()
            for _ in range(2100):
                held.append(_watch(api, mallory))
            # Every request answered or streaming: mallory holds its share, never more.
            wait_for(lambda: api._http.long_running_held().get("mallory") == share, timeout=60,
                     what="mallory's share of watches held")
            spent = time.process_time() - cpu
            assert api._http.connection_count() <= api.options.max_connections
            assert len(api.store.watchers(PODS.storage_key)) == share
            # This process's CPU (the server's, and the clients' TLS handshakes) per attempt: cheap refusals.
            assert spent / 2100 < 0.010, f"{spent:.2f}s of CPU for 2,100 watches"

            with _watch(api, api.issue_user_token("bob")) as other:   # another user is not locked out
                assert _status_of(other) == 200
            refused = _watch(api, mallory)   # and mallory's next is kube's refusal past a share
            held.append(refused)
            answer = refused.recv(4096)
            assert answer.startswith(b"HTTP/1.1 429 ") and b"\r\nRetry-After: 1\r\n" in answer
            assert answer.endswith(b"Too many requests, please try again later.\n")

            since = time.time()
            took = _kubectl_get_ns(kubeconfig, tmp_path)
            # The server's own part (the audit log's time for each of kubectl's requests) is the must-hold, at any
            # load; kubectl's whole run is too on a quiet machine (a busy one slows its start: the bound is then
            # twice its run before the attack).
            served = sum(r.elapsed for r in api.audit.records(user=ADMIN_NAME, since=since))
            print(f"kubectl get ns: {took:.3f}s (before the attack {baseline:.3f}s), served in {served:.3f}s; "
                  f"CPU per watch attempt: {spent / 2100 * 1000:.2f} ms")
            assert served <= 1.0, f"the server took {served:.2f}s to answer kubectl"
            assert took <= max(1.0, 2 * baseline), f"kubectl get ns took {took:.2f}s ({baseline:.2f}s before)"
        finally:
            for s in held:
                s.close()


def test_past_the_cap_the_system_takes_the_place_of_the_heaviest_users_watch():
    """Every connection serving a watch of ordinary users: the administrator's request takes the place of the
    oldest watch of the user holding the most (its client resumes), not the other user's, and is answered."""
    with APIServer(ServerOptions(tls=True, max_connections=24)) as api:
        assert api._http is not None
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
        _grant_watch(api, "mallory")
        _grant_watch(api, "bob")
        tokens = {user: api.issue_user_token(user) for user in ("mallory", "bob")}
        held = {"mallory": [], "bob": []}
        try:
            for user, count in (("bob", 2), ("mallory", 3)):   # the share is 24 // 8 = 3
                for _ in range(count):
                    s = _watch(api, tokens[user])
                    assert _status_of(s) == 200
                    held[user].append(s)
            fillers = []   # the rest of the cap: requests that stay in progress (a body that never comes)
            for _ in range(api.options.max_connections - 5):
                f = _connect(api)
                f.sendall(f"POST /api/v1/namespaces/team/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                          f"{api.admin_token}\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n"
                          .encode())
                fillers.append(f)
            wait_for(lambda: api._http.connection_count() == api.options.max_connections, what="the cap reached")
            # ... and every filler's headers read (a connection still sending them serves no request: it would be
            # the one to go)
            wait_for(lambda: api._http.serving_count() == api.options.max_connections, what="every one serving")
            try:
                with _connect(api) as admin:
                    admin.sendall(f"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                                  f"{api.admin_token}\r\n\r\n".encode())
                    assert _status_of(admin) == 200
                first = held["mallory"][0]
                wait_for(lambda: _closed(first), what="mallory's oldest watch closed")
                wait_for(lambda: api._http.long_running_held() == {"mallory": 2, "bob": 2},
                         what="mallory's closed watch no longer counted, bob's two untouched")
            finally:
                for f in fillers:
                    f.close()
        finally:
            for sockets in held.values():
                for s in sockets:
                    s.close()


def _closed(s: socket.socket) -> bool:
    try:
        s.settimeout(0.05)
        return s.recv(65536) == b""
    except TimeoutError:
        return False
    except OSError:
        return True
