"""What ``local run`` shows while its jobs run: a line per job, on a terminal a block kept in place at the bottom.

    display = Display(sys.stdout, interactive=sys.stdout.isatty())
    display.show(views, elapsed)      # each turn
    display.message("default/x failed: …")   # a line of its own, above the block (which is drawn again below)

A job's line (:func:`summary`): its state, per replica type the pods active, succeeded and failed, the restarts its
containers made (the most seen: pods a policy deleted keep their count), the reason it waits now
(``CrashLoopBackOff``, ``CreateContainerConfigError: configmap "x" not found``, ``Unschedulable: 0/1 nodes are
available: …``) and, for a job whose pods wait for room, its place in the scheduler's queue.

Not on a terminal, a line is written each time a job's line changes, prefixed by the seconds since the start (as
before: scripts and tests read it). On a terminal (``interactive``), the block is drawn right for the terminal's
width, measured at every draw (a resized window is followed): each line is cut to fit one screen row (ending in
``…``; characters are counted by the cells they take), so the block takes exactly as many rows as it has lines and
is redrawn by moving up that many rows; a block taller than the screen is cut to it, with a line saying how many
jobs are not shown. Lines written meanwhile (the cluster's own log on the same terminal, streamed output) go above
the block: nothing the block drew is ever left behind; at the end (:meth:`Display.finish`) the block stays as last
drawn, the outcome below it. Pure on top (:func:`fit`, :func:`block`), the
terminal I/O in :class:`Display`.
"""

from __future__ import annotations

import os
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

ELLIPSIS = "…"
FALLBACK_SIZE = (80, 24)


@dataclass
class JobView:
    """One job as the last look saw it."""

    key: str                       # namespace/name
    state: str = "Pending"         # Created, Running, Restarting, Succeeded, Failed… (GenericJob: its phase)
    replicas: str = "no pods yet"  # "Worker 2 active · PS 1 succeeded"
    message: str = ""              # the condition's message (the failure's, when Failed)
    uid: str = ""
    restarts: int = 0
    waiting: str = ""              # why a container or pod waits, as kube says it
    queue: str = ""                # "queued #2: 1 pod(s) waiting (…)"
    elapsed: float | None = None   # seconds since the job started (its startTime, else its creation)

    @property
    def finished(self) -> bool:
        return self.state in ("Succeeded", "Failed")


def duration(seconds: float) -> str:
    """A short Go-like duration: 9s, 1m05s, 2h03m."""
    total = max(0, int(seconds))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _extras(view: JobView) -> list[str]:
    """Restarts, the waiting reason and the queue place, as they apply (a queued job's reason is in its place)."""
    parts = [f"restarts {view.restarts}"] if view.restarts else []
    if view.waiting and not (view.queue and view.waiting.startswith("Unschedulable")) and not view.finished:
        parts.append(view.waiting)
    if view.queue and not view.finished:
        parts.append(view.queue)
    return parts


def summary(view: JobView) -> str:
    """The job's line after its key: ``Running    Worker 1 active · restarts 2 · CrashLoopBackOff``."""
    return " · ".join([f"{view.state:<10} {view.replicas}", *_extras(view)])


def plain_line(view: JobView) -> str:
    """The job's line when not on a terminal (the start's elapsed time goes in front of it)."""
    return f"{view.key}  {summary(view)}"


def terminal_line(view: JobView) -> str:
    """The job's line in the block: with the time it has run, and what matters most first (a narrow terminal cuts
    the end), in few columns: ``default/x Running   1m05s restarts 2 · CrashLoopBackOff · Worker 1 active``."""
    ran = duration(view.elapsed) if view.elapsed is not None else "-"
    extras = _extras(view)
    queue = [extras.pop()] if view.queue and extras and extras[-1] == view.queue else []
    return f"{view.key} {view.state:<9} {ran:>5} " + " · ".join([*extras, view.replicas, *queue])


