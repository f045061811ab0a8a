"""Defaults the controller applies to its in-memory copy of an MXJob (never written back to the spec).

The rules, as Kubeflow's Go operators apply them:

- ``spec.mxReplicaSpecs`` keys are renamed to the canonical spelling (``worker`` → ``Worker``), unless two
  keys fold to the same type (validation reports that);
- each replica spec gets ``replicas: 1`` and ``restartPolicy: Never`` when they are unset;
- ``cleanPodPolicy`` becomes ``All`` when neither ``spec.cleanPodPolicy`` nor ``spec.runPolicy.cleanPodPolicy``
  is set (written under ``spec.runPolicy`` when the job has one, inline otherwise);
- the container named ``mxnet`` (else the first container) gets the port
  ``{name: mxjob-port, containerPort: 9091}`` unless it already has a port of that name, whose number is
  then kept: it is the port the DMLC scheduler listens on.

Defaulting is total: malformed input is copied as it is (validation reports it), never an exception.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.api.constants import (
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    DEFAULT_REPLICAS,
    DEFAULT_RESTART_POLICY,
)
from mxjob_controller.api.replica_types import canonical_type
from mxjob_controller.kube.jsoncopy import deep_copy


def apply_defaults(job: dict[str, Any]) -> dict[str, Any]:
    """A defaulted deep copy of ``job``; the argument is not modified."""
    out = deep_copy(job)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    specs = spec.get("mxReplicaSpecs")
    if isinstance(specs, dict):
        spec["mxReplicaSpecs"] = specs = normalized_keys(specs)
        for replica in specs.values():
            if isinstance(replica, dict):
                _default_replica(replica)
    _default_clean_pod_policy(spec)
    return out


def normalized_keys(specs: dict[str, Any]) -> dict[str, Any]:
    """The same map with every key in canonical spelling, order kept; ambiguous or unknown keys untouched."""
    folded: dict[str, int] = {}
    for key in specs:
        canon = canonical_type(key)
        if canon is not None:
            folded[canon] = folded.get(canon, 0) + 1
    out: dict[str, Any] = {}
    for key, value in specs.items():
        canon = canonical_type(key)
        out[canon if canon is not None and folded[canon] == 1 else key] = value
    return out


def _default_replica(replica: dict[str, Any]) -> None:
    if replica.get("replicas") is None:
        replica["replicas"] = DEFAULT_REPLICAS
    if replica.get("restartPolicy") is None:
        replica["restartPolicy"] = DEFAULT_RESTART_POLICY
    template = replica.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(pod_spec, dict):
        _default_port(pod_spec)


def default_container_index(containers: list[Any]) -> int:
    """Index of the container named ``mxnet``, else 0: the one that gets the job's port and DMLC variables."""
    for i, container in enumerate(containers):
        if isinstance(container, dict) and container.get("name") == DEFAULT_CONTAINER_NAME:
            return i
    return 0


def _default_port(pod_spec: dict[str, Any]) -> None:
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return
    container = containers[default_container_index(containers)]
    if not isinstance(container, dict):
        return
    ports = container.get("ports")
    if ports is None:
        ports = container["ports"] = []
    if not isinstance(ports, list):
        return
    if not any(isinstance(p, dict) and p.get("name") == DEFAULT_PORT_NAME for p in ports):
        ports.append({"name": DEFAULT_PORT_NAME, "containerPort": DEFAULT_PORT})


def _default_clean_pod_policy(spec: dict[str, Any]) -> None:
    run_policy = spec.get("runPolicy")
    if spec.get("cleanPodPolicy") is not None:
        return
    if isinstance(run_policy, dict):
        if run_policy.get("cleanPodPolicy") is None:
            run_policy["cleanPodPolicy"] = DEFAULT_CLEAN_POD_POLICY
    elif run_policy is None:
        spec["cleanPodPolicy"] = DEFAULT_CLEAN_POD_POLICY
