"""Credential plugins run for real (runtime/client/exec_credential.py), against the embedded API server with TLS
and token authentication: the client's requests carry the plugin's token; the plugin runs once while its credential
is valid, again when it expires and when the server answers 401 to it (the request then succeeds); what it is told
(``KUBERNETES_EXEC_INFO``) and given (no stdin; on a terminal, the terminal); and its failures said plainly: a
missing command with its installHint, a non-zero exit with its stderr, a plugin that never ends. A certificate from
the plugin is what the client's connections present, a new one on every connection. An oidc auth-provider's
expired id-token is refreshed at its issuer's token endpoint (a small issuer served here)."""

from __future__ import annotations

import base64
import contextlib
import datetime
import json
import os
import ssl
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from mxjob_controller.local.apiserver.server import ServerOptions
from mxjob_controller.runtime.client import NAMESPACES, Client, ClientConfig, Unauthorized, load_kubeconfig
from mxjob_controller.runtime.client import exec_credential as exec_module
from mxjob_controller.runtime.client.auth_provider import OidcToken
from mxjob_controller.runtime.client.config import CredentialError
from mxjob_controller.runtime.client.exec_credential import ExecPlugin, ExecToken
from mxjob_controller.runtime.tls import TLSMaterial
from tests.runtime.client.kubeconfigs import exec_plugin, runs
from tests.support import wait_for
from tests.terminal import run_in_terminal

pytestmark = pytest.mark.integration

V1 = "client.authentication.k8s.io/v1"
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def server_options():
    return ServerOptions(tls=True)


def exec_kubeconfig(apiserver, path: Path, **entry: object) -> Path:
    """The server's kubeconfig, its user authenticating with the plugin ``entry``."""
    doc = apiserver.kubeconfig()
    doc["users"][0]["user"] = {"exec": {"apiVersion": V1, "interactiveMode": "IfAvailable", **entry}}
    path.write_text(yaml.safe_dump(doc))
    return path


def client_of(kubeconfig: Path) -> Client:
    return Client(load_kubeconfig([kubeconfig]), component="exec-tests")


def test_the_plugins_token_is_used_until_it_expires_then_the_plugin_runs_again(apiserver, tmp_path):
    plugin = exec_plugin(tmp_path, [apiserver.admin_token], ttl=2)
    config = exec_kubeconfig(apiserver, tmp_path / "config", command="./plugin", provideClusterInfo=True)
    with client_of(config) as client:
        for _ in range(5):
            client.get(NAMESPACES, "default")
        assert runs(plugin) == 1, "a valid credential is cached"
        wait_for(lambda: client.get(NAMESPACES, "default") and runs(plugin) >= 2, timeout=10,
                 what="the plugin run again once its credential expired")
    info = json.loads((tmp_path / "plugin.info").read_text())
    assert info["apiVersion"] == V1 and info["kind"] == "ExecCredential"
    assert info["spec"]["interactive"] is False   # pytest's stdin is no terminal
    assert info["spec"]["cluster"]["server"] == apiserver.url
    assert info["spec"]["cluster"]["certificate-authority-data"]
    assert (tmp_path / "plugin.stdin").read_text() == "''", "a plugin that cannot ask gets an empty stdin"


def test_a_401_runs_the_plugin_again_and_the_request_is_sent_again_once(apiserver, tmp_path):
    plugin = exec_plugin(tmp_path, ["revoked-token", apiserver.admin_token])
    config = exec_kubeconfig(apiserver, tmp_path / "config", command=str(tmp_path / "plugin"))
    with client_of(config) as client:
        assert client.get(NAMESPACES, "default")["metadata"]["name"] == "default"
        assert runs(plugin) == 2
        client.get(NAMESPACES, "default")
        assert runs(plugin) == 2
    refused = exec_plugin(tmp_path, ["bad-1", "bad-2", "bad-3"], name="refused")
    config = exec_kubeconfig(apiserver, tmp_path / "refused-config", command=str(refused))
    with client_of(config) as client, pytest.raises(Unauthorized):
        client.get(NAMESPACES, "default")
    assert runs(refused) == 2, "one new credential per call, not a loop"


