"""The local kubelet's stop on a full node: a few hundred sandboxed pods running, the stop returns True within its
timeout, leaves no process of theirs and no cgroup of theirs, and says nothing (no warning). Each pod worker once
stopped its own containers, a thousand threads polling /proc that starved the sandbox's launcher thread: the stop
took 8-36 s of a 15 s budget and warned of threads still running and of hundreds of groups alive after SIGKILL."""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from mxjob_controller.local.apiserver.server import ServerOptions
from mxjob_controller.local.cluster import ClusterOptions, LocalCluster
from mxjob_controller.local.kubelet.options import KubeletOptions
from mxjob_controller.runtime.client import PODS
from tests.local_support import group_alive, group_of
from tests.support import wait_for

pytestmark = pytest.mark.slow

PODS_RUNNING = 300
STOP_TIMEOUT = 15.0


def _sleep_pod(name: str) -> dict:
    """``sleep 3600`` asking 1m CPU and 1Mi (the scheduler's defaults for a pod without requests do not fit 300
    times on a small machine), gone at once when deleted."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                                     "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}}


def _not_running(client) -> int:
    """How many pods are not Running yet (one item listed: ``remainingItemCount`` counts the rest)."""
    page = client.list(PODS, "default", field_selector="status.phase!=Running", limit=1, timeout=10, deadline=20)
    return len(page.get("items") or []) + int(page["metadata"].get("remainingItemCount") or 0)


def _live_groups() -> set[int]:
    """The process groups with a process that is not a zombie, from one reading of /proc."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != b"Z":
                found.add(int(fields[2]))
    return found


def _node(tmp_path, **kubelet: object) -> LocalCluster:
    """A started cluster of a server and a node (no controller), its containers working in ``tmp_path``."""
    tmp_path.chmod(0o777)
    kubelet_options = KubeletOptions(workdir=str(tmp_path), **kubelet)
    return LocalCluster(ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=False,
                                       webhooks=False, kubelet_options=kubelet_options)).start()


