"""The log-time sampler looks only at logs written to (``file_changes.py``, ``log_times.py``), and still times
every byte a sample after it was written."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

from mxjob_controller.local.kubelet.file_changes import FileChanges
from mxjob_controller.local.kubelet.log_times import LogTimes
from tests.support import wait_for


def test_only_the_files_written_to_are_reported_and_a_removed_one_is_forgotten(tmp_path):
    changes = FileChanges()
    try:
        written, quiet = tmp_path / "written.log", tmp_path / "quiet.log"
        for path in (written, quiet):
            path.touch()
            assert changes.add(path)
        assert changes.changed() == set()
        with written.open("ab") as f:
            f.write(b"line\n")
        assert changes.changed() == {written}
        assert changes.changed() == set()   # each write reported once
        quiet.unlink()
        assert changes.changed() == set()
        assert quiet not in changes._watches
        changes.remove(written)
        with written.open("ab") as f:
            f.write(b"more\n")
        assert changes.changed() == set()
    finally:
        changes.close()


def test_the_sampler_measures_a_quiet_log_once_and_times_each_write(tmp_path):
    closed = threading.Event()
    measured: Counter[Path] = Counter()

    def measure(path: Path) -> int | None:
        measured[path] += 1
        return path.stat().st_size

    times = LogTimes(closed, measure)
    written, quiet = tmp_path / "written.log", tmp_path / "quiet.log"
    for path in (written, quiet):
        path.write_bytes(b"before the watch\n")
        times.started(path)
    try:
        timeline = times.timeline(written)
        assert timeline is not None
        wait_for(lambda: measured[written] >= 1 and measured[quiet] >= 1,
                 what="what was written before the watches noted")
        for i in range(5):   # each write is noted by the sample after it
            with written.open("ab") as f:
                f.write(b"line %d\n" % i)
            size = written.stat().st_size
            before = measured[written]
            wait_for(lambda before=before: measured[written] > before, what=f"write {i} measured")
            assert timeline.time_of(size) <= time.time()
        assert measured[quiet] == 1   # looked at once (what it held before its watch), never again
    finally:
        closed.set()
        times.join(5.0)
