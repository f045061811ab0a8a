"""The local scheduler's decisions, pure: whether a pod fits the node, and which waiting pods bind in a pass
(``scheduler.py`` gathers the views and acts on the result).

**Fit**: kube-scheduler's NodeResourcesFit filter, and its words when a pod does not fit.

A pod's request is kube's effective request (``resourcehelper.PodRequests``): per resource, the larger of the sum
of its app containers (plus restartable "sidecar" init containers, which keep running) and the largest init
container (plus the sidecars started before it), then the pod's ``overhead``. Every resource counts, extended
ones (``nvidia.com/gpu``, ``example.com/foo``) included, and each pod takes one of the node's ``pods``.

A container that sets no ``cpu`` (or no ``memory``) request counts as :data:`DEFAULT_REQUESTS` of it
(kube-scheduler's non-zero defaults, which it uses for scoring only): on one machine a sweep of pods written
without requests must still queue rather than start all at once. Pods that set requests are fitted by them exactly.

The node is full for a pod when, for a resource the pod requests, what the node allocates minus what its bound,
not finished pods request is less than the request; kube's message then lists every reason, sorted
(``0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.``).

**A pass** tries pods highest ``spec.priority`` first (admission resolves it from ``priorityClassName``), then
oldest, then by name, as kube-scheduler's active queue sorts them (PrioritySort). A pod that does not fit does not
hold back smaller ones behind it (kube does the same; without preemption a higher-priority pod waits for room).

Gangs (a pod naming Volcano or scheduler-plugins' coscheduling, in a PodGroup): none of a group's pods binds until
``minMember`` of them (those already bound count) fit together, and ``minResources`` with them while none is bound;
then they bind in the same pass, so a partial gang never runs. Once ``minMember`` are bound, the group's other pods
bind one by one as they fit, as both schedulers do. Gang pods whose PodGroup is not known yet wait.

PodGroup phases, as the schedulers move them:

- Volcano (``scheduling.volcano.sh``): ``Pending`` until the enqueue action admits the group — its
  ``minResources`` fit in what the node has free beyond groups already admitted and not yet running — then
  ``Inqueue`` (the job controller creates pods only from here), ``Running`` once ``minMember`` pods are bound or
  succeeded, ``Completed`` when every pod of the group has ended and ``minMember`` succeeded.
- coscheduling (``scheduling.x-k8s.io``, its PodGroup controller): ``Pending`` until ``minMember`` pods exist, then
  ``Scheduling``, ``Scheduled`` once ``minMember`` are bound, ``Running`` once ``minMember`` run or succeeded,
  ``Failed`` when one failed and ``minMember`` have started, ``Finished`` when ``minMember`` succeeded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from mxjob_controller.core.podgroups import PHASE_INQUEUE, PHASE_PENDING, PHASE_RUNNING, VOLCANO
from mxjob_controller.kube.quantity import BINARY_SI, DECIMAL_SI, Quantity, QuantityError, canonical, parse

Amounts = dict[str, Fraction]

#: What a container without a cpu or memory request counts as (kube-scheduler's DefaultMilliCPURequest and
#: DefaultMemoryRequest).
DEFAULT_REQUESTS: Mapping[str, Fraction] = {"cpu": Fraction(1, 10), "memory": Fraction(200 * 1024 * 1024)}
PODS = "pods"
TERMINAL_PHASES = ("Succeeded", "Failed")


def amounts(resources: Mapping[str, Any] | None) -> Amounts:
    """Quantities by resource name as exact numbers; a value that is not a quantity counts as 0 (the API server
    refuses such pods and nodes)."""
    out: Amounts = {}
    for name, value in (resources or {}).items():
        try:
            out[name] = parse(value).value
        except QuantityError:
            continue
    return out


def add(total: Amounts, more: Mapping[str, Fraction]) -> Amounts:
    """``total`` plus ``more``, a new mapping."""
    out = dict(total)
    for name, value in more.items():
        out[name] = out.get(name, Fraction(0)) + value
    return out


def _container_requests(container: Mapping[str, Any]) -> Amounts:
    requests = amounts((container.get("resources") or {}).get("requests"))
    for name, default in DEFAULT_REQUESTS.items():
        if name not in requests:
            requests[name] = default
    return requests


def larger(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> Amounts:
    return {name: max(a.get(name, Fraction(0)), b.get(name, Fraction(0))) for name in {*a, *b}}


def pod_requests(spec: Mapping[str, Any]) -> Amounts:
    """The pod's effective request (see the module), defaults included; ``pods`` is not in it."""
    app: Amounts = {}
    for container in spec.get("containers") or ():
        app = add(app, _container_requests(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.get("initContainers") or ():
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            sidecars = add(sidecars, requests)
            init_peak = larger(init_peak, sidecars)
        else:
            init_peak = larger(init_peak, add(requests, sidecars))
    total = larger(add(app, sidecars), init_peak)
    return add(total, amounts(spec.get("overhead")))


# What placement reads of a container (pod_requests); the rest (env, command, probes, mounts) can be large: a
# distributed job's pods each carry its whole cluster spec in an env var.
PLACEMENT_CONTAINER_FIELDS = ("name", "resources", "restartPolicy")


def placement_view(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the scheduler's cache keeps it (an informer transform, applied to the pod it was handed): without
    ``metadata.managedFields`` and with only :data:`PLACEMENT_CONTAINER_FIELDS` of each container, so the cache
    does not hold a second copy of every pod's environment beside the kubelet's in the same process."""
    meta = pod.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    spec = pod.get("spec")
    if isinstance(spec, dict):
        for kind in ("containers", "initContainers"):
            containers = spec.get(kind)
            if isinstance(containers, list):
                spec[kind] = [{k: c[k] for k in PLACEMENT_CONTAINER_FIELDS if k in c} if isinstance(c, dict) else c
                              for c in containers]
    return pod


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


_NANO = 10 ** 9


def _total(values: list[Fraction]) -> Fraction:
    """The sum of ``values``, exactly: as whole nano units when each is one (every parsed quantity is rounded up to
    them), which spares a ``Fraction`` addition per value (a pass sums every bound pod's requests: with 400 pods
    these additions were a third of the scheduler's CPU); else as fractions."""
    nanos = 0
    for value in values:
        denominator = value.denominator
        if _NANO % denominator:
            return sum(values, Fraction(0))
        nanos += value.numerator * (_NANO // denominator)
    return Fraction(nanos, _NANO)


def node_usage(requests: Iterable[Mapping[str, Fraction]]) -> Amounts:
    """What pods bound to the node (and not finished) take of it, ``pods`` included."""
    used: Amounts = {PODS: Fraction(0)}
    by_name: dict[str, list[Fraction]] = {}
    count = 0
    for one in requests:
        count += 1
        for name, value in one.items():
            by_name.setdefault(name, []).append(value)
    for name, values in by_name.items():
        used[name] = used.get(name, Fraction(0)) + _total(values)
    used[PODS] += count
    return used


def shortfalls(requests: Mapping[str, Fraction], allocatable: Mapping[str, Fraction], used: Mapping[str, Fraction],
               pods: int = 1) -> list[str]:
    """kube's reasons why ``pods`` pods requesting ``requests`` (together) do not fit, sorted; empty if they fit."""
    reasons = []
    if used.get(PODS, 0) + pods > allocatable.get(PODS, 0):
        reasons.append("Too many pods")
    for name, wanted in requests.items():
        if name == PODS or wanted <= 0:
            continue
        if used.get(name, 0) + wanted > allocatable.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return sorted(reasons)


def unschedulable_message(reasons: Iterable[str], nodes: int = 1) -> str:
    """kube-scheduler's FitError text for one node that failed for ``reasons``."""
    histogram = sorted(f"1 {reason}" for reason in reasons)
    message = f"0/{nodes} nodes are available:"
    if histogram:
        message += f" {', '.join(histogram)}."
    return message


# --- a pass -----------------------------------------------------------------------------------------------------------

COSCHEDULING = "coscheduling"
# Volcano's phases beyond those the controller reads (core/podgroups.py), and coscheduling's own
PG_COMPLETED = "Completed"
PG_SCHEDULING, PG_SCHEDULED, PG_FINISHED, PG_FAILED = "Scheduling", "Scheduled", "Finished", "Failed"


@dataclass(frozen=True, slots=True)
class WaitingPod:
    """An unbound pod this scheduler is to place."""

    key: str                    # namespace/name
    priority: int
    created: str                # creationTimestamp (RFC 3339 UTC: sorts as text)
    requests: Amounts
    group: str | None = None    # namespace/name of its PodGroup, for gang pods


@dataclass(frozen=True, slots=True)
class GroupView:
    """A PodGroup and its pods as the scheduler sees them."""

    key: str                    # namespace/name
    flavor: str                 # VOLCANO or COSCHEDULING
    min_member: int
    min_resources: Amounts = field(default_factory=dict)
    phase: str = ""
    priority: int = 0           # of its priorityClassName (Volcano's enqueue order)
    created: str = ""
    pods: int = 0               # its pods that exist
    bound: int = 0              # bound and not ended
    running: int = 0
    succeeded: int = 0
    failed: int = 0


@dataclass(slots=True)
class Decision:
    bind: list[str] = field(default_factory=list)                  # pod keys, in binding order
    waiting: dict[str, str] = field(default_factory=dict)          # pod key → why it waits (PodScheduled message)


def queue_key(pod: WaitingPod) -> tuple[int, str, str]:
    return -pod.priority, pod.created, pod.key


def _sum(pods: Sequence[WaitingPod]) -> Amounts:
    total: Amounts = {}
    for pod in pods:
        total = add(total, pod.requests)
    return total


def _place(pod: WaitingPod, allocatable: Amounts, used: Amounts, decision: Decision) -> Amounts:
    """Bind ``pod`` if it fits (the new usage), else record why it waits (usage unchanged)."""
    reasons = shortfalls(pod.requests, allocatable, used)
    if reasons:
        decision.waiting[pod.key] = unschedulable_message(reasons)
        return used
    decision.bind.append(pod.key)
    return add(used, {**pod.requests, "pods": Fraction(1)})


def too_few_message(pod: str, present: int, min_member: int) -> str:
    """coscheduling's PreFilter refusal, in kube's FitError frame."""
    name = pod.rpartition("/")[2]
    return (f"0/1 nodes are available: pre-filter pod {name} cannot find enough sibling pods, current pods number: "
            f"{present}, minMember of group: {min_member}.")


def not_found_message(group: str) -> str:
    return f"0/1 nodes are available: podgroup {group} not found."


def plan(waiting: Sequence[WaitingPod], groups: Mapping[str, GroupView], allocatable: Amounts,
         used: Amounts) -> Decision:
    """The pass's decision for ``waiting`` pods on a node offering ``allocatable`` of which ``used`` is taken."""
    decision = Decision()
    ordered = sorted(waiting, key=queue_key)
    members: dict[str, list[WaitingPod]] = {}
    for pod in ordered:
        if pod.group is not None:
            members.setdefault(pod.group, []).append(pod)
    done: set[str] = set()
    for pod in ordered:
        if pod.group is None:
            used = _place(pod, allocatable, used, decision)
            continue
        if pod.group in done:
            continue
        done.add(pod.group)
        used = _place_gang(members[pod.group], groups.get(pod.group), allocatable, used, decision)
    return decision


def _place_gang(pods: list[WaitingPod], group: GroupView | None, allocatable: Amounts, used: Amounts,
                decision: Decision) -> Amounts:
    if group is None:
        for pod in pods:
            decision.waiting[pod.key] = not_found_message(pods[0].group or "")
        return used
    if group.flavor == VOLCANO and group.phase in ("", PHASE_PENDING):
        message = f"0/1 nodes are available: podgroup {group.key} is {PHASE_PENDING}."
        for pod in pods:   # Volcano allocates only for admitted groups
            decision.waiting[pod.key] = message
        return used
    missing = group.min_member - group.bound - group.succeeded
    if missing <= 0:
        for pod in pods:
            used = _place(pod, allocatable, used, decision)
        return used
    if len(pods) < missing:
        for pod in pods:
            decision.waiting[pod.key] = too_few_message(pod.key, group.bound + group.succeeded + len(pods),
                                                        group.min_member)
        return used
    first = pods[:missing]
    wanted = _sum(first)
    if group.bound == 0 and group.succeeded == 0:
        wanted = larger(wanted, group.min_resources)
    reasons = shortfalls(wanted, allocatable, used, pods=missing)
    if reasons:
        for pod in pods:
            decision.waiting[pod.key] = unschedulable_message(reasons)
        return used
    decision.bind.extend(pod.key for pod in first)
    used = add(used, {**_sum(first), "pods": Fraction(missing)})
    for pod in pods[missing:]:
        used = _place(pod, allocatable, used, decision)
    return used


def gang_shortfall(min_member: int, min_resources: Mapping[str, Fraction], members: Sequence[Mapping[str, Fraction]],
                   allocatable: Mapping[str, Fraction]) -> dict[str, Fraction]:
    """What a gang needs at once beyond what the empty node allocates (resource → the amount needed; empty when it
    fits): the larger of its ``minResources`` and the requests of its first ``minMember`` pods, and ``minMember``
    pods. No amount of waiting binds a gang this returns something for."""
    need = larger(min_resources, _sum([WaitingPod("", 0, "", dict(r)) for r in members[:min_member]]))
    need[PODS] = Fraction(max(1, min_member))
    return {name: wanted for name, wanted in sorted(need.items())
            if wanted > 0 and wanted > allocatable.get(name, Fraction(0))}


def gang_never_fits(podgroup: Mapping[str, Any], members: Sequence[Mapping[str, Any]],
                    allocatable: Mapping[str, Any]) -> dict[str, str]:
    """:func:`gang_shortfall` of a PodGroup object and its pods (the unfinished ones, by name), as quantities."""
    spec = podgroup.get("spec") or {}
    min_member = spec.get("minMember") if isinstance(spec.get("minMember"), int) else 1
    live = sorted((p for p in members if not is_terminal(p)), key=lambda p: (p.get("metadata") or {}).get("name") or "")
    short = gang_shortfall(min_member, amounts(spec.get("minResources")),
                           [pod_requests(p.get("spec") or {}) for p in live], amounts(allocatable))
    return {name: figure(amount) for name, amount in short.items()}


def shortfall_text(short: Mapping[str, Fraction], allocatable: Mapping[str, Fraction]) -> str:
    """``cpu 5 (the node allocates 4), pods 120 (the node allocates 110)``."""
    return ", ".join(f"{name} {figure(amount)} (the node allocates {figure(allocatable.get(name, Fraction(0)))})"
                     for name, amount in short.items())


def figure(amount: Fraction) -> str:
    """An amount as kube prints the quantity: ``5``, ``500m``, ``4Gi`` (binary when a whole number of KiB)."""
    binary = amount >= 1024 and amount.denominator == 1 and amount.numerator % 1024 == 0
    return canonical(Quantity(amount, BINARY_SI if binary else DECIMAL_SI))


def enqueue(groups: Sequence[GroupView], allocatable: Amounts, used: Amounts) -> list[str]:
    """The Volcano groups the enqueue action admits now (``Pending`` → ``Inqueue``), highest priority first, then
    oldest: each whose ``minResources`` fit in what is free beyond the admitted groups that have no pod bound yet."""
    reserved = dict(used)
    for group in groups:
        if group.flavor == VOLCANO and group.phase == PHASE_INQUEUE and group.bound == 0:
            reserved = add(reserved, group.min_resources)
    admitted = []
    for group in sorted(groups, key=lambda g: (-g.priority, g.created, g.key)):
        if group.flavor != VOLCANO or group.phase not in ("", PHASE_PENDING):
            continue
        if not shortfalls(group.min_resources, allocatable, reserved, pods=0):
            admitted.append(group.key)
            reserved = add(reserved, group.min_resources)
    return admitted


def volcano_phase(group: GroupView) -> str:
    """The phase Volcano's scheduler gives the group after a pass (the enqueue action's move is :func:`enqueue`):
    its ``jobStatus``: ``Running`` while ``minMember`` pods are bound or succeeded, else back to ``Pending`` unless
    ``Inqueue``; ``Completed`` once every pod has ended."""
    phase = group.phase or PHASE_PENDING
    if phase == PHASE_PENDING:
        return PHASE_PENDING
    if group.pods and group.succeeded + group.failed == group.pods and group.succeeded >= group.min_member:
        return PG_COMPLETED
    if group.bound + group.succeeded >= group.min_member:
        return PHASE_RUNNING
    return PHASE_INQUEUE if phase == PHASE_INQUEUE else PHASE_PENDING


def coscheduling_phase(group: GroupView) -> str:
    """The phase scheduler-plugins' PodGroup controller gives the group."""
    phase = group.phase or PHASE_PENDING
    if phase == PHASE_PENDING:
        return PG_SCHEDULING if group.pods >= group.min_member else PHASE_PENDING
    if group.pods < group.min_member and phase not in (PG_FINISHED, PG_FAILED):
        return PHASE_PENDING
    scheduled = group.bound + group.succeeded + group.failed
    if phase == PG_SCHEDULING and scheduled >= group.min_member:
        phase = PG_SCHEDULED
    if phase == PG_SCHEDULED and group.running + group.succeeded >= group.min_member:
        phase = PHASE_RUNNING
    if group.failed and group.failed + group.running + group.succeeded >= group.min_member:
        phase = PG_FAILED
    if group.succeeded >= group.min_member:
        phase = PG_FINISHED
    return phase


def next_phase(group: GroupView) -> str:
    return volcano_phase(group) if group.flavor == VOLCANO else coscheduling_phase(group)