def test_a_missing_command_names_the_user_the_command_and_the_install_hint(apiserver, tmp_path):
    config = exec_kubeconfig(apiserver, tmp_path / "config", command="no-such-auth-plugin",
                             installHint="Install it with: brew install no-such-auth-plugin")
    source = load_kubeconfig([config]).token
    with pytest.raises(CredentialError) as caught:
        source()
    assert str(caught.value) == ("user 'mxjob-local': the exec plugin's command 'no-such-auth-plugin' was not found "
                                 "in PATH\nInstall it with: brew install no-such-auth-plugin")
    config = exec_kubeconfig(apiserver, tmp_path / "config", command="./bin/missing")
    with pytest.raises(CredentialError, match=f"command '{tmp_path}/bin/missing' was not found$"):
        load_kubeconfig([config]).token()


def test_a_failing_or_endless_plugin_is_an_error_with_its_exit_code_and_stderr(apiserver, tmp_path, monkeypatch):
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\necho 'step 1' >&2\necho 'error: SSO session expired; run aws sso login' >&2\n"
                       "exit 3\n")
    failing.chmod(0o755)
    config = exec_kubeconfig(apiserver, tmp_path / "config", command=str(failing))
    with client_of(config) as client, pytest.raises(CredentialError) as caught:
        client.get(NAMESPACES, "default")
    assert f"user 'mxjob-local': the exec plugin '{failing}' exited with code 3" in str(caught.value)
    assert str(caught.value).endswith("step 1\nerror: SSO session expired; run aws sso login")

    endless = tmp_path / "endless"
    endless.write_text("#!/bin/sh\nexec sleep 60\n")
    endless.chmod(0o755)
    monkeypatch.setattr(exec_module, "RUN_TIMEOUT", 0.5)
    source = load_kubeconfig([exec_kubeconfig(apiserver, tmp_path / "config", command=str(endless))]).token
    with pytest.raises(CredentialError, match=r"did not finish within 0\.5s"):
        source()

    printing = tmp_path / "printing"
    printing.write_text("#!/bin/sh\necho '{\"kind\": \"Status\"}'\n")
    printing.chmod(0o755)
    source = load_kubeconfig([exec_kubeconfig(apiserver, tmp_path / "config", command=str(printing))]).token
    with pytest.raises(CredentialError, match="of kind 'Status', not ExecCredential"):
        source()


def _client_certificates(names: tuple[str, ...]) -> tuple[bytes, list[tuple[str, str]]]:
    """A CA's PEM and, for each of ``names``, a client certificate (CN the name) it signed, with its key, in PEM."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "client-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True).sign(ca_key, hashes.SHA256()))
    pairs = []
    for name in names:
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        pairs.append((cert.public_bytes(serialization.Encoding.PEM).decode(),
                      key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()).decode()))
    return ca.public_bytes(serialization.Encoding.PEM), pairs


class _WhoAmI(BaseHTTPRequestHandler):
    """Answers every GET with the common name of the client certificate its connection presented (``no-certificate``
    for a connection that presented none)."""

    protocol_version = "HTTP/1.1"   # kept-alive connections: a new certificate must not wait for them to close

    def do_GET(self) -> None:
        peer = self.connection.getpeercert()
        name = dict(item[0] for item in peer["subject"])["commonName"] if peer else "no-certificate"
        data = json.dumps({"kind": "Namespace", "metadata": {"name": name}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def _whoami(client_ca: bytes, verify_mode: ssl.VerifyMode) -> Iterator[tuple[TLSMaterial, int]]:
    """A TLS :class:`_WhoAmI` server trusting ``client_ca`` for client certificates: its serving material and port."""
    serving = TLSMaterial("127.0.0.1")
    context = serving.server_context()
    context.verify_mode = verify_mode
    context.load_verify_locations(cadata=client_ca.decode())
    server = ThreadingHTTPServer(("127.0.0.1", 0), _WhoAmI)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="whoami",
                              daemon=True)
    thread.start()
    try:
        yield serving, server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
        serving.close()


def test_the_plugins_client_certificate_is_presented_and_a_new_one_replaces_it_on_every_connection(tmp_path):
    client_ca, pairs = _client_certificates(("first", "second"))
    plugin = tmp_path / "plugin"
    answers = [{"apiVersion": V1, "kind": "ExecCredential",
                "status": {"clientCertificateData": cert, "clientKeyData": key, "expirationTimestamp": stamp}}
               for (cert, key), stamp in zip(pairs, ["__SOON__", None], strict=True)]
    plugin.write_text(f"""#!{sys.executable}
