"""``ttlSecondsAfterFinished``: when a finished job is deleted. Pure.

The job is deleted ``ttl`` seconds after its ``status.completionTime`` (``0``: at once; unset: never; not while
the job is suspended). A finished job without a completion time (written by an older controller, or removed by
hand) gets one set to now rather than being dereferenced (kubeflow/common #170 crashed the operator on it). A
completion time in the future means the clocks disagree: the deletion waits for it, with a warning.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class TTLAction(enum.Enum):
    KEEP = "keep"                        # no TTL (or suspended): the job stays
    SET_COMPLETION_TIME = "set"          # finished without a completion time: write one, then wait the TTL
    WAIT = "wait"                        # not yet: look again in ``wait`` seconds
    DELETE = "delete"                    # expired: delete the job now


@dataclass(frozen=True, slots=True)
class TTLDecision:
    action: TTLAction
    wait: float = 0.0        # seconds until the job expires (WAIT, SET_COMPLETION_TIME)
    skewed: bool = False     # the completion time lies in the future


def ttl_decision(now: float, completion_time: float | None, ttl_seconds: int | None,
                 suspended: bool = False) -> TTLDecision:
    """What to do about a finished job's TTL at ``now`` (Unix times)."""
    if ttl_seconds is None or suspended:
        return TTLDecision(TTLAction.KEEP)
    if completion_time is None:
        return TTLDecision(TTLAction.SET_COMPLETION_TIME, wait=float(ttl_seconds))
    expires = completion_time + ttl_seconds
    if now >= expires:
        return TTLDecision(TTLAction.DELETE)
    return TTLDecision(TTLAction.WAIT, wait=expires - now, skewed=completion_time > now)