def cells(char: str) -> int:
    """The screen cells a character takes: 2 for East Asian wide ones, 0 for combining marks and controls."""
    if unicodedata.combining(char) or unicodedata.category(char) in ("Cc", "Cf", "Mn", "Me"):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def fit(line: str, width: int) -> str:
    """``line`` cut to at most ``width`` cells, ending in ``…`` when cut. Controls become spaces: they would move
    the cursor behind the block's back."""
    line = "".join(" " if unicodedata.category(c) == "Cc" else c for c in line)
    if sum(cells(c) for c in line) <= width:
        return line
    out, used = [], 0
    for char in line:
        if used + cells(char) > width - 1:
            break
        out.append(char)
        used += cells(char)
    return "".join(out) + ELLIPSIS


def block(views: Sequence[JobView], columns: int, rows: int) -> list[str]:
    """The block for a terminal of ``columns`` by ``rows``: a line per job, each fitting one row with the last column
    left free (a character there leaves some terminals waiting to wrap), and never taller than the screen less a
    row (the cursor's); the jobs that do not fit are counted on the last line."""
    width = max(1, columns - 1)
    room = max(1, rows - 1)
    lines = [fit(terminal_line(v), width) for v in views]
    if len(lines) > room:
        hidden = views[room - 1:]
        states: dict[str, int] = {}
        for view in hidden:
            states[view.state] = states.get(view.state, 0) + 1
        counts = ", ".join(f"{n} {state.lower()}" for state, n in sorted(states.items()))
        lines = [*lines[:room - 1], fit(f"… and {len(hidden)} more job(s): {counts}", width)]
    return lines


class Display:
    """The progress output on ``out`` (see the module); thread-safe: log streams write through it."""

    def __init__(self, out: TextIO, interactive: bool) -> None:
        self.out, self.interactive = out, interactive
        self._lock = threading.Lock()
        self._rows = 0                      # rows of the block on screen now
        self._block: list[str] = []         # what it shows
        self._shown: dict[str, str] = {}    # key → its last plain line (not interactive)

    def size(self) -> tuple[int, int]:
        try:
            size = os.get_terminal_size(self.out.fileno())
        except (OSError, ValueError, AttributeError):
            return FALLBACK_SIZE
        return (size.columns or FALLBACK_SIZE[0], size.lines or FALLBACK_SIZE[1])

    def show(self, views: Sequence[JobView], elapsed: float) -> None:
        """This turn's state of every job."""
        with self._lock:
            if self.interactive:
                columns, rows = self.size()
                self._block = block(views, columns, rows)
                self._redraw()
                return
            for view in views:
                line = plain_line(view)
                if self._shown.get(view.key) != line:
                    self._shown[view.key] = line
                    self.out.write(f"[{elapsed:6.1f}s] {line}\n")
            self.out.flush()

    def message(self, line: str) -> None:
        """A line of its own: on a terminal above the block, which is drawn again under it."""
        with self._lock:
            if self.interactive and self._rows:
                self.out.write(f"\r\x1b[{self._rows}A\x1b[J")
                self._rows = 0
            self.out.write(line + "\n")
            if self.interactive and self._block:
                self._redraw()
            self.out.flush()

    def finish(self) -> None:
        """Leave the block as last drawn: what is written from now on goes below it (the run's end)."""
        with self._lock:
            self._rows, self._block = 0, []

    def _redraw(self) -> None:
        """Move up over the block as drawn (a row a line, see :func:`block`), clear below, draw it anew."""
        if self._rows:
            self.out.write(f"\r\x1b[{self._rows}A")
        self.out.write("\x1b[J" + "".join(line + "\n" for line in self._block))
        self._rows = len(self._block)
        self.out.flush()


class LineSink:
    """A text stream whose complete lines go to :meth:`Display.message` (the cluster's log handler writes here
    while the block is on the same terminal)."""

    def __init__(self, display: Display) -> None:
        self.display = display
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self.display.message(line)
        return len(text)

    def flush(self) -> None:
        pass
