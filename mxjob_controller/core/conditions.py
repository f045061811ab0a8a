"""Job conditions, with kubeflow/common's rules (``UpdateJobConditions`` / ``setCondition`` /
``filterOutCondition``). Pure: every function returns a new list and never modifies its input.

- A condition of the same type, status and reason is left as it is: its timestamps never move on a resync.
- Same type and status with another reason: replaced, keeping ``lastTransitionTime``.
- ``Running`` and ``Restarting`` exclude each other: setting one removes the other.
- ``Succeeded`` or ``Failed`` turns a ``Running`` condition False (its transition time moves with it).
- The newest condition is appended last: the last condition is the job's state (``kubectl get`` shows it).
- Once ``Succeeded`` or ``Failed`` is True, the conditions are frozen (upstream froze only on ``Failed``, and so
  re-added ``Running`` after ``Succeeded``: training-operator #1650).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mxjob_controller.core.common_types import condition

CREATED, RUNNING, RESTARTING, SUCCEEDED, FAILED, SUSPENDED = (
    "Created", "Running", "Restarting", "Succeeded", "Failed", "Suspended")
TRUE, FALSE = "True", "False"

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
