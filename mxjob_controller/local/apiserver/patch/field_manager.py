"""``metadata.managedFields`` on every write, and server-side apply (``application/apply-patch+yaml``), as
kube-apiserver's field manager keeps them (the rules themselves are in ``managedfields/``).

- **Who writes**: ``?fieldManager=``, else the User-Agent up to its first ``/`` (``kubectl``,
  ``OpenAPI-Generator``), else ``unknown``; more than 128 bytes or a non-printable character is a 422 on the
  request's options, and an apply without one is refused (``fieldManager: Required value``).
- **Create, update, patch** are Update operations: the writer owns what it set or changed. Managed fields the
  request carries replace the stored ones (that is how a user edits them), ``[]`` or ``[{}]`` clears them;
  a status write always starts from the stored ones. An object nobody tracks stays untracked until an Apply.
- **Apply** creates the object when it is missing (201), refuses conflicts with a 409 naming each manager and
  field, and leaves the object untouched when nothing would change.
- **Reset fields**: through the main resource nobody owns ``status`` (when there is a status subresource);
  through ``/status`` nobody owns ``spec`` (and, for pods, ``metadata.deletionTimestamp``/``ownerReferences``).
"""

from __future__ import annotations

import functools
import json
import threading
import weakref
from collections.abc import Mapping
from typing import Any

import yaml

from mxjob_controller.kube import field_errors
from mxjob_controller.kube.k8s_schemas import KUBE_VERSION
from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.managedfields import managers, schema, typed
from mxjob_controller.local.apiserver.managedfields.fieldpath import EMPTY, FieldSet
from mxjob_controller.local.apiserver.managedfields.managers import APPLY, UPDATE, Entry, Managers
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.validation.yaml_body import loads_yaml

MAX_MANAGER_BYTES = 128
KUBE_APISERVER = "kube-apiserver"   # the manager of the server's own writes (a CRD's status)
KUBE_CONTROLLER_MANAGER = "kube-controller-manager"   # the manager of the server's controllers' writes
KUBECTL = "kubectl"   # kubectl's server-side manager: the one that takes over from its client-side apply
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_STATUS: FieldSet = frozenset({("f:status",)})
_SPEC: FieldSet = frozenset({("f:spec",)})
_POD_STATUS_RESETS: FieldSet = _SPEC | {("f:metadata", "f:deletionTimestamp"), ("f:metadata", "f:ownerReferences")}


def controller_manager_agent(controller: str) -> str:
    """The User-Agent of a kube-controller-manager controller, as client-go builds it: the field manager makes
    :data:`KUBE_CONTROLLER_MANAGER` of it, as a real cluster records that binary's writes."""
    return (f"{KUBE_CONTROLLER_MANAGER}/v{KUBE_VERSION}.0 (linux/amd64) kubernetes/mxjob-local/"
            f"system:serviceaccount:kube-system:{controller}")


