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


def _spans_hold_their_parts(obj: dict, raw: bytes, spans: json_parts.Spans) -> None:
    for part, (start, end) in spans.items():
        assert raw[start:end] == whole(obj[part]), part


def test_a_version_stored_from_the_one_it_replaces_is_a_whole_encoding_and_copies_the_shared_parts_bytes():
    peers = [{"url": f"w-{i}", "port": 9091} for i in range(50)]
    env = [{"name": "MX_CONFIG", "value": json.dumps({"cluster": peers})}]
    created = job({"containers": [{"name": "c", "env": env}], "restartPolicy": "Never", "volumes": [], "x": {}},
                  [{"f:spec": {}}])
    raw, spans = json_parts.encode_stored(created)
    assert raw == whole(created)
    _spans_hold_their_parts(created, raw, spans)
    assert set(spans) == {"spec", "status"}   # metadata's FieldsV1 documents have their own way

    bound = {**created, "metadata": {**created["metadata"], "resourceVersion": "8"},
             "spec": {**created["spec"], "nodeName": "n", "more": [1]}}   # the binding's: members added
    status = {**bound, "metadata": {"name": "a longer name, so that every part after it moves"},
              "status": {"phase": "Running", "conditions": [{"type": "Ready"}]}}   # a status write's: the spec shared
    deleted = {**status, "metadata": {**status["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    reordered = {**deleted, "spec": {"nodeName": "n", **deleted["spec"]}}   # equal, not an extension: encoded
    changed = {**reordered, "spec": {**reordered["spec"], "containers": [], "x": {"y": 1}}}
    prior, prior_raw, prior_spans = created, raw, spans
    for version in (bound, status, deleted, reordered, changed):
        raw, spans = json_parts.encode_stored(version, prior, prior_raw, prior_spans)
        assert raw == whole(version)
        _spans_hold_their_parts(version, raw, spans)
        prior, prior_raw, prior_spans = version, raw, spans

    # The shared parts are the prior bytes', not encoded again: doctored ones show through.
    _, spans = json_parts.encode_stored(status)
    raw = whole(status)
    start, end = spans["spec"]
    doctored = raw[:start] + b'{"z":' + b" " * (end - start - 6) + b"}" + raw[end:]
    again, _ = json_parts.encode_stored({**status, "status": {}}, status, doctored, spans)
    assert b'"spec":{"z":' + b" " * (end - start - 6) + b"}," in again
    rebound, _ = json_parts.encode_stored({**status, "spec": {**status["spec"], "added": 1}}, status, doctored, spans)
    assert b'"spec":{"z":' + b" " * (end - start - 6) + b',"added":1}' in rebound


def test_a_version_whose_keys_are_not_all_strings_is_encoded_whole():
    odd = {"a": {1: "x"}, 2: [1]}
    raw, spans = json_parts.encode_stored(odd)
    assert raw == whole(odd) and spans == {}
    nested = {"spec": {"a": [1]}}
    raw, spans = json_parts.encode_stored(nested)
    extended = {"spec": {**nested["spec"], 3: [2]}}   # an added key that is not a string: encoded whole
    again, _ = json_parts.encode_stored(extended, nested, raw, spans)
    assert again == whole(extended)
