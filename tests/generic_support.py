"""GenericJob bodies and views for the GenericJob tests, and the reconciler harness serving GenericJobs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from mxjob_controller.core.job_controller import JobController
from mxjob_controller.generic.api import GenericJobView, parse_genericjob
from mxjob_controller.generic.crd import genericjob_crd
from mxjob_controller.generic.framework import GenericFramework
from mxjob_controller.local.apiserver.server import APIServer
from tests.reconciler_support import DEADLINE, Harness, jobs_path
from tests.support import Kube, wait_for

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "generic"
PLURAL = "genericjobs"
API_VERSION = "batch.tensorstack.dev/v1beta1"


def replica(rtype: str, replicas: int | None = 1, policy: str | None = None, limit: int | None = None,
            **container: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"type": rtype, "template": {"spec": {"containers": [
        {"name": "main", "image": "generic/test:1", **container}]}}}
    if replicas is not None:
        body["replicas"] = replicas
    restart = {k: v for k, v in (("policy", policy), ("limit", limit)) if v is not None}
    if restart:
        body["restartPolicy"] = restart
    return body


def genericjob(name: str = "g", namespace: str = "default", *replicas: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A GenericJob of ``replicas`` (default: one ``worker``) and the other ``spec`` fields given."""
    return {"apiVersion": API_VERSION, "kind": "GenericJob", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicaSpecs": list(replicas) or [replica("worker")], **spec}}


def view(body: dict[str, Any], uid: str = "u") -> GenericJobView:
    body = copy.deepcopy(body)
    body["metadata"].setdefault("uid", uid)
    job, errors = parse_genericjob(body)
    assert job is not None, errors
    return job


class GenericHarness(Harness):
    """The reconciler harness serving GenericJobs too: its job methods address ``genericjobs``."""

    plural = PLURAL

    def __init__(self, apiserver: APIServer, kube: Kube, tmp_path: Path, rbac_install: str | None = None) -> None:
        super().__init__(apiserver, kube, tmp_path, rbac_install)
        apiserver.create(genericjob_crd())
        wait_for(lambda: kube.get(jobs_path("default", plural=PLURAL)).ok, timeout=DEADLINE,
                 what="the GenericJob API served")

    def start_generic(self, **options: Any) -> JobController:
        return self.start(framework=GenericFramework(), **options)

    def status(self, namespace: str, name: str) -> dict[str, Any]:
        return self.job(namespace, name).get("status") or {}

    def wait_pods(self, namespace: str, job: str, count: int) -> list[dict[str, Any]]:
        """Wait until the job has ``count`` pods (a job without ``spec.service`` has no Services); the pods."""
        return wait_for(lambda: pods if len(pods := self.pods(namespace, job)) == count else None,
                        timeout=DEADLINE, what=f"{count} pods of {namespace}/{job}")

    def wait_phase(self, namespace: str, name: str, phase: str) -> dict[str, Any]:
        """Wait for the job's phase; its status then."""
        return wait_for(lambda: s if (s := self.status(namespace, name)).get("phase") == phase else None,
                        timeout=DEADLINE, what=f"{namespace}/{name} phase {phase}")



T9K_PODGROUPS = "/apis/scheduler.tensorstack.dev/v1beta1/namespaces/{namespace}/podgroups"


# --- T9k's keras tutorial: a hand-built TF_CONFIG -------------------------------------------------------------

KERAS_TF_CONFIG = ('{"cluster":{"worker":["$(service.worker[0].host):$(service.port[http])","$(service.worker[1].host)'
                   ':$(service.port[http])","$(service.worker[2].host):$(service.port[http])","$(service.worker[3].'
                   'host):$(service.port[http])"]},"task":{"type":"$(type)","index":$(rank)}}')
KERAS_NAME = "keras-mnist-genericjob"
KERAS_CLUSTER = {"worker": [f"{KERAS_NAME}-worker-{i}:2222" for i in range(4)]}


def keras() -> dict[str, Any]:
    """T9k's keras tutorial job: four workers, each given the whole cluster in a TF_CONFIG of variables."""
    return genericjob(KERAS_NAME, "default",
                      replica("worker", 4, policy="OnFailure", limit=100,
                              command=["python", "keras_mnist_genericjob.py", "--log_dir", "log"],
                              env=[{"name": "TF_CONFIG", "value": KERAS_TF_CONFIG}]),
                      successRules=[{"worker": [0]}], failureRules=[{"worker": [i]} for i in range(4)],
                      service={"ports": [{"name": "http", "port": 2222}]}, cleanUpPolicy="Unfinished")
