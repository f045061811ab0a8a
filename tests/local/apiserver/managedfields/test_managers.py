"""Field ownership as structured-merge-diff computes it (local/apiserver/managedfields/managers.py), as pure
tables: what an applied configuration owns (ToFieldSet), create, update and status writes, apply with its conflicts
and removals, and managedFields decoded with kube's errors.

Expected FieldsV1 documents and messages are kube's: worked from structured-merge-diff v4.4 and apimachinery 0.32
(``typed/tofieldset.go``, ``compare.go``, ``merge.go``, ``merge/update.go``, ``internal/conflict.go``), several
checked against kubernetes' own apply integration test.
"""

from __future__ import annotations

import json

import pytest

from mxjob_controller.local.apiserver.managedfields import fieldpath as fp
from mxjob_controller.local.apiserver.managedfields import managers as mf
from mxjob_controller.local.apiserver.managedfields import schema, typed
from mxjob_controller.local.apiserver.managedfields.managers import APPLY, UPDATE, Entry

POD = schema.builtin_type("", "v1", "Pod")
CONFIGMAP = schema.builtin_type("", "v1", "ConfigMap")
DEPLOYMENT = schema.builtin_type("apps", "v1", "Deployment")
NOW = "2026-01-02T03:04:05Z"


def pod(*containers: dict, **meta) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", **meta},
            "spec": {"containers": list(containers)}}


def cm(data: dict | None = None, **meta) -> dict:
    out: dict = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", **meta}}
    if data is not None:
        out["data"] = data
    return out


# --- ToFieldSet: what an applied configuration owns ---------------------------------------------------------------

