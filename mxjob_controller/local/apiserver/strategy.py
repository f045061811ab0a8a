"""Per-kind write rules, kube-apiserver's "strategies": what the server sets, resets and forbids.

:class:`Strategy` holds the rules every kind shares (system fields, generation, the status subresource);
kinds with more to do (pods, services, namespaces, CRDs) subclass it in ``kinds/``. Validation of field
values lives in ``validation/``; a strategy only calls into it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.kube.uids import random_uuid
from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.resources import ResourceType

# kube's name generator alphabet: no vowels (no words) and no look-alike characters.
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(slots=True)
class WriteContext:
    """What a strategy may need to know about the request being served."""

    rt: ResourceType
    subresource: str | None = None
    dry_run: bool = False
    field_manager: str = ""
    warnings: list[str] = field(default_factory=list)
    # Set by the server: read access to other objects (e.g. a pod's service account), and the node name.
    lookup: Callable[[str, str, str], dict | None] | None = None
    user: Any = None   # the authenticated caller (auth.UserInfo); None for the server's own writes
    audit_annotations: dict[str, str] = field(default_factory=dict)   # admission's, for the audit record


class Strategy:
    """The rules shared by every kind."""

    #: Whether a status write keeps the stored object's parts other than metadata and status as they are, shared
    #: with the version it stores (nothing between the patch and the strategy writes into them: a pod's defaults
    #: are all set already, its schema check has nothing to prune or canonicalize in a stored spec). Custom
    #: resources always do (``_old_with``); pods say so here (a 1,000-peer MXJob's pod spec is 65 KB).
    status_write_shares = False

    def prepare_create(self, obj: dict, ctx: WriteContext) -> None:
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choice(_GENERATE_ALPHABET) for _ in range(5))
            meta["name"] = meta["generateName"] + suffix
        meta["uid"] = random_uuid()
        meta["creationTimestamp"] = now_rfc3339()
        for k in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "resourceVersion"):
            meta.pop(k, None)
        if ctx.rt.sets_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if ctx.rt.status_subresource and ctx.rt.is_custom:
            obj.pop("status", None)  # create cannot set status of a custom resource with /status
        elif ctx.rt.initial_status is not None:   # kube's PrepareForCreate resets it: builtin.py says to what
            obj["status"] = deep_copy(dict(ctx.rt.initial_status))
        self.admission_defaults(obj, ctx)

    def prepare_update(self, new: dict, old: dict, ctx: WriteContext) -> None:
        """Carry over what clients may not change, apply the status subresource's split, bump generation."""
        if ctx.subresource == "status":
            status = new.get("status")
            managed = (new.get("metadata") or {}).get("managedFields")
            new.clear()
            new.update(_old_with(old, status, managed, share=ctx.rt.is_custom or self.status_write_shares))
            return
        meta, old_meta = new.setdefault("metadata", {}), old.get("metadata", {})
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"):
            if k in old_meta:
                if k != "uid" or not meta.get("uid"):
                    meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        meta.pop("selfLink", None)
        if ctx.rt.status_subresource:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        self.admission_defaults(new, ctx)
        if ctx.rt.sets_generation and self.spec_changed(new, old):
            meta["generation"] = int(old_meta.get("generation") or 0) + 1

    def spec_changed(self, new: dict, old: dict) -> bool:
        """Whether a change should bump ``metadata.generation``: anything but metadata and status."""
        keys = (set(new) | set(old)) - {"metadata", "status", "apiVersion", "kind"}
        return any(new.get(k) != old.get(k) for k in keys)

    def default(self, obj: dict, ctx: WriteContext) -> None:
        """Kind-specific defaulting (kube's SetDefaults_*); nothing for most kinds. Kube defaults while decoding a
        request, before the field manager looks at it, so the writer owns the fields defaulted here: the server
        calls this before tracking managed fields, and before the strategy's prepare_create/prepare_update."""

    def admission_defaults(self, obj: dict, ctx: WriteContext) -> None:
        """What kube's default admission plugins fill in (after the field manager: nobody owns these fields);
        nothing for most kinds."""

    def validate(self, obj: dict, old: dict | None, ctx: WriteContext) -> list[Cause]:
        """Kind-specific validation beyond the schema; the base checks immutable metadata on update."""
        causes: list[Cause] = []
        if old is not None:
            meta, old_meta = obj.get("metadata", {}), old.get("metadata", {})
            if meta.get("uid") and meta.get("uid") != old_meta.get("uid"):
                causes.append(Cause("metadata.uid", "FieldValueInvalid",
                                    f'Invalid value: "{meta.get("uid")}": field is immutable'))
        return causes

    def after_commit(self, obj: dict, old: dict | None, ctx: WriteContext) -> None:
        """Run once a write is stored (CRDs start serving their kinds here)."""

    def after_delete(self, obj: dict) -> None:
        """Run once an object is gone from the store (CRDs stop serving their kinds here)."""

    #: Whether deletes of this kind are graceful (kube's RESTGracefulDeleteStrategy): see deletion.py.
    supports_graceful_delete = False

    def graceful_delete_period(self, obj: dict, requested: int | None) -> int | None:
        """The grace period a first delete gives ``obj`` (kube's CheckGracefulDelete); None: not graceful."""
        return None


def _old_with(old: dict, status: Any, managed: Any, share: bool = False) -> dict:
    """A copy of ``old`` whose status is ``status`` and whose managed fields are ``managed`` (each left out when
    None), keys in ``old``'s order: a status write keeps everything else as stored. The two parts it replaces are
    not copied first: on a status write they are most of a job (its conditions, replica statuses and every
    manager's FieldsV1 document).

    ``share``: the parts other than metadata and status are ``old``'s own, not copies (a custom resource: nothing
    after its status strategy writes into them, and a stored object is never changed, so two stored versions
    may hold the same spec)."""
    out: dict = {}
    for key, value in old.items():
        if key == "status":
            if status is not None:
                out[key] = status
        elif key == "metadata" and isinstance(value, dict):
            meta: dict = {}
            for k, v in value.items():
                if k != "managedFields":
                    meta[k] = deep_copy(v)
                elif managed is not None:
                    meta[k] = managed
            if managed is not None:   # as the field manager left them: they record this status write
                meta["managedFields"] = managed
            out[key] = meta
        else:
            out[key] = value if share else deep_copy(value)
    if status is not None and "status" not in out:
        out["status"] = status
    return out
