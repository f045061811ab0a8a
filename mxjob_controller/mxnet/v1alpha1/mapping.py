"""What both directions of the ``v1alpha1`` ⇄ ``v1`` conversion share, so each rule of the mapping is written
once: reading and writing the extra annotations and their ``{"was", "now"}`` records, the spec fields both
directions derive (``cleanPodPolicy``, ``jobMode``, the pods' restart policy), the spellings of replica keys (the
n-th entry of a type takes the n-th free spelling), and the job's port and scheduler name on a pod template.

Every reader here checks the shape it reads and raises :class:`ConversionError` naming the field, so a malformed
object or annotation is refused with a message rather than an exception from deep inside a conversion.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from mxjob_controller.core.pods import RESTART_EXIT_CODE
from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kubeflow_api import checks
from mxjob_controller.kubeflow_api.constants import DEFAULT_CLEAN_POD_POLICY, DEFAULT_RESTART_POLICY
from mxjob_controller.kubeflow_api.defaults import default_container_index
from mxjob_controller.kubeflow_api.replica_types import canonical_type
from mxjob_controller.mxnet.api import (
    DEFAULT_CONTAINER_NAME,
    DEFAULT_PORT_NAME,
    KIND,
    MODE_TRAIN,
    REPLICA_TYPES,
    WORKER,
)
from mxjob_controller.mxnet.v1alpha1.vocabulary import (
    DIST,
    LOCAL,
    LOCAL_MAX_WORKERS,
    MANAGED_ANNOTATIONS,
    TO_ALPHA_TYPE,
    ConversionError,
)

# --- objects, metadata and the extra annotations ----------------------------------------------------------------------

def check_object(obj: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    obj = as_object(obj, "")
    if obj.get("apiVersion") is not None and obj["apiVersion"] not in allowed:
        raise ConversionError(f"apiVersion: expected {' or '.join(allowed)}, not {fe.format_value(obj['apiVersion'])}")
    if obj.get("kind") is not None and obj["kind"] != KIND:
        raise ConversionError(f"kind: expected {KIND}, not {fe.format_value(obj['kind'])}")
    return obj


def assemble(obj: dict[str, Any], api_version: str, meta: dict[str, Any] | None, spec: dict[str, Any] | None,
              status: dict[str, Any] | None) -> dict[str, Any]:
    """The converted object: ``obj``'s other fields copied, in the usual order (apiVersion, kind, metadata, spec,
    status); absent parts stay absent."""
    out: dict[str, Any] = {"apiVersion": api_version}
    put_or_drop(out, "kind", deep_copy(obj.get("kind")))
    put_or_drop(out, "metadata", meta)
    put_or_drop(out, "spec", spec)
    put_or_drop(out, "status", status)
    out.update({k: deep_copy(v) for k, v in obj.items() if k not in out and k not in ("spec", "status", "metadata")})
    return out


def split_metadata(obj: dict[str, Any], read: str, readable_only: bool = False
                   ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(a copy of the metadata without the managed annotations, or None when there is none; the extra stored in
    annotation ``read``, {} when there is none, or with ``readable_only`` when it is not a JSON object). An
    annotation of the other direction is stale: dropped."""
    meta = obj.get("metadata")
    if meta is None:
        return None, {}
    meta = deep_copy(as_object(meta, "metadata"))
    annotations = meta.get("annotations")
    if annotations is None:
        return meta, {}
    annotations = as_object(annotations, "metadata.annotations")
    raw = annotations.get(read)
    if not any(k in annotations for k in MANAGED_ANNOTATIONS):
        return meta, {}
    for key in MANAGED_ANNOTATIONS:
        annotations.pop(key, None)
    if not annotations:
        del meta["annotations"]
    if raw is None or (readable_only and not _is_json_object(raw)):
        return meta, {}
    where = f"metadata.annotations[{read}]"
    try:
        extra = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as e:
        raise ConversionError(f"{where}: not JSON: {e}") from e
    return meta, as_object(extra, where)


def _is_json_object(raw: Any) -> bool:
    try:
        return isinstance(json.loads(raw) if isinstance(raw, str) else raw, dict)
    except ValueError:
        return False


def with_extra(meta: dict[str, Any] | None, key: str, extra: dict[str, Any]) -> dict[str, Any] | None:
    """``meta`` with ``extra`` as annotation ``key`` (compact JSON, sorted keys: the same object always gives the
    same text); unchanged when there is nothing to carry."""
    if not extra:
        return meta
    meta = meta if meta is not None else {}
    annotations = meta.setdefault("annotations", {})
    annotations[key] = json.dumps(extra, sort_keys=True, separators=(",", ":"))
    return meta


