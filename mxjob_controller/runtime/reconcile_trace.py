"""An optional record of every reconcile (JSON lines: key, thread, start, end, result), and its reader.

Why: "a key is never reconciled by two threads at once" is the guarantee the job logic rests on; a trace lets a
test (or an operator chasing a bug) prove it after the fact instead of trusting it. ``start`` and ``end`` are
``time.monotonic()`` seconds taken inside the worker's hold on the key (after the queue handed it out, before
``done``), so two records of one key overlap only if the queue really let two threads hold it at once.

Each record is one ``write`` of a whole line, flushed at once. A reader may still catch the last one half written
(a read of a regular file is not atomic with a concurrent write), so :func:`read_trace` leaves out a last line that
has no newline yet: it is read whole next time.
"""

from __future__ import annotations

import json
import os
import threading
from collections import defaultdict
from collections.abc import Hashable
from pathlib import Path
from typing import Any


class ReconcileTrace:
    """Appends one JSON line per reconcile to ``path`` (thread-safe). After :meth:`close` (the controller's
    shutdown), records are dropped: a worker that outlived the shutdown cannot keep the file open."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def record(self, key: Hashable, thread: str, start: float, end: float, result: str) -> None:
        line = json.dumps({"key": key, "thread": thread, "start": start, "end": end, "result": result},
                          default=str) + "\n"
        with self._lock:
            if not self._file.closed:
                self._file.write(line)
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_trace(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every whole record of a trace file, in the order written (a last line still being written is left out)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    return [json.loads(line) for line in lines[:-1] if line.strip()]


def concurrent_runs(records: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Pairs of records of one key whose [start, end] intervals overlap: empty when no key ever ran twice at once."""
    by_key: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_key[json.dumps(record["key"], sort_keys=True)].append(record)
    overlaps = []
    for runs in by_key.values():
        runs.sort(key=lambda r: r["start"])
        latest = runs[0]  # the run ending last among those started so far
        for run in runs[1:]:
            if run["start"] < latest["end"]:
                overlaps.append((latest, run))
            if run["end"] > latest["end"]:
                latest = run
    return overlaps
