"""What the controller keeps of each cached pod and service: only the fields it reads (client-go's ``SetTransform``).

A pod as the API server sends it is mostly what the controller wrote itself (the template: containers, env with a
``MX_CONFIG`` that lists every replica of the job, volumes …) plus what the kubelet adds (conditions, images, IPs).
None of it is read again: the cache serves classification, counting and the failure policy, which read the fields
below. Dropping the rest at ingest makes the pod cache several times smaller (``make bench``: ``memory``), which is
what lets one controller keep tens of thousands of pods (training-operator's full-object cache OOMs, #1661).

Kept, for both kinds (``metadata``):

==========================  ====================================================================================
``apiVersion``, ``kind``    the object's type (events, tombstones)
``name``, ``namespace``     keys, child names, delete/patch paths, messages (``cache_keys``, ``children``,
                            ``child_control``, ``exit_reports``)
``uid``                     identity: de-duplication, delete preconditions, per-pod memory (``children``,
                            ``child_control``, ``exit_reports``, ``restarts``)
``resourceVersion``         change detection of updates (``handlers``, the informer's relist)
``creationTimestamp``       which of two children of one index is kept (``children``)
``deletionTimestamp``       being deleted: not counted active, not deleted again (``pod_status``, ``cleanup``)
``labels``                  replica type and index, adoption (``labels``, ``children``, ``child_control``)
``ownerReferences``         the controller reference: the index by job UID, ownership (``cache_keys``, ``ownership``,
                            ``handlers``)
==========================  ====================================================================================

Kept for pods only (``status``): ``phase``, ``reason``, ``message``, ``startTime`` (``pod_status``,
``restarts``, ``failure_policy``), and of each ``containerStatuses`` / ``initContainerStatuses`` entry its ``name``,
``restartCount`` and ``state`` (exit codes, reasons and times of terminations: ``pod_status``, ``restarts``,
``exit_reports``). Nothing of ``spec``, ``annotations``, ``managedFields``, ``conditions`` or ``lastState`` is read.
Services keep no ``spec`` or ``status``.

A new reader of a cached field must add it here: ``tests/test_core_child_cache.py`` checks that a reconcile over
transformed objects decides as it does over whole ones, and this table is the list to extend.
"""

from __future__ import annotations

from typing import Any

_META_KEPT = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "labels",
              "ownerReferences")
_POD_STATUS_KEPT = ("phase", "reason", "message", "startTime")
_CONTAINER_STATUS_KEPT = ("name", "restartCount", "state")


def _metadata(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return {}
    return {k: meta[k] for k in _META_KEPT if k in meta}


def _container_statuses(entries: Any) -> list[Any]:
    return [{k: e[k] for k in _CONTAINER_STATUS_KEPT if k in e} if isinstance(e, dict) else e for e in entries]


def _typed(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: obj[k] for k in ("apiVersion", "kind") if k in obj}
    out["metadata"] = _metadata(obj)
    return out


def pod_cache_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The cached form of a pod: the fields the module docstring lists, nothing else (a new dict)."""
    out = _typed(obj)
    status = obj.get("status")
    if isinstance(status, dict):
        kept = {k: status[k] for k in _POD_STATUS_KEPT if k in status}
        for key in ("initContainerStatuses", "containerStatuses"):
            entries = status.get(key)
            if isinstance(entries, list):
                kept[key] = _container_statuses(entries)
        out["status"] = kept
    return out


def service_cache_view(obj: dict[str, Any]) -> dict[str, Any]:
    """The cached form of a service: its type and the metadata fields the module docstring lists."""
    return _typed(obj)
