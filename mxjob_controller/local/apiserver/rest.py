"""The REST verbs with kube-apiserver's semantics, over the store: get, list, watch, create, update,
patch, delete and deletecollection.

Each verb takes a parsed :class:`Request` and returns a :class:`Response` (or raises StatusError). The
HTTP layer does no API logic; this module does no socket I/O.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

from mxjob_controller.kube import field_errors
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kube.patch.merge import apply_merge_patch
from mxjob_controller.kube.selectors import (
    SelectorError,
    object_fields,
    parse_field_selector,
    parse_label_selector,
)
from mxjob_controller.local.apiserver import errors, kubeproto, list_options
from mxjob_controller.local.apiserver.deletion import (
    DeleteOptions,
    DeleteOutcome,
    Deleter,
    parse_delete_options,
    should_delete_during_update,
)
from mxjob_controller.local.apiserver.errors import Cause, StatusError
from mxjob_controller.local.apiserver.field_manager import (
    FieldManager,
    force_flag,
    keep_times_when_unchanged,
    parse_apply_body,
)
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.store import Conflict, Exists, Missing, ObjKey, Store, TooOld
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext
from mxjob_controller.local.apiserver.validation import field_validation, strict_json
from mxjob_controller.local.apiserver.validation.meta import validate_object_meta
from mxjob_controller.local.apiserver.validation.strict_json import loads_with_duplicates
from mxjob_controller.local.apiserver.validation.yaml_body import loads_yaml
from mxjob_controller.local.apiserver.watch import Entry, Event, Watcher
from mxjob_controller.local.apiserver.webhooks.attributes import (
    CREATE,
    DELETE,
    UPDATE,
    AdmissionAttributes,
    delete_options,
    write_options,
)

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's limit for a JSON request body
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
FIELD_VALIDATION = ("Strict", "Warn", "Ignore")
WRITE_ATTEMPTS = 64  # compare-and-swap attempts of a write without a resourceVersion before it gives up
STATUS_ATTEMPTS = 16  # the same, for the server's own status writes


@dataclass(slots=True)
class Request:
    verb: str  # get list watch create update patch delete deletecollection
    rt: ResourceType
    namespace: str | None = None
    name: str | None = None
    subresource: str | None = None
    query: Mapping[str, str] = field(default_factory=dict)
    content_type: str = ""
    body: bytes = b""
    accept: str = ""
    user_agent: str = ""
    user: Any = None  # the authenticated caller (auth.UserInfo), for the review APIs; None: nobody was asked


@dataclass(slots=True)
class WatchStream:
    """What the HTTP layer needs to stream one watch: the watcher and how to encode its events."""

    watcher: Watcher
    encode: Callable[[Event], bytes | None]
    bookmark: Callable[[], bytes | None] | None
    timeout: float
    on_close: Callable[[], None]


@dataclass(slots=True)
class Response:
    code: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    stream: WatchStream | None = None
    chunks: Iterator[bytes] | None = None  # a streamed plain body (pod logs with follow)


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("1", "true")


# ---------------------------------------------------------------------------------------------------------
# Hooks the server wires in: validation of whole objects (schema) and patch formats beyond merge patch.

SchemaValidator = Callable[[ResourceType, dict, WriteContext], tuple[list[Cause], list[str]]]
"""(rt, decoded obj, ctx) -> (causes, unknown field paths); prunes unknown fields and applies defaults in
place. Runs before the strategy; the caller applies fieldValidation to the unknown fields."""

Patcher = Callable[[ResourceType, dict, Any], dict]
"""(rt, current object (a private copy), decoded patch) -> patched object."""

TableConverter = Callable[[ResourceType, list[Entry], dict | None, str, bool], dict]
"""(rt, entries, list metadata (None for one object), includeObject (None/Metadata/Object), with column
definitions) -> a meta.k8s.io/v1 Table."""
LogReader = Callable[[dict, Mapping[str, str]], Iterator[bytes]]
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


class REST:
    def __init__(self, store: Store, strategies: Mapping[str, Strategy], default_strategy: Strategy,
                 namespaces_key: str = "/namespaces") -> None:
        self.store = store
        self._strategies = strategies
        self._default = default_strategy
        self._namespaces_key = namespaces_key
        self.schema_validator: SchemaValidator | None = None
        self.typed_decode: TypedDecode | None = None   # validation/typed_decode.py
        self.patchers: dict[str, Patcher] = {MERGE_PATCH: lambda rt, cur, patch: _merge(cur, patch)}
        self.table_converter: TableConverter | None = None
        self.log_reader: LogReader | None = None
        self.subresource_creators: dict[tuple[str, str], SubresourceCreator] = {}  # (storage key, subresource)
        self.subresource_getters: dict[tuple[str, str], SubresourceCreator] = {}  # GETs of pods/exec and the like
        # Create-only kinds that store nothing (the access reviews): storage key → handler of their POST.
        self.virtual_creators: dict[str, SubresourceCreator] = {}
        self.admission: list[Admission] = []
        self.update_admission: list[UpdateAdmission] = []
        self.validating_admission: list[ValidatingAdmission] = []
        self.lookup: Callable[[str, str, str], dict | None] | None = None
        # Versions of custom resources (None: only apiVersion is rewritten) and validating webhooks (webhooks/).
        self.conversion: Conversion | None = None
        self.webhook_admission: WebhookAdmission | None = None
        self.deleter = Deleter(store, self.strategy, namespaces_key)
        self.field_manager = FieldManager()

    def strategy(self, rt: ResourceType) -> Strategy:
        return self._strategies.get(rt.storage_key, self._default)

    # --- dispatch -------------------------------------------------------------------------------------

    def handle(self, req: Request) -> Response:
        if req.verb not in req.rt.verbs:
            raise errors.method_not_allowed(f"{req.verb} is not supported on resources of kind "
                                            f'"{req.rt.plural}"')
        handler = getattr(self, "_" + req.verb)
        return handler(req)

    # --- helpers --------------------------------------------------------------------------------------

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
        if _wants_table(req.accept) and self.table_converter is not None:
            table = self.table_converter(req.rt, [entry], None, _include_object(req.query), True)
            return Response(code, dumps(table))
        resp = Response(code, entry.raw)
        if ctx is not None and ctx.warnings:
            resp.headers["Warning"] = _warning_header(ctx.warnings)
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
                            field_manager=req.query.get("fieldManager", ""), lookup=self.lookup, user=req.user)

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

    # --- admission webhooks -----------------------------------------------------------------------------

    def _admit(self, req: Request, operation: str, obj: dict, old: dict | None, ctx: WriteContext) -> None:
        """The validating webhooks, last before the object is stored (a refusal carries the warnings so far)."""
        hook = self.webhook_admission
        if hook is None or not hook.active():
            return
        kind = "CreateOptions" if operation == CREATE else "UpdateOptions"
        name = (obj.get("metadata") or {}).get("name") or req.name or ""
        namespace = self._admission_namespace(req, name)
        attrs = AdmissionAttributes(operation, req.rt, req.subresource or "", name, namespace, obj, old, ctx.dry_run,
                                    write_options(kind, req.query, ctx.dry_run), req.user)
        _with_warnings(hook, attrs, ctx.warnings)

    def _admission_namespace(self, req: Request, name: str) -> str:
        """The request's namespace as kube's request info has it: a namespace's own name for its update and delete."""
        if req.rt.namespaced:
            return req.namespace or ""
        return name if req.rt.storage_key == self._namespaces_key and req.verb != "create" else ""

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
            _with_warnings(hook, attrs, warnings)

        return admit

    # --- read verbs -----------------------------------------------------------------------------------

    def _get(self, req: Request) -> Response:
        if req.subresource == "log":
            return self._log(req)
        getter = self.subresource_getters.get((req.rt.storage_key, req.subresource or ""))
        if getter is not None:
            return getter(req)
        if req.subresource and req.subresource not in req.rt.subresources:
            raise errors.path_not_found(req.rt.plural + "/" + req.subresource)
        return self._object_response(req, self._get_entry(req))

    def _matcher(self, req: Request) -> Callable[[dict], bool]:
        try:
            labels = parse_label_selector(req.query.get("labelSelector"))
            fields = parse_field_selector(req.query.get("fieldSelector"))
        except SelectorError as e:
            raise errors.bad_request(str(e)) from e
        supported = {"metadata.name", "metadata.namespace", *req.rt.field_getters}
        for f in fields.fields():
            if f not in supported:
                raise errors.bad_request(f'"{f}" is not a known field selector: only "metadata.name", '
                                         f'"metadata.namespace"' if not req.rt.field_getters else
                                         f'field label not supported: {f}')
        getters = req.rt.field_getters
        namespace = req.namespace if req.rt.namespaced else None

        def match(obj: dict) -> bool:
            meta = obj.get("metadata") or {}
            if namespace is not None and meta.get("namespace") != namespace:
                return False
            if not labels.empty and not labels.matches(meta.get("labels")):
                return False
            return fields.empty or fields.matches(object_fields(obj, getters))

        return match

    def _list(self, req: Request) -> Response:
        match = self._matcher(req)
        key = req.rt.storage_key
        namespace = req.namespace if req.rt.namespaced else None
        limit = _int_param(req.query, "limit", 0)  # kube pages only for limit > 0: a negative one is no limit
        token = req.query.get("continue", "")
        list_options.validate(req.query)
        exact = list_options.exact_list(self.store, key, namespace, req.query)
        if exact is not None:
            items, rv = exact
        elif token:
            rv, start = _decode_continue(token)
            try:
                items = self.store.list_at(key, rv, namespace)
            except TooOld as e:
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list result. You "
                    "can start a new list without the continue parameter, or use the continue token in "
                    "this response to retrieve the remainder of the results. Continuing with the provided "
                    "token results in an inconsistent list - objects that were created, modified, or "
                    "deleted between the time the first chunk was returned and now may show up in the "
                    "list.") from e
            items = [kv for kv in items if kv[0] > start]
        else:
            items, rv = self.store.list(key, namespace)
        selected: list[tuple[ObjKey, Entry]] = []
        remaining = 0
        for kv in items:
            if match(kv[1].obj):
                if limit > 0 and len(selected) >= limit:
                    remaining += 1
                else:
                    selected.append(kv)
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if remaining:
            meta["continue"] = _encode_continue(rv, selected[-1][0])
            if req.query.get("labelSelector", "") == "" and req.query.get("fieldSelector", "") == "":
                meta["remainingItemCount"] = remaining
        entries = self._served(req.rt, [e for _, e in selected], as_list=True)
        if _wants_table(req.accept) and self.table_converter is not None:
            table = self.table_converter(req.rt, entries, meta, _include_object(req.query), True)
            return Response(200, dumps(table))
        head = dumps({"kind": req.rt.list_kind, "apiVersion": req.rt.api_version, "metadata": meta})
        body = head[:-1] + b',"items":[' + b",".join(e.raw for e in entries) + b"]}"
        return Response(200, body)

    def _watch(self, req: Request) -> Response:
        match = self._matcher(req)
        rv_param = req.query.get("resourceVersion", "")
        since = None if rv_param in ("", "0") else _parse_rv(rv_param)
        seconds = _int_param(req.query, "timeoutSeconds", 0)
        # kube arms the watch's timer with what is given: 0 means its default, a negative time has already passed.
        timeout = 1800.0 if seconds == 0 else max(float(seconds), 0.0)
        namespace = req.namespace if req.rt.namespaced else None
        rt = req.rt
        table = _wants_table(req.accept) and self.table_converter is not None
        include_object = _include_object(req.query) if table else ""
        headers_sent = [False]  # kube sends a Table's column definitions with the first event only
        failed = [False]  # a conversion failed: the stream ends with that error
        try:
            watcher = self.store.watch(rt.storage_key, match, since, namespace)
        except TooOld as e:
            return Response(200, b"", stream=None, chunks=iter([_error_frame(errors.expired(str(e)))]))

        def encode(ev: Event) -> bytes | None:
            translated = watcher.translate(ev) if not failed[0] else None
            if translated is None:
                return None
            etype, entry = translated
            try:
                entry = self._served(rt, [entry])[0]
            except StatusError as e:  # kube's watch ends with an ERROR event (an internal error) when decoding fails
                failed[0] = True
                watcher.close("conversion failed")
                return _error_frame(errors.internal(e.message))
            if table:
                assert self.table_converter is not None
                obj = dumps(self.table_converter(rt, [entry], None, include_object, not headers_sent[0]))
                headers_sent[0] = True
            else:
                obj = entry.raw
            return b'{"type":"' + etype.encode() + b'","object":' + obj + b"}\n"

        bookmark = None
        if _flag(req.query, "allowWatchBookmarks"):
            def bookmark() -> bytes | None:
                brv = self.store.bookmark_rv(watcher)
                if brv is None:
                    return None
                return dumps({"type": "BOOKMARK", "object": {
                    "kind": rt.kind, "apiVersion": rt.api_version,
                    "metadata": {"resourceVersion": str(brv)}}}) + b"\n"

        return Response(200, stream=WatchStream(watcher, encode, bookmark, timeout,
                                                lambda: self.store.stop_watch(watcher)))

    def _log(self, req: Request) -> Response:
        pod = self._get_entry(req).obj
        spec = pod.get("spec") or {}
        containers = [c.get("name") for c in spec.get("containers") or []]
        init = [c.get("name") for c in spec.get("initContainers") or []]
        container = req.query.get("container") or (containers[0] if len(containers) == 1 else "")
        if not container:
            also = f" or one of the init containers: [{' '.join(init)}]" if init else ""
            raise errors.bad_request(f"a container name must be specified for pod {req.name}, choose one of: "
                                     f"[{' '.join(containers)}]{also}")
        if container not in containers + init:
            raise errors.bad_request(f"container {container} is not valid for pod {req.name}")
        if not (pod.get("spec") or {}).get("nodeName"):
            return Response(200, content_type="text/plain")  # kube: no node yet, so no location, so no log
        if self.log_reader is None:
            raise errors.bad_request(f'container "{container}" in pod "{req.name}" is waiting to start: '
                                     "ContainerCreating")
        query = dict(req.query)
        query["container"] = container
        return Response(200, content_type="text/plain", chunks=self.log_reader(pod, query))

    # --- write verbs ----------------------------------------------------------------------------------

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
        want_rv = _parse_rv(rv_text) if rv_text else None
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
            if rv_text and _parse_rv(rv_text) != current.rv:
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
            if rv_text and _parse_rv(rv_text) != current.rv:
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

    def update_status(self, rt: ResourceType, okey: ObjKey, status: dict, manager: str) -> bool:
        """A server-internal status write (controllers inside the server), retried on conflict, recorded in the
        managed fields as ``manager``'s status Update (as kube records its own controllers' writes).

        True once written (or the object is gone); False, with a warning, when every attempt lost to another
        writer: the status was not written.
        """
        for _ in range(STATUS_ATTEMPTS):
            current = self.store.get(rt.storage_key, okey)
            if current is None:
                return True
            new = dict(current.obj)
            new["status"] = status
            new["metadata"] = dict(current.obj["metadata"])
            self.field_manager.track(rt, "status", current.obj, new, manager)
            try:
                self.store.update(rt.storage_key, new, expect_rv=current.rv)
                return True
            except (Conflict, Missing):
                continue
        log.warning("gave up writing the status of %s %s after %d conflicting attempts", rt.resource.qualified,
                    "/".join(part for part in okey if part), STATUS_ATTEMPTS)
        return False

    # --- delete (the semantics are in deletion.py) -------------------------------------------------------

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
            resp.headers["Warning"] = _warning_header(warnings)
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
                        e.headers["Warning"] = _warning_header(warnings)
                    raise
        head = dumps({"kind": req.rt.list_kind, "apiVersion": req.rt.api_version,
                      "metadata": {"resourceVersion": str(rv)}})
        resp = Response(200, head[:-1] + b',"items":[' + b",".join(e.raw for e in served) + b"]}")
        if warnings:
            resp.headers["Warning"] = _warning_header(warnings)
        return resp


