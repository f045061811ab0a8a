"""What a job asks of its gang: ``minMember`` and ``minResources`` of its PodGroup, as training-operator computes
them (``ReconcileJobs`` / ``CalcPGMinResources``). Pure.

- ``minMember``: ``schedulingPolicy.minAvailable`` when set, else every replica of every type.
- ``minResources``: ``schedulingPolicy.minResources`` when set (printed canonically), else the summed resource
  requests of the first ``minMember`` pods, taking replica types by the value of their pod template's priority
  class, highest first (a class that does not exist counts as 0; equal values keep the job's type order, where Go
  left it to map order). A container without ``requests`` counts its ``limits`` (what the API server defaults
  requests to). Init containers and pod overhead are not counted, as upstream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core.framework import SchedulingPolicySpec
from mxjob_controller.core.podgroups.flavor import GangRequest
from mxjob_controller.kube.quantity import Quantity, QuantityError, canonical, normalized, parse

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
