"""What the benchmarks share: the processes of a benchmark cluster, the kubelet helper, results and tables.

A system benchmark runs the embedded API server in its own process (``local up --kubelet none --no-controller``),
the controller in another (``run``, through :mod:`hack.bench.controller` when a knob differs from the defaults),
the kubelet helper (:mod:`hack.bench.kubelet`) in a third when pods must run, and drives the load from this one.
Every process is started by :class:`Procs` and killed when its ``with`` block ends, whatever happened.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / ".mxjob-local" / "bench-results.jsonl"
NAMESPACE = "default"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 10.0


@dataclass
class Outcome:
    """What a benchmark measured: the printed rows, and the JSON record's inputs, figures and ratios."""

    rows: list[tuple[str, str]]
    inputs: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    ratios: dict[str, Any] = field(default_factory=dict)
    targets: dict[str, bool] = field(default_factory=dict)   # target → held


# --- machine, results -------------------------------------------------------------------------------------

def git_revision() -> str:
    """The commit, with ``+dirty`` when the working tree differs from it (figures of uncommitted code say so)."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                             timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]}


def record(path: Path, name: str, outcome: Outcome, wall: float, full: bool) -> None:
    """Append one JSON line per benchmark run: what it was given, what it measured, where and on what code."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"benchmark": name, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "full": full,
            "git": git_revision(), "machine": machine(), "wall_seconds": round(wall, 2), "inputs": outcome.inputs,
            "figures": outcome.figures, "ratios": outcome.ratios, "targets": outcome.targets}
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line, sort_keys=True) + "\n")


def print_table(name: str, outcome: Outcome, wall: float, out: TextIO = sys.stdout) -> None:
    width = max([78, *(len(label) for label, _ in outcome.rows)])
    print(f"== {name}", file=out)
    for label, value in outcome.rows:
        print(f"   {label:<{width}} {value}", file=out)
    for target, held in outcome.targets.items():
        print(f"   target {target:<{width - 7}} {'holds' if held else 'MISSED'}", file=out)
    print(f"   {'wall time':<{width}} {wall:.1f} s", file=out, flush=True)


# --- processes --------------------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def wait_until(what: str, check: Callable[[], bool], timeout: float, every: float = 0.05,
               alive: Sequence[subprocess.Popen[bytes]] = ()) -> None:
    """Poll ``check`` until it holds; RuntimeError naming ``what`` after ``timeout`` or when a process died."""
    deadline = time.monotonic() + timeout
    while not check():
        dead = [p for p in alive if p.poll() is not None]
        if dead:
            raise RuntimeError(f"{what}: process {dead[0].args!r} exited with {dead[0].returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout:g} s")
        time.sleep(every)


SETTLE_WINDOW = 0.25      # seconds over which a process counts as idle...
SETTLE_CPU = 0.01         # ... when it used at most this many CPU seconds in them (the clock ticks 100 times a second)
SETTLE_TIMEOUT = 10.0


def settle(procs: Sequence[subprocess.Popen[bytes]], timeout: float = SETTLE_TIMEOUT) -> bool:
    """Wait until ``procs`` are idle (their start-up work done: a server that answers, a controller whose caches
    synced, may still be compiling or listing) and this process has collected its garbage, so that a measured
    window holds the work measured and not what the previous step left; False if they were still busy after
    ``timeout`` seconds (the measurement then goes on, as it did before)."""
    gc.collect()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = [cpu_seconds(p.pid) for p in procs]
        time.sleep(SETTLE_WINDOW)
        if all(cpu_seconds(p.pid) - b <= SETTLE_CPU for p, b in zip(procs, before, strict=True)):
            return True
    return False


