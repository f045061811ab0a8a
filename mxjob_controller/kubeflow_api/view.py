"""The typed, read-only view every Kubeflow kind's reconciler works from, and how a kind's parser builds it.

A kind's ``parse_job`` validates the object, applies the defaults to a copy and reads that copy into frozen
dataclasses (``mxnet/api.py``: :class:`JobView`, ``tensorflow/api.py``), so the reconciler never re-checks types,
never sees a lowercase replica key, and cannot change the object it was given (the input dict is never modified).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kubeflow_api.run_policy import RunPolicy


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
class KubeflowJobView:
    """A valid Kubeflow job as every framework's view of it holds it."""

    name: str
    namespace: str
    uid: str
    generation: int
    replicas: Mapping[str, KubeflowReplicaView]   # canonical type → view, in the API's type order
    run_policy: RunPolicy
    success_policy: str


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
