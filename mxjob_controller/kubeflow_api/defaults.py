"""Defaults of a Kubeflow job, as Kubeflow's Go operators apply them to every kind (``SetDefaults_MXJob``,
``SetDefaults_TFJob``). Two users: the controller's in-memory copy on every parse (jobs created where no defaulting
webhook runs), and admission (the mutating webhook, and the local cluster's API server), which writes them into
the stored job so that ``kubectl get -o yaml`` and the Kubeflow SDK see what the controller will do.

- the replica-spec map's keys are renamed to the canonical spelling (``worker`` → ``Worker``), unless two keys
  fold to the same type (validation reports that); in memory only: a stored ``Ps`` stays ``Ps``, so a client's
  later merge patch of ``Ps`` (the 2019 shape the vendors' REST APIs serve) still finds its key;
- each replica spec gets ``replicas: 1`` and ``restartPolicy: Never`` when they are unset;
- the framework's container (by name, else the first container) gets the job's port (MXJob's
  ``{name: mxjob-port, containerPort: 9091}``) unless it already has a port of that name, whose number is then
  kept: it is the port the framework's peers reach a replica on;
- the run policy (:func:`default_run_policy`): ``spec.runPolicy`` exists (training-operator's clients, the
  Kubeflow SDK among them, refuse a job without it) and ``cleanPodPolicy`` is set, in the place the job's shape
  puts run-policy fields.

Defaulting is total: malformed input is copied as it is (validation reports it), never an exception. What names
a kind (its replica types, container, port, ``cleanPodPolicy`` default) is a parameter: each kind's ``api.py``
passes its own and adds its own rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.constants import DEFAULT_REPLICAS, DEFAULT_RESTART_POLICY, INLINE_RUN_POLICY_FIELDS
from mxjob_controller.kubeflow_api.replica_types import canonical_type


def with_replica_defaults(job: dict[str, Any], key: str, types: Sequence[str], container: str, port_name: str,
                          port: int, canonical_keys: bool = True) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A deep copy of ``job`` whose ``spec.<key>`` map has defaulted replica specs (and canonical keys, unless
    ``canonical_keys`` is false: admission keeps the user's); and that copy's spec (None when it is not an
    object)."""
    out = deep_copy(job)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out, None
    specs = spec.get(key)
    if isinstance(specs, dict):
        if canonical_keys:
            spec[key] = specs = normalized_keys(specs, types)
        for replica in specs.values():
            if isinstance(replica, dict):
                default_replica(replica, container, port_name, port)
    return out, spec


def default_run_policy(spec: dict[str, Any], clean_pod_policy: str) -> None:
    """``spec.runPolicy`` an object, and ``cleanPodPolicy`` set where the job's shape puts run-policy fields.

    A job in the older shape (run-policy fields inline in ``spec``, none under ``runPolicy``: mxnet-operator's,
    tf-operator v1.0's) gets it inline beside them, so a later merge patch of the inline field cannot conflict with
    a copy of it (both places set to different values is an error); every other job gets it under ``runPolicy``,
    training-operator's place. A value set in either place is kept; a ``runPolicy`` that is not an object is left
    for validation to report."""
    nested = spec.get("runPolicy")
    if nested is None:
        nested = spec["runPolicy"] = {}
    if not isinstance(nested, dict):
        return
    if spec.get("cleanPodPolicy") is not None or nested.get("cleanPodPolicy") is not None:
        return
    inline_shape = any(spec.get(k) is not None for k in INLINE_RUN_POLICY_FIELDS) and not any(
        v is not None for v in nested.values())
    (spec if inline_shape else nested)["cleanPodPolicy"] = clean_pod_policy


def normalized_keys(specs: dict[str, Any], types: Sequence[str]) -> dict[str, Any]:
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


def default_container_index(containers: list[Any], name: str) -> int:
    """Index of the container named ``name`` (MXJob's ``mxnet``), else 0: the one that gets the job's port and the
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
