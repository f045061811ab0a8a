"""The JSONPath subset CRD printer columns use, evaluated as client-go's ``util/jsonpath`` does.

Supported: ``$`` and ``@``, ``.field``, ``['field']`` (with dots or slashes inside), ``.*`` and ``[*]``,
indices and slices with negative bounds (``[0]``, ``[-1:]``, ``[1:3]``, ``[::2]``), and filters comparing a
relative path with a literal or testing its presence (``[?(@.type=="Ready")]``, ``[?(@.ready)]``).

:func:`find` returns every value the path reaches, in order; missing keys yield nothing (the columns set
``AllowMissingKeys``). Where client-go fails (a slice out of range, a step of 0, a field of a scalar...)
:class:`JSONPathError` is raised and the column's cell is empty.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class JSONPathError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class _Field:
    name: str


@dataclass(frozen=True, slots=True)
class _Wildcard:
    pass


@dataclass(frozen=True, slots=True)
class _Slice:
    start: int | None
    end: int | None
    step: int | None
    single: bool  # ``[n]``: the end is derived from the start


@dataclass(frozen=True, slots=True)
class _Filter:
    left: tuple
    op: str  # == != < > <= >=, or "exists"
    right: Any  # a literal, or a tuple of steps for a relative path


_NAME = re.compile(r"[^.\[\]{}()@$\s=!<>,'\"]+")
_INDEX = re.compile(r"\s*(-?\d*)\s*")
_FILTER = re.compile(r"\?\((.*)\)")
_COMPARISON = re.compile(r"^(.*?)\s*(==|!=|<=|>=|<|>)\s*(.*)$")


@functools.lru_cache(maxsize=256)
def parse(path: str) -> tuple:
    """The steps of ``path`` (with or without the ``{...}`` braces); JSONPathError when it does not parse."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith(("$", "@")):
        text = text[1:]
    return tuple(_parse_steps(text, path))


def _parse_steps(text: str, original: str) -> list:
    steps: list = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == ".":
            i += 1
            if i < len(text) and text[i] == ".":
                raise JSONPathError(f"recursive descent is not supported: {original}")
            if i < len(text) and text[i] == "*":
                steps.append(_Wildcard())
                i += 1
                continue
            m = _NAME.match(text, i)
            if m is None:
                if i >= len(text):
                    continue  # a trailing "." (or the lone "." of the root) selects the current value
                raise JSONPathError(f"unrecognized character in action: {text[i]!r} in {original}")
            steps.append(_Field(m.group()))
            i = m.end()
        elif ch == "[":
            end = _closing_bracket(text, i, original)
            steps.append(_parse_bracket(text[i + 1:end], original))
            i = end + 1
        elif ch.isspace():
            i += 1
        else:
            raise JSONPathError(f"unrecognized character in action: {ch!r} in {original}")
    return steps


def _closing_bracket(text: str, start: int, original: str) -> int:
    depth, quote = 0, ""
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return i
    raise JSONPathError(f"unclosed array expect ] in {original}")


def _parse_bracket(inner: str, original: str) -> Any:
    inner = inner.strip()
    if inner == "*":
        return _Wildcard()
    if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "'\"":
        return _Field(inner[1:-1])
    m = _FILTER.fullmatch(inner)
    if m:
        return _parse_filter(m.group(1).strip(), original)
    parts = inner.split(":")
    if len(parts) > 3 or not all(_INDEX.fullmatch(p) for p in parts):
        raise JSONPathError(f"invalid array index {inner} in {original}")
    nums = [int(p) if p.strip() not in ("", "-") else None for p in parts]
    if len(parts) == 1:
        if nums[0] is None:
            raise JSONPathError(f"invalid array index {inner} in {original}")
        return _Slice(nums[0], None, None, True)
    return _Slice(nums[0], nums[1], nums[2] if len(nums) == 3 else None, False)


def _parse_filter(expr: str, original: str) -> _Filter:
    m = _COMPARISON.match(expr)
    if m is None:
        return _Filter(_relative(expr, original), "exists", None)
    left, op, right = m.group(1).strip(), m.group(2), m.group(3).strip()
    return _Filter(_relative(left, original), op, _operand(right, original))


def _relative(text: str, original: str) -> tuple:
    if not text.startswith("@"):
        raise JSONPathError(f"unrecognized filter operand {text} in {original}")
    return tuple(_parse_steps(text[1:], original))


def _operand(text: str, original: str) -> Any:
    if text.startswith("@"):
        return _relative(text, original)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise JSONPathError(f"unrecognized filter operand {text} in {original}") from None


def find(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` reaches in ``obj``, in order (empty when nothing matches)."""
    return _evaluate([obj], parse(path))


def _evaluate(values: list[Any], steps: tuple) -> list[Any]:
    for step in steps:
        values = _STEP[type(step)](values, step)
    return values


def _eval_field(values: list[Any], step: _Field) -> list[Any]:
    return [v[step.name] for v in values if isinstance(v, dict) and step.name in v]


def _eval_wildcard(values: list[Any], step: _Wildcard) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, dict):
            out.extend(v[k] for k in sorted(v))
        elif isinstance(v, (list, str)):
            out.extend(v)
    return out


def _eval_slice(values: list[Any], step: _Slice) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v is None:
            continue
        if not isinstance(v, list):
            raise JSONPathError(f"{type(v).__name__} is not array or slice")
        n = len(v)
        start = step.start if step.start is not None else 0
        if start < 0:
            start += n
        if step.single:
            end = step.start + 1 if step.start is not None else n
            if end == 0:
                end += n  # client-go's "derived" end of a single negative index
        else:
            end = step.end if step.end is not None else n
        if end < 0:
            end += n
        if end == start:
            return out
        if start >= n or start < 0:
            raise JSONPathError(f"array index out of bounds: index {start}, length {n}")
        if end > n or end < 0:
            raise JSONPathError(f"array index out of bounds: index {end - 1}, length {n}")
        if start > end:
            raise JSONPathError(f"starting index {start} is greater than ending index {end}")
        stride = 1
        if step.step is not None:
            if step.step <= 0:
                raise JSONPathError("step must be > 0")
            stride = step.step
        out.extend(v[start:end:stride])
    return out


def _eval_filter(values: list[Any], step: _Filter) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if not isinstance(v, list):
            raise JSONPathError(f"{type(v).__name__} is not array or slice and cannot be filtered")
        for item in v:
            lefts = _evaluate([item], step.left)
            if step.op == "exists":
                if lefts:
                    out.append(item)
                continue
            rights = _evaluate([item], step.right) if isinstance(step.right, tuple) else [step.right]
            if not lefts or not rights:
                continue
            if len(lefts) > 1 or len(rights) > 1:
                raise JSONPathError("can only compare one element at a time")
            if _compare(lefts[0], step.op, rights[0]):
                out.append(item)
    return out


def _compare(left: Any, op: str, right: Any) -> bool:
    """Go template comparison: both strings, both numbers of one kind, or both booleans (== and != only)."""
    kinds = {type(left), type(right)}
    if not (kinds <= {str} or kinds <= {int} or kinds <= {float} or (kinds <= {bool} and op in ("==", "!="))):
        raise JSONPathError(f"incompatible types for comparison: {left!r} {op} {right!r}")
    ops: dict[str, Callable[[Any, Any], bool]] = {
        "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b}
    return ops[op](left, right)


_STEP: dict[type, Callable[[list[Any], Any], list[Any]]] = {
    _Field: _eval_field, _Wildcard: _eval_wildcard, _Slice: _eval_slice, _Filter: _eval_filter,
}