import datetime, json, os
counter = {str(tmp_path / "plugin.runs")!r}
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
answer = {answers!r}[min(n, 2) - 1]
if answer["status"]["expirationTimestamp"] == "__SOON__":
    soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
    answer["status"]["expirationTimestamp"] = soon.isoformat()
else:
    del answer["status"]["expirationTimestamp"]
open(counter, "w").write(str(n))
print(json.dumps(answer))
""")
    plugin.chmod(0o755)
    source = ExecToken(ExecPlugin(V1, str(plugin), interactive_mode="Never"), "u")
    with _whoami(client_ca, ssl.CERT_REQUIRED) as (serving, port), \
            Client(ClientConfig(host=f"https://127.0.0.1:{port}", ca_file=str(serving.ca_file), token=source),
                   component="exec-tests") as client:
        pem = Path(source.client_certificate() or "")
        assert pem.stat().st_mode & 0o077 == 0
        assert client.request("GET", "/api/v1/namespaces/x")["metadata"]["name"] == "first"
        assert client.request("GET", "/api/v1/namespaces/x")["metadata"]["name"] == "first"
        wait_for(lambda: client.request("GET", "/api/v1/namespaces/x")["metadata"]["name"] == "second",
                 timeout=10, what="the second certificate presented once the first expired")
        assert pem.read_text() == pairs[1][0].rstrip("\n") + "\n" + pairs[1][1].rstrip("\n") + "\n"
        assert source.runs == 2


def _jwt(claims: dict) -> str:
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJub25lIn0.{body}.sig"


class _Issuer(BaseHTTPRequestHandler):
    """An OIDC issuer: its discovery document and a token endpoint granting refresh_token requests."""

    asked: ClassVar[list[tuple[str, str, str]]] = []   # (path, Authorization, body) of each token request

    def do_GET(self) -> None:
        host = self.headers["Host"]
        self._answer(200, {"issuer": f"http://{host}", "token_endpoint": f"http://{host}/token"}
                     if self.path == "/.well-known/openid-configuration" else {"error": "not found"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        self.asked.append((self.path, self.headers.get("Authorization", ""), body))
        fields = parse_qs(body)
        if fields.get("refresh_token") != ["refresh-1"]:
            self._answer(400, {"error": "invalid_grant", "error_description": "unknown refresh token"})
            return
        self._answer(200, {"id_token": _jwt({"exp": 4102444800, "n": 2}), "refresh_token": "refresh-2"})

    def _answer(self, code: int, doc: dict) -> None:
        data = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def issuer():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Issuer)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="oidc-issuer",
                              daemon=True)
    thread.start()
    _Issuer.asked = []
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_an_expired_oidc_id_token_is_refreshed_at_the_issuers_token_endpoint(issuer):
    expired = _jwt({"exp": 1000, "n": 1})
    config = {"idp-issuer-url": issuer, "client-id": "kube", "client-secret": "s3cret", "id-token": expired,
              "refresh-token": "refresh-1"}
    source = OidcToken(dict(config), "u", None)
    fresh = source()
    assert fresh == _jwt({"exp": 4102444800, "n": 2})
    assert source() == fresh, "a valid id-token is not refreshed"
    assert len(_Issuer.asked) == 1
    path, authorization, body = _Issuer.asked[0]
    assert path == "/token" and authorization == "Basic " + base64.b64encode(b"kube:s3cret").decode()
    assert parse_qs(body) == {"grant_type": ["refresh_token"], "refresh_token": ["refresh-1"]}
    # A 401 to it refreshes again, now with the refresh-token the issuer gave (refused here: said plainly).
    with pytest.raises(CredentialError, match="the token endpoint answered 400: invalid_grant unknown refresh token"):
        source.refresh(fresh)
    assert parse_qs(_Issuer.asked[1][2])["refresh_token"] == ["refresh-2"]


def test_on_a_terminal_an_interactive_plugin_shares_it_and_is_told_so(tmp_path):
    plugin = tmp_path / "plugin"
    plugin.write_text(f"""#!{sys.executable}
import json, os, sys
spec = json.loads(os.environ["KUBERNETES_EXEC_INFO"])["spec"]
open({str(tmp_path / "seen")!r}, "w").write(json.dumps({{"interactive": spec["interactive"], "stdin": os.isatty(0)}}))
print("To sign in, open https://login.example/device and enter ABCD-1234", file=sys.stderr)
print(json.dumps({{"apiVersion": {V1!r}, "kind": "ExecCredential", "status": {{"token": "device-token"}}}}))
""")
    plugin.chmod(0o755)
    program = ("from mxjob_controller.runtime.client.exec_credential import ExecPlugin, ExecToken\n"
               f"source = ExecToken(ExecPlugin({V1!r}, {str(plugin)!r}, interactive_mode='Always'), 'u')\n"
               "print('got', source())\n")
    run = run_in_terminal([sys.executable, "-c", program], columns=100, rows=10, cwd=REPO,
                          env=dict(os.environ), timeout=30)
    assert run.returncode == 0, run.raw
    assert run.rows == ["To sign in, open https://login.example/device and enter ABCD-1234", "got device-token"]
    assert json.loads((tmp_path / "seen").read_text()) == {"interactive": True, "stdin": True}


def test_a_certificate_a_later_run_gives_is_presented_though_the_first_run_gave_a_token_only(tmp_path):
    """The first credential is a bearer token only (the connections present no certificate); the plugin's next
    run gives a client certificate: every connection from then on presents it, as client-go's exec authenticator
    does (it re-reads the certificate on each new TLS connection)."""
    client_ca, pairs = _client_certificates(("later",))
    plugin = tmp_path / "plugin"
    first = {"apiVersion": V1, "kind": "ExecCredential", "status": {"token": "t1", "expirationTimestamp": "__SOON__"}}
    second = {"apiVersion": V1, "kind": "ExecCredential",
              "status": {"clientCertificateData": pairs[0][0], "clientKeyData": pairs[0][1]}}
    plugin.write_text(f"""#!{sys.executable}
import datetime, json, os
counter = {str(tmp_path / "plugin.runs")!r}
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
answer = {first!r} if n == 1 else {second!r}
if "expirationTimestamp" in answer["status"]:
    soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
    answer["status"]["expirationTimestamp"] = soon.isoformat()
open(counter, "w").write(str(n))
print(json.dumps(answer))
""")
    plugin.chmod(0o755)
    source = ExecToken(ExecPlugin(V1, str(plugin), interactive_mode="Never"), "u")
    with _whoami(client_ca, ssl.CERT_OPTIONAL) as (serving, port), \
            Client(ClientConfig(host=f"https://127.0.0.1:{port}", ca_file=str(serving.ca_file), token=source),
                   component="exec-tests") as client:
        assert client.request("GET", "/api/v1/namespaces/x")["metadata"]["name"] == "no-certificate"
        wait_for(lambda: client.request("GET", "/api/v1/namespaces/x")["metadata"]["name"] == "later",
                 timeout=10, what="the later run's certificate presented")
        answer = client.stream("/api/v1/namespaces/x")   # a stream's connection (urllib3's pool) presents it too
        try:
            assert json.loads(answer.data)["metadata"]["name"] == "later"
        finally:
            answer.release_conn()
        assert source.runs == 2
