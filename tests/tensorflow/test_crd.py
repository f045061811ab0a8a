"""The generated TFJob CRD (tensorflow/crd.py): names, version and columns, a structural schema that keeps both
shapes of run policy, and the committed file equal to it and strict-valid for kubernetes-validate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.kube.k8s_schemas import schema_version
from mxjob_controller.kubeflow_api.crd_schema import structural_problems
from mxjob_controller.tensorflow.crd import tfjob_crd
from tests.tensorflow_support import ROOT

KUBERNETES_VALIDATE = Path(sys.executable).parent / "kubernetes-validate"


# --- the CRD --------------------------------------------------------------------------------------------------

def schema() -> dict[str, Any]:
    [version] = tfjob_crd()["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def test_the_crd_names_version_and_columns() -> None:
    crd = tfjob_crd()
    assert crd["metadata"]["name"] == "tfjobs.kubeflow.org"
    assert crd["spec"]["names"] == {"kind": "TFJob", "listKind": "TFJobList", "plural": "tfjobs",
                                    "singular": "tfjob", "shortNames": ["tfjob"]}
    [version] = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == ["State", "Age"]
    assert version["additionalPrinterColumns"][0]["jsonPath"] == ".status.conditions[-1:].type"


def test_the_schema_is_structural_and_keeps_both_shapes() -> None:
    assert structural_problems(schema()) == []
    spec = schema()["properties"]["spec"]
    assert spec["required"] == ["tfReplicaSpecs"]
    assert {"runPolicy", "successPolicy", "enableDynamicWorker", "backoffLimit", "ttlSecondsAfterFinished",
            "activeDeadlineSeconds", "cleanPodPolicy", "schedulingPolicy"} <= set(spec["properties"])
    replica_spec = spec["properties"]["tfReplicaSpecs"]["additionalProperties"]
    assert set(replica_spec["properties"]) == {"replicas", "restartPolicy", "template"}
    assert "(default)" in spec["properties"]["cleanPodPolicy"]["description"]
    assert "Running (default)" in spec["properties"]["runPolicy"]["properties"]["cleanPodPolicy"]["description"]
    assert set(schema()["properties"]["status"]["properties"]) == {
        "conditions", "replicaStatuses", "startTime", "completionTime", "lastReconcileTime", "restartCount",
        "replicaHistory"}


@pytest.mark.integration
def test_kubernetes_validate_strict_accepts_the_committed_crd(tmp_path: Path) -> None:
    path = ROOT / "manifests" / "crd" / "kubeflow.org_tfjobs.yaml"
    assert yaml.safe_load(path.read_text()) == tfjob_crd()
    proc = subprocess.run([str(KUBERNETES_VALIDATE), "--strict", "-k", schema_version(), str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tfjob_crd()
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-patch-strategy"] = "m"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    proc = subprocess.run([str(KUBERNETES_VALIDATE), "--strict", "-k", schema_version(), str(tmp_path / "bad.yaml")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0, "the check can fail"
