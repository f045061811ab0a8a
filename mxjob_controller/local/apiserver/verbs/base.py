"""What every verb shares: the hooks the server wires in, decoding a body, validation, admission and the
object response. ``read.py`` and ``write.py`` add the verbs; ``rest.py`` puts them together.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import yaml

from mxjob_controller.kube import field_errors
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.encoding import kubeproto
from mxjob_controller.local.apiserver.errors import Cause, StatusError
from mxjob_controller.local.apiserver.kinds.pod_log_options import LogOptions
from mxjob_controller.local.apiserver.patch.field_manager import FieldManager
from mxjob_controller.local.apiserver.request import MAX_BODY_BYTES, Request, Response, dumps
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.storage.list_options import MAX_RV
from mxjob_controller.local.apiserver.storage.store import ObjKey, Store
from mxjob_controller.local.apiserver.storage.watch import Entry
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext
from mxjob_controller.local.apiserver.validation import field_validation
from mxjob_controller.local.apiserver.validation.meta import validate_object_meta
from mxjob_controller.local.apiserver.validation.strict_json import loads_with_duplicates
from mxjob_controller.local.apiserver.validation.yaml_body import loads_yaml
from mxjob_controller.local.apiserver.verbs import paging
from mxjob_controller.local.apiserver.verbs.deletion import Deleter
from mxjob_controller.local.apiserver.webhooks.attributes import CREATE, AdmissionAttributes, write_options

FIELD_VALIDATION = ("Strict", "Warn", "Ignore")


# ---------------------------------------------------------------------------------------------------------
# Hooks the server wires in: validation of whole objects (schema), tables, logs, admission, conversion.

SchemaValidator = Callable[[ResourceType, dict, WriteContext], tuple[list[Cause], list[str]]]
"""(rt, decoded obj, ctx) -> (causes, unknown field paths); prunes unknown fields and applies defaults in
place. Runs before the strategy; the caller applies fieldValidation to the unknown fields."""

TableConverter = Callable[[ResourceType, list[Entry], dict | None, str, bool], dict]
"""(rt, entries, list metadata (None for one object), includeObject (None/Metadata/Object), with column
definitions) -> a meta.k8s.io/v1 Table."""
LogReader = Callable[[dict, str, LogOptions], Iterator[bytes]]   # (pod, container, options)
"""(a bound pod, the request's query with ``container`` resolved) -> its log, streamed; raises StatusError (400) for
what the node refuses: a container waiting to start, no previous instance."""
SubresourceCreator = Callable[[Request], Response]
"""Serves a POST to a subresource (``pods/binding``)."""
Admission = Callable[[ResourceType, dict, WriteContext], None]
"""Mutating admission on create: runs after defaulting, before validation; may change the object in place."""
UpdateAdmission = Callable[[ResourceType, dict, dict, WriteContext], None]
"""Mutating admission on update: (rt, new object, old object, ctx); runs before the strategy prepares the update
(as kube's, so a change it undoes does not bump ``generation``); may change the new object in place."""
ValidatingAdmission = Callable[[ResourceType, dict, "dict | None", WriteContext], None]
"""(rt, new object, old object (None on create), ctx): raises StatusError to refuse a create or an update (the
caller is ``ctx.user``); runs after mutating admission, before validation."""


class ValidatingPlugin(Protocol):
    """A validating admission plugin (PodSecurity): adds to the request's warnings and audit annotations, raises
    StatusError to refuse. Runs after validation, before the validating webhooks, as kube orders them."""

    def __call__(self, attrs: AdmissionAttributes, warnings: list[str], annotations: dict[str, str]) -> None: ...


class Conversion(Protocol):
    """Objects of ``rt``'s kind (stored at any of its versions) at ``version``; raises StatusError when that fails.

    ``as_list``: a page of a list (one conversion for all). ``reading``: from storage (else a write going to it).
    Objects already at ``version`` come back as they are (the same dicts); the inputs are never changed."""

    def __call__(self, rt: ResourceType, objects: Sequence[dict], version: str, *, as_list: bool = False,
                 reading: bool = True) -> list[dict]: ...


class WebhookAdmission(Protocol):
    """Validating admission webhooks: called for every create, update and delete once the object passed its own
    validation and the other admission checks; raises StatusError to refuse, adds warnings to ``warnings``."""

    def active(self) -> bool: ...

    def __call__(self, attrs: AdmissionAttributes, warnings: list[str]) -> None: ...


class TypedDecode(Protocol):
    """What decoding into a built-in kind's Go struct does (``validation/typed_decode.py``)."""

    def canonicalize(self, rt: ResourceType, obj: dict, strict: bool) -> None: ...

    def type_error(self, rt: ResourceType, obj: dict) -> None: ...


# --- what the verbs share, pure --------------------------------------------------------------------------

def _dedupe(causes: list[Cause]) -> list[Cause]:
    seen, out = set(), []
    for c in causes:
        if c not in seen:
            seen.add(c)
            out.append(c)
    return out


_OPTIONS_KIND = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}


def _dry_run(query: Mapping[str, str], verb: str) -> bool:
    value = query.get("dryRun", "")
    if value and value != "All":
        raise errors.invalid_options(_OPTIONS_KIND.get(verb, "CreateOptions"),
                                     [field_errors.not_supported("dryRun", [value], ["All"])])
    return value == "All"


def parse_rv(text: str) -> int:
    try:
        rv = int(text)
        if not 0 <= rv <= MAX_RV:
            raise ValueError
        return rv
    except (TypeError, ValueError):
        raise errors.bad_request(f'invalid resource version "{text}"') from None


def list_body(kind: str, api_version: str, meta: dict[str, Any], entries: Sequence[Entry]) -> bytes:
    """A list's JSON, its items the entries' stored encodings, built in one allocation: a list of large objects
    (pods whose env names a thousand hosts) is tens of megabytes, and each intermediate copy (a joined item list,
    then concatenations) would be as large again, per list being answered."""
    head = dumps({"kind": kind, "apiVersion": api_version, "metadata": meta})
    parts = [head[:-1], b',"items":[']
    for i, entry in enumerate(entries):
        if i:
            parts.append(b",")
        parts.append(entry.raw)
    parts.append(b"]}")
    return b"".join(parts)


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def include_object_policy(query: Mapping[str, str]) -> str:
    """A Table's includeObject policy; kube's default (empty) is Metadata (PartialObjectMetadata)."""
    value = query.get("includeObject", "")
    if value not in ("", "None", "Metadata", "Object"):
        raise errors.bad_request(f'Unable to convert to Table as requested: includeObject: Invalid value: '
                                 f'"{value}": must be \'Metadata\', \'Object\', \'None\', or empty')
    return value or "Metadata"


WARNING_TOTAL_RUNES = 4 * 1024  # kube's warning recorder: the warnings' text in all, before it truncates
WARNING_ITEM_RUNES = 256  # ... each warning's, once it truncates


def warning_header(warnings: Sequence[str]) -> str:
    """kube's ``Warning`` header: one ``299 - "<text>"`` per warning, bounded as kube's recorder bounds it: past
    4 Ki runes in all, each warning is cut to 256 runes and warnings stop where the total would pass 4 Ki (a
    request with 30,000 unknown fields and ``fieldValidation=Warn`` would otherwise get a header no client reads)."""
    kept = list(warnings)
    if sum(len(w) for w in kept) > WARNING_TOTAL_RUNES:
        kept, total = [], 0
        for warning in warnings:
            cut = warning[:WARNING_ITEM_RUNES]
            if total + len(cut) > WARNING_TOTAL_RUNES:
                break
            kept.append(cut)
            total += len(cut)
    return ", ".join(f"299 - {json.dumps(w)}" for w in kept)


def with_warnings(hook: Callable[[AdmissionAttributes, list[str]], None], attrs: AdmissionAttributes,
                  warnings: list[str]) -> None:
    """Call validating admission (webhooks, a plugin); a refusal goes out with the warnings gathered so far, as kube's
    does."""
    try:
        hook(attrs, warnings)
    except StatusError as e:
        if warnings:
            e.headers["Warning"] = warning_header(warnings)
        raise


# --- the verbs' shared base ------------------------------------------------------------------------------

class VerbsBase:
    """The REST storage of every resource, its hooks and the steps the verbs share (the verbs are its subclasses)."""

    def __init__(self, store: Store, strategies: Mapping[str, Strategy], default_strategy: Strategy,
                 namespaces_key: str = "/namespaces") -> None:
        self.store = store
        self._strategies = strategies
        self._default = default_strategy
        self._namespaces_key = namespaces_key
        self.schema_validator: SchemaValidator | None = None
        self.typed_decode: TypedDecode | None = None   # validation/typed_decode.py
        self.table_converter: TableConverter | None = None
        self.log_reader: LogReader | None = None
        self.subresource_creators: dict[tuple[str, str], SubresourceCreator] = {}  # (storage key, subresource)
        self.subresource_getters: dict[tuple[str, str], SubresourceCreator] = {}  # GETs of pods/exec and the like
        # Create-only kinds that store nothing (the access reviews): storage key → handler of their POST.
        self.virtual_creators: dict[str, SubresourceCreator] = {}
        self.admission: list[Admission] = []
        self.update_admission: list[UpdateAdmission] = []
        self.validating_admission: list[ValidatingAdmission] = []
        self.validating_plugins: list[ValidatingPlugin] = []
        self.lookup: Callable[[str, str, str], dict | None] | None = None
        # Versions of custom resources (None: only apiVersion is rewritten) and validating webhooks (webhooks/).
        self.conversion: Conversion | None = None
        self.webhook_admission: WebhookAdmission | None = None
        self.deleter = Deleter(store, self.strategy, namespaces_key)
        self.field_manager = FieldManager()
        self.snapshots = paging.Snapshots()   # the paged lists being read: what their continue pages come from

    def strategy(self, rt: ResourceType) -> Strategy:
        return self._strategies.get(rt.storage_key, self._default)

    # --- steps of a request ------------------------------------------------------------------------------

    def _okey(self, req: Request, name: str | None = None) -> ObjKey:
        return (req.namespace or "" if req.rt.namespaced else "", name if name is not None else req.name or "")

    def _convert(self, rt: ResourceType, objects: Sequence[dict], version: str, *, as_list: bool = False,
                 reading: bool = True) -> list[dict]:
        if self.conversion is not None:
            return self.conversion(rt, objects, version, as_list=as_list, reading=reading)
        api_version = f"{rt.group}/{version}" if rt.group else version
        return [o if o.get("apiVersion") == api_version else {**o, "apiVersion": api_version} for o in objects]

    def _served(self, rt: ResourceType, entries: Sequence[Entry], as_list: bool = False) -> list[Entry]:
        """Stored entries as served at ``rt``'s version: those stored at another are converted, all in one call."""
        if all(e.obj.get("apiVersion") == rt.api_version for e in entries):
            return list(entries)
        objects = self._convert(rt, [e.obj for e in entries], rt.version, as_list=as_list)
        return [e if o is e.obj else Entry(o, e.rv) for e, o in zip(entries, objects, strict=True)]

    def _encode(self, rt: ResourceType, entry: Entry) -> bytes:
        """An object as served at ``rt``'s version."""
        return self._served(rt, [entry])[0].raw

    def _object_response(self, req: Request, entry: Entry, code: int = 200,
                         ctx: WriteContext | None = None) -> Response:
        entry = self._served(req.rt, [entry])[0]
        if wants_table(req.accept) and self.table_converter is not None:
            table = self.table_converter(req.rt, [entry], None, include_object_policy(req.query), True)
            return Response(code, dumps(table))
        resp = Response(code, entry.raw)
        if ctx is not None and ctx.warnings:
            resp.headers["Warning"] = warning_header(ctx.warnings)
        return resp

    def _get_entry(self, req: Request) -> Entry:
        entry = self.store.get(req.rt.storage_key, self._okey(req))
        if entry is None:
            raise errors.not_found(req.rt.resource, req.name or "")
        return entry

    def _decode(self, req: Request) -> dict:
        """The request body as an object of this resource's kind, or a 400/415 Status."""
        return self._decode_strict(req)[0]

    def _decode_strict(self, req: Request) -> tuple[dict, list[str]]:
        """``_decode``, and the paths of duplicate fields (kept last, as Go does) for fieldValidation."""
        duplicates: list[str] = []
        if len(req.body) > MAX_BODY_BYTES:
            raise errors.too_large(MAX_BODY_BYTES)
        ctype = req.content_type.split(";")[0].strip().lower()
        try:
            if ctype in ("", "application/json", "*/*"):
                obj, duplicates = loads_with_duplicates(req.body or b"null")
            elif ctype in ("application/yaml", "application/x-yaml"):
                obj = loads_yaml(req.body)
            elif ctype == kubeproto.MEDIA_TYPE:
                obj = kubeproto.decode_request(req)
            else:
                raise errors.unsupported_media_type(ctype)
        except (ValueError, yaml.YAMLError) as e:
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {req.rt.kind}): couldn't get "
                f"version/kind; json parse error: {e}") from e
        if not isinstance(obj, dict):
            raise errors.bad_request(f"the object provided is unrecognized (must be of type {req.rt.kind}): "
                                     f"couldn't get version/kind; json parse error: expected an object")
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if not api_version and not kind:
            obj["apiVersion"], obj["kind"] = req.rt.api_version, req.rt.kind
        elif kind != req.rt.kind or api_version not in (req.rt.api_version, None, ""):
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({req.rt.api_version})" if kind == req.rt.kind else
                f"the object provided is unrecognized (must be of type {req.rt.kind}): "
                f"{kind} in version {api_version!r} cannot be handled as a {req.rt.kind}")
        else:
            obj["apiVersion"], obj["kind"] = req.rt.api_version, req.rt.kind
        meta = obj.get("metadata")
        if meta is None:
            obj["metadata"] = {}
        elif not isinstance(meta, dict):
            raise errors.bad_request(f"the object provided is unrecognized (must be of type {req.rt.kind}): "
                                     "metadata must be an object")
        return obj, duplicates

    def _context(self, req: Request) -> WriteContext:
        return WriteContext(rt=req.rt, subresource=req.subresource, dry_run=_dry_run(req.query, req.verb),
                            field_manager=req.query.get("fieldManager", ""), lookup=self.lookup, user=req.user,
                            audit_annotations=req.audit_annotations)

    def _field_validation(self, req: Request) -> str:
        value = req.query.get("fieldValidation", "") or "Warn"
        if value not in FIELD_VALIDATION:
            raise errors.bad_request(f'fieldValidation parameter unsupported: "{value}". '
                                     'Must be one of "Ignore", "Warn", "Strict"')
        return value

    def _check_schema(self, req: Request, obj: dict, ctx: WriteContext, duplicates: Sequence[str] = ()) -> None:
        """What kube-apiserver does while decoding a write, before any strategy runs: unknown and duplicate
        fields per fieldValidation (unknown ones pruned), schema defaults, and types; a bad value is a 422."""
        mode = self._field_validation(req)
        causes: list[Cause] = []
        unknown: list[str] = []
        strict = req.verb in ("create", "update")   # a body kube decodes into the kind's Go struct
        if self.typed_decode is not None:  # built-in kinds: quantities canonical (a bad one: kube's decode 400)
            self.typed_decode.canonicalize(req.rt, obj, strict)
        if self.schema_validator is not None:
            causes, unknown = self.schema_validator(req.rt, obj, ctx)
        if causes and strict and self.typed_decode is not None:
            # A wrong JSON type is a problem for the schema too; kube reports it as its decode error (400). Only
            # looked for once the schema found something: the full walk would cost every valid write.
            self.typed_decode.type_error(req.rt, obj)
        field_validation.enforce(mode, field_validation.problems(duplicates, unknown), ctx, req.rt, obj, req.verb)
        if causes:
            name = (obj.get("metadata") or {}).get("name") or req.name or ""
            raise errors.invalid(req.rt.resource, name, _dedupe(validate_object_meta(obj, req.rt) + causes))

    def _validate(self, req: Request, obj: dict, old: dict | None, ctx: WriteContext) -> None:
        causes = validate_object_meta(obj, req.rt)
        causes.extend(self.strategy(req.rt).validate(obj, old, ctx))
        if causes:
            name = (obj.get("metadata") or {}).get("name") or req.name or ""
            raise errors.invalid(req.rt.resource, name, _dedupe(causes))

    def _check_namespace(self, req: Request, name: str) -> None:
        """kube's NamespaceLifecycle admission on create: 404 without the namespace, 403 while it terminates."""
        if not req.rt.namespaced:
            return
        ns_entry = self.store.get(self._namespaces_key, ("", req.namespace or ""))
        if ns_entry is None:
            raise errors.not_found(errors.Resource("", "namespaces", "Namespace"), req.namespace or "")
        if (ns_entry.obj.get("status") or {}).get("phase") == "Terminating":
            why = f"unable to create new content in namespace {req.namespace} because it is being terminated"
            err = errors.forbidden(req.rt.resource, name, why)
            if not name:  # generateName: kube's admission sees no name yet
                err.message = f"{req.rt.resource.qualified} is forbidden: {why}"
                (err.details or {}).pop("name", None)
            (err.details or {})["causes"] = [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                              "message": f"namespace {req.namespace} is being terminated"}]
            raise err

    def _stamp_identity(self, req: Request, obj: dict) -> None:
        """Apply the URL's namespace and name to the body, refusing contradictions (400, as kube does)."""
        meta = obj["metadata"]
        if req.rt.namespaced:
            ns = meta.get("namespace")
            if ns and ns != req.namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
            meta["namespace"] = req.namespace
        if req.name is not None:
            name = meta.get("name")
            if name and name != req.name:
                raise errors.bad_request(f"the name of the object ({name}) does not match the name on the URL "
                                         f"({req.name})")
            meta["name"] = req.name

    def _to_storage(self, rt: ResourceType, obj: dict) -> dict:
        """``obj`` (at ``rt``'s version) at the storage version: the object to store (``obj`` itself when only its
        apiVersion changes)."""
        if rt.storage_api_version == rt.api_version or self.conversion is None:
            obj["apiVersion"] = rt.storage_api_version
            return obj
        return self._convert(rt, [obj], rt.storage_version, reading=False)[0]

    # --- admission webhooks ------------------------------------------------------------------------------

    def _admit(self, req: Request, operation: str, obj: dict, old: dict | None, ctx: WriteContext,
               requested_name: str | None = None) -> None:
        """Validating admission, last before the object is stored: the plugins (PodSecurity), then the webhooks; a
        refusal carries the warnings so far. ``requested_name``: a create's name as the client sent it (empty
        under generateName, as kube's admission attributes have it)."""
        hook = self.webhook_admission
        webhooks = hook is not None and hook.active()
        if not webhooks and not self.validating_plugins:
            return
        kind = "CreateOptions" if operation == CREATE else "UpdateOptions"
        name = (obj.get("metadata") or {}).get("name") or req.name or ""
        namespace = self._admission_namespace(req, name)
        options = write_options(kind, req.query, ctx.dry_run)
        attrs = AdmissionAttributes(operation, req.rt, req.subresource or "", name, namespace, obj, old, ctx.dry_run,
                                    options, req.user)
        if self.validating_plugins:
            # built, not dataclasses.replace()d: replace() walks the fields' metadata on every call (every create)
            plugin_attrs = attrs if requested_name is None else AdmissionAttributes(
                operation, req.rt, req.subresource or "", requested_name,
                self._admission_namespace(req, requested_name), obj, old, ctx.dry_run, options, req.user)
            for plugin in self.validating_plugins:
                with_warnings(functools.partial(plugin, annotations=ctx.audit_annotations), plugin_attrs,
                              ctx.warnings)
        if hook is not None and webhooks:
            with_warnings(hook, attrs, ctx.warnings)

    def _admission_namespace(self, req: Request, name: str) -> str:
        """The request's namespace as kube's admission attributes have it: a namespace's own name for a namespace
        (its create too: kube's create handler takes it from the object)."""
        if req.rt.namespaced:
            return req.namespace or ""
        return name if req.rt.storage_key == self._namespaces_key else ""