class Procs:
    """The processes of one benchmark run, in a temporary directory holding their logs and kubeconfig."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="mxjob-bench-")
        self.dir = Path(self._tmp.name)
        self.kubeconfig = self.dir / "kubeconfig"
        self.audit = self.dir / "audit.jsonl"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.names: list[str] = []   # each process's name, in the order of procs

    def __enter__(self) -> Procs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._tmp.cleanup()

    def spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = (self.dir / f"{name}.log").open("wb")
        try:
            proc = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        finally:
            log.close()
        self.procs.append(proc)
        self.names.append(name)
        return proc

    def log(self, name: str) -> str:
        path = self.dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def server(self, *faults: str, audit: bool = False) -> subprocess.Popen[bytes]:
        """``local up`` without kubelet, controller or webhooks (the controller's figures, not admission's, against
        the same server the earlier results had); returns once its kubeconfig is written (it is ready)."""
        # --insecure-http: the floors were set over plain HTTP, and the harness's clients speak it.
        args = ["-m", "mxjob_controller", "local", "up", "--insecure-http", "--kubelet", "none", "--no-controller",
                "--no-webhooks", "--port", "0",
                "--kubeconfig-out", str(self.kubeconfig), "--log-level", "warning", "--watcher-queue", "100000"]
        for rule in faults:
            args += ["--fault", rule]
        if audit:
            args += ["--audit-log", str(self.audit)]
        proc = self.spawn("server", args)
        wait_until("local up", self.kubeconfig.exists, START_TIMEOUT, alive=[proc])
        return proc

    def controller(self, *, qps: float | None, threadiness: int = 1, resync: str = "10s",
                   write_threads: int | None = None, slice_batch: int | None = None,
                   event_writers: int | None = None, metrics_port: int = 0,
                   start_timeout: float = START_TIMEOUT) -> subprocess.Popen[bytes]:
        """``mxjob-controller run`` against the server (knobs other than its flags through hack.bench.controller;
        ``qps`` None: its default budget; ``metrics_port``: serve ``/metrics`` there, 0: not at all); returns once
        it logged that every framework's controller (MXJob, TFJob, GenericJob) has its caches synced and its workers
        running, within ``start_timeout`` seconds (also its ``--cache-sync-timeout``, when longer than the default).
        Not at the MXJob controller's line, the first of three: the others' lists and watches would then start
        inside the measured window, and the variant measured first after a start would pay for them."""
        knobs = []
        if write_threads is not None:
            knobs += ["--write-threads", str(write_threads)]
        if slice_batch is not None:
            knobs += ["--slice-batch", str(slice_batch)]
        if event_writers is not None:
            knobs += ["--event-writers", str(event_writers)]
        args = ["-m", "hack.bench.controller", *knobs, "--", "run", "--kubeconfig", str(self.kubeconfig),
                "--resync-period", resync, "--threadiness", str(threadiness),
                *(["--cache-sync-timeout", str(start_timeout)] if start_timeout > START_TIMEOUT else []),
                *(["--kube-api-qps", str(qps)] if qps is not None else []),
                "--metrics-bind-address", f"127.0.0.1:{metrics_port}" if metrics_port else "0",
                "--health-probe-bind-address", "0", "--log-level", "info"]
        proc = self.spawn("controller", args)
        wait_until("controller start", lambda: '"controller running"' in self.log("controller"), start_timeout,
                   every=0.1, alive=[proc])
        return proc

    def kubelet(self, finish_prefix: str = "done-") -> subprocess.Popen[bytes]:
        """The kubelet helper: every pod Running, those of jobs named ``finish_prefix…`` Succeeded."""
        proc = self.spawn("kubelet", ["-m", "hack.bench.kubelet", "--kubeconfig", str(self.kubeconfig),
                                      "--finish-prefix", finish_prefix])
        wait_until("kubelet helper start", lambda: "kubelet helper ready" in self.log("kubelet"), START_TIMEOUT,
                   every=0.1, alive=[proc])
        return proc

    def end(self, name: str) -> None:
        """Stop one process (SIGTERM to its group, SIGKILL after STOP_TIMEOUT), e.g. the kubelet helper once its
        pods are reported, so that what follows runs without its API traffic."""
        proc = self.procs[self.names.index(name)]
        if proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(STOP_TIMEOUT)

    def stop(self) -> None:
        """SIGTERM every process group, then SIGKILL what is left after STOP_TIMEOUT."""
        for proc in self.procs:
            if proc.poll() is None:
                _signal_group(proc, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait(STOP_TIMEOUT)
        self.procs.clear()
        self.names.clear()

    def audit_records(self) -> list[dict[str, Any]]:
        if not self.audit.exists():
            return []
        out = []
        for line in self.audit.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:   # a line being written
                continue
        return out


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


# --- the driver's client and caches -------------------------------------------------------------------------

def client_for(kubeconfig: Path, qps: float | None = -1, component: str = "bench-driver") -> Any:
    from mxjob_controller.runtime.client import Client, load_config

    qps = -1 if qps is None else qps   # the controller's default against this server: no client-side limit
    config = load_config(str(kubeconfig)).with_overrides(qps=qps, burst=max(30, int(qps * 1.5)) if qps > 0 else 30)
    return Client(config, component=component, program="mxjob-bench")


class OfficialClientWrites:
    """The floor's writes through the official ``kubernetes`` client, as the issue defined its floor ("the same pods
    and Services created directly by the official client with 16 threads"): the two verbs the floor uses
    (``create``, ``patch`` of a status), with the signatures of our client's, so the same floor driver runs on either.
    Pods and services come back as the client's model objects (what its users pay for); custom objects as dicts."""

    def __init__(self, kubeconfig: Path, threads: int, component: str = "bench-floor") -> None:
        from kubernetes import client, config

        configuration = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
        configuration.connection_pool_maxsize = threads
        self.api = client.ApiClient(configuration)
        self.api.user_agent = f"mxjob-bench/unknown (linux/amd64) {component}"
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    def create(self, resource: Any, body: dict[str, Any], namespace: str) -> Any:
        create = {"pods": self.core.create_namespaced_pod, "services": self.core.create_namespaced_service}
        return create[resource.plural](namespace, body)

    def patch(self, resource: Any, name: str, patch: dict[str, Any], namespace: str, *,
              subresource: str | None = None) -> dict[str, Any]:
        if subresource != "status":
            raise ValueError("the floor patches statuses only")
        return self.custom.patch_namespaced_custom_object_status(resource.group, resource.version, namespace,
                                                                 resource.plural, name, patch)

    def close(self) -> None:
        self.api.close()


