"""The generated CRDs: committed files match the generator (MXJob's and TFJob's, one kustomization), the MXJob CRD
is valid and structural, and small (the TFJob CRD's own checks are in tests/tensorflow/test_crd.py; the structural
checker's in test_crd_schema.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.cli.local import packaged_crds
from mxjob_controller.core.framework import MAX_REPLICAS_PER_JOB, MAX_REPLICAS_PER_TYPE
from mxjob_controller.core.pods import RETRYABLE_EXIT_CODES
from mxjob_controller.frameworks import all_crds, crd_files
from mxjob_controller.generic.crd import genericjob_crd
from mxjob_controller.kube.k8s_schemas import schema_version
from mxjob_controller.kubeflow_api.crd import KUSTOMIZATION_PATH, MAX_MINIFIED_BYTES, PACKAGE_DATA_JSON, minified_size
from mxjob_controller.kubeflow_api.crd_schema import structural_problems
from mxjob_controller.mxnet.crd import MANIFEST_PATH, mxjob_crd
from mxjob_controller.tensorflow.crd import tfjob_crd

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES_VALIDATE = Path(sys.executable).parent / "kubernetes-validate"


def schema_of(crd: dict, version: str = "v1") -> dict[str, Any]:
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]


def at(schema: dict, *path: str) -> dict[str, Any]:
    """Walk ``properties`` (and ``items``/``additionalProperties`` when named) down ``path``."""
    node = schema
    for step in path:
        node = node[step] if step in ("items", "additionalProperties") else node["properties"][step]
    return node


def walk(node: Any, path: str = "") -> list[tuple[str, dict]]:
    out = []
    if isinstance(node, dict):
        out.append((path, node))
        for k, v in node.items():
            out += walk(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += walk(v, f"{path}[{i}]")
    return out


# --- the files ------------------------------------------------------------------------------------------

def test_committed_files_match_the_generator() -> None:
    files = crd_files()
    crds = ["kubeflow.org_mxjobs.yaml", "kubeflow.org_tfjobs.yaml", "batch.tensorstack.dev_genericjobs.yaml"]
    assert set(files) == {*(f"manifests/crd/{c}" for c in crds), *(f"mxjob_controller/data/crds/{c}" for c in crds),
                          KUSTOMIZATION_PATH, PACKAGE_DATA_JSON}
    assert yaml.safe_load(files[KUSTOMIZATION_PATH])["resources"] == crds
    for rel, content in files.items():
        path = ROOT / rel
        assert path.exists(), f"{rel} is missing: run `make crd`"
        assert path.read_text() == content, f"{rel} is out of date: run `make crd`"


@pytest.mark.integration
def test_gen_crd_check_reports_no_drift() -> None:
    proc = subprocess.run([sys.executable, "hack/gen_crd.py", "--check"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "MXJob CRD: " in proc.stdout and "TFJob CRD: " in proc.stdout and "GenericJob CRD: " in proc.stdout


def test_the_package_ships_the_same_crds() -> None:
    assert all_crds() == [mxjob_crd(), tfjob_crd(), genericjob_crd()]

    def by_name(crds: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {c["metadata"]["name"]: c for c in crds}

    assert by_name(packaged_crds()) == by_name(all_crds())
    assert yaml.safe_load((ROOT / MANIFEST_PATH).read_text()) == mxjob_crd()


def test_minified_size_leaves_room_in_the_last_applied_annotation() -> None:
    size = minified_size(mxjob_crd())
    print(f"MXJob CRD: {size} bytes ({size / 1024:.1f} KiB) as minified JSON")
    assert size < MAX_MINIFIED_BYTES == 200 * 1024


def _kubernetes_validate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(KUBERNETES_VALIDATE), "--strict", "-k", schema_version(), str(path)],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.integration
def test_kubernetes_validate_strict_accepts_it() -> None:
    proc = _kubernetes_validate(ROOT / MANIFEST_PATH)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "passed" in proc.stdout + proc.stderr


@pytest.mark.integration
def test_kubernetes_validate_strict_would_catch_a_stray_keyword(tmp_path: Path) -> None:
    """The check above can fail: a keyword a CRD does not accept (as Kubernetes' schemas carry) is refused."""
    crd = mxjob_crd()
    at(schema_of(crd), "spec", "mxReplicaSpecs")["x-kubernetes-patch-strategy"] = "merge"
    bad = tmp_path / "crd.yaml"
    bad.write_text(yaml.safe_dump(crd))
    assert _kubernetes_validate(bad).returncode != 0


# --- the schema -----------------------------------------------------------------------------------------

def test_versions_names_and_printer_columns() -> None:
    crd = mxjob_crd()
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "mxjobs.kubeflow.org"
    assert spec["names"] == {"kind": "MXJob", "listKind": "MXJobList", "plural": "mxjobs", "singular": "mxjob",
                             "shortNames": ["mxj"]}
    assert (spec["group"], spec["scope"], spec["conversion"]) == ("kubeflow.org", "Namespaced", {"strategy": "None"})
    assert [(v["name"], v["served"], v["storage"]) for v in spec["versions"]] == [("v1", True, True),
                                                                                  ("v1beta1", True, False)]
    for v in spec["versions"]:
        assert v["subresources"] == {"status": {}}
        assert v["additionalPrinterColumns"] == [
            {"name": "State", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    assert schema_of(crd, "v1") == schema_of(crd, "v1beta1")


def test_schema_is_structural() -> None:
    schema = schema_of(mxjob_crd())
    assert structural_problems(schema) == []
    assert at(schema, "metadata") == {"type": "object"}, "root metadata may not say more"
    types = [node["type"] for _, node in walk(schema) if "type" in node and not isinstance(node["type"], dict)]
    assert types and all(isinstance(t, str) and t != "null" for t in types)  # a dict is a property named "type"
    assert not [p for p, node in walk(schema) if "$ref" in node or "oneOf" in node]


def test_enums_and_minimums() -> None:
    spec = at(schema_of(mxjob_crd()), "spec")
    replica = at(spec, "mxReplicaSpecs", "additionalProperties")
    assert spec["required"] == ["mxReplicaSpecs"]
    assert "properties" not in at(spec, "mxReplicaSpecs"), "replica-type keys are the validator's business"
    assert at(replica, "replicas")["minimum"] == 1
    assert at(replica, "restartPolicy")["enum"] == ["Always", "OnFailure", "Never", "ExitCode"]
    assert at(spec, "jobMode")["enum"] == ["", "MXTrain", "MXTune"]
    assert at(spec, "successPolicy")["enum"] == ["", "AllWorkers"]
    for place in (spec, at(spec, "runPolicy")):
        assert at(place, "cleanPodPolicy")["enum"] == ["All", "Running", "None"]
        for name in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
            assert at(place, name)["minimum"] == 0
        assert at(place, "schedulingPolicy", "minAvailable")["minimum"] == 0
    assert set(at(spec, "runPolicy")["properties"]) == {
        "cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit", "schedulingPolicy",
        "suspend", "managedBy"}


def test_pod_template_schema_comes_from_kubernetes() -> None:
    template = at(schema_of(mxjob_crd()), "spec", "mxReplicaSpecs", "additionalProperties", "template")
    assert set(at(template, "metadata")["properties"]) == {"annotations", "finalizers", "labels", "name",
                                                            "namespace"}
    pod = at(template, "spec")
    assert pod["required"] == ["containers"]
    containers = at(pod, "containers")
    assert (containers["x-kubernetes-list-type"], containers["x-kubernetes-list-map-keys"]) == ("map", ["name"])
    container = containers["items"]
    assert container["required"] == ["name"]
    assert at(container, "ports", "items", "containerPort") == {"type": "integer", "format": "int32"}
    assert "x-kubernetes-list-type" not in at(container, "ports"), "protocol is not required: no list-map"
    assert at(container, "livenessProbe", "httpGet", "port") == {"x-kubernetes-int-or-string": True}
    quantity = at(container, "resources", "limits", "additionalProperties")
    assert quantity["x-kubernetes-int-or-string"] is True and quantity["pattern"].startswith("^")
    descriptions = [p for p, node in walk(template) if "description" in node and p.count(".properties") > 1]
    assert descriptions == [], "Kubernetes' descriptions are stripped (size)"


def test_status_schema_carries_both_replica_status_maps() -> None:
    status = at(schema_of(mxjob_crd()), "status")
    assert set(status["properties"]) == {"conditions", "replicaStatuses", "mxReplicaStatuses", "startTime",
                                         "completionTime", "lastReconcileTime", "restartCount", "replicaHistory"}
    assert at(status, "replicaStatuses") == at(status, "mxReplicaStatuses") | {
        "description": at(status, "replicaStatuses")["description"]}
    assert at(status, "conditions", "items")["required"] == ["type", "status"]
    for name in ("startTime", "completionTime", "lastReconcileTime"):
        assert (at(status, name)["type"], at(status, name)["format"]) == ("string", "date-time")


def test_replica_spec_docs_state_the_rules_the_controller_follows() -> None:
    """What ``kubectl explain mxjob.spec.mxReplicaSpecs`` shows: the ExitCode table of core/pods.py (it once
    said 128-255, which the controller never did) and the replica limits the schema enforces."""
    for version in mxjob_crd()["spec"]["versions"]:
        replica = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["mxReplicaSpecs"][
            "additionalProperties"]["properties"]
        policy = replica["restartPolicy"]["description"]
        assert "128-255" not in policy and "1-127" not in policy
        assert all(str(code) in policy for code in RETRYABLE_EXIT_CODES)
        assert replica["replicas"]["maximum"] == MAX_REPLICAS_PER_TYPE
        assert f"at most {MAX_REPLICAS_PER_TYPE}" in replica["replicas"]["description"]
        assert f"at most {MAX_REPLICAS_PER_JOB} in all" in replica["replicas"]["description"]


def _undescribed(node: Any, path: str = "") -> list[str]:
    """The paths of this project's schema nodes without a description (the pod template's, which is Kubernetes'
    own schema, aside)."""
    if not isinstance(node, dict):
        return []
    missing = [] if node.get("description") or not path else [path]
    if path.endswith(".template"):
        return missing
    for name, child in (node.get("properties") or {}).items():
        missing += _undescribed(child, f"{path}.{name}" if path else name)
    for key in ("items", "additionalProperties"):
        if isinstance(node.get(key), dict):
            missing += _undescribed(node[key], f"{path}[{key}]")
    return missing


@pytest.mark.parametrize("crd", [mxjob_crd(), tfjob_crd(), genericjob_crd()],
                         ids=lambda c: c["spec"]["names"]["kind"])
def test_every_top_level_field_is_described_for_kubectl_explain(crd):
    """``kubectl explain mxjob.spec`` printed ``<empty>``: the object's own fields (apiVersion, kind, spec, status)
    each say what they are; metadata is kube's (a structural schema allows nothing but its type)."""
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        assert schema.get("description"), version["name"]
        undescribed = [p for p in _undescribed(schema) if p.count(".") == 0]
        assert undescribed == ["metadata"], (version["name"], undescribed)   # only type: object allowed there


def test_the_json_copy_holds_the_yaml_files_crds() -> None:
    """The local cluster reads data/crds.json (fast); kubectl users and the wheel's YAML readers the files: the same
    CRDs, file by file."""
    folder = ROOT / "mxjob_controller" / "data" / "crds"
    from_yaml = {p.name: yaml.safe_load(p.read_text()) for p in sorted(folder.glob("*.yaml"))}
    assert json.loads((ROOT / PACKAGE_DATA_JSON).read_text()) == from_yaml
