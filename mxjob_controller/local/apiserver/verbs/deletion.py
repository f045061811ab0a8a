"""DELETE with kube-apiserver's semantics (generic registry ``Store.Delete`` and ``rest.BeforeDelete``).

- DeleteOptions come from the body when there is one, else from the query (never both, as kube does), and
  are validated like ``ValidateDeleteOptions`` (422 on ``DeleteOptions.meta.k8s.io``).
- Preconditions (uid, resourceVersion) fail with 409 before anything is written.
- Kinds with graceful deletion (pods) get ``deletionTimestamp`` in the future and ``deletionGracePeriodSeconds``;
  they are only removed by a later delete with grace 0 (the node side's confirmation). A grace period can only be
  shortened. Unbound pods and finished pods have grace 0: they go at once.
- The garbage-collection finalizers ``orphan`` / ``foregroundDeletion`` are set from ``propagationPolicy`` /
  ``orphanDependents``; an object with any finalizer only gets ``deletionTimestamp`` and stays until they are gone.
- Namespaces are never removed by the first delete: they become ``Terminating`` and the namespace controller
  empties and finalizes them (``spec.finalizers``).

The outcome says whether the object is gone; the REST layer turns it into kube's response (the object, or a
``Status`` for kinds that do not return deleted objects; 202 instead of 200 when ``orphanDependents: false`` was
asked and the object is still there).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from mxjob_controller.kube import field_errors
from mxjob_controller.kube.timefmt import now_rfc3339, parse_time, plus_go_seconds, rfc3339
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import Cause, StatusError
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.storage.store import Conflict, Missing, ObjKey, Store
from mxjob_controller.local.apiserver.storage.watch import Entry
from mxjob_controller.local.apiserver.strategy import Strategy
from mxjob_controller.local.apiserver.validation import strict_json

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
BACKGROUND, FOREGROUND, ORPHAN = "Background", "Foreground", "Orphan"
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
_DELETE_OPTIONS_KINDS = ("", "DeleteOptions")
_ATTEMPTS = 64
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_DECIMAL = re.compile(r"[+-]?[0-9]+")   # what Go's strconv.ParseInt(s, 10, 64) reads


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    """``metav1.DeleteOptions``, already validated."""

    grace_period_seconds: int | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    uid: str | None = None               # preconditions.uid
    resource_version: str | None = None  # preconditions.resourceVersion
    dry_run: bool = False


@dataclass(slots=True)
class DeleteOutcome:
    entry: Entry        # the object as removed, or as it now stands (deletionTimestamp set) when not removed
    deleted: bool
    as_object: bool     # answer with the object; False: with a Status{Success} naming it

    def code(self, opts: DeleteOptions) -> int:
        return 202 if not self.deleted and opts.orphan_dependents is False else 200


# --- options ------------------------------------------------------------------------------------------

def parse_delete_options(body: bytes, query: Mapping[str, str]) -> DeleteOptions:
    """DeleteOptions from a non-empty body, else from the query parameters; 400/422 as kube answers."""
    opts = _from_body(body) if body.strip() else _from_query(query)
    _validate(opts)
    return opts


def _from_body(body: bytes) -> DeleteOptions:
    try:
        data = strict_json.loads(body)
    except ValueError as e:
        raise errors.bad_request(f"error decoding DeleteOptions: {e}") from e
    if not isinstance(data, dict):
        raise errors.bad_request("json: cannot unmarshal into Go value of type v1.DeleteOptions")
    if data.get("kind", "") not in _DELETE_OPTIONS_KINDS:
        raise errors.bad_request("decoded object cannot be converted to DeleteOptions")
    pre = data.get("preconditions")
    if pre is not None and not isinstance(pre, dict):
        raise _type_error("preconditions", pre, "v1.Preconditions")
    pre = pre or {}
    dry_run = data.get("dryRun")
    if dry_run is not None and not (isinstance(dry_run, list) and all(isinstance(v, str) for v in dry_run)):
        raise _type_error("dryRun", dry_run, "[]string")
    if dry_run:
        _check_dry_run(dry_run)
    return DeleteOptions(
        grace_period_seconds=_typed(data, "gracePeriodSeconds", int, "int64"),
        propagation_policy=_typed(data, "propagationPolicy", str, "v1.DeletionPropagation"),
        orphan_dependents=_typed(data, "orphanDependents", bool, "bool"),
        uid=_typed(pre, "uid", str, "types.UID", "Preconditions"),
        resource_version=_typed(pre, "resourceVersion", str, "string", "Preconditions"),
        dry_run=bool(dry_run),
    )


def _typed(data: dict, key: str, kind: type, go_type: str, struct: str = "DeleteOptions") -> Any:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _type_error(key, value, go_type, struct)
    if kind is int and not INT64_MIN <= value <= INT64_MAX:
        raise errors.bad_request(f"json: cannot unmarshal number {value} into Go struct field {struct}.{key} of "
                                 f"type {go_type}")
    return value


def _type_error(key: str, value: Any, go_type: str, struct: str = "DeleteOptions") -> StatusError:
    json_kind = {str: "string", bool: "bool", int: "number", float: "number", list: "array", dict: "object"}
    got = json_kind.get(type(value), "value")
    return errors.bad_request(f"json: cannot unmarshal {got} into Go struct field {struct}.{key} of type {go_type}")


def _from_query(query: Mapping[str, str]) -> DeleteOptions:
    grace = None
    if query.get("gracePeriodSeconds", "") != "":
        text = query["gracePeriodSeconds"]
        if not _DECIMAL.fullmatch(text):
            raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax')
        grace = int(text)
        if not INT64_MIN <= grace <= INT64_MAX:
            raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": value out of range')
    orphan = None
    if query.get("orphanDependents", "") != "":
        text = query["orphanDependents"].lower()
        if text not in ("true", "false", "1", "0"):
            raise errors.bad_request(f'strconv.ParseBool: parsing "{query["orphanDependents"]}": invalid syntax')
        orphan = text in ("true", "1")
    dry_run = query.get("dryRun", "")
    if dry_run:
        _check_dry_run([dry_run])
    return DeleteOptions(grace_period_seconds=grace, propagation_policy=query.get("propagationPolicy") or None,
                         orphan_dependents=orphan, dry_run=bool(dry_run))


def _check_dry_run(values: list[str]) -> None:
    if any(v != "All" for v in values):
        raise _invalid_options([field_errors.not_supported("dryRun", values, ["All"])])


def _validate(opts: DeleteOptions) -> None:
    causes: list[Cause] = []
    if opts.orphan_dependents is not None and opts.propagation_policy is not None:
        causes.append(field_errors.invalid("propagationPolicy", opts.propagation_policy,
                                           "orphanDependents and deletionPropagation cannot be both set"))
    if opts.propagation_policy is not None and opts.propagation_policy not in (FOREGROUND, BACKGROUND, ORPHAN):
        causes.append(field_errors.not_supported("propagationPolicy", opts.propagation_policy,
                                                 [FOREGROUND, BACKGROUND, ORPHAN, "nil"]))
    if causes:
        raise _invalid_options(causes)


def _invalid_options(causes: list[Cause]) -> StatusError:
    return errors.invalid_options("DeleteOptions", causes)


# --- garbage-collection finalizers ----------------------------------------------------------------------

def _should_orphan(finalizers: list[str], opts: DeleteOptions) -> bool:
    if opts.orphan_dependents is not None:
        return opts.orphan_dependents
    if opts.propagation_policy is not None:
        return opts.propagation_policy == ORPHAN
    for f in finalizers:
        if f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER):
            return f == ORPHAN_FINALIZER
    return False  # every kind served here defaults to background cascading


def _should_foreground(finalizers: list[str], opts: DeleteOptions) -> bool:
    if opts.orphan_dependents is not None:
        return False
    if opts.propagation_policy is not None:
        return opts.propagation_policy == FOREGROUND
    for f in finalizers:
        if f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER):
            return f == FOREGROUND_FINALIZER
    return False


def gc_finalizers(finalizers: list[str], opts: DeleteOptions) -> list[str] | None:
    """The finalizers after applying the delete's propagation policy; None when they do not change."""
    new = [f for f in finalizers if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)]
    if _should_orphan(finalizers, opts):
        new.append(ORPHAN_FINALIZER)
    if _should_foreground(finalizers, opts):
        new.append(FOREGROUND_FINALIZER)
    return None if set(new) == set(finalizers) else new


