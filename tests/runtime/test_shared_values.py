"""Shared values of cached objects: equal to what was given, held once, and dropped once no object uses them."""

from __future__ import annotations

import json

from mxjob_controller.runtime.shared_values import SharedValues, interned


def test_interned_copies_equal_data_with_shared_strings() -> None:
    a = json.loads('{"metadata": {"namespace": "ns-interned"}, "items": [{"k": "v-interned", "n": 1, "b": true}]}')
    b = json.loads('{"metadata": {"namespace": "ns-interned"}, "items": [{"k": "v-interned", "n": 1, "b": true}]}')
    assert a["metadata"]["namespace"] is not b["metadata"]["namespace"]
    ia, ib = interned(a), interned(b)
    assert ia == a and ib == b
    assert ia is not a and ia["items"] is not a["items"]
    assert ia["metadata"]["namespace"] is ib["metadata"]["namespace"]
    assert ia["items"][0]["k"] is ib["items"][0]["k"]


def test_equal_flat_dicts_and_lists_are_one_object() -> None:
    shared = SharedValues()
    labels = [json.loads('{"job-name": "j", "replica-index": "0"}') for _ in range(2)]
    one, two = shared.flat_dict(labels[0]), shared.flat_dict(labels[1])
    assert one == labels[0] and one is two
    assert shared.flat_dict({"job-name": "j", "replica-index": "1"}) is not one
    flag = shared.flat_dict({"x": True})
    assert shared.flat_dict({"x": 1}) is not flag and type(shared.flat_dict({"x": 1})["x"]) is int
    owners = [json.loads('[{"kind": "MXJob", "uid": "u-1", "controller": true}]') for _ in range(2)]
    assert shared.dict_list(owners[0]) is shared.dict_list(owners[1])
    assert shared.dict_list(owners[0]) == owners[0]
    assert shared.dict_list(json.loads('[{"kind": "MXJob", "uid": "u-1", "controller": false}]')) != owners[0]


def test_nested_values_and_non_dicts_pass_through_equal() -> None:
    shared = SharedValues()
    nested = {"a": {"b": "c"}}
    assert shared.flat_dict(nested) == nested
    assert shared.dict_list([{"a": ["x"]}]) == [{"a": ["x"]}]
    assert shared.flat_dict(None) is None and shared.dict_list("x") == "x"
    assert len(shared) == 0


def test_entries_no_object_uses_are_swept() -> None:
    shared = SharedValues()
    kept = [shared.flat_dict({"i": str(i)}) for i in range(10)]
    for i in range(SharedValues.MIN_SWEEP * 3):
        shared.flat_dict({"gone": str(i)})          # nobody keeps these
    assert len(shared) < SharedValues.MIN_SWEEP * 2
    assert all(shared.flat_dict({"i": str(i)}) is kept[i] for i in range(10))


def test_equal_large_subtrees_are_held_once_and_small_or_different_ones_are_not():
    shared = SharedValues()
    template = {"containers": [{"name": "mxnet", "image": "img", "command": ["python", "train.py"] * 20}]}
    a = shared.tree({"replicas": 1, "template": json.loads(json.dumps(template))})
    b = shared.tree({"replicas": 2, "template": json.loads(json.dumps(template))})
    assert a["template"] is b["template"] and a["template"] == template
    assert a["replicas"] == 1 and b["replicas"] == 2 and a is not b   # the small parents stay apart
    other = shared.tree({"template": {"containers": [{**template["containers"][0], "image": "other"}]}})
    assert other["template"] is not a["template"] and other["template"]["containers"][0]["image"] == "other"
    assert shared.tree({"x": True}) == {"x": True} and shared.tree([1.0]) == [1.0]


def test_a_subtree_is_shared_from_exactly_min_bytes_of_its_compact_json() -> None:
    shared = SharedValues()
    for value in ({"k": "é" * 3, "n": [1, 2.5, None, False]}, ["x" * 10, {"a": {"b": True}}], {}):
        size = len(json.dumps(value, separators=(",", ":")))   # ensure_ascii: é is \u00e9, 6 bytes
        below = [shared.tree(json.loads(json.dumps(value)), min_bytes=size + 1) for _ in range(2)]
        at = [shared.tree(json.loads(json.dumps(value)), min_bytes=size) for _ in range(2)]
        assert below[0] == below[1] == at[0] == value
        assert below[0] is not below[1] and at[0] is at[1]


def test_shared_subtrees_keep_json_types_apart() -> None:
    shared = SharedValues()
    flags, ones, floats = ({"v": [x] * 100} for x in (True, 1, 1.0))
    got = [shared.tree(v) for v in (flags, ones, floats)]
    assert [type(g["v"][0]) for g in got] == [bool, int, float]
    assert got[0]["v"] is not got[1]["v"] and got[1]["v"] is not got[2]["v"]
    assert shared.flat_dict({"x": 1.0}) is not shared.flat_dict({"x": 1})
    assert type(shared.flat_dict({"x": 1.0})["x"]) is float


def test_values_that_are_not_json_are_copied_equal_and_never_shared() -> None:
    shared = SharedValues()
    for value in ({"nan": [float("nan")] * 60}, {1: "x" * 300}, {"t": [("a",) * 100]}):
        a, b = shared.tree(value, min_bytes=0), shared.tree(value, min_bytes=0)
        assert a is not b and repr(a) == repr(value)
    assert len(shared) == 0
