"""Which of a job's children stand for which replica, and which are surplus: the core of "diff desired vs actual".

Pure. Given the children a cache holds (pods or services) and the job's replica counts, :func:`classify` keeps only
those whose controller reference carries the job's UID, reads their (type, index) from their labels, and sorts them:

- ``kept``: one child per index ``< replicas`` (when an index has several, the one named ``<job>-<type>-<index>``
  wins, then one not being deleted, then the oldest);
- ``missing``: indices ``< replicas`` with no child (to create);
- ``excess``: the other children of an index, children with an index ``>= replicas``, and children of a replica
  type the job no longer has (to delete);
- ``unindexed``: controlled children whose labels name no type and index (left alone: nothing says what they are).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.core.labels import child_name, replica_of
from mxjob_controller.core.ownership import is_controlled_by
from mxjob_controller.core.pod_status import is_deleting

OUT_OF_RANGE = "index out of range"
DUPLICATE = "duplicate of its index"
UNKNOWN_TYPE = "replica type not in the job"


@dataclass(frozen=True, slots=True)
class Excess:
    obj: dict[str, Any]
    replica_type: str   # as labelled (lower case) for unknown types, else canonical
    index: int
    why: str


@dataclass(frozen=True, slots=True)
class ReplicaChildren:
    kept: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    missing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Children:
    by_type: Mapping[str, ReplicaChildren]   # canonical type → children, for every type of the job
    excess: tuple[Excess, ...] = ()
    unindexed: tuple[dict[str, Any], ...] = ()

    def kept(self) -> Iterable[tuple[str, int, dict[str, Any]]]:
        for rtype, children in self.by_type.items():
            for index, obj in sorted(children.kept.items()):
                yield rtype, index, obj


def _name(obj: dict[str, Any]) -> str:
    return (obj.get("metadata") or {}).get("name") or ""


def _preference(obj: dict[str, Any], expected_name: str) -> tuple[bool, bool, str, str]:
    meta = obj.get("metadata") or {}
    return (_name(obj) != expected_name, is_deleting(obj), meta.get("creationTimestamp") or "", _name(obj))


def classify(objs: Iterable[dict[str, Any]], job_uid: str, job_name: str, replicas: Mapping[str, int]) -> Children:
    """Sort ``objs`` (any children in the job's namespace) for the job with ``job_uid``; ``replicas`` maps each of
    its canonical replica types to its replica count."""
    canonical = {rtype.lower(): rtype for rtype in replicas}
    grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
    excess: list[Excess] = []
    unindexed: list[dict[str, Any]] = []
    seen: set[str] = set()
    for obj in objs:
        meta = obj.get("metadata") or {}
        uid = meta.get("uid") or _name(obj)
        if uid in seen or not is_controlled_by(obj, job_uid):
            continue
        seen.add(uid)
        found = replica_of(meta.get("labels"))
        if found is None:
            unindexed.append(obj)
            continue
        lowered, index = found
        rtype = canonical.get(lowered)
        if rtype is None:
            excess.append(Excess(obj, lowered, index, UNKNOWN_TYPE))
        elif index >= replicas[rtype]:
            excess.append(Excess(obj, rtype, index, OUT_OF_RANGE))
        else:
            grouped.setdefault((rtype, index), []).append(obj)
    by_type: dict[str, ReplicaChildren] = {}
    for rtype, count in replicas.items():
        kept: dict[int, dict[str, Any]] = {}
        for index in range(count):
            candidates = sorted(grouped.get((rtype, index), ()),
                                key=lambda o, i=index: _preference(o, child_name(job_name, rtype, i)))
            if candidates:
                kept[index] = candidates[0]
                excess.extend(Excess(o, rtype, index, DUPLICATE) for o in candidates[1:])
        by_type[rtype] = ReplicaChildren(kept, tuple(i for i in range(count) if i not in kept))
    excess.sort(key=lambda e: (e.replica_type, e.index, _name(e.obj)))
    return Children(by_type, tuple(excess), tuple(unindexed))