def extra_records(extra: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """An extra's per-replica records, each an object with a string ``key``."""
    records = extra.get("replicaSpecs", [])
    if not isinstance(records, list):
        raise ConversionError(f"{where}.replicaSpecs: must be a list")
    for i, record in enumerate(records):
        if not isinstance(record, dict) or not isinstance(record.get("key"), str):
            raise ConversionError(f"{where}.replicaSpecs[{i}]: must be an object with a string key")
    return records


def saved_pair(record: Mapping[str, Any], name: str, where: str,
          keys: tuple[str, ...] = ("was", "now")) -> dict[str, Any] | None:
    """A saved value: ``{"was": original, "now": what the conversion derived from it}``, or None."""
    value = record.get(name)
    if value is None:
        return None
    if not isinstance(value, dict) or any(k not in value for k in keys):
        raise ConversionError(f"{where}.{name}: must be an object with {' and '.join(keys)}")
    return value


def restored_value(saved: dict[str, Any] | None, current: Any, fresh: Any) -> Any:
    """The saved original while ``current`` still holds what the conversion derived from it; else ``fresh``."""
    return saved["was"] if saved is not None and current == saved["now"] else fresh


def as_object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConversionError(f"{where or 'the object'}: must be an object, not {json_type_name(value)}")
    return value


def json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def put_or_drop(target: dict[str, Any], key: str, value: Any) -> None:
    """Set ``key``, or remove it for None (an absent field and a null one are the same to the API server)."""
    if value is None:
        target.pop(key, None)
    else:
        target[key] = value


# --- spec fields both directions map ----------------------------------------------------------------------------------

def default_rest(cleanup: Any) -> dict[str, Any]:
    """The v1 spec fields besides the replica specs and jobMode that a v1alpha1 spec maps to."""
    return {"runPolicy": {"cleanPodPolicy": cleanup_to_v1(cleanup)}}


def cleanup_to_v1(cleanup: Any) -> Any:
    """v1alpha1 treated "" (and an unset policy) as All."""
    return DEFAULT_CLEAN_POD_POLICY if cleanup is None or cleanup == "" else cleanup


def clean_pod_policy(spec: Mapping[str, Any]) -> Any:
    """The v1 spec's explicit cleanPodPolicy (inline first, as run_policy merges them), or None."""
    if spec.get("cleanPodPolicy") is not None:
        return spec["cleanPodPolicy"]
    nested = spec.get("runPolicy")
    return nested.get("cleanPodPolicy") if isinstance(nested, dict) else None


def mode_to_v1(alpha_mode: Any) -> str | None:
    """"local" (one WORKER, no scheduler or server) is a v1 job with no mode, which requires no replica type and is
    decided by its workers; "dist", "" and an unset mode are MXTrain (SCHEDULER, SERVER and WORKER)."""
    return None if alpha_mode == LOCAL else MODE_TRAIN


def mode_to_alpha(mode: Any, specs: Any) -> str | None:
    """The v1alpha1 word for a v1 job's mode: MXTrain is the fork's "dist" (distributed training); no mode with
    nothing but a Worker of at most one replica is "local" (what :func:`mode_to_v1` makes of it); v1alpha1 has no
    word for any other."""
    if mode == MODE_TRAIN:
        return DIST
    if mode is None or mode == "":
        keys = list(specs) if isinstance(specs, dict) else []
        if len(keys) == 1 and canonical_type(keys[0], REPLICA_TYPES) == WORKER and isinstance(specs[keys[0]], dict):
            replicas = specs[keys[0]].get("replicas")
            if replicas is None or (checks.is_int(replicas) and replicas == LOCAL_MAX_WORKERS):
                return LOCAL
    return None


def effective_restart(policy: Any) -> Any:
    """The pod restartPolicy a v1 replica policy runs its pods with: Never for ExitCode (the controller restarts)
    and for an unset one (v1's default)."""
    return DEFAULT_RESTART_POLICY if policy is None or policy == RESTART_EXIT_CODE else policy


# --- replica keys -----------------------------------------------------------------------------------------------------

def assign_keys(types: list[str], records: list[dict[str, Any]],
                 reserved: set[str]) -> tuple[list[str], list[dict[str, Any] | None]]:
    """Each entry's v1 key and its record in the v1 extra: the n-th entry of a type takes the n-th record whose key
    names that type (so edits to the list keep each record with its type), else the first free spelling."""
    taken = [False] * len(records)
    matched: list[dict[str, Any] | None] = []
    for rtype in types:
        for j, record in enumerate(records):
            if not taken[j] and canonical_type(record["key"], REPLICA_TYPES) == rtype:
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


def default_order(keys: list[str]) -> list[str]:
    """Keys in the order a list takes them without an annotation: by type (Scheduler, Server, Worker), then by
    spelling (so a type's second entry, ``WORKER``, follows its first, ``Worker``)."""
    def rank(key: str) -> tuple[int, int]:
        rtype = canonical_type(key, REPLICA_TYPES) or ""
        return REPLICA_TYPES.index(rtype), _spelling_rank(rtype).get(key, 0)

    return sorted(keys, key=rank)



# --- pod templates ----------------------------------------------------------------------------------------------------

def pod_spec(template: Any) -> dict[str, Any] | None:
    pod = template.get("spec") if isinstance(template, dict) else None
    return pod if isinstance(pod, dict) else None


def _main_container(template: Any) -> dict[str, Any] | None:
    """The container v1 gives the job's port: the one named mxnet, else the first."""
    pod = pod_spec(template)
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


def read_job_port(template: Any) -> int | None:
    """The template's ``mxjob-port`` number, as v1 reads it; None when it has none."""
    port = _job_port(_main_container(template))
    value = port.get("containerPort") if port is not None else None
    return value if checks.is_int(value) else None


def set_job_port(template: Any, number: int) -> dict[str, Any] | None:
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


def unset_job_port(template: Any, changed: dict[str, Any]) -> None:
    """Undo :func:`set_job_port`; an added port only while it is still the last one and as it was added (else setting
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
        put_or_drop(port, "containerPort", changed.get("was"))


def would_set_job_port(template: Any, number: Any) -> bool:
    """Whether :func:`set_job_port` would change the template (so a PsRootPort of ``number`` is not what it shows)."""
    return checks.is_int(number) and set_job_port(deep_copy(template), number) is not None


def injects_scheduler_name(scheduler_name: Any, pod: dict[str, Any]) -> bool:
    """Whether the job's schedulerName goes to this pod spec: it names none (unset or "")."""
    return isinstance(scheduler_name, str) and bool(scheduler_name) and not pod.get("schedulerName")
