"""The patch formats kube-apiserver serves besides server-side apply, by content type (``PATCHERS``, which the patch
verb looks a request's format up in): JSON merge patch, JSON patch and strategic merge patch.

Each patcher takes (resource type, a private copy of the current object, the decoded patch) and returns
the patched object, or raises the Status kube-apiserver answers for that failure:

- JSON patch: not a list of operations → 400 ``error decoding patch``; over 10000 operations → 413; an
  operation that does not apply (a failed ``test``, a missing path) → 422 with only the generic message and
  empty details, as kube-apiserver sends it (the library's text is dropped there; here it is logged at debug);
- strategic merge patch: a malformed directive → 400 with apimachinery's message, a list of lists →
  422, as kube-apiserver answers (``interpretStrategicMergePatchError``); custom resources never get here
  (REST answers 415 first) but are refused with kube's 400 should they. Everything else apimachinery fails
  on (``unknown patch type: bogus in map: ...``, a directive of the wrong type, an item without its merge
  key) is a plain Go error there, which kube-apiserver answers as a 500 with an empty reason; here it is a
  400 ``BadRequest`` with the same message: the patch is at fault, not the server, and a 500 invites retries.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mxjob_controller.kube.patch.merge import apply_merge_patch
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.patch import strategic_merge
from mxjob_controller.local.apiserver.patch.json_patch import (
    JSONPatchDecodeError,
    JSONPatchError,
    TooManyOperationsError,
    apply_json_patch,
)
from mxjob_controller.local.apiserver.request import JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH
from mxjob_controller.local.apiserver.resources import ResourceType

log = logging.getLogger(__name__)

Patcher = Callable[[ResourceType, dict, Any], dict]
"""(rt, current object (a private copy), decoded patch) -> patched object."""


def merge_patch(rt: ResourceType, current: dict, patch: Any) -> dict:
    if not isinstance(patch, dict):
        raise errors.bad_request("a merge patch must be a JSON object")
    return apply_merge_patch(current, patch)


def json_patch(rt: ResourceType, current: dict, patch: Any) -> dict:
    try:
        return apply_json_patch(current, patch)
    except JSONPatchDecodeError as e:
        raise errors.bad_request(f"error decoding patch: {e}") from None
    except TooManyOperationsError as e:
        raise StatusError(413, "RequestEntityTooLarge", f"Request entity too large: {e}") from None
    except JSONPatchError as e:
        raise _unprocessable(str(e)) from None


def strategic_merge_patch(rt: ResourceType, current: dict, patch: Any) -> dict:
    schema = None if rt.is_custom else strategic_merge.schema_for(rt.group, rt.version, rt.kind)
    if schema is None:
        raise errors.bad_request(strategic_merge.UNSUPPORTED_FORMAT)
    if patch is None:
        patch = {}  # Go decodes JSON null into an empty map: nothing to do
    if not isinstance(patch, dict):
        kind = {list: "array", str: "string", bool: "bool"}.get(type(patch), "number")
        raise errors.bad_request(f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}")
    try:
        return strategic_merge.apply_strategic_patch(current, patch, schema)
    except strategic_merge.StrategicPatchError as e:
        if e.code == 400:
            raise errors.bad_request(str(e)) from None
        if e.code == 422:
            raise _unprocessable(str(e)) from None
        raise errors.bad_request(str(e)) from None  # kube: 500, reason "" (see the module's docstring)


def _unprocessable(text: str) -> StatusError:
    """What ``NewGenericServerResponse(422, "", {}, "", err.Error(), 0, false)`` makes of a patch failure: only the
    generic message and empty details. ``text`` (the library's reason) is logged, not sent: with its last argument
    false, kube drops the server message instead of making it an ``UnexpectedServerResponse`` cause, so kubectl
    prints "The request is invalid: the server rejected our request due to an error in our request"."""
    log.debug("patch refused (422): %s", text)
    return StatusError(422, "Invalid", "the server rejected our request due to an error in our request", {})


#: The patch formats by content type (server-side apply is a verb of its own: ``WriteVerbs._apply``).
PATCHERS: dict[str, Patcher] = {
    MERGE_PATCH: merge_patch,
    JSON_PATCH: json_patch,
    STRATEGIC_PATCH: strategic_merge_patch,
}
