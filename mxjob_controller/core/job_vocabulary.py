"""Kubeflow's job vocabulary, as every framework shares it: replica counts and conditions (kubeflow/common
``JobStatus``), the names and labels of a job's children, and controller ownership. Pure; nothing framework-specific
lives here, and the MXJob API builds its status on these.

Conditions follow kubeflow/common's rules (``UpdateJobConditions`` / ``setCondition`` / ``filterOutCondition``);
every function returns a new list and never modifies its input:

- A condition of the same type, status and reason is left as it is: its timestamps never move on a resync.
- Same type and status with another reason: replaced, keeping ``lastTransitionTime``.
- ``Running`` and ``Restarting`` exclude each other: setting one removes the other.
- ``Succeeded`` or ``Failed`` turns a ``Running`` condition False (its transition time moves with it).
- The newest condition is appended last: the last condition is the job's state (``kubectl get`` shows it).
- Once ``Succeeded`` or ``Failed`` is True, the conditions are frozen (upstream froze only on ``Failed``, and so
  re-added ``Running`` after ``Succeeded``: training-operator #1650).

Children are named and labelled as Kubeflow's training-operator does. Every child carries the
``training.kubeflow.org/*`` labels and, for a framework with a legacy ``group-name`` value, also the legacy
``group-name`` / ``job-name`` / ``replica-type`` / ``replica-index`` ones that kubeflow/common (and so an older Go
operator) used, so selectors written for either operator keep matching. Children made by the old operator carry
only the legacy labels; they are recognised by them (``replica_of`` falls back to them) and adopted by patching the
new labels in. A framework with no legacy group (``""``) gets exactly training-operator's labels.

Ownership: only the *controller* ownerReference counts (``controller: true``), and it is matched by UID: a pod
named like ours, labelled like ours, but controlled by another object (a TFJob, a re-created job of the same name)
is not ours, whatever its kind or name say. The controller reference is read by the runtime's ``controller_ref``,
the function the informers' controller-uid index uses too, so the cache and the core never disagree on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube.vocabulary import FALSE, TRUE
from mxjob_controller.runtime.cache_keys import controller_ref

# --- common types -------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ReplicaCounts:
    """Pods of one replica type by phase. Zero counts are omitted on the wire (``omitempty``)."""

    active: int = 0
    succeeded: int = 0
    failed: int = 0

    def to_dict(self) -> dict[str, int]:
        return {k: v for k, v in (("active", self.active), ("succeeded", self.succeeded),
                                  ("failed", self.failed)) if v}


def condition(ctype: str, reason: str, message: str, now: str, status: str = "True") -> dict[str, str]:
    """One entry of ``status.conditions`` as the Go operators write it."""
    return {"type": ctype, "status": status, "reason": reason, "message": message,
            "lastUpdateTime": now, "lastTransitionTime": now}


# --- conditions --------------------------------------------------------------------------------------------------

CREATED, RUNNING, RESTARTING, SUCCEEDED, FAILED, SUSPENDED = (
    "Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended")

Conditions = Sequence[dict[str, Any]]


def find(conditions: Conditions | None, ctype: str) -> dict[str, Any] | None:
    for cond in conditions or ():
        if cond.get("type") == ctype:
            return cond
    return None


def is_true(conditions: Conditions | None, ctype: str) -> bool:
    cond = find(conditions, ctype)
    return cond is not None and cond.get("status") == TRUE


def is_finished(conditions: Conditions | None) -> bool:
    return is_true(conditions, SUCCEEDED) or is_true(conditions, FAILED)


def is_suspended(conditions: Conditions | None) -> bool:
    """The job is suspended (``runPolicy.suspend``) and its status says so: it has no pods, its deadline does not
    run and its TTL does not apply (``core/suspend.py`` sets and clears the condition)."""
    return is_true(conditions, SUSPENDED)


def _excluded_by(ctype: str) -> str | None:
    return {RUNNING: RESTARTING, RESTARTING: RUNNING}.get(ctype)


def _without(conditions: Conditions, ctype: str, now: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for existing in conditions:
        if existing.get("type") in (ctype, _excluded_by(ctype)):
            continue
        kept = dict(existing)
        if ctype in (SUCCEEDED, FAILED) and kept.get("type") == RUNNING and kept.get("status") != FALSE:
            kept.update(status=FALSE, lastUpdateTime=now, lastTransitionTime=now)
        out.append(kept)
    return out


def set_condition(conditions: Conditions | None, ctype: str, status: str, reason: str, message: str,
                  now: str) -> list[dict[str, Any]]:
    """``conditions`` with ``ctype`` set as the rules above allow."""
    conditions = list(conditions or ())
    if is_finished(conditions):
        return [dict(c) for c in conditions]
    current = find(conditions, ctype)
    if current is not None and current.get("status") == status and current.get("reason") == reason:
        return [dict(c) for c in conditions]
    new = condition(ctype, reason, message, now, status)
    if current is not None and current.get("status") == status:
        new["lastTransitionTime"] = current.get("lastTransitionTime") or now
    return [*_without(conditions, ctype, now), new]


def set_message(conditions: Conditions | None, ctype: str, message: str, now: str) -> list[dict[str, Any]]:
    """``conditions`` with only the message of ``ctype`` changed (and its ``lastUpdateTime``, if it changed)."""
    out = [dict(c) for c in conditions or ()]
    if is_finished(out):
        return out
    for cond in out:
        if cond.get("type") == ctype and cond.get("message") != message:
            cond["message"] = message
            cond["lastUpdateTime"] = now
    return out


def became_true(before: Conditions | None, after: Conditions | None) -> list[str]:
    """Condition types True in ``after`` but not in ``before``: the transitions a status write recorded."""
    return [c["type"] for c in after or () if c.get("status") == TRUE and not is_true(before, c.get("type", ""))]


# --- labels ------------------------------------------------------------------------------------------------------

OPERATOR_NAME = "training.kubeflow.org/operator-name"
JOB_NAME = "training.kubeflow.org/job-name"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
JOB_ROLE = "training.kubeflow.org/job-role"
MASTER_ROLE = "master"

LEGACY_GROUP_NAME = "group-name"
LEGACY_JOB_NAME = "job-name"
LEGACY_REPLICA_TYPE = "replica-type"
LEGACY_REPLICA_INDEX = "replica-index"


def child_name(job_name: str, replica_type: str, index: int) -> str:
    """``<job>-<lowercase type>-<index>``: the name of a replica's pod and of its service."""
    return f"{job_name}-{replica_type.lower()}-{index}".replace("/", "-")


