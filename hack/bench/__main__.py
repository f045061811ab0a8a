"""Run the benchmarks: each prints a table and its wall time, and appends a JSON record (inputs, figures, ratios,
targets, machine, git revision) to the results file.

    make bench                                   # everything at the sizes that fit in ~5 minutes on 2 cores
    make bench-full                              # the issue's sizes (300 jobs, 10,000 pods, 30 s of latency, ...)
    .venv/bin/python -m hack.bench throughput large_job      # some of them
    .venv/bin/python -m hack.bench --list

Absolute figures depend on the machine and on what else runs on it; each benchmark measures its ratios within one
run, side by side, so that noise cancels as far as it can.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hack.bench.cache import CACHE
from hack.bench.client_transport import CLIENT_TRANSPORT
from hack.bench.common import RESULTS, print_table, record
from hack.bench.events import EVENTS
from hack.bench.micro import MICRO
from hack.bench.sandbox import SANDBOX
from hack.bench.scale import SCALE
from hack.bench.scheduler import SCHEDULER
from hack.bench.server_memory import SERVER_MEMORY
from hack.bench.startup import STARTUP
from hack.bench.system import SYSTEM

BENCHMARKS = {**SYSTEM, **EVENTS, **CACHE, **MICRO, **CLIENT_TRANSPORT, **SERVER_MEMORY, **SANDBOX, **SCALE,
              **SCHEDULER, **STARTUP}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m hack.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    parser.add_argument("--full", action="store_true", help="the issue's full sizes (make bench-full)")
    parser.add_argument("--results", type=Path, default=RESULTS, help=f"JSON-lines results file (default {RESULTS})")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(BENCHMARKS))
        return 0
    unknown = [n for n in args.names if n not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2
    missed = []
    started = time.monotonic()
    for name in args.names or list(BENCHMARKS):
        begin = time.monotonic()
        outcome = BENCHMARKS[name](args.full)
        wall = time.monotonic() - begin
        print_table(name, outcome, wall)
        record(args.results, name, outcome, wall, args.full)
        missed += [t for t, held in outcome.targets.items() if not held]
    print(f"== all: {time.monotonic() - started:.0f} s; results appended to {args.results}")
    if missed:
        print("targets missed: " + "; ".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
