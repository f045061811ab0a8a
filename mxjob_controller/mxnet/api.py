"""The MXJob API: its names and vocabulary, its defaults and validation, the typed view the reconciler works from,
and where its status keeps the per-type counts. Pure functions over plain dicts (JSON as the API server sends
it): no I/O, no threads.

Values match Kubeflow's Go MXJob API (mxnet-operator v1, training-operator ``kubeflow.org/v1``) so that existing
manifests, clients and dashboards keep working against this controller unchanged. What every Kubeflow kind shares
(run policy, checks, replica-spec rules, defaults, the view's common fields, the status shape) is
``kubeflow_api/``'s; this module holds what is MXJob's own:

- its resource names, its replica types (Scheduler, Server, Worker, TunerTracker, TunerServer, Tuner; exactly one
  Scheduler, TunerTracker and Tuner), its job modes and the container ``mxnet`` with its port ``mxjob-port``;
- the defaults beyond the shared ones: ``cleanPodPolicy`` becomes ``All`` when neither ``spec.cleanPodPolicy``
  nor ``spec.runPolicy.cleanPodPolicy`` is set (where ``kubeflow_api/defaults.py`` puts it), mxnet-operator's
  default;
- the checks beyond the shared ones: ``spec.jobMode`` (``MXTune`` needs TunerTracker, TunerServer and Tuner; every
  job needs a Worker or a Tuner), a replica's ``label`` (a string), ``spec.successPolicy`` (``""`` or
  ``AllWorkers``). An ``MXTrain`` job needs no Scheduler or Server: training-operator v1.8.1's ``ValidateV1MXJob``
  checks only containers, images, the ``mxnet`` container and at most one Scheduler, so a Worker-only ``MXTrain``
  job is accepted (with a warning, :func:`job_warnings`: its Workers run without parameter servers); v1alpha1's
  ``dist`` mode keeps the old controller's rule (``mxnet/v1alpha1/validation.py``);
- :class:`JobView`, with the job mode and each replica's AutoTVM label;
- the two count maps: training-operator writes ``status.replicaStatuses``, mxnet-operator's clients read
  ``status.mxReplicaStatuses``; both are written with the same content and read ``replicaStatuses`` first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.constants import DEFAULT_CLEAN_POD_POLICY, GROUP, SUCCESS_DEFAULT, SUCCESS_POLICIES
from mxjob_controller.kubeflow_api.defaults import default_run_policy, named_port, with_replica_defaults
from mxjob_controller.kubeflow_api.replica_types import canonical_order, canonical_type
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

KIND = "MXJob"
LIST_KIND = "MXJobList"
PLURAL = "mxjobs"
SINGULAR = "mxjob"
SHORT_NAMES = ("mxj",)
CRD_NAME = f"{PLURAL}.{GROUP}"
STORAGE_VERSION = "v1"
#: Every served version, storage first. They share one schema, so conversion is ``None``.
VERSIONS = ("v1", "v1beta1")
API_VERSION = f"{GROUP}/{STORAGE_VERSION}"

# --- replica types and job modes -------------------------------------------------------------------------

SCHEDULER = "Scheduler"
SERVER = "Server"
WORKER = "Worker"
TUNER_TRACKER = "TunerTracker"
TUNER_SERVER = "TunerServer"
TUNER = "Tuner"
#: Canonical spelling, in the order jobs list them (and errors name them).
REPLICA_TYPES = (SCHEDULER, SERVER, WORKER, TUNER_TRACKER, TUNER_SERVER, TUNER)
#: Types a job runs exactly one of: the DMLC scheduler, the AutoTVM tracker and the tuner.
SINGLETON_TYPES = frozenset({SCHEDULER, TUNER_TRACKER, TUNER})
#: Every job needs one of these to do any work.
WORKLOAD_TYPES = (WORKER, TUNER)

MODE_TRAIN = "MXTrain"
MODE_TUNE = "MXTune"
#: ``""`` means "no mode" (Go clients send it for an unset field): no replica type is required.
JOB_MODES = ("", MODE_TRAIN, MODE_TUNE)
MODE_REQUIRED_TYPES: dict[str, tuple[str, ...]] = {
    MODE_TUNE: (TUNER_TRACKER, TUNER_SERVER, TUNER),
}
#: The parameter-server types of distributed (``MXTrain``) training: without them Workers train on their own.
PS_TYPES = (SCHEDULER, SERVER)

# --- pods ------------------------------------------------------------------------------------------------

DEFAULT_CONTAINER_NAME = "mxnet"
DEFAULT_PORT_NAME = "mxjob-port"
DEFAULT_PORT = 9091
#: Template annotation that carries the AutoTVM RPC key when a replica spec has no ``label``.
TUNER_SERVER_KEY_ANNOTATION = "tuner-server-key"

# --- status ----------------------------------------------------------------------------------------------

#: Condition and event reasons, spelled as the Go operators spell them (``MXJob`` + what happened).
REASON_CREATED = "MXJobCreated"
REASON_RUNNING = "MXJobRunning"
REASON_RESTARTING = "MXJobRestarting"
REASON_SUCCEEDED = "MXJobSucceeded"
REASON_FAILED = "MXJobFailed"
REASON_SUSPENDED = "MXJobSuspended"
REASON_RESUMED = "MXJobResumed"
#: The spec is invalid: the condition's message lists every field error.
REASON_FAILED_VALIDATION = "MXJobFailedValidation"

MX_REPLICA_STATUSES = "mxReplicaStatuses"
#: Where MXJob status keeps its counts, the map read first first.
MXJOB_COUNT_MAPS = (REPLICA_STATUSES, MX_REPLICA_STATUSES)


def mxjob_replica_counts(status: Mapping[str, Any] | None) -> dict[str, ReplicaCounts]:
    """Canonical type → counts, from ``replicaStatuses``, else the Go mxnet-operator's ``mxReplicaStatuses``."""
    return replica_counts(status, REPLICA_TYPES, MXJOB_COUNT_MAPS)


