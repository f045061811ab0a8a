"""MXJob ``kubeflow.org/v1alpha1``: the oldest mx-operator's list-style API, and its lossless conversion to and from
``v1``, so one CRD can serve both (``v1`` stored, a conversion webhook in between). Pure functions over plain dicts;
none modifies its input.

Why a converter and not ``conversion: None``: the two shapes disagree (a list of replica specs against a map, a list
of replica statuses against a map), and the API server prunes every field the target version's schema does not
declare, so only a converter keeps a v1alpha1 job whole when it is stored as v1.

The mapping (v1alpha1 → v1; ``to_v1alpha1`` is its inverse):

==========================================  ===========================================================================
v1alpha1                                    v1
==========================================  ===========================================================================
``replicaSpecs[i]`` of ``mxReplicaType``    ``mxReplicaSpecs.Scheduler|Server|Worker`` (an unset type is WORKER, as in
SCHEDULER, SERVER, WORKER                   v1alpha1). v1 cannot hold two entries of a type: the second gets another
                                            spelling of the key (``WORKER``, ``worker``...), which v1 validation
                                            refuses as a duplicate, as v1alpha1 validation refuses the list
``replicas``, ``template``                  the same (unset stays unset: both default to 1)
``template.spec.restartPolicy``             the replica's ``restartPolicy`` (unset: v1's default, Never). v1alpha1
                                            ran pods with the template's; v1 overrides it with the replica's
``PsRootPort`` (of every entry)             ``{name: mxjob-port, containerPort: <PsRootPort>}`` on that type's
                                            ``mxnet`` container (else its first), where v1 reads each type's port;
                                            unset: no port, so v1's default 9091, v1alpha1's default too
``jobMode`` dist, local, "" or unset        ``jobMode: MXTrain``
``cleanupPodPolicy`` All, Running, None     ``runPolicy.cleanPodPolicy``, the same; "" or unset: ``All`` (v1alpha1's
                                            behaviour, written out whatever a v1 controller's default is)
``schedulerName``                           each template's ``spec.schedulerName``, where the template names none
``RuntimeId``, ``mxImage``,                 nothing: v1 child names are ``<job>-<type>-<index>``, the image was never
``terminationPolicy``                       used, and v1's own rules decide when a job is done
``status``                                  dropped: the v1 controller computes it from the pods
==========================================  ===========================================================================

v1 → v1alpha1 also derives the status the old clients read (``phase``, ``state``, ``reason``, ``replicaStatuses``)
from the v1 conditions and counts: no condition or only Created → Creating/Running; Running or Restarting →
Running/Running; Succeeded → Done/Succeeded; Failed → Done/Failed; Failed for an invalid spec
(``MXJobFailedValidation``) → Failed/Failed with ``reason: "invalid job spec: <the errors>"``; Suspended →
Creating/Unknown. ``replicaStatuses`` lists each type of the spec list, in its order, with ``ReplicasStates``
(Running = active, Succeeded, Failed pods) and the type's state (any failed pod: Failed; else any active: Running;
else all succeeded: Succeeded; else Running). Each template gets the restartPolicy its v1 pods run with (Never for
``ExitCode`` and for an unset one) and each entry the ``PsRootPort`` of its ``mxjob-port`` (unset without one), so
the old shape describes what runs.

What the other version cannot express rides in one annotation per direction (the only metadata a converted object
may change: the API server restores the rest), which the way back consumes and removes, so a round trip leaves no
annotation behind:

- :data:`V1ALPHA1_EXTRA_ANNOTATION` on a v1 object: ``RuntimeId``, ``mxImage``, ``terminationPolicy``,
  ``schedulerName``, the original ``jobMode`` and ``cleanupPodPolicy``, the list order, and per entry an absent
  ``mxReplicaType``, a ``PsRootPort`` the port does not show, what setting the port and the scheduler name changed
  in the template, a template ``restartPolicy`` to keep as it is (unset, or ``ExitCode``);
- :data:`V1_EXTRA_ANNOTATION` on a v1alpha1 object: the original ``jobMode``, every other v1 spec field (``runPolicy``,
  the inline run policy, ``successPolicy``) when ``cleanupPodPolicy`` alone does not say it, replica types v1alpha1
  lacks (TunerTracker, TunerServer, Tuner) whole, and per replica its key's spelling, ``restartPolicy`` (``ExitCode``,
  unset, or one the template did not carry), fields such as ``label``, and a template that must not get the job's
  ``schedulerName``.

A value restored from an annotation is used only while the field it was derived into still holds what the
conversion wrote there (each record keeps both, ``{"was": ..., "now": ...}``), so an edit made through either version
wins over the annotation. A null field counts as an absent one (the API server prunes them). Only malformed input
(not an object, ``replicaSpecs`` not a list, an unknown ``mxReplicaType``, a broken annotation...) raises
:class:`ConversionError`; every object of a valid shape converts, whether or not it would pass validation.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any

from mxjob_controller.api import (
    checks,
    crd,  # by module, not its names: crd.py may import this module
)
from mxjob_controller.api.constants import (
    CLEAN_POD_POLICIES,
    COND_FAILED,
    COND_RESTARTING,
    COND_RUNNING,
    COND_SUCCEEDED,
    COND_SUSPENDED,
    DEFAULT_CLEAN_POD_POLICY,
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT,
    DEFAULT_PORT_NAME,
    DEFAULT_REPLICAS,
    DEFAULT_RESTART_POLICY,
    GROUP,
    KIND,
    MODE_TRAIN,
    REASON_FAILED_VALIDATION,
    REPLICA_TYPES,
    RESTART_EXIT_CODE,
    SCHEDULER,
    SERVER,
    WORKER,
)
from mxjob_controller.api.crd_schema import structural
from mxjob_controller.api.defaults import default_container_index
from mxjob_controller.api.replica_types import canonical_type
from mxjob_controller.api.status import ReplicaCounts, replica_counts
from mxjob_controller.api.validation import MXJOB_RULES, name_errors, template_errors, unique
from mxjob_controller.core.framework import MAX_REPLICAS_PER_TYPE
from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.jsoncopy import deep_copy

__all__ = ["API_VERSION", "MANAGED_ANNOTATIONS", "V1ALPHA1_EXTRA_ANNOTATION", "V1BETA1_API_VERSION", "V1_API_VERSION",
           "V1_EXTRA_ANNOTATION", "VERSION", "ConversionError", "apply_defaults", "convert", "openapi_schema",
           "spec_schema", "status_schema", "to_v1", "to_v1alpha1", "validate"]

VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
V1_API_VERSION = f"{GROUP}/v1"
V1BETA1_API_VERSION = f"{GROUP}/v1beta1"
#: The versions of the v1 shape (v1beta1 differs from v1 in its apiVersion only).
V1_SHAPED = (V1_API_VERSION, V1BETA1_API_VERSION)

#: On a v1 object: what its v1alpha1 form had that v1 cannot hold (JSON; see the module docstring).
V1ALPHA1_EXTRA_ANNOTATION = "mxjob.kubeflow.org/v1alpha1-spec-extra"
#: On a v1alpha1 object: what its v1 form had that v1alpha1 cannot hold (JSON; see the module docstring).
V1_EXTRA_ANNOTATION = "mxjob.kubeflow.org/v1-spec-extra"
MANAGED_ANNOTATIONS = (V1ALPHA1_EXTRA_ANNOTATION, V1_EXTRA_ANNOTATION)

# --- the v1alpha1 vocabulary (jzp1025/mx-operator pkg/apis/mxnet/v1alpha1/types.go) ----------------------------------

ALPHA_SCHEDULER, ALPHA_SERVER, ALPHA_WORKER = "SCHEDULER", "SERVER", "WORKER"
ALPHA_TYPES = (ALPHA_SCHEDULER, ALPHA_SERVER, ALPHA_WORKER)
TO_V1_TYPE = {ALPHA_SCHEDULER: SCHEDULER, ALPHA_SERVER: SERVER, ALPHA_WORKER: WORKER}
TO_ALPHA_TYPE = {v: k for k, v in TO_V1_TYPE.items()}
DEFAULT_TYPE = ALPHA_WORKER
DEFAULT_PS_ROOT_PORT = DEFAULT_PORT     # 9091 in both versions
#: ``""`` behaves as ``All`` (the old controller's ``CleanupPodPolicy`` switch had ``All`` as its default case).
CLEANUP_POLICIES = ("", *CLEAN_POD_POLICIES)
#: The fork's ``jobMode``; ``""`` is what its Go client wrote for an unset one (the field has no ``omitempty``).
ALPHA_JOB_MODES = ("", "dist", "local")
DIST = "dist"
PHASE_NONE, PHASE_CREATING, PHASE_RUNNING, PHASE_CLEANUP, PHASE_FAILED, PHASE_DONE = (
    "", "Creating", "Running", "CleanUp", "Failed", "Done")
PHASES = (PHASE_NONE, PHASE_CREATING, PHASE_RUNNING, PHASE_CLEANUP, PHASE_FAILED, PHASE_DONE)
STATE_UNKNOWN, STATE_RUNNING, STATE_SUCCEEDED, STATE_FAILED = "Unknown", "Running", "Succeeded", "Failed"
STATES = ("", STATE_UNKNOWN, STATE_RUNNING, STATE_SUCCEEDED, STATE_FAILED)
REPLICA_STATES = (STATE_UNKNOWN, STATE_RUNNING, STATE_FAILED, STATE_SUCCEEDED)
INVALID_REASON_PREFIX = "invalid job spec: "
V1_STATUS_FIELD = "v1"   # status.v1: the v1 status a v1alpha1 status was derived from
MAX_PORT = 65535


def default_termination_policy() -> dict[str, Any]:
    """``{chief: {replicaName: SCHEDULER, replicaIndex: 0}}``: the scheduler's exit decides (a fresh dict)."""
    return {"chief": {"replicaName": ALPHA_SCHEDULER, "replicaIndex": 0}}


