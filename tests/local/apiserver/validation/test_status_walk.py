"""A status write's schema check skips the parts it has seen unchanged, and answers as a whole walk does.

The server keeps, per custom object, the parts other than status and metadata that a walk left as they were
(``validation/schemas.UnchangedParts``); an equal part is not walked again. Each case here runs the same status write
through that validator and through a fresh one (which walks every part) and compares what each leaves and
reports: the status as pruned and defaulted, the errors, the unknown fields, the rest by value.
"""

from __future__ import annotations

import copy
import json

from mxjob_controller.local.apiserver.resources import Registry, ResourceType
from mxjob_controller.local.apiserver.strategy import WriteContext
from mxjob_controller.local.apiserver.validation.schemas import SchemaValidation

SCHEMA = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "default": {"replicas": 1}, "properties": {
            "replicas": {"type": "integer", "minimum": 0},
            "mode": {"type": "string", "default": "Train"},
            "template": {"type": "object", "properties": {
                "containers": {"type": "array", "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "image": {"type": "string"}}}}}}}},
        "extra": {"type": "object", "properties": {"note": {"type": "string"}}},
        "status": {"type": "object", "properties": {
            "phase": {"type": "string", "enum": ["Running", "Done"]},
            "conditions": {"type": "array", "items": {"type": "object", "properties": {
                "type": {"type": "string"}, "status": {"type": "string"}}}}}},
    },
}

RT = ResourceType(group="example.com", version="v1", plural="widgets", singular="widget", kind="Widget",
                  namespaced=True, status_subresource=True, crd_name="widgets.example.com", schema=SCHEMA)


def _job(spec: object = None, status: object = None, name: str = "w", **extra: object) -> dict:
    obj: dict = {"apiVersion": "example.com/v1", "kind": "Widget",
                 "metadata": {"name": name, "namespace": "default", "resourceVersion": "7"}}
    if spec is not None:
        obj["spec"] = spec
    obj.update(extra)
    if status is not None:
        obj["status"] = status
    return obj


SPEC = {"replicas": 2, "mode": "Train", "template": {"containers": [{"name": "a", "image": "x"}]}}
RUNNING = {"phase": "Running", "conditions": [{"type": "Running", "status": "True"}]}


def _registry() -> Registry:
    registry = Registry()
    registry.add(RT)
    return registry


def _both(memo: SchemaValidation, registry: Registry, obj: dict) -> tuple[dict, dict, object]:
    """``obj`` through the remembering validator and a fresh one; asserts they agree; returns what each left of
    it and the first's answer."""
    ctx = WriteContext(RT, subresource="status")
    seen, whole = copy.deepcopy(obj), copy.deepcopy(obj)
    got = memo(RT, seen, WriteContext(RT, subresource="status"))
    want = SchemaValidation(registry)(RT, whole, ctx)
    assert got == want
    assert json.dumps(seen.get("status")) == json.dumps(whole.get("status"))
    assert list(seen) == list(whole)
    assert seen == whole
    return seen, whole, got


def test_a_spec_a_walk_left_unchanged_is_trusted_and_then_skipped() -> None:
    registry = _registry()
    memo = SchemaValidation(registry)
    ident = (RT, "default", "w")
    compiled = memo.schema_for(RT)
    assert compiled is not None
    _both(memo, registry, _job(SPEC, RUNNING))
    assert memo._unchanged.known(ident, compiled, _job(SPEC, RUNNING)) == {"spec"}
    _both(memo, registry, _job(SPEC, {**RUNNING, "phase": "Done"}))
    # A changed spec is walked again, and trusted in its turn once a walk left it as it was.
    changed = {**SPEC, "replicas": 3}
    _both(memo, registry, _job(changed, RUNNING))
    assert memo._unchanged.known(ident, compiled, _job(changed, RUNNING)) == {"spec"}
    assert memo._unchanged.known(ident, compiled, _job(SPEC, RUNNING)) == frozenset()
    # One the walk changes (a default added) is not trusted: the next write walks it again.
    undefaulted = {"replicas": 2, "template": SPEC["template"]}
    _both(memo, registry, _job(undefaulted, RUNNING))
    assert memo._unchanged.known(ident, compiled, _job(undefaulted, RUNNING)) == frozenset()
    # Nor anything of a write whose walk found an unknown field.
    _both(memo, registry, _job(SPEC, {**RUNNING, "surprise": 1}))
    assert memo._unchanged.known(ident, compiled, _job(SPEC, RUNNING)) == frozenset()


def test_a_trusted_spec_answers_as_a_whole_walk_does_whatever_else_the_write_holds() -> None:
    registry = _registry()
    memo = SchemaValidation(registry)
    _both(memo, registry, _job(SPEC, RUNNING, extra={"note": "n"}))
    cases = [
        _job(SPEC, {**RUNNING, "phase": "Gone"}, extra={"note": "n"}),                    # a status error
        _job(SPEC, {**RUNNING, "surprise": 1}, extra={"note": "n"}),                      # unknown in status
        _job(SPEC, RUNNING, extra={"note": "n"}, other={"x": 1}),                         # unknown at the root
        _job(SPEC, RUNNING),                                                               # a part gone
        _job(None, RUNNING, extra={"note": "n"}),                                          # the spec gone: defaulted
        _job({**SPEC, "replicas": -1}, RUNNING, extra={"note": "n"}),                     # a spec error (dropped)
        _job({**SPEC, "mode": None}, RUNNING, extra={"note": "n"}),                       # a null defaulted
        _job({**SPEC, "template": {"containers": [{"name": "a", "image": "x", "more": 1}]}}, RUNNING,
             extra={"note": "n"}),                                                          # unknown in the spec
        _job(SPEC, {**RUNNING, "surprise": 1}, extra={"note": "n"}),
        _job(SPEC, RUNNING, name="other", extra={"note": "n"}),                           # another object
    ]
    for case in cases:
        _both(memo, registry, case)
        _both(memo, registry, case)


def test_unknown_status_fields_under_a_trusted_spec_leave_the_spec_as_a_whole_walk_does() -> None:
    """With an unknown field the answer may show the whole object (fieldValidation=Strict): the skipped spec is
    then walked too, so that the object is, to its bytes, the one a whole walk leaves."""
    registry = _registry()
    memo = SchemaValidation(registry)
    _both(memo, registry, _job(SPEC, RUNNING))
    seen, whole, result = _both(memo, registry, _job({**SPEC, "replicas": 2.0},
                                                     {**RUNNING, "surprise": 1}))
    assert result[1] == ["status.surprise"]
    assert json.dumps(seen) == json.dumps(whole)


def test_past_its_limit_the_validator_forgets_the_oldest_object() -> None:
    registry = _registry()
    memo = SchemaValidation(registry)
    memo._unchanged.LIMIT = 4
    parts = memo._unchanged._parts
    for i in range(6):
        _both(memo, registry, _job(SPEC, RUNNING, name=f"w{i}"))
    assert [key[2] for key in parts] == ["w2", "w3", "w4", "w5"]
