"""Gang scheduling: a job's PodGroup and its pods' membership, for Volcano or scheduler-plugins.

Per reconcile of a running job, :meth:`GangScheduling.sync`:

- creates the PodGroup (named after the job, the job's annotations, our labels, one controller ownerReference)
  when the cache has none, guarded by expectations like a pod, so a lagging cache never creates it twice; a
  PodGroup of that name the job does not control is an error (a Warning, and the job retried with back-off);
- updates its spec only on a real difference (quantities compared by value), with a JSON merge patch that also
  removes fields the spec should not have, and never twice for the same cached version (training-operator
  updated it on every pass);
- says whether pods must wait (Volcano: until the group is admitted), and, when the group's scheduler marked it
  ``Unschedulable`` (Volcano's condition), why, in a Warning event ``PodGroupPending`` on the job, once per new
  message (as Volcano's own job controller does for its jobs).

:meth:`GangScheduling.decorate` makes each new pod join the group (a scheduler name in the template is kept, with
one ``SetPodTemplateSchedulerName`` Warning per job generation). :meth:`GangScheduling.release` deletes the
PodGroup when the job finishes (``JobTerminated`` and ``SuccessfulDeletePodGroup``, once: only a group the cache
shows is deleted, never again while that deletion is expected, and a group already gone is no event) or is
suspended.

The PodGroup informer's handlers (:class:`PodGroupHandlers`) wake the job when its group changes (Volcano
admitting it) and mark the creations and deletions expected.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from mxjob_controller.core.child_writes import describe
from mxjob_controller.core.framework import Framework, JobContext, OncePerGeneration
from mxjob_controller.core.handlers import JobOwner, ResolveJob
from mxjob_controller.core.job_vocabulary import is_controlled_by, job_labels, missing_labels
from mxjob_controller.core.podgroups import PodGroupFlavor, PriorityClasses, ReplicaTemplate, gang_request, same_spec
from mxjob_controller.core.pods import is_deleting
from mxjob_controller.kube.patch.merge import create_merge_patch
from mxjob_controller.runtime.cache_keys import object_key
from mxjob_controller.runtime.client import AlreadyExists, Client, Conflict, NotFound
from mxjob_controller.runtime.events import NORMAL, WARNING, EventRecorder
from mxjob_controller.runtime.expectations import ControllerExpectations, ExpectationKey, last_known_state
from mxjob_controller.runtime.informer import SharedInformer

log = logging.getLogger(__name__)

SET_TEMPLATE_SCHEDULER_NAME = "SetPodTemplateSchedulerName"
TEMPLATE_SCHEDULER_NAME_MESSAGE = ("Another scheduler is specified when gang-scheduling is enabled and it will not "
                                   "be overwritten")
JOB_TERMINATED = "JobTerminated"
JOB_TERMINATED_MESSAGE = "Job has been terminated. Deleting PodGroup"
PODGROUP_PENDING = "PodGroupPending"


class PodGroupNameTakenError(RuntimeError):
    """A PodGroup named after the job exists and the job does not control it."""


def podgroup_key(job_key: str) -> ExpectationKey:
    """The expectations record of a job's PodGroup."""
    return ExpectationKey(job_key, "podgroups", "")


@dataclass(frozen=True, slots=True)
class GangState:
    podgroup: dict[str, Any] | None     # as the cache (or the create) shows it
    holds_pods: bool                    # no pod may be created yet
    error: BaseException | None = None  # a failed PodGroup write: pods wait, the job is retried