@pytest.mark.parametrize("config, fields", [
    # a declared field with content gets no "."; map keys and empty maps do
    (cm({"a": "b"}, labels={"app": "x"}), {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}),
    (cm({}), {"f:data": {}}),
    # list items own themselves; a port key is completed with its protocol default
    (pod({"name": "c", "image": "i", "ports": [{"containerPort": 80}]}),
     {"f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}, "f:ports": {
         'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}}),
    # a set list owns its values; an atomic list is one leaf
    (pod({"name": "c", "args": ["a", "b"]}, finalizers=["x/y"]),
     {"f:metadata": {"f:finalizers": {'v:"x/y"': {}}},
      "f:spec": {"f:containers": {'k:{"name":"c"}': {".": {}, "f:args": {}, "f:name": {}}}}}),
])
def test_applied_field_sets(config, fields):
    t = POD if config["kind"] == "Pod" else CONFIGMAP
    _, managers = mf.apply({}, {}, config, t, Entry("m", APPLY, "v1"), NOW, False)
    assert mf.encode(managers)[0]["fieldsV1"] == fields


@pytest.mark.parametrize("config, message", [
    (cm({"a": "b"}) | {"dataa": {}}, ".dataa: field not declared in schema"),
    (pod({"name": "c"}, labels={"a": "b"}) | {"spec": {"containers": [{"image": "x"}]}},
     '.spec.containers: associative list with keys has an element that omits key field "name" (and doesn\'t have '
     "default value)"),
    (pod({"name": "c"}, {"name": "c"}), '.spec.containers: duplicate entries for key [name="c"]'),
])
def test_configurations_the_schema_cannot_hold(config, message):
    with pytest.raises(typed.FieldSetError) as e:
        mf.apply({}, {}, config, POD if config["kind"] == "Pod" else CONFIGMAP, Entry("m", APPLY, "v1"), NOW, False)
    assert str(e.value) == message


# --- Update: create, update, status --------------------------------------------------------------------------------

def _encoded(managers: mf.Managers) -> list[dict]:
    return mf.encode(managers) or []


def test_create_owns_everything_and_the_dot_follows_the_go_zero_object():
    zero = schema.zero_object(POD)
    assert zero == {"metadata": {}, "spec": {"containers": None}, "status": {}}
    new = pod({"name": "c", "image": "i", "resources": {}}, labels={"a": "b"})
    got = mf.update({}, zero, new, POD, Entry("kubectl-create", UPDATE, "v1"), NOW)
    assert _encoded(got) == [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1", "time": NOW,
                              "fieldsType": "FieldsV1", "fieldsV1": {
                                  "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
                                  "f:spec": {"f:containers": {'k:{"name":"c"}': {
                                      ".": {}, "f:image": {}, "f:name": {}, "f:resources": {}}}}}}]


def test_an_update_takes_what_it_changes_and_removals_leave_everyone():
    old = cm({"a": "1", "b": "2"})
    managers = mf.update({}, {}, old, CONFIGMAP, Entry("creator", UPDATE, "v1"), "t1")
    new = cm({"a": "9", "c": "3"})   # a changed, b removed, c added
    got = mf.update(managers, old, new, CONFIGMAP, Entry("editor", UPDATE, "v1"), "t2")
    by = {e["manager"]: e["fieldsV1"] for e in _encoded(got)}
    assert by == {"creator": {"f:data": {}}, "editor": {"f:data": {"f:a": {}, "f:c": {}}}}
    # a write that changes nothing adds no entry and moves no time
    assert mf.update(got, new, new, CONFIGMAP, Entry("third", UPDATE, "v1"), "t3") == got


def test_a_writer_changing_the_fields_it_owns_again_keeps_its_stored_document_and_moves_its_time():
    """A controller writing the same status fields again: its FieldsV1 document is written back as it was read (the
    same object, not rebuilt), only its time moves; a write adding a field rebuilds it."""
    old = cm({"a": "1"})
    stored = mf.decode(mf.encode(mf.update({}, {}, old, CONFIGMAP, Entry("writer", UPDATE, "v1"), "t1")), lazy=True)
    raw = next(iter(stored.values())).raw
    again = mf.update(stored, old, cm({"a": "2"}), CONFIGMAP, Entry("writer", UPDATE, "v1"), "t2")
    (entry,) = again.values()
    assert entry.raw is raw and entry.time == "t2"
    assert _encoded(again) == [{"manager": "writer", "operation": "Update", "apiVersion": "v1", "time": "t2",
                                "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}]
    more = mf.update(stored, old, cm({"a": "2", "b": "3"}), CONFIGMAP, Entry("writer", UPDATE, "v1"), "t3")
    assert _encoded(more)[0]["fieldsV1"] == {"f:data": {".": {}, "f:a": {}, "f:b": {}}}
    assert next(iter(more.values())).raw is not raw


def test_reset_fields_are_owned_by_nobody():
    old = pod({"name": "c"})
    new = {**old, "status": {"phase": "Running"}}
    got = mf.update({}, old, new, POD, Entry("x", UPDATE, "v1"), NOW, frozenset({("f:status",)}))
    assert got == {}


def test_more_than_ten_updaters_fold_the_oldest_into_ancient_changes():
    managers: mf.Managers = {}
    old = cm({})
    for i in range(12):
        new = cm({**old["data"], f"k{i}": "v"})
        managers = mf.update(managers, old, new, CONFIGMAP, Entry(f"m{i:02}", UPDATE, "v1"),
                             f"2026-01-01T00:00:{i:02}Z")
        old = new
    names = sorted(e.manager for e in managers.values())
    assert len(names) == 10 and "ancient-changes" in names and "m00" not in names and "m11" in names
    ancient = next(e for e in managers.values() if e.manager == "ancient-changes")
    assert ancient.paths() >= {("f:data", "f:k0"), ("f:data", "f:k1"), ("f:data", "f:k2")}


# --- Apply ------------------------------------------------------------------------------------------------------------

def _apply(managers, live, config, who="applier", force=False, t=CONFIGMAP):
    return mf.apply(managers, live, config, t, Entry(who, APPLY, "v1"), NOW, force)


def test_conflicts_name_each_manager_and_field_and_force_moves_them():
    live = cm({"a": "1", "b": "2"})
    managers = mf.update({}, {}, live, CONFIGMAP, Entry("creator", UPDATE, "v1"), "t1")
    with pytest.raises(mf.ApplyConflictError) as e:
        _apply(managers, live, cm({"a": "x"}))
    assert e.value.message() == 'Apply failed with 1 conflict: conflict with "creator" using v1: .data.a'
    assert e.value.causes() == [{"reason": "FieldManagerConflict", "message": 'conflict with "creator" using v1',
                                 "field": ".data.a"}]
    with pytest.raises(mf.ApplyConflictError) as e:
        _apply(managers, live, cm({"a": "x", "b": "y"}))
    assert e.value.message() == ('Apply failed with 2 conflicts: conflicts with "creator" using v1:\n- .data.a\n'
                                 "- .data.b")
    # the same value is shared ownership, not a conflict
    obj, shared = _apply(managers, live, cm({"a": "1"}))
    assert obj is None and {e.manager for e in shared.values()} == {"creator", "applier"}
    obj, forced = _apply(managers, live, cm({"a": "x"}), force=True)
    assert obj["data"] == {"a": "x", "b": "2"}
    by = {e.manager: e.paths() for e in forced.values()}
    assert by == {"creator": {("f:data",), ("f:data", "f:b")}, "applier": {("f:data", "f:a")}}


def test_apply_removes_what_it_no_longer_applies_unless_someone_else_owns_it():
    live = cm({"a": "1", "b": "2", "c": "3"})
    obj, managers = _apply({}, {}, live)
    managers = mf.update(managers, obj, {**obj, "data": {**obj["data"], "c": "9"}}, CONFIGMAP,
                         Entry("editor", UPDATE, "v1"), NOW)   # editor now owns c
    live = {**obj, "data": {**obj["data"], "c": "9"}}
    obj, managers = _apply(managers, live, cm({"a": "1"}))
    assert obj["data"] == {"a": "1", "c": "9"}   # b pruned; c kept: the editor owns it


def test_apply_merges_associative_lists_in_the_live_order():
    live = pod({"name": "a", "image": "1"}, {"name": "b", "image": "2"})
    obj, _ = _apply({}, {}, live, t=POD)
    config = pod({"name": "c", "image": "3"}, {"name": "a", "image": "1"}, {"name": "b", "image": "2"})
    obj, _ = _apply({}, obj, config, t=POD, who="other")
    assert [c["name"] for c in obj["spec"]["containers"]] == ["c", "a", "b"]
    config = pod({"name": "b", "image": "2"}, {"name": "a", "image": "1"})
    obj2, _ = _apply({}, live, config, t=POD, who="other")
    assert [c["name"] for c in obj2["spec"]["containers"]] == ["b", "a"]   # the configuration reorders shared items


def test_a_noop_apply_changes_nothing_not_even_times():
    obj, managers = _apply({}, {}, cm({"a": "1"}))
    again, managers2 = mf.apply(managers, obj, cm({"a": "1"}), CONFIGMAP, Entry("applier", APPLY, "v1"),
                                "2030-01-01T00:00:00Z", False)
    assert again is None and managers2 == managers


def test_managed_fields_decode_errors_are_kubes():
    for raw, message in [([{"operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}],
                          "operation must be `Apply` or `Update`"),
                         ([{"operation": "Update", "fieldsType": "FieldsV1"}], "apiVersion must not be empty"),
                         ([{"operation": "Update", "apiVersion": "v1"}],
                          "missing fieldsType in managed fields entry 0"),
                         ([{"operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}],
                          'invalid fieldsType "FieldsV2" in managed fields entry 0')]:
        with pytest.raises(mf.ManagedFieldsError, match=message.replace("(", r"\(")):
            mf.decode(raw)
    assert mf.is_reset([]) and mf.is_reset([{}]) and not mf.is_reset(None) and not mf.is_reset([{"a": 1}])


@pytest.mark.parametrize("new", [
    pod({"name": "c", "image": "i", "resources": {}, "ports": [{"containerPort": 80, "protocol": "TCP"}]},
        {"name": "d", "env": [{"name": "A", "value": "1"}], "args": ["x"]}, labels={"a": "b"}, finalizers=["f/g"]),
    cm({"a": "b"}, labels={"x": "y"}, annotations={"n": "1"}),
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"a": "b"}}, "replicas": 2, "template": {
            "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
     "status": {"replicas": 0}},
])
def test_the_create_fast_path_is_the_general_comparison(new):
    t = {"Pod": POD, "ConfigMap": CONFIGMAP, "Deployment": DEPLOYMENT}[new["kind"]]
    who = Entry("c", UPDATE, "v1")
    for ignore in (fp.EMPTY, frozenset({("f:status",)})):
        general = mf.update({}, schema.zero_object(t), new, t, who, NOW, ignore)
        fast = mf.created(schema.zero_object(t), new, t, who, NOW, ignore)
        assert json.dumps(mf.encode(fast)) == json.dumps(mf.encode(general))
        assert fast[who.identity].paths() == general[who.identity].paths()


def test_creates_with_the_same_fields_share_one_document_and_others_get_their_own():
    """Pods created from one template (names and values differ, fields do not) share their FieldsV1 document,
    which is then encoded and read once (``managers._shared``); a create with other fields gets its own."""
    who = Entry("c", UPDATE, "v1")

    def created(name: str, image: str, **meta) -> dict:
        new = pod({"name": "c", "image": image, "env": [{"name": "A", "value": name}]}, **meta)
        new["metadata"]["name"] = name
        return mf.created(schema.zero_object(POD), new, POD, who, NOW)[who.identity].raw

    first, second = created("p1", "i:1"), created("p2", "i:2")
    assert second is first
    other = created("p3", "i:1", labels={"a": "b"})
    assert other is not first and other != first and "f:labels" in other["f:metadata"]
    assert created("p4", "i:3") is first
