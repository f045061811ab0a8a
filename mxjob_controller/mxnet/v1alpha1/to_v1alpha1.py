"""``v1`` → ``v1alpha1``: the inverse of ``to_v1.py``, plus the status the old clients read (``phase``,
``state``, ``reason``, ``replicaStatuses``), derived from the ``v1`` conditions and counts as the package docstring
says. What ``v1alpha1`` cannot hold rides in :data:`V1_EXTRA_ANNOTATION`; the :data:`V1ALPHA1_EXTRA_ANNOTATION` a
previous :func:`to_v1` left is consumed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mxjob_controller.core.job_vocabulary import FAILED, RESTARTING, RUNNING, SUCCEEDED, SUSPENDED
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.constants import DEFAULT_REPLICAS
from mxjob_controller.kubeflow_api.replica_types import canonical_type
from mxjob_controller.kubeflow_api.status import ReplicaCounts
from mxjob_controller.mxnet.api import (
    KIND,
    REASON_FAILED_VALIDATION,
    REPLICA_TYPES,
    WORKER,
    mxjob_replica_counts,
)
from mxjob_controller.mxnet.v1alpha1 import mapping
from mxjob_controller.mxnet.v1alpha1.vocabulary import (
    ALPHA_ONLY_FIELDS,
    ALPHA_REPLICA_FIELDS,
    ALPHA_SPEC_FIELDS,
    API_VERSION,
    DEFAULT_TYPE,
    INVALID_REASON_PREFIX,
    PHASE_CREATING,
    PHASE_DONE,
    PHASE_FAILED,
    PHASE_RUNNING,
    STATE_FAILED,
    STATE_RUNNING,
    STATE_SUCCEEDED,
    STATE_UNKNOWN,
    TO_ALPHA_TYPE,
    TO_V1_TYPE,
    V1_EXTRA_ANNOTATION,
    V1_REPLICA_FIELDS,
    V1_SHAPED,
    V1_STATUS_FIELD,
    V1ALPHA1_EXTRA_ANNOTATION,
    ConversionError,
)


def to_v1alpha1(obj: Any) -> dict[str, Any]:
    """The v1alpha1 form of a v1 (or v1beta1) MXJob, with the status derived from the v1 one; what v1alpha1 cannot
    hold is put in :data:`V1_EXTRA_ANNOTATION`, and :data:`V1ALPHA1_EXTRA_ANNOTATION` (left by :func:`to_v1`) is
    consumed."""
    obj = mapping.check_object(obj, V1_SHAPED)
    try:
        meta, alpha_extra = mapping.split_metadata(obj, V1ALPHA1_EXTRA_ANNOTATION)
        return _converted(obj, meta, alpha_extra)
    except ConversionError:
        # Anyone who may annotate the job can plant an extra that does not read (kubectl annotate, which the
        # webhook lets by): it is ignored rather than making the job, and every list holding it, unreadable.
        meta, _unread = mapping.split_metadata(obj, V1ALPHA1_EXTRA_ANNOTATION, readable_only=True)
        return _converted(obj, meta, {})


def _converted(obj: dict[str, Any], meta: dict[str, Any] | None, alpha_extra: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] | None = None
    v1_extra: dict[str, Any] = {}
    listed: list[tuple[str, str, Any]] = []   # (v1 key, v1alpha1 type, replicas) in list order
    if obj.get("spec") is not None:
        spec, v1_extra, listed = _spec_to_alpha(mapping.as_object(obj["spec"], "spec"), alpha_extra)
    status = obj.get("status")
    derived = _status_to_alpha(mapping.as_object(status, "status") if status is not None else {}, listed)
    if status:
        derived[V1_STATUS_FIELD] = deep_copy(status)   # to_v1 gives it back (see there)
    return mapping.assemble(obj, API_VERSION, mapping.with_extra(meta, V1_EXTRA_ANNOTATION, v1_extra), spec, derived)


def _spec_to_alpha(spec: dict[str, Any], alpha_extra: dict[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, Any], list[tuple[str, str, Any]]]:
    """(the v1alpha1 spec, the v1 extra to annotate it with, its entries as (v1 key, type, replicas))."""
    where = f"metadata.annotations[{V1ALPHA1_EXTRA_ANNOTATION}]"
    alpha: dict[str, Any] = {k: deep_copy(alpha_extra[k]) for k in ALPHA_ONLY_FIELDS
                             if alpha_extra.get(k) is not None}
    fields = mapping.as_object(alpha_extra.get("fields", {}), f"{where}.fields")
    alpha.update({k: deep_copy(v) for k, v in fields.items() if k not in ALPHA_SPEC_FIELDS})
    v1_extra: dict[str, Any] = {}
    listed: list[tuple[str, str, Any]] = []
    specs = spec.get("mxReplicaSpecs")
    if specs is not None:
        alpha["replicaSpecs"], listed = _specs_to_alpha(mapping.as_object(specs, "spec.mxReplicaSpecs"), alpha_extra,
                                                        v1_extra)

    v1_mode = spec.get("jobMode")
    alpha_mode = mapping.restored_value(mapping.saved_pair(alpha_extra, "jobMode", where), v1_mode,
                                        mapping.mode_to_alpha(v1_mode, specs))
    mapping.put_or_drop(alpha, "jobMode", alpha_mode)
    if mapping.mode_to_v1(alpha_mode) != v1_mode:
        v1_extra["jobMode"] = {"was": v1_mode, "now": alpha_mode}

    rest = {k: v for k, v in spec.items() if k not in ("mxReplicaSpecs", "jobMode")}
    effective = mapping.clean_pod_policy(rest)
    cleanup = mapping.restored_value(mapping.saved_pair(alpha_extra, "cleanupPodPolicy", where), effective, effective)
    mapping.put_or_drop(alpha, "cleanupPodPolicy", cleanup)
    if mapping.default_rest(cleanup) != rest:
        v1_extra["spec"] = deep_copy(rest)
    return alpha, v1_extra, listed


def _specs_to_alpha(specs: dict[str, Any], alpha_extra: dict[str, Any],
                    v1_extra: dict[str, Any]) -> tuple[list[dict[str, Any]], list[tuple[str, str, Any]]]:
    """The v1alpha1 list of the map's Scheduler, Server and Worker specs; the other types go to ``v1_extra``."""
    listable = [k for k in specs if canonical_type(k, REPLICA_TYPES) in TO_ALPHA_TYPE]
    extra_specs = {k: deep_copy(v) for k, v in specs.items() if k not in listable}
    if extra_specs:
        v1_extra["mxReplicaSpecs"] = extra_specs
    where = f"metadata.annotations[{V1ALPHA1_EXTRA_ANNOTATION}]"
    records = {r["key"]: r for r in mapping.extra_records(alpha_extra, where)}
    recorded = [k for k in records if k in listable]
    order = recorded + mapping.default_order([k for k in listable if k not in records])
    entries: list[dict[str, Any]] = []
    listed: list[tuple[str, str, Any]] = []
    v1_records: list[dict[str, Any]] = []
    for key in order:
        replica = mapping.as_object(specs[key], f"spec.mxReplicaSpecs.{key}")
        entry, v1_record = _replica_to_alpha(key, replica, records.get(key) or {}, alpha_extra.get("schedulerName"))
        entries.append(entry)
        listed.append((key, entry.get("mxReplicaType") or DEFAULT_TYPE, entry.get("replicas")))
        v1_records.append({"key": key, **v1_record})
    types = [canonical_type(k, REPLICA_TYPES) or "" for k in order]
    if any(len(r) > 1 for r in v1_records) or mapping.assign_keys(types, [], set(extra_specs))[0] != order:
        v1_extra["replicaSpecs"] = v1_records
    return entries, listed


