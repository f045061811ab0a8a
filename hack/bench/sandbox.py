"""The pod sandbox's cost and its CPU limit, on real processes of an in-process local cluster.

- ``pod_start``: create → Succeeded of a ``python -c pass`` pod, one at a time, alternating between a cluster with the
  sandbox and one without (``--no-sandbox``), so the machine's load weighs on both alike; the medians and their
  difference (what the sandbox adds to a container's start);
- ``pod_burst``: 400 ``sleep 3600`` pods created at once (4 client threads) on a node of ``pods=1000``, the seconds
  until every one is Running (the list polled), beside the floor: a plain ``subprocess.Popen`` loop starting the same
  400 processes (targets: all Running within 8 s, i.e. at least 50 pods/s, and within 10x the floor);
- ``large_mxjob``: a 1,000-replica MXJob of sandboxed ``sleep`` workers on the cluster with its controller and a node
  of ``pods=1100``: the seconds until all run (target 30 s), then until its pods are gone after its deletion;
- ``node_stop``: 1,000 ``sleep 3600`` pods Running on a node of ``pods=1100`` (the sandbox on), then
  ``LocalCluster.stop(15)``: its seconds, the warnings it logged and the pods' process groups left (targets: True
  within 8 s, no warning, nothing left);
- ``cpu_limit``: a pod with ``limits.cpu: 500m`` spinning three threads, its cores used over a window read from
  /proc (target: at most 0.6).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from hack.bench.common import Outcome, run_threads
from mxjob_controller.local.apiserver.server import ServerOptions
from mxjob_controller.local.cluster import ClusterOptions, LocalCluster
from mxjob_controller.local.kubelet.options import KubeletOptions
from mxjob_controller.runtime.client import PODS, Client, NotFound

TIMEOUT = 60.0


def _pod(name: str, script: str, **container: object) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "main", "image": "python", "command": ["python", "-c", script],
                                     **container}]}}


def _cluster(workdir: str, sandbox: bool, capacity: dict[str, str] | None = None) -> LocalCluster:
    return LocalCluster(ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=False, webhooks=False,
                                       kubelet_options=KubeletOptions(workdir=workdir, sandbox=sandbox,
                                                                      capacity=capacity or {})))


def _until(client: Client, name: str, phases: tuple[str, ...]) -> dict:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        pod = client.get(PODS, name, "default")
        if (pod.get("status") or {}).get("phase") in phases:
            return pod
        time.sleep(0.005)
    raise RuntimeError(f"pod {name} did not reach {'/'.join(phases)}")


def _one_start(client: Client, name: str) -> float:
    started = time.monotonic()
    client.create(PODS, _pod(name, "pass"), "default")
    pod = _until(client, name, ("Succeeded", "Failed"))
    took = time.monotonic() - started
    if pod["status"]["phase"] != "Succeeded":
        raise RuntimeError(f"pod {name} failed: {pod['status']}")
    with contextlib.suppress(NotFound):
        client.delete(PODS, name, "default", grace_period_seconds=0)
    return took


def bench_pod_start(full: bool) -> Outcome:
    rounds = 30 if full else 12
    with tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o777)
        with _cluster(workdir, True) as on, _cluster(workdir, False) as off:
            clients = {"on": on.client("bench"), "off": off.client("bench")}
            times: dict[str, list[float]] = {"on": [], "off": []}
            for i in range(rounds + 2):
                for mode, client in clients.items():
                    took = _one_start(client, f"p{i}")
                    if i >= 2:   # two warm-up rounds
                        times[mode].append(took)
    on_ms, off_ms = (statistics.median(times[m]) * 1e3 for m in ("on", "off"))
    return Outcome([("pod start → Succeeded, sandbox on (median)", f"{on_ms:.0f} ms"),
                    ("pod start → Succeeded, sandbox off (median)", f"{off_ms:.0f} ms"),
                    ("the sandbox adds", f"{on_ms - off_ms:.0f} ms")],
                   inputs={"rounds": rounds}, figures={"on_ms": on_ms, "off_ms": off_ms},
                   ratios={"on_over_off": on_ms / off_ms})


BURST_PODS = 400
BURST_THREADS = 4


def _sleep_pod(name: str) -> dict:
    """A ``sleep 3600`` pod requesting 1m CPU and 1Mi: without requests the scheduler counts its non-zero defaults
    (100m, 200Mi; placement.py), and 400 of those do not fit a 2-core node."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                                     "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}}


