"""Which configuration the client loads (runtime/client/loading.py), as client-go's precedence: in-cluster inside a
pod, else the kubeconfig, ``--master`` over the kubeconfig's server, and a clear error when there is none; each
reaching the embedded API server."""

from __future__ import annotations

import pytest
import yaml

from mxjob_controller.runtime.client import (
    CONFIGMAPS,
    Client,
    ConfigError,
    load_config,
)
from tests.runtime.client.kubeconfigs import kubeconfig_doc


def test_kubeconfig_from_the_fixture_reaches_the_server(apiserver, kubeconfig):
    config = load_config(kubeconfig=kubeconfig, env={})
    assert config.host == apiserver.url and config.namespace == "default"
    assert Client(config).list(CONFIGMAPS, "kube-system")["kind"] == "ConfigMapList"


def test_master_overrides_the_kubeconfig_server(apiserver, tmp_path):
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump(kubeconfig_doc("http://127.0.0.1:1", namespace="team")))
    config = load_config(kubeconfig=path, master=apiserver.url, env={})
    assert config.host == apiserver.url and config.namespace == "team"
    assert Client(config).list(CONFIGMAPS, "default")["kind"] == "ConfigMapList"


def test_config_precedence(tmp_path, apiserver):
    home = tmp_path / "home"
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(yaml.safe_dump(kubeconfig_doc("https://home:6443")))
    sa = tmp_path / "sa"
    sa.mkdir()
    (sa / "token").write_text("t")
    in_pod = {"HOME": str(home), "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    assert load_config(env=in_pod, service_account_dir=str(sa)).host == "https://10.0.0.1:443"
    assert load_config(env={"HOME": str(home)}, service_account_dir=str(sa)).host == "https://home:6443"
    assert load_config(env={"HOME": str(tmp_path)}, master=apiserver.url).host == apiserver.url
    with pytest.raises(ConfigError, match="no configuration"):
        load_config(env={"HOME": str(tmp_path)}, service_account_dir=str(sa))
