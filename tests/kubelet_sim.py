"""A stand-in for the kubelet in tests: it moves pods through their lifecycle by patching their ``status``.

The embedded API server runs no kubelet, so a pod stays ``Pending`` forever unless a test says otherwise. This
helper writes what a kubelet would: ``phase``, ``startTime``, the ``Ready`` condition and one ``containerStatuses``
entry per container (running with a ``restartCount``, or terminated with an exit code and a reason such as
``OOMKilled``), an eviction (Failed, no terminated container) or a lost node (phase ``Unknown``), through the pod's
``status`` subresource with a merge patch, over HTTP like any client.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kube.timefmt import now_rfc3339
from tests.support import Kube


def _path(namespace: str, name: str) -> str:
    return f"/api/v1/namespaces/{namespace}/pods/{name}"


def _container_status(container: dict[str, Any], state: dict[str, Any], ready: bool,
                      restart_count: int = 0) -> dict[str, Any]:
    image = container.get("image") or ""
    return {"name": container["name"], "image": image, "imageID": f"docker-pullable://{image}", "ready": ready,
            "started": ready, "restartCount": restart_count, "state": state}


def running_status(containers: list[dict[str, Any]], now: str, restart_count: int = 0) -> dict[str, Any]:
    """The status a kubelet reports once every container started and is ready: phase Running."""
    statuses = [_container_status(c, {"running": {"startedAt": now}}, True, restart_count) for c in containers]
    return {"phase": "Running", "startTime": now, "hostIP": "10.0.0.1", "podIP": "10.244.0.10",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
            "containerStatuses": statuses}


def finished_status(containers: list[dict[str, Any]], now: str, exit_code: int = 0, reason: str = "",
                    container: str | None = None, started_at: str | None = None,
                    finished_at: str | None = None) -> dict[str, Any]:
    """``container`` (default: every container) terminated with ``exit_code``: phase Succeeded when the code is 0,
    else Failed."""
    statuses = []
    for c in containers:
        code = exit_code if container in (None, c["name"]) else 0
        terminated = {"exitCode": code, "reason": reason or ("Completed" if code == 0 else "Error"),
                      "startedAt": started_at or now, "finishedAt": finished_at or now}
        statuses.append(_container_status(c, {"terminated": terminated}, False))
    return {"phase": "Succeeded" if exit_code == 0 else "Failed", "startTime": now,
            "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now}],
            "containerStatuses": statuses}


class KubeletSim:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube

    def pod(self, namespace: str, name: str) -> dict[str, Any]:
        reply = self.kube.get(_path(namespace, name))
        assert reply.ok, reply.body
        return reply.body

    def pods(self, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        reply = self.kube.get(f"/api/v1/namespaces/{namespace}/pods", labelSelector=label_selector)
        assert reply.ok, reply.body
        return reply.body["items"]

    def _patch_status(self, namespace: str, name: str, status: dict[str, Any]) -> dict[str, Any]:
        reply = self.kube.patch(_path(namespace, name) + "/status", {"status": status})
        assert reply.ok, reply.body
        return reply.body

    def run(self, namespace: str, name: str, restart_count: int = 0) -> dict[str, Any]:
        """Every container started and ready: phase Running."""
        pod = self.pod(namespace, name)
        return self._patch_status(namespace, name,
                                  running_status(pod["spec"]["containers"], now_rfc3339(), restart_count))

    def finish(self, namespace: str, name: str, exit_code: int = 0, reason: str = "",
               container: str | None = None, started_at: str | None = None,
               finished_at: str | None = None) -> dict[str, Any]:
        """``container`` (default: every container) terminated with ``exit_code``: phase Succeeded when the code is
        0, else Failed. ``started_at`` / ``finished_at``: the containers' run (default: now)."""
        pod = self.pod(namespace, name)
        return self._patch_status(namespace, name, finished_status(pod["spec"]["containers"], now_rfc3339(), exit_code,
                                                                   reason, container, started_at, finished_at))

    def succeed(self, namespace: str, name: str) -> dict[str, Any]:
        return self.finish(namespace, name, 0)

    def fail(self, namespace: str, name: str, exit_code: int = 1, reason: str = "Error",
             **times: str) -> dict[str, Any]:
        return self.finish(namespace, name, exit_code, reason, **times)

    def lose(self, namespace: str, name: str) -> dict[str, Any]:
        """Phase Unknown, as a pod whose node stopped reporting is left."""
        return self._patch_status(namespace, name, {"phase": "Unknown", "reason": "NodeLost",
                                                    "message": "the node stopped reporting"})

    def evict(self, namespace: str, name: str, message: str = "The node was low on resource: memory.") -> dict:
        """Failed without a terminated container, as an eviction leaves a pod."""
        return self._patch_status(namespace, name, {"phase": "Failed", "reason": "Evicted", "message": message})