def _replica_to_alpha(key: str, replica: dict[str, Any], record: dict[str, Any],
                      scheduler_name: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(one v1alpha1 entry, what its record in the v1 extra must say); ``record`` is its v1alpha1 extra record."""
    where = f"metadata.annotations[{V1ALPHA1_EXTRA_ANNOTATION}].replicaSpecs"
    entry: dict[str, Any] = {}
    if not (record.get("typeAbsent") and canonical_type(key, REPLICA_TYPES) == WORKER):
        entry["mxReplicaType"] = TO_ALPHA_TYPE[canonical_type(key, REPLICA_TYPES) or ""]
    if replica.get("replicas") is not None:
        entry["replicas"] = deep_copy(replica["replicas"])
    template = deep_copy(replica.get("template"))
    pod = mapping.pod_spec(template)
    v1_record: dict[str, Any] = {}

    port = mapping.read_job_port(template)
    changed = record.get("port")
    if changed is not None and port == mapping.as_object(changed, f"{where}.port").get("now"):
        mapping.unset_job_port(template, changed)
    saved = mapping.saved_pair(record, "PsRootPort", where)
    if saved is not None and port == saved["now"] and not mapping.would_set_job_port(template, saved["was"]):
        port = saved["was"]
    mapping.put_or_drop(entry, "PsRootPort", port)

    v1_name = pod.get("schedulerName") if pod is not None else None
    injected = mapping.saved_pair(record, "schedulerName", where, keys=("was",))
    if injected is not None and pod is not None and scheduler_name and v1_name == scheduler_name:
        mapping.put_or_drop(pod, "schedulerName", injected.get("was"))
    if pod is not None and mapping.injects_scheduler_name(scheduler_name, pod) and v1_name != scheduler_name:
        v1_record["noSchedulerName"] = True   # to_v1 would give it the job's

    policy = replica.get("restartPolicy")
    template_policy = pod.get("restartPolicy") if pod is not None else None
    if pod is not None and not (record.get("keepTemplateRestartPolicy") and policy == template_policy):
        pod["restartPolicy"] = mapping.effective_restart(policy)
    written = pod.get("restartPolicy") if pod is not None else None
    if policy != written or template_policy != written:
        v1_record["restartPolicy"] = {"was": policy, "template": template_policy, "now": written}

    mapping.put_or_drop(entry, "template", template)
    entry.update({k: deep_copy(v) for k, v in mapping.as_object(record.get("fields", {}), f"{where}.fields").items()
                  if k not in ALPHA_REPLICA_FIELDS})
    unknown = {k: deep_copy(v) for k, v in replica.items() if k not in V1_REPLICA_FIELDS}
    if unknown:
        v1_record["fields"] = unknown
    return entry, v1_record


# --- status -----------------------------------------------------------------------------------------------------------

_VALIDATION_PREFIX = re.compile(rf"^{KIND} \S+ failed validation because ")
_SPECS_PATH = re.compile(r"spec\.mxReplicaSpecs(?:\.([A-Za-z]+))?")


def _status_to_alpha(status: dict[str, Any], listed: list[tuple[str, str, Any]]) -> dict[str, Any]:
    """The v1alpha1 status of a job whose v1 status is ``status`` and whose list is ``listed``."""
    conditions = status.get("conditions")
    conditions = [c for c in conditions if isinstance(c, dict)] if isinstance(conditions, list) else []
    phase, state, reason = _phase(conditions, {key: i for i, (key, _, _) in enumerate(listed)})
    counts = mxjob_replica_counts(status)
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

    failed = true(FAILED)
    if failed is not None:
        message = str(failed.get("message") or "")
        if failed.get("reason") == REASON_FAILED_VALIDATION:
            return PHASE_FAILED, STATE_FAILED, INVALID_REASON_PREFIX + _alpha_paths(
                _VALIDATION_PREFIX.sub("", message), index_of)
        return PHASE_DONE, STATE_FAILED, message
    if true(SUCCEEDED) is not None:
        return PHASE_DONE, STATE_SUCCEEDED, ""
    suspended = true(SUSPENDED)
    if suspended is not None:
        return PHASE_CREATING, STATE_UNKNOWN, str(suspended.get("message") or "")
    if true(RUNNING) is not None or true(RESTARTING) is not None:
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
