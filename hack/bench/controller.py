"""``mxjob-controller run`` with knobs that are not flags, for the benchmarks' variants (e.g. one write at a time).

    python -m hack.bench.controller --write-threads 1 --slice-batch 1 -- run --kubeconfig F ...

Everything after ``--`` is the ordinary command line; the knobs only change the ``ControllerOptions`` that ``run``
builds (``manager/controllers.py``), so the variant is the real process in every other respect.
"""

from __future__ import annotations

import argparse
import dataclasses
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
    cli_main()


if __name__ == "__main__":
    main(sys.argv[1:])
