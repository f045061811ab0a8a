"""The structural-schema checker (kubeflow_api/crd_schema.py) every generated CRD is held to: each rule of kube's
structural schemas it enforces, shown failing on a fragment that breaks it."""

from __future__ import annotations

import pytest

from mxjob_controller.kubeflow_api.crd_schema import structural_problems


@pytest.mark.parametrize(("fragment", "problem"), [
    ({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, "keyword $ref"),
    ({"type": ["string", "null"]}, "one string"),
    ({"properties": {}}, "type must not be empty"),
    ({"type": "array"}, "needs items"),
    ({"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}, "mutually exclusive"),
    ({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["protocol"],
      "items": {"type": "object", "properties": {"protocol": {"type": "string"}}}}, "must be a required property"),
    ({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}, "scalar items"),
])
def test_structural_checker_is_not_vacuous(fragment: dict, problem: str) -> None:
    assert any(problem in p for p in structural_problems(fragment))
