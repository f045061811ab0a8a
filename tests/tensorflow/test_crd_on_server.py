"""The TFJob CRD on the embedded API server, with the vendor's REST bodies (seed 003): the 2019 shape is stored as
sent (inline run policy, key ``Ps``: nothing pruned, nothing rewritten), the PUT, merge patch, list and delete
answer what the vendor's API answered, timestamps with milliseconds are read, and kubectl sees the API."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.tensorflow.api import validate_tfjob
from mxjob_controller.tensorflow.crd import tfjob_crd
from tests.support import Kube, Kubectl, wait_for
from tests.tensorflow_support import CLOUD, CLOUD_NS, RESPONSES, ROOT, create_body, update_body

SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")
PATH = f"/apis/kubeflow.org/v1/namespaces/{CLOUD_NS}/tfjobs"


def user_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without what the API server or the controller sets (identity, versions, timestamps, status)."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    for key in SERVER_SET:
        out.setdefault("metadata", {}).pop(key, None)
    return out


@pytest.fixture
def tfjobs(apiserver: APIServer, kube: Kube) -> Kube:
    apiserver.create(tfjob_crd())
    wait_for(lambda: kube.get(PATH).status in (200, 404) and kube.get("/apis/kubeflow.org/v1").ok, timeout=20,
             what="the TFJob API served")
    assert kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": CLOUD_NS}}).status == 201
    return kube


def test_the_vendor_create_body_is_stored_as_sent(tfjobs: Kube) -> None:
    created = tfjobs.post(PATH, create_body())
    assert created.status == 201, created.body
    got = tfjobs.get(f"{PATH}/tfjob-test").body
    assert user_fields(got) == user_fields(create_body())
    assert got["spec"]["backoffLimit"] == 6 and "Ps" in got["spec"]["tfReplicaSpecs"], "not pruned, not rewritten"
    assert user_fields(got) == user_fields(RESPONSES["get"]) | {"metadata": user_fields(got)["metadata"]}
    assert validate_tfjob(got) == []


def test_the_vendor_put_keeps_its_inline_ttl_and_its_status_writes_back(tfjobs: Kube) -> None:
    assert tfjobs.post(PATH, create_body()).status == 201
    current = tfjobs.get(f"{PATH}/tfjob-test").body
    body = update_body()
    body["metadata"].update(uid=current["metadata"]["uid"], resourceVersion=current["metadata"]["resourceVersion"])
    replaced = tfjobs.put(f"{PATH}/tfjob-test", body)
    assert replaced.status == 200, replaced.body
    got = tfjobs.get(f"{PATH}/tfjob-test").body
    assert (got["spec"]["ttlSecondsAfterFinished"], got["metadata"]["generation"]) == (1000, 2)
    assert user_fields(got) == user_fields(RESPONSES["replace"])
    # The vendor's status, with its millisecond timestamps (the PATCH response's), is accepted as written.
    status = RESPONSES["patch"]["status"]
    assert status["startTime"] == "2019-07-24T07:16:13.000Z"
    put = tfjobs.put(f"{PATH}/tfjob-test/status", {**got, "status": status})
    assert put.status == 200, put.body
    assert tfjobs.get(f"{PATH}/tfjob-test").body["status"]["replicaStatuses"] == {"PS": {"active": 1},
                                                                                 "Worker": {"active": 1}}


def test_the_vendor_merge_patch_and_list(tfjobs: Kube) -> None:
    assert tfjobs.post(PATH, create_body()).status == 201
    patched = tfjobs.patch(f"{PATH}/tfjob-test", json.loads((CLOUD / "patch-tfjob-labels.json").read_text()))
    assert patched.status == 200, patched.body
    assert patched.body["metadata"]["labels"] == {"app": "test"}
    assert user_fields(patched.body)["spec"] == user_fields(RESPONSES["patch"])["spec"]
    listed = tfjobs.get(PATH).body
    assert listed["kind"] == "TFJobList" and listed["kind"] == RESPONSES["list"]["kind"]
    assert [user_fields(i)["spec"] for i in listed["items"]] == [user_fields(i)["spec"]
                                                                for i in RESPONSES["list"]["items"]]
    deleted = tfjobs.delete(f"{PATH}/tfjob-test")
    assert deleted.status == 200, deleted.body
    assert tfjobs.get(f"{PATH}/tfjob-test").status == 404


def test_the_vendor_delete_answers_a_status(tfjobs: Kube) -> None:
    assert tfjobs.post(PATH, create_body()).status == 201
    deleted = tfjobs.delete(f"{PATH}/tfjob-test")
    expected = RESPONSES["delete"]
    assert (deleted.body["kind"], deleted.body["status"]) == (expected["kind"], expected["status"])
    assert {k: deleted.body["details"][k] for k in ("name", "group", "kind")} == {
        k: expected["details"][k] for k in ("name", "group", "kind")} == {
        "name": "tfjob-test", "group": "kubeflow.org", "kind": "tfjobs"}


def test_kubectl_applies_the_crd_and_creates_the_examples(kubectl: Kubectl) -> None:
    kubectl.ok("apply", "-f", str(ROOT / "manifests" / "crd" / "kubeflow.org_tfjobs.yaml"))
    kubectl.ok("wait", "--for", "condition=established", "crd/tfjobs.kubeflow.org", "--timeout=60s")
    resources = kubectl.ok("api-resources", "--api-group", "kubeflow.org", "-o", "wide")
    assert "tfjobs" in resources and "TFJob" in resources
    for example in ("tfjob-dist.yaml", "tfjob-run-policy.yaml"):
        kubectl.ok("create", "-f", str(ROOT / "examples" / "tensorflow" / example))
    got = kubectl.json("get", "tfjob", "tf-run-policy")
    assert (got["spec"]["backoffLimit"], got["spec"]["runPolicy"]["cleanPodPolicy"]) == (3, "All"), "both shapes kept"
    assert "Ps" in got["spec"]["tfReplicaSpecs"] and validate_tfjob(got) == []
    assert validate_tfjob(kubectl.json("get", "tfjob", "tf-dist")) == []
    assert kubectl.ok("get", "tfjob", "-o", "name").split() == ["tfjob.kubeflow.org/tf-dist",
                                                                "tfjob.kubeflow.org/tf-run-policy"]
