"""The parts of Kubeflow's common job API every framework shares (kubeflow/common ``JobStatus``).

Per-replica-type pod counts and a condition entry, as the Go operators write them. The MXJob API builds its
status on these; the job-controller core computes them. Nothing framework-specific lives here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReplicaCounts:
    """Pods of one replica type by phase. Zero counts are omitted on the wire (``omitempty``)."""

    active: int = 0
    succeeded: int = 0
    failed: int = 0

    def to_dict(self) -> dict[str, int]:
        return {k: v for k, v in (("active", self.active), ("succeeded", self.succeeded),
                                  ("failed", self.failed)) if v}


def condition(ctype: str, reason: str, message: str, now: str, status: str = "True") -> dict[str, str]:
    """One entry of ``status.conditions`` as the Go operators write it."""
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastUpdateTime": now, "lastTransitionTime": now}
