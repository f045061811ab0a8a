"""v1 → v1alpha1: the status (mxnet/v1alpha1/to_v1alpha1.py) the old clients read, derived from the v1 conditions
and counts, an invalid spec's reason, and the types v1alpha1 lacks."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core import job_status as validation_failure
from mxjob_controller.mxnet.api import validate_job
from mxjob_controller.mxnet.v1alpha1 import (
    to_v1,
    to_v1alpha1,
    validate,
)
from tests.mxnet.v1alpha1.support import (
    NOW,
    R,
    alpha_job,
    cond,
    entry,
    pruned_fields,
    replica,
    v1_job,
    with_status,
)

# --- v1 → v1alpha1: the status (checklist 14-16) --------------------------------------------------------------------

def counts(scheduler: dict[str, int], server: dict[str, int], worker: dict[str, int]) -> dict[str, Any]:
    return {"Scheduler": scheduler, "Server": server, "Worker": worker}


def rs(rtype: str, state: str, **states: int) -> dict[str, Any]:
    return {"mx_replica_type": rtype, "state": state, "ReplicasStates": states}


STATUSES: list[tuple[str, dict[str, Any] | None, dict[str, Any]]] = [
    ("no status yet", None,
     {"phase": "Creating", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running"), rs("SCHEDULER", "Running"), rs("SERVER", "Running")]}),
    ("created", {"conditions": [cond("Created")]},
     {"phase": "Creating", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running"), rs("SCHEDULER", "Running"), rs("SERVER", "Running")]}),
    ("running", {"conditions": [cond("Created"), cond("Running")],
                 "replicaStatuses": counts({"active": 1}, {"active": 1}, {"active": 2})},
     {"phase": "Running", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running", Running=2), rs("SCHEDULER", "Running", Running=1),
                          rs("SERVER", "Running", Running=1)]}),
    ("restarting, a worker failed", {"conditions": [cond("Created"), cond("Restarting")],
                                     "replicaStatuses": counts({"active": 1}, {"active": 1},
                                                               {"active": 1, "failed": 1})},
     {"phase": "Running", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Failed", Running=1, Failed=1), rs("SCHEDULER", "Running", Running=1),
                          rs("SERVER", "Running", Running=1)]}),
    ("only the older count map", {"conditions": [cond("Running")],
                                  "mxReplicaStatuses": counts({"active": 1}, {}, {"succeeded": 1, "active": 1})},
     {"phase": "Running", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running", Running=1, Succeeded=1), rs("SCHEDULER", "Running", Running=1),
                          rs("SERVER", "Running")]}),
    ("succeeded", {"conditions": [cond("Created"), cond("Running", "False"), cond("Succeeded")],
                   "replicaStatuses": counts({"succeeded": 1}, {"active": 1}, {"succeeded": 2})},
     {"phase": "Done", "state": "Succeeded", "reason": "",
      "replicaStatuses": [rs("WORKER", "Succeeded", Succeeded=2), rs("SCHEDULER", "Succeeded", Succeeded=1),
                          rs("SERVER", "Running", Running=1)]}),
    ("some workers succeeded", {"conditions": [cond("Running")],
                                "replicaStatuses": counts({"active": 1}, {"active": 1}, {"succeeded": 1})},
     {"phase": "Running", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running", Succeeded=1), rs("SCHEDULER", "Running", Running=1),
                          rs("SERVER", "Running", Running=1)]}),
    ("failed", {"conditions": [cond("Created"), cond("Running", "False"),
                               cond("Failed", message="MXJob mxjob has failed because 1 Scheduler replica(s) failed.")],
                "replicaStatuses": counts({"failed": 1}, {}, {})},
     {"phase": "Done", "state": "Failed", "reason": "MXJob mxjob has failed because 1 Scheduler replica(s) failed.",
      "replicaStatuses": [rs("WORKER", "Running"), rs("SCHEDULER", "Failed", Failed=1), rs("SERVER", "Running")]}),
    ("suspended", {"conditions": [cond("Created"), cond("Suspended", message="MXJob mxjob is suspended.")]},
     {"phase": "Creating", "state": "Unknown", "reason": "MXJob mxjob is suspended.",
      "replicaStatuses": [rs("WORKER", "Running"), rs("SCHEDULER", "Running"), rs("SERVER", "Running")]}),
]


@pytest.mark.parametrize(("case", "status", "expected"), STATUSES, ids=[c[0] for c in STATUSES])
def test_status_is_derived_from_v1(case: str, status: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    """14, 15: phase/state from the conditions; replicaStatuses in the spec's list order, from the counts."""
    job = with_status(status)
    before = copy.deepcopy(job)
    derived = to_v1alpha1(job)["status"]
    assert derived.pop("v1", None) == status, "the v1 status rides along, for the way back"
    assert derived == expected
    assert job == before
    assert pruned_fields(to_v1alpha1(job)) == []


def test_invalid_spec_shows_failed_with_the_reason() -> None:
    """16: an invalid v1alpha1 spec stored anyway is marked invalid by the v1 controller; read as v1alpha1 it is
    ``Failed/Failed`` with ``reason: "invalid job spec: ..."``, its paths pointing into the list."""
    job = alpha_job(entry("SCHEDULER", 2, PsRootPort=9000), entry("SERVER"), entry("WORKER"))
    assert [e.field for e in validate(job)] == [f"{R}[0].replicas"]
    v1 = to_v1(job)
    errors = validate_job(v1)
    assert [e.field for e in errors] == ["spec.mxReplicaSpecs.Scheduler.replicas"]
    v1["status"] = validation_failure.invalid_status(None, kind="MXJob", name="mxjob", errors=errors, now=NOW)
    status = to_v1alpha1(v1)["status"]
    assert (status["phase"], status["state"]) == ("Failed", "Failed")
    assert status["reason"] == (f"invalid job spec: {R}[0].replicas: Invalid value: 2: must be 1: a job has "
                                "exactly one Scheduler")


def test_status_of_a_job_with_types_v1alpha1_lacks() -> None:
    v1 = v1_job({"TunerTracker": replica(), "TunerServer": replica(), "Tuner": replica()}, jobMode="MXTune")
    v1["status"] = {"conditions": [cond("Running")], "replicaStatuses": {"Tuner": {"active": 1}}}
    assert to_v1alpha1(v1)["status"] == {"phase": "Running", "state": "Running", "reason": "", "replicaStatuses": [],
                                         "v1": v1["status"]}
