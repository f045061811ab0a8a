"""The JavaScript client, ``@kubernetes/client-node`` (Headlamp's, Backstage's and many dashboards'), against a
default ``local up`` with its kubeconfig untouched: it refuses plain HTTP unless told to skip TLS verification, so
this holds only because ``local up`` serves HTTPS with its CA in the kubeconfig.

The version is the latest that runs on this machine's Node 20: 2.x needs undici 8, which declares Node >= 22.19 and
fails to load on 20 (``tests/cached_builds.py: CLIENT_NODE_VERSION``). npm installs it once into
``.mxjob-local/`` (``tests/cached_builds.py``); the driver is ``tests/js/client_node.mjs``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cached_builds
from tests.cli.test_local import start_local_up, wait_ready
from tests.manifests import ROOT
from tests.support import Kubectl, wait_for

DRIVER = ROOT / "tests" / "js" / "client_node.mjs"

pytestmark = [pytest.mark.integration, pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")]


@pytest.fixture(scope="session")
def client_node() -> Path:
    """The directory npm installed ``@kubernetes/client-node`` into (cached across runs)."""
    return cached_builds.client_node()


def drive(client_node: Path, kubeconfig: Path, *args: str) -> dict:
    done = subprocess.run(["node", str(DRIVER), *args], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "KUBECONFIG": str(kubeconfig), "CLIENT_NODE_DIR": str(client_node)})
    assert done.returncode == 0, f"client-node {' '.join(args)} failed:\n{done.stderr}"
    return json.loads(done.stdout)


def test_client_node_lists_pods_and_creates_an_mxjob_on_a_default_local_up(tmp_path, client_node):
    proc, kubeconfig = start_local_up(tmp_path)
    try:
        wait_ready(proc, kubeconfig)
        written = kubeconfig.read_bytes()
        assert drive(client_node, kubeconfig, "list-pods", "default") == {"pods": []}
        job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "js"},
               "spec": {"runPolicy": {"cleanPodPolicy": "None"}, "mxReplicaSpecs": {"Worker": {
                   "replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [{
                       "name": "mxnet", "image": "mxnet/python:1.9.1",
                       "command": [sys.executable, "-c", "print('done')"]}]}}}}}}
        (tmp_path / "job.json").write_text(json.dumps(job))
        created = drive(client_node, kubeconfig, "create", "default", str(tmp_path / "job.json"))["created"]
        assert created["name"] == "js" and created["uid"]
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        wait_for(lambda: "Succeeded" in kubectl.ok("get", "mxjob", "js", "-o",
                                                   "jsonpath={.status.conditions[?(@.status=='True')].type}"),
                 timeout=60, what="the MXJob created by client-node succeeded")
        assert drive(client_node, kubeconfig, "list-pods", "default") == {
            "pods": [{"name": "js-worker-0", "phase": "Succeeded"}]}
        assert kubeconfig.read_bytes() == written, "the kubeconfig is used as local up wrote it"
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
