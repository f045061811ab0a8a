"""JSON patch (RFC 6902) as kube-apiserver's json-patch v4 applies it: all six operations, pointer escaping,
the library's leniencies, and the failures kube turns into 400, 413 and 422."""

from __future__ import annotations

import pytest

from mxjob_controller.local.apiserver.patch.json_patch import (
    MAX_OPERATIONS,
    JSONPatchDecodeError,
    JSONPatchError,
    TooManyOperationsError,
    apply_json_patch,
    json_equal,
    pointer,
    unescape_pointer_token,
)

DOC = {"metadata": {"name": "n", "labels": {"a/b": "1", "c~d": "2"}}, "spec": {"list": [1, 2, 3], "flag": True}}

APPLIES = [
    ("add a member", [{"op": "add", "path": "/spec/new", "value": {"x": 1}}],
     lambda d: d["spec"]["new"] == {"x": 1}),
    ("add replaces an existing member", [{"op": "add", "path": "/metadata/name", "value": "m"}],
     lambda d: d["metadata"]["name"] == "m"),
    ("add inserts into an array", [{"op": "add", "path": "/spec/list/1", "value": 9}],
     lambda d: d["spec"]["list"] == [1, 9, 2, 3]),
    ("add with - appends", [{"op": "add", "path": "/spec/list/-", "value": 4}],
     lambda d: d["spec"]["list"] == [1, 2, 3, 4]),
    ("add at the array's length appends", [{"op": "add", "path": "/spec/list/3", "value": 4}],
     lambda d: d["spec"]["list"] == [1, 2, 3, 4]),
    ("add at -1 appends (the library's quirk)", [{"op": "add", "path": "/spec/list/-1", "value": 4}],
     lambda d: d["spec"]["list"] == [1, 2, 3, 4]),
    ("add without a value writes null", [{"op": "add", "path": "/spec/empty"}],
     lambda d: "empty" in d["spec"] and d["spec"]["empty"] is None),
    ("~1 and ~0 address escaped keys", [{"op": "replace", "path": "/metadata/labels/a~1b", "value": "x"},
                                         {"op": "remove", "path": "/metadata/labels/c~0d"}],
     lambda d: d["metadata"]["labels"] == {"a/b": "x"}),
    ("remove a member", [{"op": "remove", "path": "/spec/flag"}], lambda d: "flag" not in d["spec"]),
    ("remove from an array, negative index from the end", [{"op": "remove", "path": "/spec/list/-1"}],
     lambda d: d["spec"]["list"] == [1, 2]),
    ("replace an array element", [{"op": "replace", "path": "/spec/list/0", "value": "z"}],
     lambda d: d["spec"]["list"] == ["z", 2, 3]),
    ("replace of a missing member adds it (the library's quirk)",
     [{"op": "replace", "path": "/spec/missing", "value": 1}], lambda d: d["spec"]["missing"] == 1),
    ("move", [{"op": "move", "from": "/metadata/labels", "path": "/spec/labels"}],
     lambda d: "labels" not in d["metadata"] and d["spec"]["labels"] == {"a/b": "1", "c~d": "2"}),
    ("copy is deep", [{"op": "copy", "from": "/spec/list", "path": "/spec/copy"},
                      {"op": "add", "path": "/spec/copy/-", "value": 4}],
     lambda d: d["spec"]["list"] == [1, 2, 3] and d["spec"]["copy"] == [1, 2, 3, 4]),
    ("test passes, then the next operation applies", [{"op": "test", "path": "/spec/list", "value": [1, 2, 3]},
                                                       {"op": "remove", "path": "/spec/list"}],
     lambda d: "list" not in d["spec"]),
    ("test of a missing member against null passes", [{"op": "test", "path": "/spec/none", "value": None}],
     lambda d: d == DOC),
    ("test of the whole document", [{"op": "test", "path": "", "value": DOC}], lambda d: d == DOC),
    ("replace the whole document", [{"op": "replace", "path": "", "value": {"kind": "X"}}],
     lambda d: d == {"kind": "X"}),
    ("an empty patch changes nothing", [], lambda d: d == DOC),
    ("null is an empty patch", None, lambda d: d == DOC),
]


@pytest.mark.parametrize(("ops", "check"), [pytest.param(o, c, id=d) for d, o, c in APPLIES])
def test_operations_apply(ops, check):
    assert check(apply_json_patch(DOC, ops))
    assert DOC["spec"]["list"] == [1, 2, 3]  # the input is never modified


