"""``activeDeadlineSeconds``: how long a job may be active, counted from its ``status.startTime``. Pure.

The start time is the one the controller persisted in the job's first status write (resuming a suspended job
moves it), so the deadline survives a controller restart (training-operator lost it when ``startTime`` was never
written, PR #1643). The reconciler turns :func:`deadline_at` into a delayed requeue of the job, so the deadline
fires on time even when nothing else about the job changes (#3358: the requeue went to a queue nobody read).
"""

from __future__ import annotations

DEADLINE_MESSAGE = "Job {name} has failed because it was active longer than specified deadline"


def deadline_at(start_time: float | None, active_deadline_seconds: int | None) -> float | None:
    """When the job's deadline passes (Unix time); None without a deadline or before the job has started."""
    if active_deadline_seconds is None or start_time is None:
        return None
    return start_time + active_deadline_seconds


def deadline_message(name: str) -> str:
    return DEADLINE_MESSAGE.format(name=name)
