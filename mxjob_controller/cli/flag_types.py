"""Flag value types as the Go operators parse them, so a Deployment's ``args`` written for them keep working.

- :class:`GoDuration`: Go's ``time.ParseDuration`` syntax (``12h``, ``1h30m``, ``90s``, ``500ms``; a bare number
  other than ``0`` needs a unit), to seconds.
- :class:`DurationOrSeconds`: a Go duration, or a bare number of seconds (``local run --timeout``).
- :func:`go_bool_option`: a boolean flag Go-style: ``--leader-elect``, ``--leader-elect=true``,
  ``--json-log-format=false`` (click's own boolean flags refuse ``=value``).
- :class:`NamespaceList`: one or more namespaces, repeated or comma/space separated, each a valid namespace name.
- :class:`NameList`: one or more names out of a fixed set, repeated or comma/space separated (``--frameworks``).
- :class:`BindAddress`: ``[host]:port`` or ``0`` (off), checked with the endpoints' own parser.
- :func:`go_flag_spellings`: Go's one-dash spelling of a long flag (``-zap-log-level=debug``) as ``--``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

# Go's unit table (time/format.go), in seconds.
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]+)")


def parse_go_duration(text: str) -> float:
    """Seconds in ``text``, as Go's ``time.ParseDuration`` reads it; ValueError with Go's wording otherwise."""
    original, s = text, text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    s = s[1:] if s[:1] in "+-" else s
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f'time: invalid duration "{original}"')
    total, pos = 0.0, 0
    while pos < len(s):
        m = _PART.match(s, pos)
        if m is None:
            unit_missing = re.fullmatch(r"[\d.]+", s[pos:]) is not None
            raise ValueError(f'time: missing unit in duration "{original}"' if unit_missing
                             else f'time: invalid duration "{original}"')
        whole, frac, unit = m.groups()
        if not whole and not frac:
            raise ValueError(f'time: invalid duration "{original}"')
        if unit not in _UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{original}"')
        total += float(f"{whole or 0}.{frac or 0}") * _UNITS[unit]
        pos = m.end()
    return sign * total


def go_flag_spellings(args: list[str], long_flags: set[str]) -> list[str]:
    """``args`` with each ``-name`` / ``-name=value`` whose ``--name`` is one of ``long_flags`` spelled ``--name``:
    Go's flag package takes one dash or two, and Deployments written for Go operators use both. Up to ``--``;
    anything else (``-h``, a negative number, a value) is left as it is."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        name = arg.split("=", 1)[0]
        one_dash = len(name) > 2 and name[0] == "-" and name[1] != "-" and f"-{name}" in long_flags
        out.append(f"-{arg}" if one_dash else arg)
    return out


class GoDuration(click.ParamType):
    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, int | float):
            return float(value)
        try:
            seconds = parse_go_duration(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)
        if seconds < 0:
            self.fail(f"{value!r} is negative", param, ctx)
        return seconds


class DurationOrSeconds(GoDuration):
    """A Go duration (``5m``, ``1h30m``) or, as scripts written for a seconds flag give it, a bare number of
    seconds (``240``)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, str) and re.fullmatch(r"\d+(\.\d*)?", value.strip()):
            return float(value)
        return super().convert(value, param, ctx)


class NamespaceList(click.ParamType):
    """One flag occurrence → a tuple of namespace names (``a,b`` and ``"a b"`` are two)."""

    name = "namespace"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        names = tuple(n for n in re.split(r"[\s,]+", str(value)) if n)
        for name in names:
            from mxjob_controller.kube.names import dns1123_label_errors  # noqa: PLC0415  (kept off import)

            errors = dns1123_label_errors(name)
            if errors:
                self.fail(f"{name!r} is not a valid namespace name: {'; '.join(errors)}", param, ctx)
        return names


class NameList(click.ParamType):
    """One flag occurrence → a tuple of names, each one of ``choices`` (``a,b`` and ``"a b"`` are two)."""

    name = "names"

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = choices

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, ...]:
        if isinstance(value, tuple):
            return value
        names = tuple(n for n in re.split(r"[\s,]+", str(value)) if n)
        if not names:
            self.fail(f"name at least one of {', '.join(self.choices)}", param, ctx)
        for name in names:
            if name not in self.choices:
                self.fail(f"{name!r} is not one of {', '.join(self.choices)}", param, ctx)
        return names


class BindAddress(click.ParamType):
    name = "address"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            from mxjob_controller.runtime.endpoints import parse_bind_address  # noqa: PLC0415

            parse_bind_address(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)
        return str(value)


def go_bool_option(*decls: str, default: bool, help: str, envvar: str | None = None,
                   **kwargs: Any) -> Callable[[Any], Any]:
    """A boolean option taking an optional ``=value``: bare means true, as Go's flag package does."""
    return click.option(*decls, type=click.BOOL, is_flag=False, flag_value="true", default=default,
                        show_default=True, metavar="[=BOOL]", help=help, envvar=envvar,
                        show_envvar=envvar is not None, allow_from_autoenv=envvar is not None, **kwargs)