class FieldManager:
    """Keeps managed fields for every kind the server serves; one per server, shared by all request threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._types: weakref.WeakKeyDictionary[ResourceType, schema.Type | None] = weakref.WeakKeyDictionary()
        self._zeros: dict[int, dict] = {}

    # --- the request -------------------------------------------------------------------------------------

    def manager(self, query: Mapping[str, str], user_agent: str, options: str, apply: bool = False) -> str:
        """The writer's name, validated as kube validates ``fieldManager`` (422 on ``options``)."""
        given = query.get("fieldManager", "")
        causes = []
        if "force" in query and not apply:
            causes.append(field_errors.forbidden("force", "may not be specified for non-apply patch"))
        if given:
            if len(given.encode()) > MAX_MANAGER_BYTES:
                causes.append(field_errors.too_long("fieldManager", MAX_MANAGER_BYTES))
            for i, ch in enumerate(given):
                if not ch.isprintable():
                    causes.append(field_errors.invalid("fieldManager", given,
                                                       f"invalid character U+{ord(ch):04X} (at position {i})"))
        elif apply:
            causes.append(field_errors.required("fieldManager", "is required for apply patch"))
        if causes:
            raise errors.invalid_options(options, causes)
        return given or _from_user_agent(user_agent) or "unknown"

    # --- Update operations ---------------------------------------------------------------------------------

    def track(self, rt: ResourceType, subresource: str | None, old: dict | None, new: dict, manager: str) -> None:
        """Set ``new``'s managed fields after ``manager`` wrote it over ``old`` (None: a create)."""
        t = self.type_for(rt)
        meta = new.setdefault("metadata", {})
        if t is None:
            meta.pop("managedFields", None)
            return
        given = meta.pop("managedFields", None)
        stored = ((old or {}).get("metadata") or {}).get("managedFields")
        entries: Managers | None = None
        if subresource or old is None or not managers.is_reset(given):
            source = given if not subresource and given else stored
            try:   # what the server stored was valid when written: read it only where this write touches it
                entries = managers.decode(source, lazy=source is stored or source == stored)
            except managers.ManagedFieldsError:
                entries = _decoded_or_empty(stored)
        if old is not None and not entries:
            return  # nobody tracks this object (or the caller cleared its fields): it stays untracked
        who = Entry(manager, UPDATE, rt.api_version, subresource or "")
        reset = _reset_fields(rt, subresource)
        try:
            if old is None and not entries:
                entries = managers.created(self._zero(rt, t), _without_managed_fields(new), t, who, now_rfc3339(),
                                           reset)
            else:
                before = _without_managed_fields(old) if old is not None else self._zero(rt, t)
                entries = managers.update(entries or {}, before, _without_managed_fields(new), t, who,
                                          now_rfc3339(), reset)
        except typed.FieldSetError:
            return  # kube drops the managed fields of an object its schema cannot index rather than fail the write
        encoded = managers.encode(entries)
        if encoded:
            meta["managedFields"] = encoded

    # --- Apply -----------------------------------------------------------------------------------------------

    def apply(self, rt: ResourceType, subresource: str | None, live: dict | None, config: dict, manager: str,
              force: bool, name: str) -> dict:
        """``config`` applied to ``live`` (None: the object does not exist): the object to write, with its managed
        fields (``live`` as it was when nothing changes, which the store then does not write). Raises StatusError as
        kube answers."""
        t = self.type_for(rt)
        if t is None:
            t = schema.DEDUCED_TYPE
        who = Entry(manager, APPLY, rt.api_version, subresource or "")
        now = now_rfc3339()
        if live is None:
            entries: Managers = {}
            base: dict = {}
        else:
            try:
                entries = managers.decode((live.get("metadata") or {}).get("managedFields"), lazy=True)
            except managers.ManagedFieldsError as e:
                raise errors.internal(f"failed to decode managed fields: {e}") from None
            base = _without_managed_fields(live)
            if not entries:
                entries = managers.before_first_apply(base, self._zero(rt, t), t, rt.api_version, now)
        reset = _reset_fields(rt, subresource)
        try:
            try:
                result, entries = managers.apply(entries, base, config, t, who, now, force, reset)
            except managers.ApplyConflictError as e:
                allowed = _client_side_applied(base, t) if manager == KUBECTL else EMPTY
                rest = [(owner, path) for owner, path in e.conflicts if path not in allowed]
                if rest:
                    conflict = managers.ApplyConflictError(rest)
                    raise StatusError(409, "Conflict", conflict.message(), {"causes": conflict.causes()}) from None
                result, entries = managers.apply(entries, base, config, t, who, now, True, reset)
        except typed.FieldSetError as e:
            namespace = (config.get("metadata") or {}).get("namespace") or ""
            raise errors.unclassified(f"failed to create typed patch object ({namespace}/{name}; "
                                      f"{_gvk(config)}): {e}") from None
        out = dict(result if result is not None else base)
        out["metadata"] = dict(out.get("metadata") or {})
        if manager == KUBECTL and result is not None:
            _update_last_applied(out["metadata"], config)
        encoded = managers.encode(entries)
        if encoded:
            out["metadata"]["managedFields"] = encoded
        else:
            out["metadata"].pop("managedFields", None)
        return out

    # --- types -------------------------------------------------------------------------------------------------

    def type_for(self, rt: ResourceType) -> schema.Type | None:
        """The schema type of ``rt``'s objects (compiled once per resource type); None: not tracked."""
        try:
            return self._types[rt]
        except KeyError:
            pass
        t = schema.custom_type(rt.schema) if rt.is_custom else schema.builtin_type(rt.group, rt.version, rt.kind)
        with self._lock:
            self._types[rt] = t
        return t

    def _zero(self, rt: ResourceType, t: schema.Type) -> dict:
        """What kube compares a create with: the Go zero object of a built-in kind, nothing for a custom one."""
        if rt.is_custom:
            return {}
        zero = self._zeros.get(id(t))
        if zero is None:
            zero = self._zeros[id(t)] = schema.zero_object(t)
        return zero


