"""`mxjob-controller local up` as a user runs it: a separate process, a kubeconfig that appears only when the
server is ready, kubectl working against it, and a clean stop on SIGTERM or SIGINT."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mxjob_controller.cli.local import packaged_crds
from tests.support import Kubectl, wait_for


def start_local_up(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    kubeconfig = tmp_path / "kc" / "config"
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up", "--port", "0",
                             "--kubeconfig-out", str(kubeconfig), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, kubeconfig


def wait_ready(proc: subprocess.Popen, kubeconfig: Path) -> None:
    def ready():
        if proc.poll() is not None:
            raise AssertionError(f"local up exited early: {proc.communicate()}")
        return kubeconfig.exists()
    wait_for(ready, timeout=30, what="the kubeconfig of local up")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_local_up_serves_kubectl_and_stops_cleanly(tmp_path, sig):
    proc, kubeconfig = start_local_up(tmp_path)
    try:
        wait_ready(proc, kubeconfig)
        config = yaml.safe_load(kubeconfig.read_text())
        server = config["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:") and not server.endswith(":0")
        assert oct(os.stat(kubeconfig).st_mode & 0o777) == "0o600"
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        assert "namespace/default" in kubectl.ok("get", "namespaces", "-o", "name").split()
        crds = kubectl.ok("get", "crds", "-o", "name").split()
        assert crds == sorted(f"customresourcedefinition.apiextensions.k8s.io/{c['metadata']['name']}"
                              for c in packaged_crds())
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert f"Kubeconfig written to {kubeconfig}" in out
    assert not kubeconfig.exists(), "the kubeconfig of a stopped server is removed"


def test_local_up_no_crds(tmp_path):
    proc, kubeconfig = start_local_up(tmp_path, "--no-crds", "--no-controller")
    try:
        wait_ready(proc, kubeconfig)
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        assert kubectl.ok("get", "crds", "-o", "name").strip() == ""
    finally:
        proc.terminate()
        proc.communicate(timeout=15)
    assert proc.returncode == 0


def test_local_up_reports_a_busy_port(tmp_path):
    first, kubeconfig = start_local_up(tmp_path)
    try:
        wait_ready(first, kubeconfig)
        port = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"].rsplit(":", 1)[1]
        second = subprocess.run([sys.executable, "-m", "mxjob_controller", "local", "up", "--port", port,
                                 "--kubeconfig-out", str(tmp_path / "other")],
                                capture_output=True, text=True, timeout=30, check=False)
        assert second.returncode != 0
        assert "Address already in use" in second.stderr or "address already in use" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.terminate()
        first.communicate(timeout=15)
