"""``v1alpha1`` → ``v1``: the list of replica specs becomes the map, the ports and the scheduler name move into
the templates, and what ``v1`` cannot hold rides in :data:`V1ALPHA1_EXTRA_ANNOTATION`, while the
:data:`V1_EXTRA_ANNOTATION` a previous :func:`to_v1alpha1` left is consumed. The mapping is the package
docstring's table, read left to right.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.constants import DEFAULT_CLEAN_POD_POLICY
from mxjob_controller.mxnet.api import WORKER
from mxjob_controller.mxnet.v1alpha1 import mapping
from mxjob_controller.mxnet.v1alpha1.vocabulary import (
    ALPHA_ONLY_FIELDS,
    ALPHA_REPLICA_FIELDS,
    ALPHA_SPEC_FIELDS,
    ALPHA_TYPES,
    API_VERSION,
    TO_V1_TYPE,
    V1_API_VERSION,
    V1_EXTRA_ANNOTATION,
    V1_STATUS_FIELD,
    V1ALPHA1_EXTRA_ANNOTATION,
    ConversionError,
)


def to_v1(obj: Any) -> dict[str, Any]:
    """The v1 form of a v1alpha1 MXJob (``apiVersion: kubeflow.org/v1``); what v1 cannot hold is put in
    :data:`V1ALPHA1_EXTRA_ANNOTATION`, and :data:`V1_EXTRA_ANNOTATION` (left by :func:`to_v1alpha1`) is consumed.

    The status is the v1 status the v1alpha1 one was derived from (``status.v1``), or none (a new job: the
    controller computes it). Carrying it matters: an update through v1alpha1 gets the stored status back from the
    API server in v1alpha1 form, and dropping it would store the job with no status, so a finished job would run
    again."""
    obj = mapping.check_object(obj, (API_VERSION,))
    meta, v1_extra = mapping.split_metadata(obj, V1_EXTRA_ANNOTATION)
    spec: dict[str, Any] | None = None
    alpha_extra: dict[str, Any] = {}
    if obj.get("spec") is not None:
        spec, alpha_extra = _spec_to_v1(mapping.as_object(obj["spec"], "spec"), v1_extra)
    status = obj.get("status")
    carried = status.get(V1_STATUS_FIELD) if isinstance(status, dict) else None
    return mapping.assemble(obj, V1_API_VERSION, mapping.with_extra(meta, V1ALPHA1_EXTRA_ANNOTATION, alpha_extra), spec,
                     deep_copy(carried) if isinstance(carried, dict) else None)


def _spec_to_v1(spec: dict[str, Any], v1_extra: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the v1 spec, the v1alpha1 extra to annotate it with)."""
    alpha_extra: dict[str, Any] = {k: deep_copy(spec[k]) for k in ALPHA_ONLY_FIELDS if spec.get(k) is not None}
    unknown = {k: deep_copy(v) for k, v in spec.items() if k not in ALPHA_SPEC_FIELDS}
    if unknown:
        alpha_extra["fields"] = unknown
    where = f"metadata.annotations[{V1_EXTRA_ANNOTATION}]"
    extra_specs = mapping.as_object(v1_extra.get("mxReplicaSpecs", {}), f"{where}.mxReplicaSpecs")
    v1: dict[str, Any] = {}
    entries = spec.get("replicaSpecs")
    if entries is not None or extra_specs:
        v1["mxReplicaSpecs"] = _entries_to_v1(entries, spec, extra_specs, v1_extra, alpha_extra)

    alpha_mode = spec.get("jobMode")
    v1_mode = mapping.restored_value(mapping.saved_pair(v1_extra, "jobMode", where), alpha_mode,
                                     mapping.mode_to_v1(alpha_mode))
    mapping.put_or_drop(v1, "jobMode", v1_mode)
    if mapping.mode_to_alpha(v1_mode, v1.get("mxReplicaSpecs")) != alpha_mode:
        alpha_extra["jobMode"] = {"was": alpha_mode, "now": v1_mode}

    cleanup = spec.get("cleanupPodPolicy")
    if "spec" in v1_extra:
        rest = deep_copy(mapping.as_object(v1_extra["spec"], f"{where}.spec"))
        if mapping.cleanup_to_v1(cleanup) != (mapping.clean_pod_policy(rest) or DEFAULT_CLEAN_POD_POLICY):
            _place_clean_pod_policy(rest, mapping.cleanup_to_v1(cleanup))
    else:
        rest = mapping.default_rest(cleanup)
    v1.update({k: v for k, v in rest.items() if k not in ("mxReplicaSpecs", "jobMode")})
    if mapping.clean_pod_policy(v1) != cleanup:
        alpha_extra["cleanupPodPolicy"] = {"was": cleanup, "now": mapping.clean_pod_policy(v1)}
    return v1, alpha_extra


