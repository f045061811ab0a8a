"""Objects as the API server sends them to the core, shared by its unit tests: a worker pod of job ``j`` (running,
failed with an exit code, evicted) and a child with its replica labels and owner reference."""

from __future__ import annotations

from typing import Any

from mxjob_controller.core import job_vocabulary as lb
from mxjob_controller.kube.timefmt import rfc3339

T0 = 1_700_000_000.0   # a whole second, as status times are
NOW = rfc3339(T0)
UID = "job-uid"        # the job's, which its children's controller reference names


def worker(index: int = 0, phase: str = "Running", *, uid: str = "", exit_code: int | None = None,
           restarts: int = 0, started: float | None = None, finished: float | None = None,
           deleting: bool = False) -> dict[str, Any]:
    """A worker pod of job ``j`` as the API server sends it."""
    body: dict[str, Any] = {"metadata": {"name": f"j-worker-{index}", "uid": uid or f"uid-{index}"},
                            "status": {"phase": phase}}
    if deleting:
        body["metadata"]["deletionTimestamp"] = NOW
    state: dict[str, Any] = {"running": {}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": "Error",
                                "startedAt": rfc3339(started if started is not None else T0),
                                "finishedAt": rfc3339(finished if finished is not None else T0)}}
    body["status"]["containerStatuses"] = [{"name": "mxnet", "restartCount": restarts, "state": state}]
    return body


def evicted(index: int = 0, uid: str = "") -> dict[str, Any]:
    """A worker pod the kubelet evicted: Failed, with no terminated container."""
    return {"metadata": {"name": f"j-worker-{index}", "uid": uid or f"uid-{index}"},
            "status": {"phase": "Failed", "reason": "Evicted", "message": "low on memory"}}


def ref(uid: str = UID, controller: bool = True, kind: str = "MXJob") -> dict[str, Any]:
    """An owner reference to job ``j``."""
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "name": "j", "uid": uid, "controller": controller}


def child(name: str, rtype: str | None, index: str | None, *, owner: dict | None = None, legacy: bool = False,
          created: str = "2024-01-01T00:00:00Z", deleting: bool = False, uid: str | None = None) -> dict[str, Any]:
    """A child of job ``j`` labelled with its replica type and index (new or legacy keys)."""
    labels: dict[str, str] = {}
    type_key, index_key = ((lb.LEGACY_REPLICA_TYPE, lb.LEGACY_REPLICA_INDEX) if legacy
                           else (lb.REPLICA_TYPE, lb.REPLICA_INDEX))
    if rtype is not None:
        labels[type_key] = rtype
    if index is not None:
        labels[index_key] = index
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}", "labels": labels, "creationTimestamp": created,
                            "ownerReferences": [owner if owner is not None else ref()]}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T01:00:00Z"
    return {"metadata": meta}


def names(objs: Any) -> list[str]:
    return [o["metadata"]["name"] for o in objs]
