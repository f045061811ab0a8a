"""A typed, read-only view of a valid MXJob: what the reconciler works from.

``parse_job`` validates the object, applies the defaults to a copy and reads that copy into frozen
dataclasses, so the reconciler never re-checks types, never sees a lowercase replica key, and cannot
change the object it was given (the input dict is never modified).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mxjob_controller.api.constants import (
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    SUCCESS_DEFAULT,
    TUNER_SERVER_KEY_ANNOTATION,
)
from mxjob_controller.api.defaults import apply_defaults, named_port
from mxjob_controller.api.replica_types import canonical_order
from mxjob_controller.api.run_policy import RunPolicy, run_policy_of
from mxjob_controller.api.validation import validate_job
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.jsoncopy import deep_copy


@dataclass(frozen=True, slots=True)
class KubeflowReplicaView:
    """One replica type of a Kubeflow job, defaults applied: what every framework's view of it holds."""

    type: str            # canonical: "Worker"
    replicas: int
    restart_policy: str
    port: int            # the framework container's job port (``mxjob-port``, ``tfjob-port``): where peers reach it
    _template: dict[str, Any] = field(repr=False)

    def pod_template(self) -> dict[str, Any]:
        """A fresh copy of the defaulted pod template, the caller's to modify."""
        return deep_copy(self._template)


@dataclass(frozen=True, slots=True)
class ReplicaView(KubeflowReplicaView):
    """One replica type of an MXJob."""

    tvm_label: str = ""  # AutoTVM RPC key: ``label``, else the template's ``tuner-server-key`` annotation


@dataclass(frozen=True, slots=True)
class KubeflowJobView:
    """A valid Kubeflow job as every framework's view of it holds it."""

    name: str
    namespace: str
    uid: str
    generation: int
    replicas: Mapping[str, KubeflowReplicaView]   # canonical type → view, in the API's type order
    run_policy: RunPolicy
    success_policy: str


@dataclass(frozen=True, slots=True)
class JobView(KubeflowJobView):
    """A valid MXJob."""

    job_mode: str = ""                    # "" when the job has none


Validate = Callable[[Mapping[str, Any]], list[FieldError]]
Defaults = Callable[[dict[str, Any]], dict[str, Any]]


def defaulted_parts(job: Mapping[str, Any], validate: Validate,
                    defaults: Defaults) -> tuple[dict[str, Any], dict[str, Any], list[FieldError]]:
    """(metadata, defaulted spec, []) of a valid job; ({}, {}, every problem) otherwise. ``job`` (its status
    included) is not modified."""
    errs = validate(job)
    if errs:
        return {}, {}, errs
    defaulted = defaults({"metadata": job.get("metadata"), "spec": job.get("spec")})   # not the status
    return defaulted.get("metadata") or {}, defaulted["spec"], []


def identity(meta: Mapping[str, Any]) -> dict[str, Any]:
    """A view's ``name``, ``namespace``, ``uid`` and ``generation``, from the job's metadata."""
    return {"name": meta.get("name", ""), "namespace": meta.get("namespace") or "", "uid": meta.get("uid") or "",
            "generation": meta.get("generation") or 0}


def parse_job(job: Mapping[str, Any]) -> tuple[JobView | None, list[FieldError]]:
    """(view, []) for a valid job; (None, every problem) otherwise. ``job`` is not modified."""
    meta, spec, errs = defaulted_parts(job, validate_job, apply_defaults)
    if errs:
        return None, errs
    specs = spec["mxReplicaSpecs"]
    views = {rtype: _replica_view(rtype, specs[rtype]) for rtype in canonical_order(list(specs))}
    return JobView(**identity(meta), job_mode=spec.get("jobMode") or "", replicas=MappingProxyType(views),
                   run_policy=run_policy_of(spec), success_policy=spec.get("successPolicy") or SUCCESS_DEFAULT), []


def _replica_view(rtype: str, spec: dict[str, Any]) -> ReplicaView:
    template = spec["template"]
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    return ReplicaView(type=rtype, replicas=spec["replicas"], restart_policy=spec["restartPolicy"],
                       tvm_label=spec.get("label") or annotations.get(TUNER_SERVER_KEY_ANNOTATION) or "",
                       port=named_port(template["spec"], DEFAULT_CONTAINER_NAME, DEFAULT_PORT_NAME, DEFAULT_PORT),
                       _template=template)
