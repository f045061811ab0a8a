"""What a credential plugin's ``exec`` entry and its ``ExecCredential`` may be (runtime/client/exec_credential.py),
as pure functions: v1 and v1beta1 accepted, bad JSON, a wrong kind or version, no token and no certificate, half a
certificate refused; ``KUBERNETES_EXEC_INFO``; ``interactiveMode``; and how the kubeconfig loader builds the token
sources of ``exec`` and ``auth-provider`` users (nothing runs: a plugin runs when a token is asked for)."""

from __future__ import annotations

import base64
import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from mxjob_controller.runtime.client import ConfigError, load_kubeconfig
from mxjob_controller.runtime.client.auth_provider import DelegatedAuthProvider, OidcToken, jwt_expiry
from mxjob_controller.runtime.client.config import CredentialError, RefreshableToken
from mxjob_controller.runtime.client.errors import TransportError
from mxjob_controller.runtime.client.exec_credential import (
    ExecPlugin,
    ExecToken,
    exec_info,
    interactive_for,
    parse_exec_credential,
    parse_plugin,
)
from tests.runtime.client.kubeconfigs import kubeconfig_doc

V1, V1BETA1 = "client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1"


def credential(version: str = V1, kind: str = "ExecCredential", **status: object) -> str:
    return json.dumps({"apiVersion": version, "kind": kind, "status": status})


@pytest.mark.parametrize("version", [V1, V1BETA1])
def test_a_token_credential_of_either_version_with_its_expiry(version):
    got = parse_exec_credential(credential(version, token="t0k", expirationTimestamp="2030-01-02T03:04:05Z"),
                                version, "u")
    assert got.token == "t0k" and got.client_certificate is None
    assert got.expires == 1893553445.0
    assert not got.expired(1893553444.0) and got.expired(1893553445.0)
    fractional = parse_exec_credential(
        credential(version, token="t", expirationTimestamp="2030-01-02T03:04:05.5+00:00"), version, "u")
    assert fractional.expires == 1893553445.5
    forever = parse_exec_credential(credential(version, token="t"), version, "u")
    assert forever.expires is None and not forever.expired(1e12)


def test_a_certificate_credential():
    got = parse_exec_credential(credential(clientCertificateData="CERT", clientKeyData="KEY"), V1, "u")
    assert (got.token, got.client_certificate, got.client_key) == (None, "CERT", "KEY")


@pytest.mark.parametrize(("output", "message"), [
    ("not json", "is not JSON"),
    ("[1]", "not a JSON object"),
    (credential(kind="Config", token="t"), "of kind 'Config', not ExecCredential"),
    (credential(V1BETA1, token="t"), "configured to use API version client.authentication.k8s.io/v1, it returned "
                                     "'client.authentication.k8s.io/v1beta1'"),
    (json.dumps({"apiVersion": V1, "kind": "ExecCredential"}), "has no status"),
    (credential(), "neither a token nor a client certificate"),
    (credential(token=""), "neither a token nor a client certificate"),
    (credential(clientCertificateData="CERT"), "must both be present"),
    (credential(clientKeyData="KEY", token="t"), "must both be present"),
    (credential(token=5), "status.token must be a string"),
    (credential(token="t", expirationTimestamp="tomorrow"), "not an RFC 3339 time"),
    (credential(token="t", expirationTimestamp="2030-01-02T03:04:05"), "has no time zone"),
])
def test_bad_credentials_are_refused_naming_the_user(output, message):
    with pytest.raises(CredentialError, match="user 'eks'") as caught:
        parse_exec_credential(output, V1, "eks")
    assert message in str(caught.value)
    assert isinstance(caught.value, ConfigError) and isinstance(caught.value, TransportError)


def test_plugin_entries_checked_as_clientcmd_checks_them():
    plugin = parse_plugin({"apiVersion": V1, "command": "aws", "args": ["eks", "get-token"], "interactiveMode": "Never",
                           "env": [{"name": "AWS_PROFILE", "value": "prod"}], "installHint": "install the aws CLI",
                           "provideClusterInfo": True}, "u")
    assert plugin == ExecPlugin(V1, "aws", ("eks", "get-token"), (("AWS_PROFILE", "prod"),), "install the aws CLI",
                                "Never", True)
    assert parse_plugin({"apiVersion": V1BETA1, "command": "x"}, "u").interactive_mode == "IfAvailable"
    assert parse_plugin({"apiVersion": V1BETA1, "command": "./bin/x"}, "u", lambda c: "/base/" + c).command == \
        "/base/./bin/x"
    assert parse_plugin({"apiVersion": V1BETA1, "command": "x"}, "u", lambda c: "/base/" + c).command == "x"
    for entry, message in [
        ({"command": "x"}, "apiVersion '' is not supported"),
        ({"apiVersion": "client.authentication.k8s.io/v1alpha1", "command": "x"}, "removed in Kubernetes 1.24"),
        ({"apiVersion": V1, "interactiveMode": "Never"}, "command is required"),
        ({"apiVersion": V1, "command": "x"}, "interactiveMode must be specified"),
        ({"apiVersion": V1, "command": "x", "interactiveMode": "Sometimes"}, "invalid interactiveMode 'Sometimes'"),
        ({"apiVersion": V1BETA1, "command": "x", "args": "a b"}, "args must be a list"),
        ({"apiVersion": V1BETA1, "command": "x", "env": [{"value": "v"}]}, "every env entry needs a name"),
    ]:
        with pytest.raises(ConfigError, match="user 'u': exec") as caught:
            parse_plugin(entry, "u")
        assert message in str(caught.value)


