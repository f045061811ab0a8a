"""``pods/log`` options (``PodLogOptions``) read from the query as kube-apiserver reads them.

Decoding is apimachinery's query-parameter conversion, and its failures are 400s with Go's own error text:

- a boolean (``previous``, ``follow``, ``timestamps``) is false only when absent, ``0`` or ``false`` (any case):
  ``previous=maybe`` means true, as it does for kube;
- an integer (``tailLines``, ``limitBytes``, ``sinceSeconds``) is ``strconv.ParseInt``'s: ``strconv.ParseInt:
  parsing "x": invalid syntax`` (or ``value out of range``), blank meaning unset;
- ``sinceTime`` is RFC 3339 (``time.Parse``'s message, e.g. ``parsing time "x" as "2006-01-02T15:04:05Z07:00":
  cannot parse "x" as "2006"``), blank meaning the zero time.

Then ``ValidatePodLogOptions``: a 422 ``PodLogOptions "<pod>" is invalid: tailLines: Invalid value: -1: must be
greater than or equal to 0`` (likewise ``limitBytes`` and ``sinceSeconds`` below 1, and ``sinceTime`` together
with ``sinceSeconds``), before the pod is looked up, as kube's log REST does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from mxjob_controller.kube import field_errors as fe
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import Resource, StatusError

RFC3339_LAYOUT = "2006-01-02T15:04:05Z07:00"
_INT = re.compile(r"[+-]?[0-9]+")
_POD_LOG_OPTIONS = Resource("", "podlogoptions", "PodLogOptions")


@dataclass(frozen=True)
class LogOptions:
    """What a ``pods/log`` request asks for; ``since`` is a POSIX time (from sinceSeconds or sinceTime)."""

    previous: bool = False
    follow: bool = False
    timestamps: bool = False
    tail_lines: int | None = None
    limit_bytes: int | None = None
    since: float | None = None


def parse_log_options(query: Mapping[str, str], pod: str, now: float) -> LogOptions:
    """The request's options, or the StatusError kube answers (400 for what does not decode, 422 for the rest)."""
    tail, limit = _int64(query, "tailLines"), _int64(query, "limitBytes")
    since_seconds = _int64(query, "sinceSeconds")
    since_time = _time(query["sinceTime"]) if "sinceTime" in query else None
    causes = []
    if tail is not None and tail < 0:
        causes.append(fe.invalid("tailLines", tail, "must be greater than or equal to 0"))
    if limit is not None and limit < 1:
        causes.append(fe.invalid("limitBytes", limit, "must be greater than 0"))
    if since_seconds is not None and since_time is not None:
        causes.append(fe.forbidden("", "at most one of `sinceTime` or `sinceSeconds` may be specified"))
    elif since_seconds is not None and since_seconds < 1:
        causes.append(fe.invalid("sinceSeconds", since_seconds, "must be greater than 0"))
    if causes:
        raise errors.invalid(_POD_LOG_OPTIONS, pod, causes)
    since = now - since_seconds if since_seconds is not None else since_time
    return LogOptions(_bool(query, "previous"), _bool(query, "follow"), _bool(query, "timestamps"), tail, limit,
                      since)


def _bool(query: Mapping[str, str], name: str) -> bool:
    """``Convert_Slice_string_To_bool``: any value but ``0`` and ``false`` is true (even an empty one)."""
    if name not in query:
        return False
    return not (query[name] == "0" or query[name].lower() == "false")


def _int64(query: Mapping[str, str], name: str) -> int | None:
    text = query.get(name, "").strip()
    if not text:
        return None
    if not _INT.fullmatch(text):
        raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not -2**63 <= value < 2**63:
        raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def _time(text: str) -> float:
    """``metav1.Time.UnmarshalQueryParameter``: RFC 3339, blank or ``null`` being the zero time."""
    if text in ("", "null"):
        return datetime(1, 1, 1, tzinfo=UTC).timestamp()
    return parse_rfc3339(text)


def parse_rfc3339(text: str) -> float:
    """Go's ``time.Parse(time.RFC3339, text)`` as a POSIX time; its error message in a 400 otherwise."""
    rest = text

    def fail(element: str) -> StatusError:
        return errors.bad_request(f'parsing time "{text}" as "{RFC3339_LAYOUT}": cannot parse "{rest}" as '
                                  f'"{element}"')

    def number(element: str, digits: int, low: int, high: int, what: str) -> int:
        nonlocal rest
        if len(rest) < digits or not rest[:digits].isdigit() or not rest[:digits].isascii():
            raise fail(element)
        value = int(rest[:digits])
        if not low <= value <= high:
            raise errors.bad_request(f'parsing time "{text}": {what} out of range')
        rest = rest[digits:]
        return value

    def literal(sep: str) -> None:
        nonlocal rest
        if not rest.startswith(sep):
            raise fail(sep)
        rest = rest[len(sep):]

    year = number("2006", 4, 0, 9999, "year")
    literal("-")
    month = number("01", 2, 1, 12, "month")
    literal("-")
    day = number("02", 2, 1, 31, "day")
    literal("T")
    hour = number("15", 2, 0, 23, "hour")
    literal(":")
    minute = number("04", 2, 0, 59, "minute")
    literal(":")
    second = number("05", 2, 0, 59, "second")
    fraction = ""
    if len(rest) > 1 and rest[0] in ".," and rest[1].isdigit():
        end = 1
        while end < len(rest) and rest[end].isdigit():
            end += 1
        fraction, rest = rest[1:end], rest[end:]
    if rest.startswith("Z"):
        offset, rest = 0, rest[1:]
    elif len(rest) >= 6 and rest[0] in "+-" and rest[3] == ":" and (rest[1:3] + rest[4:6]).isdigit():
        offset = (int(rest[1:3]) * 3600 + int(rest[4:6]) * 60) * (-1 if rest[0] == "-" else 1)
        rest = rest[6:]
    else:
        raise fail("Z07:00")
    if rest:
        raise errors.bad_request(f'parsing time "{text}": extra text: "{rest}"')
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        raise errors.bad_request(f'parsing time "{text}": day out of range') from None
    return moment.timestamp() - offset + (float("0." + fraction) if fraction else 0.0)
