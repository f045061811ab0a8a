"""A typed, read-only view of a valid MXJob: what the reconciler works from.

``parse_job`` validates the object, applies the defaults to a copy and reads that copy into frozen
dataclasses, so the reconciler never re-checks types, never sees a lowercase replica key, and cannot
change the object it was given (the input dict is never modified).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mxjob_controller.api import checks
from mxjob_controller.api.constants import (
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    SUCCESS_DEFAULT,
    TUNER_SERVER_KEY_ANNOTATION,
)
from mxjob_controller.api.defaults import apply_defaults, default_container_index
from mxjob_controller.api.replica_types import canonical_order
from mxjob_controller.api.run_policy import RunPolicy, run_policy_of
from mxjob_controller.api.validation import validate_job
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.jsoncopy import deep_copy


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica type of a job, defaults applied."""

    type: str            # canonical: "Worker"
    replicas: int
    restart_policy: str
    tvm_label: str       # AutoTVM RPC key: ``label``, else the template's ``tuner-server-key`` annotation
    port: int            # the ``mxjob-port`` of the MXNet container
    _template: dict[str, Any] = field(repr=False)

    def pod_template(self) -> dict[str, Any]:
        """A fresh copy of the defaulted pod template, the caller's to modify."""
        return deep_copy(self._template)


@dataclass(frozen=True, slots=True)
class JobView:
    name: str
    namespace: str
    uid: str
    generation: int
    job_mode: str                         # "" when the job has none
    replicas: Mapping[str, ReplicaView]   # canonical type → view, in the API's type order
    run_policy: RunPolicy
    success_policy: str


def parse_job(job: Mapping[str, Any]) -> tuple[JobView | None, list[FieldError]]:
    """(view, []) for a valid job; (None, every problem) otherwise. ``job`` is not modified."""
    errs = validate_job(job)
    if errs:
        return None, errs
    defaulted = apply_defaults({"metadata": job.get("metadata"), "spec": job.get("spec")})   # not the status
    meta = defaulted.get("metadata") or {}
    spec = defaulted["spec"]
    specs = spec["mxReplicaSpecs"]
    views = {rtype: _replica_view(rtype, specs[rtype]) for rtype in canonical_order(list(specs))}
    return JobView(
        name=meta.get("name", ""), namespace=meta.get("namespace") or "", uid=meta.get("uid") or "",
        generation=meta.get("generation") or 0, job_mode=spec.get("jobMode") or "",
        replicas=MappingProxyType(views), run_policy=run_policy_of(spec),
        success_policy=spec.get("successPolicy") or SUCCESS_DEFAULT,
    ), []


def _replica_view(rtype: str, spec: dict[str, Any]) -> ReplicaView:
    template = spec["template"]
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    return ReplicaView(type=rtype, replicas=spec["replicas"], restart_policy=spec["restartPolicy"],
                       tvm_label=spec.get("label") or annotations.get(TUNER_SERVER_KEY_ANNOTATION) or "",
                       port=_job_port(template["spec"]), _template=template)


def _job_port(pod_spec: dict[str, Any]) -> int:
    containers = pod_spec["containers"]
    for port in containers[default_container_index(containers)].get("ports") or ():
        if port.get("name") == DEFAULT_PORT_NAME and checks.is_int(port.get("containerPort")):
            return port["containerPort"]
    return DEFAULT_PORT