def _stop_cleanly(cluster: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    """Stop the cluster: clean, within its timeout, without a warning."""
    caplog.clear()
    caplog.set_level(logging.WARNING)
    started = time.monotonic()
    clean = cluster.stop(STOP_TIMEOUT)
    took = time.monotonic() - started
    assert clean, "the cluster did not stop cleanly"
    assert took < STOP_TIMEOUT, f"the stop took {took:.1f}s of its {STOP_TIMEOUT:g}s"
    warnings = [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []


def test_a_full_node_stops_within_its_timeout_leaving_nothing(tmp_path, caplog):
    cluster = _node(tmp_path, capacity={"pods": "400"})
    stopped = False
    try:
        kubelet = cluster.kubelet
        assert kubelet is not None
        if not kubelet.sandbox.namespaces:
            pytest.skip(f"no pod sandbox here: {kubelet.sandbox.why_not}")
        client = cluster.client("test")
        for i in range(PODS_RUNNING):
            client.create(PODS, _sleep_pod(f"sleep-{i}"), "default", timeout=10, deadline=20)
        wait_for(lambda: _not_running(client) == 0, timeout=240, interval=0.2, what="every pod Running")
        pods = client.list_all(PODS, "default", timeout=10, deadline=20)["items"]
        groups = {group_of(pod) for pod in pods}
        assert len(groups) == PODS_RUNNING
        assert groups <= _live_groups()
        uids = [pod["metadata"]["uid"] for pod in pods]
        trees = [h.directory for h in (kubelet.sandbox.cgroups.hierarchies.values() if kubelet.sandbox.cgroups
                                       else ())]

        stopped = True
        _stop_cleanly(cluster, caplog)
        assert groups & _live_groups() == set(), "processes of the pods outlived the stop"
        left = [str(d) for tree in trees for uid in uids for d in tree.glob(f"mxjob-local-{os.getpid()}-*/pod-{uid}")]
        assert left == [], "cgroups of the pods outlived the stop"
    finally:
        if not stopped:
            cluster.stop(STOP_TIMEOUT)


def test_the_kubelet_stops_a_container_started_as_the_stop_began(tmp_path):
    """A worker that starts its container just as the kubelet stops: the worker ends without stopping it, and the
    kubelet's own sweep, which reads the workers after they ended, finds and kills it."""
    tmp_path.chmod(0o777)
    options = ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=False, webhooks=False,
                             kubelet_options=KubeletOptions(workdir=str(tmp_path), stop_grace=1.0))
    cluster = LocalCluster(options).start()
    stopped = False
    try:
        kubelet = cluster.kubelet
        assert kubelet is not None
        client = cluster.client("test")
        client.create(PODS, _sleep_pod("late"), "default", timeout=10, deadline=20)
        worker = wait_for(lambda: next(iter(kubelet._worker_list()), None), timeout=30, what="the pod's worker")
        wait_for(worker.processes, timeout=60, what="its container started")
        pgid = worker.processes()[0].pid
        # As if started after the kubelet's first look: nothing of it in what the first look saw.
        original = kubelet._containers
        looks = []

        def late_first_look() -> set:
            looks.append(1)
            return set() if len(looks) == 1 else original()

        kubelet._containers = late_first_look   # type: ignore[method-assign]
        assert cluster.stop(STOP_TIMEOUT)
        stopped = True
        assert len(looks) >= 2
        assert not group_alive(pgid), "the container started as the stop began outlived it"
    finally:
        if not stopped:
            cluster.stop(STOP_TIMEOUT)


def test_workers_end_without_writing_when_the_kubelet_stops(tmp_path):
    """At the stop the pods stay Running in the API: a worker writes nothing of a stop that is the node's."""
    tmp_path.chmod(0o777)
    options = ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=False, webhooks=False,
                             kubelet_options=KubeletOptions(workdir=str(tmp_path), stop_grace=1.0))
    cluster = LocalCluster(options).start()
    try:
        kubelet = cluster.kubelet
        assert kubelet is not None
        client = cluster.client("test")
        client.create(PODS, _sleep_pod("quiet"), "default", timeout=10, deadline=20)
        wait_for(lambda: _not_running(client) == 0, timeout=60, what="the pod Running")
        assert kubelet.stop(STOP_TIMEOUT)
        cluster.kubelet = None
        cluster.server.rest.log_reader = None
        pod = client.get(PODS, "quiet", "default", timeout=10, deadline=20)
        assert pod["status"]["phase"] == "Running"
        assert not group_alive(group_of(pod))
    finally:
        cluster.stop(STOP_TIMEOUT)


def test_a_stop_amid_a_burst_of_starts_leaves_no_worker_and_no_container(tmp_path, caplog):
    """Workers' threads are started off the informer's thread (several at once): a stop that comes while starts
    are still queued starts none of them, joins those started, and leaves no container of any."""
    cluster = _node(tmp_path, stop_grace=1.0, capacity={"pods": "200"})
    stopped = False
    try:
        kubelet = cluster.kubelet
        assert kubelet is not None
        client = cluster.client("test")
        burst = 150
        with ThreadPoolExecutor(4, thread_name_prefix="test-burst") as pool:
            list(pool.map(lambda i: client.create(PODS, _sleep_pod(f"burst-{i}"), "default", timeout=10,
                                                  deadline=20), range(burst)))
        wait_for(lambda: _not_running(client) < burst, timeout=60, interval=0.01, what="a first pod Running")
        # The running pods' own groups (the machine's others belong to tests running beside this one).
        groups = {group_of(pod) for pod in client.list_all(PODS, "default", timeout=10, deadline=20)["items"]
                  if (pod.get("status") or {}).get("phase") == "Running"}
        stopped = True
        _stop_cleanly(cluster, caplog)
        alive = [t.name for t in threading.enumerate() if t.name.startswith("kubelet-pod") and t.is_alive()]
        assert alive == []
        assert groups, "no container was running at the stop"
        assert groups & _live_groups() == set(), "processes of the pods outlived the stop"
    finally:
        if not stopped:
            cluster.stop(STOP_TIMEOUT)
