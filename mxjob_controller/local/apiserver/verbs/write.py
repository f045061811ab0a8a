"""The write verbs: create, update, patch and server-side apply, each ending in one shared tail that
validates, admits and writes with compare-and-swap (``endpoints/handlers/create.go``, ``update.go``, ``patch.go``);
delete and deletecollection, answered as kube-apiserver answers them (``delete.go``; the semantics of finalizers,
grace and propagation are in ``deletion.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mxjob_controller.kube.jsoncopy import SCALAR_TYPES, deep_copy
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.patch.field_manager import force_flag, keep_times_when_unchanged, parse_apply_body
from mxjob_controller.local.apiserver.patch.patchers import PATCHERS, Patcher, merge_patch
from mxjob_controller.local.apiserver.request import (
    APPLY_PATCH,
    JSON_PATCH,
    MAX_BODY_BYTES,
    MERGE_PATCH,
    PATCH_TYPES,
    Request,
    Response,
    dumps,
)
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.storage.store import Conflict, Exists, Missing
from mxjob_controller.local.apiserver.storage.watch import Entry
from mxjob_controller.local.apiserver.validation import strict_json
from mxjob_controller.local.apiserver.verbs.base import VerbsBase, list_body, parse_rv, warning_header, with_warnings
from mxjob_controller.local.apiserver.verbs.deletion import (
    DeleteOptions,
    DeleteOutcome,
    parse_delete_options,
    should_delete_during_update,
)
from mxjob_controller.local.apiserver.webhooks.attributes import (
    CREATE,
    DELETE,
    UPDATE,
    AdmissionAttributes,
    delete_options,
)

WRITE_ATTEMPTS = 64  # compare-and-swap attempts of a write without a resourceVersion before it gives up


# --- patch types -----------------------------------------------------------------------------------------

def _check_patch_type(rt: ResourceType, ctype: str) -> None:
    """415 for a patch type the resource does not take, worded as kube-apiserver words it.

    Custom resources take no strategic merge patch and their handler lists what they accept; built-in
    kinds are routed by go-restful, whose refusal is terse.
    """
    if rt.is_custom:
        accepted = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)
        if ctype not in accepted:
            raise errors.StatusError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                                     f"format - accepted media types include: {', '.join(accepted)}")
    elif ctype not in PATCH_TYPES:
        raise errors.StatusError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})


# --- the write verbs -------------------------------------------------------------------------------------

class WriteVerbs(VerbsBase):
    """create, update, patch and apply, and the two tails they end in (``_write_create``, ``_write_update``);
    delete and deletecollection."""

    def _create(self, req: Request) -> Response:
        virtual = self.virtual_creators.get(req.rt.storage_key)
        if virtual is not None and not req.subresource:
            return virtual(req)
        if req.subresource:
            creator = self.subresource_creators.get((req.rt.storage_key, req.subresource))
            if creator is None:
                raise errors.method_not_allowed(f"create is not supported on {req.rt.plural}/{req.subresource}")
            return creator(req)
        manager = self.field_manager.manager(req.query, req.user_agent, "CreateOptions")
        obj, duplicates = self._decode_strict(req)
        return self._write_create(req, obj, duplicates, manager)

    def _write_create(self, req: Request, obj: dict, duplicates: Sequence[str], manager: str | None) -> Response:
        """Shared tail of create and of an apply that creates: validation, admission, store.
        ``manager``: who writes (its managed fields are set here); None when an apply set them already."""
        self._stamp_identity(req, obj)
        requested_name = obj["metadata"].get("name") or ""   # before generateName: what admission is told
        self._check_namespace(req, requested_name)
        ctx = self._context(req)
        self._check_schema(req, obj, ctx, duplicates)
        strategy = self.strategy(req.rt)
        strategy.default(obj, ctx)   # as kube's decoder does: the writer owns the defaulted fields
        if manager is not None:
            self.field_manager.track(req.rt, None, None, obj, manager)
        strategy.prepare_create(obj, ctx)
        for admit in self.admission:
            admit(req.rt, obj, ctx)
        for check in self.validating_admission:
            check(req.rt, obj, None, ctx)
        self._validate(req, obj, None, ctx)
        self._admit(req, CREATE, obj, None, ctx, requested_name)
        obj = self._to_storage(req.rt, obj)
        name = obj["metadata"]["name"]
        if ctx.dry_run:
            if self.store.get(req.rt.storage_key, self._okey(req, name)) is not None:
                raise errors.already_exists(req.rt.resource, name)
            return self._object_response(req, Entry(obj, 0), 201, ctx)
        try:
            entry = self.store.create(req.rt.storage_key, obj)
        except Exists:
            raise errors.already_exists(req.rt.resource, name) from None
        strategy.after_commit(entry.obj, None, ctx)
        return self._object_response(req, entry, 201, ctx)

    def _update(self, req: Request) -> Response:
        if (req.subresource and req.subresource not in ("status", "finalize", "approval")) or (
                req.subresource == "status" and not req.rt.status_subresource) or (
                req.subresource in ("finalize", "approval") and req.subresource not in req.rt.subresources):
            raise errors.no_route()
        manager = self.field_manager.manager(req.query, req.user_agent, "UpdateOptions")
        obj, duplicates = self._decode_strict(req)
        self._stamp_identity(req, obj)
        rv_text = (obj.get("metadata") or {}).get("resourceVersion")
        want_rv = parse_rv(rv_text) if rv_text else None
        for _attempt in range(WRITE_ATTEMPTS):
            current = self._get_entry(req)
            if want_rv is not None and want_rv != current.rv:
                raise errors.conflict(req.rt.resource, req.name or "", errors.STALE_OBJECT)
            new = deep_copy(obj) if want_rv is None else obj
            try:
                return self._write_update(req, new, current, duplicates, manager=manager)
            except Conflict:
                if want_rv is not None:
                    raise errors.conflict(req.rt.resource, req.name or "", errors.STALE_OBJECT) from None
        raise errors.write_outlasted()

    def _patch(self, req: Request) -> Response:
        if (req.subresource and req.subresource not in ("status", "approval")) or (
                req.subresource == "status" and not req.rt.status_subresource) or (
                req.subresource == "approval" and "approval" not in req.rt.subresources):
            raise errors.no_route()
        ctype = req.content_type.split(";")[0].strip().lower()
        _check_patch_type(req.rt, ctype)
        if ctype == APPLY_PATCH:
            return self._apply(req)
        manager = self.field_manager.manager(req.query, req.user_agent, "PatchOptions")
        patcher = PATCHERS.get(ctype)
        if patcher is None:
            raise errors.StatusError(415, "UnsupportedMediaType",
                                     f"the body of the request was in an unknown format - accepted media types "
                                     f"include: {', '.join(sorted(PATCHERS))}")
        if len(req.body) > MAX_BODY_BYTES:
            raise errors.too_large(MAX_BODY_BYTES)
        first = _decode_patch(req.body)
        for attempt in range(WRITE_ATTEMPTS):
            # A retry decodes the patch anew: the lost attempt's object owned what the patch held (pruned, defaulted).
            patch = first if attempt == 0 else _decode_patch(req.body)
            current = self._get_entry(req)
            old = self._served(req.rt, [current])[0].obj  # the patch applies to the object as served
            shares = req.subresource == "status" and (req.rt.is_custom or self.strategy(req.rt).status_write_shares)
            patched = _patched(req.rt, old, patcher, patch, shares)
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch does not produce an object")
            meta = patched.get("metadata")
            if not isinstance(meta, dict):
                patched["metadata"] = meta = {}
            rv_text = meta.get("resourceVersion")
            if rv_text and parse_rv(rv_text) != current.rv:
                raise errors.conflict(req.rt.resource, req.name or "", errors.STALE_OBJECT)
            if patched.get("kind") != req.rt.kind or patched.get("apiVersion") != req.rt.api_version:
                raise errors.bad_request("the patch may not change apiVersion or kind")
            self._stamp_identity(req, patched)
            try:
                return self._write_update(req, patched, current, old=old, manager=manager)
            except Conflict:
                continue
        raise errors.write_outlasted()

    def _apply(self, req: Request) -> Response:
        """Server-side apply: the configuration merged in by its field manager (``field_manager.py``); creates the
        object when it does not exist (201), answers 409 on conflicts unless ``force``."""
        manager = self.field_manager.manager(req.query, req.user_agent, "PatchOptions", apply=True)
        if len(req.body) > MAX_BODY_BYTES:
            raise errors.too_large(MAX_BODY_BYTES)
        config = parse_apply_body(req.body, req.rt)
        force = force_flag(req.query)
        for _attempt in range(WRITE_ATTEMPTS):
            current = self.store.get(req.rt.storage_key, self._okey(req))
            if current is None:
                if req.subresource:
                    raise errors.not_found(req.rt.resource, req.name or "")
                created = deep_copy(self.field_manager.apply(req.rt, None, None, config, manager, force,
                                                             req.name or ""))
                name = created["metadata"].get("name") or ""
                if name != req.name:
                    raise errors.bad_request(f"the name of the object ({name}) does not match the name on the URL "
                                             f"({req.name})")
                try:
                    return self._write_create(req, created, (), None)
                except StatusError as e:
                    if e.reason == "AlreadyExists":
                        continue  # created meanwhile: apply to it
                    raise
            old = self._served(req.rt, [current])[0].obj
            new = deep_copy(self.field_manager.apply(req.rt, req.subresource, old, config, manager, force,
                                                     req.name or ""))
            rv_text = new["metadata"].get("resourceVersion")
            if rv_text and parse_rv(rv_text) != current.rv:
                raise errors.conflict(req.rt.resource, req.name or "", errors.STALE_OBJECT)
            self._stamp_identity(req, new)
            try:
                return self._write_update(req, new, current, old=old)
            except Conflict:
                continue
        raise errors.write_outlasted()

    def _write_update(self, req: Request, new: dict, current: Entry, duplicates: Sequence[str] = (),
                      old: dict | None = None, manager: str | None = None) -> Response:
        """Shared tail of update, patch and apply: strategy, validation, admission, CAS write, finalizer-driven
        removal. ``old``: the stored object as served at the request's version (converted here when not given).
        ``manager``: who writes (its managed fields are set here); None when an apply set them already."""
        ctx = self._context(req)
        self._check_schema(req, new, ctx, duplicates)
        strategy = self.strategy(req.rt)
        strategy.default(new, ctx)   # as kube's decoder does (a field the write left to its default is unchanged)
        if old is None:
            old = self._served(req.rt, [current])[0].obj
        if manager is not None:
            self.field_manager.track(req.rt, req.subresource, old, new, manager)
        for admit in self.update_admission:   # as kube: before the strategy (which bumps generation on a spec change)
            admit(req.rt, new, old, ctx)
        strategy.prepare_update(new, old, ctx)
        keep_times_when_unchanged(old, new)
        for check in self.validating_admission:
            check(req.rt, new, old, ctx)
        self._validate(req, new, old, ctx)
        self._admit(req, UPDATE, new, old, ctx)
        new = self._to_storage(req.rt, new)
        new["metadata"]["resourceVersion"] = str(current.rv)
        if ctx.dry_run:
            return self._object_response(req, Entry(new, current.rv), 200, ctx)
        if should_delete_during_update(new, old, req.rt.storage_key == self._namespaces_key):
            # The last finalizer is gone from an object being deleted (grace 0): it goes now.
            try:
                entry = self.store.delete(req.rt.storage_key, self._okey(req), expect_rv=current.rv)
            except Missing:
                raise errors.not_found(req.rt.resource, req.name or "") from None
            strategy.after_delete(entry.obj)
            return self._object_response(req, Entry(new, entry.rv), 200, ctx)
        try:
            entry = self.store.update(req.rt.storage_key, new, expect_rv=current.rv)
        except Missing:
            raise errors.not_found(req.rt.resource, req.name or "") from None
        strategy.after_commit(entry.obj, old, ctx)
        return self._object_response(req, entry, 200, ctx)

    # --- delete and deletecollection (what happens to the object is deletion.py's) -----------------------

    def _delete_admission(self, req: Request, name: str, opts: DeleteOptions,
                          warnings: list[str]) -> Callable[[dict], None] | None:
        """What the deleter calls with the stored object just before it deletes it (kube's deleteValidation)."""
        hook = self.webhook_admission
        if hook is None or not hook.active():
            return None
        options = delete_options(opts.grace_period_seconds, opts.uid, opts.resource_version, opts.orphan_dependents,
                                 opts.propagation_policy, opts.dry_run)

        def admit(current: dict) -> None:
            attrs = AdmissionAttributes(DELETE, req.rt, "", name, self._admission_namespace(req, name), None,
                                        current, opts.dry_run, options, req.user)
            with_warnings(hook, attrs, warnings)

        return admit

    def _delete(self, req: Request) -> Response:
        if req.subresource:
            raise errors.method_not_allowed(f"delete is not supported on {req.rt.plural}/{req.subresource}")
        return self.delete_object(req, req.name or "", parse_delete_options(req.body, req.query))

    def delete_object(self, req: Request, name: str, opts: DeleteOptions) -> Response:
        """Delete one object of ``req.rt`` in ``req.namespace`` and answer as kube-apiserver does."""
        warnings: list[str] = []
        outcome = self.deleter.delete(req.rt, self._okey(req, name), opts,
                                      admit=self._delete_admission(req, name, opts, warnings))
        return self._delete_response(req, outcome, opts, warnings)

    def _delete_response(self, req: Request, outcome: DeleteOutcome, opts: DeleteOptions,
                         warnings: Sequence[str] = ()) -> Response:
        if outcome.as_object:
            resp = Response(outcome.code(opts), self._encode(req.rt, outcome.entry))
        else:
            meta = outcome.entry.obj.get("metadata") or {}
            status = errors.success_status(req.rt.resource, meta.get("name", ""), meta.get("uid", ""))
            resp = Response(outcome.code(opts), dumps(status))
        if warnings:
            resp.headers["Warning"] = warning_header(warnings)
        return resp

    def _deletecollection(self, req: Request) -> Response:
        """Delete every selected object; answers the list of them as they were before (kube's DeleteCollection)."""
        opts = parse_delete_options(req.body, req.query)
        match = self._matcher(req)
        items, rv = self.store.list(req.rt.storage_key, req.namespace if req.rt.namespaced else None)
        matched = [(okey, entry) for okey, entry in items if match(entry.obj)]
        # Served as listed, before anything is deleted (kube lists, converting, then deletes).
        served = self._served(req.rt, [entry for _, entry in matched], as_list=True)
        warnings: list[str] = []
        for okey, _ in matched:
            try:
                self.deleter.delete(req.rt, okey, opts, admit=self._delete_admission(req, okey[1], opts, warnings))
            except StatusError as e:
                if e.code != 404:
                    if warnings:
                        e.headers["Warning"] = warning_header(warnings)
                    raise
        resp = Response(200, list_body(req.rt.list_kind, req.rt.api_version, {"resourceVersion": str(rv)}, served))
        if warnings:
            resp.headers["Warning"] = warning_header(warnings)
        return resp


def _decode_patch(body: bytes) -> Any:
    """The patch of a request, decoded for one attempt of its write. As kube-apiserver applies the request's bytes
    anew on each attempt, an attempt that lost its compare-and-swap leaves the next a fresh patch: a merge patch's
    lists and the objects in them become the patched object's own, which the schema check prunes and defaults in
    place, so a retry applying them again would lose their unknown-field warnings (``test_patch_retry.py``)."""
    try:
        return strict_json.loads(body or b"null")
    except ValueError as e:
        raise errors.bad_request("invalid JSON patch") from e


def _patched(rt: ResourceType, old: dict, patcher: Patcher, patch: Any, status_write: bool) -> Any:
    """``patcher``'s result for ``old`` (the stored object as served), the caller's to change: a copy of ``old``
    patched, except that a merge patch (which builds its result without changing its target, sharing what it does
    not change) is applied to ``old`` itself and then copies what its result holds of ``old`` (:func:`_own`), so
    that what the patch replaces (a status's conditions, most of a status write) is never copied. It shares
    ``old``'s ``metadata.managedFields``: the field manager takes them out of the patched object and writes new
    ones before anything writes into it (the schema check before it finds nothing to change in stored ones), and a
    job's FieldsV1 documents are much of what a status patch would copy.

    ``status_write``: a merge patch of a custom resource's or a pod's status (``Strategy.status_write_shares``),
    which shares ``old``'s parts other than metadata and status too (a job's spec, its pod templates; a pod's
    spec): the status strategy replaces them with the stored ones, and before it nothing writes into them (the
    schema check copies what it walks of a custom resource, and walks no stored part of a pod's: ``validation/
    schemas``)."""
    meta = old.get("metadata")
    if patcher is not merge_patch or not isinstance(meta, dict) or "managedFields" not in meta:
        return patcher(rt, deep_copy(old), patch)
    patched = patcher(rt, old, patch)
    if not isinstance(patched, dict):
        return patched
    for key, value in patched.items():
        prior = old.get(key, _ABSENT)
        if key == "metadata" and type(value) is dict and type(prior) is dict:
            owned = patched[key] = dict(value) if value is prior else value
            for k, v in owned.items():
                if k != "managedFields" and type(v) not in SCALAR_TYPES:   # a scalar is its own either way
                    owned[k] = _own(v, prior.get(k, _ABSENT))
        elif not (status_write and key != "status"):
            patched[key] = _own(value, prior)
    return patched


_ABSENT = object()


def _own(value: Any, prior: Any) -> Any:
    """``value`` (a merge patch's result for ``prior``) with every part it shares with ``prior`` copied: the dicts
    the merge built are new, what it took from the patch is the request's own."""
    if value is prior:
        return deep_copy(value)
    if type(value) is dict and type(prior) is dict:
        for key, child in value.items():
            if type(child) not in SCALAR_TYPES:   # a scalar is its own either way (not a call for each)
                value[key] = _own(child, prior.get(key, _ABSENT))
    return value
