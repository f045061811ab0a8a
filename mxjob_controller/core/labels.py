"""Names and labels of a job's children (pods and services), as Kubeflow's training-operator writes them.

Every child carries the ``training.kubeflow.org/*`` labels and, for a framework with a legacy ``group-name`` value,
also the legacy ``group-name`` / ``job-name`` / ``replica-type`` / ``replica-index`` ones that kubeflow/common (and
so an older Go operator) used, so selectors written for either operator keep matching. Children made by the old
operator carry only the legacy labels; they are recognised by them (``replica_of`` falls back to them) and adopted
by patching the new labels in. A framework with no legacy group (``""``) gets exactly training-operator's labels.
"""

from __future__ import annotations

from collections.abc import Mapping

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
