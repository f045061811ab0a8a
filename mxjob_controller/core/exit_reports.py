"""``ExitedWithCode``: one Normal event on the job per termination of a pod's framework container, as upstream
names it ("Pod: <namespace>.<name> exited with code <code>").

Recorded by the reconcile, from the pods the cache shows it (data flows informer → queue → reconcile → writes), once
per termination: a pod is remembered by UID with the termination last reported (exit code and ``finishedAt``,
``pod_status.termination``), so a resync or another change of the same pod reports nothing, and a container that
restarted and exited again is reported again.

The first look at a job in this process (after a start or a leader change) records what it sees without a word:
those exits happened before this controller watched, and were reported by the one that did (training-operator
re-emitted them on every reconcile). Memory is bounded (least recently seen jobs and pods are forgotten first; a
forgotten job is looked at afresh, so an exit is never reported twice, at worst not at all).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from cachetools import LRUCache

from mxjob_controller.core.pod_status import termination
from mxjob_controller.runtime.events import NORMAL, EventRecorder, ObjectReference

EXITED_WITH_CODE = "ExitedWithCode"
DEFAULT_MAX_JOBS = 4096
DEFAULT_MAX_PODS = 65536


def exit_message(pod: dict[str, Any], code: int) -> str:
    meta = pod.get("metadata") or {}
    return f"Pod: {meta.get('namespace')}.{meta.get('name')} exited with code {code}"


class ExitReports:
    """Thread-safe: reconciles of different jobs call it at once (one job is never on two threads)."""

    def __init__(self, recorder: EventRecorder, container: str, *, max_jobs: int = DEFAULT_MAX_JOBS,
                 max_pods: int = DEFAULT_MAX_PODS) -> None:
        self.recorder = recorder
        self.container = container
        self._jobs: LRUCache[str, bool] = LRUCache(maxsize=max_jobs)                  # job UIDs looked at
        self._reported: LRUCache[str, tuple[int, str]] = LRUCache(maxsize=max_pods)   # pod UID → termination
        self._lock = threading.Lock()

    def report(self, job: ObjectReference, pods: Sequence[dict[str, Any]]) -> int:
        """Record an event for every termination among ``pods`` (the job's, from the cache) not reported yet; how
        many were recorded."""
        fresh: list[tuple[dict[str, Any], int]] = []
        with self._lock:
            first_look = self._jobs.get(job.uid) is None
            self._jobs[job.uid] = True
            for pod in pods:
                exited = termination(pod, self.container)
                uid = (pod.get("metadata") or {}).get("uid") or ""
                if exited is None or not uid or self._reported.get(uid) == exited:
                    continue
                self._reported[uid] = exited
                if not first_look:
                    fresh.append((pod, exited[0]))
        for pod, code in fresh:
            self.recorder.event(job, NORMAL, EXITED_WITH_CODE, exit_message(pod, code))
        return len(fresh)
