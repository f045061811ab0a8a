"""Leases: the durations and counters ``ValidateLeaseSpec`` checks (leader election relies on them)."""

from __future__ import annotations

from mxjob_controller.kube.field_errors import FieldError, child, invalid
from mxjob_controller.kube.schema.rules import rule

LEASE_SPEC = "io.k8s.api.coordination.v1.LeaseSpec"


@rule(LEASE_SPEC)
def lease_spec(spec: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    duration = spec.get("leaseDurationSeconds")
    if type(duration) is int and duration <= 0:
        errs.append(invalid(child(path, "leaseDurationSeconds"), duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if type(transitions) is int and transitions < 0:
        errs.append(invalid(child(path, "leaseTransitions"), transitions, "must be greater than or equal to 0"))
    return errs
