"""A stored object's JSON built from parts encoded before is the JSON of encoding it whole (``storage/json_parts``)."""

from __future__ import annotations

import json

import pytest

from mxjob_controller.local.apiserver.storage import json_parts
from mxjob_controller.local.apiserver.storage.json_parts import encode_json

pytestmark = pytest.mark.unit


def whole(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False).encode()


def job(spec: dict, docs: list[dict], status: dict | None = None) -> dict:
    entries = [{"manager": f"m{i}", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
                "fieldsType": "FieldsV1", "fieldsV1": doc} for i, doc in enumerate(docs)]
    entries.append({"manager": "empty", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
                    "fieldsV1": {}})
    return {"apiVersion": "example.com/v1", "kind": "Job",
            "metadata": {"name": "j", "resourceVersion": "7", "managedFields": entries, "labels": {"a": "ü"}},
            "spec": spec, "status": status or {"phase": "Running"}}


def test_parts_shared_with_the_prior_version_and_fields_documents_are_spliced_as_a_whole_encoding_gives():
    spec = {"replicas": {"Worker": {"n": 8, "template": {"x": [1, 2.5, None, True, "\u2028<&>"]}}}}
    docs = [{"f:spec": {".": {}, "f:replicas": {}}}, {"f:status": {"f:phase": {}}}]
    prior = job(spec, docs)
    assert encode_json(prior) == whole(prior)
    for phase in ("Succeeded", "Failed"):   # the spec and documents are the prior's own: spliced, from the cache
        new = job(spec, docs, {"phase": phase, "n": 1.0})
        assert encode_json(new, prior) == whole(new)
        prior = new
    # A part equal to the prior's but not the same object is encoded as it is now.
    changed = job({**spec, "replicas": {"Worker": {"n": 9}}}, [dict(docs[0]), docs[1]])
    assert encode_json(changed, prior) == whole(changed)


def test_an_object_holding_the_stand_in_is_encoded_whole():
    stand_in = json_parts._STAND_IN
    obj = job({"note": stand_in}, [{"f:spec": {}}])
    assert encode_json(obj) == whole(obj)
    obj = job({"a": 1}, [{"f:spec": {}}], {"phase": stand_in})
    assert encode_json(obj, obj) == whole(obj)


def test_what_json_cannot_carry_is_refused_in_a_spliced_part_too():
    with pytest.raises(ValueError):
        encode_json(job({"a": 1}, [{"f:spec": {"x": float("nan")}}]))
    bad = {"x": float("inf")}
    prior = job(bad, [{"f:spec": {}}])
    with pytest.raises(ValueError):
        encode_json(job(bad, [{"f:spec": {}}]), prior)
