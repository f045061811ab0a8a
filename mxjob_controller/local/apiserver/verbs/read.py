"""The read verbs: get (and a pod's log), list and watch, with kube-apiserver's selectors, paging and
resourceVersion semantics (``endpoints/handlers/get.go`` and ``watch.go``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mxjob_controller.kube.selectors import SelectorError, object_fields, parse_field_selector, parse_label_selector
from mxjob_controller.kube.vocabulary import BOOKMARK
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.kinds.pod_log_options import parse_log_options
from mxjob_controller.local.apiserver.request import Frame, Request, Response, WatchFrame, WatchStream, dumps
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.storage import list_options
from mxjob_controller.local.apiserver.storage.store import ObjKey, TooOld
from mxjob_controller.local.apiserver.storage.watch import Entry, Event
from mxjob_controller.local.apiserver.verbs import paging
from mxjob_controller.local.apiserver.verbs.base import (
    VerbsBase,
    include_object_policy,
    list_body,
    parse_rv,
    wants_table,
)

# --- query parameters, continue tokens, watch frames -----------------------------------------------------

def _flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("1", "true")


def _int_param(query: Mapping[str, str], name: str, default: int) -> int:
    text = query.get(name)
    if text in (None, ""):
        return default
    try:
        return int(text)
    except ValueError:
        raise errors.bad_request(f'invalid value for "{name}": {text!r} is not an integer') from None


def _error_frame(err: StatusError) -> bytes:
    return dumps({"type": "ERROR", "object": err.status()}) + b"\n"


#: The annotation of the bookmark ending a WatchList's initial events (metav1.InitialEventsAnnotationKey).
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


def _bookmark_frame(rt: ResourceType, rv: int, annotations: dict[str, str] | None = None) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if annotations:
        meta["annotations"] = annotations
    obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": meta}
    return dumps({"type": BOOKMARK, "object": obj}) + b"\n"


# --- the read verbs --------------------------------------------------------------------------------------

class ReadVerbs(VerbsBase):
    """get (and a pod's ``log``), list and watch."""

    def _get(self, req: Request) -> Response:
        if req.subresource == "log":
            return self._log(req)
        getter = self.subresource_getters.get((req.rt.storage_key, req.subresource or ""))
        if getter is not None:
            return getter(req)
        if req.subresource and req.subresource not in req.rt.subresources:
            raise errors.no_route()
        list_options.wait_for_get(self.store, req.query)   # a get at N waits as a list does (cacher.Get)
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
        after: ObjKey | None = None
        exact = list_options.exact_list(self.store, key, namespace, req.query)
        items: Sequence[tuple[ObjKey, Entry]]
        if exact is not None:
            items, rv = exact
        elif token:
            rv, after = paging.decode_continue(token)
            try:
                remembered = self.snapshots.recall(key, namespace, rv)
                if remembered is not None:
                    self.store.require_history(key, rv)   # a snapshot is readable only as long as its history
                items = remembered if remembered is not None else self.store.list_at(key, rv, namespace)
            except TooOld as e:
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list result. You "
                    "can start a new list without the continue parameter, or use the continue token in "
                    "this response to retrieve the remainder of the results. Continuing with the provided "
                    "token results in an inconsistent list - objects that were created, modified, or "
                    "deleted between the time the first chunk was returned and now may show up in the "
                    "list.") from e
        else:
            items, rv = self.store.list(key, namespace)
        unselected = req.query.get("labelSelector", "") == "" and req.query.get("fieldSelector", "") == ""
        page = paging.page_of(items, after, limit, match, count_remaining=unselected)
        selected = page.items
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if page.more:
            self.snapshots.remember(key, namespace, rv, items)
            meta["continue"] = paging.encode_continue(rv, selected[-1][0])
            if page.remaining is not None:
                meta["remainingItemCount"] = page.remaining
        entries = self._served(req.rt, [e for _, e in selected], as_list=True)
        if wants_table(req.accept) and self.table_converter is not None:
            table = self.table_converter(req.rt, entries, meta, include_object_policy(req.query), True)
            return Response(200, dumps(table))
        return Response(200, list_body(req.rt.list_kind, req.rt.api_version, meta, entries))

    def _watch(self, req: Request) -> Response:
        match = self._matcher(req)
        list_options.validate_watch(req.query)
        rv_param = req.query.get("resourceVersion", "")
        since = None if rv_param in ("", "0") else parse_rv(rv_param)
        # WatchList: the state as it is now (never older than a given resourceVersion) as ADDED events, then the
        # bookmark that ends them (when bookmarks are asked for, as kube's cacher sends it); sendInitialEvents=false
        # starts at the given version, or now.
        initial = list_options.send_initial_events(req.query)
        if initial is True:
            # the state at least as new as the version asked: waited for as a list waits; past the wait, the
            # cacher's errWatcher (a stream of one ERROR event, the list's 504 Status)
            if since is not None and not self.store.wait_until(since):
                err = list_options.too_large_resource_version(since, self.store.resource_version)
                return Response(200, b"", stream=None, chunks=iter([_error_frame(err)]))
            since = None
        elif initial is False and since is None:
            since = self.store.resource_version
        initial_end = initial is True and _flag(req.query, "allowWatchBookmarks")
        seconds = _int_param(req.query, "timeoutSeconds", 0)
        # kube arms the watch's timer with what is given: 0 means its default, a negative time has already passed.
        timeout = 1800.0 if seconds == 0 else max(float(seconds), 0.0)
        namespace = req.namespace if req.rt.namespaced else None
        rt = req.rt
        table = wants_table(req.accept) and self.table_converter is not None
        include_object = include_object_policy(req.query) if table else ""
        headers_sent = [False]  # kube sends a Table's column definitions with the first event only
        failed = [False]  # a conversion failed: the stream ends with that error
        try:
            watcher = self.store.watch(rt.storage_key, match, since, namespace, initial_events_end=initial_end)
        except TooOld as e:
            return Response(200, b"", stream=None, chunks=iter([_error_frame(errors.expired(str(e)))]))

        shared = self.store.encodings

        def encode(ev: Event) -> Frame | None:
            """The event's frame: the object's encoding at the watch's version (or its Table) made once per
            version and shared by every watcher asking for the same form (``store.encodings``)."""
            if ev.type == BOOKMARK:   # the end of a WatchList's initial events (storage/store.py)
                return _bookmark_frame(rt, ev.rv, {INITIAL_EVENTS_END: "true"})
            translated = watcher.translate(ev) if not failed[0] else None
            if translated is None:
                return None
            etype, entry = translated
            key: tuple = (entry.rv, rt.api_version)
            try:
                if entry.obj.get("apiVersion") == rt.api_version:
                    obj = entry.raw
                else:
                    obj = shared.get(key, lambda: self._served(rt, [entry])[0].raw)
                if table:
                    converter = self.table_converter
                    assert converter is not None
                    with_headers = not headers_sent[0]
                    key = (*key, "table", include_object, with_headers)
                    obj = shared.get(key, lambda: dumps(converter(rt, [self._served(rt, [entry])[0]], None,
                                                                  include_object, with_headers)))
                    headers_sent[0] = True
            except StatusError as e:  # kube's watch ends with an ERROR event (an internal error) when decoding fails
                failed[0] = True
                watcher.close("conversion failed")
                return _error_frame(errors.internal(e.message))
            return WatchFrame(etype, obj, key)

        bookmark = None
        if _flag(req.query, "allowWatchBookmarks"):
            def bookmark() -> bytes | None:
                brv = self.store.bookmark_rv(watcher)
                return None if brv is None else _bookmark_frame(rt, brv)

        return Response(200, stream=WatchStream(watcher, encode, bookmark, timeout,
                                                lambda: self.store.stop_watch(watcher), shared))

    def _log(self, req: Request) -> Response:
        options = parse_log_options(req.query, req.name or "", time.time())  # kube checks them before the pod
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
        return Response(200, content_type="text/plain", chunks=self.log_reader(pod, container, options))