# --- the delete-during-update rule -------------------------------------------------------------------------

def should_delete_during_update(new: dict, old: dict, is_namespace: bool) -> bool:
    """An update that empties the finalizers of an object being deleted (grace 0) removes it.

    kube's ``ShouldDeleteDuringUpdate``; for namespaces ``spec.finalizers`` must be empty too.
    """
    new_meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
    if new_meta.get("finalizers") or not old_meta.get("deletionTimestamp"):
        return False
    if is_namespace and (new.get("spec") or {}).get("finalizers"):
        return False
    return not old_meta.get("deletionGracePeriodSeconds")


# --- the deleter ------------------------------------------------------------------------------------------

StrategyFor = Callable[[ResourceType], Strategy]
Admit = Callable[[dict], None]
"""Called with the stored object just before a delete changes it (kube's ``deleteValidation``: validating admission
webhooks); raises StatusError to refuse. Called again if the delete retries after a conflict."""


class Deleter:
    def __init__(self, store: Store, strategy_for: StrategyFor, namespaces_key: str = "/namespaces") -> None:
        self._store = store
        self._strategy_for = strategy_for
        self._namespaces_key = namespaces_key

    def delete(self, rt: ResourceType, okey: ObjKey, opts: DeleteOptions, admit: Admit | None = None) -> DeleteOutcome:
        """Delete one object; raises StatusError (404, 409 precondition, 403 immortal namespace, or ``admit``'s)."""
        if rt.storage_key == self._namespaces_key:
            return self._delete_namespace(rt, okey, opts, admit)
        return self._delete(rt, okey, opts, admit)

    # kube's Store.Delete + updateForGracefulDeletionAndFinalizers, as one compare-and-swap loop.
    def _delete(self, rt: ResourceType, okey: ObjKey, opts: DeleteOptions, admit: Admit | None = None) -> DeleteOutcome:
        name = okey[1]
        strategy = self._strategy_for(rt)
        for _attempt in range(_ATTEMPTS):
            current = self._store.get(rt.storage_key, okey)
            if current is None:
                raise errors.not_found(rt.resource, name)
            meta = current.obj.get("metadata") or {}
            _check_preconditions(rt, name, meta, opts)
            obj = dict(current.obj)
            new_meta = obj["metadata"] = dict(meta)
            graceful, pending = _before_delete(strategy, obj, new_meta, opts)
            if pending:
                return DeleteOutcome(current, False, rt.return_deleted_object)
            if admit is not None:
                admit(current.obj)
            finalizers = list(meta.get("finalizers") or [])
            new_finalizers = gc_finalizers(finalizers, opts)
            if new_finalizers is not None:
                finalizers = new_finalizers
                if finalizers:
                    new_meta["finalizers"] = finalizers
                else:
                    new_meta.pop("finalizers", None)
            if graceful or finalizers or new_finalizers is not None:
                if finalizers and not graceful:
                    _mark_as_deleting(new_meta)
                if graceful or finalizers:
                    try:
                        out = self._write(rt, obj, current, opts)
                    except Conflict:
                        continue
                    if finalizers or new_meta.get("deletionGracePeriodSeconds"):
                        return DeleteOutcome(out, False, True)
                    current = out  # grace 0 and nothing pending: the update is followed by the removal
                    if opts.dry_run:
                        return DeleteOutcome(out, True, rt.return_deleted_object)
            if opts.dry_run:
                return DeleteOutcome(current, True, rt.return_deleted_object)
            try:
                entry = self._store.delete(rt.storage_key, okey, expect_rv=current.rv)
            except Conflict:
                continue
            except Missing:
                raise errors.not_found(rt.resource, name) from None
            strategy.after_delete(entry.obj)
            return DeleteOutcome(entry, True, rt.return_deleted_object)
        raise errors.write_outlasted()

    def _write(self, rt: ResourceType, obj: dict, current: Entry, opts: DeleteOptions) -> Entry:
        if opts.dry_run:
            return Entry(obj, current.rv)
        try:
            return self._store.update(rt.storage_key, obj, expect_rv=current.rv)
        except Missing:
            raise errors.not_found(rt.resource, current.obj["metadata"].get("name", "")) from None

    # kube's namespace REST Delete: the first delete only starts termination.
    def _delete_namespace(self, rt: ResourceType, okey: ObjKey, opts: DeleteOptions,
                          admit: Admit | None = None) -> DeleteOutcome:
        name = okey[1]
        for _attempt in range(_ATTEMPTS):
            current = self._store.get(rt.storage_key, okey)
            if current is None:
                raise errors.not_found(rt.resource, name)
            meta = current.obj.get("metadata") or {}
            if opts.uid is not None and opts.uid != meta.get("uid"):
                raise errors.conflict(rt.resource, name, f"Precondition failed: UID in precondition: {opts.uid}, "
                                      f"UID in object meta: {meta.get('uid')}")
            if opts.resource_version is not None and opts.resource_version != meta.get("resourceVersion"):
                raise errors.conflict(rt.resource, name, "Precondition failed: ResourceVersion in precondition: "
                                      f"{opts.resource_version}, ResourceVersion in object meta: "
                                      f"{meta.get('resourceVersion')}")
            if name in IMMORTAL_NAMESPACES:
                raise errors.forbidden(rt.resource, name, "this namespace may not be deleted")
            if meta.get("deletionTimestamp"):
                if (current.obj.get("spec") or {}).get("finalizers"):
                    return DeleteOutcome(current, False, True)
                return self._delete(rt, okey, replace(opts, uid=opts.uid or meta.get("uid")), admit)
            if admit is not None:
                admit(current.obj)
            obj = dict(current.obj)
            new_meta = obj["metadata"] = dict(meta, deletionTimestamp=now_rfc3339())
            obj["status"] = dict(current.obj.get("status") or {}, phase="Terminating")
            finalizers = set(meta.get("finalizers") or [])
            for finalizer, wanted in ((ORPHAN_FINALIZER, _namespace_wants(opts, ORPHAN_FINALIZER, finalizers)),
                                      (FOREGROUND_FINALIZER,
                                       _namespace_wants(opts, FOREGROUND_FINALIZER, finalizers))):
                (finalizers.add if wanted else finalizers.discard)(finalizer)
            if finalizers != set(meta.get("finalizers") or []):
                new_meta["finalizers"] = sorted(finalizers)
            try:
                return DeleteOutcome(self._write(rt, obj, current, opts), False, True)
            except Conflict:
                continue
        raise errors.write_outlasted()


