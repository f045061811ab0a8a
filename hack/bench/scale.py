"""The scale benchmark: the controller with 10,000 finished and 1,000 running jobs cached (issues 35 and 48).

- scale  N finished and M running 1/1/1 MXJobs, each with its 3 pods and 3 services, seeded straight into the API
         (``local up --kubelet none``: the jobs' statuses and the pods' as a controller and a kubelet would have
         written them, from many threads); then ``mxjob-controller run`` against it: its start-up (caches listed,
         every job reconciled once), its RSS, the CPU of one resync of every job (``--resync-period``), and the time
         from a new 1/1/1 job's creation to its first status while that cache is held. Default size 2,000 + 200
         (about 3 minutes on 2 cores); ``--full``: the issue's 10,000 + 1,000 (about 33,000 pods and as many
         services; ``$MXJOB_BENCH_SCALE=finished,running`` sets other sizes).

Finished jobs ended between 1 minute and 2 days ago (a few within the hour in which a new controller process
announces their terminal event), keep their pods (``cleanPodPolicy: None``, which leaves the most in the cache) and
have no TTL. The controller's figures are read from its own ``/metrics`` (reconciles, queue depth) and ``/proc``.
"""

from __future__ import annotations

import os
import re
import statistics
import time
import urllib.request
from typing import Any

from hack.bench.common import NAMESPACE, RESULTS, Outcome, Procs, client_for, cpu_seconds, mxjob, rss_kib, run_threads

LOG_COPY = RESULTS.parent / "bench-scale-controller.log"
SHAPE = {"Scheduler": 1, "Server": 1, "Worker": 1}
SEED_THREADS = 24
RESYNC_PERIOD = 20.0        # seconds; the measured window holds whole periods, each one resync of every job
RESYNCS = 2
LATENCY_JOBS = 3
QUIET_FOR = 3.0             # seconds without a reconcile and with an empty queue: the controller has settled
SCRAPE_EVERY = 1.0
SETTLE_TIMEOUT = 600.0

# targets (issue 35, at 10,000 finished + 1,000 running)
RSS_TARGET_MIB = 600
RSS_TARGET_MB = 300         # issue 48's, in decimal megabytes (286 MiB): what the controller keeps per finished job
RESYNC_CPU_TARGET = 2.0
FIRST_STATUS_TARGET = 2.0


def _conditions(types: list[tuple[str, str]], at: float) -> list[dict[str, Any]]:
    from mxjob_controller.kube.timefmt import rfc3339

    now = rfc3339(at)
    return [{"type": ctype, "status": "True", "reason": f"MXJob{ctype}", "message": message,
             "lastUpdateTime": now, "lastTransitionTime": now} for ctype, message in types]


def job_status(name: str, finished_at: float | None, started_at: float) -> dict[str, Any]:
    """The status a controller wrote for a 1/1/1 job that runs, or that succeeded at ``finished_at``."""
    from mxjob_controller.kube.timefmt import rfc3339

    types = list(SHAPE)
    conditions = [("Created", f"MXJob {name} is created."), ("Running", f"MXJob {name} is running.")]
    if finished_at is None:
        counts = {t: {"active": 1} for t in types}
        status = {"conditions": _conditions(conditions, started_at)}
    else:
        counts = {t: {"succeeded": 1} for t in types}
        ended = _conditions([("Running", f"MXJob {name} is running."),
                             ("Succeeded", f"MXJob {name} is successfully completed.")], finished_at)
        ended[0]["status"] = "False"   # no longer running
        status = {"conditions": _conditions(conditions, started_at)[:1] + ended,
                  "completionTime": rfc3339(finished_at)}
    return {**status, "replicaStatuses": counts, "mxReplicaStatuses": counts, "startTime": rfc3339(started_at),
            "lastReconcileTime": rfc3339(finished_at or started_at)}


class Seeder:
    """Writes jobs and their children straight into the API, as the controller and a kubelet would have: per job,
    the MXJob and its status, then per replica its Service, its pod and the pod's status."""

    def __init__(self, client: Any) -> None:
        from mxjob_controller.core.child_sync import ChildSync
        from mxjob_controller.mxnet.framework import MXNetFramework

        self.client = client
        self.framework = MXNetFramework()
        self.builder = ChildSync(self.framework, None, None, None, write_timeout=60)  # type: ignore[arg-type]

    def seed(self, name: str, finished_at: float | None) -> None:
        from mxjob_controller.core.framework import JobContext
        from mxjob_controller.kube.timefmt import rfc3339
        from mxjob_controller.mxnet.framework import MXJOBS
        from mxjob_controller.runtime.client import PODS, SERVICES
        from tests.kubelet_sim import finished_status, running_status

        started_at = (finished_at or time.time()) - 600
        job = self.client.create(MXJOBS, mxjob(name, SHAPE, clean_pod_policy="None"), NAMESPACE)
        job = self.client.patch(MXJOBS, name, {"status": job_status(name, finished_at, started_at)}, NAMESPACE,
                                subresource="status")
        spec, errors = self.framework.parse(job)
        if spec is None:
            raise RuntimeError(f"invalid benchmark job: {errors}")
        ctx = JobContext(f"{NAMESPACE}/{name}", job, spec, self.framework)
        for rtype in self.framework.replica_types(spec):
            self.client.create(SERVICES, self.builder._service(ctx, rtype, 0), NAMESPACE)
            pod = self.client.create(PODS, self.builder._pod(ctx, rtype, 0), NAMESPACE)
            containers = pod["spec"]["containers"]
            status = finished_status(containers, rfc3339(finished_at)) if finished_at is not None \
                else running_status(containers, rfc3339(started_at))
            self.client.patch(PODS, pod["metadata"]["name"], {"status": status}, NAMESPACE, subresource="status")


