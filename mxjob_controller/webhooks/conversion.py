"""CRD conversion: a ``ConversionReview`` in, the converted objects out. Pure.

MXJob is served as ``v1`` (stored), ``v1beta1`` (the same shape) and ``v1alpha1`` (the oldest operator's list-style
spec), from one CRD whose ``conversion.strategy`` is ``Webhook``; the mapping is ``mxnet/v1alpha1/``'s. The API
server sends every object it must show or store at another version than it has; the answer carries them back in the
same order and number, or fails the whole batch (``result.status: Failure`` with a message naming the object and the
field), as kube expects: a conversion never half-succeeds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from mxjob_controller.mxnet import v1alpha1

log = logging.getLogger(__name__)

Converter = Callable[[dict[str, Any], str], dict[str, Any]]
"""(object, desired apiVersion) -> the converted object (a new one); raises ``v1alpha1.ConversionError``."""

#: kind → converter. Kinds with one version would only ever need their apiVersion rewritten, which is what the API
#: server does without a webhook; they are not configured for conversion.
CONVERTERS: Mapping[str, Converter] = {"MXJob": v1alpha1.convert}


class ReviewError(ValueError):
    """The review itself is malformed (answered 400)."""


def review(body: Mapping[str, Any], converters: Mapping[str, Converter] = CONVERTERS) -> dict[str, Any]:
    """The ``ConversionReview`` (``apiextensions.k8s.io/v1``) answering ``body``."""
    request = body.get("request")
    if body.get("kind") != "ConversionReview" or body.get("apiVersion") != "apiextensions.k8s.io/v1" \
            or not isinstance(request, dict) or not isinstance(request.get("uid"), str) \
            or not isinstance(request.get("desiredAPIVersion"), str) or not isinstance(request.get("objects"), list):
        raise ReviewError("expected an apiextensions.k8s.io/v1 ConversionReview with a request: uid, "
                          "desiredAPIVersion and objects")
    desired = request["desiredAPIVersion"]
    converted: list[dict[str, Any]] = []
    failure = ""
    for i, obj in enumerate(request["objects"]):
        if not isinstance(obj, dict):
            failure = f"objects[{i}]: not an object"
            break
        convert = converters.get(str(obj.get("kind") or ""))
        meta = obj.get("metadata") or {}
        where = f"{obj.get('kind')} {meta.get('namespace') or ''}/{meta.get('name') or ''}".replace(" /", " ")
        if convert is None:
            failure = f"{where}: no conversion for kind {obj.get('kind')!r}"
            break
        try:
            converted.append(convert(obj, desired))
        except v1alpha1.ConversionError as e:
            failure = f"{where}: cannot convert from {obj.get('apiVersion')} to {desired}: {e}"
            break
        except Exception as e:   # a bug of ours: the batch fails with a message, never a dropped answer
            log.exception("converting %s failed", where)
            failure = f"{where}: cannot convert from {obj.get('apiVersion')} to {desired}: internal error: {e!r}"
            break
    response: dict[str, Any] = {"uid": request["uid"]}
    if failure:
        response["result"] = {"status": "Failure", "message": failure}
    else:
        response.update(convertedObjects=converted, result={"status": "Success"})
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "response": response}
