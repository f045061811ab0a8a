"""What ``execve`` takes, as a budget a container's environment and arguments are built within.

Linux refuses one argument or environment string longer than ``MAX_ARG_STRLEN`` (32 pages: 131072 bytes, the
final NUL included; ``NAME=value`` for a variable), and all of them together past ``ARG_MAX`` (its strings, their
NULs and one pointer each; ``getconf ARG_MAX``, a quarter of the stack limit: 2 MiB with the usual 8 MiB). Kube's
kubelet sets no bound of its own: it builds every expanded value in full, and only the runtime's ``execve`` fails
("argument list too long"). Here each value is built within what is left of the budget
(:meth:`ExecBudget.variable_room`, :meth:`ExecBudget.argument_room`), so a pod whose variables double at each step
costs at most one bound's worth of memory, and the error names the variable or argument that passed it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

MAX_ARG_STRLEN = 131072   # Linux: one argv or environment string, its NUL included (32 pages of 4 KiB)
POINTER = 8               # execve also counts one pointer per string against ARG_MAX


def _arg_max() -> int:
    try:
        value = os.sysconf("SC_ARG_MAX")
    except (ValueError, OSError):
        value = -1
    return value if value > 0 else 2 * 1024 * 1024   # Linux's figure with the usual 8 MiB stack


ARG_MAX = _arg_max()
"""What ``execve`` takes in all on this machine: every argument and environment string, its NUL and a pointer."""


class ExecBoundsError(Exception):
    """A variable or argument past ``execve``'s bounds; the message names it and the bound."""


def utf8_len(text: str) -> int:
    """The bytes ``text`` takes in the process (UTF-8)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _variable_size(name: str, value: str) -> int:
    return utf8_len(name) + 1 + utf8_len(value) + 1   # NAME=value and the NUL


def too_long(what: str, size: int | None = None) -> ExecBoundsError:
    measured = f"{size} bytes; " if size is not None else ""
    return ExecBoundsError(f"{what} is longer than Linux takes after $(VAR) expansion: {measured}at most "
                           f'{MAX_ARG_STRLEN} bytes per string (MAX_ARG_STRLEN, "NAME=" and the final NUL included)')


def past_arg_max(what: str) -> ExecBoundsError:
    return ExecBoundsError(f"{what} takes the environment and arguments past this machine's ARG_MAX after $(VAR) "
                           f"expansion: execve takes at most {ARG_MAX} bytes in all")


class ExecBudget:
    """The bytes ``execve`` would take for an environment (``start``, not checked) and what is added to it."""

    def __init__(self, start: Mapping[str, str]) -> None:
        self._start = start
        self._size_of: dict[str, int] = {}   # variables set here, with their string's size
        self.total = sum(_variable_size(k, v) + POINTER for k, v in start.items())

    def _current(self, name: str) -> int:
        """What ``name`` takes now (a variable set here, else one of the start), pointer included."""
        if name in self._size_of:
            return self._size_of[name] + POINTER
        return _variable_size(name, self._start[name]) + POINTER if name in self._start else 0

    def variable_room(self, name: str) -> int:
        """The most characters ``name``'s value may have (a character takes at least one byte)."""
        left = ARG_MAX - (self.total - self._current(name)) - POINTER - utf8_len(name) - 2
        return max(0, min(MAX_ARG_STRLEN - utf8_len(name) - 2, left))

    def variable_error(self, name: str) -> ExecBoundsError:
        """Why a value of more than :meth:`variable_room` characters cannot be."""
        if self.variable_room(name) < MAX_ARG_STRLEN - utf8_len(name) - 2:
            return past_arg_max(f"environment variable {name}")
        return too_long(f"environment variable {name}")

    def set_variable(self, name: str, value: str) -> None:
        size = _variable_size(name, value)
        if size > MAX_ARG_STRLEN:
            raise too_long(f"environment variable {name}", size)
        total = self.total - self._current(name) + size + POINTER
        if total > ARG_MAX:
            raise past_arg_max(f"environment variable {name}")
        self._size_of[name] = size
        self.total = total

    def argument_room(self) -> int:
        """The most characters the next argument may have."""
        return max(0, min(MAX_ARG_STRLEN - 1, ARG_MAX - self.total - POINTER - 1))

    def argument_error(self, index: int) -> ExecBoundsError:
        if self.argument_room() < MAX_ARG_STRLEN - 1:
            return past_arg_max(f"argument {index}")
        return too_long(f"argument {index}")

    def add_argument(self, index: int, arg: str) -> None:
        size = utf8_len(arg) + 1
        if size > MAX_ARG_STRLEN:
            raise too_long(f"argument {index}", size)
        if self.total + size + POINTER > ARG_MAX:
            raise past_arg_max(f"argument {index}")
        self.total += size + POINTER


def check(env: Mapping[str, str], argv: Sequence[str] = ()) -> None:
    """Raise :class:`ExecBoundsError` naming the first variable or argument past the bounds."""
    budget = ExecBudget({})
    for name, value in env.items():
        budget.set_variable(name, value)
    for index, arg in enumerate(argv):
        budget.add_argument(index, arg)
