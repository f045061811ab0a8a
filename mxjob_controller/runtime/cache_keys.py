"""Cache keys, index functions and the deletion tombstone (client-go ``tools/cache``'s ``MetaNamespaceKeyFunc``,
``MetaNamespaceIndexFunc`` and ``DeletedFinalStateUnknown``).

A key is ``<namespace>/<name>``, or ``<name>`` for cluster-scoped objects: the same strings client-go and the
work queue use, so a key taken from an event can be queued and later looked up in the store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

KeyFunc = Callable[[dict[str, Any]], str]
IndexFunc = Callable[[dict[str, Any]], list[str]]

NAMESPACE_INDEX = "namespace"
CONTROLLER_UID_INDEX = "controller-uid"


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """An object that was deleted while the informer was not watching (its watch had dropped and the relist no
    longer contained it). ``obj`` is the last state the cache saw, which may be stale: the real final state and
    the deletion event were never observed.
    """

    key: str
    obj: dict[str, Any]


def object_key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    if not name:
        raise ValueError("object has no metadata.name")
    namespace = meta.get("namespace")
    return f"{namespace}/{name}" if namespace else name


def deletion_key(obj: dict[str, Any] | DeletedFinalStateUnknown) -> str:
    """The key of what a delete handler received: an object or a tombstone."""
    return obj.key if isinstance(obj, DeletedFinalStateUnknown) else object_key(obj)


def namespace_index(obj: dict[str, Any]) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def controller_ref(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The object's controller: its ownerReference with ``controller: true`` (apimachinery's ``GetControllerOf``).
    Only the boolean true counts; any other value (``"true"``, 1) is no controller, as kube's decoder sees it."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def controller_uid_index(obj: dict[str, Any]) -> list[str]:
    """The uid of the object's controller (see :func:`controller_ref`), if any."""
    ref = controller_ref(obj)
    return [ref["uid"]] if ref is not None and ref.get("uid") else []


def label_index(label: str) -> IndexFunc:
    """Index objects by the value of one label (objects without it are not indexed)."""

    def index(obj: dict[str, Any]) -> list[str]:
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(label)
        return [value] if value is not None else []

    index.__name__ = f"label_index[{label}]"
    return index
