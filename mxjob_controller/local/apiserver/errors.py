"""API errors as ``metav1.Status`` objects, with kube-apiserver's reasons, codes and messages.

Handlers raise :class:`StatusError`; the HTTP layer turns it into the JSON body kube-apiserver would
send, so ``kubernetes.client.ApiException`` and ``kubectl`` report it identically.

Long values are shortened (:func:`clip`), where kube-apiserver echoes them whole: apimachinery's
``field.Error`` prints a bad value in full, so a 2.9 MB invalid name comes back four times over in one 422.
Here a name, a field path or a value longer than :data:`MAX_VALUE_CHARS` keeps its first characters and says
how long it was, each cause's message is kept under :data:`MAX_CAUSE_CHARS`, any Status message under
:data:`MAX_MESSAGE_CHARS`, and the causes listed in ``details`` under 64 KiB in all, whoever listed them (a
validator, a webhook's denial): the first ones, and a last saying how many more there were
(``field_errors.bounded_causes``); 10,000 bad ports in a 550 KB pod were a 7 MB answer. The model is kube's own
shortening of what it cannot show whole (the request body in a decode error, ``summarizeData``: its first 30
bytes and `` ...``; warnings: 256 runes each past 4 KiB). Anything kube could answer for a valid-length value (a
name is at most 253 characters) is unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.kube.field_errors import (
    MAX_MESSAGE_CHARS,
    MAX_VALUE_CHARS,
    FieldError,
    aggregate,
    bounded_causes,
    clip,
)

#: One field error of an Invalid status (``metav1.StatusCause``): the same type every validator returns.
Cause = FieldError

MAX_CAUSE_CHARS = 8 * 1024  # one cause's message: room for a clipped value and any detail (an enum's values)


@dataclass(slots=True)
class StatusError(Exception):
    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def status(self) -> dict[str, Any]:
        """The ``metav1.Status``, its fields in the Go struct's order (kind, apiVersion, metadata, status, message,
        reason, details, code), as kube's JSON has them: clients that compare bodies byte for byte see kube's."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": clip(self.message, MAX_MESSAGE_CHARS),
        }
        if self.reason:  # metav1.Status omits an empty reason (StatusReasonUnknown)
            body["reason"] = self.reason
        if self.details is not None:
            causes = self.details.get("causes")   # bounded whoever listed them (a validator, a webhook's denial)
            body["details"] = {**self.details, "causes": bounded_causes(causes)} if isinstance(causes, list) \
                else self.details
        body["code"] = self.code
        return body


@dataclass(frozen=True, slots=True)
class Resource:
    """How errors name a resource: ``pods`` for the core group, ``mxjobs.kubeflow.org`` otherwise."""

    group: str
    plural: str
    kind: str

    @property
    def qualified(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _details(res: Resource, name: str, **extra: Any) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if res.group:
        d["group"] = res.group
    d["kind"] = res.plural
    d.update(extra)
    return d


def not_found(res: Resource, name: str) -> StatusError:
    return StatusError(404, "NotFound", f'{res.qualified} "{name}" not found', _details(res, name))


def already_exists(res: Resource, name: str) -> StatusError:
    return StatusError(409, "AlreadyExists", f'{res.qualified} "{name}" already exists', _details(res, name))


def conflict(res: Resource, name: str, why: str) -> StatusError:
    return StatusError(409, "Conflict", f'Operation cannot be fulfilled on {res.qualified} "{name}": {why}',
                       _details(res, name))


STALE_OBJECT = "the object has been modified; please apply your changes to the latest version and try again"


def invalid(res: Resource, name: str, causes: Iterable[Cause]) -> StatusError:
    """422 Invalid: ``<Kind>[.<group>] "<name>" is invalid: <field>: <message>, ...``, one cause per error.

    The kind is group-qualified as apimachinery's GroupKind prints it (``Deployment.apps``, ``MXJob.kubeflow.org``;
    bare for the core group); kubectl builds its own line from ``details.kind``."""
    causes = [_clip_cause(c) for c in causes]
    name = clip(name) if isinstance(name, str) else name  # a name of the wrong type is reported as it came
    summary = aggregate(causes)
    details: dict[str, Any] = {"name": name}
    if res.group:
        details["group"] = res.group
    details["kind"] = res.kind
    details["causes"] = [{"reason": c.reason, "message": c.message, "field": c.field} for c in causes]
    kind = f"{res.kind}.{res.group}" if res.group else res.kind
    return StatusError(422, "Invalid", f'{kind} "{name}" is invalid: {summary}', details)


def _clip_cause(cause: Cause) -> Cause:
    """A cause with its field path and message shortened (values are shortened where they are formatted)."""
    if len(cause.field) <= MAX_VALUE_CHARS and len(cause.message) <= MAX_CAUSE_CHARS:
        return cause
    return FieldError(clip(cause.field), cause.reason, clip(cause.message, MAX_CAUSE_CHARS))


def invalid_options(kind: str, causes: Iterable[Cause]) -> StatusError:
    """422 on request options (``CreateOptions.meta.k8s.io "" is invalid: dryRun: ...``), as kube words it."""
    causes = list(causes)
    summary = ", ".join(str(c) for c in causes)
    if len(causes) > 1:
        summary = f"[{summary}]"
    return StatusError(422, "Invalid", f'{kind}.meta.k8s.io "" is invalid: {summary}', {
        "group": "meta.k8s.io", "kind": kind,
        "causes": [{"reason": c.reason, "message": c.message, "field": c.field} for c in causes]})


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def method_not_allowed(message: str) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message)


