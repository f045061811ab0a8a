"""The gang schedulers' PodGroups as the local scheduler serves and reads them: their CRDs (applied by the local
cluster, so a job with ``schedulingPolicy`` runs end to end on one machine), which group a pod belongs to, a group's
view for a pass (``plan.GroupView``) and the status each scheduler writes.

- Volcano, ``scheduling.volcano.sh/v1beta1``: pods name ``schedulerName: volcano`` and their group in the annotation
  ``scheduling.k8s.io/group-name``; the status (``phase``, ``running``, ``succeeded``, ``failed``) is part of the
  object (the CRD has no status subresource). A Volcano pod naming no group is a group of its own (Volcano's
  controller makes it a PodGroup of one): it is placed as a single pod.
- scheduler-plugins' coscheduling, ``scheduling.x-k8s.io/v1alpha1``: pods name the scheduler-plugins scheduler and
  their group in the label ``scheduling.x-k8s.io/pod-group``; the status (with ``scheduled``) is a subresource.

The CRDs carry the fields the controller and the schedulers write, and keep unknown ones (the real CRDs define
many more, which a user's manifest may set). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mxjob_controller.core.podgroups import (
    COSCHEDULING_PODGROUPS,
    GROUP_NAME_ANNOTATION,
    POD_GROUP_LABEL,
    VOLCANO,
    VOLCANO_PODGROUPS,
)
from mxjob_controller.local.scheduler.fit import amounts
from mxjob_controller.local.scheduler.plan import COSCHEDULING, GroupView
from mxjob_controller.runtime.client import Resource

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