@contextmanager
def informers(client: Any, *resources: Any, handlers: dict[Any, dict[str, Callable[..., None]]] | None = None,
              label_selector: str | None = None) -> Iterator[list[Any]]:
    """Started, synced informers of the driver (one per resource, in NAMESPACE), stopped on exit."""
    from mxjob_controller.runtime.informer import SharedInformer, drop_managed_fields

    started = []
    try:
        for resource in resources:
            informer = SharedInformer(client, resource, namespace=NAMESPACE, transform=drop_managed_fields,
                                      label_selector=label_selector)
            for kind, fn in ((handlers or {}).get(resource) or {}).items():
                informer.add_handler(**{kind: fn})
            informer.start()
            started.append(informer)
        for informer in started:
            if not informer.wait_for_cache_sync(START_TIMEOUT):
                raise RuntimeError(f"driver informer {informer.name} did not sync")
        yield started
    finally:
        for informer in started:
            informer.stop(STOP_TIMEOUT)


def mxjob(name: str, replicas: dict[str, int], *, clean_pod_policy: str | None = None) -> dict[str, Any]:
    """An MXTrain job (Scheduler, Server, Worker counts in ``replicas``) whose containers run nothing: the benchmark
    kubelet only reports their states."""
    spec: dict[str, Any] = {"jobMode": "MXTrain", "mxReplicaSpecs": {
        rtype: {"replicas": n, "restartPolicy": "Never", "template": {"spec": {"containers": [
            {"name": "mxnet", "image": "mxnet/python:1.9.1", "command": ["python", "train.py"]}]}}}
        for rtype, n in replicas.items()}}
    if clean_pod_policy:
        spec["runPolicy"] = {"cleanPodPolicy": clean_pod_policy}
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec}


def run_threads(name: str, count: int, work: Callable[[int], None], threads: int, timeout: float = 3600) -> None:
    """``work(i)`` for every i < count over ``threads`` named threads, each joined within ``timeout``; after a
    failure no new i starts, and the first error is raised."""
    lock = threading.Lock()
    todo = iter(range(count))
    errors: list[BaseException] = []

    def loop() -> None:
        while True:
            with lock:
                i = next(todo, None)
                if i is None or errors:
                    return
            try:
                work(i)
            except BaseException as e:
                with lock:
                    errors.append(e)
                return

    workers = [threading.Thread(target=loop, name=f"{name}-{i}", daemon=True) for i in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(timeout)
    if errors:
        raise errors[0]


def submit(client: Any, jobs: Sequence[dict[str, Any]], threads: int = 8,
           on_created: Callable[[dict[str, Any], float], None] | None = None) -> None:
    """Create ``jobs`` from ``threads`` named threads at once; ``on_created(job, sent_at)`` after each."""
    from mxjob_controller.mxnet.framework import MXJOBS

    def create(i: int) -> None:
        sent = time.monotonic()
        created = client.create(MXJOBS, jobs[i], NAMESPACE)
        if on_created is not None:
            on_created(created, sent)

    run_threads("bench-submit", len(jobs), create, threads, timeout=600)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]
