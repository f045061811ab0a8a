"""How long a user waits for the local cluster (issue 48, "Start fast"), beside the floor of starting Python at all.

Three commands, interleaved round by round so that the machine's load weighs on each alike:

- the floor: ``python -c 'import mxjob_controller'`` (the interpreter and the package, nothing started);
- ``mxjob-controller local up`` with a fresh ``--kubeconfig-out``: from the spawn until the kubeconfig exists (the
  documented "ready"), then SIGTERM and a wait for its exit (not timed);
- ``mxjob-controller local run`` of a 1/1/1 MXJob (Scheduler, Server, Worker, one replica each, ``command: [true]``)
  end to end, from a temporary directory (it writes ``.mxjob-local/run-kubeconfig`` into its current directory); its
  first line and its "ready" line are timed too.

Reported: the medians, each beside the floor's median, against the issue's targets (local up ≤ 1 s, local run
≤ 1.5 s).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hack.bench.common import ROOT, Outcome, cpu_seconds

TIMEOUT = 60.0
UP_TARGET = 1.0
RUN_TARGET = 1.5
BIN = Path(sys.executable).parent
# Python caches bytecode unless told not to; a shell or container that sets this makes every process compile the
# project anew (seconds, not what a user's second start costs): dropped for these processes, as the Makefile does.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
MXJOB = """\
apiVersion: kubeflow.org/v1
kind: MXJob
metadata: {name: startup}
spec:
  jobMode: MXTrain
  mxReplicaSpecs:
""" + "".join(f"""\
    {rtype}:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - {{name: mxnet, image: mxnet/python, command: ["true"]}}
""" for rtype in ("Scheduler", "Server", "Worker"))


def _floor() -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import mxjob_controller"], check=True, timeout=TIMEOUT, cwd=ROOT,
                   env=ENV)
    return time.monotonic() - started


def _local_up(workdir: Path, i: int) -> tuple[float, float]:
    """(spawn → kubeconfig written, the process's CPU seconds by then)."""
    kubeconfig = workdir / f"up-kubeconfig-{i}"
    log = workdir / f"up-{i}.log"
    with log.open("wb") as out:
        started = time.monotonic()
        proc = subprocess.Popen([str(BIN / "mxjob-controller"), "local", "up", "--port", "0",
                                 "--kubeconfig-out", str(kubeconfig), "--workdir", str(workdir)],
                                cwd=workdir, env=ENV, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = started + TIMEOUT
        while not kubeconfig.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"local up exited with {proc.returncode}: {log.read_text(errors='replace')}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"local up: no kubeconfig within {TIMEOUT:g} s")
            time.sleep(0.002)
        took = time.monotonic() - started
        cpu = cpu_seconds(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError(f"local up stopped with {proc.returncode}: {log.read_text(errors='replace')}")
    return took, cpu


def _local_run(workdir: Path, manifest: Path) -> tuple[float, float, float]:
    """(end to end, first line, "ready" line) in seconds since the spawn."""
    lines: list[tuple[float, str]] = []
    started = time.monotonic()
    proc = subprocess.Popen([str(BIN / "mxjob-controller"), "local", "run", "--timeout", str(int(TIMEOUT)),
                             "--workdir", str(workdir), str(manifest)],
                            cwd=workdir, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    assert proc.stdout is not None

    def read() -> None:
        for line in proc.stdout:   # type: ignore[union-attr]
            lines.append((time.monotonic() - started, line.decode(errors="replace").rstrip()))

    reader = threading.Thread(target=read, name="bench-startup-reader", daemon=True)
    reader.start()
    try:
        proc.wait(TIMEOUT + 10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(TIMEOUT)
    took = time.monotonic() - started
    reader.join(5.0)
    if proc.returncode != 0:
        raise RuntimeError(f"local run exited with {proc.returncode}: " + "\n".join(t for _, t in lines))
    first = lines[0][0] if lines else took
    ready = next((at for at, text in lines if "ready in" in text), took)
    return took, first, ready


def bench_startup(full: bool) -> Outcome:
    rounds = 5 if full else 3
    floors: list[float] = []
    ups: list[tuple[float, float]] = []
    runs: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="mxjob-bench-startup-") as tmp:
        workdir = Path(tmp)
        os.chmod(workdir, 0o755)   # containers run as nobody when this runs as root: they start here
        manifest = workdir / "mxjob.yaml"
        manifest.write_text(MXJOB)
        _local_run(workdir, manifest)   # a warm-up, not counted: the first run writes the bytecode caches
        for i in range(rounds):
            floors.append(_floor())
            ups.append(_local_up(workdir, i))
            runs.append(_local_run(workdir, manifest))
    floor = statistics.median(floors)
    up, up_cpu = (statistics.median(u[k] for u in ups) for k in range(2))
    run, first, ready = (statistics.median(r[k] for r in runs) for k in range(3))
    return Outcome(
        [("floor: python -c 'import mxjob_controller' (median)", f"{floor * 1e3:.0f} ms"),
         ("local up: spawn → kubeconfig written (median)", f"{up * 1e3:.0f} ms ({up / floor:.1f}x the floor)"),
         ("local up: its CPU seconds by then (median)", f"{up_cpu * 1e3:.0f} ms"),
         ("local run 1/1/1 MXJob of `true`: end to end (median)", f"{run * 1e3:.0f} ms ({run / floor:.1f}x the floor)"),
         ("local run: first line, 'ready' line (medians)", f"{first * 1e3:.0f} ms, {ready * 1e3:.0f} ms"),
         ("each round (floor / up / run)", "; ".join(f"{f * 1e3:.0f}/{u[0] * 1e3:.0f}/{r[0] * 1e3:.0f}"
                                                     for f, u, r in zip(floors, ups, runs, strict=True)))],
        inputs={"rounds": rounds},
        figures={"floor_s": floor, "local_up_s": up, "local_run_s": run, "local_run_first_line_s": first,
                 "local_run_ready_s": ready, "floors_s": floors, "local_up_cpu_s": up_cpu,
                 "local_up_rounds_s": [u[0] for u in ups],
                 "local_run_rounds_s": [r[0] for r in runs]},
        ratios={"local_up_over_floor": up / floor, "local_run_over_floor": run / floor},
        targets={f"local up ready <= {UP_TARGET:g} s": up <= UP_TARGET,
                 f"local run 1/1/1 end to end <= {RUN_TARGET:g} s": run <= RUN_TARGET})


STARTUP = {"startup": bench_startup}
