"""Informer event handlers: turn changes of jobs and of their children into work-queue keys, and mark
expectations observed.

A child is mapped to its job through its *controller* reference only (kind and API group of the framework's job,
then the cached job of that name with the same UID): a pod of a TFJob with the same name as ours never wakes our
job (training-operator #1796). Creations and deletions of children are marked observed on the job's expectations
(deletions seen only as tombstones too), keyed by the child's replica type label.

Handlers of the legacy caches (children the old operator made, before adoption) only queue the job: their objects
leave that cache when adopted, which is not a deletion, and enter ours, which is the creation adoption expects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mxjob_controller.core.labels import replica_of
from mxjob_controller.core.ownership import api_group, controller_ref
from mxjob_controller.core.pod_status import newly_exited
from mxjob_controller.runtime.cache_keys import deletion_key, object_key
from mxjob_controller.runtime.expectations import ControllerExpectations, ExpectationKey, last_known_state

log = logging.getLogger(__name__)

Enqueue = Callable[[str], None]
ResolveJob = Callable[[str], "dict[str, Any] | None"]
ExpectationKeyFor = Callable[[str, str], ExpectationKey]
OnExit = Callable[[dict[str, Any], dict[str, Any], int], None]   # (job, pod, exit code)


class JobHandlers:
    """For the job informer: every add, change, resync and delete queues the job's key."""

    def __init__(self, enqueue: Enqueue) -> None:
        self.enqueue = enqueue

    def on_add(self, obj: dict[str, Any]) -> None:
        self.enqueue(object_key(obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.enqueue(object_key(new))

    def on_delete(self, obj: Any) -> None:
        self.enqueue(deletion_key(obj))


class ChildHandlers:
    """For one children informer (pods or services)."""

    def __init__(self, *, kind: str, group: str, resolve_job: ResolveJob, enqueue: Enqueue,
                 expectations: ControllerExpectations | None, expectation_key: ExpectationKeyFor,
                 container: str = "", on_exit: OnExit | None = None) -> None:
        self.kind = kind
        self.group = group
        self.resolve_job = resolve_job
        self.enqueue = enqueue
        self.expectations = expectations   # None: a legacy cache, whose events are never observations
        self.expectation_key = expectation_key
        self.container = container
        self.on_exit = on_exit

    def _job_key(self, obj: dict[str, Any]) -> tuple[str, str] | None:
        """(job key, job uid) of the child's controller, if it is a job of our kind."""
        ref = controller_ref(obj)
        if ref is None or ref.get("kind") != self.kind or api_group(ref.get("apiVersion") or "") != self.group:
            return None
        namespace = (obj.get("metadata") or {}).get("namespace") or ""
        return f"{namespace}/{ref.get('name')}", ref.get("uid") or ""

    def _job(self, key: str, uid: str) -> dict[str, Any] | None:
        job = self.resolve_job(key)
        return job if job is not None and (job.get("metadata") or {}).get("uid") == uid else None

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
        owner = self._job_key(obj)
        if owner is None:
            return
        self._observe(owner[0], obj, created=True)
        if self._job(*owner) is not None:
            self.enqueue(owner[0])

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old is new or (old.get("metadata") or {}).get("resourceVersion") == \
                (new.get("metadata") or {}).get("resourceVersion"):
            return  # a resync: the job's own resync covers it
        before, after = self._job_key(old), self._job_key(new)
        if before is not None and before != after and self._job(*before) is not None:
            self.enqueue(before[0])
        if after is None:
            return
        job = self._job(*after)
        if job is None:
            return
        if self.on_exit is not None:
            code = newly_exited(old, new, self.container)
            if code is not None:
                self.on_exit(job, new, code)
        self.enqueue(after[0])

    def on_delete(self, obj: Any) -> None:
        last = last_known_state(obj)
        owner = self._job_key(last)
        if owner is None:
            return
        self._observe(owner[0], last, created=False)
        if self._job(*owner) is not None:
            self.enqueue(owner[0])
