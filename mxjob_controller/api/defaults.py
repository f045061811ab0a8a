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

Defaulting is total: malformed input is copied as it is (validation reports it), never an exception. The
helpers that are MXJob's only by a name (the replica types, the container, the port) take it as a parameter, so
another framework's defaults (``tensorflow/api.py``) use the same rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mxjob_controller.api import checks
from mxjob_controller.api.constants import (
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    DEFAULT_REPLICAS,
    DEFAULT_RESTART_POLICY,
    REPLICA_TYPES,
)
from mxjob_controller.api.replica_types import canonical_type
from mxjob_controller.kube.jsoncopy import deep_copy


def apply_defaults(job: dict[str, Any]) -> dict[str, Any]:
    """A defaulted deep copy of ``job``; the argument is not modified."""
    out, spec = with_replica_defaults(job, "mxReplicaSpecs", REPLICA_TYPES, DEFAULT_CONTAINER_NAME, DEFAULT_PORT_NAME,
                                      DEFAULT_PORT)
    if spec is not None:
        _default_clean_pod_policy(spec)
    return out


def with_replica_defaults(job: dict[str, Any], key: str, types: Sequence[str], container: str, port_name: str,
                          port: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A deep copy of ``job`` whose ``spec.<key>`` map has canonical keys and defaulted replica specs; and that
    copy's spec (None when it is not an object)."""
    out = deep_copy(job)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out, None
    specs = spec.get(key)
    if isinstance(specs, dict):
        spec[key] = specs = normalized_keys(specs, types)
        for replica in specs.values():
            if isinstance(replica, dict):
                default_replica(replica, container, port_name, port)
    return out, spec


def normalized_keys(specs: dict[str, Any], types: Sequence[str] = REPLICA_TYPES) -> dict[str, Any]:
    """The same map with every key in canonical spelling, order kept; ambiguous or unknown keys untouched."""
    folded: dict[str, int] = {}
    for key in specs:
        canon = canonical_type(key, types)
        if canon is not None:
            folded[canon] = folded.get(canon, 0) + 1
    out: dict[str, Any] = {}
    for key, value in specs.items():
        canon = canonical_type(key, types)
        out[canon if canon is not None and folded[canon] == 1 else key] = value
    return out


def default_replica(replica: dict[str, Any], container: str, port_name: str, port: int) -> None:
    """``replicas: 1``, ``restartPolicy: Never`` when unset, and the job's port on the framework's container."""
    if replica.get("replicas") is None:
        replica["replicas"] = DEFAULT_REPLICAS
    if replica.get("restartPolicy") is None:
        replica["restartPolicy"] = DEFAULT_RESTART_POLICY
    template = replica.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if isinstance(pod_spec, dict):
        _default_port(pod_spec, container, port_name, port)


def default_container_index(containers: list[Any], name: str = DEFAULT_CONTAINER_NAME) -> int:
    """Index of the container named ``name`` (``mxnet``), else 0: the one that gets the job's port and the
    framework's variables."""
    for i, container in enumerate(containers):
        if isinstance(container, dict) and container.get("name") == name:
            return i
    return 0


def _default_port(pod_spec: dict[str, Any], name: str, port_name: str, port: int) -> None:
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return
    container = containers[default_container_index(containers, name)]
    if not isinstance(container, dict):
        return
    ports = container.get("ports")
    if ports is None:
        ports = container["ports"] = []
    if not isinstance(ports, list):
        return
    if not any(isinstance(p, dict) and p.get("name") == port_name for p in ports):
        ports.append({"name": port_name, "containerPort": port})


def named_port(pod_spec: dict[str, Any], container: str, port_name: str, default: int) -> int:
    """The ``containerPort`` of the port named ``port_name`` of the framework's container (a defaulted, valid pod
    spec), else ``default``: the port its peers reach a replica on."""
    containers = pod_spec["containers"]
    for port in containers[default_container_index(containers, container)].get("ports") or ():
        if port.get("name") == port_name and checks.is_int(port.get("containerPort")):
            return port["containerPort"]
    return default


def _default_clean_pod_policy(spec: dict[str, Any]) -> None:
    run_policy = spec.get("runPolicy")
    if spec.get("cleanPodPolicy") is not None:
        return
    if isinstance(run_policy, dict):
        if run_policy.get("cleanPodPolicy") is None:
            run_policy["cleanPodPolicy"] = DEFAULT_CLEAN_POD_POLICY
    elif run_policy is None:
        spec["cleanPodPolicy"] = DEFAULT_CLEAN_POD_POLICY
