"""Volcano's PodGroup (``scheduling.volcano.sh/v1beta1``), as training-operator fills it.

Spec: ``minMember``, ``queue`` (the job's, else "default"; an existing group keeps the queue it has, since Volcano
admits groups per queue), ``priorityClassName`` and ``minResources`` (always written, even empty). Pods get
``schedulerName: volcano`` (unless their template names a scheduler), the annotation
``scheduling.k8s.io/group-name: <job>`` and ``volcano.sh/task-spec: <lowercase replica type>``.

No pod is created while the group has no phase or is ``Pending``: Volcano has not admitted the gang yet (it moves
it to ``Inqueue`` once the queue has room for ``minResources``), and pods created before would sit unschedulable
holding nothing but quota.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mxjob_controller.core.podgroups.flavor import GangRequest
from mxjob_controller.runtime.client import Resource

VOLCANO = "volcano"
PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", kind="PodGroup")
GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
TASK_SPEC_ANNOTATION = "volcano.sh/task-spec"
DEFAULT_QUEUE = "default"
PHASE_PENDING = "Pending"
PHASE_INQUEUE = "Inqueue"
PHASE_RUNNING = "Running"


class Volcano:
    name = VOLCANO
    resource = PODGROUPS
    crd_name = f"{PODGROUPS.plural}.{PODGROUPS.group}"
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
