"""CustomResourceDefinitions: defaults, structural checks (a ``pattern`` must be Go's ``regexp``: RE2), and serving
the kinds they define.

Creating or updating a CRD changes what the server serves at once (every served version, converted between
as its ``spec.conversion`` says: ``webhooks/conversion.py``) and then records ``NamesAccepted`` and
``Established`` in its status, as kube-apiserver's naming and establishing controllers do, so ``kubectl wait
--for condition=established`` works. Deleting one removes every object of its kind and stops serving it.
"""

from __future__ import annotations

from collections.abc import Callable

from mxjob_controller.kube.schema.structural import pattern_errors
from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.resources import Registry, ResourceType, ScalePaths
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext
from mxjob_controller.local.apiserver.webhooks.conversion import default_conversion, validate_conversion


def types_for(crd: dict) -> list[ResourceType]:
    """The resource types a CRD serves (one per served version)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    kind = names.get("kind", "")
    storage = next((v.get("name") for v in spec.get("versions") or [] if v.get("storage")), "")
    out = []
    for v in spec.get("versions") or []:
        if not v.get("served"):
            continue
        subresources = v.get("subresources") or {}
        out.append(ResourceType(
            group=spec.get("group", ""), version=v.get("name", ""), plural=names.get("plural", ""),
            singular=names.get("singular") or kind.lower(), kind=kind,
            namespaced=spec.get("scope") == "Namespaced",
            short_names=tuple(names.get("shortNames") or ()), categories=tuple(names.get("categories") or ()),
            status_subresource="status" in subresources,
            scale=_scale_paths(subresources.get("scale")),
            sets_generation=True,   # a deleted custom resource is answered with a Status, as kube's CR store does
            crd_name=(crd.get("metadata") or {}).get("name"), storage_version=storage,
            printer_columns=tuple(v.get("additionalPrinterColumns") or ()),
            schema=(v.get("schema") or {}).get("openAPIV3Schema"),
        ))
    return out


def _scale_paths(scale: object) -> ScalePaths | None:
    """``subresources.scale``'s JSON paths (``.spec.replicas``) as the dotted paths the scale verbs follow; the
    selector, when there is one, is a string at its path (kube serves it as it is)."""
    if not isinstance(scale, dict):
        return None
    selector = str(scale.get("labelSelectorPath") or "").lstrip(".")
    return ScalePaths(str(scale.get("specReplicasPath") or ".spec.replicas").lstrip("."),
                      str(scale.get("statusReplicasPath") or ".status.replicas").lstrip("."),
                      selector or None, "string")


StatusWriter = Callable[[str, dict], None]
Purger = Callable[[str], None]


class CRDStrategy(Strategy):
    def __init__(self, registry: Registry, write_status: StatusWriter, purge: Purger) -> None:
        self._registry = registry
        self._write_status = write_status
        self._purge = purge

    def prepare_create(self, obj: dict, ctx: WriteContext) -> None:
        """kube's PrepareForCreate: a status with nothing accepted yet and the storage version stored (Go's struct
        has no omitempty on these, so they are there, empty), which kube-apiserver's own status write then fills
        in and records as its managed fields."""
        super().prepare_create(obj, ctx)
        spec = obj.get("spec") or {}
        storage = [v["name"] for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("storage")][:1]
        obj["status"] = {"conditions": None, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": storage}

    def default(self, obj: dict, ctx: WriteContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        names = spec.get("names")
        if isinstance(names, dict) and isinstance(names.get("kind"), str):
            names.setdefault("singular", names["kind"].lower())
            names.setdefault("listKind", names["kind"] + "List")
        default_conversion(spec)

    def validate(self, obj: dict, old: dict | None, ctx: WriteContext) -> list[Cause]:
        causes = super().validate(obj, old, ctx)
        spec = obj.get("spec") or {}
        names = spec.get("names") or {}
        name = (obj.get("metadata") or {}).get("name", "")
        expected = f"{names.get('plural', '')}.{spec.get('group', '')}"
        if name != expected:
            causes.append(Cause("metadata.name", "FieldValueInvalid",
                                f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group'))
        if spec.get("scope") not in ("Namespaced", "Cluster"):
            causes.append(Cause("spec.scope", "FieldValueNotSupported",
                                f'Unsupported value: "{spec.get("scope", "")}": supported values: '
                                '"Cluster", "Namespaced"'))
        versions = spec.get("versions") or []
        if not versions:
            causes.append(Cause("spec.versions", "FieldValueInvalid", "Invalid value: null: must have exactly "
                                "one version marked as storage version"))
        elif sum(1 for v in versions if isinstance(v, dict) and v.get("storage")) != 1:
            causes.append(Cause("spec.versions", "FieldValueInvalid", "Invalid value: "
                                f"{[v.get('name') for v in versions if isinstance(v, dict)]}: must have "
                                "exactly one version marked as storage version"))
        for i, version in enumerate(versions):   # kube compiles each pattern with Go's regexp: RE2 must take it
            schema = ((version.get("schema") or {}) if isinstance(version, dict) else {}).get("openAPIV3Schema")
            causes.extend(pattern_errors(schema, f"spec.versions[{i}].schema.openAPIV3Schema"))
        causes.extend(validate_conversion(spec, (old.get("spec") or {}) if old is not None else None))
        if old is not None:
            old_spec = old.get("spec") or {}
            if spec.get("group") != old_spec.get("group"):
                causes.append(Cause("spec.group", "FieldValueInvalid",
                                    f'Invalid value: "{spec.get("group")}": field is immutable'))
            if (old_spec.get("names") or {}).get("plural") != names.get("plural"):
                causes.append(Cause("status.storedVersions", "FieldValueInvalid",
                                    "Invalid value: the plural name cannot change"))
        return causes

    def after_commit(self, obj: dict, old: dict | None, ctx: WriteContext) -> None:
        if ctx.subresource == "status":
            return
        name = obj["metadata"]["name"]
        self._registry.replace_crd(name, types_for(obj))
        spec = obj.get("spec") or {}
        status = dict(obj.get("status") or {})
        now = now_rfc3339()
        conditions = {c.get("type"): c for c in status.get("conditions") or []}
        for ctype, reason, message in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ):
            if (conditions.get(ctype) or {}).get("status") != "True":
                conditions[ctype] = {"type": ctype, "status": "True", "lastTransitionTime": now,
                                     "reason": reason, "message": message}
        status["conditions"] = list(conditions.values())
        status["acceptedNames"] = spec.get("names") or {}
        stored = list(status.get("storedVersions") or [])
        storage = next((v.get("name") for v in spec.get("versions") or [] if v.get("storage")), None)
        if storage and storage not in stored:
            stored.append(storage)
        status["storedVersions"] = stored
        if status != obj.get("status"):
            self._write_status(name, status)

    def after_delete(self, obj: dict) -> None:
        name = obj["metadata"]["name"]
        self._purge(name)
        self._registry.replace_crd(name, [])
