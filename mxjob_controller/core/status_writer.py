"""Writing a job's status: a JSON merge patch on ``/status`` carrying ``metadata.resourceVersion``, sent only when
the status changed.

The resourceVersion makes the write conditional: if the job changed since it was read, the server answers 409, the
writer re-reads the job from the API (not the cache, which may still be behind) and recomputes the status from
that fresh object, so no condition written by someone else in between is lost and no transition is decided twice.

Guarantee: the returned :class:`StatusWrite` pairs the status a write was computed from with the status the server
stored, so callers decide events and metrics from exactly the transition that was recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube.patch.merge import create_merge_patch
from mxjob_controller.runtime.client import Client, Conflict, NotFound, Resource

log = logging.getLogger(__name__)

DEFAULT_ATTEMPTS = 5

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
            return StatusWrite(before, stored.get("status") or {}, stored, written=True)
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt
