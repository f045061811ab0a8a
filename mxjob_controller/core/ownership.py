"""Controller ownership: which object controls a child, and the reference a job puts on the children it makes.

Only the *controller* ownerReference counts (``controller: true``), and it is matched by UID: a pod named like
ours, labelled like ours, but controlled by another object (a TFJob, a re-created job of the same name) is not
ours, whatever its kind or name say. The controller reference is read by the runtime's ``controller_ref``, the
function the informers' controller-uid index uses too, so the cache and the core never disagree on it.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.runtime.cache_keys import controller_ref

__all__ = ["api_group", "controller_ref", "controller_reference", "controller_uid", "is_controlled_by"]


def controller_uid(obj: dict[str, Any]) -> str | None:
    ref = controller_ref(obj)
    return ref.get("uid") if ref else None


def is_controlled_by(obj: dict[str, Any], uid: str) -> bool:
    return bool(uid) and controller_uid(obj) == uid


def api_group(api_version: str) -> str:
    """``kubeflow.org/v1`` → ``kubeflow.org``; ``v1`` → ``""``."""
    return api_version.rpartition("/")[0]


def controller_reference(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    """The reference a job puts on its children: the controller, blocking the job's foreground deletion."""
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True,
            "blockOwnerDeletion": True}
