"""The informer side of a job controller: event handlers that turn changes of jobs and of their children into
work-queue keys and mark expectations observed; read access to the caches; and what the caches keep of each
child.

A child is mapped to its job through its *controller* reference only (kind and API group of the framework's job,
then the cached job of that name with the same UID: :class:`JobOwner`): a pod of a TFJob with the same name as ours
never wakes our job (training-operator #1796). Creations and deletions of children are marked observed on the job's
expectations (deletions seen only as tombstones too), keyed by the child's replica type label.

Handlers only queue keys and mark expectations: every write (status, children, events such as ``ExitedWithCode``)
is the reconcile's, so data flows informer → queue → reconcile → writes, and a slow write never holds up the
informer's delivery.

Handlers of the legacy caches (children the old operator made, before adoption) only queue the job: their objects
leave that cache when adopted, which is not a deletion, and enter ours, which is the creation adoption expects.

The caches are read by job key, and children by controller UID. Jobs may be cached by several informers (one per
watched namespace); children by several too (per namespace, and per label selector: the children we made, and the
legacy ones we may adopt). Reads go to the store of each, never to the API. Objects returned belong to the caches:
read-only.

Of each cached pod and service the controller keeps only the fields it reads (client-go's ``SetTransform``). A pod
as the API server sends it is mostly what the controller wrote itself (the template: containers, env with a
``MX_CONFIG`` that lists every replica of the job, volumes …) plus what the kubelet adds (conditions, images, IPs).
None of it is read again: the cache serves classification, counting and the failure policy, which read the fields
below. Dropping the rest at ingest makes the pod cache several times smaller (``make bench``: ``memory``), which is
what lets one controller keep tens of thousands of pods (training-operator's full-object cache OOMs, #1661).
What is kept is held once where it repeats (``runtime/shared_values``): strings interned, one labels map and one
owner-reference list per distinct value shared by the children that carry it; cached jobs are whole but for
``managedFields``, their keys and strings interned, their spec's large subtrees and their status's replica counts
shared with the other jobs that have equal ones.

Kept, for both kinds (``metadata``):

==========================  ====================================================================================
``apiVersion``, ``kind``    the object's type (events, tombstones)
``name``, ``namespace``     keys, child names, delete/patch paths, messages (``cache_keys``, ``child_sync``,
                            ``child_writes``, ``reconciler``)
``uid``                     identity: de-duplication, delete preconditions, per-pod memory (``child_sync``,
                            ``child_writes``, ``reconciler``, ``failure_policy``)
``resourceVersion``         change detection of updates (``handlers``, the informer's relist)
``creationTimestamp``       which of two children of one index is kept (``child_sync``)
``deletionTimestamp``       being deleted: not counted active, not deleted again (``pods``, ``finished_jobs``)
``labels``                  replica type and index, adoption (``job_vocabulary``, ``child_sync``, ``child_writes``)
``ownerReferences``         the controller reference: the index by job UID, ownership (``cache_keys``,
                            ``job_vocabulary``, ``handlers``)
==========================  ====================================================================================

Kept for pods only (``status``): ``phase``, ``reason``, ``message``, ``startTime`` (``pods``,
``failure_policy``), and of each ``containerStatuses`` / ``initContainerStatuses`` entry its ``name``,
``restartCount`` and ``state`` (exit codes, reasons and times of terminations: ``pods``, ``failure_policy``,
``reconciler``). Nothing of ``spec``, ``annotations``, ``managedFields``, ``conditions`` or ``lastState`` is read.
Services keep no ``spec`` or ``status``.

A new reader of a cached field must add it here: ``tests/core/test_handlers.py`` checks that a reconcile over
transformed objects decides as it does over whole ones, and this table is the list to extend.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from mxjob_controller.core.job_vocabulary import api_group, replica_of
from mxjob_controller.runtime.cache_keys import CONTROLLER_UID_INDEX, controller_ref, deletion_key, object_key
from mxjob_controller.runtime.expectations import ControllerExpectations, ExpectationKey, last_known_state
from mxjob_controller.runtime.informer import SharedInformer, drop_managed_fields
from mxjob_controller.runtime.shared_values import SharedValues, interned

# --- caches -------------------------------------------------------------------------------------------------------

class JobCaches:
    def __init__(self, jobs: Sequence[SharedInformer], pods: Sequence[SharedInformer],
                 services: Sequence[SharedInformer]) -> None:
        self.jobs = tuple(jobs)
        self.pod_informers = tuple(pods)
        self.service_informers = tuple(services)

    def job(self, key: str) -> dict[str, Any] | None:
        for informer in self.jobs:
            obj = informer.store.get(key)
            if obj is not None:
                return obj
        return None

    def pods(self, controller_uid: str) -> list[dict[str, Any]]:
        """Every cached pod whose controller reference carries ``controller_uid``."""
        return _controlled(self.pod_informers, controller_uid)

    def services(self, controller_uid: str) -> list[dict[str, Any]]:
        return _controlled(self.service_informers, controller_uid)

    def informers(self) -> tuple[SharedInformer, ...]:
        return (*self.jobs, *self.pod_informers, *self.service_informers)

    def synced(self) -> bool:
        return all(informer.has_synced() for informer in self.informers())


def _controlled(informers: Sequence[SharedInformer], uid: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for informer in informers:
        for obj in informer.store.by_index(CONTROLLER_UID_INDEX, uid):
            obj_uid = (obj.get("metadata") or {}).get("uid") or ""
            if obj_uid not in seen:
                seen.add(obj_uid)
                out.append(obj)
    return out


# --- child cache -------------------------------------------------------------------------------------------------

_META_KEPT = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "labels",
              "ownerReferences")
_POD_STATUS_KEPT = ("phase", "reason", "message", "startTime")
_CONTAINER_STATUS_KEPT = ("name", "restartCount", "state")


# One canonical labels map and owner-reference list per distinct value, shared by the children that carry it (a
# pod and its service have the same labels; all children of a job the same owner reference); strings interned.
_SHARED = SharedValues()
_UNIQUE = ("uid", "resourceVersion")   # one object's own: interning them would only grow the table


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return {}
    out: dict[str, Any] = {}
    for k in _META_KEPT:
        if k not in meta:
            continue
        value = meta[k]
        if k == "labels":
            value = _SHARED.flat_dict(value)
        elif k == "ownerReferences":
            value = _SHARED.dict_list(value)
        elif k not in _UNIQUE:
            value = interned(value)
        out[k] = value
    return out


def _container_statuses(entries: Any) -> list[Any]:
    return [{k: interned(e[k]) for k in _CONTAINER_STATUS_KEPT if k in e} if isinstance(e, dict) else e
            for e in entries]


def _typed(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: interned(obj[k]) for k in ("apiVersion", "kind") if k in obj}
    out["metadata"] = _metadata(obj)
    return out


def pod_cache_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The cached form of a pod: the fields the module docstring lists, nothing else (a new dict; strings interned,
    labels and owner references shared with the other cached children that carry the same)."""
    out = _typed(obj)
    status = obj.get("status")
    if isinstance(status, dict):
        kept = {k: interned(status[k]) for k in _POD_STATUS_KEPT if k in status}
        for key in ("initContainerStatuses", "containerStatuses"):
            entries = status.get(key)
            if isinstance(entries, list):
                kept[key] = _container_statuses(entries)
        out["status"] = kept
    return out


