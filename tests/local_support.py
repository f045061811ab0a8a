"""Helpers for tests of the local cluster: a :class:`LocalCluster` with its kubelet, pods whose containers are
small Python scripts, and checks on real processes (a container's process group is the pid in its containerID)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from mxjob_controller.local.apiserver.server import ServerOptions
from mxjob_controller.local.cluster import ClusterOptions, LocalCluster
from mxjob_controller.local.kubelet.options import KubeletOptions
from tests.support import Kube, Kubectl, wait_for

PYTHON = "python"  # found on PATH: the kubelet puts this project's interpreter first


@contextmanager
def local_cluster(tmp_path: Path, *, controller: bool = False, backoff: float = 0.3,
                  job_ports: tuple[int, int] | None = None,
                  workdir: Path | None = None,
                  max_grace_period: float | None = None, capacity: dict[str, str] | None = None,
                  gang_scheduler_name: str | None = None,
                  gpus: tuple[str, ...] = ()) -> Iterator[tuple[LocalCluster, Kube, Kubectl]]:
    """A started local cluster (kubelet on; controller as asked), reached over HTTP by the client and kubectl.

    ``tmp_path`` is opened to every user: containers run as nobody in the pod sandbox (when the tests run as root)
    and start in it, or write the markers tests read there."""
    tmp_path.chmod(0o777)
    kubelet = KubeletOptions(workdir=str(workdir or tmp_path), backoff_initial=backoff, stop_grace=1.0, gpus=gpus)
    if max_grace_period is not None:
        kubelet = replace(kubelet, max_grace_period=max_grace_period)
    if capacity is not None:
        kubelet = replace(kubelet, capacity=capacity)
    options = ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=controller, threadiness=2,
                             job_ports=job_ports, kubelet_options=kubelet, gang_scheduler_name=gang_scheduler_name)
    cluster = LocalCluster(options).start()
    kube = Kube(cluster.server.url)
    kubeconfig = cluster.server.write_kubeconfig(tmp_path / "kubeconfig")
    try:
        yield cluster, kube, Kubectl(kubeconfig, tmp_path / "kubectl-cache")
    finally:
        kube.close()
        assert cluster.stop(20.0), "the local cluster did not stop cleanly"


def script_pod(name: str, script: str, *, restart_policy: str = "Never", namespace: str = "default",
               **spec: Any) -> dict[str, Any]:
    """A pod whose one container ``main`` runs ``python -c script``."""
    container = {"name": "main", "image": "python:3.11-slim", "command": [PYTHON, "-c", script]}
    container.update(spec.pop("container", {}))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"restartPolicy": restart_policy, "terminationGracePeriodSeconds": 5,
                     "containers": [container], **spec}}


def job_editor(kubectl: Kubectl, namespace: str = "team", name: str = "editor") -> None:
    """The ServiceAccount ``namespace/name`` bound to ``kubeflow-mxjobs-edit`` (manifests/rbac/user_roles.yaml) in
    its namespace: a user who may create MXJobs there, but not pods or Secrets."""
    kubectl.ok("apply", "-f", str(Path(__file__).resolve().parents[1] / "manifests" / "rbac" / "user_roles.yaml"))
    kubectl.ok("create", "namespace", namespace)
    kubectl.ok("create", "serviceaccount", name, "-n", namespace)
    kubectl.ok("create", "rolebinding", name, "-n", namespace, "--clusterrole", "kubeflow-mxjobs-edit",
               "--serviceaccount", f"{namespace}:{name}")


def pod_file(cluster: LocalCluster, pod: dict[str, Any] | str, inside: str, namespace: str = "default") -> Path:
    """Where on this machine a pod's file under its own /tmp or /var/tmp is (the pod sandbox makes every other
    host file read-only to pods, so this is where a pod leaves what a test reads). ``pod``: the pod (a job's,
    with its controller), or the name of one without a controller."""
    if isinstance(pod, str):
        pod = {"metadata": {"namespace": namespace, "name": pod}}
    assert cluster.kubelet is not None
    if not cluster.kubelet.sandbox.namespaces:
        return Path(inside)   # no sandbox: a pod's /tmp is this machine's
    found = cluster.kubelet.sandbox.host_path(pod, inside)
    # Before the pod's first container starts, its places are not made yet: a path that does not exist (yet).
    return found if found is not None else Path("/nonexistent-pod-place") / inside.lstrip("/")


def pod_path(name: str, namespace: str = "default") -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def get_pod(kube: Kube, name: str, namespace: str = "default") -> dict[str, Any] | None:
    reply = kube.get(pod_path(name, namespace))
    return reply.body if reply.ok else None


def wait_phase(kube: Kube, name: str, *phases: str, timeout: float = 30.0) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        pod = get_pod(kube, name)
        return pod if pod and (pod.get("status") or {}).get("phase") in phases else None
    return wait_for(reached, timeout=timeout, what=f"pod {name} in phase {'/'.join(phases)}")


def kubelet_events(kube: Kube, name: str, namespace: str = "default") -> list[tuple[str, str, str]]:
    """(type, reason, message) of the kubelet's events about pod ``name``."""
    items = kube.get(f"/api/v1/namespaces/{namespace}/events",
                     fieldSelector=f"involvedObject.name={name}").body["items"]
    return [(e["type"], e["reason"], e["message"]) for e in items if e["source"]["component"] == "kubelet"]


def container_status(pod: dict[str, Any], container: str = "main") -> dict[str, Any]:
    return next(c for c in pod["status"].get("containerStatuses") or [] if c["name"] == container)


def group_of(pod: dict[str, Any], container: str = "main") -> int:
    """The process group of a running container (its leader's pid, from the containerID)."""
    return int(container_status(pod, container)["containerID"].removeprefix("process://"))


def group_alive(pgid: int) -> bool:
    """True while a process of group ``pgid`` exists that is not a zombie (as :func:`pid_alive`: an ended process
    not yet reaped by whoever adopted it runs nothing)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                return True
    return False


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


#: A line of Python for a container's script: the PID namespace it runs in, as ``/proc/<pid>/ns/pid`` names it on
#: the host too (``pid:[4026532291]``), so that a test can find every process of the container from outside.
PID_NAMESPACE = "os.readlink('/proc/self/ns/pid')"


def boot_seconds() -> float:
    """Seconds since boot, the clock of a process's start time in /proc (``born_before`` below)."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def _born(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")   # field 22, starttime, in clock ticks since boot


def namespace_processes(pid_namespace: str, born_before: float | None = None) -> list[int]:
    """Host pids of every live (not zombie) process in ``pid_namespace`` (read from /proc). A dead namespace's
    number can be given to a new one (another test's container): ``born_before`` (:func:`boot_seconds`, taken while
    the namespace was known to live) leaves out processes started after it."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") == pid_namespace and pid_alive(int(entry)) and (
                        born_before is None or _born(int(entry)) <= born_before):
                    found.append(int(entry))
            except OSError:
                continue
    return found


assert sys.executable  # the kubelet's PATH starts with this interpreter's folder
