"""The write verbs: create, update, patch and server-side apply, each ending in one shared tail that
validates, admits and writes with compare-and-swap (``endpoints/handlers/create.go``, ``update.go``, ``patch.go``)."""

from __future__ import annotations

from collections.abc import Sequence

from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.deletion import should_delete_during_update
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.field_manager import force_flag, keep_times_when_unchanged, parse_apply_body
from mxjob_controller.local.apiserver.request import (
    APPLY_PATCH,
    JSON_PATCH,
    MAX_BODY_BYTES,
    MERGE_PATCH,
    PATCH_TYPES,
    Request,
    Response,
)
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.store import Conflict, Exists, Missing
from mxjob_controller.local.apiserver.validation import strict_json
from mxjob_controller.local.apiserver.verbs.base import VerbsBase, parse_rv
from mxjob_controller.local.apiserver.watch import Entry
from mxjob_controller.local.apiserver.webhooks.attributes import CREATE, UPDATE

WRITE_ATTEMPTS = 64  # compare-and-swap attempts of a write without a resourceVersion before it gives up


class WriteVerbs(VerbsBase):
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
        self._check_namespace(req, obj["metadata"].get("name") or "")
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
        self._admit(req, CREATE, obj, None, ctx)
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
        if (req.subresource and req.subresource not in ("status", "finalize")) or (
                req.subresource == "status" and not req.rt.status_subresource) or (
                req.subresource == "finalize" and "finalize" not in req.rt.subresources):
            raise errors.path_not_found(f"{req.rt.plural}/{req.subresource}")
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
        if (req.subresource and req.subresource != "status") or (
                req.subresource == "status" and not req.rt.status_subresource):
            raise errors.path_not_found(f"{req.rt.plural}/{req.subresource}")
        ctype = req.content_type.split(";")[0].strip().lower()
        _check_patch_type(req.rt, ctype)
        if ctype == APPLY_PATCH:
            return self._apply(req)
        manager = self.field_manager.manager(req.query, req.user_agent, "PatchOptions")
        patcher = self.patchers.get(ctype)
        if patcher is None:
            raise errors.StatusError(415, "UnsupportedMediaType",
                                     f"the body of the request was in an unknown format - accepted media types "
                                     f"include: {', '.join(sorted(self.patchers))}")
        if len(req.body) > MAX_BODY_BYTES:
            raise errors.too_large(MAX_BODY_BYTES)
        try:
            patch = strict_json.loads(req.body or b"null")
        except ValueError as e:
            raise errors.bad_request("invalid JSON patch") from e
        for _attempt in range(WRITE_ATTEMPTS):
            current = self._get_entry(req)
            old = self._served(req.rt, [current])[0].obj  # the patch applies to the object as served
            patched = patcher(req.rt, deep_copy(old), patch)
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


# ---------------------------------------------------------------------------------------------------------

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

