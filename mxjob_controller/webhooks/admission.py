"""Admission for the job kinds: an ``AdmissionReview`` in, the verdict (validating) or the defaults as a JSON patch
(mutating) out. Pure.

The API server asks before it stores a job; a job our validation refuses is refused at submit with every field error
(the same validation the controller runs, which stays the second line: a job created while the webhook was down, or
with ``failurePolicy: Ignore``, is still marked Failed by the controller). The refusal is kube's 422, worded as
training-operator's webhook words it (``apierrors.NewInvalid``):

    MXJob.kubeflow.org "bad" is invalid: [spec.mxReplicaSpecs.Worker.replicas: Invalid value: -1: ..., ...]

which the API server prefixes with ``admission webhook "<name>" denied the request:``.

What is judged: CREATE, and an UPDATE that changes ``spec`` (so a job stored before this webhook existed can still
be labelled, have its finalizers removed by the garbage collector, and be deleted, while the webhook answers; the
controller has already reported what is wrong with it). DELETE and CONNECT are allowed. While the webhook is down,
``failurePolicy: Fail`` refuses every create and update of the kinds it covers, those too: that is the API server's
rule (``Ignore`` trades it for jobs checked only by the controller). An MXJob arriving as ``v1alpha1`` (list-style spec)
is checked in its own shape first (``mxnet/v1alpha1/``: paths as the user wrote them), then as the ``v1`` object it
converts to.

An object past what kube can store (:data:`~mxjob_controller.kube.limits.MAX_OBJECT_BYTES`, 1.5 MiB of JSON) is
refused before it is judged or defaulted, with kube's 413 ``RequestEntityTooLarge``: no verdict on it could matter (etcd
would refuse it), and judging costs CPU in proportion to its size. Anyone who reaches the webhook port may post a
review (webhooks do not authenticate the API server): a 7 MB review of volumes or bad ports took seconds of CPU to
judge; measuring it costs what decoding it did.

Defaulting (:func:`default_review`) answers CREATE and UPDATE of the kinds with the job's defaults written in
(``FrameworkEntry.defaults``: training-operator's ``SetDefaults_*``, which it only applies in memory), as one
``replace`` of ``/spec``; nothing to add, no patch. The API server calls mutating webhooks before validating ones,
so the validator judges the defaulted job. A job arriving as MXJob ``v1alpha1`` is not defaulted in that shape: the
configuration names only the kind's own versions, so the API server sends it converted to ``v1`` (``matchPolicy:
Equivalent``) and converts the defaulted job back.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube.field_errors import MAX_MESSAGE_CHARS, FieldError, aggregate, clip, status_causes
from mxjob_controller.kube.limits import MAX_OBJECT_BYTES

log = logging.getLogger(__name__)

Validator = Callable[[dict[str, Any], str], list[FieldError]]
"""(object, its API version) -> every problem (empty: valid)."""
Defaulter = Callable[[dict[str, Any]], dict[str, Any]]
"""object -> a copy with the kind's defaults written in."""
Warner = Callable[[dict[str, Any], str], list[str]]
"""(a valid object, its API version) -> what to warn of: the review's ``warnings``, a ``Warning:`` header each."""


def _no_warnings(obj: dict[str, Any], api_version: str) -> list[str]:
    return []


@dataclass(frozen=True, slots=True)
class Kind:
    """A job kind the webhook judges: its group and kind, how to validate one object of it and what to warn of in
    one it allows."""

    group: str
    kind: str
    validate: Validator
    warn: Warner = _no_warnings


def _allowed(uid: str, api_version: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": {"uid": uid, "allowed": True}}


def denial_status(kind: Kind, name: str, errors: list[FieldError]) -> dict[str, Any]:
    """The ``metav1.Status`` of a refused job: 422 Invalid, one cause per field error (bounded as the embedded API
    server bounds its own: an unauthenticated 1.7 MB review of 40,000 bad env names was answered with 30 MB)."""
    return {"metadata": {}, "status": "Failure", "code": 422, "reason": "Invalid",
            "message": clip(f'{kind.kind}.{kind.group} "{name}" is invalid: {aggregate(errors)}', MAX_MESSAGE_CHARS),
            "details": {"name": name, "group": kind.group, "kind": kind.kind, "causes": status_causes(errors)}}


class ReviewError(ValueError):
    """The review itself is malformed (answered 400: the API server applies its failurePolicy)."""


def object_size(obj: dict[str, Any]) -> int:
    """The characters of ``obj``'s compact JSON: its size as the API server stores it (a non-ASCII character counted
    once). Costs about what decoding it did (C code); ReviewError when it cannot be encoded."""
    try:
        return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False))
    except (RecursionError, ValueError, TypeError) as e:
        raise ReviewError(f"the object cannot be encoded as JSON: {e}") from None


