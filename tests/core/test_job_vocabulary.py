"""The job vocabulary (core/job_vocabulary.py) as pure functions, table-tested: conditions against kubeflow/common's
rules and the fixes we add, children's names and labels, and ownership by the controller reference."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core import job_vocabulary as c
from tests.core.bodies import UID, child, ref

T0, T1 = "2024-01-01T00:00:00Z", "2024-01-01T00:05:00Z"


def cond(ctype: str, status: str = "True", reason: str = "", message: str = "", at: str = T0) -> dict[str, Any]:
    return {"type": ctype, "status": status, "reason": reason or f"MXJob{ctype}", "message": message or ctype,
            "lastUpdateTime": at, "lastTransitionTime": at}


def types(conditions: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(x["type"], x["status"]) for x in conditions]


def test_a_new_condition_is_appended_last_with_both_times_now() -> None:
    out = c.set_condition([cond("Created")], "Running", "True", "MXJobRunning", "MXJob j is running.", T1)
    assert types(out) == [("Created", "True"), ("Running", "True")]
    assert out[-1] == {"type": "Running", "status": "True", "reason": "MXJobRunning",
                       "message": "MXJob j is running.", "lastUpdateTime": T1, "lastTransitionTime": T1}


def test_same_status_and_reason_touches_nothing_not_even_the_message() -> None:
    before = [cond("Created"), cond("Running", message="old")]
    assert c.set_condition(before, "Running", "True", "MXJobRunning", "new message", T1) == before


def test_same_status_with_another_reason_keeps_the_transition_time() -> None:
    out = c.set_condition([cond("Running"), cond("Created")], "Running", "True", "OtherReason", "m", T1)
    assert types(out) == [("Created", "True"), ("Running", "True")]
    assert (out[-1]["reason"], out[-1]["lastUpdateTime"], out[-1]["lastTransitionTime"]) == ("OtherReason", T1, T0)


def test_a_status_change_moves_the_transition_time() -> None:
    out = c.set_condition([cond("Suspended")], "Suspended", "False", "MXJobResumed", "m", T1)
    assert (out[-1]["status"], out[-1]["lastTransitionTime"]) == ("False", T1)


@pytest.mark.parametrize(("existing", "new", "expected"), [
    ("Restarting", "Running", [("Created", "True"), ("Running", "True")]),
    ("Running", "Restarting", [("Created", "True"), ("Restarting", "True")]),
])
def test_running_and_restarting_exclude_each_other(existing: str, new: str, expected: list) -> None:
    out = c.set_condition([cond("Created"), cond(existing)], new, "True", f"MXJob{new}", "m", T1)
    assert types(out) == expected


@pytest.mark.parametrize("final", ["Succeeded", "Failed"])
def test_finishing_turns_running_false_with_its_transition(final: str) -> None:
    out = c.set_condition([cond("Created"), cond("Running")], final, "True", f"MXJob{final}", "done", T1)
    assert types(out) == [("Created", "True"), ("Running", "False"), (final, "True")]
    running = c.find(out, "Running")
    assert running is not None and running["lastTransitionTime"] == T1 and running["reason"] == "MXJobRunning"


@pytest.mark.parametrize("final", ["Succeeded", "Failed"])
@pytest.mark.parametrize("attempt", [("Running", "True"), ("Restarting", "True"), ("Failed", "True"),
                                     ("Succeeded", "True"), ("Created", "False")])
def test_conditions_are_frozen_once_finished(final: str, attempt: tuple[str, str]) -> None:
    finished = [cond("Created"), cond("Running", "False"), cond(final)]
    out = c.set_condition(finished, attempt[0], attempt[1], "Whatever", "m", T1)
    assert out == finished   # training-operator #1650: Running came back after Succeeded
    assert c.set_message(finished, "Created", "changed", T1) == finished


def test_inputs_are_never_modified() -> None:
    before = [cond("Created"), cond("Running")]
    snapshot = copy.deepcopy(before)
    out = c.set_condition(before, "Succeeded", "True", "MXJobSucceeded", "m", T1)
    out[0]["message"] = "mutated"
    c.set_message(before, "Created", "other", T1)
    assert before == snapshot


def test_set_message_changes_message_and_update_time_only() -> None:
    out = c.set_message([cond("Created")], "Created", "blocked", T1)
    assert out[0]["message"] == "blocked"
    assert (out[0]["lastUpdateTime"], out[0]["lastTransitionTime"]) == (T1, T0)
    assert c.set_message(out, "Created", "blocked", "later") == out


@pytest.mark.parametrize(("before", "after", "expected"), [
    ([], [cond("Created")], ["Created"]),
    ([cond("Created")], [cond("Created"), cond("Running")], ["Running"]),
    ([cond("Created"), cond("Running")], [cond("Created"), cond("Running", "False"), cond("Succeeded")],
     ["Succeeded"]),
    ([cond("Running", "False")], [cond("Running")], ["Running"]),
    ([cond("Created"), cond("Running")], [cond("Created"), cond("Running")], []),
])
def test_became_true(before: list, after: list, expected: list) -> None:
    assert c.became_true(before, after) == expected


def test_queries() -> None:
    conditions = [cond("Created"), cond("Running", "False"), cond("Failed")]
    assert c.is_true(conditions, "Failed") and not c.is_true(conditions, "Running")
    assert c.is_finished(conditions) and not c.is_finished(conditions[:2]) and not c.is_finished(None)
    assert c.find(conditions, "Suspended") is None


# --- names and labels ------------------------------------------------------------------------------------

def test_child_names() -> None:
    assert c.child_name("j", "Worker", 3) == "j-worker-3"
    assert c.child_name("a/b", "TunerServer", 0) == "a-b-tunerserver-0"


def test_replica_labels_carry_new_and_legacy_keys_and_the_master_role() -> None:
    assert c.replica_labels("mxjob-controller", "kubeflow.org", "j", "Server", 1, master=True) == {
        "training.kubeflow.org/operator-name": "mxjob-controller", "training.kubeflow.org/job-name": "j",
        "training.kubeflow.org/replica-type": "server", "training.kubeflow.org/replica-index": "1",
        "training.kubeflow.org/job-role": "master", "group-name": "kubeflow.org", "job-name": "j",
        "replica-type": "server", "replica-index": "1"}
    assert c.JOB_ROLE not in c.replica_labels("op", "g", "j", "Worker", 0)


@pytest.mark.parametrize(("labels", "expected"), [
    ({c.REPLICA_TYPE: "worker", c.REPLICA_INDEX: "2"}, ("worker", 2)),
    ({c.LEGACY_REPLICA_TYPE: "Worker", c.LEGACY_REPLICA_INDEX: "0"}, ("worker", 0)),
    ({c.REPLICA_TYPE: "server", c.REPLICA_INDEX: "1", c.LEGACY_REPLICA_TYPE: "worker",
      c.LEGACY_REPLICA_INDEX: "5"}, ("server", 1)),
    ({c.REPLICA_TYPE: "worker"}, None),
    ({c.REPLICA_TYPE: "worker", c.REPLICA_INDEX: "-1"}, None),
    ({c.REPLICA_TYPE: "worker", c.REPLICA_INDEX: "one"}, None),
    ({c.REPLICA_TYPE: "worker", c.REPLICA_INDEX: "\u0661"}, None),   # a digit, but not an ASCII one
    ({}, None), (None, None),
])
def test_replica_of(labels: dict | None, expected: tuple | None) -> None:
    assert c.replica_of(labels) == expected


def test_selectors_are_disjoint() -> None:
    assert c.owned_selector("mxjob-controller") == "training.kubeflow.org/operator-name=mxjob-controller"
    assert c.legacy_selector("kubeflow.org") == "group-name=kubeflow.org,!training.kubeflow.org/operator-name"
    assert c.needs_adoption({"group-name": "kubeflow.org"}) and not c.needs_adoption({c.OPERATOR_NAME: "x"})
    assert c.missing_labels({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == {"b": "3", "c": "4"}


# --- ownership -------------------------------------------------------------------------------------------

def test_only_the_controller_reference_counts() -> None:
    owned = child("p", "worker", "0")
    assert c.controller_uid(owned) == UID and c.is_controlled_by(owned, UID)
    not_controller = child("p", "worker", "0", owner=ref(controller=False))
    assert c.controller_uid(not_controller) is None and not c.is_controlled_by(not_controller, UID)
    assert not c.is_controlled_by(owned, "") and not c.is_controlled_by(owned, "other")
    assert c.controller_reference("kubeflow.org/v1", "MXJob", "j", UID) == {
        "apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "j", "uid": UID, "controller": True,
        "blockOwnerDeletion": True}
    assert (c.api_group("kubeflow.org/v1"), c.api_group("v1")) == ("kubeflow.org", "")