def _popen_floor(count: int) -> float:
    """Seconds a plain ``subprocess.Popen`` loop takes to start ``count`` ``sleep 3600`` (then all killed)."""
    procs: list[subprocess.Popen] = []
    started = time.monotonic()
    try:
        for _ in range(count):
            procs.append(subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True))
        return time.monotonic() - started
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.wait(TIMEOUT)


def _any_not_running(client: Client) -> bool:
    """Whether a pod of the namespace is not Running yet: one item at most is asked for (the field selector does the
    rest on the server), so the polling weighs little on the cluster it measures, which shares this process."""
    page = client.list(PODS, "default", field_selector="status.phase!=Running", limit=1, timeout=10, deadline=20)
    return bool(page.get("items"))


def _running(client: Client) -> int:
    items = client.list_all(PODS, "default", timeout=10, deadline=20).get("items") or []
    return sum((pod.get("status") or {}).get("phase") == "Running" for pod in items)


def _why_not(client: Client) -> dict[str, int]:
    """How many pods not Running are in each phase, with their first container's reason."""
    counts: dict[str, int] = {}
    for pod in client.list_all(PODS, "default", timeout=10, deadline=20).get("items") or []:
        status = pod.get("status") or {}
        if status.get("phase") != "Running":
            states = [next(iter((c.get("state") or {}).values()), {}) for c in status.get("containerStatuses") or []]
            key = f"{status.get('phase')}/{(states or [{}])[0].get('reason') or ''}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def _descendants_cpu() -> float:
    """CPU seconds of every live process below this one (each with its reaped children's), and of this one's reaped
    children: what the containers' starts cost beside this process (relays, inits, the sandbox's launcher)."""
    parents: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry))
            ticks[int(entry)] = sum(int(f) for f in fields[11:15])
    total, todo = 0, list(parents.get(os.getpid(), ()))
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(parents.get(pid, ()))
    return total / os.sysconf("SC_CLK_TCK") + os.times().children_user + os.times().children_system


def _own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def bench_pod_burst(full: bool) -> Outcome:
    count = BURST_PODS
    names = [f"burst-{i}" for i in range(count)]
    floor = _popen_floor(count)
    with tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o777)
        with _cluster(workdir, True, {"pods": "1000"}) as cluster:
            client = cluster.client("bench")
            load = os.getloadavg()[0]
            own, others = _own_cpu(), _descendants_cpu()
            started = time.monotonic()
            run_threads("bench-burst", len(names), lambda i: client.create(PODS, _sleep_pod(names[i]), "default"),
                        BURST_THREADS, TIMEOUT)
            created = time.monotonic() - started
            deadline = started + TIMEOUT
            while _any_not_running(client):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"only {_running(client)} of {count} pods Running after {TIMEOUT:g}s")
                time.sleep(0.02)
            took = time.monotonic() - started
            own, others = _own_cpu() - own, _descendants_cpu() - others
            run_threads("bench-burst", len(names),
                        lambda i: client.delete(PODS, names[i], "default", grace_period_seconds=0),
                        BURST_THREADS, TIMEOUT)
            deadline = time.monotonic() + TIMEOUT
            while client.list_all(PODS, "default").get("items"):
                if time.monotonic() > deadline:
                    raise RuntimeError("the burst's pods were not all removed")
                time.sleep(0.1)
    rate = count / took
    ratio = took / floor
    return Outcome([(f"{count} sleep pods, sandbox on: all Running", f"{took:.1f} s ({rate:.1f} pods/s)"),
                    ("  of which the creates", f"{created:.1f} s"),
                    (f"floor: a Popen loop starting {count} sleep", f"{floor:.2f} s"),
                    ("ratio to the floor", f"{ratio:.1f}x"),
                    ("CPU of this process (cluster and clients) per pod", f"{own / count * 1e3:.1f} ms"),
                    ("CPU of the processes it started (containers' starts) per pod", f"{others / count * 1e3:.1f} ms"),
                    ("load average (1 min) at the start", f"{load:.1f}")],
                   inputs={"pods": count, "client_threads": BURST_THREADS, "load": round(load, 1)},
                   figures={"seconds": took, "pods_per_s": rate, "creates_s": created, "floor_s": floor,
                            "own_cpu_ms_per_pod": own / count * 1e3, "started_cpu_ms_per_pod": others / count * 1e3},
                   ratios={"over_floor": ratio},
                   targets={"400 pods all Running <= 8 s": took <= 8.0, "<= 10x the Popen floor": ratio <= 10.0})


