"""PersistentVolumeClaims: ``ValidatePersistentVolumeClaimSpec``'s access modes, storage request and volume mode,
which the schema leaves as plain strings and maps."""

from __future__ import annotations

from mxjob_controller.kube.field_errors import FieldError, child, key_child, not_supported, required
from mxjob_controller.kube.schema.rules import rule

PVC_SPEC = "io.k8s.api.core.v1.PersistentVolumeClaimSpec"
ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")   # sorted, as kube lists
VOLUME_MODES = ("Block", "Filesystem")


@rule(PVC_SPEC)
def claim_spec(spec: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    modes = spec.get("accessModes")
    if not modes:
        errs.append(required(child(path, "accessModes"), "at least 1 access mode is required"))
    for mode in modes if type(modes) is list else ():
        if mode not in ACCESS_MODES:
            errs.append(not_supported(child(path, "accessModes"), mode, ACCESS_MODES))
    resources = spec.get("resources") if type(spec.get("resources")) is dict else {}
    requests = resources.get("requests") if type(resources.get("requests")) is dict else {}
    if "storage" not in requests:
        errs.append(required(key_child(child(path, "resources"), "storage"), ""))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(not_supported(child(path, "volumeMode"), mode, VOLUME_MODES))
    return errs
