"""Tests that must run alone while the suite runs on several pytest-xdist workers (``make test``).

A test marked ``exclusive`` measures what any other test's load would skew (the chaos run's time targets). Every
test holds a shared lock on one file of the run while it runs (setup to teardown); an exclusive test holds it
exclusively, so it starts once the other workers' current tests have ended, and they start no new test until it has
ended. A second lock, a turnstile every test passes through, keeps a stream of shared holders from starving the
exclusive one (``flock`` grants a shared lock while an exclusive one waits).

Without xdist (one process) there is nothing to wait for and no lock is taken.
"""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

MARKER = "exclusive"


class RunLock:
    """The run's two lock files (named after xdist's run id, shared by its workers), opened once per worker."""

    def __init__(self, run_id: str) -> None:
        base = Path(tempfile.gettempdir()) / f"mxjob-tests-{run_id}"
        self._paths = (Path(f"{base}.turnstile"), Path(f"{base}.lock"))
        self._turnstile: IO[bytes] = open(self._paths[0], "ab")  # noqa: SIM115 - held for the worker's life
        self._tests: IO[bytes] = open(self._paths[1], "ab")  # noqa: SIM115

    @contextmanager
    def held(self, exclusive: bool) -> Iterator[None]:
        fcntl.flock(self._turnstile, fcntl.LOCK_EX)
        try:
            fcntl.flock(self._tests, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            if not exclusive:
                fcntl.flock(self._turnstile, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self._tests, fcntl.LOCK_UN)
            if exclusive:
                fcntl.flock(self._turnstile, fcntl.LOCK_UN)

    def close(self) -> None:
        """At the worker's end: the files go with the first worker to end (the others hold them open)."""
        self._turnstile.close()
        self._tests.close()
        for path in self._paths:
            path.unlink(missing_ok=True)
