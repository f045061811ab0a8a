"""``mxjob-controller run`` with knobs that are not flags, for the benchmarks' variants (e.g. one write at a time).

    python -m hack.bench.controller --write-threads 1 --slice-batch 1 -- run --kubeconfig F ...

Everything after ``--`` is the ordinary command line; the knobs only change the ``ControllerOptions`` that ``run``
builds (``manager/controllers.py``), so the variant is the real process in every other respect.

``MXJOB_BENCH_PROFILE=<file>`` in the environment (the benchmark's controllers inherit it) profiles every thread of
the controller, each on its own CPU clock, into one pstats file written when it exits: where its CPU goes during a
benchmark (``python -m pstats <file>``). Profiling slows it down, so the times of such a run mean nothing.

``MXJOB_BENCH_TRACEMALLOC=<file>`` traces its allocations (``tracemalloc``, 8 frames) and writes a snapshot of what
is held to that file on each ``SIGUSR2``: where its memory goes once its caches are full (``hack/bench/memory_map``
reads it). Tracing doubles the memory of each block and slows allocation down: the RSS of such a run means nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m hack.bench.controller")
    parser.add_argument("--write-threads", type=int, default=None, help="ControllerOptions.write_threads")
    parser.add_argument("--slice-batch", type=int, default=None, help="ControllerOptions.slice_batch")
    parser.add_argument("--event-writers", type=int, default=None, help="ControllerOptions.event_writers")
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    knobs = {k: v for k, v in (("write_threads", args.write_threads), ("slice_batch", args.slice_batch),
                               ("event_writers", args.event_writers)) if v is not None}
    if knobs:
        from mxjob_controller.manager import controllers

        original = controllers.ControllerOptions

        def with_knobs(*a: Any, **kw: Any) -> Any:
            return dataclasses.replace(original(*a, **kw), **knobs)

        controllers.ControllerOptions = with_knobs  # type: ignore[misc, assignment]
    from mxjob_controller.cli import main as cli_main

    sys.argv = ["mxjob-controller", *rest]
    trace_to = os.environ.get("MXJOB_BENCH_TRACEMALLOC")
    if trace_to:
        _trace_allocations(trace_to)
    profile_to = os.environ.get("MXJOB_BENCH_PROFILE")
    if not profile_to:
        cli_main()
        return
    profiles = _profile_threads()
    try:
        cli_main()
    finally:
        _dump(profiles, profile_to)


def _profile_threads() -> list[Any]:
    """Every thread's CPU time by function (cProfile with each thread's own clock), the main thread's included."""
    import cProfile
    import threading
    import time

    profiles: list[Any] = []
    run = threading.Thread.run

    def profiled_run(self: threading.Thread) -> None:
        prof = cProfile.Profile(time.thread_time)
        profiles.append(prof)
        prof.enable()
        try:
            run(self)
        finally:
            prof.disable()

    threading.Thread.run = profiled_run  # type: ignore[method-assign]
    main = cProfile.Profile(time.thread_time)
    profiles.append(main)
    main.enable()
    return profiles


def _trace_allocations(path: str) -> None:
    """Trace from now on; each SIGUSR2 writes what is held then to ``path`` (whole: written aside, then renamed)."""
    import signal
    import tracemalloc

    tracemalloc.start(8)

    def dump(signum: int, frame: Any) -> None:
        tracemalloc.take_snapshot().dump(f"{path}.part")
        os.replace(f"{path}.part", path)

    signal.signal(signal.SIGUSR2, dump)


def _dump(profiles: list[Any], path: str) -> None:
    import pstats

    stats = None
    for prof in profiles:
        try:
            prof.disable()
            stats = pstats.Stats(prof) if stats is None else stats.add(prof)
        except (TypeError, ValueError):   # a thread that never ran a profiled call
            continue
    if stats is not None:
        stats.dump_stats(path)


if __name__ == "__main__":
    main(sys.argv[1:])