# ---------------------------------------------------------------------------------------------------------

def _merge(current: dict, patch: Any) -> dict:
    if not isinstance(patch, dict):
        raise errors.bad_request("a merge patch must be a JSON object")
    return apply_merge_patch(current, patch)


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


def _int_param(query: Mapping[str, str], name: str, default: int) -> int:
    text = query.get(name)
    if text in (None, ""):
        return default
    try:
        return int(text)
    except ValueError:
        raise errors.bad_request(f'invalid value for "{name}": {text!r} is not an integer') from None


def _parse_rv(text: str) -> int:
    try:
        rv = int(text)
        if rv < 0:
            raise ValueError
        return rv
    except (TypeError, ValueError):
        raise errors.bad_request(f'invalid resource version "{text}"') from None


def _encode_continue(rv: int, last: ObjKey) -> str:
    token = {"v": "meta.k8s.io/v1", "rv": rv, "start": "/".join(last) + "\x00"}
    return base64.urlsafe_b64encode(json.dumps(token).encode()).decode()


def _decode_continue(token: str) -> tuple[int, ObjKey]:
    try:
        data = strict_json.loads(base64.urlsafe_b64decode(token.encode() + b"=" * (-len(token) % 4)))
        ns, _, name = data["start"].rstrip("\x00").partition("/")
        return int(data["rv"]), (ns, name)
    except (ValueError, KeyError, TypeError) as e:
        raise errors.bad_request(f"continue key is not valid: {e}") from None


def _wants_table(accept: str) -> bool:
    return "as=Table" in accept


def _include_object(query: Mapping[str, str]) -> str:
    """A Table's includeObject policy; kube's default (empty) is Metadata (PartialObjectMetadata)."""
    value = query.get("includeObject", "")
    if value not in ("", "None", "Metadata", "Object"):
        raise errors.bad_request(f'Unable to convert to Table as requested: includeObject: Invalid value: '
                                 f'"{value}": must be \'Metadata\', \'Object\', \'None\', or empty')
    return value or "Metadata"


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


def _warning_header(warnings: Sequence[str]) -> str:
    """kube's ``Warning`` header: one ``299 - "<text>"`` per warning."""
    return ", ".join(f"299 - {json.dumps(w)}" for w in warnings)


def _with_warnings(hook: WebhookAdmission, attrs: AdmissionAttributes, warnings: list[str]) -> None:
    """Call the webhooks; a refusal goes out with the warnings gathered so far, as kube's does."""
    try:
        hook(attrs, warnings)
    except StatusError as e:
        if warnings:
            e.headers["Warning"] = _warning_header(warnings)
        raise


def _error_frame(err: StatusError) -> bytes:
    return dumps({"type": "ERROR", "object": err.status()}) + b"\n"
