"""The status of a job whose spec is invalid, and its undoing once the spec is fixed. Pure.

An invalid job is ``Failed`` with reason ``<Kind>FailedValidation`` and a message listing every field error (as
Kubernetes aggregates errors: one bare, several in brackets), with ``completionTime``: the user sees at once what to
fix, and the controller neither creates pods nor retries (training-operator returned the validation error and so
re-validated the job in a hot loop). It is the one failure that is not final: validation runs on every reconcile,
so a new generation with other errors gets a new message, and a fixed spec removes the failure (and its completion
time), after which the job is reconciled like a new one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mxjob_controller.core import conditions as cond
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.jsoncopy import deep_copy

REASON_SUFFIX = "FailedValidation"


def validation_reason(kind: str) -> str:
    return f"{kind}{REASON_SUFFIX}"


def aggregate(errors: Sequence[FieldError]) -> str:
    """Errors as apimachinery's ``utilerrors.Aggregate`` prints them: ``a`` or ``[a, b]``."""
    texts = [str(e) for e in errors]
    return texts[0] if len(texts) == 1 else f"[{', '.join(texts)}]"


def validation_message(kind: str, name: str, errors: Sequence[FieldError]) -> str:
    return f"{kind} {name} failed validation because {aggregate(errors)}"


def failed_validation(status: Mapping[str, Any] | None, kind: str) -> bool:
    """Whether the job's ``Failed`` condition is a validation failure (the one that a fixed spec undoes)."""
    failed = cond.find((status or {}).get("conditions"), cond.FAILED)
    return failed is not None and failed.get("status") == cond.TRUE and failed.get("reason") == validation_reason(kind)


def invalid_status(old: Mapping[str, Any] | None, *, kind: str, name: str, errors: Sequence[FieldError],
                   now: str) -> dict[str, Any] | None:
    """The status of an invalid job (``old`` is not modified); None when the job had finished before its spec
    became invalid (a finished job stays as it finished)."""
    status = deep_copy(dict(old or {}))
    conditions = status.get("conditions") or []
    if cond.is_finished(conditions) and not failed_validation(status, kind):
        return None
    message = validation_message(kind, name, errors)
    current = cond.find(conditions, cond.FAILED)
    if current is not None and failed_validation(status, kind):
        if current.get("message") == message:
            return status
        conditions = [dict(c, message=message, lastUpdateTime=now) if c.get("type") == cond.FAILED else dict(c)
                      for c in conditions]
    else:
        conditions = cond.set_condition(conditions, cond.FAILED, cond.TRUE, validation_reason(kind), message, now)
    status["conditions"] = conditions
    status.setdefault("completionTime", now)
    status["lastReconcileTime"] = now
    return status


def without_validation_failure(old: Mapping[str, Any] | None, kind: str) -> dict[str, Any]:
    """``old`` with its validation failure (and the completion time it set) removed, for a spec now valid."""
    status = deep_copy(dict(old or {}))
    if not failed_validation(status, kind):
        return status
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != cond.FAILED]
    status.pop("completionTime", None)
    return status
