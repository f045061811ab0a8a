"""One framework's job controller: informers, event handlers, work queue, workers and reconciler, assembled.

    controller = JobController(client, ControllerOptions(namespaces=("team-a",), threadiness=4,
                                                         registry=registry), framework).start()
    ...
    controller.stop(deadline=30)

Everything framework-specific comes from the :class:`~mxjob_controller.core.framework.Framework`: the job resource,
and the operator name, which names the controller (work queue, workers, metrics' ``controller`` label) and labels
its children, as training-operator names each framework's controller (``mxjob-controller``, ``tfjob-controller``).

What it watches (per namespace, or cluster-wide when ``namespaces`` is None):
- the framework's jobs, as their storage version;
- pods and services labelled ``training.kubeflow.org/operator-name=<operator name>`` (ours), and, for a framework
  with a legacy ``group-name`` label value, those carrying only the legacy labels (the old operator's, to adopt).
  The selectors go to the API server, so nobody else's pods (another framework's included) are transferred or
  cached; both caches are indexed by controller UID;
- with gang scheduling (``gang_scheduler_name``): the chosen scheduler's PodGroups carrying our operator label, and
  PriorityClasses (cluster-wide; their values order replicas for ``minResources``). :meth:`JobController.start`
  first checks that the PodGroup API is served (:class:`PodGroupAPIMissingError` names the CRD to install).

:meth:`JobController.start` returns once every cache has its initial list and the workers run (a reconcile
before that would see children missing and try to create them again); a failed or cancelled start stops what it
started before it raises. :meth:`JobController.stop` stops taking work, lets in-flight reconciles finish, writes
queued events and stops every thread, all within one deadline.

Events are written through a client of their own (``event_qps`` / ``event_burst``, a sibling of the main client), so
a job's events are not held up by pod creations, nor pod creations by events (see ``runtime.events``).

Several frameworks in one process (``run --frameworks``) are several controllers on one client and one metrics
registry. Each has its own work queue and workers, as training-operator has one controller-runtime controller per
framework: a job's key (``namespace/name``) may name a job of each kind at once, so one shared queue would need
framework-qualified keys; separate queues keep the work-queue and controller metrics per framework
(``name``/``controller`` labels, as dashboards built for training-operator expect) and let a burst of one kind's
jobs not delay the other's. The job counters are shared families told apart by their ``framework`` label
(:class:`~mxjob_controller.core.metrics.JobMetrics`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from mxjob_controller.core.child_writes import POD, SERVICE, ChildKind, WritePool
from mxjob_controller.core.framework import Framework
from mxjob_controller.core.gang import GangScheduling, PodGroupHandlers
from mxjob_controller.core.handlers import (
    ChildHandlers,
    JobCaches,
    JobHandlers,
    job_cache_view,
    pod_cache_view,
    service_cache_view,
)
from mxjob_controller.core.job_vocabulary import legacy_selector, owned_selector
from mxjob_controller.core.metrics import JobMetrics, JobStateCollector
from mxjob_controller.core.podgroups import (
    PRIORITY_CLASSES,
    PodGroupAPIMissingError,
    PodGroupFlavor,
    PriorityClasses,
    flavor_for,
    require_podgroup_api,
)
from mxjob_controller.core.reconciler import JobReconciler, ReconcilerOptions
from mxjob_controller.kube.schema import definition_schema
from mxjob_controller.kube.schema.rules.pods import POD_TEMPLATE_SPEC
from mxjob_controller.runtime.cache_keys import CONTROLLER_UID_INDEX, controller_uid_index
from mxjob_controller.runtime.client import Client
from mxjob_controller.runtime.clock import Clock
from mxjob_controller.runtime.controller import Controller
from mxjob_controller.runtime.events import (
    DEFAULT_EVENT_BURST,
    DEFAULT_EVENT_QPS,
    DEFAULT_EVENT_WRITERS,
    EventRecorder,
    ObjectReference,
)
from mxjob_controller.runtime.expectations import ControllerExpectations
from mxjob_controller.runtime.informer import SharedInformer, drop_managed_fields
from mxjob_controller.runtime.informer_factory import SharedInformerFactory
from mxjob_controller.runtime.refusal_events import RefusalEvents
from mxjob_controller.runtime.registry import families_for
from mxjob_controller.runtime.workqueue import RateLimitingQueue

log = logging.getLogger(__name__)

FAILED_START_STOP = 10.0   # seconds a failed or cancelled start may take to stop what it started
_SYNC_SLICE = 0.1          # how often a start waiting for its caches looks at its cancel event
# Children are cached as only the fields the reconciler reads (core/handlers.py says which, and why).
_CACHE_VIEWS = {POD: pod_cache_view, SERVICE: service_cache_view}
_RECONCILER = ReconcilerOptions()   # the defaults the reconciler's options are given here


__all__ = ["CacheSyncTimeoutError", "ControllerOptions", "JobController", "PodGroupAPIMissingError",
           "StartCancelledError"]


class CacheSyncTimeoutError(RuntimeError):
    """The caches did not get their initial lists in time (is the job's CRD installed? RBAC?)."""


class StartCancelledError(RuntimeError):
    """A stop was requested while the controller was starting: it stopped again, no worker ran."""


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    namespaces: Sequence[str] | None = None      # None: every namespace
    threadiness: int = 1                         # reconcile workers
    resync_period: float = 10 * 3600.0           # every job reconciled at least this often (controller-runtime's)
    registry: CollectorRegistry | None = None    # job, queue and controller metrics; a private one when None
    clock: Clock | None = None                   # the work queue's and the expectations' time
    wall: Callable[[], float] = time.time        # the time written into status and events
    # Bound on concurrent child writes, all of this kind's jobs. A write mostly waits on the API (the GIL is free
    # meanwhile), so a large job's creates are latency-bound below this; a client budget, if any, sets the pace.
    write_threads: int = 16
    blocked_retry: float = 30.0                  # re-check of a child name held by an object the job does not control
    cache_sync_timeout: float = 60.0             # longest wait in start() for the initial lists
    trace_path: str | os.PathLike[str] | None = None   # a JSON line per reconcile (runtime.reconcile_trace)
    gang_scheduler_name: str | None = None       # None, "" or "none": off; "volcano"; else scheduler-plugins' name
    event_qps: float = DEFAULT_EVENT_QPS         # this controller's events client: its budget (negative: none)...
    event_burst: int = DEFAULT_EVENT_BURST       # ... and burst
    event_writers: int = DEFAULT_EVENT_WRITERS   # threads writing this controller's events, each for some jobs
    slice_writes: int = _RECONCILER.slice_writes       # one reconcile's child writes (core/reconciler.py)...
    slice_batch: int = _RECONCILER.slice_batch         # ... in slow-start batches of at most this many ...
    slice_seconds: float = _RECONCILER.slice_seconds   # ... none started after this many seconds


class JobController:
    def __init__(self, client: Client, options: ControllerOptions | None, framework: Framework) -> None:
        self.options = options = options or ControllerOptions()
        self.framework = framework
        self.name = name = framework.operator_name
        self.registry = options.registry or CollectorRegistry(auto_describe=True)
        self.expectations = ControllerExpectations(clock=options.clock)
        self.event_client = client.sibling("events", qps=options.event_qps, burst=options.event_burst)
        self.recorder = EventRecorder(self.event_client, framework.operator_name, wall=options.wall,
                                      writers=options.event_writers)
        self.metrics = JobMetrics(self.registry, framework.framework_name)
        self.pool = WritePool(f"{name}-writes", options.write_threads)
        # The informers' lists and watches draw on a bucket of their own, as kube-controller-manager's shared
        # informers have a client of their own: a relist storm (compactions, an API server restart) must not hold
        # up a job's writes, nor the writes a cache's refill. The same User-Agent: the same program to the server.
        self.cache_client = client.sibling(None)
        self.factory = SharedInformerFactory(self.cache_client, transform=drop_managed_fields)
        # Children caches per kind: ours (operator-name label) and the old operator's (legacy labels only).
        self._owned: dict[ChildKind, list[SharedInformer]] = {POD: [], SERVICE: []}
        self._legacy: dict[ChildKind, list[SharedInformer]] = {POD: [], SERVICE: []}
        self.caches = self._informers(options.namespaces)
        families_for(JobStateCollector, self.registry).add(framework.framework_name, self._cached_jobs)
        self.client = client
        reconciler_class = framework.reconciler_class or JobReconciler
        self.flavor: PodGroupFlavor | None = flavor_for(options.gang_scheduler_name) \
            if reconciler_class.uses_gang_scheduler else None
        self.gang = self._gang(self.flavor, options.namespaces) if self.flavor is not None else None
        self.reconciler = reconciler_class(framework, client, self.caches, self.expectations, self.recorder,
                                           self.metrics, self.pool, ReconcilerOptions(
                                               blocked_retry=options.blocked_retry,
                                               slice_writes=options.slice_writes, slice_batch=options.slice_batch,
                                               slice_seconds=options.slice_seconds),
                                           wall=options.wall, gang=self.gang,
                                           contended=lambda: len(self.controller.queue) > 0)
        # A reconcile refused by RBAC (403) also leaves a Warning event on its job, not only a log line.
        self.controller = Controller(name, self.reconciler, workers=options.threadiness,
                                     registry=self.registry, clock=options.clock, trace_path=options.trace_path,
                                     on_error=RefusalEvents(self.recorder, self._job_reference))
        self._register_handlers()

    def _job_reference(self, key: object) -> ObjectReference | None:
        job = self.caches.job(str(key))
        resource = self.framework.resource
        return ObjectReference.of(job, resource.api_version, resource.kind) if job is not None else None

    def _cached_jobs(self) -> list[dict[str, Any]]:
        return [job for informer in self.caches.jobs for job in informer.store.list()]

    @property
    def queue(self) -> RateLimitingQueue:
        return self.controller.queue

    # --- assembly -------------------------------------------------------------------------------------------------

    def _informers(self, namespaces: Sequence[str] | None) -> JobCaches:
        scopes: Sequence[str | None] = tuple(namespaces) if namespaces else (None,)
        indexers = {CONTROLLER_UID_INDEX: controller_uid_index}
        jobs: list[SharedInformer] = []
        for namespace in scopes:
            jobs.append(self.factory.informer(self.framework.resource, namespace=namespace,
                                              resync_period=self.options.resync_period, transform=job_cache_view))
            for kind in (POD, SERVICE):
                self._owned[kind].append(self.factory.informer(
                    kind.resource, namespace=namespace, label_selector=owned_selector(self.framework.operator_name),
                    resync_period=0, indexers=indexers, transform=_CACHE_VIEWS[kind]))
                if not self.framework.group_label:
                    continue   # no legacy labels: nothing of an older operator to adopt
                self._legacy[kind].append(self.factory.informer(
                    kind.resource, namespace=namespace, label_selector=legacy_selector(self.framework.group_label),
                    resync_period=0, indexers=indexers, transform=_CACHE_VIEWS[kind]))
        return JobCaches(jobs, self._owned[POD] + self._legacy[POD], self._owned[SERVICE] + self._legacy[SERVICE])

    def _gang(self, flavor: PodGroupFlavor, namespaces: Sequence[str] | None) -> GangScheduling:
        scopes: Sequence[str | None] = tuple(namespaces) if namespaces else (None,)
        podgroups = [self.factory.informer(flavor.resource, namespace=namespace, resync_period=0,
                                           label_selector=owned_selector(self.framework.operator_name))
                     for namespace in scopes]
        priorities = PriorityClasses(self.factory.informer(PRIORITY_CLASSES, resync_period=0))
        return GangScheduling(flavor, self.framework, self.client, podgroups, priorities, self.recorder,
                              self.expectations)

    def _register_handlers(self) -> None:
        # Inline: these handlers only queue keys and mark expectations, never block, so they run on the informers'
        # own threads (a thread per handler made ingest 40% slower: runtime/informer_listener.py).
        enqueue = self.controller.queue.add
        job_handlers = JobHandlers(enqueue, self.controller.queue.add_first, self.reconciler.finished.settled.holds,
                                   self.reconciler.cancellations.cancel)
        for informer in self.caches.jobs:
            informer.add_handler(job_handlers.on_add, job_handlers.on_update, job_handlers.on_delete, inline=True)
        for kind in (POD, SERVICE):
            for legacy, informers in ((False, self._owned[kind]), (True, self._legacy[kind])):
                handlers = ChildHandlers(
                    kind=self.framework.resource.kind, group=self.framework.resource.group,
                    resolve_job=self.caches.job, enqueue=enqueue,
                    expectations=None if legacy else self.expectations, expectation_key=kind.expectation_key)
                for informer in informers:
                    informer.add_handler(handlers.on_add, handlers.on_update, handlers.on_delete, inline=True)
        if self.gang is not None:
            podgroup_handlers = PodGroupHandlers(kind=self.framework.resource.kind, group=self.framework.resource.group,
                                                 resolve_job=self.caches.job, enqueue=enqueue,
                                                 expectations=self.expectations)
            for informer in self.gang.podgroups:
                informer.add_handler(podgroup_handlers.on_add, podgroup_handlers.on_update,
                                     podgroup_handlers.on_delete, inline=True)

    # --- lifecycle ------------------------------------------------------------------------------------------------

    def start(self, cancel: threading.Event | None = None) -> JobController:
        """Start the informers, wait for their initial lists, then the workers.

        Raises (after stopping everything it started, within :data:`FAILED_START_STOP` seconds):
        :class:`PodGroupAPIMissingError` first, with gang scheduling, if the cluster does not serve the scheduler's
        PodGroups; :class:`CacheSyncTimeoutError` if the caches do not sync within ``cache_sync_timeout``;
        :class:`StartCancelledError` within :data:`_SYNC_SLICE` seconds of ``cancel`` being set while it waits (a
        stop requested during start-up: no worker is started)."""
        cancel = cancel if cancel is not None else threading.Event()
        try:
            if self.flavor is not None:
                require_podgroup_api(self.client, self.flavor, timeout=self.options.cache_sync_timeout)
            self.recorder.start()
            # The write pool's threads start with its first write (WritePool.submit), not here: a controller of a
            # kind nobody writes (the TFJob and GenericJob controllers of an MXJob's `local run`) starts none, and
            # a start is not a sixteen thread hand-offs longer (issue 48: start fast).
            self.factory.start()
            # Compile the pod template schema now, while the caches fill: else the first job's reconcile pays for
            # it, and every job queued behind it.
            definition_schema(POD_TEMPLATE_SPEC)
            if not self._wait_for_caches(cancel):
                unsynced = [i.name for i in self.factory.informers() if i.started and not i.has_synced()]
                raise CacheSyncTimeoutError(f"caches not synced within {self.options.cache_sync_timeout:g}s: "
                                            f"{', '.join(unsynced)}")
            if cancel.is_set():
                raise StartCancelledError("stop requested while the controller was starting")
            self.controller.start()
        except BaseException:
            self.stop(FAILED_START_STOP)
            raise
        log.info("%s controller started: %d workers, namespaces %s", self.framework.resource.kind,
                 self.options.threadiness,
                 ", ".join(self.options.namespaces) if self.options.namespaces else "all")
        return self

    def _wait_for_caches(self, cancel: threading.Event) -> bool:
        """Wait for every cache's initial list in slices of :data:`_SYNC_SLICE` seconds, so that ``cancel`` ends
        the wait at once (StartCancelledError); False (the laggards logged) once ``cache_sync_timeout`` passed."""
        deadline = time.monotonic() + self.options.cache_sync_timeout
        for informer in self.factory.informers():
            while informer.started and not informer.has_synced():
                if cancel.is_set():
                    raise StartCancelledError("stop requested while the caches were syncing")
                left = deadline - time.monotonic()
                if left <= 0:
                    return self.factory.wait_for_cache_sync(0.0)
                informer.wait_for_cache_sync(min(_SYNC_SLICE, left))
        return True

    def stop(self, deadline: float = 30.0) -> bool:
        """Stop within ``deadline`` seconds; False if some thread or queued event outlived it."""
        end = time.monotonic() + deadline

        def left() -> float:
            return max(0.0, end - time.monotonic())

        clean = self.controller.shutdown_with_drain(left())
        clean = self.pool.stop(left()) and clean
        clean = self.recorder.stop(left()) and clean
        self.event_client.close()
        clean = self.factory.stop(left()) and clean
        self.cache_client.close()
        log.info("%s controller stopped%s", self.framework.resource.kind,
                 "" if clean else " (some threads outlived the deadline)")
        return clean
