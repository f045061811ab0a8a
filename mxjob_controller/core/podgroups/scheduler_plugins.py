"""scheduler-plugins' PodGroup (``scheduling.x-k8s.io/v1alpha1``, the coscheduling plugin), as training-operator
fills it.

Spec: ``minMember``, ``minResources`` (omitted when empty) and ``scheduleTimeoutSeconds`` (the job's, when set).
Pods get ``schedulerName: <the --gang-scheduler-name>`` (unless their template names a scheduler) and the label
``scheduling.x-k8s.io/pod-group: <job>``. Pod creation is never held back: the coscheduling plugin itself keeps the
pods of an incomplete group from binding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mxjob_controller.core.podgroups.flavor import GangRequest
from mxjob_controller.runtime.client import Resource

PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", kind="PodGroup")
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


class SchedulerPlugins:
    name = "scheduler-plugins"
    resource = PODGROUPS
    crd_name = f"{PODGROUPS.plural}.{PODGROUPS.group}"

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