# --- the controller's own figures -----------------------------------------------------------------------------

_SAMPLE = re.compile(r"^(\w+)(\{[^}]*\})? (\S+)$", re.M)


def scrape(port: int) -> dict[str, float]:
    """The controller's MXJob reconciles (all results), queue depth and jobs by state (``jobs_<state>``), from its
    ``/metrics``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as resp:
        text = resp.read().decode()
    out = {"reconciles": 0.0, "depth": 0.0}
    for name, labels, value in _SAMPLE.findall(text):
        if name == "controller_runtime_reconcile_total" and 'controller="mxjob-controller"' in (labels or ""):
            out["reconciles"] += float(value)
        elif name == "workqueue_depth" and 'name="mxjob-controller"' in (labels or ""):
            out["depth"] += float(value)
        elif name == "mxjob_controller_jobs" and 'framework="mxnet"' in (labels or ""):
            state = re.search(r'state="(\w+)"', labels)
            out[f"jobs_{state.group(1) if state else ''}"] = float(value)
    return out


def wait_settled(port: int, alive: list[Any], timeout: float = SETTLE_TIMEOUT) -> float:
    """Wait until the controller reconciled nothing for :data:`QUIET_FOR` seconds with an empty queue (its
    ``/metrics``, scraped every :data:`SCRAPE_EVERY` seconds: a scrape computes the job gauges over the whole cache,
    so it is not free; never inside a CPU measurement); the monotonic time of its last reconcile (as seen by
    polling, so up to a scrape late)."""
    deadline = time.monotonic() + timeout
    last = scrape(port)
    changed_at = time.monotonic()
    while True:
        time.sleep(SCRAPE_EVERY)
        now = scrape(port)
        if now["reconciles"] != last["reconciles"] or now["depth"] > 0:
            changed_at = time.monotonic()
        last = now
        if time.monotonic() - changed_at >= QUIET_FOR:
            return changed_at
        if time.monotonic() > deadline or any(p.poll() is not None for p in alive):
            raise RuntimeError("the controller did not settle")


BUSY_CPU = 0.05     # CPU seconds in one 0.2 s step: the controller is working (a resync)
QUIET_CPU = 0.004   # CPU seconds at most in each 0.2 s step of a quiet second


def wait_cpu(pid: int, *, busy: bool, timeout: float) -> float:
    """Wait, reading only ``/proc`` (nothing that costs the controller CPU), until it works (``busy``) or has been
    quiet for a second; the monotonic time that happened."""
    deadline = time.monotonic() + timeout
    last, quiet_since = cpu_seconds(pid), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now = cpu_seconds(pid)
        spent, last = now - last, now
        if busy and spent >= BUSY_CPU:
            return time.monotonic()
        if spent > QUIET_CPU:
            quiet_since = time.monotonic()
        elif not busy and time.monotonic() - quiet_since >= 1.0:
            return time.monotonic()
    raise RuntimeError(f"the controller was not {'busy' if busy else 'quiet'} within {timeout:g} s")


def first_status_latency(client: Any, name: str) -> float:
    """Seconds from sending a new 1/1/1 job's create until a GET shows it a status (polled every 10 ms)."""
    from mxjob_controller.mxnet.framework import MXJOBS

    sent = time.monotonic()
    client.create(MXJOBS, mxjob(name, SHAPE), NAMESPACE)
    while True:
        job = client.get(MXJOBS, name, NAMESPACE)
        if (job.get("status") or {}).get("conditions"):
            return time.monotonic() - sent
        if time.monotonic() - sent > 60:
            raise RuntimeError(f"{name}: no status within 60 s")
        time.sleep(0.01)


def seed_jobs(client: Any, finished: int, running: int) -> float:
    """Seed ``finished`` jobs (``done-<i>``, ended between 1 minute and 2 days ago, evenly) and ``running`` ones
    (``run-<i>``) with their children; the seconds it took."""
    seeder = Seeder(client)
    now, start = time.time(), time.monotonic()
    run_threads("bench-seed", finished + running, lambda i: seeder.seed(
        f"done-{i}" if i < finished else f"run-{i - finished}",
        now - 60 - i * (2 * 86400 / finished) if i < finished else None), SEED_THREADS)
    return time.monotonic() - start


