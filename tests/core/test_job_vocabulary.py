"""Job conditions as pure functions, table-tested against kubeflow/common's rules and the fixes we add."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core import job_vocabulary as c

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