def job_cache_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The cached form of a job: the whole object but ``metadata.managedFields``, every key and string interned
    (conditions, replica statuses and templates repeat from job to job), the large parts of its ``spec`` (replica
    specs, pod templates) shared with every cached job that has the same (``SharedValues.tree``), and so is each
    dict and list of its ``status`` but the conditions (:func:`_status_view`)."""
    return {sys.intern(k): _SHARED.tree(v) if k == "spec" else _status_view(v) if k == "status" else interned(v)
            for k, v in drop_managed_fields(obj).items()}


def _status_view(status: Any) -> Any:
    """A job's status with its replica statuses (``{"Worker": {"succeeded": 1}, ...}``: a handful of distinct values
    among thousands of jobs, and 1.5 KB per job of a 1/1/1 job's two of them) held once each, however small: every
    dict and list in it but ``conditions``, whose messages name the job (an entry in the table for each would only
    cost)."""
    if not isinstance(status, dict):
        return interned(status)
    return {sys.intern(k): interned(v) if k == "conditions" else _SHARED.tree(v, min_bytes=0)
            for k, v in status.items()}


def service_cache_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The cached form of a service: its type and the metadata fields the module docstring lists."""
    return _typed(obj)


# --- handlers ----------------------------------------------------------------------------------------------------

log = logging.getLogger(__name__)

Enqueue = Callable[[str], None]
ResolveJob = Callable[[str], "dict[str, Any] | None"]
ExpectationKeyFor = Callable[[str, str], ExpectationKey]


class JobHandlers:
    """For the job informer: every add, change, resync and delete queues the job's key. A job that has no status
    yet goes to the front (``enqueue_first``), so a new job gets its first status promptly even while the queue is
    long with the work of others (a large job being created, a hundred jobs finishing). A resync of a job that is
    ``settled`` at its cached resourceVersion (a finished job with nothing left to do: core/finished_jobs.py) queues
    nothing: one dict lookup is its whole cost.

    A job deleted, given a ``deletionTimestamp``, or replaced by another of its name (a new UID) has the child
    writes of a pass under way cancelled at once (``cancel``: core/cancellation.py), before its key is queued: the
    queue may be long, and the pass's creates waiting in the client would go out meanwhile."""

    def __init__(self, enqueue: Enqueue, enqueue_first: Enqueue | None = None,
                 settled: Callable[[str, str], bool] | None = None,
                 cancel: Callable[[str, str | None], object] | None = None) -> None:
        self.enqueue = enqueue
        self.enqueue_first = enqueue_first or enqueue
        self.settled = settled
        self.cancel = cancel

    def on_add(self, obj: dict[str, Any]) -> None:
        new = not ((obj.get("status") or {}).get("conditions"))
        (self.enqueue_first if new else self.enqueue)(object_key(obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        key = object_key(new)
        if old is new:
            if self.settled is not None and self.settled(key, (new.get("metadata") or {}).get("resourceVersion") or ""):
                return   # a resync of a settled job
        elif self.cancel is not None:
            before, after = old.get("metadata") or {}, new.get("metadata") or {}
            if after.get("deletionTimestamp"):
                self.cancel(key, after.get("uid"))
            elif before.get("uid") != after.get("uid"):   # replaced, its deletion missed (a relist): the old one's
                self.cancel(key, before.get("uid"))
        self.enqueue(key)

    def on_delete(self, obj: Any) -> None:
        key = deletion_key(obj)
        if self.cancel is not None:
            self.cancel(key, (last_known_state(obj).get("metadata") or {}).get("uid"))
        self.enqueue(key)


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
