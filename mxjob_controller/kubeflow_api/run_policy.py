"""The run policy of a Kubeflow job (MXJob, TFJob), read from both places the upstream APIs put it.

The older APIs (mxnet-operator, tf-operator v1.0) have the run-policy fields inline in ``spec``
(``spec.cleanPodPolicy``...); training-operator's has them under ``spec.runPolicy``. Both spellings are accepted
and merged field by field (``schedulingPolicy`` one level deeper, sub-field by sub-field). A field set in both places to
*different* values is a validation error naming both paths; equal values are fine. ``suspend`` and
``managedBy`` exist only under ``spec.runPolicy``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mxjob_controller.core import framework as managed_by
from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.quantity import QUANTITY_HINT, is_quantity
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.constants import (
    CLEAN_POD_POLICIES,
    DEFAULT_CLEAN_POD_POLICY,
    INLINE_RUN_POLICY_FIELDS,
    RUN_POLICY_FIELDS,
)

INLINE_PATH = "spec"
NESTED_PATH = "spec.runPolicy"
_NON_NEGATIVE = ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit")


@dataclass(frozen=True, slots=True)
class SchedulingPolicy:
    """Gang-scheduling hints (Volcano / scheduler-plugins PodGroup)."""

    min_available: int | None = None
    queue: str = ""
    min_resources: Mapping[str, int | str] = field(default_factory=lambda: MappingProxyType({}))
    priority_class: str = ""
    schedule_timeout_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class RunPolicy:
    """The merged run policy, defaults applied (cleanPodPolicy ``All``, not suspended)."""

    clean_pod_policy: str = DEFAULT_CLEAN_POD_POLICY
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    scheduling_policy: SchedulingPolicy | None = None
    suspend: bool = False
    managed_by: str | None = None   # who reconciles the job is decided before parsing: core/framework.py


# --- reading ---------------------------------------------------------------------------------------------

def _places(spec: Mapping[str, Any]) -> tuple[dict, dict]:
    """(inline fields, spec.runPolicy) with nulls dropped: a null field is an unset field."""
    inline = {k: spec[k] for k in INLINE_RUN_POLICY_FIELDS if spec.get(k) is not None}
    nested_raw = spec.get("runPolicy")
    nested = {k: v for k, v in nested_raw.items() if k in RUN_POLICY_FIELDS and v is not None} \
        if isinstance(nested_raw, dict) else {}
    return inline, nested


def _same(a: Any, b: Any) -> bool:
    """JSON equality (Python's ``1 == 1.0 == True`` is not)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _merge(inline: dict, nested: dict, inline_path: str, nested_path: str,
           conflicts: list[FieldError]) -> dict:
    merged = dict(inline)
    for key, value in nested.items():
        if key not in merged:
            merged[key] = value
        elif key == "schedulingPolicy" and isinstance(merged[key], dict) and isinstance(value, dict):
            merged[key] = _merge({k: v for k, v in merged[key].items() if v is not None},
                                 {k: v for k, v in value.items() if v is not None},
                                 fe.child(inline_path, key), fe.child(nested_path, key), conflicts)
        elif not _same(merged[key], value):
            other = fe.child(inline_path, key)
            conflicts.append(fe.invalid(
                fe.child(nested_path, key), value,
                f"conflicts with {other} ({fe.format_value(merged[key])}): set it in one place, or to the "
                "same value in both"))
    return merged


def merged_run_policy(spec: Mapping[str, Any]) -> tuple[dict, list[FieldError]]:
    """The run policy as one dict (inline fields first), and the conflicts between the two places."""
    inline, nested = _places(spec)
    conflicts: list[FieldError] = []
    return _merge(inline, nested, INLINE_PATH, NESTED_PATH, conflicts), conflicts


def run_policy_of(spec: Mapping[str, Any], default_clean_pod_policy: str = DEFAULT_CLEAN_POD_POLICY) -> RunPolicy:
    """The typed run policy of a *valid* spec, defaults applied (the framework's ``cleanPodPolicy`` default: MXJob's
    ``All`` unless given)."""
    merged, _ = merged_run_policy(spec)
    sp = merged.get("schedulingPolicy")
    scheduling = None
    if isinstance(sp, dict):
        scheduling = SchedulingPolicy(
            min_available=sp.get("minAvailable"), queue=sp.get("queue") or "",
            min_resources=MappingProxyType(dict(sp.get("minResources") or {})),
            priority_class=sp.get("priorityClass") or "",
            schedule_timeout_seconds=sp.get("scheduleTimeoutSeconds"))
    return RunPolicy(
        clean_pod_policy=merged.get("cleanPodPolicy") or default_clean_pod_policy,
        ttl_seconds_after_finished=merged.get("ttlSecondsAfterFinished"),
        active_deadline_seconds=merged.get("activeDeadlineSeconds"),
        backoff_limit=merged.get("backoffLimit"),
        scheduling_policy=scheduling,
        suspend=bool(merged.get("suspend", False)),
        managed_by=merged.get("managedBy"),
    )


# --- validation ------------------------------------------------------------------------------------------

def _scheduling_policy_errors(value: Any, path: str) -> list[FieldError]:
    if not isinstance(value, dict):
        return checks.object_errors(value, path)
    errs: list[FieldError] = []
    for key in ("minAvailable", "scheduleTimeoutSeconds"):
        if value.get(key) is not None:
            errs += checks.non_negative_errors(value[key], fe.child(path, key))
    for key in ("queue", "priorityClass"):
        if value.get(key) is not None:
            errs += checks.string_errors(value[key], fe.child(path, key))
    resources = value.get("minResources")
    if resources is not None:
        rpath = fe.child(path, "minResources")
        if not isinstance(resources, dict):
            errs += checks.object_errors(resources, rpath)
        else:
            errs += [fe.invalid(fe.key_child(rpath, name), q, QUANTITY_HINT)
                     for name, q in resources.items() if not is_quantity(q)]
    return errs


def _values_errors(policy: dict, path: str) -> list[FieldError]:
    """Each field's value, checked where the user wrote it."""
    errs: list[FieldError] = []
    for key, value in policy.items():
        at = fe.child(path, key)
        if key == "cleanPodPolicy":
            errs += checks.enum_errors(value, at, CLEAN_POD_POLICIES)
        elif key in _NON_NEGATIVE:
            errs += checks.non_negative_errors(value, at)
        elif key == "schedulingPolicy":
            errs += _scheduling_policy_errors(value, at)
        elif key == "suspend":
            errs += checks.bool_errors(value, at)
        elif key == "managedBy":
            errs += _managed_by_errors(value, at)
    return errs


def _managed_by_errors(value: Any, path: str) -> list[FieldError]:
    """A string the hand-over rule accepts (core/framework.py: batch/v1 Job's ``managedBy`` format)."""
    return checks.string_errors(value, path) or managed_by.value_errors(value, path)


def run_policy_errors(spec: Mapping[str, Any]) -> list[FieldError]:
    """Every problem with the run policy: bad values in either place, then conflicts between them."""
    nested_raw = spec.get("runPolicy")
    errs = checks.object_errors(nested_raw, NESTED_PATH) if nested_raw is not None else []
    inline, nested = _places(spec)
    errs += _values_errors(inline, INLINE_PATH) + _values_errors(nested, NESTED_PATH)
    return errs + merged_run_policy(spec)[1]
