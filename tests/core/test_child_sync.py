"""Classifying a job's children (core/child_sync.py), table-tested: by (type, index) under the controller
reference, missing indices, the excess (duplicates, out of range, unknown types) and legacy labels."""

from __future__ import annotations

import copy

import pytest

from mxjob_controller.core.child_sync import DUPLICATE, OUT_OF_RANGE, UNKNOWN_TYPE, classify
from tests.core.bodies import UID, child, names, ref

# --- classification --------------------------------------------------------------------------------------

REPLICAS = {"Scheduler": 1, "Server": 2, "Worker": 4}


def test_a_complete_set_is_all_kept() -> None:
    objs = [child(f"j-{t.lower()}-{i}", t.lower(), str(i)) for t, n in REPLICAS.items() for i in range(n)]
    result = classify(objs, UID, "j", REPLICAS)
    assert {t: sorted(r.kept) for t, r in result.by_type.items()} == {
        "Scheduler": [0], "Server": [0, 1], "Worker": [0, 1, 2, 3]}
    assert all(not r.missing for r in result.by_type.values()) and not result.excess


def test_missing_indices_are_listed_per_type() -> None:
    objs = [child("j-worker-1", "worker", "1"), child("j-server-0", "server", "0")]
    result = classify(objs, UID, "j", REPLICAS)
    assert {t: r.missing for t, r in result.by_type.items()} == {
        "Scheduler": (0,), "Server": (1,), "Worker": (0, 2, 3)}


def test_out_of_range_duplicates_and_unknown_types_are_excess() -> None:
    objs = [child("j-worker-0", "worker", "0"), child("j-worker-4", "worker", "4"),
            child("copy-of-worker-0", "worker", "0", created="2023-01-01T00:00:00Z"),
            child("j-tuner-0", "tuner", "0"), child("j-odd", None, None)]
    result = classify(objs, UID, "j", {"Worker": 4})
    assert names(result.by_type["Worker"].kept.values()) == ["j-worker-0"]   # the expected name wins over age
    assert [(names([e.obj])[0], e.why) for e in result.excess] == [
        ("copy-of-worker-0", DUPLICATE), ("j-worker-4", OUT_OF_RANGE), ("j-tuner-0", UNKNOWN_TYPE)]
    assert names(result.unindexed) == ["j-odd"]


def test_among_duplicates_a_live_one_beats_one_being_deleted_then_the_oldest() -> None:
    objs = [child("b", "worker", "0", created="2024-01-02T00:00:00Z"),
            child("a", "worker", "0", created="2024-01-03T00:00:00Z", deleting=True),
            child("c", "worker", "0", created="2024-01-01T00:00:00Z", deleting=True)]
    result = classify(objs, UID, "j", {"Worker": 1})
    assert names(result.by_type["Worker"].kept.values()) == ["b"]
    assert sorted(names(e.obj for e in result.excess)) == ["a", "c"]


@pytest.mark.parametrize("owner", [ref(uid="another-job"), ref(controller=False), ref(kind="TFJob", uid="tf")])
def test_children_the_job_does_not_control_are_invisible(owner: dict) -> None:
    objs = [child("j-worker-0", "worker", "0", owner=owner), child("j-worker-9", "worker", "9", owner=owner)]
    result = classify(objs, UID, "j", {"Worker": 1})
    assert result.by_type["Worker"].missing == (0,) and not result.excess and not result.unindexed


def test_legacy_labels_classify_like_new_ones_and_repeats_count_once() -> None:
    legacy = child("j-worker-0", "worker", "0", legacy=True)
    result = classify([legacy, copy.deepcopy(legacy)], UID, "j", {"Worker": 1})
    assert names(result.by_type["Worker"].kept.values()) == ["j-worker-0"] and not result.excess
