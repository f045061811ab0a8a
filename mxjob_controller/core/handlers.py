"""Informer event handlers: turn changes of jobs and of their children into work-queue keys, and mark
expectations observed.

A child is mapped to its job through its *controller* reference only (kind and API group of the framework's job,
then the cached job of that name with the same UID: :class:`JobOwner`): a pod of a TFJob with the same name as ours
never wakes our job (training-operator #1796). Creations and deletions of children are marked observed on the job's
expectations (deletions seen only as tombstones too), keyed by the child's replica type label.

Handlers only queue keys and mark expectations: every write (status, children, events such as ``ExitedWithCode``)
is the reconcile's, so data flows informer → queue → reconcile → writes, and a slow write never holds up the
informer's delivery.

Handlers of the legacy caches (children the old operator made, before adoption) only queue the job: their objects
leave that cache when adopted, which is not a deletion, and enter ours, which is the creation adoption expects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mxjob_controller.core.labels import replica_of
from mxjob_controller.core.ownership import api_group, controller_ref
from mxjob_controller.runtime.cache_keys import deletion_key, object_key
from mxjob_controller.runtime.expectations import ControllerExpectations, ExpectationKey, last_known_state

log = logging.getLogger(__name__)

Enqueue = Callable[[str], None]
ResolveJob = Callable[[str], "dict[str, Any] | None"]
ExpectationKeyFor = Callable[[str, str], ExpectationKey]


class JobHandlers:
    """For the job informer: every add, change, resync and delete queues the job's key. A job that has no status
    yet goes to the front (``enqueue_first``), so a new job gets its first status promptly even while the queue is
    long with the work of others (a large job being created, a hundred jobs finishing)."""

    def __init__(self, enqueue: Enqueue, enqueue_first: Enqueue | None = None) -> None:
        self.enqueue = enqueue
        self.enqueue_first = enqueue_first or enqueue

    def on_add(self, obj: dict[str, Any]) -> None:
        new = not ((obj.get("status") or {}).get("conditions"))
        (self.enqueue_first if new else self.enqueue)(object_key(obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.enqueue(object_key(new))

    def on_delete(self, obj: Any) -> None:
        self.enqueue(deletion_key(obj))


class JobOwner:
    """Which job of ours controls an object (a pod, a service, a PodGroup): the one its controller reference names,
    if that reference is to the framework's kind and API group, and only while the cache holds a job of that name
    with the reference's UID (a job re-created under the same name is another job)."""

    def __init__(self, *, kind: str, group: str, resolve_job: ResolveJob) -> None:
        self.kind = kind
        self.group = group
        self.resolve_job = resolve_job

    def reference(self, obj: dict[str, Any]) -> tuple[str, str] | None:
        """(job key, job UID) the object's controller reference names, if it is a job of our kind."""
        ref = controller_ref(obj)
        if ref is None or ref.get("kind") != self.kind or api_group(ref.get("apiVersion") or "") != self.group:
            return None
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        return f"{namespace}/{ref.get('name')}", ref.get("uid") or ""

    def is_cached(self, key: str, uid: str) -> bool:
        """Whether the cache holds the job ``key`` with that UID."""
        job = self.resolve_job(key)
        return job is not None and (job.get("metadata") or {}).get("uid") == uid

    def job_key(self, obj: dict[str, Any]) -> str | None:
        """The key of the cached job controlling ``obj``; None when there is none."""
        owner = self.reference(obj)
        return owner[0] if owner is not None and self.is_cached(*owner) else None


class ChildHandlers:
    """For one children informer (pods or services)."""

    def __init__(self, *, kind: str, group: str, resolve_job: ResolveJob, enqueue: Enqueue,
                 expectations: ControllerExpectations | None, expectation_key: ExpectationKeyFor) -> None:
        self.owner = JobOwner(kind=kind, group=group, resolve_job=resolve_job)
        self.enqueue = enqueue
        self.expectations = expectations   # None: a legacy cache, whose events are never observations
        self.expectation_key = expectation_key

    def _observe(self, key: str, obj: dict[str, Any], created: bool) -> None:
        if self.expectations is None:
            return
        found = replica_of((obj.get("metadata") or {}).get("labels"))
        if found is None:
            return
        exp_key = self.expectation_key(key, found[0])
        if created:
            self.expectations.creation_observed(exp_key)
        else:
            self.expectations.deletion_observed(exp_key)

    def on_add(self, obj: dict[str, Any]) -> None:
        owner = self.owner.reference(obj)
        if owner is None:
            return
        self._observe(owner[0], obj, created=True)
        if self.owner.is_cached(*owner):
            self.enqueue(owner[0])

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old is new or (old.get("metadata") or {}).get("resourceVersion") == \
                (new.get("metadata") or {}).get("resourceVersion"):
            return  # a resync: the job's own resync covers it
        before, after = self.owner.reference(old), self.owner.reference(new)
        if before is not None and before != after and self.owner.is_cached(*before):
            self.enqueue(before[0])
        if after is not None and self.owner.is_cached(*after):
            self.enqueue(after[0])

    def on_delete(self, obj: Any) -> None:
        last = last_known_state(obj)
        owner = self.owner.reference(last)
        if owner is None:
            return
        self._observe(owner[0], last, created=False)
        if self.owner.is_cached(*owner):
            self.enqueue(owner[0])
