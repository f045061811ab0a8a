"""Gang scheduling's objects and inputs: PodGroups (one per job, named after it, in one of two flavours), what a job
asks of its gang, the PriorityClass values that order it, and the start-time check that the PodGroup API is
served. The flavour is chosen by ``--gang-scheduler-name`` (:func:`flavor_for`):

- ``volcano`` (``scheduling.volcano.sh/v1beta1``): pods are held back until Volcano admits the group
  (``Inqueue``), see :class:`Volcano`;
- any other scheduler name: scheduler-plugins' coscheduling (``scheduling.x-k8s.io/v1alpha1``) with that
  scheduler name, see :class:`SchedulerPlugins`.

A flavour knows its API resource, the PodGroup spec for a job's :class:`GangRequest`, how a pod joins the group
(scheduler name, annotation or label), and whether the group's state holds pod creation back.

Volcano's PodGroup, as training-operator fills it: spec ``minMember``, ``queue`` (the job's, else "default"; an
existing group keeps the queue it has, since Volcano admits groups per queue), ``priorityClassName`` and
``minResources`` (always written, even empty). Pods get ``schedulerName: volcano`` (unless their template names a
scheduler), the annotation ``scheduling.k8s.io/group-name: <job>`` and ``volcano.sh/task-spec: <lowercase replica
type>``.

No pod is created while the group has no phase or is ``Pending``: Volcano has not admitted the gang yet (it moves
it to ``Inqueue`` once the queue has room for ``minResources``), and pods created before would sit unschedulable
holding nothing but quota.

scheduler-plugins' PodGroup (the coscheduling plugin), as training-operator fills it: spec ``minMember``,
``minResources`` (omitted when empty) and ``scheduleTimeoutSeconds`` (the job's, when set). Pods get
``schedulerName: <the --gang-scheduler-name>`` (unless their template names a scheduler) and the label
``scheduling.x-k8s.io/pod-group: <job>``. Pod creation is never held back: the coscheduling plugin itself keeps the
pods of an incomplete group from binding.

Whether the chosen gang scheduler's PodGroup API is served is asked once, when the controller starts. Why: without
the PodGroup CRD every job would fail its first PodGroup write and sit retrying, and the PodGroup informer would
never sync; one clear error naming the CRD to install is better. The question goes to discovery
(``/apis/<group>/<version>``), what every client may read, so it needs no RBAC of its own (training-operator asked
its REST mapper the same).

What a job asks of its gang is ``minMember`` and ``minResources`` of its PodGroup, as training-operator computes
them (``ReconcileJobs`` / ``CalcPGMinResources``). Pure.

- ``minMember``: ``schedulingPolicy.minAvailable`` when set, else every replica of every type.
- ``minResources``: ``schedulingPolicy.minResources`` when set (printed canonically), else the summed resource
  requests of the first ``minMember`` pods, taking replica types by the value of their pod template's priority
  class, highest first (a class that does not exist counts as 0; equal values keep the job's type order, where Go
  left it to map order). A container without ``requests`` counts its ``limits`` (what the API server defaults
  requests to). Init containers and pod overhead are not counted, as upstream.

PriorityClass values are read from an informer's cache (``scheduling.k8s.io/v1``), never from the API per reconcile.
Gang scheduling orders a job's replica types by the value of their pods' priority class to choose which pods
``minResources`` counts. training-operator read them through a lister whose informer it never started, so every
class looked missing (every value 0); here the informer is one of the controller's caches, synced before the first
reconcile.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mxjob_controller.core.framework import SchedulingPolicySpec
from mxjob_controller.kube.quantity import Quantity, QuantityError, canonical, normalized, parse
from mxjob_controller.runtime.client import Client, NotFound, Resource
from mxjob_controller.runtime.informer import SharedInformer

# --- flavor -------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class GangRequest:
    """What a job asks of its gang: computed from its run policy and replicas."""

    min_member: int
    queue: str = ""                        # "" lets the flavour choose (Volcano: "default")
    priority_class: str = ""
    min_resources: Mapping[str, str] = field(default_factory=dict)   # canonical quantities
    schedule_timeout_seconds: int | None = None


class PodGroupFlavor(Protocol):
    name: str               # "volcano", "scheduler-plugins": for logs and messages
    resource: Resource      # the PodGroup API
    crd_name: str           # the CRD to install when the API is missing
    scheduler_name: str     # what pods' ``schedulerName`` becomes

    def spec(self, request: GangRequest, current: Mapping[str, Any] | None) -> dict[str, Any]:
        """The PodGroup spec for ``request``; ``current`` is the existing group's spec (None when creating)."""
        ...

    def decorate(self, template: dict[str, Any], job_name: str, replica_type: str) -> None:
        """Make a pod template join the job's group (in place); a scheduler name already set is kept."""
        ...

    def holds_pods(self, podgroup: Mapping[str, Any] | None) -> bool:
        """Whether no pod may be created yet, given the group as the cache shows it (None: not seen yet)."""
        ...


