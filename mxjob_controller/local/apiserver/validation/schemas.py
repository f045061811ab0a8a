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

from mxjob_controller.kube import schema as kube_schema
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
            result = _apply(compiled, rt, obj, ctx)
            result.errors = [c for c in result.errors if _in_status(c)]
        else:
            result = _apply_without_status(compiled, rt, obj, ctx)
        return result.errors, result.unknown


    def _compile(self, rt: ResourceType) -> CompiledSchema | None:
        if rt.is_custom:
            return kube_schema.compile_structural(dict(rt.schema) if rt.schema else None)
        compile_builtin = self._overrides.get((rt.api_version, rt.kind), kube_schema.object_schema)
        return compile_builtin(rt.api_version, rt.kind)


def _apply(compiled: CompiledSchema, rt: ResourceType, obj: dict, ctx: WriteContext) -> Result:
    return compiled.apply(obj, prune=True, defaults=rt.is_custom, rules=ctx.subresource is None)


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


def _in_status(cause: Cause) -> bool:
    return cause.field == "status" or cause.field.startswith(("status.", "status["))
