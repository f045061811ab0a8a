"""Server CPU per pod create, validation included, measured on ``mxjob-controller local up`` as users run it.

The server runs in its own process; the test creates realistic pods over HTTP and reads the server's CPU time (user +
system, every thread) from ``/proc/<pid>/stat`` around each round. It prints the figure of every round, and fails
when the best round (a shared machine's bursts only make a round slower) passes twice issue 3's 1 ms: a regression,
not noise. The 1 ms target itself is ``make bench``'s ``pod_write`` (a speed target belongs with the benchmarks):
since every write records its managed fields the best round here is about 1.0 ms and moves by a quarter from one
run to the next on this machine, so a 1 ms assertion would fail CI at random.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support import Kube, wait_for

ROUNDS = 8   # the best of 8: a shared machine's bursts only ever make a round slower
PODS_PER_ROUND = 250
BUDGET_MS = 2.0   # twice the target of make bench's pod_write: a regression guard


def realistic_pod(name: str) -> dict:
    """A training pod as the controller writes them: three containers with env, ports, resources, probes."""
    containers = [{
        "name": f"c{c}", "image": f"registry.example.com/team/train-{c}:1.{c}",
        "command": ["python", "-m", "train"], "args": ["--epochs", "10", "--lr", "0.01"],
        "env": [{"name": f"MX_VAR_{k}", "value": str(k)} for k in range(6)]
        + [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "ports": [{"name": f"port-{c}-{k}", "containerPort": 9000 + 10 * c + k} for k in range(2)],
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "512Mi"}},
        "volumeMounts": [{"name": "data", "mountPath": f"/data{c}"}, {"name": "cfg", "mountPath": f"/cfg{c}"}],
        "readinessProbe": {"tcpSocket": {"port": 9000 + 10 * c}, "periodSeconds": 5},
    } for c in range(3)]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "bench", "replica-type": "worker"},
                         "annotations": {"example.com/note": "x" * 40}},
            "spec": {"containers": containers, "restartPolicy": "Never",
                     "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "cfg"}}],
                     "nodeSelector": {"kubernetes.io/os": "linux"}}}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, all its threads (dead ones included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
@pytest.mark.exclusive   # the server's CPU per request grows with the machine's load
def test_pod_create_server_cpu_is_reported_and_not_regressed(tmp_path, capsys):
    kubeconfig = tmp_path / "kubeconfig"
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up",
                             "--kubelet", "none", "--no-controller", "--no-webhooks", "--port", "0",
                             "--kubeconfig-out", str(kubeconfig), "--log-level", "warning"],
                            stdout=subprocess.DEVNULL, stderr=log)
    try:
        wait_for(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=60, what="local up ready")
        assert proc.poll() is None, (tmp_path / "server.log").read_text()
        url = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        kube = Kube(url)
        pods = "/api/v1/namespaces/default/pods"
        for i in range(20):  # warm up: connections, caches
            assert kube.post(pods, realistic_pod(f"warm-{i}")).status == 201
        figures = []
        for r in range(ROUNDS):
            bodies = [realistic_pod(f"r{r}-{i}") for i in range(PODS_PER_ROUND)]
            before = cpu_seconds(proc.pid)
            for body in bodies:
                reply = kube.post(pods, body)
                assert reply.status == 201, reply.body
            figures.append(1000 * (cpu_seconds(proc.pid) - before) / PODS_PER_ROUND)
        kube.close()
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()
    with capsys.disabled():
        print(f"\nserver CPU per pod create (ms), {ROUNDS} rounds of {PODS_PER_ROUND}: "
              + ", ".join(f"{f:.3f}" for f in figures) + f"; best {min(figures):.3f}")
    assert min(figures) <= BUDGET_MS, figures
