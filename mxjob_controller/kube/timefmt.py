"""Kubernetes time formats: ``metav1.Time`` (RFC 3339, seconds, UTC) and ``MicroTime``."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def now_rfc3339() -> str:
    """The current time as metav1.Time serialises it (second precision, ``Z``)."""
    return rfc3339(time.time())


def rfc3339(ts: float) -> str:
    """A Unix timestamp as metav1.Time serialises it (second precision, ``Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


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
