"""A command run in a real pseudo-terminal of a given size, its output played on a terminal emulator (``pyte``), as a
user's terminal would show it: for the tests of what ``local run`` draws on a terminal."""

from __future__ import annotations

import fcntl
import os
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyte


@dataclass
class TerminalRun:
    returncode: int
    screen: pyte.Screen
    raw: str                      # everything written to the terminal

    @property
    def rows(self) -> list[str]:
        """The screen's rows, trailing blanks cut, trailing empty rows dropped."""
        rows = [line.rstrip() for line in self.screen.display]
        while rows and not rows[-1]:
            rows.pop()
        return rows


def run_in_terminal(argv: Sequence[str], *, columns: int, rows: int, cwd: Path, env: dict[str, str],
                    timeout: float, until: Callable[[str], bool] | None = None) -> TerminalRun:
    """Run ``argv`` with a pty of ``columns`` by ``rows`` as its standard input, output and error; feed what it
    writes to a pyte screen of the same size until it exits (or ``until`` says, from the raw output so far, that
    it has seen enough: the process is then sent SIGINT)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(list(argv), cwd=cwd, env={**env, "TERM": "xterm", "COLUMNS": "", "LINES": ""},
                            stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    screen = pyte.Screen(columns, rows)
    stream = pyte.ByteStream(screen)
    raw = bytearray()
    end = time.monotonic() + timeout
    interrupted = False
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:   # EIO: every writer closed the terminal
                    chunk = b""
                if not chunk:
                    break
                raw.extend(chunk)
                stream.feed(chunk)
                if until is not None and not interrupted and until(raw.decode("utf-8", "replace")):
                    proc.send_signal(2)
                    interrupted = True
            elif proc.poll() is not None:
                continue   # drain what is left; EOF ends the loop
            if time.monotonic() > end:
                proc.kill()
                raise AssertionError(f"{argv} still running after {timeout}s; the screen:\n" +
                                     "\n".join(screen.display))
        code = proc.wait(timeout=max(1.0, end - time.monotonic()))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return TerminalRun(code, screen, raw.decode("utf-8", "replace"))


def fresh_screen(lines: Sequence[str], columns: int, rows: int) -> list[str]:
    """``lines`` written one after the other on a new terminal of that size: the rows it shows (as
    :attr:`TerminalRun.rows`)."""
    screen = pyte.Screen(columns, rows)
    pyte.Stream(screen).feed("".join(line + "\r\n" for line in lines))
    out = [line.rstrip() for line in screen.display]
    while out and not out[-1]:
        out.pop()
    return out