def _namespace_wants(opts: DeleteOptions, finalizer: str, current: set[str]) -> bool:
    """kube's shouldHaveOrphanFinalizer / shouldHaveDeleteDependentsFinalizer for namespaces."""
    if opts.orphan_dependents is not None:
        return opts.orphan_dependents if finalizer == ORPHAN_FINALIZER else not opts.orphan_dependents
    if opts.propagation_policy is not None:
        return opts.propagation_policy == (ORPHAN if finalizer == ORPHAN_FINALIZER else FOREGROUND)
    return finalizer in current


def _check_preconditions(rt: ResourceType, name: str, meta: dict, opts: DeleteOptions) -> None:
    """409 as ``rest.BeforeDelete`` words it (the resource is named by its kind there)."""
    by_kind = errors.Resource(rt.group, rt.kind, rt.kind)
    if opts.uid is not None and opts.uid != meta.get("uid"):
        raise errors.conflict(by_kind, name, f"the UID in the precondition ({opts.uid}) does not match the UID in "
                              f"record ({meta.get('uid')}). The object might have been deleted and then recreated")
    if opts.resource_version is not None and opts.resource_version != meta.get("resourceVersion"):
        raise errors.conflict(by_kind, name, f"the ResourceVersion in the precondition ({opts.resource_version}) "
                              f"does not match the ResourceVersion in record ({meta.get('resourceVersion')}). "
                              "The object might have been modified")