#: The fields of a v1alpha1 spec, and of one of its replica specs; anything else rides in the annotation.
ALPHA_SPEC_FIELDS = ("RuntimeId", "replicaSpecs", "mxImage", "terminationPolicy", "cleanupPodPolicy", "schedulerName",
                     "jobMode")
ALPHA_ONLY_FIELDS = ("RuntimeId", "mxImage", "terminationPolicy", "schedulerName")
ALPHA_REPLICA_FIELDS = ("replicas", "template", "mxReplicaType", "PsRootPort")
#: The fields of a v1 replica spec v1alpha1 has a place for (``restartPolicy`` through its template).
V1_REPLICA_FIELDS = ("replicas", "restartPolicy", "template")


class ConversionError(ValueError):
    """The object cannot be converted because it is malformed; the message names the field."""


# --- schema --------------------------------------------------------------------------------------------------------

def spec_schema() -> dict[str, Any]:
    """The v1alpha1 spec: typed and structural (nothing preserved unknown), with the old API's exact keys."""
    replica = {"type": "object", "properties": {
        "mxReplicaType": crd.enum_schema(ALPHA_TYPES, "SCHEDULER (exactly 1), SERVER or WORKER (the default)."),
        "replicas": crd.int_schema(f"Number of pods of this type (default 1, at most {MAX_REPLICAS_PER_TYPE}).",
                                   minimum=1, maximum=MAX_REPLICAS_PER_TYPE),
        "PsRootPort": crd.int_schema(f"The port the replicas listen on (default {DEFAULT_PS_ROOT_PORT}); the "
                                     "SCHEDULER's is DMLC_PS_ROOT_PORT.", minimum=1, maximum=MAX_PORT),
        "template": crd.described(structural("io.k8s.api.core.v1.PodTemplateSpec"),
                                  "The pod of each replica; it needs a container named mxnet."),
    }}
    chief = {"type": "object", "properties": {
        "replicaName": crd.string_schema("The replica type whose exit decides the job's (default SCHEDULER)."),
        "replicaIndex": crd.int_schema("Which replica of that type (default 0).", minimum=0),
    }}
    return {"type": "object", "required": ["replicaSpecs"], "properties": {
        "RuntimeId": crd.string_schema("Random id the v1alpha1 controller put in child names; kept, unused by v1."),
        "replicaSpecs": {"type": "array", "items": replica,
                         "description": "One entry per replica type: SCHEDULER, SERVER and WORKER."},
        "mxImage": crd.string_schema("Unused (kept for old manifests)."),
        "terminationPolicy": crd.described({"type": "object", "properties": {"chief": chief}},
                                           "Default: the SCHEDULER's exit decides."),
        "cleanupPodPolicy": crd.enum_schema(CLEANUP_POLICIES, 'Pods to delete when the job finishes: All ("" and '
                                                              "the default), Running or None."),
        "schedulerName": crd.string_schema("Scheduler of every pod whose template names none."),
        "jobMode": crd.enum_schema(ALPHA_JOB_MODES, "dist or local; the job runs as v1 jobMode MXTrain either way."),
    }}


