"""Saying something once per job generation: a Warning about a job's template, a log line about an invalid spec.

A reconcile runs many times per generation (every child event, every resync); what it says about the spec itself
(a field it overrides, an error the user must fix) is said again only when the spec changes, i.e. once per
(job UID, ``metadata.generation``). Thread-safe; bounded (the least recently seen generations are forgotten first,
so a very old one may be said again, never a current one lost).
"""

from __future__ import annotations

import threading

from cachetools import LRUCache

DEFAULT_MAX_JOBS = 4096


class OncePerGeneration:
    def __init__(self, maxsize: int = DEFAULT_MAX_JOBS) -> None:
        self._seen: LRUCache[tuple[str, int], bool] = LRUCache(maxsize=maxsize)
        self._lock = threading.Lock()

    def first(self, uid: str, generation: int) -> bool:
        """True the first time this job generation is asked about, False after."""
        key = (uid, generation)
        with self._lock:
            if key in self._seen:
                return False
            self._seen[key] = True
            return True