def _before_delete(strategy: Strategy, obj: dict, meta: dict, opts: DeleteOptions) -> tuple[bool, bool]:
    """kube's ``rest.BeforeDelete``: (graceful, pending). Sets the deletion fields on ``meta`` when graceful."""
    grace = opts.grace_period_seconds
    if grace is not None and grace < 0:
        grace = 1
    if not strategy.supports_graceful_delete:
        return False, False
    if meta.get("deletionTimestamp"):
        current_grace = meta.get("deletionGracePeriodSeconds")
        if current_grace is not None and current_grace < 0:
            current_grace = 1
        if not current_grace:
            return False, False
        if grace is None or grace >= current_grace:
            return False, True  # only a shorter grace period may be asked for
        started = plus_go_seconds(parse_time(meta["deletionTimestamp"]) or time.time(), -current_grace)
        when = plus_go_seconds(started, grace)
        if when < time.time():
            when = time.time()
            if grace != 0:
                grace = 1
        meta["deletionTimestamp"] = rfc3339(when)
        meta["deletionGracePeriodSeconds"] = grace
        return True, False
    period = strategy.graceful_delete_period(obj, grace)
    if period is None:
        return False, False
    meta["deletionTimestamp"] = rfc3339(plus_go_seconds(time.time(), period))
    meta["deletionGracePeriodSeconds"] = period
    if int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    return True, False


def _mark_as_deleting(meta: dict) -> None:
    """kube's markAsDeleting: deletionTimestamp now (unless already earlier), grace 0, generation bumped once."""
    now = now_rfc3339()
    existing = meta.get("deletionTimestamp")
    if existing is None and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1
    if existing is None or (parse_time(existing) or 0) > time.time():
        meta["deletionTimestamp"] = now
    meta["deletionGracePeriodSeconds"] = 0
