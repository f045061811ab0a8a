"""Where the controller's memory goes at scale (issue 48): the scale benchmark's jobs seeded at a small size, then
``mxjob-controller run`` traced by ``tracemalloc`` (``MXJOB_BENCH_TRACEMALLOC``, hack/bench/controller.py) until
every job is reconciled, and what it holds then, by the line that allocated it (the first frame inside
``mxjob_controller``), per job.

    python -m hack.bench.memory_map [finished running] [--keep DIR]

``--keep DIR`` also writes the listed jobs, pods and services (as the API server sends them, one JSON list per kind)
and the snapshot there, to study offline what the caches' transforms keep of each object. Not part of ``make
bench``: a tool to read, its figures are the traced process's (tracing slows allocation and doubles each block's
overhead; the RSS of the untraced controller is the scale benchmark's).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import tracemalloc
from pathlib import Path

from hack.bench.common import NAMESPACE, Procs, client_for, rss_kib
from hack.bench.scale import SETTLE_TIMEOUT, seed_jobs, wait_settled

PACKAGE = os.sep + "mxjob_controller" + os.sep


def _where(trace: tracemalloc.Trace) -> str:
    """The innermost frame of the project that allocated the block (else the innermost frame)."""
    frames = list(trace.traceback)[::-1]   # innermost first (a traceback is ordered from the oldest frame)
    for frame in frames:
        if PACKAGE in frame.filename:
            return f"{frame.filename.split(PACKAGE, 1)[1]}:{frame.lineno}"
    frame = frames[0]
    return f"{frame.filename.rsplit(os.sep, 1)[-1]}:{frame.lineno}"


def report(snapshot: tracemalloc.Snapshot, jobs: int, top: int = 40) -> None:
    by_line: dict[str, list[int]] = {}
    for trace in snapshot.traces:
        entry = by_line.setdefault(_where(trace), [0, 0])
        entry[0] += trace.size
        entry[1] += 1
    total = sum(size for size, _ in by_line.values())
    print(f"traced {total / 2**20:.1f} MiB in {sum(n for _, n in by_line.values())} blocks; "
          f"{total / jobs:.0f} B per job ({jobs} jobs)")
    for where, (size, count) in sorted(by_line.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{size / 2**20:8.2f} MiB {size / jobs:7.0f} B/job {count:8d} blocks  {where}")


def main() -> None:
    if sys.argv[1:2] == ["--report"]:   # python -m hack.bench.memory_map --report SNAPSHOT JOBS
        report(tracemalloc.Snapshot.load(sys.argv[2]), int(sys.argv[3]))
        return
    from mxjob_controller.mxnet.framework import MXJOBS
    from mxjob_controller.runtime.client import PODS, SERVICES
    from tests.support import free_port

    parser = argparse.ArgumentParser(prog="python -m hack.bench.memory_map")
    parser.add_argument("finished", type=int, nargs="?", default=1000)
    parser.add_argument("running", type=int, nargs="?", default=100)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    finished, running = args.finished, args.running
    with Procs() as procs:
        procs.server()
        client = client_for(procs.kubeconfig)
        try:
            seed_jobs(client, finished, running)
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                for name, resource in (("jobs", MXJOBS), ("pods", PODS), ("services", SERVICES)):
                    items = client.list_all(resource, NAMESPACE)
                    (args.keep / f"{name}.json").write_text(json.dumps(items))
            snapshot_path = procs.dir / "controller.tracemalloc"
            os.environ["MXJOB_BENCH_TRACEMALLOC"] = str(snapshot_path)
            port = free_port()
            ctl = procs.controller(qps=-1, threadiness=4, resync="600s", metrics_port=port,
                                   start_timeout=SETTLE_TIMEOUT)
            wait_settled(port, procs.procs)
            rss = rss_kib(ctl.pid)
            ctl.send_signal(signal.SIGUSR2)
            deadline = time.monotonic() + 600
            while not snapshot_path.exists():
                if time.monotonic() > deadline:
                    raise RuntimeError("no snapshot")
                time.sleep(0.5)
            snapshot = tracemalloc.Snapshot.load(str(snapshot_path))
            if args.keep is not None:
                (args.keep / "controller.tracemalloc").write_bytes(snapshot_path.read_bytes())
        finally:
            client.close()
    print(f"{finished} finished + {running} running jobs; traced controller RSS {rss / 1024:.0f} MiB")
    report(snapshot, finished + running)


if __name__ == "__main__":
    main()