FAILS = [
    ("test of a different value", [{"op": "test", "path": "/metadata/name", "value": "other"}],
     "testing value /metadata/name failed: test failed"),
    ("test of 1 against 1.0", [{"op": "test", "path": "/spec/list/0", "value": 1.0}], "test failed"),
    ("test of true against 1", [{"op": "test", "path": "/spec/flag", "value": 1}], "test failed"),
    ("test of a missing member against a value", [{"op": "test", "path": "/spec/none", "value": 1}],
     "test failed"),
    ("remove of a missing member", [{"op": "remove", "path": "/spec/none"}],
     "error in remove for path: '/spec/none': Unable to remove nonexistent key: none: missing value"),
    ("add under a missing parent", [{"op": "add", "path": "/nope/x", "value": 1}],
     'add operation does not apply: doc is missing path: "/nope/x": missing value'),
    ("add past the end of an array", [{"op": "add", "path": "/spec/list/5", "value": 1}],
     "Unable to access invalid index: 5"),
    ("add at a non-numeric array index", [{"op": "add", "path": "/spec/list/x", "value": 1}],
     "value was not a proper array index: 'x'"),
    ("replace past the end of an array", [{"op": "replace", "path": "/spec/list/3", "value": 1}],
     "replace operation does not apply: doc is missing key: /spec/list/3: missing value"),
    ("move from a missing member", [{"op": "move", "from": "/spec/none", "path": "/spec/x"}],
     "Unable to remove nonexistent key: none"),
    ("copy to a missing parent", [{"op": "copy", "from": "/spec/list", "path": "/no/where"}],
     "copy operation does not apply: doc is missing destination path: /no/where"),
    ("an operation without a path", [{"op": "remove"}], "remove operation failed to decode path"),
    ("a path without a leading slash is not found", [{"op": "add", "path": "", "value": 1}],
     "doc is missing path"),
    ("an unknown operation", [{"op": "merge", "path": "/spec"}], "Unexpected kind: merge"),
    ("an operation without op", [{"path": "/spec"}], "Unexpected kind: unknown"),
    ("a failure undoes earlier operations", [{"op": "remove", "path": "/spec/flag"},
                                             {"op": "test", "path": "/spec/flag", "value": True}], "test failed"),
]


@pytest.mark.parametrize(("ops", "message"), [pytest.param(o, m, id=d) for d, o, m in FAILS])
def test_operations_that_do_not_apply(ops, message):
    with pytest.raises(JSONPatchError) as info:
        apply_json_patch(DOC, ops)
    assert message in str(info.value)
    assert DOC["spec"]["flag"] is True


@pytest.mark.parametrize(("ops", "message"), [
    ({"op": "add", "path": "/x", "value": 1}, "cannot unmarshal object into Go value of type []handlers.jsonPatchOp"),
    ("[]", "cannot unmarshal string into Go value of type []handlers.jsonPatchOp"),
    ([1], "cannot unmarshal number into Go value of type handlers.jsonPatchOp"),
    ([{"op": 5, "path": "/x"}], "cannot unmarshal number into Go struct field jsonPatchOp.op of type string"),
    ([{"op": "add", "path": ["x"]}], "cannot unmarshal array into Go struct field jsonPatchOp.path of type string"),
])
def test_patches_that_do_not_decode(ops, message):
    with pytest.raises(JSONPatchDecodeError) as info:
        apply_json_patch(DOC, ops)
    assert message in str(info.value)


def test_more_than_ten_thousand_operations_are_refused():
    with pytest.raises(TooManyOperationsError) as info:
        apply_json_patch(DOC, [{"op": "test", "path": "/spec/flag", "value": True}] * (MAX_OPERATIONS + 1))
    assert str(info.value) == "The allowed maximum operations in a JSON patch is 10000, got 10001"


def test_pointer_escaping_round_trips():
    assert pointer("metadata", "annotations", "a/b~c") == "/metadata/annotations/a~1b~0c"
    assert unescape_pointer_token("a~1b~0c") == "a/b~c"
    assert unescape_pointer_token("~01") == "~1"  # ~0 is decoded last, as RFC 6901 requires
    assert pointer("spec", "list", 0) == "/spec/list/0"


def test_json_equality_is_by_type_and_value():
    assert json_equal({"a": [1, "x", None]}, {"a": [1, "x", None]})
    assert not json_equal(1, 1.0)
    assert not json_equal(True, 1)
    assert not json_equal({"a": 1}, {"a": 1, "b": None})