def _too_large(gvk: Mapping[str, Any], name: str, size: int) -> dict[str, Any]:
    """kube's ``NewRequestEntityTooLargeError``: 413, its message prefixed "Request entity too large: "."""
    what = f"{gvk.get('kind')}.{gvk.get('group')}" if gvk.get("group") else str(gvk.get("kind"))
    return {"metadata": {}, "status": "Failure", "code": 413, "reason": "RequestEntityTooLarge",
            "message": f'Request entity too large: {what} "{clip(name)}" is {size} bytes of JSON, over the '
                       f"{MAX_OBJECT_BYTES} bytes kube can store (etcd's --max-request-bytes)"}


def _refused_if_too_large(api_version: str, request: Mapping[str, Any], obj: dict[str, Any]) -> dict[str, Any] | None:
    """The denial of an object too large to be stored, or None: checked before any judging or defaulting."""
    size = object_size(obj)
    if size <= MAX_OBJECT_BYTES:
        return None
    name = str((obj.get("metadata") or {}).get("name") or request.get("name") or "")
    log.info("refused %s %s/%s unjudged: %d bytes", (request.get("kind") or {}).get("kind"),
             request.get("namespace") or "", clip(name), size)
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": {
        "uid": request["uid"], "allowed": False, "status": _too_large(request.get("kind") or {}, name, size)}}


def _request_of(body: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the review's apiVersion, its request); ReviewError when it is not a review with a request and its uid."""
    api_version = body.get("apiVersion")
    request = body.get("request")
    if body.get("kind") != "AdmissionReview" or api_version not in ("admission.k8s.io/v1", "admission.k8s.io/v1beta1") \
            or not isinstance(request, dict) or not isinstance(request.get("uid"), str):
        raise ReviewError("expected an admission.k8s.io/v1 AdmissionReview with a request and its uid")
    return api_version, request


def default_review(body: Mapping[str, Any], defaulters: Mapping[tuple[str, str], Defaulter]) -> dict[str, Any]:
    """The ``AdmissionReview`` answering ``body`` for the defaulting webhook: allowed, with a JSON patch writing the
    defaults of ``defaulters[(group, kind)]`` in when they change the object. Other kinds, operations and objects
    without a spec object are allowed unchanged."""
    api_version, request = _request_of(body)
    answer = _allowed(request["uid"], api_version)
    gvk = request.get("kind") or {}
    defaults = defaulters.get((gvk.get("group") or "", gvk.get("kind") or ""))
    obj = request.get("object")
    if defaults is None or request.get("operation") not in ("CREATE", "UPDATE") or not isinstance(obj, dict) \
            or not isinstance(obj.get("spec"), dict):
        return answer
    refused = _refused_if_too_large(api_version, request, obj)
    if refused is not None:
        return refused
    spec = defaults(obj).get("spec")
    if spec != obj["spec"]:
        patch = [{"op": "replace", "path": "/spec", "value": spec}]
        answer["response"].update({"patchType": "JSONPatch",
                                   "patch": base64.b64encode(json.dumps(patch).encode()).decode()})
    return answer


def review(body: Mapping[str, Any], kinds: Mapping[tuple[str, str], Kind]) -> dict[str, Any]:
    """The ``AdmissionReview`` answering ``body`` (``admission.k8s.io/v1`` or ``v1beta1``, echoed as sent);
    ``kinds``: (group, kind) → how to judge it. A kind not listed is allowed (the configuration sent it by
    mistake: refusing it would block writes of something this webhook knows nothing of)."""
    api_version, request = _request_of(body)
    uid = request["uid"]
    gvk = request.get("kind") or {}
    kind = kinds.get((gvk.get("group") or "", gvk.get("kind") or ""))
    operation = request.get("operation")
    obj, old = request.get("object"), request.get("oldObject")
    if kind is None or operation not in ("CREATE", "UPDATE") or not isinstance(obj, dict):
        return _allowed(uid, api_version)
    if operation == "UPDATE" and isinstance(old, dict) and (
            obj.get("spec") == old.get("spec") or (obj.get("metadata") or {}).get("deletionTimestamp")):
        return _allowed(uid, api_version)
    refused = _refused_if_too_large(api_version, request, obj)
    if refused is not None:
        return refused
    version = f"{gvk.get('group')}/{gvk.get('version')}" if gvk.get("group") else str(gvk.get("version") or "")
    errors = kind.validate(obj, version)
    if not errors:
        answer = _allowed(uid, api_version)
        warnings = kind.warn(obj, version)
        if warnings:   # kube-apiserver sends each on as a ``Warning: 299 - "..."`` header (admission.k8s.io/v1)
            answer["response"]["warnings"] = warnings
        return answer
    name = (obj.get("metadata") or {}).get("name") or request.get("name") or ""
    log.info("refused %s %s/%s: %d field errors", kind.kind, request.get("namespace") or "", name, len(errors))
    return {"apiVersion": api_version, "kind": "AdmissionReview",
            "response": {"uid": uid, "allowed": False, "status": denial_status(kind, name, errors)}}
