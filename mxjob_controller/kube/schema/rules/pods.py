"""A pod's spec and template: ``ValidatePodSpec`` and ``ValidatePodTemplateSpec`` minus per-container checks.

Containers must exist and have unique names (init containers included), volumes need unique DNS-label
names and exactly one source, every volume mount names a volume, and the pod-wide enums hold.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mxjob_controller.kube.field_errors import (
    FieldError,
    child,
    duplicate,
    forbidden,
    invalid,
    not_found,
    not_supported,
    required,
)
from mxjob_controller.kube.schema.rules import rule
from mxjob_controller.kube.schema.rules.common import (
    MAX_INT32,
    annotations,
    dns_label_messages,
    dns_subdomain_messages,
    each_message,
    items,
    label_value_messages,
    labels,
    qualified_name_messages,
)

POD_SPEC = "io.k8s.api.core.v1.PodSpec"
POD_TEMPLATE_SPEC = "io.k8s.api.core.v1.PodTemplateSpec"
VOLUME = "io.k8s.api.core.v1.Volume"
RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
TOLERATION_OPERATORS = ("Equal", "Exists")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
FILE_MODE = "must be a number between 0 and 0777 (octal), both inclusive"
# VolumeSource members, in the order ``validateVolumeSource`` looks at them.
VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gitRepo", "gcePersistentDisk", "awsElasticBlockStore", "secret", "nfs", "iscsi",
    "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "downwardAPI",
    "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk",
    "projected", "portworxVolume", "scaleIO", "storageos", "csi", "ephemeral", "image",
)
_SOURCE_REQUIRES = {"hostPath": "path", "secret": "secretName", "configMap": "name",
                    "persistentVolumeClaim": "claimName", "nfs": "server"}
_MODED_SOURCES = ("secret", "configMap", "downwardAPI", "projected")
_SOURCE_ORDER = {name: i for i, name in enumerate(VOLUME_SOURCES)}
Check = Callable[[Any, str, list[FieldError]], None]


@rule(POD_SPEC)
def pod_spec(spec: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    volumes = _volume_names(spec.get("volumes"), child(path, "volumes"), errs)
    if spec.get("containers") == []:
        errs.append(required(child(path, "containers")))
    names = _unique_names(spec.get("containers"), child(path, "containers"), set(), errs)
    _unique_names(spec.get("initContainers"), child(path, "initContainers"), names, errs)
    for key in ("containers", "initContainers"):
        containers = spec.get(key)
        if type(containers) is list:
            for i, c in enumerate(containers):
                if type(c) is dict and c.get("volumeMounts"):
                    _volume_mounts(c["volumeMounts"], volumes, child(child(child(path, key), i), "volumeMounts"), errs)
    prefix = f"{path}." if path else ""   # child(path, key), without a call for each field checked
    for key, value in spec.items():
        check = _FIELDS.get(key)
        if check is not None:
            check(value, prefix + key, errs)
    return errs


def _enum(supported: tuple[str, ...]) -> Check:
    def check(value: Any, path: str, errs: list[FieldError]) -> None:
        if value is not None and value not in supported:
            errs.append(required(path) if value == "" else not_supported(path, value, supported))
    return check


def _by(messages: Callable[[str], tuple[str, ...]]) -> Check:
    def check(value: Any, path: str, errs: list[FieldError]) -> None:
        if type(value) is str and value:
            errs.extend(each_message(path, value, messages(value)))
    return check


def _labels(value: Any, path: str, errs: list[FieldError]) -> None:
    base, _, key = path.rpartition(".")
    errs.extend(labels(value, base, key))


def _deadline(value: Any, path: str, errs: list[FieldError]) -> None:
    if type(value) is int and not 1 <= value <= MAX_INT32:
        errs.append(invalid(path, value, f"must be between 1 and {MAX_INT32}, inclusive"))


def _pull_secrets(value: Any, path: str, errs: list[FieldError]) -> None:
    for i, secret in items(value):
        if set(secret) - {"name"}:
            errs.append(invalid(child(path, i), secret, "only name may be set"))


@rule(POD_TEMPLATE_SPEC)
def pod_template_spec(template: dict, path: str) -> list[FieldError]:
    """Template metadata, at the paths kube uses for them (``<template>.labels``, not ``.metadata.labels``)."""
    meta = template.get("metadata")
    if type(meta) is not dict:
        return []
    return labels(meta.get("labels"), path, "labels") + annotations(meta.get("annotations"), path, "annotations")


@rule(VOLUME)
def volume(vol: dict, path: str) -> list[FieldError]:
    """``validateVolumeSource``: exactly one source, and what the common sources require."""
    given = [k for k, v in vol.items() if v is not None and k in _SOURCE_ORDER]
    if not given:
        return [required(path, "must specify a volume type")]
    given.sort(key=_SOURCE_ORDER.__getitem__)
    found = given[0]
    errs = [forbidden(child(path, extra), "may not specify more than 1 volume type") for extra in given[1:]]
    if type(vol[found]) is not dict:
        return errs
    source, base = vol[found], child(path, found)
    needs = _SOURCE_REQUIRES.get(found)
    if needs and not source.get(needs):
        errs.append(required(child(base, needs)))
    mode = source.get("defaultMode")
    if found in _MODED_SOURCES and type(mode) is int and not 0 <= mode <= 0o777:
        errs.append(invalid(child(base, "defaultMode"), mode, FILE_MODE))
    return errs


def _volume_names(value: object, path: str, errs: list[FieldError]) -> set[str]:
    """Valid, unique volume names; errors for the others (``ValidateVolumes``)."""
    names: set[str] = set()
    for i, vol in items(value):
        name = vol.get("name")
        if name == "":
            errs.append(required(child(child(path, i), "name")))
            continue
        if type(name) is not str:
            continue
        msgs = dns_label_messages(name)
        errs.extend(each_message(child(child(path, i), "name"), name, msgs))
        if name in names:
            errs.append(duplicate(child(child(path, i), "name"), name))
        elif not msgs:
            names.add(name)
    return names


def _unique_names(value: object, path: str, seen: set[str], errs: list[FieldError]) -> set[str]:
    for i, c in items(value):
        name = c.get("name")
        if type(name) is not str or not name:
            continue
        if name in seen:
            errs.append(duplicate(child(child(path, i), "name"), name))
        else:
            seen.add(name)
    return seen


def _volume_mounts(value: object, volumes: set[str], path: str, errs: list[FieldError]) -> None:
    """``ValidateVolumeMounts``: each names a volume of the pod; mount paths unique."""
    mount_paths: set[str] = set()
    for i, mount in items(value):
        base = child(path, i)
        name = mount.get("name")
        if name == "":
            errs.append(required(child(base, "name")))
        if type(name) is str and name not in volumes:
            errs.append(not_found(child(base, "name"), name))
        mount_path = mount.get("mountPath")
        if mount_path == "":
            errs.append(required(child(base, "mountPath")))
        if type(mount_path) is str:
            if mount_path in mount_paths:
                errs.append(invalid(child(base, "mountPath"), mount_path, "must be unique"))
            mount_paths.add(mount_path)


def _tolerations(value: object, path: str, errs: list[FieldError]) -> None:
    """``ValidateTolerations``."""
    for i, tol in items(value):
        base = child(path, i)
        key, op, effect = tol.get("key") or "", tol.get("operator") or "", tol.get("effect") or ""
        if key:
            errs.extend(each_message(child(base, "key"), key, qualified_name_messages(key)))
        if not key and op != "Exists":
            errs.append(invalid(child(base, "operator"), op,
                                "operator must be Exists when `key` is empty, which means \"match all values "
                                "and all keys\""))
        if tol.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(invalid(child(base, "effect"), effect,
                                "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        text = tol.get("value") or ""
        if op in ("Equal", ""):
            msgs = label_value_messages(text) if type(text) is str else ()
            if msgs:
                errs.append(invalid(child(base, "operator"), text, ";".join(msgs)))
        elif op == "Exists":
            if text:
                errs.append(invalid(child(base, "operator"), text, "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(not_supported(child(base, "operator"), op, TOLERATION_OPERATORS))
        if effect and effect not in TAINT_EFFECTS:
            errs.append(not_supported(child(base, "effect"), effect, TAINT_EFFECTS))


_FIELDS: dict[str, Check] = {
    "restartPolicy": _enum(RESTART_POLICIES),
    "dnsPolicy": _enum(DNS_POLICIES),
    "preemptionPolicy": _enum(PREEMPTION_POLICIES),
    "nodeSelector": _labels,
    "serviceAccountName": _by(dns_subdomain_messages),
    "nodeName": _by(dns_subdomain_messages),
    "priorityClassName": _by(dns_subdomain_messages),
    "hostname": _by(dns_label_messages),
    "subdomain": _by(dns_label_messages),
    "activeDeadlineSeconds": _deadline,
    "tolerations": _tolerations,
    "imagePullSecrets": _pull_secrets,
}