def job_labels(operator: str, group: str, job_name: str) -> dict[str, str]:
    """The labels every child of a job carries (new, and legacy unless ``group`` is ``""``)."""
    job = job_name.replace("/", "-")
    if not group:
        return {OPERATOR_NAME: operator, JOB_NAME: job}
    return {OPERATOR_NAME: operator, JOB_NAME: job, LEGACY_GROUP_NAME: group, LEGACY_JOB_NAME: job}


def replica_labels(operator: str, group: str, job_name: str, replica_type: str, index: int,
                   master: bool = False) -> dict[str, str]:
    """The labels of one replica's children; ``master`` adds ``job-role=master`` where the framework says."""
    rtype = replica_type.lower()
    labels = {**job_labels(operator, group, job_name), REPLICA_TYPE: rtype, REPLICA_INDEX: str(index)}
    if group:
        labels.update({LEGACY_REPLICA_TYPE: rtype, LEGACY_REPLICA_INDEX: str(index)})
    if master:
        labels[JOB_ROLE] = MASTER_ROLE
    return labels


def service_selector(operator: str, job_name: str, replica_type: str, index: int) -> dict[str, str]:
    """What a replica's service selects: exactly that replica's pod."""
    return {OPERATOR_NAME: operator, JOB_NAME: job_name.replace("/", "-"), REPLICA_TYPE: replica_type.lower(),
            REPLICA_INDEX: str(index)}


def replica_of(labels: Mapping[str, str] | None) -> tuple[str, int] | None:
    """(lowercase type, index) from a child's labels, the new ones first, else the legacy ones; None when either is
    missing or the index is not a non-negative decimal number."""
    labels = labels or {}
    for type_key, index_key in ((REPLICA_TYPE, REPLICA_INDEX), (LEGACY_REPLICA_TYPE, LEGACY_REPLICA_INDEX)):
        rtype, index = labels.get(type_key), labels.get(index_key)
        if rtype and index is not None:
            return (rtype.lower(), int(index)) if index.isdigit() and index.isascii() else None
    return None


def owned_selector(operator: str) -> str:
    """Label selector of the children this controller made (and adopted)."""
    return f"{OPERATOR_NAME}={operator}"


def legacy_selector(group: str) -> str:
    """Label selector of children made by the old operator: legacy labels, no operator name. Disjoint from
    :func:`owned_selector`, so no child is in both caches."""
    return f"{LEGACY_GROUP_NAME}={group},!{OPERATOR_NAME}"


def needs_adoption(labels: Mapping[str, str] | None) -> bool:
    """True for a child without the operator-name label (one the old operator made)."""
    return OPERATOR_NAME not in (labels or {})


def missing_labels(labels: Mapping[str, str] | None, wanted: Mapping[str, str]) -> dict[str, str]:
    """The entries of ``wanted`` that ``labels`` lacks or holds with another value."""
    labels = labels or {}
    return {k: v for k, v in wanted.items() if labels.get(k) != v}


# --- ownership ---------------------------------------------------------------------------------------------------

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
