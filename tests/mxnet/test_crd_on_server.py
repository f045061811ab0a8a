"""The MXJob CRD on the embedded API server: examples accepted, the cloud API's bodies round-trip, kubectl.

Everything goes over HTTP, through the official client (plain dicts) or the real kubectl.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.mxnet.api import validate_job
from mxjob_controller.mxnet.crd import MANIFEST_PATH, mxjob_crd
from tests.support import Kube, Kubectl, wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CLOUD = EXAMPLES / "cloud-api"
RESPONSES = json.loads((Path(__file__).resolve().parents[1] / "data" / "cloud_api_mxjob_responses.json").read_text())
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "selfLink")
NS = "kube-test"  # the namespace of the cloud API's examples


def jobs_path(namespace: str, version: str = "v1") -> str:
    return f"/apis/kubeflow.org/{version}/namespaces/{namespace}/mxjobs"


def user_fields(obj: dict, namespace: str | None = None) -> dict:
    """``obj`` without what the API server or the controller sets (identity, versions, timestamps, status)."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    meta = out.setdefault("metadata", {})
    for key in SERVER_SET:
        meta.pop(key, None)
    if namespace is not None:
        meta["namespace"] = namespace
    return out


def install_crd(apiserver: APIServer, kube: Kube) -> None:
    apiserver.create(mxjob_crd())  # what `local up` does with the packaged CRD
    wait_for(lambda: kube.get("/apis/kubeflow.org/v1beta1").ok, timeout=20, what="MXJob API served")


def create_namespace(kube: Kube, name: str) -> None:
    reply = kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert reply.status == 201, reply.body


@pytest.fixture
def mxjobs(apiserver: APIServer, kube: Kube) -> Kube:
    """The official client against a server that serves MXJobs, with the cloud examples' namespace."""
    install_crd(apiserver, kube)
    create_namespace(kube, NS)
    return kube


def test_kubectl_applies_the_manifest_and_sees_the_api(kubectl: Kubectl) -> None:
    kubectl.ok("apply", "-f", str(ROOT / MANIFEST_PATH))
    kubectl.ok("wait", "--for", "condition=established", "crd/mxjobs.kubeflow.org", "--timeout=60s")
    resources = kubectl.ok("api-resources", "--api-group", "kubeflow.org", "-o", "wide")
    assert "mxjobs" in resources and "mxj" in resources and "MXJob" in resources
    assert "kubeflow.org/v1beta1" in kubectl.ok("api-versions").split()


def example_manifests() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("path", example_manifests(), ids=lambda p: p.name)
def test_kubectl_creates_every_example_unchanged(apiserver: APIServer, kube: Kube, kubectl: Kubectl,
                                                 path: Path) -> None:
    install_crd(apiserver, kube)
    kubectl.ok("create", "-f", str(path))
    manifest = yaml.safe_load(path.read_text())
    got = kubectl.json("get", "mxjob", manifest["metadata"]["name"])
    assert user_fields(got) == user_fields(manifest, "default"), "nothing pruned or defaulted by the schema"
    assert validate_job(got) == []


def test_cloud_create_body_round_trips(mxjobs: Kube) -> None:
    body = json.loads((CLOUD / "create-mxjob.json").read_text())
    created = mxjobs.post(jobs_path(NS), body)
    assert created.status == 201, created.body
    got = mxjobs.get(f"{jobs_path(NS)}/mxnet-job")
    assert got.status == 200
    assert user_fields(got.body) == user_fields(body, NS)
    assert user_fields(got.body) == user_fields(RESPONSES["create"]), "what the cloud API answered, too"
    assert validate_job(got.body) == []


def test_cloud_update_body_round_trips(mxjobs: Kube) -> None:
    assert mxjobs.post(jobs_path(NS), json.loads((CLOUD / "create-mxjob.json").read_text())).status == 201
    current = mxjobs.get(f"{jobs_path(NS)}/mxnet-job").body
    body = json.loads((CLOUD / "update-mxjob-ttl.json").read_text())
    # The body carries the cloud cluster's identity and version; ours are the server-set values to send.
    body["metadata"].update(uid=current["metadata"]["uid"], resourceVersion=current["metadata"]["resourceVersion"])
    replaced = mxjobs.put(f"{jobs_path(NS)}/mxnet-job", body)
    assert replaced.status == 200, replaced.body
    got = mxjobs.get(f"{jobs_path(NS)}/mxnet-job").body
    assert got["spec"]["ttlSecondsAfterFinished"] == 10000
    assert user_fields(got) == user_fields(body)
    assert user_fields(got) == user_fields(RESPONSES["replace"])
    assert got["metadata"]["generation"] == 2