def parse_apply_body(body: bytes, rt: ResourceType) -> dict:
    """The applied configuration: YAML (or JSON), of exactly this resource's kind, without managed fields."""
    try:   # the limits of every YAML body (aliases, depth, expansion): a small body must not build a huge object
        config = loads_yaml(body) if body else None
    except (yaml.YAMLError, ValueError) as e:   # UnicodeDecodeError is a ValueError
        raise errors.bad_request(f"error decoding YAML: {e}") from None
    if not isinstance(config, dict):
        raise errors.bad_request("error decoding YAML: the applied configuration must be an object")
    if config.get("apiVersion") != rt.api_version or config.get("kind") != rt.kind:
        raise errors.bad_request(f"invalid object type: {_gvk(config)}")
    meta = config.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise errors.bad_request("error decoding YAML: metadata must be an object")
    if meta is not None and meta.get("managedFields") is not None:
        raise errors.bad_request("metadata.managedFields must be nil")
    if meta is not None:
        meta.pop("managedFields", None)   # null: as good as absent
    return config


def keep_times_when_unchanged(old: dict, new: dict) -> None:
    """When a write changes nothing but managed-field times (an apply whose only news was a reset field, which the
    strategy then put back), keep the old times, so the store sees no change: kube's
    IgnoreManagedFieldsTimestampsTransformer."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    old_mf, new_mf = old_meta.get("managedFields"), new_meta.get("managedFields")
    if old_mf == new_mf or not isinstance(old_mf, list) or not isinstance(new_mf, list) or len(old_mf) != len(new_mf):
        return
    if [{k: v for k, v in e.items() if k != "time"} for e in old_mf if isinstance(e, dict)] != [
            {k: v for k, v in e.items() if k != "time"} for e in new_mf if isinstance(e, dict)]:
        return
    if _bare(old) == _bare(new):
        new_meta["managedFields"] = old_mf


def force_flag(query: Mapping[str, str]) -> bool:
    return query.get("force", "").lower() in ("1", "true")


def _gvk(obj: Mapping[str, Any]) -> str:
    """A group/version/kind as apimachinery prints it: ``/v1, Kind=ConfigMap``, ``apps/v1, Kind=Deployment``."""
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={obj.get('kind') or ''}"


@functools.lru_cache(maxsize=256)
def _from_user_agent(user_agent: str) -> str:
    """kube's default manager name: the User-Agent up to its first ``/``, printable characters only, ≤ 128 bytes.
    (A client sends one User-Agent on each of its writes: its name is made once.)"""
    prefix = "".join(ch for ch in user_agent.split("/", 1)[0] if ch.isprintable())
    encoded = prefix.encode()[:MAX_MANAGER_BYTES]
    return encoded.decode("utf-8", errors="ignore")


def _reset_fields(rt: ResourceType, subresource: str | None) -> FieldSet:
    if subresource == "status":
        return _POD_STATUS_RESETS if rt.kind == "Pod" and not rt.group else _SPEC
    return _STATUS if rt.status_subresource else EMPTY


def _client_side_applied(live: dict, t: schema.Type) -> FieldSet:
    """The fields ``kubectl apply`` (client-side) last applied that still hold their applied values: kube lets
    ``kubectl apply --server-side`` take exactly these over without a conflict (its lastAppliedManager)."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    try:
        last = json.loads(annotations.get(LAST_APPLIED) or "")
        if not isinstance(last, dict):
            return EMPTY
        applied = typed.to_set(last, t)
        cmp = typed.compare(last, live, t)
    except (ValueError, typed.FieldSetError):
        return EMPTY
    return applied - frozenset(cmp.modified) - frozenset(cmp.added) - frozenset(cmp.removed)


def _update_last_applied(meta: dict, config: dict) -> None:
    """Keep a client-side apply annotation in step with what ``kubectl`` applies server-side (so a later
    client-side apply diffs against it), as kube's lastAppliedUpdater does; objects without one get none."""
    annotations = meta.get("annotations") or {}
    if not annotations.get(LAST_APPLIED):
        return
    applied = json.loads(json.dumps(config))
    applied_annotations = (applied.get("metadata") or {}).get("annotations")
    if isinstance(applied_annotations, dict):
        applied_annotations.pop(LAST_APPLIED, None)
    meta["annotations"] = {**annotations, LAST_APPLIED: json.dumps(applied, separators=(",", ":"),
                                                                   sort_keys=True) + "\n"}


def _bare(obj: dict) -> dict:
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("managedFields", "resourceVersion")}
    return {**obj, "metadata": meta}


def _without_managed_fields(obj: dict) -> dict:
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    meta = dict(meta)
    del meta["managedFields"]
    return {**obj, "metadata": meta}


def _decoded_or_empty(raw: Any) -> Managers:
    try:
        return managers.decode(raw)
    except managers.ManagedFieldsError:
        return {}