def bench_scale(full: bool) -> Outcome:
    from tests.support import free_port

    finished, running = (10_000, 1_000) if full else (2_000, 200)
    if os.environ.get("MXJOB_BENCH_SCALE"):   # e.g. 500,50
        finished, running = (int(n) for n in os.environ["MXJOB_BENCH_SCALE"].split(","))
    with Procs() as procs:
        procs.server()
        client = client_for(procs.kubeconfig)
        try:
            seed_seconds = seed_jobs(client, finished, running)
            port = free_port()
            spawned = time.monotonic()
            ctl = procs.controller(qps=-1, threadiness=4, resync=f"{RESYNC_PERIOD:g}s", metrics_port=port,
                                   start_timeout=SETTLE_TIMEOUT)
            started = time.monotonic() - spawned
            settled = wait_settled(port, procs.procs) - spawned
            rss_settled = rss_kib(ctl.pid)
            states = scrape(port)
            if (states.get("jobs_Succeeded"), states.get("jobs_Running")) != (finished, running):
                raise RuntimeError(f"the seeded jobs are not as the controller sees them: {states}")
            # Whole resync periods, from just after one resync's work is over, so that the window holds exactly the
            # next two (the last one's tail: until the controller is quiet again). Only /proc is read meanwhile.
            wait_cpu(ctl.pid, busy=True, timeout=RESYNC_PERIOD * 3)
            wait_cpu(ctl.pid, busy=False, timeout=RESYNC_PERIOD)
            reconciles_before = scrape(port)["reconciles"]
            cpu_before, window_start = cpu_seconds(ctl.pid), time.monotonic()
            time.sleep(RESYNC_PERIOD * RESYNCS)
            wait_cpu(ctl.pid, busy=False, timeout=RESYNC_PERIOD)
            window = time.monotonic() - window_start
            cpu = cpu_seconds(ctl.pid) - cpu_before
            resync_reconciles = scrape(port)["reconciles"] - reconciles_before
            latencies = [first_status_latency(client, f"new-{i}") for i in range(LATENCY_JOBS)]
            rss_end = rss_kib(ctl.pid)
        finally:
            client.close()
            LOG_COPY.parent.mkdir(parents=True, exist_ok=True)
            LOG_COPY.write_text(procs.log("controller"))   # what the controller said, kept after its directory goes
    resyncs = RESYNCS
    per_resync = cpu / resyncs
    latency = statistics.median(latencies)
    rss_mib = max(rss_settled, rss_end) / 1024
    rows = [(f"{finished} finished + {running} running 1/1/1 MXJobs, {3 * (finished + running)} pods and as many "
             f"services, seeded in {seed_seconds:.0f} s", ""),
            ("  controller start: process start to caches listed and workers running", f"{started:.1f} s"),
            ("  controller start: ... to every job reconciled once (queue empty)", f"{settled:.1f} s"),
            ("  controller RSS, settled / after the resyncs and new jobs",
             f"{rss_settled / 1024:.0f} / {rss_end / 1024:.0f} MiB"),
            (f"  controller CPU per resync of every job ({resyncs} resyncs of {RESYNC_PERIOD:g} s, "
             f"{resync_reconciles / resyncs:.0f} reconciles each)", f"{per_resync:.2f} s"),
            (f"  new 1/1/1 job, creation to first status: median of {LATENCY_JOBS} (max)",
             f"{latency * 1e3:.0f} ms ({max(latencies) * 1e3:.0f} ms)")]
    at_issue_size = (finished, running) == (10_000, 1_000)
    return Outcome(rows, inputs={"finished": finished, "running": running, "shape": "1/1/1",
                                 "resync_period_s": RESYNC_PERIOD, "threadiness": 4},
                   figures={"seed_s": seed_seconds, "start_s": started, "settled_s": settled,
                            "rss_settled_mib": rss_settled / 1024, "rss_end_mib": rss_end / 1024,
                            "cpu_s_per_resync": per_resync, "resync_window_s": window,
                            "reconciles_per_resync": resync_reconciles / resyncs,
                            "first_status_s": latencies},
                   targets={} if not at_issue_size else {
                       f"scale: RSS <= {RSS_TARGET_MIB} MB": rss_mib <= RSS_TARGET_MIB,
                       f"scale: RSS <= {RSS_TARGET_MB} MB (issue 48: {RSS_TARGET_MB * 1e6 / 2**20:.0f} MiB)":
                           rss_mib * 2**20 <= RSS_TARGET_MB * 1e6,
                       f"scale: resync CPU <= {RESYNC_CPU_TARGET:g} s": per_resync <= RESYNC_CPU_TARGET,
                       f"scale: first status <= {FIRST_STATUS_TARGET:g} s": latency <= FIRST_STATUS_TARGET})


SCALE = {"scale": bench_scale}
