"""CRD transition rules (``x-kubernetes-validations`` with ``oldSelf``) of the immutability family, enforced by the
embedded API server on update as kube-apiserver enforces them: where the rule sits, what the error shows (the value
of a scalar, none for an object), ``message`` / ``fieldPath`` / ``reason``, optional selections, "no such key",
rules skipped where the old object has no value, map values correlated by key, and rules it cannot evaluate left
alone rather than refusing the CRD."""

from __future__ import annotations

from typing import Any

from tests.support import Kube, wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


def install_widgets(kube: Kube) -> None:
    scalar = {"type": "string"}
    spec = {"type": "object", "properties": {
        "name": {**scalar, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]},
        "size": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "size is fixed", "reason": "FieldValueForbidden"}]},
        "owner": {"type": "object", "properties": {"team": scalar, "note": scalar}, "x-kubernetes-validations": [
            {"rule": "self.team == oldSelf.team", "message": "team is immutable", "fieldPath": ".team"}]},
        "zones": {"type": "object", "additionalProperties": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "a zone keeps its weight"}]}},
        "mode": scalar,
        "free": {**scalar, "x-kubernetes-validations": [{"rule": "self.size() <= 10 || self == oldSelf"}]},
    }, "x-kubernetes-validations": [{"rule": "self.?mode == oldSelf.?mode", "message": "mode is immutable",
                                     "fieldPath": ".mode"}]}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "apiVersion": scalar, "kind": scalar, "metadata": {"type": "object"},
                                      "spec": spec, "status": {"type": "object",
                                                               "x-kubernetes-preserve-unknown-fields": True}}}}}]}}
    reply = kube.post(CRDS, crd)
    assert reply.status == 201, reply.body
    wait_for(lambda: kube.get(WIDGETS).ok, timeout=30, what="widgets served")


def widget(kube: Kube, object_name: str, **spec: Any) -> str:
    reply = kube.post(WIDGETS, {"apiVersion": "example.com/v1", "kind": "Widget",
                                "metadata": {"name": object_name}, "spec": spec})
    assert reply.status == 201, reply.body
    return f"{WIDGETS}/{object_name}"


def causes(reply: Any) -> list[tuple[str, str, str]]:
    assert reply.status == 422, reply.body
    return [(c["reason"], c["field"], c["message"]) for c in reply.body["details"]["causes"]]


def test_a_scalar_shows_its_value_and_a_rule_without_message_shows_itself(kube: Kube) -> None:
    install_widgets(kube)
    path = widget(kube, "w", name="a", size=1)
    reply = kube.patch(path, {"spec": {"name": "b", "size": 2}})
    assert causes(reply) == [("FieldValueInvalid", "spec.name", 'Invalid value: "b": failed rule: self == oldSelf'),
                             ("FieldValueForbidden", "spec.size", "Forbidden: size is fixed")]
    assert reply.body["message"].endswith(' "w" is invalid: [spec.name: Invalid value: "b": failed rule: '
                                          'self == oldSelf, spec.size: Forbidden: size is fixed]')
    assert kube.patch(path, {"spec": {"name": "a", "size": 1, "mode": None}}).ok   # unchanged values pass


def test_an_object_rule_with_field_path_shows_no_value(kube: Kube) -> None:
    install_widgets(kube)
    path = widget(kube, "w", owner={"team": "x", "note": "n"})
    assert causes(kube.patch(path, {"spec": {"owner": {"team": "y"}}})) == [
        ("FieldValueInvalid", "spec.owner.team", "Invalid value: team is immutable")]
    assert kube.patch(path, {"spec": {"owner": {"note": "other"}}}).ok
    # a plain selection of a missing field cannot be evaluated: kube's "no such key"
    assert causes(kube.patch(path, {"spec": {"owner": {"team": None}}})) == [
        ("FieldValueInvalid", "spec.owner",
         'Invalid value: "object": no such key: team evaluating rule: team is immutable')]


def test_optional_selections_catch_a_field_set_or_removed(kube: Kube) -> None:
    install_widgets(kube)
    unset = widget(kube, "unset")
    assert causes(kube.patch(unset, {"spec": {"mode": "fast"}})) == [
        ("FieldValueInvalid", "spec.mode", "Invalid value: mode is immutable")]
    held = widget(kube, "held", mode="slow")
    assert causes(kube.patch(held, {"spec": {"mode": None}})) == [
        ("FieldValueInvalid", "spec.mode", "Invalid value: mode is immutable")]
    assert kube.patch(held, {"spec": {"name": "later"}}).ok   # a field rule with no old value is not evaluated
    assert kube.patch(held, {"spec": {"name": None}}).ok      # nor one with no new value


def test_map_values_are_compared_key_by_key(kube: Kube) -> None:
    install_widgets(kube)
    path = widget(kube, "w", zones={"a": 1, "b": 2})
    assert causes(kube.patch(path, {"spec": {"zones": {"b": 3, "c": 4}}})) == [
        ("FieldValueInvalid", "spec.zones[b]", "Invalid value: 3: a zone keeps its weight")]
    assert kube.patch(path, {"spec": {"zones": {"a": None, "c": 4}}}).ok   # keys come and go


def test_create_and_status_writes_are_not_transitions(kube: Kube) -> None:
    install_widgets(kube)
    path = widget(kube, "w", name="a", mode="m")
    assert kube.patch(path + "/status", {"status": {"seen": True}}).ok
    assert kube.get(path).body["spec"] == {"name": "a", "mode": "m"}


def test_a_rule_beyond_the_grammar_is_not_enforced(kube: Kube) -> None:
    """``self.size() <= 10 || self == oldSelf`` needs CEL: the CRD is accepted and the rule left alone (a known
    gap, logged), never a refusal a real cluster would not make."""
    install_widgets(kube)
    path = widget(kube, "w", free="short")
    assert kube.patch(path, {"spec": {"free": "a value longer than ten"}}).ok