def test_cloud_merge_patch_and_status_round_trip(mxjobs: Kube) -> None:
    assert mxjobs.post(jobs_path(NS), json.loads((CLOUD / "create-mxjob.json").read_text())).status == 201
    patch = json.loads((CLOUD / "patch-mxjob-labels.json").read_text())
    patched = mxjobs.patch(f"{jobs_path(NS)}/mxnet-job", patch)
    assert patched.status == 200, patched.body
    assert user_fields(patched.body) == user_fields(RESPONSES["patch"])

    # The controller's status write: the older API's shape (mxReplicaStatuses) is kept as written.
    seed_status = RESPONSES["get"]["status"]
    current = mxjobs.get(f"{jobs_path(NS)}/mxnet-job").body
    put = mxjobs.put(f"{jobs_path(NS)}/mxnet-job/status", {**current, "status": seed_status})
    assert put.status == 200, put.body
    for version in ("v1", "v1beta1"):
        got = mxjobs.get(f"{jobs_path(NS, version)}/mxnet-job").body
        assert got["apiVersion"] == f"kubeflow.org/{version}"
        assert got["status"] == seed_status
        assert user_fields(got) | {"apiVersion": "kubeflow.org/v1"} == user_fields(RESPONSES["patch"])


def test_the_cloud_list_response_matches_ours(mxjobs: Kube) -> None:
    assert mxjobs.post(jobs_path(NS), json.loads((CLOUD / "create-mxjob.json").read_text())).status == 201
    listed = mxjobs.get(jobs_path(NS)).body
    assert listed["kind"] == "MXJobList"
    assert [user_fields(i) for i in listed["items"]] == [user_fields(i) for i in RESPONSES["list"]["items"]]


def test_kubectl_get_shows_the_state_column(apiserver: APIServer, kube: Kube, kubectl: Kubectl) -> None:
    install_crd(apiserver, kube)
    kubectl.ok("create", "-f", str(EXAMPLES / "mxjob-single-worker.yaml"))
    current = kube.get(f"{jobs_path('default')}/mxnet-single").body
    status = {"conditions": [
        {"type": "Created", "status": "True", "reason": "MXJobCreated", "message": "MXJob mxnet-single is created.",
         "lastUpdateTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"},
        {"type": "Running", "status": "True", "reason": "MXJobRunning", "message": "MXJob mxnet-single is running.",
         "lastUpdateTime": "2024-01-01T00:00:01Z", "lastTransitionTime": "2024-01-01T00:00:01Z"}]}
    assert kube.put(f"{jobs_path('default')}/mxnet-single/status", {**current, "status": status}).status == 200
    if getattr(apiserver.rest, "table_converter", None) is None:
        pytest.skip("the embedded server has no server-side Table printer yet (apiserver/encoding/tables.py)")
    lines = kubectl.ok("get", "mxjobs").splitlines()
    assert lines[0].split() == ["NAME", "STATE", "AGE"]
    assert lines[1].split()[:2] == ["mxnet-single", "Running"]
    assert kubectl.ok("get", "mxj", "-o", "name").split() == ["mxjob.kubeflow.org/mxnet-single"]


@pytest.mark.parametrize(("edit", "field"), [
    (lambda s: s["mxReplicaSpecs"]["Worker"].update(restartPolicy="Sometimes"),
     "spec.mxReplicaSpecs.Worker.restartPolicy"),
    (lambda s: s["mxReplicaSpecs"]["Worker"].update(replicas=0), "spec.mxReplicaSpecs.Worker.replicas"),
    (lambda s: s.update(cleanPodPolicy="Some"), "spec.cleanPodPolicy"),
    (lambda s: s.update(runPolicy={"backoffLimit": -1}), "spec.runPolicy.backoffLimit"),
    (lambda s: s["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(
        ports=[{"containerPort": "abc"}]),
     "spec.mxReplicaSpecs.Worker.template.spec.containers[0].ports[0].containerPort"),
])
def test_the_server_enforces_what_the_schema_expresses(apiserver: APIServer, kube: Kube, edit: Any,
                                                       field: str) -> None:
    install_crd(apiserver, kube)
    if getattr(apiserver.rest, "schema_validator", None) is None:
        pytest.skip("the embedded server does not validate custom resources against their schema yet")
    body = yaml.safe_load((EXAMPLES / "mxjob-single-worker.yaml").read_text())
    edit(body["spec"])
    reply = kube.post(jobs_path("default"), body)
    assert reply.status == 422, reply.body
    assert field in [c["field"] for c in reply.body["details"]["causes"]]
    assert field in [e.field for e in validate_job(body)], "the validator reports it too"
