"""The v1alpha1 vocabulary (mxnet/v1alpha1/vocabulary.py): its schema (structural, typed, the seed's keys, the seed
objects fitting it) and the API's constants."""

from __future__ import annotations

from typing import Any

from mxjob_controller.kubeflow_api.crd_schema import structural, structural_problems
from mxjob_controller.mxnet import v1alpha1
from mxjob_controller.mxnet.v1alpha1 import (
    V1_EXTRA_ANNOTATION,
    V1ALPHA1_EXTRA_ANNOTATION,
)
from tests.mxnet.v1alpha1.support import (
    ALPHA,
    pruned_fields,
    seed_dump,
    seed_manifest,
)

# --- schema --------------------------------------------------------------------------------------------------------

def test_schema_is_structural_and_typed() -> None:
    schema = v1alpha1.openapi_schema()
    assert structural_problems(schema) == []
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "spec", "status"}

    def nodes(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
        """Our own nodes (not Kubernetes' pod template)."""
        out = [(path, node)]
        for key, sub in (node.get("properties") or {}).items():
            if key != "template":
                out += nodes(sub, f"{path}.{key}")
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                out += nodes(node[key], f"{path}.{key}")
        return out

    for path, node in nodes(schema["properties"]["spec"], "spec") + nodes(schema["properties"]["status"], "status"):
        if path == "status.v1":
            continue   # the v1 status carried unchanged: v1's own schema checks it where it is stored
        assert "x-kubernetes-preserve-unknown-fields" not in node, path
        assert node.get("type") in ("object", "array", "string", "integer"), path


def test_schema_has_the_seed_keys() -> None:
    spec = v1alpha1.spec_schema()["properties"]
    assert set(spec) == {"RuntimeId", "replicaSpecs", "mxImage", "terminationPolicy", "cleanupPodPolicy",
                         "schedulerName", "jobMode"}
    item = spec["replicaSpecs"]["items"]["properties"]
    assert set(item) == {"mxReplicaType", "replicas", "template", "PsRootPort"}
    assert item["mxReplicaType"]["enum"] == ["SCHEDULER", "SERVER", "WORKER"]
    assert {k: v for k, v in item["template"].items() if k != "description"} == \
        structural("io.k8s.api.core.v1.PodTemplateSpec")
    assert item["PsRootPort"]["type"] == "integer"
    assert spec["cleanupPodPolicy"]["enum"] == ["", "All", "Running", "None"]
    chief = spec["terminationPolicy"]["properties"]["chief"]["properties"]
    assert {k: v["type"] for k, v in chief.items()} == {"replicaName": "string", "replicaIndex": "integer"}
    status = v1alpha1.status_schema()["properties"]
    assert set(status) == {"phase", "state", "reason", "replicaStatuses", "v1"}
    assert status["v1"]["x-kubernetes-preserve-unknown-fields"] is True   # the v1 status, carried unchanged
    assert set(status["replicaStatuses"]["items"]["properties"]) == {"mx_replica_type", "state", "ReplicasStates"}
    assert status["replicaStatuses"]["items"]["properties"]["ReplicasStates"]["additionalProperties"]["type"] == \
        "integer"


def test_seed_objects_fit_the_schema() -> None:
    """Nothing of the seed manifest is pruned; of the dump only the templates' ``creationTimestamp: null``, which
    the API server prunes from every pod template (as it would under v1)."""
    assert pruned_fields(seed_manifest()) == []
    assert pruned_fields(seed_dump()) == [f"spec.replicaSpecs[{i}].template.metadata.creationTimestamp"
                                          for i in range(3)]


def test_api_constants() -> None:
    assert (v1alpha1.VERSION, v1alpha1.API_VERSION) == ("v1alpha1", ALPHA)
    assert V1ALPHA1_EXTRA_ANNOTATION == "mxjob.kubeflow.org/v1alpha1-spec-extra"
    assert V1_EXTRA_ANNOTATION == "mxjob.kubeflow.org/v1-spec-extra"
