"""MXJob bodies and views for the MXNet package's unit tests: a replica spec and a parsed job of them."""

from __future__ import annotations

from typing import Any

from mxjob_controller.mxnet.api import JobView, parse_job


def replica(replicas: int, **extra: Any) -> dict[str, Any]:
    container = {"name": "mxnet", "image": "mxjob/test:1", **extra.pop("container", {})}
    return {"replicas": replicas, "template": {"spec": {"containers": [container]}, **extra}}


def view(specs: dict[str, Any], name: str = "j", **spec: Any) -> JobView:
    job, errors = parse_job({"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
                             "metadata": {"name": name, "namespace": "ns", "uid": "u"},
                             "spec": {"mxReplicaSpecs": specs, **spec}})
    assert job is not None, errors
    return job