def no_such_route() -> StatusError:
    """go-restful's 405 for a method the resource registers no route for (a namespace collection DELETE, an
    unknown method), as kube-apiserver's ``serviceErrorHandler`` words it: an empty ``details``."""
    return StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource", {})


#: Reasons for the codes kube-apiserver never answers with a Status (Go's net/http answers them in plain text).
_HTTP_REASONS = {400: "BadRequest", 405: "MethodNotAllowed", 413: "RequestEntityTooLarge",
                 414: "RequestURITooLong", 431: "RequestHeaderFieldsTooLarge", 501: "NotImplemented",
                 505: "HTTPVersionNotSupported"}


def http_refusal(code: int, message: str) -> StatusError:
    """A request the HTTP layer refuses before routing it (malformed, over a size limit): a Status all the
    same, with kube's reason where it has one for the code, else the code's name in the same style."""
    return StatusError(code, _HTTP_REASONS.get(code, "BadRequest" if code < 500 else "InternalError"), message)


def unsupported_media_type(content_type: str) -> StatusError:
    """415 for a body we cannot decode (this server speaks JSON and YAML; kube-apiserver also protobuf)."""
    return StatusError(415, "UnsupportedMediaType",
                       f"the body of the request was in an unknown format ({content_type or 'none'}) - accepted "
                       "media types include: application/json, application/yaml")


def too_large(limit: int) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge",
                       f"Request entity too large: limit is {limit}")


def expired(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def gone(message: str) -> StatusError:
    return StatusError(410, "Gone", message)


def forbidden(res: Resource, name: str, why: str) -> StatusError:
    return StatusError(403, "Forbidden", f'{res.qualified} "{name}" is forbidden: {why}', _details(res, name))


def no_route() -> StatusError:
    """go-restful's 404 inside a served group-version (an unknown resource or subresource, a namespaced resource
    without its namespace), as kube-apiserver's ``serviceErrorHandler`` words it: an empty ``details``. Paths outside
    every served group-version get Go's plain ``404 page not found`` instead (``request.page_not_found``)."""
    return StatusError(404, "NotFound", "the server could not find the requested resource", {})


def admission_forbidden(res: Resource, name: str, why: str) -> StatusError:
    """An admission plugin's refusal (``admission.NewForbidden``): as :func:`forbidden`, but a create under
    ``generateName`` (no name yet, as admission sees it) reads ``pods is forbidden: <why>``, without a name."""
    if name:
        return forbidden(res, name, why)
    details: dict[str, Any] = {"group": res.group} if res.group else {}
    details["kind"] = res.plural
    return StatusError(403, "Forbidden", f"{res.qualified} is forbidden: {why}", details)


def too_many_requests(retry_after: int, message: str = "") -> StatusError:
    return StatusError(429, "TooManyRequests",
                       message or "Too many requests, please try again later.",
                       {"retryAfterSeconds": retry_after}, {"Retry-After": str(retry_after)})


def timeout(message: str) -> StatusError:
    """504 Timeout, as apimachinery's ``NewTimeoutError`` builds it (an empty ``details``)."""
    return StatusError(504, "Timeout", f"Timeout: {message}", {})


def deadline_exceeded() -> StatusError:
    """504 for a request still unanswered at its deadline (kube's ``WithTimeoutForNonLongRunningRequests``)."""
    return timeout("request did not complete within requested timeout - context deadline exceeded")


def write_outlasted() -> StatusError:
    """A write that kept losing to concurrent writers. kube-apiserver's storage retries such conflicts until the
    request's deadline, then answers this; here the retries are counted instead of timed."""
    return deadline_exceeded()


def internal(message: str) -> StatusError:
    message = clip(message, MAX_CAUSE_CHARS)
    return StatusError(500, "InternalError", f"Internal error occurred: {message}",
                       {"causes": [{"message": message}]})


def unclassified(message: str) -> StatusError:
    """What kube-apiserver answers for an error no layer turned into a Status (``ErrorToAPIStatus``): 500 with an
    empty reason and the error's text as it is, e.g. a failed CRD conversion webhook."""
    return StatusError(500, "", message)


def success_status(res: Resource, name: str, uid: str) -> dict[str, Any]:
    """The body of a DELETE on a kind that does not return the deleted object."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": _details(res, name, uid=uid)}
