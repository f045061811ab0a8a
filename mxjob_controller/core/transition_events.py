"""The Events a job's condition transitions are announced with, in one place, so that the reconcile that writes a
transition and a controller that finds a job already finished after a restart write the very same Event: type by
condition, reason and message those of the condition as stored.

A job's ``Succeeded``, ``Failed`` and ``Restarting`` events are *important* (``EventRecorder.event(important=True)``):
they end a chapter of the job, users and tools wait for them, and they are few; the recorder never drops them to
make room for ordinary events nor spam-filters them.

After a restart: a finished job whose condition turned True less than :data:`ANNOUNCE_WINDOW` seconds ago gets its
terminal event recorded with ``event_once`` (written unless this process or the API already has one). Older ones
get nothing: kube-apiserver deletes Events an hour after their last write (``--event-ttl``), so theirs may be gone
on purpose, and announcing a days-old end as news would mislead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mxjob_controller.core import conditions as cond
from mxjob_controller.kube.timefmt import parse_time
from mxjob_controller.runtime.events import NORMAL, WARNING

EVENT_TYPES = {cond.RUNNING: NORMAL, cond.SUCCEEDED: NORMAL, cond.FAILED: WARNING, cond.RESTARTING: WARNING}
IMPORTANT = frozenset({cond.SUCCEEDED, cond.FAILED, cond.RESTARTING})
ANNOUNCE_WINDOW = 3600.0   # kube-apiserver's default --event-ttl


@dataclass(frozen=True, slots=True)
class TransitionEvent:
    event_type: str
    reason: str
    message: str
    important: bool
    at: float | None       # the condition's lastTransitionTime (Unix), when it has one


def transition_event(kind: str, ctype: str, conditions: cond.Conditions | None) -> TransitionEvent | None:
    """The Event announcing that ``ctype`` turned True, from the condition in ``conditions``; None for a type
    that is not announced this way."""
    event_type = EVENT_TYPES.get(ctype)
    if event_type is None:
        return None
    found: dict[str, Any] = cond.find(conditions, ctype) or {}
    return TransitionEvent(event_type, found.get("reason") or f"{kind}{ctype}", found.get("message") or "",
                           ctype in IMPORTANT, parse_time(found.get("lastTransitionTime")))


def terminal_event(kind: str, conditions: cond.Conditions | None) -> TransitionEvent | None:
    """The Event announcing how a finished job ended (its True ``Succeeded`` or ``Failed``); None if unfinished."""
    for ctype in (cond.SUCCEEDED, cond.FAILED):
        if cond.is_true(conditions, ctype):
            return transition_event(kind, ctype, conditions)
    return None
