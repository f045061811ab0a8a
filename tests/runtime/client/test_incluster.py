"""In-cluster configuration (runtime/client/incluster.py): the service account directory (nameable outside a pod),
the service's host and port (IPv6 bracketed), and a token that rotates under the client, the last good one kept
mid-rotation."""

from __future__ import annotations

import os

import pytest

from mxjob_controller.runtime.client import (
    ConfigError,
    load_config,
    load_in_cluster,
)
from mxjob_controller.runtime.client.incluster import SERVICE_ACCOUNT_DIR, default_service_account_dir


def test_the_service_account_directory_can_be_named_outside_a_pod():
    assert default_service_account_dir({}) == SERVICE_ACCOUNT_DIR == "/var/run/secrets/kubernetes.io/serviceaccount"
    assert default_service_account_dir({"MXJOB_SERVICE_ACCOUNT_DIR": "/tmp/sa"}) == "/tmp/sa"
    assert default_service_account_dir({"MXJOB_SERVICE_ACCOUNT_DIR": ""}) == SERVICE_ACCOUNT_DIR


def test_in_cluster_config_and_token_rotation(tmp_path):
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("first")
    (sa / "ca.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    (sa / "namespace").write_text("mxjob-system")
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    config = load_config(env=env, service_account_dir=str(sa))
    assert config.host == "https://10.96.0.1:443"
    assert config.ca_file == str(sa / "ca.crt") and config.namespace == "mxjob-system"
    assert config.authorization() == "Bearer first"

    rotated = sa / "token.new"                    # the kubelet swaps the file atomically
    rotated.write_text("second")
    os.replace(rotated, sa / "token")
    assert config.authorization() == "Bearer second"
    (sa / "token").unlink()                       # mid-rotation: keep the last good token
    assert config.authorization() == "Bearer second"

    (sa / "token").write_text("third")
    v6 = load_in_cluster({"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}, str(sa))
    assert v6.host == "https://[fd00::1]:6443"
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST"):
        load_in_cluster({}, str(sa))