def _comparable(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """A spec with empty values dropped (the Go types omit them) and quantities in canonical form."""
    out: dict[str, Any] = {}
    for key, value in (spec or {}).items():
        if value in (None, "", 0, {}, []) and value is not False:
            continue
        if key == "minResources" and isinstance(value, Mapping):
            out[key] = {name: normalized(q) for name, q in value.items()}
        else:
            out[key] = value
    return out


def same_spec(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """Whether a PodGroup's spec already is ``desired``, by value: ``"1000m"`` is ``"1"``, an absent field is an
    empty one. Only a real difference is worth an update."""
    return _comparable(current) == _comparable(desired)


# --- volcano -----------------------------------------------------------------------------------------------------

VOLCANO = "volcano"
VOLCANO_PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", kind="PodGroup")
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
DEFAULT_QUEUE = "default"
PHASE_PENDING = "Pending"
PHASE_INQUEUE = "Inqueue"
PHASE_RUNNING = "Running"


class Volcano:
    name = VOLCANO
    resource = VOLCANO_PODGROUPS
    crd_name = f"{VOLCANO_PODGROUPS.plural}.{VOLCANO_PODGROUPS.group}"
    scheduler_name = VOLCANO

    def spec(self, request: GangRequest, current: Mapping[str, Any] | None) -> dict[str, Any]:
        queue = (current or {}).get("queue") or request.queue or DEFAULT_QUEUE
        spec: dict[str, Any] = {"minMember": request.min_member, "queue": queue,
                                "minResources": dict(request.min_resources)}
        if request.priority_class:
            spec["priorityClassName"] = request.priority_class
        return spec

    def decorate(self, template: dict[str, Any], job_name: str, replica_type: str) -> None:
        spec = template.setdefault("spec", {})
        if not spec.get("schedulerName"):
            spec["schedulerName"] = self.scheduler_name
        annotations = (template.setdefault("metadata", {})).get("annotations") or {}
        template["metadata"]["annotations"] = {**annotations, GROUP_NAME_ANNOTATION: job_name,
                                               TASK_SPEC_ANNOTATION: replica_type.lower()}

    def holds_pods(self, podgroup: Mapping[str, Any] | None) -> bool:
        phase = ((podgroup or {}).get("status") or {}).get("phase") or ""
        return podgroup is None or phase in ("", PHASE_PENDING)


# --- scheduler plugins -------------------------------------------------------------------------------------------

COSCHEDULING_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", kind="PodGroup")
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


class SchedulerPlugins:
    name = "scheduler-plugins"
    resource = COSCHEDULING_PODGROUPS
    crd_name = f"{COSCHEDULING_PODGROUPS.plural}.{COSCHEDULING_PODGROUPS.group}"

    def __init__(self, scheduler_name: str) -> None:
        self.scheduler_name = scheduler_name

    def spec(self, request: GangRequest, current: Mapping[str, Any] | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"minMember": request.min_member}
        if request.min_resources:
            spec["minResources"] = dict(request.min_resources)
        if request.schedule_timeout_seconds is not None:
            spec["scheduleTimeoutSeconds"] = request.schedule_timeout_seconds
        return spec

    def decorate(self, template: dict[str, Any], job_name: str, replica_type: str) -> None:
        spec = template.setdefault("spec", {})
        if not spec.get("schedulerName"):
            spec["schedulerName"] = self.scheduler_name
        labels = (template.setdefault("metadata", {})).get("labels") or {}
        template["metadata"]["labels"] = {**labels, POD_GROUP_LABEL: job_name}

    def holds_pods(self, podgroup: Mapping[str, Any] | None) -> bool:
        return False


# --- flavour choice ----------------------------------------------------------------------------------------------

OFF = ("", "none")


def flavor_for(gang_scheduler_name: str | None) -> PodGroupFlavor | None:
    """The flavour a ``--gang-scheduler-name`` selects: None (off) for unset, "" or "none"; Volcano for "volcano"
    (any case, as training-operator compares it); scheduler-plugins with that scheduler name otherwise."""
    name = (gang_scheduler_name or "").strip()
    if name.lower() in OFF:
        return None
    if name.lower() == VOLCANO:
        return Volcano()
    return SchedulerPlugins(name)


# --- api check ---------------------------------------------------------------------------------------------------

INSTALL_HINTS = {
    "volcano": "install Volcano (https://volcano.sh), which ships it",
    "scheduler-plugins": "install scheduler-plugins' coscheduling (https://github.com/kubernetes-sigs/"
                         "scheduler-plugins), which ships it",
}


class PodGroupAPIMissingError(RuntimeError):
    """Gang scheduling is on, but the API server does not serve the chosen scheduler's PodGroups."""


def is_served(client: Client, resource: Resource, timeout: float = 30.0) -> bool:
    """Whether the API server serves ``resource`` (its group version's discovery lists it). Errors other than a
    404 (the API server unreachable...) propagate."""
    try:
        served = client.request("GET", f"/apis/{resource.group}/{resource.version}", timeout=timeout) or {}
    except NotFound:
        return False
    return any(r.get("name") == resource.plural for r in served.get("resources") or () if isinstance(r, dict))


def require_podgroup_api(client: Client, flavor: PodGroupFlavor, timeout: float = 30.0) -> None:
    """Return if ``flavor``'s PodGroups are served; raise :class:`PodGroupAPIMissingError` (saying which CRD to
    install) if not. Other errors (the API server unreachable...) propagate as they are."""
    resource = flavor.resource
    if is_served(client, resource, timeout):
        return
    raise PodGroupAPIMissingError(
        f"gang scheduling with {flavor.name} (scheduler {flavor.scheduler_name!r}) needs the PodGroup CRD "
        f"{flavor.crd_name} ({resource.api_version}), which this cluster does not serve: "
        f"{INSTALL_HINTS.get(flavor.name, 'install it')}, or start the controller without --gang-scheduler-name")


# --- gang request ------------------------------------------------------------------------------------------------

PriorityOf = Callable[[str], int]   # priority class name → its value (0 when unknown)


@dataclass(frozen=True, slots=True)
class ReplicaTemplate:
    """One replica type as the gang sees it: how many pods, and the pod template each is made from."""

    replica_type: str
    replicas: int
    template: Mapping[str, Any]

    @property
    def priority_class(self) -> str:
        return (self.template.get("spec") or {}).get("priorityClassName") or ""

    @property
    def scheduler_name(self) -> str:
        return (self.template.get("spec") or {}).get("schedulerName") or ""


def _container_resources(container: Mapping[str, Any]) -> Mapping[str, Any]:
    resources = container.get("resources") or {}
    requests = resources.get("requests")
    return (requests if requests is not None else resources.get("limits")) or {}


def _add(total: dict[str, Quantity], resources: Mapping[str, Any]) -> None:
    for name, value in resources.items():
        try:
            quantity = parse(value)
        except QuantityError:
            continue   # the API server would have refused the pod; nothing to count
        total[name] = total[name] + quantity if name in total else quantity


def summed_requests(replicas: Sequence[ReplicaTemplate], min_member: int, priority_of: PriorityOf) -> dict[str, str]:
    """The resources of the first ``min_member`` pods, highest priority class first."""
    ordered = sorted(replicas, key=lambda r: -priority_of(r.priority_class))   # stable: ties keep the job's order
    total: dict[str, Quantity] = {}
    counted = 0
    for replica in ordered:
        for _ in range(replica.replicas):
            if counted >= min_member:
                break
            counted += 1
            for container in (replica.template.get("spec") or {}).get("containers") or ():
                _add(total, _container_resources(container))
    return {name: canonical(quantity) for name, quantity in total.items()}


def gang_request(policy: SchedulingPolicySpec | None, replicas: Sequence[ReplicaTemplate],
                 priority_of: PriorityOf) -> GangRequest:
    min_member = sum(r.replicas for r in replicas)
    if policy is not None and policy.min_available is not None:
        min_member = policy.min_available
    if policy is not None and policy.min_resources:
        min_resources = {name: normalized(value) for name, value in policy.min_resources.items()}
    else:
        min_resources = summed_requests(replicas, min_member, priority_of)
    if policy is None:
        return GangRequest(min_member, min_resources=min_resources)
    return GangRequest(min_member, queue=policy.queue, priority_class=policy.priority_class,
                       min_resources=min_resources, schedule_timeout_seconds=policy.schedule_timeout_seconds)


# --- priority classes --------------------------------------------------------------------------------------------

log = logging.getLogger(__name__)

PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass")


class PriorityClasses:
    def __init__(self, informer: SharedInformer) -> None:
        self.informer = informer

    def value(self, name: str) -> int:
        """The class's ``value``; 0 for no class, or one that does not exist (as upstream, with a log line)."""
        if not name:
            return 0
        obj = self.informer.store.get(name)
        value = obj.get("value") if obj is not None else None
        if not isinstance(value, int) or isinstance(value, bool):
            log.info("priority class %s not found: its pods count with priority 0", name)
            return 0
        return value