def with_mxjob_replica_counts(status: Mapping[str, Any] | None, counts: Mapping[str, ReplicaCounts]) -> dict[str, Any]:
    """A copy of ``status`` with both count maps set to ``counts``."""
    return with_replica_counts(status, counts, MXJOB_COUNT_MAPS)


# --- defaults --------------------------------------------------------------------------------------------

def apply_defaults(job: dict[str, Any], canonical_keys: bool = True) -> dict[str, Any]:
    """A defaulted deep copy of ``job``; the argument is not modified. ``canonical_keys=False``: the replica keys
    as the user wrote them (what admission stores)."""
    out, spec = with_replica_defaults(job, "mxReplicaSpecs", REPLICA_TYPES, DEFAULT_CONTAINER_NAME, DEFAULT_PORT_NAME,
                                      DEFAULT_PORT, canonical_keys)
    if spec is not None:
        default_run_policy(spec, DEFAULT_CLEAN_POD_POLICY)
    return out


def admission_defaults(job: dict[str, Any]) -> dict[str, Any]:
    """What the defaulting webhook stores: the defaults, the user's replica keys kept."""
    return apply_defaults(job, canonical_keys=False)


# --- validation ------------------------------------------------------------------------------------------

SPECS_PATH = "spec.mxReplicaSpecs"
MXJOB_RULES = ReplicaRules(SPECS_PATH, REPLICA_TYPES, SINGLETON_TYPES, DEFAULT_CONTAINER_NAME, "the MXNet process")


def validate_job(job: Mapping[str, Any]) -> list[FieldError]:
    """Every problem with an MXJob (a plain dict, as the API server sends it); empty when it is valid."""
    errs, spec = job_errors(job, MXJOB_RULES)
    if spec is None:
        return errs
    if spec.get("jobMode") is not None:
        errs += checks.enum_errors(spec["jobMode"], "spec.jobMode", JOB_MODES)
    errs += replica_specs_errors(spec.get(MXJOB_RULES.key), MXJOB_RULES, replica_spec_errors,
                                 lambda present: _required_types_errors(present, spec.get("jobMode")))
    errs += run_policy_errors(spec)
    if spec.get("successPolicy") is not None:
        errs += checks.enum_errors(spec["successPolicy"], "spec.successPolicy", SUCCESS_POLICIES)
    return unique(errs)


