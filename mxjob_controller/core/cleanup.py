"""What ``cleanPodPolicy`` deletes once a job has finished. Pure.

- ``All``: every pod and every service of the job;
- ``Running``: the pods still Running or Pending (a Pending pod would start later and hold its resources for
  nothing), with their services (a pod and its service share a name), and the services of pods gone or going;
- ``Unfinished`` (GenericJob's ``cleanUpPolicy``): as ``Running``, and also pods in phase Unknown (not finished
  either: their node stopped reporting);
- ``None``: nothing; the pods stay for their logs (training-operator ignored it when the backoff limit hit, #3419).

Objects already being deleted are not selected again, and objects already gone are not in the cache: a finished
job that was cleaned selects nothing, so a resync makes no API call and records no event (training-operator
deleted them again on every resync, with error events, #997).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core.pod_status import PENDING, RUNNING, is_deleting, phase

CLEAN_ALL, CLEAN_RUNNING, CLEAN_UNFINISHED, CLEAN_NONE = "All", "Running", "Unfinished", "None"
_UNFINISHED_PHASES = {CLEAN_RUNNING: (RUNNING, PENDING), CLEAN_UNFINISHED: (RUNNING, PENDING, "Unknown")}


@dataclass(frozen=True, slots=True)
class CleanupPlan:
    pods: tuple[dict[str, Any], ...] = ()
    services: tuple[dict[str, Any], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.pods or self.services)


def _name(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


def cleanup_plan(policy: str, pods: Sequence[dict[str, Any]], services: Sequence[dict[str, Any]]) -> CleanupPlan:
    """The children of a finished job to delete under ``policy`` (``pods`` and ``services``: the job's own)."""
    if policy == CLEAN_NONE:
        return CleanupPlan()
    if policy == CLEAN_ALL:
        doomed = [p for p in pods if not is_deleting(p)]
    else:
        unfinished = _UNFINISHED_PHASES.get(policy, _UNFINISHED_PHASES[CLEAN_RUNNING])
        doomed = [p for p in pods if not is_deleting(p) and phase(p) in unfinished]
    staying = {_name(p) for p in pods if not is_deleting(p)} - {_name(p) for p in doomed}
    services_doomed = [s for s in services if not is_deleting(s) and (policy == CLEAN_ALL or _name(s) not in staying)]
    return CleanupPlan(tuple(doomed), tuple(services_doomed))
