"""Kubernetes time formats: ``metav1.Time`` (RFC 3339, seconds, UTC) and ``MicroTime``."""

from __future__ import annotations

import time
from datetime import UTC, datetime

_UINT64 = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1


_last_second: tuple[int, str] = (-1, "")


def now_rfc3339() -> str:
    """The current time as metav1.Time serialises it (second precision, ``Z``): formatted once per second (the
    API server stamps every write with it, more than once)."""
    global _last_second
    second = int(time.time())
    last = _last_second
    if last[0] == second:
        return last[1]
    text = rfc3339(second)
    _last_second = (second, text)
    return text


def rfc3339(ts: float) -> str:
    """A Unix timestamp as metav1.Time serialises it (second precision, ``Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def plus_go_seconds(ts: float, seconds: int) -> float:
    """``ts`` plus ``time.Second * time.Duration(seconds)`` as Go computes it, which kube-apiserver does for a
    deletion's grace period: the product is int64 nanoseconds and wraps, so a huge grace period (the int64 maximum
    gives -1 s) lands within 292 years of ``ts`` instead of overflowing the calendar."""
    nanos = (seconds * 1_000_000_000) & _UINT64
    if nanos > _INT64_MAX:
        nanos -= _UINT64 + 1
    return ts + nanos / 1e9


def now_micro() -> str:
    """metav1.MicroTime: what Leases (renewTime) and events.k8s.io use."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str | None) -> float | None:
    """Parse metav1.Time or MicroTime into a Unix timestamp; None for absent or unparsable input."""
    if not value:
        return None
    text = value.replace("Z", "+00:00")
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None
