"""Field paths and FieldsV1 (local/apiserver/managedfields/fieldpath.py), as structured-merge-diff writes them:
path strings, FieldsV1's order and round trip, conversions without reference cycles, keys as Go's JSON."""

from __future__ import annotations

import gc
import json

import pytest

from mxjob_controller.local.apiserver.managedfields import fieldpath as fp

# --- paths and FieldsV1 -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, text", [
    (("f:data", "f:a"), ".data.a"),
    (("f:spec", "f:containers", 'k:{"name":"c"}', "f:image"), '.spec.containers[name="c"].image'),
    (("f:spec", "f:ports", 'k:{"port":80,"protocol":"TCP"}'), '.spec.ports[port=80,protocol="TCP"]'),
    (("f:metadata", "f:finalizers", 'v:"a/b"'), '.metadata.finalizers[="a/b"]'),
    (("f:x", "i:3"), ".x[3]"),
])
def test_path_strings(path, text):
    assert fp.path_string(path) == text


def test_fields_v1_order_and_round_trip():
    paths = {("f:b",), ("f:a", "v:10"), ("f:a", "v:2"), ("f:a", 'v:"x"'), ("f:m",), ("f:m", "f:z"),
             ("f:l", 'k:{"name":"b"}'), ("f:l", 'k:{"name":"a"}'), ("f:l", 'k:{"name":"a"}', "f:x")}
    doc = fp.to_fields_v1(paths)
    # fields before keys before values; numbers numerically; "." first where a member has children
    assert json.dumps(doc) == json.dumps({
        "f:a": {"v:2": {}, "v:10": {}, 'v:"x"': {}}, "f:b": {},
        "f:l": {'k:{"name":"a"}': {".": {}, "f:x": {}}, 'k:{"name":"b"}': {}},
        "f:m": {".": {}, "f:z": {}}})
    assert fp.from_fields_v1(doc) == frozenset(paths)
    # a key's fields are re-sorted on read; an unknown prefix is skipped, as kube does
    assert fp.from_fields_v1({'k:{"protocol":"TCP","port":80}': {}, "z:x": {}}) == {('k:{"port":80,"protocol":"TCP"}',)}
    with pytest.raises(fp.FieldsV1Error):
        fp.from_fields_v1({"bad": {}})


def test_field_set_conversions_leave_no_reference_cycles():
    """Every write converts managed fields: garbage only the cyclic collector can free (a closure that calls itself)
    would pile up between its collections, and between freezes (gc_policy) for longer."""
    paths = {("f:a", "v:1"), ("f:l", 'k:{"name":"a"}', "f:x"), ("f:m",), ("f:m", "f:z")}
    gc.collect()
    saved = gc.get_debug()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(20):
            assert fp.from_fields_v1(fp.to_fields_v1(paths)) == frozenset(paths)
            assert len(fp.sorted_paths(paths)) == len(paths)
        gc.collect()
        ours = [o for o in gc.garbage if getattr(o, "__module__", None) == fp.__name__]
    finally:
        gc.set_debug(saved)
        gc.garbage.clear()
    assert ours == []


def test_key_json_is_go_json():
    assert fp.key({"name": "a<b>&"}) == 'k:{"name":"a\\u003cb\\u003e\\u0026"}'
