"""The ``fieldValidation`` query parameter: what to do with unknown and duplicate fields in a request.

As kube-apiserver (``handlers/create.go``, ``update.go``, ``patch.go``):

- ``Strict``: fail. Create and update answer 400 ``<Kind> in version "<v>" cannot be handled as a
  <Kind>: strict decoding error: unknown field "spec.foo", ...``; a patch answers 422 naming the field
  ``patch`` (its value the patched object), because the problem is found after the patch applied.
- ``Warn`` (the default): drop the fields, one ``Warning`` header per problem.
- ``Ignore``: drop them silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from mxjob_controller.kube.field_errors import invalid
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.strategy import WriteContext


def problems(duplicates: Sequence[str], unknown: Sequence[str]) -> list[str]:
    """kube's wording for each problem, duplicates first (as its decoder reports them)."""
    return [*(f'duplicate field "{p}"' for p in duplicates), *(f'unknown field "{p}"' for p in unknown)]


def enforce(mode: str, found: Sequence[str], ctx: WriteContext, rt: ResourceType, obj: dict, verb: str) -> None:
    """Fail (Strict), warn (Warn) or do nothing (Ignore) about ``found`` problems of a write."""
    if not found:
        return
    if mode == "Warn":
        ctx.warnings.extend(found)
    elif mode == "Strict":
        raise strict_error(rt, obj, verb, found)


def strict_error(rt: ResourceType, obj: dict, verb: str, found: Sequence[str]) -> StatusError:
    detail = "strict decoding error: " + ", ".join(found)
    if verb == "patch":
        cause = invalid("patch", json.dumps(obj, separators=(",", ":")), detail)
        return StatusError(422, "Invalid", f' "" is invalid: {cause.field}: {cause.message}',
                           {"causes": [{"reason": cause.reason, "message": cause.message, "field": cause.field}]})
    api_version = str(obj.get("apiVersion") or rt.api_version)
    kind = str(obj.get("kind") or rt.kind)
    version = api_version.rpartition("/")[2]
    return errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {rt.kind}: {detail}')
