"""Replica-type keys of a job's replica-spec map: matched case-insensitively, as the Go operators do.

Users write ``worker`` or ``WORKER`` as often as ``Worker``; the controller, its labels and its status always use
the canonical spelling, so the mapping lives here, once. Each kind passes its own vocabulary (MXJob: Scheduler,
Server, Worker, TunerTracker, TunerServer, Tuner; TFJob: Chief, Master, PS, Worker, Evaluator).
"""

from __future__ import annotations

from collections.abc import Sequence

_FOLDED: dict[tuple[str, ...], dict[str, str]] = {}


def _by_folded(types: Sequence[str]) -> dict[str, str]:
    key = tuple(types)
    found = _FOLDED.get(key)
    if found is None:
        found = _FOLDED[key] = {t.casefold(): t for t in key}
    return found


def canonical_type(key: object, types: Sequence[str]) -> str | None:
    """``"worker"`` → ``"Worker"``; None for a key that names none of ``types``."""
    return _by_folded(types).get(key.casefold()) if isinstance(key, str) else None


def canonical_order(present: list[str], types: Sequence[str]) -> list[str]:
    """Canonical types in the order of ``types``, the kind's (MXJob's: Scheduler, Server, Worker, TunerTracker...)."""
    return sorted(present, key=list(types).index)