def _pod_file(cluster: LocalCluster, name: str, inside: str) -> Path:
    """Where a pod's file in its own /tmp is on this machine (pods write nowhere else)."""
    kubelet = cluster.kubelet
    if kubelet is None or not kubelet.sandbox.namespaces:
        return Path(inside)
    found = kubelet.sandbox.host_path({"metadata": {"namespace": "default", "name": name}}, inside)
    return found or Path("/nonexistent")


def _cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def _namespace_pids(namespace: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/ns/pid") == namespace:
                    found.append(int(entry))
            except OSError:
                pass
    return found


def bench_cpu_limit(full: bool) -> Outcome:
    window = 10.0 if full else 5.0
    spin = ("import os, pathlib, threading\npathlib.Path('/tmp/ns').write_text(os.readlink('/proc/self/ns/pid'))\n"
            "def spin():\n    while True:\n        pass\n"
            "for _ in range(2):\n    threading.Thread(target=spin, daemon=True).start()\nspin()\n")
    with tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o777)
        with _cluster(workdir, True) as cluster:
            client = cluster.client("bench")
            client.create(PODS, _pod("spin", spin, resources={"limits": {"cpu": "500m"}}), "default")
            deadline = time.monotonic() + TIMEOUT
            while not (marker := _pod_file(cluster, "spin", "/tmp/ns")).exists() or not marker.read_text():
                if time.monotonic() > deadline:
                    raise RuntimeError("the spinner did not start")
                time.sleep(0.05)
            pids = _namespace_pids(marker.read_text())
            before, start = _cpu_seconds(pids), time.monotonic()
            time.sleep(window)
            cores = (_cpu_seconds(pids) - before) / (time.monotonic() - start)
            enforced = cluster.kubelet is not None and cluster.kubelet.sandbox.cgroups is not None and \
                "cpu" in cluster.kubelet.sandbox.cgroups.hierarchies
    return Outcome([("limits.cpu 500m, 3 spinning threads: cores used", f"{cores:.2f}"),
                    ("cpu cgroup writable here", "yes" if enforced else "no (not enforced)")],
                   inputs={"window_s": window}, figures={"cores": cores},
                   targets={"cores used <= 0.6 under limits.cpu 500m": cores <= 0.6 or not enforced})


LARGE_JOB_WORKERS, LARGE_JOB_TARGET_S, LARGE_JOB_TIMEOUT = 1000, 30.0, 180.0


def _pods_and_waiting(client: Client) -> tuple[int, bool]:
    """How many pods the namespace holds (one item asked for: ``remainingItemCount`` counts the rest) and whether
    one of them is not Running yet, in two cheap lists: the cluster measured shares this process."""
    page = client.list(PODS, "default", limit=1, timeout=10, deadline=20)
    count = len(page.get("items") or []) + int(page["metadata"].get("remainingItemCount") or 0)
    return count, _any_not_running(client)


def bench_large_mxjob(full: bool) -> Outcome:
    """Issue 48: a 1,000-replica MXJob on the embedded cluster with its controller, the sandbox on and a node of
    ``pods=1100``: the seconds from the job's creation until every worker runs (a ``sleep 3600`` each, 1m CPU and 1Mi
    requested so that 1,000 fit), as ``local up`` users see it; then the job deleted and the seconds until its pods
    are gone. The controller creates the pods (kube's slow start: 1, 2, 4 ... up to its batch) and their Services."""
    from mxjob_controller.mxnet.framework import MXJOBS

    worker = {"replicas": LARGE_JOB_WORKERS, "restartPolicy": "Never", "template": {"spec": {
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "mxnet", "image": "busybox", "command": ["sleep", "3600"],
                        "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}}}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "large", "namespace": "default"},
           "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": {"Worker": worker}}}
    with tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o777)
        options = ClusterOptions(server=ServerOptions(bookmark_interval=0.2), webhooks=False,
                                 kubelet_options=KubeletOptions(workdir=workdir, sandbox=True,
                                                                capacity={"pods": str(LARGE_JOB_WORKERS + 100)}))
        with LocalCluster(options) as cluster:
            client = cluster.client("bench")
            load = os.getloadavg()[0]
            started = time.monotonic()
            client.create(MXJOBS, job, "default")
            deadline, count, waiting = started + LARGE_JOB_TIMEOUT, 0, True
            while count < LARGE_JOB_WORKERS or waiting:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{count} of {LARGE_JOB_WORKERS} pods, not all Running after "
                                       f"{LARGE_JOB_TIMEOUT:g} s")
                time.sleep(0.05)
                count, waiting = _pods_and_waiting(client)
            took = time.monotonic() - started
            client.delete(MXJOBS, "large", "default")
            gone_from = time.monotonic()
            while client.list(PODS, "default", limit=1, timeout=10, deadline=20).get("items"):
                if time.monotonic() > gone_from + LARGE_JOB_TIMEOUT:
                    raise RuntimeError("the large job's pods were not all removed")
                time.sleep(0.1)
            gone = time.monotonic() - gone_from
    return Outcome([(f"1 MXJob of {LARGE_JOB_WORKERS} workers (sandboxed sleep), with the controller: all Running",
                     f"{took:.1f} s ({LARGE_JOB_WORKERS / took:.1f} pods/s)"),
                    ("the job deleted: its pods gone", f"{gone:.1f} s"),
                    ("load average (1 min) at the start", f"{load:.1f}")],
                   inputs={"workers": LARGE_JOB_WORKERS, "load": round(load, 1)},
                   figures={"all_running_s": took, "pods_gone_s": gone},
                   ratios={"vs_target": took / LARGE_JOB_TARGET_S},
                   targets={f"a {LARGE_JOB_WORKERS}-replica MXJob all Running <= {LARGE_JOB_TARGET_S:g} s":
                            took <= LARGE_JOB_TARGET_S})


