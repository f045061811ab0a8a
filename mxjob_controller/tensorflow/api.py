"""The TFJob API (``kubeflow.org/v1``, kind ``TFJob``): names, defaults, validation, the reconciler's typed view
and the status shape. Pure functions over plain dicts; what is shared with MXJob (run policy and its inline/nested
merge, checks, the pod-template schema, the replica-map rules) is imported from ``mxjob_controller.kubeflow_api``.

Defaults, applied to an in-memory copy on every parse (as training-operator does) and written into the stored job
at admission (the defaulting webhook; replica keys kept as written):

- ``tfReplicaSpecs`` keys in canonical spelling (``Ps``, ``ps`` → ``PS``; ``worker`` → ``Worker``...);
- ``replicas: 1``, ``restartPolicy: Never``; the ``tensorflow`` container (else the first) gets
  ``{name: tfjob-port, containerPort: 2222}`` unless it has a port of that name;
- ``successPolicy: ""``; ``cleanPodPolicy: Running``, tf-operator v1.0's default, which the vendor's 2019 bodies
  were written against: a parameter server never exits, so under 1.9's ``None`` it would run on after the job
  succeeded, holding its resources until someone deletes the job.

Validation reports every problem at the field the user wrote (as training-operator 1.9's webhook, and more):

- ``metadata.name``: a DNS-1035 label, short enough that every ``<job>-<type>-<index>`` is at most 63 characters;
- ``spec.tfReplicaSpecs``: present; types Chief, Master, PS, Worker, Evaluator only (any case; no two keys folding
  to one type); not both Chief and Master (``Forbidden``, checked after folding, so ``chief`` + ``Master`` is
  caught, unlike 1.9); exactly 1 Chief or Master replica; a Chief, Master or Worker (else the job could never
  succeed: 1.9 accepted such jobs and left them running forever); each replica's ``replicas``, ``restartPolicy``
  and pod template as for MXJob, with a container named ``tensorflow``;
- the run policy, inline and under ``spec.runPolicy`` (``kubeflow_api/run_policy.py``); ``successPolicy`` ``""`` or
  ``AllWorkers``; ``enableDynamicWorker`` a boolean.

Status: per-type counts in ``status.replicaStatuses`` under the canonical keys (``PS``, as the vendor's responses
show for a spec keyed ``Ps``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from mxjob_controller.core.finished_jobs import CLEAN_RUNNING
from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.constants import GROUP, SUCCESS_DEFAULT, SUCCESS_POLICIES
from mxjob_controller.kubeflow_api.defaults import (
    default_container_index,
    default_run_policy,
    named_port,
    with_replica_defaults,
)
from mxjob_controller.kubeflow_api.replica_types import canonical_order
from mxjob_controller.kubeflow_api.run_policy import run_policy_errors, run_policy_of
from mxjob_controller.kubeflow_api.status import REPLICA_STATUSES, ReplicaCounts, replica_counts, with_replica_counts
from mxjob_controller.kubeflow_api.validation import (
    ReplicaRules,
    common_replica_spec_errors,
    job_errors,
    replica_specs_errors,
    type_list,
    unique,
)
from mxjob_controller.kubeflow_api.view import KubeflowJobView, KubeflowReplicaView, defaulted_parts, identity

# --- the resource ----------------------------------------------------------------------------------------

KIND = "TFJob"
LIST_KIND = "TFJobList"
PLURAL = "tfjobs"
SINGULAR = "tfjob"
SHORT_NAMES = ("tfjob",)
VERSION = "v1"
VERSIONS = (VERSION,)
CRD_NAME = f"{PLURAL}.{GROUP}"
API_VERSION = f"{GROUP}/{VERSION}"
#: training-operator's controller name for TFJobs: the ``operator-name`` label value and the events' source.
OPERATOR_NAME = "tfjob-controller"
#: The ``framework`` label of the job metrics (training-operator's ``TFJobFrameworkName``).
FRAMEWORK_NAME = "tensorflow"

# --- replica types and pods ------------------------------------------------------------------------------

CHIEF = "Chief"
MASTER = "Master"     # the older name of Chief, still accepted
PS = "PS"
WORKER = "Worker"
EVALUATOR = "Evaluator"
#: Canonical spelling, in the order children are created (and errors name them).
REPLICA_TYPES = (CHIEF, MASTER, PS, WORKER, EVALUATOR)
CHIEF_TYPES = frozenset({CHIEF, MASTER})
#: A job succeeds through one of these (its Chief/Master, else its Workers).
DECIDING_TYPES = (CHIEF, MASTER, WORKER)

CONTAINER = "tensorflow"
PORT_NAME = "tfjob-port"
PORT = 2222
DEFAULT_CLEAN_POD_POLICY = CLEAN_RUNNING

SPECS_PATH = "spec.tfReplicaSpecs"
RULES = ReplicaRules(SPECS_PATH, REPLICA_TYPES, CHIEF_TYPES, CONTAINER, "the TensorFlow process")
#: Where TFJob status keeps its counts (training-operator's only map).
COUNT_MAPS = (REPLICA_STATUSES,)


# --- defaults --------------------------------------------------------------------------------------------

def apply_defaults(job: dict[str, Any], canonical_keys: bool = True) -> dict[str, Any]:
    """A defaulted deep copy of ``job``; the argument is not modified. Total: malformed input is copied as it is.
    ``canonical_keys=False``: the replica keys as the user wrote them (``Ps`` stays ``Ps``: what admission stores)."""
    out, spec = with_replica_defaults(job, RULES.key, REPLICA_TYPES, CONTAINER, PORT_NAME, PORT, canonical_keys)
    if spec is not None:
        if spec.get("successPolicy") is None:
            spec["successPolicy"] = SUCCESS_DEFAULT
        default_run_policy(spec, DEFAULT_CLEAN_POD_POLICY)
    return out


def admission_defaults(job: dict[str, Any]) -> dict[str, Any]:
    """What the defaulting webhook stores: the defaults, the user's replica keys kept."""
    return apply_defaults(job, canonical_keys=False)


