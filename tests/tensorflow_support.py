"""TFJob bodies and views for the TensorFlow tests, the vendor's (seed 003) TFJob bodies kept in examples/, and the
reconciler harness serving TFJobs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from mxjob_controller.core.job_controller import JobController
from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.tensorflow.api import TFJobView, parse_tfjob
from mxjob_controller.tensorflow.crd import tfjob_crd
from mxjob_controller.tensorflow.framework import TensorFlowFramework
from tests.reconciler_support import DEADLINE, Harness, jobs_path
from tests.support import Kube, wait_for

ROOT = Path(__file__).resolve().parent.parent
CLOUD = ROOT / "examples" / "cloud-api"
#: The vendor's responses for its TFJob examples (replace, patch, delete, list, get), as it printed them.
RESPONSES = json.loads((Path(__file__).parent / "data" / "cloud_api_tfjob_responses.json").read_text())
CLOUD_NS = "kube-test"


def create_body() -> dict[str, Any]:
    """The 2019 shape, as the vendor's API lists it: run policy inline (``backoffLimit: 6``), key ``Ps``, the
    template's ``restartPolicy: OnFailure``."""
    return json.loads((CLOUD / "create-tfjob.json").read_text())


def update_body() -> dict[str, Any]:
    """The vendor's ``PUT …/tfjobs/tfjob-test``: ``ttlSecondsAfterFinished: 1000`` inline, status included."""
    return json.loads((CLOUD / "update-tfjob-ttl.json").read_text())


def replica(replicas: int | None = 1, restart_policy: str | None = "Never", **container: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": {"spec": {"containers": [
        {"name": "tensorflow", "image": "tf/test:1", **container}]}}}
    if replicas is not None:
        body["replicas"] = replicas
    if restart_policy is not None:
        body["restartPolicy"] = restart_policy
    return body


def tfjob(name: str = "j", namespace: str = "default", *, chief: int = 0, master: int = 0, ps: int = 0,
          worker: int = 0, evaluator: int = 0, restart_policy: str = "Never", **spec: Any) -> dict[str, Any]:
    """A TFJob with the given replica counts (0 leaves a type out)."""
    specs = {rtype: replica(count, restart_policy) for rtype, count in (
        ("Chief", chief), ("Master", master), ("PS", ps), ("Worker", worker), ("Evaluator", evaluator)) if count}
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": name, "namespace": namespace},
            "spec": {"tfReplicaSpecs": specs, **spec}}


def view(body: dict[str, Any], uid: str = "u") -> TFJobView:
    body = copy.deepcopy(body)
    body["metadata"].setdefault("uid", uid)
    job, errors = parse_tfjob(body)
    assert job is not None, errors
    return job


class TFHarness(Harness):
    """The reconciler harness serving TFJobs too (MXJobs stay served): its job methods address ``tfjobs``."""

    plural = "tfjobs"

    def __init__(self, apiserver: APIServer, kube: Kube, tmp_path: Path) -> None:
        super().__init__(apiserver, kube, tmp_path)
        apiserver.create(tfjob_crd())
        wait_for(lambda: kube.get(jobs_path("default", plural="tfjobs")).ok, timeout=DEADLINE,
                 what="the TFJob API served")

    def start_tf(self, **options: Any) -> JobController:
        return self.start(framework=TensorFlowFramework(), **options)
