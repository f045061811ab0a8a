"""MXJob v1alpha1 objects for its tests: mx-operator's (jzp1025 fork) seed objects, ``mx_job_dist.yaml`` and the
``kubectl get -o yaml`` dump of it from its README (research note §4, checklist §5.3), builders of v1alpha1 and v1
jobs, and what the API server would prune of an object under the v1alpha1 schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mxjob_controller.mxnet import crd, v1alpha1
from mxjob_controller.mxnet.v1alpha1 import V1_EXTRA_ANNOTATION, V1ALPHA1_EXTRA_ANNOTATION, to_v1

ALPHA = "kubeflow.org/v1alpha1"
V1 = "kubeflow.org/v1"
V1BETA1 = "kubeflow.org/v1beta1"
WORKDIR = "/incubator-mxnet/example/image-classification"
MANAGED = (V1ALPHA1_EXTRA_ANNOTATION, V1_EXTRA_ANNOTATION)


# --- the seed objects --------------------------------------------------------------------------------------------

def seed_container(*args: str) -> dict[str, Any]:
    return {"image": "jzp1025/mxnet:test", "name": "mxnet", "command": ["python"],
            "args": list(args) or ["train_mnist.py"], "workingDir": WORKDIR}


WORKER_ARGS = ("train_mnist.py", "--num-epochs=10", "--num-layers=2", "--kv-store=dist_device_sync")


def seed_manifest() -> dict[str, Any]:
    """``examples/mxjob_sample/mx_job_dist.yaml``, as the README shows it."""
    def entry(rtype: str, *args: str, **extra: Any) -> dict[str, Any]:
        return {"replicas": 1, "mxReplicaType": rtype, **extra,
                "template": {"spec": {"containers": [seed_container(*args)], "restartPolicy": "OnFailure"}}}

    return {"apiVersion": ALPHA, "kind": "MXJob", "metadata": {"name": "example-dist-job"},
            "spec": {"jobMode": "dist", "replicaSpecs": [
                entry("SCHEDULER", PsRootPort=9000), entry("SERVER"), entry("WORKER", *WORKER_ARGS)]}}


def seed_dump() -> dict[str, Any]:
    """``kubectl get -o yaml mxjobs example-dist-job`` from the README: defaults and RuntimeId persisted."""
    def entry(rtype: str, port: int, *args: str) -> dict[str, Any]:
        container = {**seed_container(*args), "resources": {}}
        return {"PsRootPort": port, "mxReplicaType": rtype, "replicas": 1,
                "template": {"metadata": {"creationTimestamp": None},
                             "spec": {"containers": [container], "restartPolicy": "OnFailure"}}}

    return {
        "apiVersion": ALPHA, "kind": "MXJob",
        "metadata": {"clusterName": "", "creationTimestamp": "2018-08-10T07:13:39Z", "generation": 1,
                     "name": "example-dist-job", "namespace": "default", "resourceVersion": "491499",
                     "selfLink": "/apis/kubeflow.org/v1alpha1/namespaces/default/mxjobs/example-dist-job",
                     "uid": "e800b1ed-9c6c-11e8-962f-704d7b2c0a63"},
        "spec": {"RuntimeId": "aycw", "jobMode": "dist", "mxImage": "jzp1025/mxnet:test",
                 "replicaSpecs": [entry("SCHEDULER", 9000), entry("SERVER", 9091), entry("WORKER", 9091, *WORKER_ARGS)],
                 "terminationPolicy": {"chief": {"replicaIndex": 0, "replicaName": "SCHEDULER"}}},
        "status": {"phase": "Running", "reason": "",
                   "replicaStatuses": [{"ReplicasStates": {"Running": 1}, "mx_replica_type": t, "state": "Running"}
                                       for t in ("SCHEDULER", "SERVER", "WORKER")],
                   "state": "Running"},
    }


# --- builders ----------------------------------------------------------------------------------------------------

def container(name: str = "mxnet", image: str = "mxnet/python:1.9.1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def pod(*containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"spec": {"containers": list(containers) or [container()], **extra}}


def entry(rtype: str | None, replicas: int | None = 1, template: dict[str, Any] | None = None,
          **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {**extra, "template": template if template is not None else pod(restartPolicy="OnFailure")}
    if rtype is not None:
        out["mxReplicaType"] = rtype
    if replicas is not None:
        out["replicas"] = replicas
    return out


def alpha_job(*entries: dict[str, Any], name: str = "mxjob", **spec: Any) -> dict[str, Any]:
    """A valid v1alpha1 job (all three types) unless entries are given."""
    if not entries:
        entries = (entry("SCHEDULER", PsRootPort=9000), entry("SERVER"), entry("WORKER", 2))
    return {"apiVersion": ALPHA, "kind": "MXJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobMode": "dist", **spec, "replicaSpecs": list(entries)}}


def replica(replicas: int | None = 1, template: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {**extra, "template": template if template is not None else pod()}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def v1_job(specs: dict[str, Any] | None = None, name: str = "mxjob", **spec: Any) -> dict[str, Any]:
    if specs is None:
        specs = {"Scheduler": replica(), "Server": replica(2), "Worker": replica(3)}
    return {"apiVersion": V1, "kind": "MXJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobMode": "MXTrain", **spec, "mxReplicaSpecs": specs}}


def edit(fn: Callable[[dict[str, Any]], Any], base: Callable[[], dict[str, Any]] = alpha_job) -> dict[str, Any]:
    job = base()
    fn(job)
    return job


def entries_of(job: dict[str, Any]) -> list[dict[str, Any]]:
    return job["spec"]["replicaSpecs"]


def extra_of(job: dict[str, Any], key: str) -> dict[str, Any] | None:
    raw = ((job.get("metadata") or {}).get("annotations") or {}).get(key)
    return json.loads(raw) if raw is not None else None


def without_status(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "status"}


def mxnet_ports(v1: dict[str, Any], key: str) -> list[dict[str, Any]]:
    containers = v1["spec"]["mxReplicaSpecs"][key]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "mxnet").get("ports") or []


# --- what the API server would prune --------------------------------------------------------------------------------

def pruned(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    """The fields of ``value`` a structural ``schema`` does not declare (the API server drops them)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    out: list[str] = []
    if isinstance(value, dict):
        props, more = schema.get("properties"), schema.get("additionalProperties")
        for key, sub in value.items():
            if props is not None and key in props:
                out += pruned(sub, props[key], f"{path}.{key}")
            elif isinstance(more, dict):
                out += pruned(sub, more, f"{path}[{key}]")
            else:
                out.append(f"{path}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, sub in enumerate(value):
            out += pruned(sub, schema["items"], f"{path}[{i}]")
    return out


def pruned_fields(obj: dict[str, Any]) -> list[str]:
    """What the API server would prune from ``obj``'s spec and status under its version's schema."""
    if obj["apiVersion"] == ALPHA:
        spec, status = v1alpha1.spec_schema(), v1alpha1.status_schema()
    else:
        spec, status = crd.spec_schema(), crd.status_schema()
    return pruned(obj.get("spec"), spec, "spec") + pruned(obj.get("status"), status, "status")


R = "spec.replicaSpecs"   # where v1alpha1 validation points
NOW = "2024-05-01T10:00:00Z"


def cond(ctype: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": ctype, "status": status, "reason": reason or f"MXJob{ctype}", "message": message,
            "lastUpdateTime": NOW, "lastTransitionTime": NOW}


def with_status(status: dict[str, Any] | None) -> dict[str, Any]:
    job = to_v1(alpha_job(entry("WORKER", 2), entry("SCHEDULER", PsRootPort=9000), entry("SERVER")))
    if status is not None:
        job["status"] = status
    return job


def assert_no_managed_annotations(obj: dict[str, Any]) -> None:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    assert not set(annotations) & set(MANAGED), annotations