# --- validation ------------------------------------------------------------------------------------------

def validate_tfjob(job: Mapping[str, Any]) -> list[FieldError]:
    """Every problem with a TFJob (a plain dict, as the API server sends it); empty when it is valid."""
    errs, spec = job_errors(job, RULES)
    if spec is None:
        return errs
    errs += _replica_specs_errors(spec.get(RULES.key))
    errs += run_policy_errors(spec)
    if spec.get("successPolicy") is not None:
        errs += checks.enum_errors(spec["successPolicy"], "spec.successPolicy", SUCCESS_POLICIES)
    if spec.get("enableDynamicWorker") is not None:
        errs += checks.bool_errors(spec["enableDynamicWorker"], "spec.enableDynamicWorker")
    return unique(errs)


def _replica_specs_errors(specs: Any) -> list[FieldError]:
    return replica_specs_errors(specs, RULES, lambda rtype, spec, path: common_replica_spec_errors(
        rtype, spec, path, RULES), _required_types_errors)


def _required_types_errors(present: set[str]) -> list[FieldError]:
    """A TFJob has at most one of Chief and Master, and a type whose outcome decides the job's."""
    errs: list[FieldError] = []
    if present >= CHIEF_TYPES:
        errs.append(fe.forbidden(SPECS_PATH, "must not have more than 1 Chief or Master role"))
    if not present.intersection(DECIDING_TYPES):
        errs.append(fe.required(SPECS_PATH, f"every TFJob needs one of {type_list(DECIDING_TYPES)}: the job "
                                            "succeeds when they do"))
    return errs


# --- the typed view --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TFReplicaView(KubeflowReplicaView):
    """One replica type of a TFJob (``port``: its ``tensorflow`` container's ``tfjob-port``)."""

    ports: tuple[tuple[str, int], ...] = ()   # every named port of that container: its Service's ports


@dataclass(frozen=True, slots=True)
class TFJobView(KubeflowJobView):
    """A valid TFJob (``replicas`` in REPLICA_TYPES order)."""

    enable_dynamic_worker: bool = False

    @property
    def has_chief(self) -> bool:
        return not CHIEF_TYPES.isdisjoint(self.replicas)


def parse_tfjob(job: Mapping[str, Any]) -> tuple[TFJobView | None, list[FieldError]]:
    """(view, []) for a valid TFJob; (None, every problem) otherwise. ``job`` is not modified."""
    meta, spec, errs = defaulted_parts(job, validate_tfjob, apply_defaults)
    if errs:
        return None, errs
    specs = spec["tfReplicaSpecs"]
    views = {rtype: _replica_view(rtype, specs[rtype]) for rtype in canonical_order(list(specs), REPLICA_TYPES)}
    return TFJobView(**identity(meta), replicas=MappingProxyType(views),
                     run_policy=run_policy_of(spec, DEFAULT_CLEAN_POD_POLICY), success_policy=spec["successPolicy"],
                     enable_dynamic_worker=bool(spec.get("enableDynamicWorker"))), []


def _replica_view(rtype: str, spec: dict[str, Any]) -> TFReplicaView:
    template = spec["template"]
    pod_spec = template["spec"]
    container = pod_spec["containers"][default_container_index(pod_spec["containers"], CONTAINER)]
    ports: dict[str, int] = {}
    for port in container.get("ports") or ():
        if isinstance(port.get("name"), str) and port["name"] and checks.is_int(port.get("containerPort")):
            ports.setdefault(port["name"], port["containerPort"])
    return TFReplicaView(type=rtype, replicas=spec["replicas"], restart_policy=spec["restartPolicy"],
                         port=named_port(pod_spec, CONTAINER, PORT_NAME, PORT), ports=tuple(ports.items()),
                         _template=template)


# --- status ----------------------------------------------------------------------------------------------

def tfjob_replica_counts(status: Mapping[str, Any] | None) -> dict[str, ReplicaCounts]:
    """Canonical type → counts, from ``status.replicaStatuses`` (keys of any case)."""
    return replica_counts(status, REPLICA_TYPES, COUNT_MAPS)


def with_tfjob_replica_counts(status: Mapping[str, Any] | None,
                              counts: Mapping[str, ReplicaCounts]) -> dict[str, Any]:
    """A copy of ``status`` with ``replicaStatuses`` set to ``counts``."""
    return with_replica_counts(status, counts, COUNT_MAPS)