def test_exec_info_and_interactive_mode():
    plugin = ExecPlugin(V1, "x", provide_cluster_info=True)
    cluster = {"server": "https://k:6443", "certificate-authority-data": "Q0E="}
    assert json.loads(exec_info(plugin, False, cluster)) == {
        "apiVersion": V1, "kind": "ExecCredential", "spec": {"interactive": False, "cluster": cluster}}
    assert json.loads(exec_info(ExecPlugin(V1BETA1, "x"), True, cluster)) == {
        "apiVersion": V1BETA1, "kind": "ExecCredential", "spec": {"interactive": True}}
    assert interactive_for("Never", True, "u") is False
    assert interactive_for("IfAvailable", True, "u") is True
    assert interactive_for("IfAvailable", False, "u") is False
    assert interactive_for("Always", True, "u") is True
    with pytest.raises(CredentialError, match="user 'u': the exec plugin requires an interactive terminal"):
        interactive_for("Always", False, "u")


def test_the_kubeconfig_loader_builds_exec_and_auth_provider_sources(tmp_path):
    ca = b"-----BEGIN CERTIFICATE-----\n"
    (tmp_path / "ca.pem").write_bytes(ca)
    doc = kubeconfig_doc("https://k:6443", ca="ca.pem", user={"exec": {
        "apiVersion": V1, "command": "bin/plugin", "interactiveMode": "Never", "provideClusterInfo": True}})
    doc["clusters"][0]["cluster"]["extensions"] = [
        {"name": "client.authentication.k8s.io/exec", "extension": {"audience": "k8s"}}]
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(doc))
    source = load_kubeconfig([path]).token
    assert isinstance(source, ExecToken) and isinstance(source, RefreshableToken)
    assert source.plugin.command == str(tmp_path / "bin/plugin")   # relative to the kubeconfig's folder
    assert source.runs == 0                                          # loading runs nothing
    info = json.loads(exec_info(source.plugin, False, source._cluster))["spec"]["cluster"]
    assert info == {"server": "https://k:6443", "certificate-authority-data": base64.b64encode(ca).decode(),
                    "config": {"audience": "k8s"}}

    oidc = {"name": "oidc", "config": {"idp-issuer-url": "https://idp", "client-id": "kube", "id-token": "a.b.c"}}
    path.write_text(yaml.safe_dump(kubeconfig_doc("https://k", user={"auth-provider": oidc})))
    assert isinstance(load_kubeconfig([path]).token, OidcToken)
    gcp = {"name": "gcp", "config": {"access-token": "ya29"}}
    path.write_text(yaml.safe_dump(kubeconfig_doc("https://k", user={"auth-provider": gcp})))
    assert isinstance(load_kubeconfig([path]).token, DelegatedAuthProvider)

    for user, message in [
        ({"exec": {"apiVersion": V1BETA1, "command": "x"}, "auth-provider": gcp}, "cannot be used together"),
        ({"auth-provider": {"name": "keystone"}}, "unknown auth-provider 'keystone'"),
        ({"auth-provider": {"name": "oidc", "config": {"client-id": "x"}}}, "needs idp-issuer-url"),
    ]:
        path.write_text(yaml.safe_dump(kubeconfig_doc("https://k", user=user)))
        with pytest.raises(ConfigError, match=message):
            load_kubeconfig([path])


def _jwt(claims: dict) -> str:
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJub25lIn0.{body}.sig"


def test_an_oidc_id_token_is_sent_until_its_exp_and_its_expiry_is_read_from_the_jwt():
    assert jwt_expiry(_jwt({"exp": 2000000000, "sub": "ann"})) == 2000000000.0
    assert jwt_expiry(_jwt({"sub": "ann"})) is None
    assert jwt_expiry("opaque") is None
    assert jwt_expiry("a.!!!.c") is None
    token = _jwt({"exp": 2000000000})
    source = OidcToken({"idp-issuer-url": "https://idp", "client-id": "kube", "id-token": token}, "u", None,
                       clock=lambda: 1999999999.0)
    assert source() == token
    expired = OidcToken({"idp-issuer-url": "https://idp", "client-id": "kube", "id-token": token}, "u", None,
                        clock=lambda: 2000000000.0)
    with pytest.raises(CredentialError, match="no refresh-token"):
        expired()


def test_a_plugin_without_a_terminal_in_always_mode_fails_before_running(tmp_path: Path):
    source = ExecToken(ExecPlugin(V1, str(tmp_path / "never-run"), interactive_mode="Always"), "u",
                       stdin_is_terminal=lambda: False)
    with pytest.raises(CredentialError, match="requires an interactive terminal"):
        source()
    assert source.runs == 0


def test_gcp_and_azure_tokens_come_from_the_official_loader_and_an_expired_one_says_what_refreshing_needs():
    def provider(name: str, **config: str) -> DelegatedAuthProvider:
        return DelegatedAuthProvider({"auth-provider": {"name": name, "config": config}}, "u", name)

    assert provider("gcp", **{"access-token": "ya29.a", "expiry": "2100-01-01T00:00:00Z"})() == "ya29.a"
    assert provider("azure", **{"access-token": "az.a", "expires-on": "4102444800"})() == "az.a"
    if not _installed("google.auth"):   # with it, the refresh would ask Google
        with pytest.raises(CredentialError, match="refreshing it needs the 'google-auth' package, not installed; or "
                                                  "use the gke-gcloud-auth-plugin exec plugin"):
            provider("gcp", **{"access-token": "ya29.a", "expiry": "2000-01-01T00:00:00Z"})()
    if not _installed("adal"):
        with pytest.raises(CredentialError, match="needs the 'adal' package, not installed; or use the kubelogin"):
            provider("azure", **{"access-token": "az.a", "expires-on": "1000", "tenant-id": "t",
                                 "refresh-token": "r", "client-id": "c"})()


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:   # its parent package is missing
        return False
