"""Gang-scheduling test helpers: minimal Volcano and scheduler-plugins PodGroup CRDs for the embedded API server,
PriorityClasses, and the scheduler's part (tests admit a gang by patching its PodGroup's ``status.phase``); and the
T9k scheduler's PodGroup CRD, which a GenericJob with ``spec.scheduler.t9kScheduler`` asks for.

The CRDs keep the fields the controller writes and the schedulers' status phase, with the real CRDs' shapes:
Volcano's ``scheduling.volcano.sh/v1beta1`` has no status subresource, scheduler-plugins' ``scheduling.x-k8s.io/
v1alpha1`` has one. Unknown fields are pruned, so a field the controller misspells would be lost, as in a cluster.
"""

from __future__ import annotations

from typing import Any

from tests.support import Kube, wait_for

CRDS_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
VOLCANO_API = "/apis/scheduling.volcano.sh/v1beta1"
PLUGINS_API = "/apis/scheduling.x-k8s.io/v1alpha1"
DEADLINE = 30.0

_QUANTITIES = {"type": "object", "additionalProperties": {
    "x-kubernetes-int-or-string": True,
    "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|"
               r"(\.[0-9]+))))?$"}}


def _crd(group: str, version: str, spec: dict[str, Any], status: dict[str, Any],
         status_subresource: bool) -> dict[str, Any]:
    schema = {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": spec}, "status": {"type": "object", "properties": status}}}
    served: dict[str, Any] = {"name": version, "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": schema}}
    if status_subresource:
        served["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"podgroups.{group}"},
            "spec": {"group": group, "scope": "Namespaced", "versions": [served],
                     "names": {"kind": "PodGroup", "plural": "podgroups", "singular": "podgroup",
                               "listKind": "PodGroupList", "shortNames": ["pg"]}}}


def volcano_crd() -> dict[str, Any]:
    spec = {"minMember": {"type": "integer", "format": "int32"}, "queue": {"type": "string"},
            "priorityClassName": {"type": "string"}, "minResources": _QUANTITIES,
            "minTaskMember": {"type": "object", "additionalProperties": {"type": "integer", "format": "int32"}}}
    condition = {"type": "object", "properties": {name: {"type": "string"} for name in (
        "type", "status", "transitionID", "lastTransitionTime", "reason", "message")}}
    status = {"phase": {"type": "string"}, "running": {"type": "integer", "format": "int32"},
              "succeeded": {"type": "integer", "format": "int32"}, "failed": {"type": "integer", "format": "int32"},
              "conditions": {"type": "array", "items": condition}}   # Unschedulable, Scheduled: Volcano's words
    return _crd("scheduling.volcano.sh", "v1beta1", spec, status, status_subresource=False)


def scheduler_plugins_crd() -> dict[str, Any]:
    spec = {"minMember": {"type": "integer", "format": "int32"}, "minResources": _QUANTITIES,
            "scheduleTimeoutSeconds": {"type": "integer", "format": "int32"}}
    status = {"phase": {"type": "string"}, "running": {"type": "integer", "format": "int32"}}
    return _crd("scheduling.x-k8s.io", "v1alpha1", spec, status, status_subresource=True)


def t9k_crd() -> dict[str, Any]:
    """``podgroups.scheduler.tensorstack.dev`` (``v1beta1``): the fields ``generic/scheduler.py`` writes."""
    int32 = {"type": "integer", "format": "int32"}
    spec = {"minMember": int32, "queue": {"type": "string"}, "priority": int32,
            "roles": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"}, "minMember": int32}}}}
    return _crd("scheduler.tensorstack.dev", "v1beta1", spec, {"phase": {"type": "string"}}, status_subresource=True)


def install(kube: Kube, crd: dict[str, Any]) -> None:
    reply = kube.post(CRDS_PATH, crd)
    assert reply.status == 201, reply.body
    group, version = crd["spec"]["group"], crd["spec"]["versions"][0]["name"]
    wait_for(lambda: kube.get(f"/apis/{group}/{version}/namespaces/default/podgroups").ok, timeout=DEADLINE,
             what=f"podgroups of {group} served")


def priority_class(kube: Kube, name: str, value: int) -> None:
    reply = kube.post("/apis/scheduling.k8s.io/v1/priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value})
    assert reply.status == 201, reply.body


class PodGroups:
    """Reads of one flavour's PodGroups, and the scheduler's writes."""

    def __init__(self, kube: Kube, api: str, status_subresource: bool) -> None:
        self.kube = kube
        self.api = api
        self.status_subresource = status_subresource

    def path(self, namespace: str, name: str = "") -> str:
        path = f"{self.api}/namespaces/{namespace}/podgroups"
        return f"{path}/{name}" if name else path

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        reply = self.kube.get(self.path(namespace, name))
        if reply.status == 404:
            return None
        assert reply.ok, reply.body
        return reply.body

    def wait(self, namespace: str, name: str) -> dict[str, Any]:
        return wait_for(lambda: self.get(namespace, name), timeout=DEADLINE, what=f"podgroup {namespace}/{name}")

    def wait_gone(self, namespace: str, name: str) -> None:
        wait_for(lambda: self.get(namespace, name) is None, timeout=DEADLINE, what=f"podgroup {name} deleted")

    def set_phase(self, namespace: str, name: str, phase: str) -> dict[str, Any]:
        """What the scheduler does when it admits (or holds) the gang."""
        path = self.path(namespace, name) + ("/status" if self.status_subresource else "")
        reply = self.kube.patch(path, {"status": {"phase": phase}})
        assert reply.ok, reply.body
        return reply.body


def volcano(kube: Kube) -> PodGroups:
    return PodGroups(kube, VOLCANO_API, status_subresource=False)


def scheduler_plugins(kube: Kube) -> PodGroups:
    return PodGroups(kube, PLUGINS_API, status_subresource=True)