def _entries_to_v1(entries: Any, spec: dict[str, Any], extra_specs: dict[str, Any], v1_extra: dict[str, Any],
                   alpha_extra: dict[str, Any]) -> dict[str, Any]:
    """The v1 replica-spec map of the list (and of the types only v1 has), recording in ``alpha_extra`` what the
    map cannot show."""
    if entries is None:
        return deep_copy(extra_specs)
    if not isinstance(entries, list):
        raise ConversionError(f"spec.replicaSpecs: must be a list, not {mapping.json_type_name(entries)}")
    types = [_entry_type(entry, i) for i, entry in enumerate(entries)]
    records = mapping.extra_records(v1_extra, f"metadata.annotations[{V1_EXTRA_ANNOTATION}]")
    keys, matched = mapping.assign_keys(types, records, set(extra_specs))
    scheduler_name = spec.get("schedulerName")
    specs: dict[str, Any] = {}
    alpha_records: list[dict[str, Any]] = []
    for entry, key, v1_record in zip(entries, keys, matched, strict=True):
        replica, record = _entry_to_v1(entry, scheduler_name, v1_record)
        specs[key] = replica
        alpha_records.append({"key": key, **record})
    for key, value in extra_specs.items():
        specs[key] = deep_copy(value)
    if any(len(r) > 1 for r in alpha_records) or mapping.default_order(keys) != keys:
        alpha_extra["replicaSpecs"] = alpha_records
    return specs


def _entry_type(entry: Any, i: int) -> str:
    """The entry's v1 type (absent: WORKER); malformed entries raise."""
    entry = mapping.as_object(entry, f"spec.replicaSpecs[{i}]")
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
    pod = mapping.pod_spec(template)

    template_policy = pod.get("restartPolicy") if pod is not None else None
    where = f"metadata.annotations[{V1_EXTRA_ANNOTATION}].replicaSpecs"
    saved = mapping.saved_pair(v1_record or {}, "restartPolicy", where)
    if saved is not None and template_policy == saved.get("now"):
        policy = saved.get("was")
        if pod is not None:
            mapping.put_or_drop(pod, "restartPolicy", saved.get("template"))
    else:
        policy = template_policy
    mapping.put_or_drop(replica, "restartPolicy", policy)
    if pod is not None and mapping.effective_restart(policy) != template_policy:
        record["keepTemplateRestartPolicy"] = True

    if (pod is not None and mapping.injects_scheduler_name(scheduler_name, pod)
            and not (v1_record or {}).get("noSchedulerName")):
        record["schedulerName"] = {"was": pod.get("schedulerName")}
        pod["schedulerName"] = scheduler_name

    port = entry.get("PsRootPort")
    if checks.is_int(port):
        changed = mapping.set_job_port(template, port)
        if changed is not None:
            record["port"] = changed
    if mapping.read_job_port(template) != port:
        record["PsRootPort"] = {"was": port, "now": mapping.read_job_port(template)}

    mapping.put_or_drop(replica, "template", template)
    unknown = {k: deep_copy(v) for k, v in entry.items() if k not in ALPHA_REPLICA_FIELDS}
    if unknown:
        record["fields"] = unknown
    replica.update(deep_copy(mapping.as_object((v1_record or {}).get("fields", {}), f"{where}.fields")))
    return replica, record


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
