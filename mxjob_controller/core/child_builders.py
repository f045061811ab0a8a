"""The objects a job creates: one pod and one headless service per replica. Pure functions.

The pod is the replica's template (already wired by the framework) with: the child name, the template's labels
with the controller's labels on top (controller keys win), the template's annotations and finalizers, one
controller ownerReference to the job, and the replica's restart policy (``ExitCode`` runs as ``Never``: the
controller, not the kubelet, decides about restarts). The service is headless (``clusterIP: None``), selects
exactly that pod and exposes the ports the framework names.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.core.pod_status import RESTART_EXIT_CODE, RESTART_NEVER


def pod_restart_policy(replica_restart_policy: str) -> str:
    """The pod-level policy for a replica's policy: ``ExitCode`` is not a pod policy, it runs as ``Never``."""
    return RESTART_NEVER if replica_restart_policy == RESTART_EXIT_CODE else replica_restart_policy


def template_restart_policy(template: dict[str, Any]) -> str:
    """The restart policy a user wrote into the pod template ("" when none): it is overwritten, with a warning."""
    return ((template.get("spec") or {}).get("restartPolicy")) or ""


def with_env(env: list[Any] | None, additions: list[dict[str, str]]) -> list[Any]:
    """The user's ``env`` followed by each addition whose name the user did not set: what a framework's wiring
    adds to a container never overrides a variable the user chose."""
    user = list(env or [])
    taken = {e.get("name") for e in user if isinstance(e, dict)}
    return user + [dict(a) for a in additions if a["name"] not in taken]


def build_pod(template: dict[str, Any], *, name: str, namespace: str, labels: dict[str, str],
              owner: dict[str, Any], restart_policy: str) -> dict[str, Any]:
    """The pod to create; ``template`` is not modified.

    The pod shares the template's nested values (nothing is copied twice on the hot path): pass a template of the
    caller's own, as ``Framework.pod_template`` hands out, and do not change it afterwards."""
    tmeta = template.get("metadata") or {}
    metadata: dict[str, Any] = {"name": name, "namespace": namespace,
                                "labels": {**(tmeta.get("labels") or {}), **labels},
                                "ownerReferences": [dict(owner)]}
    if tmeta.get("annotations"):
        metadata["annotations"] = dict(tmeta["annotations"])
    if tmeta.get("finalizers"):
        metadata["finalizers"] = list(tmeta["finalizers"])
    spec = dict(template.get("spec") or {})
    spec["restartPolicy"] = pod_restart_policy(restart_policy)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def build_service(*, name: str, namespace: str, labels: dict[str, str], selector: dict[str, str],
                  owner: dict[str, Any], ports: list[dict[str, Any]]) -> dict[str, Any]:
    """The headless service giving a replica its stable DNS name (``<name>.<namespace>.svc``)."""
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels),
                         "ownerReferences": [dict(owner)]},
            "spec": {"clusterIP": "None", "selector": dict(selector), "ports": [dict(p) for p in ports]}}
