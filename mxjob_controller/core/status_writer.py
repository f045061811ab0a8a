"""Writing a job's status: a JSON merge patch on ``/status`` carrying ``metadata.resourceVersion``, sent only when
the status changed.

The resourceVersion makes the write conditional: if the job changed since it was read, the server answers 409, the
writer re-reads the job from the API (not the cache, which may still be behind) and recomputes the status from
that fresh object, so no condition written by someone else in between is lost and no transition is decided twice.

Guarantee: the returned :class:`StatusWrite` pairs the status a write was computed from with the status the server
stored, so callers decide events and metrics from exactly the transition that was recorded.

Read your own writes: the informer cache shows a status write only when its watch event arrives, often after the
events of the pods created in the same reconcile have queued the job again. Computing from that stale job would
send a second PATCH that the server refuses (409) and a retry; :meth:`StatusWriter.freshest` hands the reconciler
the object the last write stored while the cache still shows an older resourceVersion of it (client-go's
``MutationCache`` idea). Any other resourceVersion in the cache (our write, or a later change by anyone) wins.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube.patch.merge import create_merge_patch
from mxjob_controller.runtime.cache_keys import object_key
from mxjob_controller.runtime.client import Client, Conflict, NotFound, Resource, ServerError

log = logging.getLogger(__name__)

DEFAULT_ATTEMPTS = 5
SERVER_ERROR_PAUSE = 0.1   # seconds before resending a status PATCH the server failed (5xx), times the attempt

Desired = Callable[[dict[str, Any]], "dict[str, Any] | None"]


@dataclass(frozen=True, slots=True)
class StatusWrite:
    before: dict[str, Any]   # the status the new one was computed from
    after: dict[str, Any]    # the status the server now holds (== before when nothing was written)
    job: dict[str, Any]      # the job object after the write (or as read)
    written: bool


class StatusWriter:
    def __init__(self, client: Client, resource: Resource, attempts: int = DEFAULT_ATTEMPTS) -> None:
        self.client = client
        self.resource = resource
        self.attempts = max(1, attempts)
        # job key → (uid, resourceVersions our writes replaced, the job the last write stored)
        self._written: dict[str, tuple[str, frozenset[str], dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def freshest(self, key: str, job: dict[str, Any]) -> dict[str, Any]:
        """``job`` as cached, or the object our last status write stored if the cache has not shown it yet."""
        meta = job.get("metadata") or {}
        with self._lock:
            entry = self._written.get(key)
            if entry is None:
                return job
            uid, replaced, stored = entry
            if uid == meta.get("uid") and meta.get("resourceVersion") in replaced:
                return stored
            del self._written[key]   # the cache caught up (or the job changed): it is the freshest again
            return job

    def forget(self, key: str) -> None:
        """The job is gone: drop what was remembered of its writes."""
        with self._lock:
            self._written.pop(key, None)

    def _remember(self, key: str, written_from: dict[str, Any], stored: dict[str, Any]) -> None:
        meta = written_from.get("metadata") or {}
        rv, uid = meta.get("resourceVersion") or "", meta.get("uid") or ""
        with self._lock:
            old = self._written.get(key)
            chain = old[1] if old is not None and old[0] == uid and \
                (old[2].get("metadata") or {}).get("resourceVersion") == rv else frozenset()
            self._written[key] = (uid, chain | {rv}, stored)

    def update(self, job: dict[str, Any], desired: Desired, extra: dict[str, Any] | None = None) -> StatusWrite | None:
        """Write ``desired(job)`` if it differs from ``job``'s status; on a conflict re-read and recompute.

        ``desired`` returns None when the (fresh) job must not be written any more (finished meanwhile, replaced by
        a job with another UID...): then nothing is written and None is returned, as when the job is gone.
        """
        uid = (job.get("metadata") or {}).get("uid")
        for attempt in range(1, self.attempts + 1):
            before = job.get("status") or {}
            after = desired(job)
            if after is None:
                return None
            if after == before:
                return StatusWrite(before, before, job, written=False)
            meta = job.get("metadata") or {}
            patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")},
                     "status": create_merge_patch(before, after)}
            try:
                stored = self.client.patch(self.resource, meta["name"], patch, meta.get("namespace"),
                                           subresource="status")
            except NotFound:
                log.info("job vanished before its status could be written", extra=extra)
                return None
            except ServerError as e:
                # The PATCH is conditional on the resourceVersion it was computed from, so sending it again cannot
                # write over anything; retried here, a 5xx costs a short pause instead of a failed reconcile that
                # goes to the back of the queue (a new job would wait that long for its first status).
                if attempt == self.attempts:
                    raise
                log.info("status write failed (%s; attempt %d of %d): retrying", e, attempt, self.attempts,
                         extra=extra)
                time.sleep(min(SERVER_ERROR_PAUSE * attempt, 1.0))
                continue
            except Conflict:
                if attempt == self.attempts:
                    raise
                log.info("status write conflicted (attempt %d of %d): re-reading the job", attempt, self.attempts,
                         extra=extra)
                try:
                    job = self.client.get(self.resource, meta["name"], meta.get("namespace"))
                except NotFound:
                    return None
                if (job.get("metadata") or {}).get("uid") != uid:
                    log.info("job was replaced by another with the same name: not writing", extra=extra)
                    return None
                continue
            stored.get("metadata", {}).pop("managedFields", None)   # as the informer keeps it
            self._remember(object_key(job), job, stored)   # the key the work queue and freshest() use
            return StatusWrite(before, stored.get("status") or {}, stored, written=True)
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt
