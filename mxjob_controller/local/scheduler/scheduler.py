"""The local scheduler: binds waiting pods to the node ``local`` when they fit, as kube-scheduler, Volcano and
scheduler-plugins' coscheduling would on a one-node cluster.

    scheduler = LocalScheduler(client, SchedulerOptions(node_name="local")).start()
    ...
    scheduler.stop(timeout=5)

It talks to the API server over HTTP like any scheduler: informers on pods, the node, both PodGroup APIs and
PriorityClasses feed one thread (``local-scheduler``), which runs a pass when something changed that it acts on:
it reads what the node allocates and what its bound, unfinished pods request, lets ``placement`` decide for the pods
its queue (``queue``: kube-scheduler's activeQ, backoffQ and unschedulablePods) holds ready, then binds
(``pods/binding``), marks each pod that waits ``PodScheduled=False`` reason ``Unschedulable`` with kube's message and
a ``FailedScheduling`` Warning (each only when the message changed: an unchanged condition is not written again, and
a pod retried for the same reason adds no event), and writes the PodGroups' status as their scheduler would. A pod
that did not fit is tried again only on a cluster event that could make it fit (a bound pod deleted or finished,
the node's capacity, labels or taints changed, its PodGroup changed) or 5 minutes on, as kube-scheduler does: a
backlog costs no CPU and no API request while nothing changes.

A gang that waits says why as Volcano does: its PodGroup gets the condition ``Unschedulable`` (reason
``NotEnoughResources``; scheduler-plugins' PodGroups have no conditions) and a Warning event ``Unschedulable``,
naming what it needs beyond what the node allocates when it could never fit (``placement.gang_shortfall``), or the
room it waits for (a Volcano group not admitted yet); once it starts, the condition becomes ``Scheduled``.
Pods of a scheduler it does not act as, or held by ``schedulingGates``, are left alone, as on a cluster without
that scheduler.

Guarantees: a pod it bound counts on the node from the moment the binding succeeds (before the informer shows it),
so two passes never give the same room twice; a bind or a status write that fails is retried after the pod's
backoff (a PodGroup's, after :data:`_PODGROUP_WRITE_RETRY`); a pass looks at the whole cache, so a missed informer
event strands no pod; :meth:`stop` ends its thread and informers within the timeout.

The gang schedulers' PodGroups (pure, on top): their CRDs (applied by the local cluster, so a job with
``schedulingPolicy`` runs end to end on one machine), which group a pod belongs to, a group's view for a pass and
the status each scheduler writes.

- Volcano, ``scheduling.volcano.sh/v1beta1``: pods name ``schedulerName: volcano`` and their group in the annotation
  ``scheduling.k8s.io/group-name``; the status (``phase``, ``running``, ``succeeded``, ``failed``) is part of the
  object (the CRD has no status subresource). A Volcano pod naming no group is a group of its own (Volcano's
  controller makes it a PodGroup of one): it is placed as a single pod.
- scheduler-plugins' coscheduling, ``scheduling.x-k8s.io/v1alpha1``: pods name the scheduler-plugins scheduler and
  their group in the label ``scheduling.x-k8s.io/pod-group``; the status (with ``scheduled``) is a subresource.

The CRDs carry the fields the controller and the schedulers write, and keep unknown ones (the real CRDs define
many more, which a user's manifest may set).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.core.podgroups import (
    COSCHEDULING_PODGROUPS,
    GROUP_NAME_ANNOTATION,
    PHASE_INQUEUE,
    PHASE_PENDING,
    POD_GROUP_LABEL,
    PRIORITY_CLASSES,
    VOLCANO,
    VOLCANO_PODGROUPS,
)
from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.local.scheduler.placement import (
    COSCHEDULING,
    Amounts,
    GroupView,
    WaitingPod,
    amounts,
    enqueue,
    gang_shortfall,
    is_terminal,
    next_phase,
    node_usage,
    placement_view,
    plan,
    pod_requests,
    shortfall_text,
    shortfalls,
)
from mxjob_controller.local.scheduler.queue import IN_FLIGHT, SchedulingQueue
from mxjob_controller.runtime.client import (
    NODES,
    PODS,
    ApiError,
    Client,
    Conflict,
    NotFound,
    Resource,
    TransportError,
)
from mxjob_controller.runtime.events import NODE_EVENTS_AT_STOP, NORMAL, WARNING, EventRecorder, ObjectReference
from mxjob_controller.runtime.informer import SharedInformer, drop_managed_fields

log = logging.getLogger(__name__)

DEFAULT_SCHEDULER = "default-scheduler"
UNSCHEDULABLE = "Unschedulable"
NOT_ENOUGH_RESOURCES = "NotEnoughResources"     # Volcano's reason on a PodGroup's Unschedulable condition
FAILED_SCHEDULING = "FailedScheduling"
_PODGROUP_WRITE_RETRY = 1.0           # seconds before a PodGroup write that failed is tried again
_IDLE_WAIT = 30.0      # the longest the thread sleeps with nothing due (every way of stopping it wakes it)
_INFORMERS_SYNC_TIMEOUT = 30.0
_TIMEOUT = dict(timeout=10, deadline=15)
_BIND_WORKERS = 8       # binding requests of one pass in flight at once


# --- the PodGroup APIs ------------------------------------------------------------------------------------------------
#: The scheduler name scheduler-plugins installs its scheduler under (its Helm chart's default).
SCHEDULER_PLUGINS_NAME = "scheduler-plugins-scheduler"
FLAVOR_RESOURCES: Mapping[str, Resource] = {VOLCANO: VOLCANO_PODGROUPS, COSCHEDULING: COSCHEDULING_PODGROUPS}

_INT32 = {"type": "integer", "format": "int32"}
_QUANTITIES = {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": True}}


def _crd(resource: Resource, spec: dict[str, Any], status: dict[str, Any], status_subresource: bool,
         short_names: list[str]) -> dict[str, Any]:
    def part(properties: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": properties}

    schema = {"type": "object", "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                               "metadata": {"type": "object"}, "spec": part(spec),
                                               "status": part(status)}}
    version: dict[str, Any] = {
        "name": resource.version, "served": True, "storage": True, "schema": {"openAPIV3Schema": schema},
        "additionalPrinterColumns": [
            {"name": "Status", "type": "string", "jsonPath": ".status.phase"},
            {"name": "minMember", "type": "integer", "jsonPath": ".spec.minMember"},
            {"name": "Runnings", "type": "integer", "jsonPath": ".status.running"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}
    if status_subresource:
        version["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{resource.plural}.{resource.group}"},
            "spec": {"group": resource.group, "scope": "Namespaced", "versions": [version],
                     "names": {"kind": "PodGroup", "plural": "podgroups", "singular": "podgroup",
                               "listKind": "PodGroupList", "shortNames": short_names}}}


def podgroup_crds() -> list[dict[str, Any]]:
    """Volcano's and scheduler-plugins' PodGroup CRDs."""
    volcano = _crd(VOLCANO_PODGROUPS,
                   {"minMember": _INT32, "queue": {"type": "string"}, "priorityClassName": {"type": "string"},
                    "minResources": _QUANTITIES,
                    "minTaskMember": {"type": "object", "additionalProperties": _INT32}},
                   {"phase": {"type": "string"}, "running": _INT32, "succeeded": _INT32, "failed": _INT32,
                    "conditions": {"type": "array", "items": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}},
                   status_subresource=False, short_names=["pg", "podgroup-v1beta1"])
    plugins = _crd(COSCHEDULING_PODGROUPS,
                   {"minMember": _INT32, "minResources": _QUANTITIES, "scheduleTimeoutSeconds": _INT32},
                   {"phase": {"type": "string"}, "occupiedBy": {"type": "string"}, "scheduled": _INT32,
                    "running": _INT32, "succeeded": _INT32, "failed": _INT32,
                    "scheduleStartTime": {"type": "string", "format": "date-time"}},
                   status_subresource=True, short_names=["pg", "pgs"])
    return [volcano, plugins]


def group_of(pod: Mapping[str, Any], coscheduling_names: frozenset[str]) -> tuple[str, str] | None:
    """(flavor, namespace/name) of the PodGroup the pod belongs to; None for a pod placed on its own."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    scheduler = spec.get("schedulerName") or ""
    if scheduler == VOLCANO:
        name = (meta.get("annotations") or {}).get(GROUP_NAME_ANNOTATION)
        return (VOLCANO, f"{meta.get('namespace')}/{name}") if name else None
    if scheduler in coscheduling_names:
        name = (meta.get("labels") or {}).get(POD_GROUP_LABEL)
        return (COSCHEDULING, f"{meta.get('namespace')}/{name}") if name else None
    return None


def group_view(flavor: str, podgroup: Mapping[str, Any], priority: int, counts: Mapping[str, int]) -> GroupView:
    """A PodGroup (and the counts of its pods: ``pods``, ``bound``, ``running``, ``succeeded``, ``failed``) as a
    pass sees it."""
    meta, spec = podgroup.get("metadata") or {}, podgroup.get("spec") or {}
    min_member = spec.get("minMember")
    return GroupView(key=f"{meta.get('namespace')}/{meta.get('name')}", flavor=flavor,
                     min_member=min_member if isinstance(min_member, int) and min_member > 0 else 1,
                     min_resources=amounts(spec.get("minResources")),
                     phase=(podgroup.get("status") or {}).get("phase") or "", priority=priority,
                     created=meta.get("creationTimestamp") or "", **counts)


def status_of(group: GroupView, phase: str) -> dict[str, Any]:
    """The status the group's scheduler writes after a pass."""
    status: dict[str, Any] = {"phase": phase, "running": group.running, "succeeded": group.succeeded,
                              "failed": group.failed}
    if group.flavor == COSCHEDULING:
        status["scheduled"] = group.bound + group.succeeded + group.failed
    return status


# --- the scheduler ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class SchedulerOptions:
    node_name: str = "local"
    # scheduler-plugins' scheduler names: pods naming one are placed with coscheduling's gang rules
    coscheduling_names: frozenset[str] = field(default_factory=lambda: frozenset({SCHEDULER_PLUGINS_NAME}))
    # the API groups whose PodGroups are served (their CRDs applied): only those are watched
    podgroup_groups: frozenset[str] = field(default_factory=lambda: frozenset(
        r.group for r in FLAVOR_RESOURCES.values()))
    # the events client's budget: kube-scheduler builds it from its clientConnection (qps 50, burst 100)
    event_qps: float = 50.0
    event_burst: int = 100

    @property
    def served(self) -> frozenset[str]:
        return frozenset({DEFAULT_SCHEDULER, VOLCANO}) | self.coscheduling_names


class LocalScheduler:
    def __init__(self, client: Client, options: SchedulerOptions | None = None,
                 pods: SharedInformer | None = None) -> None:
        """``pods``: an informer of every pod shared with other parts of this process (the embedded cluster's
        kubelet's: one watch and one cache of pods for both); the scheduler starts it if it has not started and
        leaves stopping it to its owner. None: one of its own, caching only what placement reads."""
        self.client = client
        self.options = options = options or SchedulerOptions()
        self.stopping = threading.Event()
        self._wake = threading.Event()
        self._assumed: dict[str, Amounts] = {}             # uid → requests of pods bound but not yet seen bound
        self._said: dict[str, str] = {}                     # uid → the Unschedulable message last written
        # uid → (the spec, its requests): a pass surveys every pod, and working out a request from its quantities
        # was most of the scheduler's CPU in a burst (400 pods: ~1 s, growing with pods times passes).
        self._requests: dict[str, tuple[dict[str, Any], Amounts]] = {}
        self._group_said: dict[str, str] = {}               # PodGroup key → the same, of a gang
        self._recorders: dict[str, EventRecorder] = {}
        self.queue = SchedulingQueue(time.monotonic)
        self.passes = 0                                     # passes run (tests wait on it rather than sleep)
        self._retry_at: float | None = None                 # when failed PodGroup writes are due again
        flavors = {flavor: resource for flavor, resource in FLAVOR_RESOURCES.items()
                   if resource.group in options.podgroup_groups}
        self._own_pods = pods is None                       # a shared one is started here, stopped by its owner
        self._pods = pods if pods is not None else SharedInformer(client, PODS, transform=placement_view)
        self._informers = [self._pods, *(SharedInformer(client, resource, transform=drop_managed_fields)
                                         for resource in (NODES, PRIORITY_CLASSES, *flavors.values()))]
        self._nodes, self._priorities = self._informers[1:3]
        self._podgroups = dict(zip(flavors, self._informers[3:], strict=True))
        self._pod_handler = self._pods.add_handler(self._changed, self._pod_updated, self._pod_deleted)
        self._nodes.add_handler(self._node_changed, self._node_updated, self._node_changed)
        for informer in self._podgroups.values():
            informer.add_handler(self._podgroup_changed, self._podgroup_updated, self._podgroup_changed)
        self._binder: ThreadPoolExecutor | None = None       # made at the first pass that binds several pods
        self._thread = threading.Thread(target=self._run, name="local-scheduler", daemon=True)

    # --- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> LocalScheduler:
        for informer in self._informers:
            informer.start()
        end = time.monotonic() + _INFORMERS_SYNC_TIMEOUT
        if not all(i.wait_for_cache_sync(max(0.1, end - time.monotonic())) for i in self._informers):
            self.stop(5.0)
            raise RuntimeError(f"the local scheduler could not list what it needs within {_INFORMERS_SYNC_TIMEOUT:g}s")
        self._thread.start()
        log.info("local scheduler placing pods of %s on node %s", ", ".join(sorted(self.options.served)),
                 self.options.node_name)
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        end = time.monotonic() + timeout
        self.stopping.set()
        self._wake.set()
        clean = True
        if self._thread.is_alive():
            self._thread.join(max(0.1, end - time.monotonic()))
            clean = not self._thread.is_alive()
        if self._binder is not None:   # idle once the thread has ended (a pass waits for its binds)
            self._binder.shutdown(wait=clean, cancel_futures=True)
        for informer in self._informers:
            if informer is self._pods and not self._own_pods:
                self._pod_handler.remove(max(0.1, end - time.monotonic()))
            else:
                clean = informer.stop(max(0.1, end - time.monotonic())) and clean
        for recorder in self._recorders.values():   # its budget's backlog dropped within a second, as the kubelet's
            recorder.stop(min(NODE_EVENTS_AT_STOP, max(0.1, end - time.monotonic())), left_level=logging.INFO)
            recorder.client.close()
        return clean

    def flush_events(self, timeout: float) -> bool:
        """Wait until every event the scheduler recorded is written (its budget, 50 a second, leaves a burst's
        behind); False if ``timeout`` passed first."""
        end = time.monotonic() + timeout
        return all(recorder.flush(max(0.0, end - time.monotonic())) for recorder in list(self._recorders.values()))

    # --- cluster events (informer threads) ---------------------------------------------------------------------

    def _changed(self, _obj: object) -> None:
        self._wake.set()

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """kube's pod events, as far as they concern a pass: an unbound pod whose spec or metadata changed is
        tried again now (a status write, ours included, does not count); a bound pod that finished frees its room
        (``AssignedPodDelete``: kube takes a terminal pod out of its cache); a gang member's binding or phase moves its
        PodGroup's counts. Nothing else about a bound pod wakes a pass: its binding takes room (no waiting pod fits
        because of it) and a phase short of terminal frees none; each woke a pass over every pod (three per pod of
        a 1,000-replica job, most of the scheduler's CPU)."""
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        if not new_spec.get("nodeName"):
            if _placement_relevant(old) != _placement_relevant(new):
                self.queue.add(_key(new), _group_key(new, self.options.coscheduling_names))
                self._wake.set()
            return
        if is_terminal(new) and not is_terminal(old):
            self.queue.move_all("AssignedPodDelete")
            self._wake.set()
        elif group_of(new, self.options.coscheduling_names) is not None and (
                not old_spec.get("nodeName") or (old.get("status") or {}).get("phase") !=
                (new.get("status") or {}).get("phase")):
            self._wake.set()   # only a gang's counts move: a pod without one frees or takes nothing here

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        if (pod.get("spec") or {}).get("nodeName") and not is_terminal(pod):
            self.queue.move_all("AssignedPodDelete")
        else:
            self.queue.delete(_key(pod))
        self._wake.set()

    def _node_changed(self, _node: dict[str, Any]) -> None:
        self.queue.move_all("NodeAdd")
        self._wake.set()

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """kube's ``NodeUpdate`` for what could make a pod fit: allocatable, labels, taints, unschedulable."""
        if _node_relevant(old) != _node_relevant(new):
            self.queue.move_all("NodeUpdate")
            self._wake.set()

    def _podgroup_changed(self, podgroup: dict[str, Any]) -> None:
        meta = podgroup.get("metadata") or {}
        self.queue.move_all("PodGroupAdd", [f"{meta.get('namespace')}/{meta.get('name')}"])
        self._wake.set()

    def _podgroup_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """A PodGroup's spec, metadata or phase changed (not the counts and conditions this scheduler writes): its
        pods are tried again."""
        if _podgroup_relevant(old) != _podgroup_relevant(new):
            meta = new.get("metadata") or {}
            self.queue.move_all("PodGroupUpdate", [f"{meta.get('namespace')}/{meta.get('name')}"])
            self._wake.set()

    # --- the loop -------------------------------------------------------------------------------------------------

    def _run(self) -> None:
        while not self.stopping.is_set():
            due = [at for at in (self.queue.next_due(), self._retry_at) if at is not None]
            timeout = min([_IDLE_WAIT, *(max(0.0, at - time.monotonic()) for at in due)])
            woken = self._wake.wait(timeout)
            self._wake.clear()
            if self.stopping.is_set():
                return
            retry = self._retry_at is not None and time.monotonic() >= self._retry_at
            if not (woken or retry or self.queue.ready()):
                continue
            self._retry_at = None
            try:
                self.schedule_once()
            except Exception:   # a pass that failed is run again at the next wake or retry; the thread lives on
                log.exception("local scheduler pass failed")
                self._retry_later()

    def _retry_later(self) -> None:
        at = time.monotonic() + _PODGROUP_WRITE_RETRY
        self._retry_at = at if self._retry_at is None else min(self._retry_at, at)

    # --- one pass ---------------------------------------------------------------------------------------------

    def schedule_once(self) -> None:
        node = self._nodes.store.get(self.options.node_name)
        if node is None:
            return
        allocatable = amounts((node.get("status") or {}).get("allocatable"))
        self.passes += 1
        pods = self._pods.store.list()
        used, waiting, counts = self._survey(pods)
        self.queue.sync({pod.key: pod.group for pod in waiting})
        ready = set(self.queue.pop())
        try:
            self._place(ready, pods, used, waiting, counts, allocatable)
        finally:   # a pod taken and not decided on (the pass failed) is retried after its backoff, never stranded
            for key in ready:
                if self.queue.where(key) == IN_FLIGHT:
                    self.queue.error(key)

    def _place(self, ready: set[str], pods: list[dict[str, Any]], used: Amounts, waiting: list[WaitingPod],
               counts: dict[str, dict[str, int]], allocatable: Amounts) -> None:
        groups = self._groups(counts)
        for gone in set(self._group_said) - set(groups):
            del self._group_said[gone]
        admitted = enqueue(list(groups.values()), allocatable, used)
        for key in admitted:
            groups[key] = self._write_group(groups[key], PHASE_INQUEUE)
        self._explain_groups(groups, waiting, allocatable, used, set(admitted))
        decision = plan([pod for pod in waiting if pod.key in ready], groups, allocatable, used)
        by_key = {_key(pod): pod for pod in pods}
        bound: set[str] = set()
        for key, done in zip(decision.bind, self._bind_all([by_key[key] for key in decision.bind]), strict=True):
            if done:
                bound.add(key)
                self.queue.done(key)
            else:
                self.queue.error(key)
        for key, message in decision.waiting.items():
            if self._say_unschedulable(by_key[key], message):
                self.queue.unschedulable(key)
            else:
                self.queue.error(key)
        if bound and groups:   # the groups' counts changed: their phases follow in this pass, not the next
            used, waiting, counts = self._survey(self._pods.store.list())
            groups = self._groups(counts)
        for group in groups.values():
            phase = next_phase(group)
            if phase != group.phase or status_of(group, phase) != self._status(group):
                self._write_group(group, phase)

    def _survey(self, pods: Iterable[dict[str, Any]]) -> tuple[Amounts, list[WaitingPod], dict[str, dict[str, int]]]:
        """What bound pods take, the pods to place, and each PodGroup's pod counts."""
        node_name, served = self.options.node_name, self.options.served
        taken: list[Amounts] = []
        waiting: list[WaitingPod] = []
        counts: dict[str, dict[str, int]] = {}
        seen: set[str] = set()
        for pod in pods:
            meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
            uid, phase = meta.get("uid") or "", (pod.get("status") or {}).get("phase")
            seen.add(uid)
            member = group_of(pod, self.options.coscheduling_names)
            bound = bool(spec.get("nodeName")) or uid in self._assumed
            if spec.get("nodeName"):
                self._assumed.pop(uid, None)
            if member is not None:
                count = counts.setdefault(member[1], dict.fromkeys(("pods", "bound", "running", "succeeded",
                                                                     "failed"), 0))
                count["pods"] += 1
                count["bound"] += bound and not is_terminal(pod)
                count["running"] += phase == "Running"
                count["succeeded"] += phase == "Succeeded"
                count["failed"] += phase == "Failed"
            if bound:
                if not is_terminal(pod) and (spec.get("nodeName") in (None, "", node_name)):
                    taken.append(self._assumed.get(uid) or self._requests_of(uid, spec))
                continue
            if (spec.get("schedulerName") or DEFAULT_SCHEDULER) not in served or spec.get("schedulingGates") \
                    or meta.get("deletionTimestamp") or is_terminal(pod):
                continue
            waiting.append(WaitingPod(key=_key(pod), priority=int(spec.get("priority") or 0),
                                      created=meta.get("creationTimestamp") or "",
                                      requests=self._requests_of(uid, spec), group=member[1] if member else None))
        for gone in set(self._assumed) - seen:
            del self._assumed[gone]
        for gone in set(self._said) - seen:
            del self._said[gone]
        for gone in set(self._requests) - seen:
            self._requests.pop(gone, None)
        return node_usage(taken), waiting, counts

    def _requests_of(self, uid: str, spec: dict[str, Any]) -> Amounts:
        """``pod_requests(spec)``, worked out again only when the pod's spec changed (each watch event hands the
        informer a new object: an equal spec is looked at, not recomputed). Never mutated by its users."""
        known = self._requests.get(uid) if uid else None
        if known is not None and (known[0] is spec or known[0] == spec):
            if known[0] is not spec:
                self._requests[uid] = (spec, known[1])
            return known[1]
        requests = pod_requests(spec)
        if uid:
            self._requests[uid] = (spec, requests)
        return requests

    def _groups(self, counts: dict[str, dict[str, int]]) -> dict[str, GroupView]:
        groups: dict[str, GroupView] = {}
        empty = dict.fromkeys(("pods", "bound", "running", "succeeded", "failed"), 0)
        for flavor, informer in self._podgroups.items():
            for podgroup in informer.store.list():
                meta = podgroup.get("metadata") or {}
                key = f"{meta.get('namespace')}/{meta.get('name')}"
                if meta.get("deletionTimestamp"):
                    continue
                priority = self._priority((podgroup.get("spec") or {}).get("priorityClassName") or "")
                groups[key] = group_view(flavor, podgroup, priority, counts.get(key, empty))
        return groups

    def _priority(self, class_name: str) -> int:
        found = self._priorities.store.get(class_name) if class_name else None
        value = (found or {}).get("value")
        return value if isinstance(value, int) else 0

    def _explain_groups(self, groups: Mapping[str, GroupView], waiting: Iterable[WaitingPod], allocatable: Amounts,
                        used: Amounts, admitted: set[str]) -> None:
        """Say why each gang that has not started waits, as its scheduler says it: a gang that could not fit the
        empty node (``gang_shortfall``), and a Volcano group not admitted for want of room now."""
        members: dict[str, list[WaitingPod]] = {}
        for pod in sorted(waiting, key=lambda p: p.key):
            if pod.group is not None:
                members.setdefault(pod.group, []).append(pod)
        for key, group in groups.items():
            if group.bound or group.succeeded or group.failed or key in admitted:
                if key in self._group_said:
                    self._group_ready(group)
                continue
            pods = members.get(key, [])
            short = gang_shortfall(group.min_member, group.min_resources, [p.requests for p in pods], allocatable)
            waiting_for = ""
            if short:
                waiting_for = (f"{group.min_member}/{group.min_member} tasks in gang unschedulable: the gang can "
                               f"never fit the node {self.options.node_name}: it needs "
                               f"{shortfall_text(short, allocatable)} at once")
            elif group.flavor == VOLCANO and group.phase in ("", PHASE_PENDING):
                free = shortfalls(group.min_resources, allocatable, used, pods=0)
                if free:
                    waiting_for = (f"{group.min_member}/{group.min_member} tasks in gang unschedulable: "
                                   f"resource in cluster is overused: {', '.join(free)} for its minResources")
            if waiting_for:
                self._group_unschedulable(group, waiting_for)

    def _group_unschedulable(self, group: GroupView, message: str) -> None:
        """Volcano's record of a gang that cannot be scheduled: the PodGroup's condition ``Unschedulable`` (reason
        ``NotEnoughResources``; scheduler-plugins' PodGroups have no conditions) and a Warning event
        ``Unschedulable`` on it, once per new message."""
        if self._group_said.get(group.key) == message:
            return
        if group.flavor == VOLCANO and not self._set_conditions(group, [{
                "type": UNSCHEDULABLE, "status": "True", "transitionID": "", "lastTransitionTime": now_rfc3339(),
                "reason": NOT_ENOUGH_RESOURCES, "message": message}]):
            return
        self._group_said[group.key] = message
        self._group_event(group, WARNING, UNSCHEDULABLE, message)

    def _group_ready(self, group: GroupView) -> None:
        """The gang started after it was said to wait: its condition says so now (Volcano's ``Scheduled``)."""
        if group.flavor == VOLCANO and not self._set_conditions(group, [{
                "type": "Scheduled", "status": "True", "transitionID": "", "lastTransitionTime": now_rfc3339(),
                "reason": "tasks in gang are ready to be scheduled", "message": ""}]):
            return
        self._group_said.pop(group.key, None)
        self._group_event(group, NORMAL, "Scheduled", "pod group is ready")

    def _set_conditions(self, group: GroupView, conditions: list[dict[str, Any]]) -> bool:
        namespace, _, name = group.key.partition("/")
        try:
            self.client.patch(FLAVOR_RESOURCES[group.flavor], name, {"status": {"conditions": conditions}},
                              namespace, **_TIMEOUT)
        except NotFound:
            return False
        except (ApiError, TransportError) as e:
            log.warning("writing the conditions of podgroup %s failed: %s", group.key, e)
            self._retry_later()
            return False
        return True

    def _group_event(self, group: GroupView, kind: str, reason: str, message: str) -> None:
        podgroup = self._podgroups[group.flavor].store.get(group.key)
        if podgroup is None:
            return
        resource = FLAVOR_RESOURCES[group.flavor]
        component = VOLCANO if group.flavor == VOLCANO else SCHEDULER_PLUGINS_NAME
        self._recorder_for(component).event(ObjectReference.of(podgroup, resource.api_version, "PodGroup"), kind,
                                            reason, message)

    # --- writes -----------------------------------------------------------------------------------------------

    def _bind_all(self, pods: list[dict[str, Any]]) -> list[bool]:
        """Bind every pod of a pass's decision, whether each succeeded. The ``pods/binding`` requests go out
        together (kube-scheduler's binding cycle runs apart from its scheduling cycle, a goroutine per pod), on at
        most :data:`_BIND_WORKERS` threads: one after another, a burst of pods would wait out a round trip each.
        What a success changes (the pod assumed on the node, its event) is done here, on the scheduler's thread."""
        if len(pods) > 1:
            if self._binder is None:
                self._binder = ThreadPoolExecutor(_BIND_WORKERS, thread_name_prefix="local-scheduler-bind")
            posted = list(self._binder.map(self._post_binding, pods))
        else:
            posted = [self._post_binding(pod) for pod in pods]
        for pod, done in zip(pods, posted, strict=True):
            if done:
                self._bound(pod)
        return posted

    def _post_binding(self, pod: dict[str, Any]) -> bool:
        meta = pod["metadata"]
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta["name"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": self.options.node_name}}
        try:
            self.client.request("POST", PODS.path(meta["namespace"], meta["name"], "binding"), body=body, **_TIMEOUT)
        except (Conflict, NotFound):
            return False    # bound meanwhile, gated, being deleted, or gone: the informer will say
        except (ApiError, TransportError) as e:
            log.warning("binding pod %s/%s to node %s failed (%s): retrying after its backoff", meta["namespace"],
                        meta["name"], self.options.node_name, e)
            return False
        return True

    def _bound(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self._assumed[meta["uid"]] = self._requests_of(meta["uid"], pod.get("spec") or {})
        self._said.pop(meta["uid"], None)
        self._recorder(pod).event(ObjectReference.of(pod, "v1", "Pod"), NORMAL, "Scheduled",
                                  f"Successfully assigned {meta['namespace']}/{meta['name']} to "
                                  f"{self.options.node_name}")

    def _say_unschedulable(self, pod: dict[str, Any], message: str) -> bool:
        """kube-scheduler's record of a failed attempt: the pod's condition, and a Warning event, each time the
        reason changes (not every attempt: a sweep's queue would flood the API; kube skips an unchanged condition and
        its event correlator folds repeated events). False when the write failed (the pod is retried after its
        backoff)."""
        meta = pod["metadata"]
        if self._said.get(meta["uid"]) == message:
            return True
        current = next((c for c in (pod.get("status") or {}).get("conditions") or []
                        if c.get("type") == "PodScheduled"), {})
        since = current.get("lastTransitionTime") if current.get("status") == "False" else None
        condition = {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                     "lastTransitionTime": since or now_rfc3339(), "reason": UNSCHEDULABLE, "message": message}
        if not (current.get("reason") == UNSCHEDULABLE and current.get("message") == message):
            try:
                self.client.patch(PODS, meta["name"], {"status": {"conditions": [condition]}}, meta["namespace"],
                                  patch_type="strategic", subresource="status", **_TIMEOUT)
            except (Conflict, NotFound):
                return True     # bound, changed or gone meanwhile: the informer's event says what next
            except (ApiError, TransportError) as e:
                log.warning("recording why pod %s/%s waits failed: %s", meta["namespace"], meta["name"], e)
                return False
        self._said[meta["uid"]] = message
        self._recorder(pod).event(ObjectReference.of(pod, "v1", "Pod"), WARNING, FAILED_SCHEDULING, message)
        return True

    def _recorder(self, pod: dict[str, Any]) -> EventRecorder:
        """Events come from the scheduler the pod names (``default-scheduler``, ``volcano``…), as on a cluster."""
        return self._recorder_for((pod.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER)

    def _recorder_for(self, component: str) -> EventRecorder:
        recorder = self._recorders.get(component)
        if recorder is None:
            events_client = self.client.sibling(None, qps=self.options.event_qps, burst=self.options.event_burst)
            recorder = self._recorders[component] = EventRecorder(events_client, component=component)
            recorder.start()
        return recorder

    def _status(self, group: GroupView) -> dict[str, Any]:
        """The group's status as the cache shows it (conditions aside: only Volcano writes them)."""
        current = self._podgroups[group.flavor].store.get(group.key) or {}
        return {k: v for k, v in (current.get("status") or {}).items() if k != "conditions"}

    def _write_group(self, group: GroupView, phase: str) -> GroupView:
        namespace, _, name = group.key.partition("/")
        resource = FLAVOR_RESOURCES[group.flavor]
        try:
            self.client.patch(resource, name, {"status": status_of(group, phase)}, namespace,
                              subresource="status" if group.flavor == COSCHEDULING else None, **_TIMEOUT)
        except NotFound:
            pass
        except (ApiError, TransportError) as e:
            log.warning("writing the status of podgroup %s failed: %s", group.key, e)
            self._retry_later()
            return group
        log.info("podgroup %s (%s): %s", group.key, group.flavor, phase)
        return dataclasses.replace(group, phase=phase)


def _key(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"


def _group_key(pod: Mapping[str, Any], coscheduling_names: frozenset[str]) -> str | None:
    member = group_of(pod, coscheduling_names)
    return member[1] if member else None


def _placement_relevant(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """What of an unbound pod a placement reads: an update that leaves it alone (a status write) is no reason to
    try the pod again (kube's ``isPodUpdated`` ignores status and resourceVersion too)."""
    meta = pod.get("metadata") or {}
    return pod.get("spec"), meta.get("labels"), meta.get("annotations"), meta.get("deletionTimestamp")


def _node_relevant(node: Mapping[str, Any]) -> tuple[Any, ...]:
    spec, status = node.get("spec") or {}, node.get("status") or {}
    return (status.get("allocatable"), (node.get("metadata") or {}).get("labels"), spec.get("taints"),
            spec.get("unschedulable"))


def _podgroup_relevant(podgroup: Mapping[str, Any]) -> tuple[Any, ...]:
    meta = podgroup.get("metadata") or {}
    return (podgroup.get("spec"), meta.get("labels"), meta.get("annotations"), meta.get("deletionTimestamp"),
            (podgroup.get("status") or {}).get("phase"))
