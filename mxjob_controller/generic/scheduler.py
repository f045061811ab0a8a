"""The T9k scheduler's PodGroup of a GenericJob with ``spec.scheduler.t9kScheduler``: created before its pods,
deleted once the job has finished. Optional, as Volcano is for Kubeflow jobs: where the cluster does not serve
``podgroups.scheduler.tensorstack.dev`` the job runs on the default scheduler, with one Warning event
(``SchedulerUnavailable``) per job generation, instead of pods Pending forever for a scheduler that is not there.

The PodGroup is ``scheduler.tensorstack.dev/v1beta1``, named after the job, owned by it (controller reference),
with ``minMember`` the job's replicas, ``queue``, ``priority`` and one role per replica type (``name``,
``minMember``); the pods name it by label (``generic/wiring.py``).

Writes happen once per job per process: the PodGroup is created when a pass first needs it (an existing one is
fine if the job controls it; one it does not control, e.g. a previous job's of the same name that the garbage
collector has not removed yet, makes the pass fail and retry with back-off) and deleted, preconditioned on its UID,
when a finished job is first seen (gone already: fine). Not done: a PodGroup deleted by someone while its job runs
is not created again, and minMember is not updated when the replicas change. Whether the API is served is
asked of discovery (no RBAC needed), at most once per :data:`RECHECK_SECONDS`, so a CRD installed later is noticed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from cachetools import LRUCache

from mxjob_controller.core.framework import JobContext, OncePerGeneration
from mxjob_controller.core.job_vocabulary import is_controlled_by
from mxjob_controller.core.podgroups import is_served
from mxjob_controller.generic.api import GenericJobView
from mxjob_controller.runtime.client import AlreadyExists, Client, Conflict, NotFound, Resource
from mxjob_controller.runtime.events import WARNING, EventRecorder

log = logging.getLogger(__name__)

PODGROUPS = Resource("scheduler.tensorstack.dev", "v1beta1", "podgroups", kind="PodGroup")
SCHEDULER_UNAVAILABLE = "SchedulerUnavailable"
#: The scheduler T9k's manual gives the pods of a job with ``spec.scheduler.t9kScheduler``.
T9K_SCHEDULER_NAME = "t9k-scheduler"
RECHECK_SECONDS = 60.0
_REMEMBERED = 65536   # jobs whose PodGroup this process created or deleted


class PodGroupTakenError(RuntimeError):
    """The job's PodGroup name is held by a PodGroup this job does not control."""


def podgroup(job: GenericJobView, owner: dict) -> dict:
    """The PodGroup a job with the T9k scheduler gets."""
    assert job.scheduler is not None
    return {"apiVersion": PODGROUPS.api_version, "kind": PODGROUPS.kind,
            "metadata": {"name": job.name, "namespace": job.namespace, "ownerReferences": [dict(owner)]},
            "spec": {"minMember": job.total_replicas, "queue": job.scheduler.queue,
                     "priority": job.scheduler.priority,
                     "roles": [{"name": t, "minMember": r.replicas} for t, r in job.replicas.items()]}}


class T9kPodGroups:
    def __init__(self, client: Client, recorder: EventRecorder, *, timeout: float = 30.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.recorder = recorder
        self.timeout = timeout
        self.clock = clock
        self._lock = threading.Lock()
        self._served: tuple[float, bool] | None = None   # (asked at, answer)
        self._created: LRUCache[str, bool] = LRUCache(_REMEMBERED)
        self._released: LRUCache[str, bool] = LRUCache(_REMEMBERED)
        self._warned = OncePerGeneration()

    def served(self) -> bool:
        """Whether the T9k PodGroups are served (asked again after :data:`RECHECK_SECONDS`)."""
        now = self.clock()
        with self._lock:
            if self._served is not None and now - self._served[0] < RECHECK_SECONDS:
                return self._served[1]
        answer = is_served(self.client, PODGROUPS, self.timeout)
        with self._lock:
            self._served = (now, answer)
        return answer

    def ensure(self, ctx: JobContext, job: GenericJobView) -> bool:
        """Create the job's PodGroup if this process has not; False (and a Warning, once per generation) when the
        API is not served: the pods then go to the default scheduler."""
        if not self.served():
            if self._warned.first(ctx.uid, job.generation):
                message = (f"spec.scheduler.t9kScheduler is set, but this cluster does not serve "
                           f"{PODGROUPS.plural}.{PODGROUPS.group} ({PODGROUPS.api_version}), the T9k scheduler's "
                           "PodGroups: the pods use the default scheduler")
                log.warning(message, extra=ctx.extra())
                self.recorder.event(ctx.ref(), WARNING, SCHEDULER_UNAVAILABLE, message)
            return False
        with self._lock:
            if ctx.uid in self._created:
                return True
        try:
            self.client.create(PODGROUPS, podgroup(job, ctx.owner()), job.namespace)
            log.info("created PodGroup %s (minMember %d, queue %s)", job.name, job.total_replicas,
                     job.scheduler.queue if job.scheduler else "", extra=ctx.extra())
        except AlreadyExists:
            existing = self._ours(ctx)
            if existing is None:
                # A previous job of this name whose PodGroup the garbage collector has not removed yet, or someone
                # else's: its pods must not join it. Raised: the job is retried with back-off until it is gone.
                raise PodGroupTakenError(f"PodGroup {ctx.namespace}/{ctx.name} exists and is not controlled by this "
                                         "job (a previous job's, not yet garbage-collected?): waiting for it to go") \
                    from None
        with self._lock:
            self._created[ctx.uid] = True
        return True

    def _ours(self, ctx: JobContext) -> dict | None:
        """The job's PodGroup if it exists and this job controls it (by UID)."""
        try:
            existing = self.client.get(PODGROUPS, ctx.name, ctx.namespace)
        except NotFound:
            return None
        return existing if is_controlled_by(existing, ctx.uid) else None

    def release(self, ctx: JobContext) -> None:
        """Delete the finished job's PodGroup, if this job controls it, once per process (preconditioned on its UID:
        a PodGroup of the same name made meanwhile for another job is left alone)."""
        with self._lock:
            if ctx.uid in self._released:
                return
        if self.served():
            existing = self._ours(ctx)
            if existing is not None:
                try:
                    self.client.delete(PODGROUPS, ctx.name, ctx.namespace,
                                       precondition_uid=(existing.get("metadata") or {}).get("uid"))
                    log.info("deleted PodGroup %s: the job has finished", ctx.name, extra=ctx.extra())
                except (NotFound, Conflict):
                    pass
        with self._lock:
            self._released[ctx.uid] = True
