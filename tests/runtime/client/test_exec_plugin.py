"""Credential plugins run for real (runtime/client/exec_credential.py), against the embedded API server with TLS
and token authentication: the client's requests carry the plugin's token; the plugin runs once while its credential
is valid, again when it expires and when the server answers 401 to it (the request then succeeds); what it is told
(``KUBERNETES_EXEC_INFO``, no stdin); and its failures said plainly: a missing command with its installHint, a
non-zero exit with its stderr, a plugin that never ends. A certificate from the plugin is the client's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mxjob_controller.local.apiserver.server import ServerOptions
from mxjob_controller.runtime.client import NAMESPACES, Client, Unauthorized, load_kubeconfig
from mxjob_controller.runtime.client import exec_credential as exec_module
from mxjob_controller.runtime.client.config import CredentialError
from mxjob_controller.runtime.client.exec_credential import ExecToken
from tests.runtime.client.kubeconfigs import exec_plugin, runs
from tests.support import wait_for

pytestmark = pytest.mark.integration

V1 = "client.authentication.k8s.io/v1"


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


def test_a_certificate_from_the_plugin_is_what_the_clients_connections_present(apiserver, tmp_path):
    tls = apiserver.security.tls
    cert, key = tls.ca_pem.decode(), "-----BEGIN PRIVATE KEY-----\nMC4=\n-----END PRIVATE KEY-----"
    plugin = tmp_path / "plugin"
    answer = {"apiVersion": V1, "kind": "ExecCredential",
              "status": {"token": apiserver.admin_token, "clientCertificateData": cert, "clientKeyData": key}}
    plugin.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(answer)}\nEOF\n")
    plugin.chmod(0o755)
    config = load_kubeconfig([exec_kubeconfig(apiserver, tmp_path / "config", command=str(plugin))])
    source = config.token
    assert isinstance(source, ExecToken)
    pem = Path(source.client_certificate() or "")
    assert pem.read_text() == cert.rstrip("\n") + "\n" + key + "\n"
    assert pem.stat().st_mode & 0o077 == 0
    client = Client(config, component="exec-tests")
    try:
        pool_settings = client._rest.pool_manager.connection_pool_kw
        assert pool_settings["cert_file"] == pool_settings["key_file"] == str(pem)
    finally:
        client.close()
