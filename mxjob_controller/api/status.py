"""The shape of ``MXJob.status``, and the one rule about it the two upstream APIs disagree on.

training-operator writes per-type counts to ``status.replicaStatuses``; mxnet-operator's clients read
``status.mxReplicaStatuses``. This controller writes both, with the same content, so dashboards and
scripts written for either keep working; readers accept either (``replicaStatuses`` first).

Status fields: ``conditions`` (type, status, reason, message, lastUpdateTime, lastTransitionTime),
``replicaStatuses`` / ``mxReplicaStatuses`` (canonical type → {active, succeeded, failed}),
``startTime``, ``completionTime``, ``lastReconcileTime`` (RFC 3339, UTC); ``restartCount`` and
``replicaHistory``, the failure policy's memory (``core/failure_policy.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mxjob_controller.api.constants import REPLICA_TYPES
from mxjob_controller.api.replica_types import canonical_type
from mxjob_controller.core.job_vocabulary import ReplicaCounts, condition
from mxjob_controller.kube.jsoncopy import deep_copy

__all__ = ["MXJOB_COUNT_MAPS", "MX_REPLICA_STATUSES", "REPLICA_STATUSES", "TIME_FIELDS", "ReplicaCounts", "condition",
           "replica_counts", "with_replica_counts"]

REPLICA_STATUSES = "replicaStatuses"
MX_REPLICA_STATUSES = "mxReplicaStatuses"
TIME_FIELDS = ("startTime", "completionTime", "lastReconcileTime")
#: Where MXJob status keeps its counts, the map read first first.
MXJOB_COUNT_MAPS = (REPLICA_STATUSES, MX_REPLICA_STATUSES)


def replica_counts(status: Mapping[str, Any] | None, types: Sequence[str] = REPLICA_TYPES,
                   maps: Sequence[str] = MXJOB_COUNT_MAPS) -> dict[str, ReplicaCounts]:
    """Canonical type → counts, from the first of ``maps`` that is set (MXJob: ``replicaStatuses``, else the
    older ``mxReplicaStatuses``); keys of any case."""
    status = status or {}
    raw = next((status[m] for m in maps if status.get(m)), {})
    out: dict[str, ReplicaCounts] = {}
    for key, counts in raw.items() if isinstance(raw, dict) else ():
        rtype = canonical_type(key, types)
        if rtype is not None and isinstance(counts, dict):
            out[rtype] = ReplicaCounts(*(int(counts.get(k) or 0) for k in ("active", "succeeded", "failed")))
    return out


def with_replica_counts(status: Mapping[str, Any] | None, counts: Mapping[str, ReplicaCounts],
                        maps: Sequence[str] = MXJOB_COUNT_MAPS) -> dict[str, Any]:
    """A copy of ``status`` with every one of ``maps`` set to ``counts`` (separate, equal dicts)."""
    out = deep_copy(dict(status or {}))
    rendered = {rtype: c.to_dict() for rtype, c in counts.items()}
    for m in maps:
        out[m] = deep_copy(rendered)
    return out
