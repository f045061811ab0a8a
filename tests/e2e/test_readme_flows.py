"""README's local-cluster flows run as they are written: the fenced ``sh`` blocks under "The local cluster:
`mxjob-controller local up`", taken from README.md at test time, run by bash (``-euo pipefail``: every command must
succeed) with the real CLI and ``/usr/bin/kubectl``.

They run in a temporary directory laid out as a checkout (``.venv`` → this run's virtualenv, ``examples/`` and
``manifests/`` → the checkout's), so the blocks' relative paths hold. What is changed, and only that: the quick
start's ``make venv`` line is dropped (the virtualenv exists), and the environment sets
``MXJOB_METRICS_BIND_ADDRESS=0`` and ``MXJOB_HEALTH_PROBE_BIND_ADDRESS=0`` (no fixed ports :8080/:8081 for
``mxjob-controller run`` on a machine running tests side by side).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.local_support import group_alive
from tests.manifests import ROOT
from tests.run_process import clean_env
from tests.support import wait_for

SECTION = "## The local cluster: `mxjob-controller local up`"


def readme_blocks() -> list[str]:
    """The ``sh`` blocks of README's local-cluster section, in order."""
    text = (ROOT / "README.md").read_text()
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return re.findall(r"^```sh\n(.*?)^```$", text[start:end if end >= 0 else None], re.S | re.M)


def checkout_like(tmp_path: Path) -> Path:
    """A directory where README's relative paths resolve, and ``.mxjob-local/`` is the test's own."""
    work = tmp_path / "checkout"
    work.mkdir()
    (work / ".venv").symlink_to(sys.prefix)
    for name in ("examples", "manifests"):
        (work / name).symlink_to(ROOT / name)
    return work


def shell_env() -> dict[str, str]:
    return clean_env(MXJOB_METRICS_BIND_ADDRESS="0", MXJOB_HEALTH_PROBE_BIND_ADDRESS="0")


def stop_group(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Signal every process a block started (each block runs in a session of its own) and wait for the shell."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_readme_has_the_flows_this_module_runs():
    blocks = readme_blocks()
    assert len(blocks) == 3, blocks
    assert blocks[0].splitlines()[0].startswith("make venv")
    assert "local up" in blocks[0] and "kubectl create" in blocks[1] and "mxjob-controller run" in blocks[2]


@pytest.mark.integration
def test_readme_local_up_quick_start(tmp_path):
    """``local up`` (HTTPS by default) in one shell, the kubectl block in another, the kubeconfig as written."""
    up_block, kubectl_block, _ = readme_blocks()
    work, env = checkout_like(tmp_path), shell_env()
    kubeconfig = work / ".mxjob-local" / "kubeconfig"
    up_script = "\n".join(line for line in up_block.splitlines() if not line.startswith("make venv"))
    with open(tmp_path / "up.log", "w") as log:
        up = subprocess.Popen(["bash", "-euo", "pipefail", "-c", up_script], cwd=work, env=env, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for(lambda: kubeconfig.exists() or up.poll() is not None, timeout=60, what="local up's kubeconfig")
        assert up.poll() is None, (tmp_path / "up.log").read_text()
        assert "certificate-authority-data" in kubeconfig.read_text()
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", kubectl_block], cwd=work, env=env,
                              capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        assert "mxjob.kubeflow.org/mxnet-dist condition met" in done.stdout
        assert "DMLC_ROLE=worker" in done.stdout, "the worker's log"
    finally:
        stop_group(up, signal.SIGINT)   # Ctrl-C, as README says
    assert up.returncode == 0, (tmp_path / "up.log").read_text()
    assert not kubeconfig.exists()


@pytest.mark.slow
def test_readme_in_cluster_flow(tmp_path):
    """The install's CRDs and RBAC applied with kubectl, the controller under its ServiceAccount with in-cluster
    configuration running a job, and the block's own ``kill`` stopping both."""
    *_, flow = readme_blocks()
    work = checkout_like(tmp_path)
    shell = subprocess.Popen(["bash", "-euo", "pipefail", "-c", flow], cwd=work, env=shell_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = shell.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        stop_group(shell)
        out, _ = shell.communicate()
        raise AssertionError(f"README's in-cluster flow did not finish in 240 s:\n{out}") from None
    try:
        assert shell.returncode == 0, out
        assert "customresourcedefinition.apiextensions.k8s.io/mxjobs.kubeflow.org created" in out
        assert "serviceaccount/mxjob-controller created" in out
        assert "kubernetes-admin" in out, "kubectl auth whoami"
        assert "mxjob.kubeflow.org/mxnet-dist condition met" in out
        assert "(in-cluster service account)" in out, "run used the token directory, not a kubeconfig"
        wait_for(lambda: not group_alive(shell.pid), timeout=30, what="the cluster and the controller stopped by kill")
    finally:
        stop_group(shell)
    assert not (work / ".mxjob-local" / "kubeconfig").exists()