def _required_types_errors(present: set[str], job_mode: Any) -> list[FieldError]:
    errs = []
    needed = MODE_REQUIRED_TYPES.get(job_mode, ()) if isinstance(job_mode, str) else ()
    for rtype in needed:
        if rtype not in present:
            errs.append(fe.required(fe.child(SPECS_PATH, rtype),
                                    f'jobMode "{job_mode}" needs {type_list(needed[:-1])} and '
                                    f'{fe.format_value(needed[-1])} replica specs'))
    reported = any(t in WORKLOAD_TYPES and t not in present for t in needed)
    if not reported and not present.intersection(WORKLOAD_TYPES):
        errs.append(fe.required(SPECS_PATH, f'every job needs a "{WORKER}" or a "{TUNER}" replica spec'))
    return errs


def job_warnings(job: Mapping[str, Any]) -> list[str]:
    """What admission warns of in a valid MXJob: an ``MXTrain`` job without a Scheduler or a Server (accepted, as
    training-operator accepts it; its Workers get no ``DMLC_PS_ROOT_URI`` and train without parameter servers)."""
    spec = job.get("spec")
    if not isinstance(spec, Mapping) or spec.get("jobMode") != MODE_TRAIN:
        return []
    specs = spec.get("mxReplicaSpecs")
    present = {canonical_type(key, REPLICA_TYPES) for key in specs} if isinstance(specs, Mapping) else set()
    missing = [t for t in PS_TYPES if t not in present]
    if not missing:
        return []
    return [f'{SPECS_PATH}: jobMode "{MODE_TRAIN}" without {" and ".join(fe.format_value(t) for t in missing)} '
            f'replica spec{"s" if len(missing) > 1 else ""}: the job runs without parameter servers']


def replica_spec_errors(rtype: str, spec: Any, path: str) -> list[FieldError]:
    """One MXJob replica spec (``rtype`` is canonical, ``path`` names the key as written)."""
    errs = common_replica_spec_errors(rtype, spec, path, MXJOB_RULES)
    if isinstance(spec, dict) and spec.get("label") is not None:
        errs += checks.string_errors(spec["label"], fe.child(path, "label"))
    return errs


# --- the typed view --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ReplicaView(KubeflowReplicaView):
    """One replica type of an MXJob."""

    tvm_label: str = ""  # AutoTVM RPC key: ``label``, else the template's ``tuner-server-key`` annotation


@dataclass(frozen=True, slots=True)
class JobView(KubeflowJobView):
    """A valid MXJob."""

    job_mode: str = ""                    # "" when the job has none


def parse_job(job: Mapping[str, Any]) -> tuple[JobView | None, list[FieldError]]:
    """(view, []) for a valid job; (None, every problem) otherwise. ``job`` is not modified."""
    meta, spec, errs = defaulted_parts(job, validate_job, apply_defaults)
    if errs:
        return None, errs
    specs = spec["mxReplicaSpecs"]
    views = {rtype: _replica_view(rtype, specs[rtype]) for rtype in canonical_order(list(specs), REPLICA_TYPES)}
    return JobView(**identity(meta), job_mode=spec.get("jobMode") or "", replicas=MappingProxyType(views),
                   run_policy=run_policy_of(spec), success_policy=spec.get("successPolicy") or SUCCESS_DEFAULT), []


def _replica_view(rtype: str, spec: dict[str, Any]) -> ReplicaView:
    template = spec["template"]
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    return ReplicaView(type=rtype, replicas=spec["replicas"], restart_policy=spec["restartPolicy"],
                       tvm_label=spec.get("label") or annotations.get(TUNER_SERVER_KEY_ANNOTATION) or "",
                       port=named_port(template["spec"], DEFAULT_CONTAINER_NAME, DEFAULT_PORT_NAME, DEFAULT_PORT),
                       _template=template)
