"""Replica-type keys of ``spec.mxReplicaSpecs``: matched case-insensitively, as the Go operators do.

Users write ``worker`` or ``WORKER`` as often as ``Worker``; the controller, its labels and its status
always use the canonical spelling, so the mapping lives here, once.
"""

from __future__ import annotations

from mxjob_controller.api.constants import REPLICA_TYPES

_BY_FOLDED = {t.casefold(): t for t in REPLICA_TYPES}


def canonical_type(key: object) -> str | None:
    """``"worker"`` → ``"Worker"``; None for a key that names no replica type."""
    return _BY_FOLDED.get(key.casefold()) if isinstance(key, str) else None


def canonical_order(types: list[str]) -> list[str]:
    """Canonical types in the API's order (Scheduler, Server, Worker, TunerTracker, TunerServer, Tuner)."""
    return sorted(types, key=REPLICA_TYPES.index)
