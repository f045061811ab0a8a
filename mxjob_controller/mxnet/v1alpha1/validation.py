"""A ``v1alpha1`` MXJob's defaults and validation, at the paths its author wrote
(``spec.replicaSpecs[1].mxReplicaType``), so the admission webhook can refuse such a job in its own shape before
it is converted and checked again as ``v1``.

The defaults are the old controller's (each entry's ``mxReplicaType`` WORKER, ``replicas`` 1, ``PsRootPort`` 9091,
the SCHEDULER's exit deciding the job, a ``local`` job's WORKER's); the checks are what it refused, plus what would
make the ``v1`` job the object converts to invalid (a name too long for its children, a template without an
image...). ``jobMode: local`` is checked as the old spec's ``Validate()`` (seed ``mx_job.go``) checked it: WORKER
replicas only, at most one; any other mode runs as ``MXTrain`` and needs SCHEDULER, SERVER and WORKER.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mxjob_controller.core.framework import MAX_REPLICAS_PER_TYPE
from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.constants import DEFAULT_REPLICAS
from mxjob_controller.kubeflow_api.validation import name_errors, template_errors, unique
from mxjob_controller.mxnet.api import MXJOB_RULES
from mxjob_controller.mxnet.v1alpha1.vocabulary import (
    ALPHA_JOB_MODES,
    ALPHA_SCHEDULER,
    ALPHA_TYPES,
    ALPHA_WORKER,
    CLEANUP_POLICIES,
    DEFAULT_PS_ROOT_PORT,
    DEFAULT_TYPE,
    LOCAL,
    LOCAL_MAX_WORKERS,
    MAX_PORT,
    TO_V1_TYPE,
    default_termination_policy,
)


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
        spec["terminationPolicy"] = default_termination_policy(spec.get("jobMode"))
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
    local = spec.get("jobMode") == LOCAL
    entry_errs, present = _entries_errors(entries, local)
    errs += entry_errs
    if present is not None:   # without a list, the chief has nothing to be checked against
        errs += _termination_policy_errors(spec.get("terminationPolicy"), present, local)
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


def _entries_errors(entries: Any, local: bool) -> tuple[list[FieldError], dict[str, int] | None]:
    """The list's problems and its entries'; and each valid type → its (first) entry's replicas (None when there
    is no list). ``local``: the job is ``jobMode: local``, WORKER replicas only and at most one (the old spec's
    ``Validate()``: "job mode is local, but its replicas set have replicas type other than worker", "... but it has
    more than 1 worker"); else it runs as MXTrain, which needs every type."""
    path = "spec.replicaSpecs"
    if entries is None or entries == []:
        return [fe.required(path, _LOCAL_NEEDS if local else "must have a SCHEDULER, a SERVER and a WORKER replica "
                                                             "spec")], None
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
        elif local and rtype != ALPHA_WORKER:
            errs.append(fe.invalid(tpath, rtype, f'jobMode "{LOCAL}" runs {ALPHA_WORKER} replicas only (job mode '
                                                 f"is local, but its replicas set have replicas type other than "
                                                 f"worker)"))
        else:
            first[rtype] = i
            replicas = entry.get("replicas")
            present[rtype] = replicas if checks.is_int(replicas) else DEFAULT_REPLICAS
        errs += _replicas_errors(rtype, entry.get("replicas"), fe.child(at, "replicas"), local)
        port = entry.get("PsRootPort")
        if not checks.is_int(port):
            errs.append(checks.type_error(fe.child(at, "PsRootPort"), port, "integer"))
        elif not 1 <= port <= MAX_PORT:
            errs.append(fe.invalid(fe.child(at, "PsRootPort"), port, f"must be between 1 and {MAX_PORT}, inclusive"))
        if entry.get("template") is None:
            errs.append(fe.required(fe.child(at, "template"), "every replica spec needs a pod template"))
        else:
            errs += template_errors(entry["template"], fe.child(at, "template"), MXJOB_RULES)
    if local:
        if ALPHA_WORKER not in first:
            errs.append(fe.required(path, _LOCAL_NEEDS))
    else:
        errs += [fe.required(path, f"must have a {t} replica spec: the job runs as jobMode MXTrain, which needs "
                                   "SCHEDULER, SERVER and WORKER") for t in ALPHA_TYPES if t not in first]
    return errs, present


_LOCAL_NEEDS = f'must have a {ALPHA_WORKER} replica spec: jobMode "{LOCAL}" runs one {ALPHA_WORKER}'


def _replicas_errors(rtype: Any, replicas: Any, path: str, local: bool) -> list[FieldError]:
    """One SCHEDULER (the old controller's rule), at most one WORKER in a ``local`` job (the old spec's); 1 to the
    v1 limit for the others (what the v1 job must have)."""
    if not checks.is_int(replicas):
        return [checks.type_error(path, replicas, "integer")]
    if rtype == ALPHA_SCHEDULER and replicas != 1:
        return [fe.invalid(path, replicas, "must be 1: a job has exactly one SCHEDULER")]
    if replicas < 1:
        return [fe.invalid(path, replicas, "must be greater than or equal to 1")]
    if local and rtype == ALPHA_WORKER and replicas > LOCAL_MAX_WORKERS:
        return [fe.invalid(path, replicas, f'must be less than or equal to {LOCAL_MAX_WORKERS} when jobMode is '
                                           f'"{LOCAL}" (job mode is local, but it has more than '
                                           f"{LOCAL_MAX_WORKERS} worker)")]
    if replicas > MAX_REPLICAS_PER_TYPE:
        return [fe.invalid(path, replicas, f"must be less than or equal to {MAX_REPLICAS_PER_TYPE}")]
    return []


def _termination_policy_errors(policy: Any, present: Mapping[str, int], local: bool) -> list[FieldError]:
    """The chief must be an existing replica (the old controller: ``invalid termination policy``, ``Missing
    ReplicaSpec for chief``), and the one whose exit decides the v1 job: the SCHEDULER, in a ``local`` job its
    WORKER."""
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
    decider = default_termination_policy(LOCAL if local else None)["chief"]
    if not errs and {"replicaName": name, "replicaIndex": index or 0} != decider:
        # v1 (what runs the job) lets the scheduler decide, as v1alpha1 did by default (a job without one, its
        # workers): another chief would be accepted and silently ignored, which is worse than a clear refusal.
        errs.append(fe.not_supported(cpath, {"replicaName": name, "replicaIndex": index or 0}, [decider]))
    return errs