def status_schema() -> dict[str, Any]:
    """The v1alpha1 status, derived from the v1 status when a job is read as v1alpha1."""
    replica_status = {"type": "object", "properties": {
        "mx_replica_type": crd.enum_schema(ALPHA_TYPES, ""),
        "state": crd.enum_schema(REPLICA_STATES, "Failed if a pod failed, else Running if one is active, else "
                                                 "Succeeded once all have."),
        "ReplicasStates": crd.described({"type": "object", "additionalProperties": crd.int_schema()},
                                        "Pods of this type by state (Running, Succeeded, Failed)."),
    }}
    return {"type": "object", "description": "Observed state, derived from the v1 status.", "properties": {
        "phase": crd.enum_schema(PHASES, "Creating, Running, Done (finished), or Failed (the spec is invalid)."),
        "reason": crd.string_schema("Why the job failed."),
        "state": crd.enum_schema(STATES, "Running, Succeeded or Failed."),
        "replicaStatuses": {"type": "array", "items": replica_status,
                            "description": "One entry per replica type, in the order of spec.replicaSpecs."},
        V1_STATUS_FIELD: {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                          "description": "The v1 status this one is derived from, carried back unchanged when the "
                                         "job is written as v1alpha1."},
    }}


def openapi_schema() -> dict[str, Any]:
    """The whole v1alpha1 ``openAPIV3Schema`` (for the CRD's ``v1alpha1`` version entry)."""
    return crd.openapi_schema("A distributed Apache MXNet job (the v1alpha1 API; stored as v1).", spec_schema(),
                              status_schema())


# --- defaults and validation ---------------------------------------------------------------------------------------

