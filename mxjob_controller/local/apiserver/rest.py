"""The REST verbs with kube-apiserver's semantics, over the store: get, list, watch, create, update,
patch, delete and deletecollection.

Each verb takes a parsed :class:`Request` and returns a :class:`Response` (or raises StatusError). The
HTTP layer does no API logic; the verbs do no socket I/O. They live in ``verbs/`` by group
(``read.py``: get, list, watch; ``write.py``: create, update, patch, apply, delete); this module
puts them together, dispatches a request to its verb and holds the server's own status writes.
"""

from __future__ import annotations

import logging

from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.request import Request, Response
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.storage.store import Conflict, Missing, ObjKey, TooLarge
from mxjob_controller.local.apiserver.verbs.read import ReadVerbs
from mxjob_controller.local.apiserver.verbs.scale import ScaleVerbs

log = logging.getLogger(__name__)

STATUS_ATTEMPTS = 16  # compare-and-swap attempts of the server's own status writes before it gives up


class REST(ScaleVerbs, ReadVerbs):   # ScaleVerbs: the scale subresource, then WriteVerbs' verbs
    """Every verb on every resource; the server's one instance is ``APIServer.rest``."""

    def handle(self, req: Request) -> Response:
        if req.verb not in req.rt.verbs:   # kube registers no route for it
            raise errors.no_such_route()
        try:
            return self._dispatch(req)
        except TooLarge as e:   # whatever grew the object (a body, a patch, an apply): kube's answer for etcd's
            raise errors.unclassified(e.MESSAGE) from None

    def _dispatch(self, req: Request) -> Response:
        match req.verb:
            case "get":
                return self._get(req)
            case "list":
                return self._list(req)
            case "watch":
                return self._watch(req)
            case "create":
                return self._create(req)
            case "update":
                return self._update(req)
            case "patch":
                return self._patch(req)
            case "delete":
                return self._delete(req)
            case "deletecollection":
                return self._deletecollection(req)
        raise errors.method_not_allowed(f"{req.verb} is not supported")

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
            except TooLarge:
                log.warning("cannot write the status of %s %s: the object would pass the size limit",
                            rt.resource.qualified, "/".join(part for part in okey if part))
                return False
        log.warning("gave up writing the status of %s %s after %d conflicting attempts", rt.resource.qualified,
                    "/".join(part for part in okey if part), STATUS_ATTEMPTS)
        return False
