"""The shape of ``MXJob.status``, and the one rule about it the two upstream APIs disagree on.

training-operator writes per-type counts to ``status.replicaStatuses``; mxnet-operator's clients read
``status.mxReplicaStatuses``. This controller writes both, with the same content, so dashboards and
scripts written for either keep working; readers accept either (``replicaStatuses`` first).

Status fields: ``conditions`` (type, status, reason, message, lastUpdateTime, lastTransitionTime),
``replicaStatuses`` / ``mxReplicaStatuses`` (canonical type → {active, succeeded, failed}),
``startTime``, ``completionTime``, ``lastReconcileTime`` (RFC 3339, UTC).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.api.replica_types import canonical_type

REPLICA_STATUSES = "replicaStatuses"
MX_REPLICA_STATUSES = "mxReplicaStatuses"
TIME_FIELDS = ("startTime", "completionTime", "lastReconcileTime")


@dataclass(frozen=True, slots=True)
class ReplicaCounts:
    """Pods of one replica type by phase. Zero counts are omitted on the wire (``omitempty``)."""

    active: int = 0
    succeeded: int = 0
    failed: int = 0

    def to_dict(self) -> dict[str, int]:
        return {k: v for k, v in (("active", self.active), ("succeeded", self.succeeded),
                                  ("failed", self.failed)) if v}


def replica_counts(status: Mapping[str, Any] | None) -> dict[str, ReplicaCounts]:
    """Canonical type → counts, from ``replicaStatuses`` or else the older ``mxReplicaStatuses``."""
    status = status or {}
    raw = status.get(REPLICA_STATUSES) or status.get(MX_REPLICA_STATUSES) or {}
    out: dict[str, ReplicaCounts] = {}
    for key, counts in raw.items() if isinstance(raw, dict) else ():
        rtype = canonical_type(key)
        if rtype is not None and isinstance(counts, dict):
            out[rtype] = ReplicaCounts(*(int(counts.get(k) or 0) for k in ("active", "succeeded", "failed")))
    return out


def with_replica_counts(status: Mapping[str, Any] | None, counts: Mapping[str, ReplicaCounts]) -> dict[str, Any]:
    """A copy of ``status`` with both replica-status maps set to ``counts`` (separate, equal dicts)."""
    out = copy.deepcopy(dict(status or {}))
    rendered = {rtype: c.to_dict() for rtype, c in counts.items()}
    out[REPLICA_STATUSES] = rendered
    out[MX_REPLICA_STATUSES] = copy.deepcopy(rendered)
    return out


def condition(ctype: str, reason: str, message: str, now: str, status: str = "True") -> dict[str, str]:
    """One entry of ``status.conditions`` as the Go operators write it."""
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastUpdateTime": now, "lastTransitionTime": now}
