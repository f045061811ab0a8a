"""The server's schema validation: built-in kinds by group/version/kind, custom resources by CRD version.

Plugged into ``REST.schema_validator``, it runs when a write's body has been decoded, before any strategy:
it prunes unknown fields (built-in objects never store them), applies a CRD schema's ``default``s, and
checks types, formats, value constraints and the built-in rules. It returns the problems it found and the
unknown fields it dropped; the caller applies ``fieldValidation`` to the latter.

Every schema is compiled on its kind's first write: a built-in kind's (most of the fifty kinds served are never
written in a run, and compiling them all would cost the server's start a second of CPU), and a CRD version's
likewise (the local cluster applies five CRDs at start, and a run writes one or two of their kinds: compiling them
all cost its start a tenth of a second of CPU; issue 48). A CRD's problems are its create's or update's to report,
by the CRD strategy's checks (``kinds/crds.py``), not the compiler's. A CRD's compiled versions are dropped when it
is deleted or changed (the registry tells us: a change serves new resource types).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from mxjob_controller.kube import schema as kube_schema
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kube.schema import CompiledSchema, Result
from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.resources import Registry, ResourceType
from mxjob_controller.local.apiserver.strategy import WriteContext

BuiltinSchema = Callable[[str, str], "CompiledSchema | None"]
"""(apiVersion, kind) -> the compiled schema of a built-in kind."""


class SchemaValidation:
    """Compiled schemas for everything the registry serves, and the hook that applies them.

    ``overrides``: built-in kinds whose schema is compiled otherwise, keyed by (apiVersion, kind) (the webhook
    configurations and CRDs, whose webhook fields kube validates in Go: ``webhooks/config.py``)."""

    def __init__(self, registry: Registry, overrides: Mapping[tuple[str, str], BuiltinSchema] | None = None) -> None:
        self._registry = registry
        self._overrides = dict(overrides or {})
        self._lock = threading.Lock()
        self._schemas: dict[ResourceType, CompiledSchema | None] = {}
        self._unchanged = UnchangedParts()
        registry.add_listener(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        """Forget what the registry no longer serves (on every change); what it newly serves is compiled on its
        first use (:meth:`schema_for`).

        A resource type is immutable: a CRD update serves new ones, so a compiled schema never goes stale.
        """
        with self._lock:
            old = self._schemas
            self._schemas = {rt: old[rt] for rt in self._registry.all() if rt in old}

    def schema_for(self, rt: ResourceType) -> CompiledSchema | None:
        schemas = self._schemas
        if rt in schemas:
            return schemas[rt]
        with self._lock:  # a kind's first use: compile it once
            if rt not in self._schemas:
                self._schemas = {**self._schemas, rt: self._compile(rt)}
            return self._schemas[rt]

    def __call__(self, rt: ResourceType, obj: dict, ctx: WriteContext) -> tuple[list[Cause], list[str]]:
        """(problems, unknown field paths) of one decoded write; prunes and defaults ``obj`` in place."""
        compiled = self.schema_for(rt)
        if compiled is None:
            return [], []
        if not rt.status_subresource:
            result = _apply(compiled, rt, obj, ctx)
        elif ctx.subresource == "status":
            result = self._apply_status(compiled, rt, obj, ctx)
            result.errors = [c for c in result.errors if _in_status(c)]
        else:
            result = _apply_without_status(compiled, rt, obj, ctx)
        return result.errors, result.unknown


    def _apply_status(self, compiled: CompiledSchema, rt: ResourceType, obj: dict, ctx: WriteContext) -> Result:
        """A status write (its errors outside status are dropped, and the strategy keeps all but the status as
        stored): the parts other than status and metadata that equal what a walk already left unchanged and
        without unknown fields (the controllers' status writes carry the job's spec unchanged) are not walked
        again; the rest is walked as a whole object's would be. Custom resources only: a built-in kind's write
        is canonicalized before the schema sees it.

        The parts other than status and metadata may be the stored object's own (a status merge patch shares them:
        ``verbs/write._patched``): what is walked of them (which may prune and default) is copied first."""
        if not rt.is_custom:
            return _apply_unstored(compiled, rt, obj, ctx)
        ident = _identity(rt, obj)
        if ident is None:
            _own_parts(obj, ())
            return _apply(compiled, rt, obj, ctx)
        skip = self._unchanged.known(ident, compiled, obj)
        if not skip:
            given = {k: v for k, v in obj.items() if _part(k, v)}
            _own_parts(obj, ())
            result = _apply(compiled, rt, obj, ctx)
            self._unchanged.observe(ident, compiled, obj, given, result.unknown)
            return result
        _own_parts(obj, skip)
        view = {k: v for k, v in obj.items() if k not in skip}
        result = _apply(compiled, rt, view, ctx)
        if result.unknown:
            # Unknown fields may make the answer show the whole object (fieldValidation=Strict): the skipped parts
            # are walked too, so it is the object a whole walk leaves (2.0 written as 2, as everywhere else).
            rest = {k: deep_copy(obj[k]) for k in skip}
            _apply(compiled, rt, rest, ctx)
            skipped = {k: rest[k] for k in skip}
        else:
            skipped = {k: obj[k] for k in skip}
        _merge_view(obj, view, skipped)
        return result

    def _compile(self, rt: ResourceType) -> CompiledSchema | None:
        if rt.is_custom:
            return kube_schema.compile_structural(dict(rt.schema) if rt.schema else None)
        compile_builtin = self._overrides.get((rt.api_version, rt.kind), kube_schema.object_schema)
        return compile_builtin(rt.api_version, rt.kind)


def _apply(compiled: CompiledSchema, rt: ResourceType, obj: dict, ctx: WriteContext) -> Result:
    return compiled.apply(obj, prune=True, defaults=rt.is_custom, rules=ctx.subresource is None)


def _apply_unstored(compiled: CompiledSchema, rt: ResourceType, obj: dict, ctx: WriteContext) -> Result:
    """A built-in kind's status write: its parts other than status and metadata that are the stored object's own
    (a pod's status merge patch shares the stored spec: ``verbs/write._patched``) are not walked. A stored part was
    pruned when it was written, and a status write reports no problem outside status (the rules are off, and
    the caller drops the rest), so its walk would find and change nothing: it is left out, the rest walked."""
    stored = _stored(rt, obj, ctx)
    shared = [k for k, v in obj.items() if _part(k, v) and stored.get(k) is v] if stored else ()
    if not shared:
        return _apply(compiled, rt, obj, ctx)
    view = {k: v for k, v in obj.items() if k not in shared}
    result = _apply(compiled, rt, view, ctx)
    _merge_view(obj, view, {k: obj[k] for k in shared})
    return result


def _stored(rt: ResourceType, obj: dict, ctx: WriteContext) -> dict | None:
    """The object stored under ``obj``'s name now, if the write can read it."""
    ident = _identity(rt, obj)
    if ident is None or ctx.lookup is None:
        return None
    return ctx.lookup(rt.storage_key, ident[1], ident[2])


def _apply_without_status(compiled: CompiledSchema, rt: ResourceType, obj: dict, ctx: WriteContext) -> Result:
    """A main-resource write of a kind with a status subresource: its status is the stored one, whatever the
    request says (kube's strategies reset it), so the request's status is neither checked nor pruned."""
    if "status" not in obj:
        return _apply(compiled, rt, obj, ctx)
    view = {k: v for k, v in obj.items() if k != "status"}
    result = _apply(compiled, rt, view, ctx)
    status = obj["status"]
    obj.clear()
    obj.update(view)  # root-level defaults added and unknown fields pruned on the view
    obj["status"] = status
    return result


def _identity(rt: ResourceType, obj: dict) -> tuple[ResourceType, str, str] | None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    namespace, name = meta.get("namespace") or "", meta.get("name")
    return (rt, namespace, name) if isinstance(name, str) and isinstance(namespace, str) else None


def _own_parts(obj: dict, skip: frozenset[str] | tuple[()]) -> None:
    """Replace ``obj``'s parts other than status and metadata (but ``skip``) with copies, before a walk that may
    write into them."""
    for key, value in obj.items():
        if key not in skip and _part(key, value):
            obj[key] = deep_copy(value)


def _merge_view(obj: dict, view: dict, skipped: dict) -> None:
    """``obj`` as a whole walk would leave it: the walked ``view``'s keys and values (pruned ones gone, defaulted
    ones added after the others), ``skipped``'s where the view left them out, in ``obj``'s order."""
    out: dict = {}
    for key in obj:
        if key in skipped:
            out[key] = skipped[key]
        elif key in view:
            out[key] = view[key]
    for key, value in view.items():
        if key not in out:
            out[key] = value
    obj.clear()
    obj.update(out)


class UnchangedParts:
    """Per object (custom resources only), the top-level parts other than status and metadata that a status
    write's walk was seen to leave as they were, without unknown fields: an equal part walks the same way again
    (the walk of a subtree depends on nothing else with rules off, as on a status write), so it need not be walked.

    A write's parts are walked as copies (:func:`_own_parts`); a part the walk left equal to the value given
    (compared with ``==``), finding no unknown field anywhere, is trusted from then on. The value kept is the one
    the write was given, which nothing changes afterwards: a status merge patch's is the stored object's own (it is
    never changed), any other write's is its own and dropped by the status strategy. Keyed by the compiled schema
    too (a CRD change compiles a new one). Bounded: the oldest of :attr:`LIMIT` objects is forgotten first (kept
    values are mostly shared with stored objects; a deleted object's are kept until then).
    """

    LIMIT = 1024

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parts: dict[tuple, tuple[CompiledSchema, dict[str, Any]]] = {}   # (rt, namespace, name) -> ...

    def known(self, ident: tuple, compiled: CompiledSchema, obj: dict) -> frozenset[str]:
        """The keys of ``obj`` whose values equal a trusted part."""
        entry = self._parts.get(ident)
        if entry is None or entry[0] is not compiled:
            return frozenset()
        parts = entry[1]
        return frozenset(k for k, v in obj.items() if k in parts and _part(k, v) and parts[k] == v)

    def observe(self, ident: tuple, compiled: CompiledSchema, obj: dict, given: dict[str, Any],
                unknown: list[str]) -> None:
        """After a whole walk of ``obj`` (whose parts were ``given`` before it): trust those the walk left equal;
        none when it found an unknown field anywhere."""
        parts = {} if unknown else {k: v for k, v in given.items() if k in obj and obj[k] == v}
        with self._lock:
            self._parts.pop(ident, None)
            if parts:
                self._parts[ident] = (compiled, parts)
                while len(self._parts) > self.LIMIT:
                    del self._parts[next(iter(self._parts))]


def _part(key: str, value: Any) -> bool:
    return key not in ("status", "metadata") and type(value) in (dict, list)


def _in_status(cause: Cause) -> bool:
    return cause.field == "status" or cause.field.startswith(("status.", "status["))