def apply_defaults(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a v1alpha1 object with the old controller's defaults filled in where unset: each entry's
    ``mxReplicaType`` WORKER, ``replicas`` 1, ``PsRootPort`` 9091, and the spec's ``terminationPolicy`` (the
    SCHEDULER, index 0). Malformed parts are copied as they are (validation reports them)."""
    out = deep_copy(dict(obj))
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    entries = spec.get("replicaSpecs")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict):
            for key, value in (("mxReplicaType", DEFAULT_TYPE), ("replicas", DEFAULT_REPLICAS),
                               ("PsRootPort", DEFAULT_PS_ROOT_PORT)):
                if entry.get(key) is None:
                    entry[key] = value
    if spec.get("terminationPolicy") is None:
        spec["terminationPolicy"] = default_termination_policy()
    return out


def validate(obj: Any) -> list[FieldError]:
    """Every problem with a v1alpha1 MXJob, at the paths its author wrote (``spec.replicaSpecs[1].mxReplicaType``),
    defaults applied first: what the old controller refused, plus what would make the v1 job it converts to
    invalid (every type present, as ``MXTrain`` needs; the pod template; the name's length)."""
    if not isinstance(obj, Mapping):
        return checks.object_errors(obj, "")
    job = apply_defaults(obj)
    meta = job.get("metadata")
    spec = job.get("spec")
    entries = spec.get("replicaSpecs") if isinstance(spec, dict) else None
    errs = name_errors(meta.get("name") if isinstance(meta, dict) else None, _replica_counts(entries))
    if spec is None:
        return [*errs, fe.required("spec")]
    if not isinstance(spec, dict):
        return errs + checks.object_errors(spec, "spec")
    entry_errs, present = _entries_errors(entries)
    errs += entry_errs
    if present is not None:   # without a list, the chief has nothing to be checked against
        errs += _termination_policy_errors(spec.get("terminationPolicy"), present)
    for key, allowed in (("cleanupPodPolicy", CLEANUP_POLICIES), ("jobMode", ALPHA_JOB_MODES)):
        if spec.get(key) is not None:
            errs += checks.enum_errors(spec[key], fe.child("spec", key), allowed)
    for key in ("RuntimeId", "mxImage", "schedulerName"):
        if spec.get(key) is not None:
            errs += checks.string_errors(spec[key], fe.child("spec", key))
    return unique(errs)


def _replica_counts(entries: Any) -> dict[str, int]:
    """v1 type → replicas, for the longest child name."""
    counts: dict[str, int] = {}
    for entry in entries if isinstance(entries, list) else ():
        rtype = TO_V1_TYPE.get(entry.get("mxReplicaType")) if isinstance(entry, dict) else None
        if rtype is not None:
            n = entry.get("replicas")
            counts[rtype] = max(counts.get(rtype, 1), n if checks.is_int(n) and n > 0 else DEFAULT_REPLICAS)
    return counts


def _entries_errors(entries: Any) -> tuple[list[FieldError], dict[str, int] | None]:
    """The list's problems and its entries'; and each valid type → its (first) entry's replicas (None when there
    is no list)."""
    path = "spec.replicaSpecs"
    if entries is None or entries == []:
        return [fe.required(path, "must have a SCHEDULER, a SERVER and a WORKER replica spec")], None
    if not isinstance(entries, list):
        return [checks.type_error(path, entries, "array")], None
    errs: list[FieldError] = []
    first: dict[str, int] = {}      # type -> index of its first entry
    present: dict[str, int] = {}    # type -> replicas
    for i, entry in enumerate(entries):
        at = fe.child(path, i)
        if not isinstance(entry, dict):
            errs += checks.object_errors(entry, at)
            continue
        rtype = entry.get("mxReplicaType")
        tpath = fe.child(at, "mxReplicaType")
        if rtype not in ALPHA_TYPES:
            errs.append(FieldError(tpath, "FieldValueNotSupported", (
                f"Unsupported value: {fe.format_value(rtype)}: must be one of "
                f"{', '.join(fe.format_value(t) for t in ALPHA_TYPES)}")))
        elif rtype in first:
            errs.append(FieldError(tpath, "FieldValueDuplicate", (
                f"Duplicate value: {fe.format_value(rtype)}: spec.replicaSpecs[{first[rtype]}] has this type: a job "
                "has one replica spec per type")))
        else:
            first[rtype] = i
            replicas = entry.get("replicas")
            present[rtype] = replicas if checks.is_int(replicas) else DEFAULT_REPLICAS
        errs += _replicas_errors(rtype, entry.get("replicas"), fe.child(at, "replicas"))
        port = entry.get("PsRootPort")
        if not checks.is_int(port):
            errs.append(checks.type_error(fe.child(at, "PsRootPort"), port, "integer"))
        elif not 1 <= port <= MAX_PORT:
            errs.append(fe.invalid(fe.child(at, "PsRootPort"), port, f"must be between 1 and {MAX_PORT}, inclusive"))
        if entry.get("template") is None:
            errs.append(fe.required(fe.child(at, "template"), "every replica spec needs a pod template"))
        else:
            errs += template_errors(entry["template"], fe.child(at, "template"), MXJOB_RULES)
    errs += [fe.required(path, f"must have a {t} replica spec: the job runs as jobMode MXTrain, which needs "
                               "SCHEDULER, SERVER and WORKER") for t in ALPHA_TYPES if t not in first]
    return errs, present


def _replicas_errors(rtype: Any, replicas: Any, path: str) -> list[FieldError]:
    """One SCHEDULER (the old controller's rule); 1 to the v1 limit for the others (what the v1 job must have)."""
    if not checks.is_int(replicas):
        return [checks.type_error(path, replicas, "integer")]
    if rtype == ALPHA_SCHEDULER and replicas != 1:
        return [fe.invalid(path, replicas, "must be 1: a job has exactly one SCHEDULER")]
    if replicas < 1:
        return [fe.invalid(path, replicas, "must be greater than or equal to 1")]
    if replicas > MAX_REPLICAS_PER_TYPE:
        return [fe.invalid(path, replicas, f"must be less than or equal to {MAX_REPLICAS_PER_TYPE}")]
    return []


def _termination_policy_errors(policy: Any, present: Mapping[str, int]) -> list[FieldError]:
    """The chief must be an existing replica (the old controller: ``invalid termination policy``, ``Missing
    ReplicaSpec for chief``)."""
    path = "spec.terminationPolicy"
    if not isinstance(policy, dict):
        return checks.object_errors(policy, path)
    chief = policy.get("chief")
    cpath = fe.child(path, "chief")
    if chief is None:
        return [fe.required(cpath, "invalid termination policy: it names no chief")]
    if not isinstance(chief, dict):
        return checks.object_errors(chief, cpath)
    errs: list[FieldError] = []
    name, index = chief.get("replicaName"), chief.get("replicaIndex")
    npath, ipath = fe.child(cpath, "replicaName"), fe.child(cpath, "replicaIndex")
    if name is None or name == "":
        errs.append(fe.required(npath))
    elif not isinstance(name, str):
        errs += checks.string_errors(name, npath)
    elif name not in present:
        errs.append(fe.invalid(npath, name, "the job has no replica spec of this type (Missing ReplicaSpec for "
                                            "chief)"))
    if index is not None:
        if not checks.is_int(index) or index < 0:
            errs += checks.non_negative_errors(index, ipath)
        elif isinstance(name, str) and name in present and index >= present[name]:
            errs.append(fe.invalid(ipath, index, f"must be less than {present[name]}, the replicas of {name}"))
    if not errs and (name, index or 0) != (ALPHA_SCHEDULER, 0):
        # v1 (what runs the job) lets the scheduler decide, as v1alpha1 did by default: another chief would be
        # accepted and silently ignored, which is worse than a clear refusal.
        errs.append(fe.not_supported(cpath, {"replicaName": name, "replicaIndex": index or 0},
                                     [{"replicaName": ALPHA_SCHEDULER, "replicaIndex": 0}]))
    return errs


# --- dispatch ------------------------------------------------------------------------------------------------------

def convert(obj: Any, desired_api_version: str) -> dict[str, Any]:
    """``obj`` (an MXJob at ``kubeflow.org/v1``, ``v1beta1`` or ``v1alpha1``) at ``desired_api_version``: a new
    object, also when no conversion is needed."""
    current = _object(obj, "").get("apiVersion")
    for version, what in ((current, "apiVersion"), (desired_api_version, "desired apiVersion")):
        if version not in (*V1_SHAPED, API_VERSION):
            raise ConversionError(f"{what}: unsupported {fe.format_value(version)}: expected one of "
                                  f"{', '.join(fe.format_value(v) for v in (*V1_SHAPED, API_VERSION))}")
    if current == desired_api_version:
        return deep_copy(obj)
    if desired_api_version == API_VERSION:
        return to_v1alpha1(obj)
    out = to_v1(obj) if current == API_VERSION else deep_copy(obj)
    out["apiVersion"] = desired_api_version
    return out


def _check_object(obj: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    obj = _object(obj, "")
    if obj.get("apiVersion") is not None and obj["apiVersion"] not in allowed:
        raise ConversionError(f"apiVersion: expected {' or '.join(allowed)}, not {fe.format_value(obj['apiVersion'])}")
    if obj.get("kind") is not None and obj["kind"] != KIND:
        raise ConversionError(f"kind: expected {KIND}, not {fe.format_value(obj['kind'])}")
    return obj


# --- v1alpha1 → v1 -------------------------------------------------------------------------------------------------

def to_v1(obj: Any) -> dict[str, Any]:
    """The v1 form of a v1alpha1 MXJob (``apiVersion: kubeflow.org/v1``); what v1 cannot hold is put in
    :data:`V1ALPHA1_EXTRA_ANNOTATION`, and :data:`V1_EXTRA_ANNOTATION` (left by :func:`to_v1alpha1`) is consumed.

    The status is the v1 status the v1alpha1 one was derived from (``status.v1``), or none (a new job: the
    controller computes it). Carrying it matters: an update through v1alpha1 gets the stored status back from the
    API server in v1alpha1 form, and dropping it would store the job with no status, so a finished job would run
    again."""
    obj = _check_object(obj, (API_VERSION,))
    meta, v1_extra = _metadata(obj, V1_EXTRA_ANNOTATION)
    spec: dict[str, Any] | None = None
    alpha_extra: dict[str, Any] = {}
    if obj.get("spec") is not None:
        spec, alpha_extra = _spec_to_v1(_object(obj["spec"], "spec"), v1_extra)
    status = obj.get("status")
    carried = status.get(V1_STATUS_FIELD) if isinstance(status, dict) else None
    return _assemble(obj, V1_API_VERSION, _with_extra(meta, V1ALPHA1_EXTRA_ANNOTATION, alpha_extra), spec,
                     deep_copy(carried) if isinstance(carried, dict) else None)


def _spec_to_v1(spec: dict[str, Any], v1_extra: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the v1 spec, the v1alpha1 extra to annotate it with)."""
    alpha_extra: dict[str, Any] = {k: deep_copy(spec[k]) for k in ALPHA_ONLY_FIELDS if spec.get(k) is not None}
    unknown = {k: deep_copy(v) for k, v in spec.items() if k not in ALPHA_SPEC_FIELDS}
    if unknown:
        alpha_extra["fields"] = unknown
    where = f"metadata.annotations[{V1_EXTRA_ANNOTATION}]"
    extra_specs = _object(v1_extra.get("mxReplicaSpecs", {}), f"{where}.mxReplicaSpecs")
    v1: dict[str, Any] = {}
    entries = spec.get("replicaSpecs")
    if entries is not None or extra_specs:
        v1["mxReplicaSpecs"] = _entries_to_v1(entries, spec, extra_specs, v1_extra, alpha_extra)

    alpha_mode = spec.get("jobMode")
    v1_mode = _restored(_pair(v1_extra, "jobMode", where), alpha_mode, MODE_TRAIN)
    _put(v1, "jobMode", v1_mode)
    if _mode_to_alpha(v1_mode) != alpha_mode:
        alpha_extra["jobMode"] = {"was": alpha_mode, "now": v1_mode}

    cleanup = spec.get("cleanupPodPolicy")
    if "spec" in v1_extra:
        rest = deep_copy(_object(v1_extra["spec"], f"{where}.spec"))
        if _cleanup_to_v1(cleanup) != (_clean_pod_policy(rest) or DEFAULT_CLEAN_POD_POLICY):
            _place_clean_pod_policy(rest, _cleanup_to_v1(cleanup))
    else:
        rest = _default_rest(cleanup)
    v1.update({k: v for k, v in rest.items() if k not in ("mxReplicaSpecs", "jobMode")})
    if _clean_pod_policy(v1) != cleanup:
        alpha_extra["cleanupPodPolicy"] = {"was": cleanup, "now": _clean_pod_policy(v1)}
    return v1, alpha_extra


def _entries_to_v1(entries: Any, spec: dict[str, Any], extra_specs: dict[str, Any], v1_extra: dict[str, Any],
                   alpha_extra: dict[str, Any]) -> dict[str, Any]:
    """The v1 replica-spec map of the list (and of the types only v1 has), recording in ``alpha_extra`` what the
    map cannot show."""
    if entries is None:
        return deep_copy(extra_specs)
    if not isinstance(entries, list):
        raise ConversionError(f"spec.replicaSpecs: must be a list, not {_json_type(entries)}")
    types = [_entry_type(entry, i) for i, entry in enumerate(entries)]
    records = _records(v1_extra, f"metadata.annotations[{V1_EXTRA_ANNOTATION}]")
    keys, matched = _assign_keys(types, records, set(extra_specs))
    scheduler_name = spec.get("schedulerName")
    specs: dict[str, Any] = {}
    alpha_records: list[dict[str, Any]] = []
    for entry, key, v1_record in zip(entries, keys, matched, strict=True):
        replica, record = _entry_to_v1(entry, scheduler_name, v1_record)
        specs[key] = replica
        alpha_records.append({"key": key, **record})
    for key, value in extra_specs.items():
        specs[key] = deep_copy(value)
    if any(len(r) > 1 for r in alpha_records) or _default_order(keys) != keys:
        alpha_extra["replicaSpecs"] = alpha_records
    return specs


def _entry_type(entry: Any, i: int) -> str:
    """The entry's v1 type (absent: WORKER); malformed entries raise."""
    entry = _object(entry, f"spec.replicaSpecs[{i}]")
    rtype = entry.get("mxReplicaType")
    if rtype is None:
        return WORKER
    if rtype not in ALPHA_TYPES:
        raise ConversionError(f"spec.replicaSpecs[{i}].mxReplicaType: unsupported value {fe.format_value(rtype)}: "
                              f"must be one of {', '.join(ALPHA_TYPES)}")
    return TO_V1_TYPE[rtype]


def _entry_to_v1(entry: dict[str, Any], scheduler_name: Any,
                 v1_record: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the v1 replica spec of one entry, what its record in the v1alpha1 extra must say)."""
    replica: dict[str, Any] = {}
    record: dict[str, Any] = {}
    if entry.get("mxReplicaType") is None:
        record["typeAbsent"] = True
    if entry.get("replicas") is not None:
        replica["replicas"] = deep_copy(entry["replicas"])
    template = deep_copy(entry.get("template"))
    pod = _pod_spec(template)

    template_policy = pod.get("restartPolicy") if pod is not None else None
    where = f"metadata.annotations[{V1_EXTRA_ANNOTATION}].replicaSpecs"
    saved = _pair(v1_record or {}, "restartPolicy", where)
    if saved is not None and template_policy == saved.get("now"):
        policy = saved.get("was")
        if pod is not None:
            _put(pod, "restartPolicy", saved.get("template"))
    else:
        policy = template_policy
    _put(replica, "restartPolicy", policy)
    if pod is not None and _effective_restart(policy) != template_policy:
        record["keepTemplateRestartPolicy"] = True

    if pod is not None and _injects(scheduler_name, pod) and not (v1_record or {}).get("noSchedulerName"):
        record["schedulerName"] = {"was": pod.get("schedulerName")}
        pod["schedulerName"] = scheduler_name

    port = entry.get("PsRootPort")
    if checks.is_int(port):
        changed = _set_port(template, port)
        if changed is not None:
            record["port"] = changed
    if _read_port(template) != port:
        record["PsRootPort"] = {"was": port, "now": _read_port(template)}

    _put(replica, "template", template)
    unknown = {k: deep_copy(v) for k, v in entry.items() if k not in ALPHA_REPLICA_FIELDS}
    if unknown:
        record["fields"] = unknown
    replica.update(deep_copy(_object((v1_record or {}).get("fields", {}), f"{where}.fields")))
    return replica, record


def _assign_keys(types: list[str], records: list[dict[str, Any]],
                 reserved: set[str]) -> tuple[list[str], list[dict[str, Any] | None]]:
    """Each entry's v1 key and its record in the v1 extra: the n-th entry of a type takes the n-th record whose key
    names that type (so edits to the list keep each record with its type), else the first free spelling."""
    taken = [False] * len(records)
    matched: list[dict[str, Any] | None] = []
    for rtype in types:
        for j, record in enumerate(records):
            if not taken[j] and canonical_type(record["key"]) == rtype:
                taken[j] = True
                matched.append(record)
                break
        else:
            matched.append(None)
    used = reserved | {r["key"] for r in matched if r is not None}
    keys: list[str] = []
    for i, (rtype, record) in enumerate(zip(types, matched, strict=True)):
        if record is not None:
            keys.append(record["key"])
            continue
        key = next((k for k in _key_spellings(rtype) if k not in used), None)
        if key is None:
            raise ConversionError(f"spec.replicaSpecs[{i}]: too many entries of type {TO_ALPHA_TYPE[rtype]}")
        used.add(key)
        keys.append(key)
    return keys, matched


def _default_rest(cleanup: Any) -> dict[str, Any]:
    """The v1 spec fields besides the replica specs and jobMode that a v1alpha1 spec maps to."""
    return {"runPolicy": {"cleanPodPolicy": _cleanup_to_v1(cleanup)}}


def _cleanup_to_v1(cleanup: Any) -> Any:
    """v1alpha1 treated "" (and an unset policy) as All."""
    return DEFAULT_CLEAN_POD_POLICY if cleanup is None or cleanup == "" else cleanup


def _clean_pod_policy(spec: Mapping[str, Any]) -> Any:
    """The v1 spec's explicit cleanPodPolicy (inline first, as run_policy merges them), or None."""
    if spec.get("cleanPodPolicy") is not None:
        return spec["cleanPodPolicy"]
    nested = spec.get("runPolicy")
    return nested.get("cleanPodPolicy") if isinstance(nested, dict) else None


def _place_clean_pod_policy(rest: dict[str, Any], value: Any) -> None:
    """Set the v1 cleanPodPolicy where the spec already has it (both places when it has both), else in runPolicy."""
    nested = rest.get("runPolicy")
    placed = False
    if rest.get("cleanPodPolicy") is not None:
        rest["cleanPodPolicy"] = value
        placed = True
    if isinstance(nested, dict) and nested.get("cleanPodPolicy") is not None:
        nested["cleanPodPolicy"] = value
        placed = True
    if not placed:
        if isinstance(nested, dict):
            nested["cleanPodPolicy"] = value
        elif nested is None:
            rest["runPolicy"] = {"cleanPodPolicy": value}
        else:
            rest["cleanPodPolicy"] = value


def _mode_to_alpha(mode: Any) -> str | None:
    """MXTrain is the fork's "dist" (distributed training); v1alpha1 has no word for any other mode."""
    return DIST if mode == MODE_TRAIN else None


# --- v1 → v1alpha1 -------------------------------------------------------------------------------------------------

def to_v1alpha1(obj: Any) -> dict[str, Any]:
    """The v1alpha1 form of a v1 (or v1beta1) MXJob, with the status derived from the v1 one; what v1alpha1 cannot
    hold is put in :data:`V1_EXTRA_ANNOTATION`, and :data:`V1ALPHA1_EXTRA_ANNOTATION` (left by :func:`to_v1`) is
    consumed."""
    obj = _check_object(obj, V1_SHAPED)
    meta, alpha_extra = _metadata(obj, V1ALPHA1_EXTRA_ANNOTATION)
    spec: dict[str, Any] | None = None
    v1_extra: dict[str, Any] = {}
    listed: list[tuple[str, str, Any]] = []   # (v1 key, v1alpha1 type, replicas) in list order
    if obj.get("spec") is not None:
        spec, v1_extra, listed = _spec_to_alpha(_object(obj["spec"], "spec"), alpha_extra)
    status = obj.get("status")
    derived = _status_to_alpha(_object(status, "status") if status is not None else {}, listed)
    if status:
        derived[V1_STATUS_FIELD] = deep_copy(status)   # to_v1 gives it back (see there)
    return _assemble(obj, API_VERSION, _with_extra(meta, V1_EXTRA_ANNOTATION, v1_extra), spec, derived)


def _spec_to_alpha(spec: dict[str, Any], alpha_extra: dict[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, Any], list[tuple[str, str, Any]]]:
    """(the v1alpha1 spec, the v1 extra to annotate it with, its entries as (v1 key, type, replicas))."""
    where = f"metadata.annotations[{V1ALPHA1_EXTRA_ANNOTATION}]"
    alpha: dict[str, Any] = {k: deep_copy(alpha_extra[k]) for k in ALPHA_ONLY_FIELDS
                             if alpha_extra.get(k) is not None}
    alpha.update({k: deep_copy(v) for k, v in _object(alpha_extra.get("fields", {}), f"{where}.fields").items()
                  if k not in ALPHA_SPEC_FIELDS})
    v1_extra: dict[str, Any] = {}
    listed: list[tuple[str, str, Any]] = []
    specs = spec.get("mxReplicaSpecs")
    if specs is not None:
        alpha["replicaSpecs"], listed = _specs_to_alpha(_object(specs, "spec.mxReplicaSpecs"), alpha_extra, v1_extra)

    v1_mode = spec.get("jobMode")
    alpha_mode = _restored(_pair(alpha_extra, "jobMode", where), v1_mode, _mode_to_alpha(v1_mode))
    _put(alpha, "jobMode", alpha_mode)
    if v1_mode != MODE_TRAIN:
        v1_extra["jobMode"] = {"was": v1_mode, "now": alpha_mode}

    rest = {k: v for k, v in spec.items() if k not in ("mxReplicaSpecs", "jobMode")}
    effective = _clean_pod_policy(rest)
    cleanup = _restored(_pair(alpha_extra, "cleanupPodPolicy", where), effective, effective)
    _put(alpha, "cleanupPodPolicy", cleanup)
    if _default_rest(cleanup) != rest:
        v1_extra["spec"] = deep_copy(rest)
    return alpha, v1_extra, listed


def _specs_to_alpha(specs: dict[str, Any], alpha_extra: dict[str, Any],
                    v1_extra: dict[str, Any]) -> tuple[list[dict[str, Any]], list[tuple[str, str, Any]]]:
    """The v1alpha1 list of the map's Scheduler, Server and Worker specs; the other types go to ``v1_extra``."""
    listable = [k for k in specs if canonical_type(k) in TO_ALPHA_TYPE]
    extra_specs = {k: deep_copy(v) for k, v in specs.items() if k not in listable}
    if extra_specs:
        v1_extra["mxReplicaSpecs"] = extra_specs
    records = {r["key"]: r for r in _records(alpha_extra, f"metadata.annotations[{V1ALPHA1_EXTRA_ANNOTATION}]")}
    recorded = [k for k in records if k in listable]
    order = recorded + _default_order([k for k in listable if k not in records])
    entries: list[dict[str, Any]] = []
    listed: list[tuple[str, str, Any]] = []
    v1_records: list[dict[str, Any]] = []
    for key in order:
        replica = _object(specs[key], f"spec.mxReplicaSpecs.{key}")
        entry, v1_record = _replica_to_alpha(key, replica, records.get(key) or {}, alpha_extra.get("schedulerName"))
        entries.append(entry)
        listed.append((key, entry.get("mxReplicaType") or DEFAULT_TYPE, entry.get("replicas")))
        v1_records.append({"key": key, **v1_record})
    types = [canonical_type(k) or "" for k in order]
    if any(len(r) > 1 for r in v1_records) or _assign_keys(types, [], set(extra_specs))[0] != order:
        v1_extra["replicaSpecs"] = v1_records
    return entries, listed


def _replica_to_alpha(key: str, replica: dict[str, Any], record: dict[str, Any],
                      scheduler_name: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(one v1alpha1 entry, what its record in the v1 extra must say); ``record`` is its v1alpha1 extra record."""
    where = f"metadata.annotations[{V1ALPHA1_EXTRA_ANNOTATION}].replicaSpecs"
    entry: dict[str, Any] = {}
    if not (record.get("typeAbsent") and canonical_type(key) == WORKER):
        entry["mxReplicaType"] = TO_ALPHA_TYPE[canonical_type(key) or ""]
    if replica.get("replicas") is not None:
        entry["replicas"] = deep_copy(replica["replicas"])
    template = deep_copy(replica.get("template"))
    pod = _pod_spec(template)
    v1_record: dict[str, Any] = {}

    port = _read_port(template)
    changed = record.get("port")
    if changed is not None and port == _object(changed, f"{where}.port").get("now"):
        _unset_port(template, changed)
    saved = _pair(record, "PsRootPort", where)
    if saved is not None and port == saved["now"] and not _would_set_port(template, saved["was"]):
        port = saved["was"]
    _put(entry, "PsRootPort", port)

    v1_name = pod.get("schedulerName") if pod is not None else None
    injected = _pair(record, "schedulerName", where, keys=("was",))
    if injected is not None and pod is not None and scheduler_name and v1_name == scheduler_name:
        _put(pod, "schedulerName", injected.get("was"))
    if pod is not None and _injects(scheduler_name, pod) and v1_name != scheduler_name:
        v1_record["noSchedulerName"] = True   # to_v1 would give it the job's

    policy = replica.get("restartPolicy")
    template_policy = pod.get("restartPolicy") if pod is not None else None
    if pod is not None and not (record.get("keepTemplateRestartPolicy") and policy == template_policy):
        pod["restartPolicy"] = _effective_restart(policy)
    written = pod.get("restartPolicy") if pod is not None else None
    if policy != written or template_policy != written:
        v1_record["restartPolicy"] = {"was": policy, "template": template_policy, "now": written}

    _put(entry, "template", template)
    entry.update({k: deep_copy(v) for k, v in _object(record.get("fields", {}), f"{where}.fields").items()
                  if k not in ALPHA_REPLICA_FIELDS})
    unknown = {k: deep_copy(v) for k, v in replica.items() if k not in V1_REPLICA_FIELDS}
    if unknown:
        v1_record["fields"] = unknown
    return entry, v1_record


def _effective_restart(policy: Any) -> Any:
    """The pod restartPolicy a v1 replica policy runs its pods with: Never for ExitCode (the controller restarts)
    and for an unset one (v1's default)."""
    return DEFAULT_RESTART_POLICY if policy is None or policy == RESTART_EXIT_CODE else policy


# --- status --------------------------------------------------------------------------------------------------------

_VALIDATION_PREFIX = re.compile(rf"^{KIND} \S+ failed validation because ")
_SPECS_PATH = re.compile(r"spec\.mxReplicaSpecs(?:\.([A-Za-z]+))?")


def _status_to_alpha(status: dict[str, Any], listed: list[tuple[str, str, Any]]) -> dict[str, Any]:
    """The v1alpha1 status of a job whose v1 status is ``status`` and whose list is ``listed``."""
    conditions = status.get("conditions")
    conditions = [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []
    phase, state, reason = _phase(conditions, {key: i for i, (key, _, _) in enumerate(listed)})
    counts = replica_counts(status)
    replicas: dict[str, int] = {}
    for _, rtype, n in listed:
        replicas[rtype] = replicas.get(rtype, 0) + (n if checks.is_int(n) else DEFAULT_REPLICAS)
    replica_statuses = []
    for rtype, total in replicas.items():
        c = counts.get(TO_V1_TYPE[rtype], ReplicaCounts())
        states = {name: n for name, n in ((STATE_RUNNING, c.active), (STATE_SUCCEEDED, c.succeeded),
                                          (STATE_FAILED, c.failed)) if n}
        replica_statuses.append({"mx_replica_type": rtype, "state": _replica_state(c, total),
                                 "ReplicasStates": states})
    return {"phase": phase, "reason": reason, "replicaStatuses": replica_statuses, "state": state}


def _phase(conditions: list[dict[str, Any]], index_of: Mapping[str, int]) -> tuple[str, str, str]:
    """(phase, state, reason) from the v1 conditions."""
    def true(ctype: str) -> dict[str, Any] | None:
        return next((c for c in conditions if c.get("type") == ctype and c.get("status") == "True"), None)

    failed = true(COND_FAILED)
    if failed is not None:
        message = str(failed.get("message") or "")
        if failed.get("reason") == REASON_FAILED_VALIDATION:
            return PHASE_FAILED, STATE_FAILED, INVALID_REASON_PREFIX + _alpha_paths(
                _VALIDATION_PREFIX.sub("", message), index_of)
        return PHASE_DONE, STATE_FAILED, message
    if true(COND_SUCCEEDED) is not None:
        return PHASE_DONE, STATE_SUCCEEDED, ""
    suspended = true(COND_SUSPENDED)
    if suspended is not None:
        return PHASE_CREATING, STATE_UNKNOWN, str(suspended.get("message") or "")
    if true(COND_RUNNING) is not None or true(COND_RESTARTING) is not None:
        return PHASE_RUNNING, STATE_RUNNING, ""
    return PHASE_CREATING, STATE_RUNNING, ""


def _alpha_paths(message: str, index_of: Mapping[str, int]) -> str:
    """``spec.mxReplicaSpecs.Worker…`` → ``spec.replicaSpecs[2]…``: the paths the v1alpha1 author wrote."""
    def replace(m: re.Match[str]) -> str:
        key = m.group(1)
        if key is None:
            return "spec.replicaSpecs"
        return f"spec.replicaSpecs[{index_of[key]}]" if key in index_of else m.group(0)

    return _SPECS_PATH.sub(replace, message)


def _replica_state(counts: ReplicaCounts, replicas: int) -> str:
    """The old controller's per-type rule over its replicas' states (a replica without a pod counted as Running)."""
    if counts.failed:
        return STATE_FAILED
    if counts.active:
        return STATE_RUNNING
    if counts.succeeded and counts.succeeded >= replicas:
        return STATE_SUCCEEDED
    return STATE_RUNNING


# --- pod templates -------------------------------------------------------------------------------------------------

def _pod_spec(template: Any) -> dict[str, Any] | None:
    pod = template.get("spec") if isinstance(template, dict) else None
    return pod if isinstance(pod, dict) else None


def _main_container(template: Any) -> dict[str, Any] | None:
    """The container v1 gives the job's port: the one named mxnet, else the first."""
    pod = _pod_spec(template)
    containers = pod.get("containers") if pod is not None else None
    if not isinstance(containers, list) or not containers:
        return None
    container = containers[default_container_index(containers, DEFAULT_CONTAINER_NAME)]
    return container if isinstance(container, dict) else None


def _job_port(container: dict[str, Any] | None) -> dict[str, Any] | None:
    ports = container.get("ports") if container is not None else None
    for port in ports if isinstance(ports, list) else ():
        if isinstance(port, dict) and port.get("name") == DEFAULT_PORT_NAME:
            return port
    return None


def _read_port(template: Any) -> int | None:
    """The template's ``mxjob-port`` number, as v1 reads it; None when it has none."""
    port = _job_port(_main_container(template))
    value = port.get("containerPort") if port is not None else None
    return value if checks.is_int(value) else None


def _set_port(template: Any, number: int) -> dict[str, Any] | None:
    """Make the template's ``mxjob-port`` ``number``; what to undo (None when nothing changed or there is no
    container to put it on)."""
    container = _main_container(template)
    if container is None:
        return None
    ports = container.get("ports")
    if ports is None:
        container["ports"] = [{"name": DEFAULT_PORT_NAME, "containerPort": number}]
        return {"now": number, "added": True, "list": False}
    if not isinstance(ports, list):
        return None
    port = _job_port(container)
    if port is None:
        ports.append({"name": DEFAULT_PORT_NAME, "containerPort": number})
        return {"now": number, "added": True, "list": True}
    if port.get("containerPort") == number and checks.is_int(port.get("containerPort")):
        return None
    was = port.get("containerPort")
    port["containerPort"] = number
    return {"now": number, "was": was}


def _unset_port(template: Any, changed: dict[str, Any]) -> None:
    """Undo :func:`_set_port`; an added port only while it is still the last one and as it was added (else setting
    it again would not give this template back)."""
    container = _main_container(template)
    port = _job_port(container)
    if container is None or port is None:
        return
    if changed.get("added"):
        ports = container["ports"]
        if ports[-1] is not port or port != {"name": DEFAULT_PORT_NAME, "containerPort": changed.get("now")}:
            return
        ports.pop()
        if not ports and not changed.get("list"):
            del container["ports"]
    else:
        _put(port, "containerPort", changed.get("was"))


def _would_set_port(template: Any, number: Any) -> bool:
    """Whether :func:`_set_port` would change the template (so a PsRootPort of ``number`` is not what it shows)."""
    return checks.is_int(number) and _set_port(deep_copy(template), number) is not None


def _injects(scheduler_name: Any, pod: dict[str, Any]) -> bool:
    """Whether the job's schedulerName goes to this pod spec: it names none (unset or "")."""
    return isinstance(scheduler_name, str) and bool(scheduler_name) and not pod.get("schedulerName")


# --- replica keys --------------------------------------------------------------------------------------------------

@functools.cache
def _key_spellings(rtype: str) -> tuple[str, ...]:
    """Every spelling of a v1 key of type ``rtype`` (they all fold to it), in the order entries take them:
    ``Worker``, ``WORKER``, ``worker``, then the other mixes of case."""
    lower = rtype.lower()
    spellings = dict.fromkeys((rtype, rtype.upper(), lower))
    for mask in range(2 ** len(lower)):
        spellings.setdefault("".join(c.upper() if mask >> i & 1 else c for i, c in enumerate(lower)))
    return tuple(spellings)


@functools.cache
def _spelling_rank(rtype: str) -> dict[str, int]:
    return {k: i for i, k in enumerate(_key_spellings(rtype))}


def _default_order(keys: list[str]) -> list[str]:
    """Keys in the order a list takes them without an annotation: by type (Scheduler, Server, Worker), then by
    spelling (so a type's second entry, ``WORKER``, follows its first, ``Worker``)."""
    def rank(key: str) -> tuple[int, int]:
        rtype = canonical_type(key) or ""
        return REPLICA_TYPES.index(rtype), _spelling_rank(rtype).get(key, 0)

    return sorted(keys, key=rank)


# --- metadata, annotations and small helpers ----------------------------------------------------------------------

def _assemble(obj: dict[str, Any], api_version: str, meta: dict[str, Any] | None, spec: dict[str, Any] | None,
              status: dict[str, Any] | None) -> dict[str, Any]:
    """The converted object: ``obj``'s other fields copied, in the usual order (apiVersion, kind, metadata, spec,
    status); absent parts stay absent."""
    out: dict[str, Any] = {"apiVersion": api_version}
    _put(out, "kind", deep_copy(obj.get("kind")))
    _put(out, "metadata", meta)
    _put(out, "spec", spec)
    _put(out, "status", status)
    out.update({k: deep_copy(v) for k, v in obj.items() if k not in out and k not in ("spec", "status", "metadata")})
    return out


def _metadata(obj: dict[str, Any], read: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(a copy of the metadata without the managed annotations, or None when there is none; the extra stored in
    annotation ``read``, {} when there is none). An annotation of the other direction is stale: dropped."""
    meta = obj.get("metadata")
    if meta is None:
        return None, {}
    meta = deep_copy(_object(meta, "metadata"))
    annotations = meta.get("annotations")
    if annotations is None:
        return meta, {}
    annotations = _object(annotations, "metadata.annotations")
    raw = annotations.get(read)
    if not any(k in annotations for k in MANAGED_ANNOTATIONS):
        return meta, {}
    for key in MANAGED_ANNOTATIONS:
        annotations.pop(key, None)
    if not annotations:
        del meta["annotations"]
    if raw is None:
        return meta, {}
    where = f"metadata.annotations[{read}]"
    try:
        extra = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as e:
        raise ConversionError(f"{where}: not JSON: {e}") from e
    return meta, _object(extra, where)


def _with_extra(meta: dict[str, Any] | None, key: str, extra: dict[str, Any]) -> dict[str, Any] | None:
    """``meta`` with ``extra`` as annotation ``key`` (compact JSON, sorted keys: the same object always gives the
    same text); unchanged when there is nothing to carry."""
    if not extra:
        return meta
    meta = meta if meta is not None else {}
    annotations = meta.setdefault("annotations", {})
    annotations[key] = json.dumps(extra, sort_keys=True, separators=(",", ":"))
    return meta


def _records(extra: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """An extra's per-replica records, each an object with a string ``key``."""
    records = extra.get("replicaSpecs", [])
    if not isinstance(records, list):
        raise ConversionError(f"{where}.replicaSpecs: must be a list")
    for i, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(record.get("key"), str):
            raise ConversionError(f"{where}.replicaSpecs[{i}]: must be an object with a string key")
    return records


def _pair(record: Mapping[str, Any], name: str, where: str,
          keys: tuple[str, ...] = ("was", "now")) -> dict[str, Any] | None:
    """A saved value: ``{"was": original, "now": what the conversion derived from it}``, or None."""
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, dict) or any(k not in value for k in keys):
        raise ConversionError(f"{where}.{name}: must be an object with {' and '.join(keys)}")
    return value


def _restored(saved: dict[str, Any] | None, current: Any, fresh: Any) -> Any:
    """The saved original while ``current`` still holds what the conversion derived from it; else ``fresh``."""
    return saved["was"] if saved is not None and current == saved["now"] else fresh


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConversionError(f"{where or 'the object'}: must be an object, not {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key``, or remove it for None (an absent field and a null one are the same to the API server)."""
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value
