"""The local scheduler's backlog (issue 48): what a sweep's queue of pods that cannot fit costs while nothing changes.

- sched_backlog  500 pods that sleep on a node of ``pods: 110`` (a LocalCluster in this process, its kubelet running
                 the 110 as processes): once 390 wait, marked unschedulable, the CPU of the scheduler's and the API
                 server's threads (and of the whole process, the kubelet's threads apart) over 10 s in which
                 nothing changes; then a running pod deleted: the time from its deletion until a waiting pod is
                 bound in its place

In-process, so that each thread's CPU can be read (``/proc/self/task``) and told apart by its name: the kubelet's
log-time sampler, which looks at every running container's log 20 times a second, is the kubelet's cost, not the
scheduler's.
"""

from __future__ import annotations

import collections
import os
import tempfile
import threading
import time
from pathlib import Path

from hack.bench.common import Outcome, wait_until

PODS_ON_NODE = 110
BACKLOG_PODS = 500
WINDOW = 10.0
CPU_TARGET = 0.02      # cores, the scheduler's and the API server's threads while nothing changes
BIND_TARGET = 1.0      # seconds from a freed slot to the next pod bound


def _threads_cpu() -> dict[str, float]:
    """CPU seconds so far of this process's threads, by name (digits and dashes at the end dropped)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK")
    out: collections.Counter[str] = collections.Counter()
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue   # the thread ended meanwhile
        name = names.get(int(tid), "other").rstrip("0123456789-_ ")
        out[name] += (int(fields[11]) + int(fields[12])) / tick
    return dict(out)


def _pod(i: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"backlog-{i}", "namespace": "default"},
            "spec": {"restartPolicy": "Never", "terminationGracePeriodSeconds": 1, "containers": [
                {"name": "main", "image": "busybox", "command": ["sleep", "3600"],
                 "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}}}]}}


def bench_sched_backlog(full: bool) -> Outcome:
    from mxjob_controller.local.apiserver.server import ServerOptions
    from mxjob_controller.local.cluster import ClusterOptions, LocalCluster
    from mxjob_controller.local.kubelet.options import KubeletOptions
    from mxjob_controller.runtime.client import PODS

    waiting_count = BACKLOG_PODS - PODS_ON_NODE
    with tempfile.TemporaryDirectory(prefix="mxjob-bench-sched-") as tmp:
        os.chmod(tmp, 0o777)   # containers may run as nobody in the pod sandbox
        kubelet = KubeletOptions(workdir=tmp, capacity={"pods": str(PODS_ON_NODE)}, stop_grace=1.0)
        cluster = LocalCluster(ClusterOptions(server=ServerOptions(), controller=False, webhooks=False,
                                              kubelet_options=kubelet)).start()
        client = cluster.client("bench")
        try:
            for i in range(BACKLOG_PODS):
                client.create(PODS, _pod(i), "default")
            scheduler = cluster.scheduler
            assert scheduler is not None

            def settled() -> bool:
                items = client.list(PODS, "default")["items"]
                running = sum(p["status"].get("phase") == "Running" for p in items)
                return running >= PODS_ON_NODE and scheduler.queue.stats().unschedulable >= waiting_count
            wait_until("the backlog settled", settled, 180.0, every=0.5)
            # The events' budgets (50 a second each, as kube's kubelet and scheduler) leave the burst's events
            # behind: the window opens once they are written, then after the last status writes.
            assert cluster.kubelet is not None
            if not (scheduler.flush_events(120.0) and cluster.kubelet.events.flush(120.0)):
                raise RuntimeError("the scheduler's and the kubelet's events were not all written within 120 s")
            time.sleep(2.0)   # the last kubelet status writes out
            attempts = scheduler.queue.stats().attempts
            passes = scheduler.passes
            before, process_before, start = _threads_cpu(), time.process_time(), time.monotonic()
            time.sleep(WINDOW)
            after, process_after, wall = _threads_cpu(), time.process_time(), time.monotonic() - start
            per_thread = {k: (v - before.get(k, 0.0)) / wall for k, v in after.items()}
            scheduler_cores = sum(v for k, v in per_thread.items() if k.startswith(("local-scheduler", "apiserver")))
            kubelet_cores = sum(v for k, v in per_thread.items() if k.startswith("kubelet"))
            process_cores = (process_after - process_before) / wall
            idle_passes, idle_attempts = scheduler.passes - passes, scheduler.queue.stats().attempts - attempts

            items = client.list(PODS, "default")["items"]
            victim = next(p["metadata"]["name"] for p in items if p["spec"].get("nodeName"))
            waiting = {p["metadata"]["name"] for p in items if not p["spec"].get("nodeName")}
            freed = time.monotonic()
            client.delete(PODS, victim, "default", grace_period_seconds=0)

            def next_bound() -> bool:
                return any(p["spec"].get("nodeName") and p["metadata"]["name"] in waiting
                           for p in client.list(PODS, "default")["items"])
            wait_until("a waiting pod bound in the freed slot", next_bound, 60.0, every=0.02)
            bind_s = time.monotonic() - freed
        finally:
            client.close()
            cluster.stop(60.0)
    top = sorted(per_thread.items(), key=lambda kv: -kv[1])[:4]
    rows = [(f"{BACKLOG_PODS} sleeping pods on a node of pods={PODS_ON_NODE}: {waiting_count} waiting, "
             f"{WINDOW:g} s without a change", ""),
            ("  scheduler + API server threads", f"{scheduler_cores:.4f} cores"),
            ("  scheduler passes / attempts meanwhile", f"{idle_passes} / {idle_attempts}"),
            ("  whole process (kubelet threads)", f"{process_cores:.4f} cores ({kubelet_cores:.4f})"),
            ("  busiest threads", ", ".join(f"{k} {v:.4f}" for k, v in top)),
            ("  a running pod deleted -> a waiting pod bound", f"{bind_s * 1e3:.0f} ms")]
    return Outcome(rows, inputs={"pods": BACKLOG_PODS, "node_pods": PODS_ON_NODE, "window_s": WINDOW},
                   figures={"scheduler_server_cores": scheduler_cores, "process_cores": process_cores,
                            "kubelet_cores": kubelet_cores, "idle_passes": idle_passes,
                            "idle_attempts": idle_attempts, "freed_slot_bind_s": bind_s},
                   targets={f"backlog: scheduler + API server <= {CPU_TARGET} cores while nothing changes":
                            scheduler_cores <= CPU_TARGET,
                            f"backlog: a freed slot binds the next pod in <= {BIND_TARGET:g} s": bind_s <= BIND_TARGET})


SCHEDULER = {"sched_backlog": bench_sched_backlog}
