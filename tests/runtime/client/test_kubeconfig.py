"""Kubeconfig files (runtime/client/kubeconfig.py), as client-go's loader reads them: several files merged (the first
wins), paths relative to their file, token files, basic auth and inline client certificates (written 0600), and
what is refused (an exec entry with no apiVersion, a CA with insecure-skip-tls-verify, a missing file or context)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from mxjob_controller.runtime.client import (
    ConfigError,
    FileToken,
    load_config,
    load_kubeconfig,
)
from tests.runtime.client.kubeconfigs import kubeconfig_doc


def test_kubeconfig_merging_relative_paths_and_credentials(tmp_path):
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "token").write_text("file-token\n")
    first = kubeconfig_doc("https://first:6443", ca="certs/ca.pem", user={"tokenFile": "token"})
    second = kubeconfig_doc("https://ignored:6443", user={"token": "ignored"})   # same names: the first file wins
    second["contexts"].append({"name": "other", "context": {"cluster": "c2", "user": "u2"}})
    second["clusters"].append({"name": "c2", "cluster": {"server": "10.0.0.9:443", "insecure-skip-tls-verify": True}})
    second["users"].append({"name": "u2", "user": {"username": "ann", "password": "pw",
                                                   "client-certificate-data": "Y2VydA==",
                                                   "client-key-data": "a2V5"}})
    second["current-context"] = "other"
    (tmp_path / "a").write_text(yaml.safe_dump(first))
    (tmp_path / "b").write_text(yaml.safe_dump(second))
    env = {"KUBECONFIG": f"{tmp_path / 'missing'}{os.pathsep}{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}"}

    config = load_config(env=env)
    assert config.host == "https://first:6443"
    assert config.ca_file == str(tmp_path / "certs" / "ca.pem")
    assert isinstance(config.token, FileToken) and config.authorization() == "Bearer file-token"

    other = load_config(env=env, context="other")
    assert other.host == "https://10.0.0.9:443" and other.verify_tls is False
    assert Path(other.client_cert_file or "").read_bytes() == b"cert"
    assert Path(other.client_key_file or "").read_bytes() == b"key"
    assert os.stat(other.client_key_file or "").st_mode & 0o077 == 0
    assert other.authorization() == "Basic YW5uOnB3"

    with pytest.raises(ConfigError, match="context 'nope' does not exist"):
        load_config(env=env, context="nope")


def test_unsupported_or_contradictory_kubeconfigs_are_refused(tmp_path):
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(kubeconfig_doc("https://x", user={"exec": {"command": "aws"}})))
    with pytest.raises(ConfigError, match="user 'u': exec: apiVersion '' is not supported"):
        load_kubeconfig([path])
    path.write_text(yaml.safe_dump(kubeconfig_doc("https://x", ca="/ca.pem", insecure=True)))
    with pytest.raises(ConfigError, match="insecure"):
        load_kubeconfig([path])
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(kubeconfig=tmp_path / "nothing-here", env={})