STOP_PODS, STOP_TIMEOUT, STOP_TARGET_S = 1000, 15.0, 8.0


class _Warnings(logging.Handler):
    """The warnings logged while it is attached."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(f"{record.name}: {record.getMessage()}")


def _live_groups() -> set[int]:
    """The process groups with a process that is not a zombie, from one reading of /proc."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] != b"Z":
                found.add(int(fields[2]))
    return found


def bench_node_stop(full: bool) -> Outcome:
    """A full node's stop: every pod worker once stopped its own containers at the kubelet's stop, a thousand
    threads polling /proc that starved the sandbox's launcher thread, and ``LocalCluster.stop(15)`` of 1,000 pods
    took 8-36 s with hundreds of warnings. Now the kubelet stops them all from its one thread."""
    names = [f"stop-{i}" for i in range(STOP_PODS)]
    with tempfile.TemporaryDirectory() as workdir:
        os.chmod(workdir, 0o777)
        cluster = _cluster(workdir, True, {"pods": str(STOP_PODS + 100)}).start()
        try:
            client = cluster.client("bench")
            started = time.monotonic()
            run_threads("bench-stop", len(names), lambda i: client.create(PODS, _sleep_pod(names[i]), "default"),
                        BURST_THREADS, TIMEOUT)
            while _any_not_running(client):
                if time.monotonic() > started + 5 * TIMEOUT:
                    raise RuntimeError(f"only {_running(client)} of {STOP_PODS} pods Running: {_why_not(client)}")
                time.sleep(0.1)
            groups = {int(status["containerID"].removeprefix("process://"))
                      for pod in client.list_all(PODS, "default", timeout=10, deadline=20)["items"]
                      for status in (pod.get("status") or {}).get("containerStatuses") or []}
        except BaseException:
            cluster.stop(STOP_TIMEOUT)
            raise
        load = os.getloadavg()[0]
        warnings = _Warnings()
        logging.getLogger().addHandler(warnings)
        try:
            stop_from = time.monotonic()
            clean = cluster.stop(STOP_TIMEOUT)
            took = time.monotonic() - stop_from
        finally:
            logging.getLogger().removeHandler(warnings)
        left = groups & _live_groups()
    return Outcome([(f"{STOP_PODS} sandboxed sleep pods Running: LocalCluster.stop({STOP_TIMEOUT:g})",
                     f"{took:.1f} s ({'clean' if clean else 'NOT clean'})"),
                    ("warnings logged by the stop", str(len(warnings.messages))),
                    ("the pods' process groups left after it", str(len(left))),
                    ("load average (1 min) at the stop", f"{load:.1f}")],
                   inputs={"pods": STOP_PODS, "timeout_s": STOP_TIMEOUT, "load": round(load, 1)},
                   figures={"stop_s": took, "warnings": len(warnings.messages), "groups_left": len(left)},
                   ratios={"vs_timeout": took / STOP_TIMEOUT},
                   targets={f"stop({STOP_TIMEOUT:g}) of {STOP_PODS} pods clean within {STOP_TARGET_S:g} s":
                            clean and took <= STOP_TARGET_S,
                            "no warning, no process group left": not warnings.messages and not left})


SANDBOX = {"pod_start": bench_pod_start, "pod_burst": bench_pod_burst, "large_mxjob": bench_large_mxjob,
           "node_stop": bench_node_stop, "cpu_limit": bench_cpu_limit}
