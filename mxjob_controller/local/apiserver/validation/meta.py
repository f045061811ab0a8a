"""ObjectMeta validation, with kube-apiserver's field paths and messages."""

from __future__ import annotations

import json
from collections.abc import Callable

from mxjob_controller.kube.field_errors import child, clip, format_value
from mxjob_controller.kube.names import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_value_errors,
    path_segment_errors,
    qualified_name_errors,
)
from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.resources import ResourceType

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
NameRule = Callable[[str], list[str]]

# Kinds whose names follow a rule other than the default DNS-1123 subdomain.
_NAME_RULES: dict[str, NameRule] = {
    "/namespaces": dns1123_label_errors,
    "/services": dns1035_label_errors,
    "rbac.authorization.k8s.io/roles": path_segment_errors,
    "rbac.authorization.k8s.io/rolebindings": path_segment_errors,
    "rbac.authorization.k8s.io/clusterroles": path_segment_errors,
    "rbac.authorization.k8s.io/clusterrolebindings": path_segment_errors,
}


def name_rule(rt: ResourceType) -> NameRule:
    return _NAME_RULES.get(rt.storage_key, dns1123_subdomain_errors)


def _invalid(path: str, value: object, msg: str) -> Cause:
    shown = format_value(value) if isinstance(value, str) else clip(json.dumps(value))  # long values shortened
    return Cause(path, "FieldValueInvalid", f"Invalid value: {shown}: {msg}")


def validate_object_meta(obj: dict, rt: ResourceType) -> list[Cause]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [Cause("metadata", "FieldValueRequired", "Required value")]
    causes: list[Cause] = []
    name = meta.get("name")
    rule = name_rule(rt)
    if not name:
        if not meta.get("generateName"):
            causes.append(Cause("metadata.name", "FieldValueRequired",
                                "Required value: name or generateName is required"))
    elif not isinstance(name, str):
        causes.append(_invalid("metadata.name", name, "must be a string"))
    else:
        causes.extend(_invalid("metadata.name", name, m) for m in rule(name))
    gen = meta.get("generateName")
    if gen and isinstance(gen, str):
        # A generated name appends 5 characters; the prefix alone must pass once made valid at its end.
        probe = gen if not gen.endswith("-") else gen + "x"
        causes.extend(_invalid("metadata.generateName", gen, m) for m in rule(probe)
                      if "no more than" not in m)
    ns = meta.get("namespace")
    if rt.namespaced:
        if not ns:
            causes.append(Cause("metadata.namespace", "FieldValueRequired", "Required value"))
        else:
            causes.extend(_invalid("metadata.namespace", ns, m) for m in dns1123_label_errors(str(ns)))
    elif ns:
        causes.append(Cause("metadata.namespace", "FieldValueForbidden", "Forbidden: not allowed on this type"))
    causes.extend(validate_labels(meta.get("labels"), "metadata.labels"))
    causes.extend(validate_annotations(meta.get("annotations")))
    causes.extend(_validate_finalizers(meta.get("finalizers")))
    causes.extend(_validate_owner_references(meta.get("ownerReferences")))
    return causes


def validate_labels(labels: object, path: str) -> list[Cause]:
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [_invalid(path, labels, "must be a map of strings")]
    causes = []
    for k, v in labels.items():
        causes.extend(_invalid(path, k, m) for m in qualified_name_errors(k))
        if not isinstance(v, str):
            causes.append(_invalid(f"{path}", v, "label values must be strings"))
        else:
            causes.extend(_invalid(path, v, m) for m in label_value_errors(v))
    return causes


def validate_annotations(annotations: object, path: str = "metadata.annotations") -> list[Cause]:
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [_invalid(path, annotations, "must be a map of strings")]
    causes = []
    size = 0
    for k, v in annotations.items():
        causes.extend(_invalid(path, k, m) for m in qualified_name_errors(k.lower()))
        if not isinstance(v, str):
            causes.append(_invalid(path, v, "annotation values must be strings"))
            continue
        size += len(k) + len(v)
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(Cause(path, "FieldValueTooLong",
                            f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT} bytes"))
    return causes


def _validate_finalizers(finalizers: object) -> list[Cause]:
    if finalizers is None:
        return []
    if not isinstance(finalizers, list):
        return [_invalid("metadata.finalizers", finalizers, "must be a list of strings")]
    causes = []
    for i, f in enumerate(finalizers):
        if not isinstance(f, str):
            causes.append(_invalid(child("metadata.finalizers", i), f, "must be a string"))
            continue
        causes.extend(_invalid(child("metadata.finalizers", i), f, m) for m in qualified_name_errors(f))
    return causes


def _validate_owner_references(refs: object) -> list[Cause]:
    if refs is None:
        return []
    if not isinstance(refs, list):
        return [_invalid("metadata.ownerReferences", refs, "must be a list")]
    causes = []
    controllers = 0
    for i, ref in enumerate(refs):
        path = child("metadata.ownerReferences", i)
        if not isinstance(ref, dict):
            causes.append(_invalid(path, ref, "must be an object"))
            continue
        for field in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(field):
                causes.append(Cause(child(path, field), "FieldValueInvalid",
                                    f'Invalid value: "": {field} must not be empty'))
        if ref.get("controller") is True:
            controllers += 1
    if controllers > 1:
        causes.append(Cause("metadata.ownerReferences", "FieldValueInvalid",
                            "Invalid value: []v1.OwnerReference: Only one reference can have Controller set "
                            "to true. Found \"true\" in references for more than one owner"))
    return causes
