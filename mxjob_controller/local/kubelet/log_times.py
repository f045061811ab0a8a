"""When each byte of a container's log appeared: the kubelet's clock for ``pods/log``'s ``timestamps``,
``sinceSeconds`` and ``sinceTime``.

A container writes its log file itself (the file is its stdout and stderr), so no line carries a time. A container
runtime stamps each line when it reads it from the container's pipe; here one thread (``kubelet-log-times``) looks
every :data:`SAMPLE_SECONDS` at the size of each running container's file written to since it last looked (inotify,
``file_changes.py``; every running one's where inotify cannot watch it) and notes (size, time) when it grew. A
line's time is the first sample that saw it whole: at most one sample after it was written.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from mxjob_controller.local.kubelet.file_changes import FileChanges

log = logging.getLogger(__name__)

SAMPLE_SECONDS = 0.05


class Timeline:
    """One file's samples: (size, time) pairs, both ascending; bytes below a size had appeared by its time."""

    def __init__(self, start: float) -> None:
        self._lock = threading.Lock()
        self._sizes: list[int] = [0]
        self._times: list[float] = [start]

    def note(self, size: int, now: float) -> None:
        with self._lock:
            if size > self._sizes[-1]:
                self._sizes.append(size)
                self._times.append(max(now, self._times[-1]))

    def time_of(self, end: int) -> float:
        """When the bytes up to offset ``end`` had all appeared (now, for bytes no sample has seen yet)."""
        with self._lock:
            i = bisect.bisect_left(self._sizes, end)
            return self._times[i] if i < len(self._times) else time.time()

    def offset_since(self, since: float) -> int:
        """The first offset whose byte appeared at ``since`` or later (bytes after the last sample count as new)."""
        with self._lock:
            k = bisect.bisect_left(self._times, since)
            return self._sizes[k - 1] if 0 < k <= len(self._sizes) else 0


class LogTimes:
    """The timelines of the log files, sampled by one thread while any file is being written."""

    def __init__(self, closed: threading.Event, measure: Callable[[Path], int | None]) -> None:
        """``measure(path)``: the bytes written to the log so far (rotating it if it is due), None if it is gone."""
        self._closed = closed
        self._measure = measure
        self._lock = threading.Lock()
        self._timelines: dict[Path, Timeline] = {}
        self._running: set[Path] = set()
        self._unwatched: set[Path] = set()   # running files inotify does not watch: looked at every sample
        self._changes: FileChanges | None = None   # made with the sampling thread, closed when it ends
        self._look_once: set[Path] = set()   # files to look at at the next sample whether written to or not
        self._thread: threading.Thread | None = None

    def started(self, path: Path) -> None:
        with self._lock:
            self._timelines[path] = Timeline(time.time())
            self._running.add(path)
            if self._thread is None and not self._closed.is_set():
                try:
                    self._changes = FileChanges()
                except OSError as e:
                    log.info("no inotify here (%s): the log-time sampler looks at every running container's log", e)
            if self._changes is None or not self._changes.add(path):
                self._unwatched.add(path)
            self._look_once.add(path)   # what it wrote before the watch was set
            if self._thread is None and not self._closed.is_set():
                self._thread = threading.Thread(target=self._sample_until_closed, name="kubelet-log-times",
                                                daemon=True)
                self._thread.start()

    def ended(self, path: Path) -> None:
        """The process is gone: what it wrote is noted now, once more."""
        with self._lock:
            self._running.discard(path)
            self._stop_watching(path)
            timeline = self._timelines.get(path)
        if timeline is not None:
            self._note(path, timeline)

    def timeline(self, path: Path) -> Timeline | None:
        with self._lock:
            return self._timelines.get(path)

    def forget(self, gone: Callable[[Path], bool]) -> None:
        with self._lock:
            for path in [p for p in self._timelines if gone(p)]:
                del self._timelines[path]
                self._running.discard(path)
                self._stop_watching(path)

    def join(self, timeout: float) -> None:
        """Wait for the sampling thread (``closed`` is set) for up to ``timeout`` seconds."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _stop_watching(self, path: Path) -> None:
        """(Under the lock.)"""
        self._unwatched.discard(path)
        if self._changes is not None:
            self._changes.remove(path)

    def _sample_until_closed(self) -> None:
        try:
            while not self._closed.wait(SAMPLE_SECONDS):
                with self._lock:
                    changed = self._changes.changed() if self._changes is not None else None
                    looked = self._running if changed is None else \
                        ((changed | self._look_once) & self._running) | self._unwatched
                    self._look_once.clear()
                    running = [(p, self._timelines[p]) for p in looked]
                for path, timeline in running:
                    self._note(path, timeline)
        finally:
            with self._lock:
                if self._changes is not None:
                    self._changes.close()
                    self._changes = None

    def _note(self, path: Path, timeline: Timeline) -> None:
        try:
            size = self._measure(path)
        except OSError as e:
            log.warning("sampling the log %s failed: %s", path, e)
            return
        if size is not None:
            timeline.note(size, time.time())


def stamp(ts: float) -> bytes:
    """The kubelet's ``RFC3339NanoFixed`` (nine digits, UTC), as ``timestamps=true`` prefixes each line."""
    whole = int(ts)
    nanos = round((ts - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    return (datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos:09d}Z").encode()


def stamped(chunks: Iterator[bytes], start: int, timeline: Timeline) -> Iterator[bytes]:
    """Each whole line of ``chunks`` (which begin at offset ``start``) after its time and a space; a last line
    without its newline when the chunks end. Empty chunks pass (a follower's chance to stop). Linear in the
    output, however long a line: the unfinished line is kept as a list of pieces, each looked at once, and a
    line's pieces pass through as they came (its time, that of its last byte, is known once its newline is)."""
    pending: list[bytes] = []   # the unfinished line's pieces
    offset = start              # where the unfinished line begins
    for chunk in chunks:
        if not chunk:
            yield b""
            continue
        out: list[bytes] = []
        begin = 0
        while (newline := chunk.find(b"\n", begin)) >= 0:
            pending.append(chunk[begin:newline + 1])
            length = sum(len(p) for p in pending)
            out.append(stamp(timeline.time_of(offset + length)) + b" ")
            out.extend(pending)
            offset += length
            pending = []
            begin = newline + 1
        if begin < len(chunk):
            pending.append(chunk[begin:])
        yield b"".join(out)
    if pending:
        length = sum(len(p) for p in pending)
        yield stamp(timeline.time_of(offset + length)) + b" " + b"".join(pending)
