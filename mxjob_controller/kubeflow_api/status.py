"""The shape of a Kubeflow job's status, and its per-type count maps.

training-operator writes per-type counts to ``status.replicaStatuses``; an older API may read them from a map of
its own (mxnet-operator's clients: ``status.mxReplicaStatuses``). A kind names its maps (``mxnet/api.py``:
both, ``tensorflow/api.py``: one); they are written with the same content, so dashboards and scripts written
for either API keep working, and read from the first that is set.

Status fields: ``conditions`` (type, status, reason, message, lastUpdateTime, lastTransitionTime), the count
maps (canonical type → {active, succeeded, failed}),
``startTime``, ``completionTime``, ``lastReconcileTime`` (RFC 3339, UTC); ``restartCount`` and
``replicaHistory``, the failure policy's memory (``core/failure_policy.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mxjob_controller.core.job_vocabulary import ReplicaCounts, condition
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kubeflow_api.replica_types import canonical_type

__all__ = ["REPLICA_STATUSES", "TIME_FIELDS", "ReplicaCounts", "condition", "replica_counts", "with_replica_counts"]

REPLICA_STATUSES = "replicaStatuses"
TIME_FIELDS = ("startTime", "completionTime", "lastReconcileTime")


def replica_counts(status: Mapping[str, Any] | None, types: Sequence[str],
                   maps: Sequence[str]) -> dict[str, ReplicaCounts]:
    """Canonical type (of ``types``) → counts, from the first of ``maps`` that is set (MXJob: ``replicaStatuses``,
    else the older ``mxReplicaStatuses``); keys of any case."""
    status = status or {}
    raw = next((status[m] for m in maps if status.get(m)), {})
    out: dict[str, ReplicaCounts] = {}
    for key, counts in raw.items() if isinstance(raw, dict) else ():
        rtype = canonical_type(key, types)
        if rtype is not None and isinstance(counts, dict):
            out[rtype] = ReplicaCounts(*(int(counts.get(k) or 0) for k in ("active", "succeeded", "failed")))
    return out


def with_replica_counts(status: Mapping[str, Any] | None, counts: Mapping[str, ReplicaCounts],
                        maps: Sequence[str]) -> dict[str, Any]:
    """A copy of ``status`` with every one of ``maps`` set to ``counts`` (separate, equal dicts)."""
    out = deep_copy(dict(status or {}))
    rendered = {rtype: c.to_dict() for rtype, c in counts.items()}
    for m in maps:
        out[m] = deep_copy(rendered)
    return out
