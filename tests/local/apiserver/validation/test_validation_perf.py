"""Server CPU per pod create, validation included, measured on ``mxjob-controller local up`` as users run it.

The server runs in its own process; the test creates realistic pods over HTTP and reads the server's CPU time (user +
system, every thread) from ``/proc/<pid>/stat`` around each round. Each round of pods is followed by a round of small
ConfigMaps, the floor: the same HTTP, admission, managed-fields and storage path with almost nothing to validate.
It prints both figures of every round and fails when, in every round, a pod create cost more than ``RATIO_BUDGET``
floor creates: a pod's own validation and fields regressed, not noise.

Why a ratio and not milliseconds: the server's CPU per request moves by a factor of two or three with the machine's
state (other processes, a VM's neighbours), and the pod and its floor, measured seconds apart in one process, move
together. The absolute target (issue 3's 1 ms) is ``make bench``'s ``pod_write``: speed targets live with the
benchmarks, and this suite must pass on a busy machine. For the same reason the test need not run alone: the CPU
read is the server process's own, and the ratio holds beside other tests' load.
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
RATIO_BUDGET = 8.0   # a pod create costs about four floor creates; twice that is a regression


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


def floor_object(name: str) -> dict:
    """The floor's write: a small ConfigMap, the cheapest object that still takes the whole create path."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "bench"}},
            "data": {"a": "x"}}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far, all its threads (dead ones included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
def test_pod_create_server_cpu_is_reported_and_not_regressed(tmp_path, capsys):
    kubeconfig = tmp_path / "kubeconfig"
    log = (tmp_path / "server.log").open("w")
    # --insecure-http: the figure is validation's CPU, which TLS and RBAC (the default) would only dilute.
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up", "--insecure-http",
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
            assert kube.post("/api/v1/namespaces/default/configmaps", floor_object(f"warm-{i}")).status == 201
        figures: list[tuple[float, float]] = []   # (pod, floor) ms of server CPU per create, one pair a round
        for r in range(ROUNDS):
            pair = []
            for path, make in ((pods, realistic_pod), ("/api/v1/namespaces/default/configmaps", floor_object)):
                bodies = [make(f"r{r}-{i}") for i in range(PODS_PER_ROUND)]
                before = cpu_seconds(proc.pid)
                for body in bodies:
                    reply = kube.post(path, body)
                    assert reply.status == 201, reply.body
                pair.append(1000 * (cpu_seconds(proc.pid) - before) / PODS_PER_ROUND)
            figures.append((pair[0], pair[1]))
        kube.close()
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        log.close()
    ratios = [pod / max(floor, 1e-9) for pod, floor in figures]
    with capsys.disabled():
        print(f"\nserver CPU per create (ms), {ROUNDS} rounds of {PODS_PER_ROUND} pods, then as many ConfigMaps: "
              + ", ".join(f"{pod:.3f}/{floor:.3f}" for pod, floor in figures)
              + f"; best pod {min(p for p, _ in figures):.3f}; pod/floor {min(ratios):.2f}-{max(ratios):.2f}")
    assert min(ratios) <= RATIO_BUDGET, figures