class GangScheduling:
    def __init__(self, flavor: PodGroupFlavor, framework: Framework, client: Client,
                 podgroups: Sequence[SharedInformer], priorities: PriorityClasses, recorder: EventRecorder,
                 expectations: ControllerExpectations) -> None:
        self.flavor = flavor
        self.framework = framework
        self.client = client
        self.podgroups = tuple(podgroups)
        self.priorities = priorities
        self.recorder = recorder
        self.expectations = expectations
        self._lock = threading.Lock()
        self._patched: LRUCache[str, tuple[str, dict[str, Any]]] = LRUCache(maxsize=4096)  # uid → (rv, spec)
        self._warned = OncePerGeneration()
        self._unschedulable: LRUCache[str, str] = LRUCache(maxsize=4096)   # uid → the reason last said

    # --- reads ----------------------------------------------------------------------------------------------------

    def cached(self, ctx: JobContext) -> dict[str, Any] | None:
        """The job's PodGroup as the cache shows it (whoever controls it)."""
        for informer in self.podgroups:
            obj = informer.store.get(f"{ctx.namespace}/{ctx.name}")
            if obj is not None:
                return obj
        return None

    def request_spec(self, ctx: JobContext, current: dict[str, Any] | None) -> dict[str, Any]:
        spec = ctx.spec
        replicas = [ReplicaTemplate(rtype, spec.replicas[rtype].replicas,
                                    self.framework.pod_template(spec, rtype, 0))
                    for rtype in self.framework.replica_types(spec)]
        request = gang_request(spec.run_policy.scheduling_policy, replicas, self.priorities.value)
        return self.flavor.spec(request, current)

    # --- sync -----------------------------------------------------------------------------------------------------

    def sync(self, ctx: JobContext) -> GangState:
        current = self.cached(ctx)
        try:
            if current is None:
                current = self._create(ctx)
            elif not is_controlled_by(current, ctx.uid):
                raise PodGroupNameTakenError(f'podgroup "{ctx.name}" already exists and is not controlled by '
                                             f"{ctx.kind} {ctx.name}")
            elif not is_deleting(current):
                self._update(ctx, current)
        except Exception as e:
            return GangState(current, holds_pods=True, error=e)
        deleting = current is not None and is_deleting(current)
        holds = deleting or self.flavor.holds_pods(current)
        if holds and current is not None:
            self._say_unschedulable(ctx, current)
        return GangState(current, holds_pods=holds)

    def _say_unschedulable(self, ctx: JobContext, podgroup: dict[str, Any]) -> None:
        """A group its scheduler marked ``Unschedulable`` holds the job's pods back: the job says why (a Warning
        ``PodGroupPending``, Volcano's job controller's word), once per new message."""
        message = next((c.get("message") or c.get("reason") or "" for c in (podgroup.get("status") or {}).get(
            "conditions") or [] if c.get("type") == "Unschedulable" and c.get("status") == "True"), None)
        if message is None:
            return
        with self._lock:
            if self._unschedulable.get(ctx.uid) == message:
                return
            self._unschedulable[ctx.uid] = message
        self.recorder.event(ctx.ref(), WARNING, PODGROUP_PENDING,
                            f"PodGroup {ctx.namespace}/{ctx.name} is unschedulable: {message}")

    def _body(self, ctx: JobContext) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "name": ctx.name, "namespace": ctx.namespace,
            "labels": job_labels(self.framework.operator_name, self.framework.group_label, ctx.name),
            "ownerReferences": [ctx.owner()]}
        annotations = (ctx.obj.get("metadata") or {}).get("annotations")
        if annotations:
            metadata["annotations"] = dict(annotations)
        return {"apiVersion": self.flavor.resource.api_version, "kind": self.flavor.resource.kind,
                "metadata": metadata, "spec": self.request_spec(ctx, None)}

    def _create(self, ctx: JobContext) -> dict[str, Any] | None:
        key = podgroup_key(ctx.key)
        body = self._body(ctx)
        self.expectations.raise_expectations(key, adds=1)
        try:
            created = self.client.create(self.flavor.resource, body, ctx.namespace)
        except AlreadyExists:
            self.expectations.lower_expectations(key, adds=1)
            return self._existing(ctx, body)
        except Exception as e:
            self.expectations.lower_expectations(key, adds=1)
            log.warning("creating podgroup %s failed: %s", ctx.name, e, extra=ctx.extra())
            self.recorder.event(ctx.ref(), WARNING, "FailedCreatePodGroup", f"Error creating: {describe(e)}")
            raise
        log.info("created %s podgroup %s (minMember %s)", self.flavor.name, ctx.name,
                 body["spec"].get("minMember"), extra=ctx.extra())
        return created

    def _existing(self, ctx: JobContext, body: dict[str, Any]) -> dict[str, Any] | None:
        """The create met a PodGroup of the job's name: ours (made by the old operator, or not cached yet) is
        adopted (our labels patched in, so the cache sees it); anyone else's is an error."""
        try:
            existing = self.client.get(self.flavor.resource, ctx.name, ctx.namespace)
        except NotFound:
            return None   # gone meanwhile: the next pass creates it
        if not is_controlled_by(existing, ctx.uid):
            error = PodGroupNameTakenError(f'podgroup "{ctx.name}" already exists and is not controlled by '
                                           f"{ctx.kind} {ctx.name}")
            self.recorder.event(ctx.ref(), WARNING, "FailedCreatePodGroup", f"Error creating: {error}")
            raise error from None
        labels = missing_labels((existing.get("metadata") or {}).get("labels"), body["metadata"]["labels"])
        if labels:
            existing = self.client.patch(self.flavor.resource, ctx.name, {"metadata": {"labels": labels}},
                                         ctx.namespace)
            log.info("adopted podgroup %s: labels %s added", ctx.name, ", ".join(sorted(labels)), extra=ctx.extra())
        return existing

    def _update(self, ctx: JobContext, current: dict[str, Any]) -> None:
        spec = current.get("spec") or {}
        desired = self.request_spec(ctx, spec)
        if same_spec(spec, desired):
            return
        meta = current.get("metadata") or {}
        uid, rv = meta.get("uid") or "", meta.get("resourceVersion") or ""
        with self._lock:
            if self._patched.get(uid) == (rv, desired):
                return   # written already; the cache has not caught up yet
        self.client.patch(self.flavor.resource, ctx.name, {"spec": create_merge_patch(spec, desired)},
                          ctx.namespace)
        with self._lock:
            self._patched[uid] = (rv, desired)
        log.info("updated podgroup %s: %s", ctx.name, desired, extra=ctx.extra())

    # --- pods -----------------------------------------------------------------------------------------------------

    def decorate(self, ctx: JobContext, replica_type: str, template: dict[str, Any]) -> None:
        """Make a new pod of ``replica_type`` join the job's group (``template`` is changed in place)."""
        named = ((template.get("spec") or {}).get("schedulerName")) or ""
        if named and named != self.flavor.scheduler_name:
            self._warn_scheduler_name(ctx)
        self.flavor.decorate(template, ctx.name, replica_type)

    def _warn_scheduler_name(self, ctx: JobContext) -> None:
        if not self._warned.first(ctx.uid, ctx.spec.generation):
            return
        log.warning(TEMPLATE_SCHEDULER_NAME_MESSAGE, extra=ctx.extra())
        self.recorder.event(ctx.ref(), WARNING, SET_TEMPLATE_SCHEDULER_NAME, TEMPLATE_SCHEDULER_NAME_MESSAGE)

    # --- release --------------------------------------------------------------------------------------------------

    def release(self, ctx: JobContext, *, finished: bool) -> None:
        """Delete the job's PodGroup if the cache shows one it controls; raise on failure (after a Warning)."""
        current = self.cached(ctx)
        if current is None or not is_controlled_by(current, ctx.uid) or is_deleting(current):
            return
        key = podgroup_key(ctx.key)
        if not self.expectations.satisfied(key):
            return   # deleted (or created) already; the cache has not caught up yet
        self.expectations.raise_expectations(key, dels=1)
        try:
            self.client.delete(self.flavor.resource, ctx.name, ctx.namespace,
                               precondition_uid=(current.get("metadata") or {}).get("uid"))
        except (NotFound, Conflict):
            self.expectations.lower_expectations(key, dels=1)
            return
        except Exception as e:
            self.expectations.lower_expectations(key, dels=1)
            log.warning("deleting podgroup %s failed: %s", ctx.name, e, extra=ctx.extra())
            self.recorder.event(ctx.ref(), WARNING, "FailedDeletePodGroup", f"Error deleting: {describe(e)}")
            raise
        log.info("deleted podgroup %s (the job %s)", ctx.name, "finished" if finished else "is suspended",
                 extra=ctx.extra())
        if finished:
            self.recorder.event(ctx.ref(), NORMAL, JOB_TERMINATED, JOB_TERMINATED_MESSAGE)
        self.recorder.event(ctx.ref(), NORMAL, "SuccessfulDeletePodGroup", f"Deleted PodGroup: {ctx.name}")


class PodGroupHandlers:
    """For the PodGroup informer: a change of a job's group queues the job; its creation and deletion are marked
    observed on the job's expectations. A group is mapped to its job by its controller reference only."""

    def __init__(self, *, kind: str, group: str, resolve_job: ResolveJob, enqueue: Callable[[str], None],
                 expectations: ControllerExpectations) -> None:
        self.owner = JobOwner(kind=kind, group=group, resolve_job=resolve_job)
        self.enqueue = enqueue
        self.expectations = expectations

    def on_add(self, obj: dict[str, Any]) -> None:
        key = self.owner.job_key(obj)
        if key is not None:
            self.expectations.creation_observed(podgroup_key(key))
            self.enqueue(key)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if (old.get("metadata") or {}).get("resourceVersion") == (new.get("metadata") or {}).get("resourceVersion"):
            return
        key = self.owner.job_key(new)
        if key is not None:
            self.enqueue(key)

    def on_delete(self, obj: Any) -> None:
        last = last_known_state(obj)
        key = self.owner.job_key(last)
        if key is not None:
            self.expectations.deletion_observed(podgroup_key(key))
            self.enqueue(key)
        else:
            log.debug("podgroup %s deleted: no job of ours controls it", object_key(last))
