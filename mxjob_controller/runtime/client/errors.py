"""Typed errors for everything a request can end in, carrying the server's ``metav1.Status``.

The class is chosen as apimachinery's ``errors.Is*`` functions decide: by the Status ``reason`` when it is one
kube defines, else by the HTTP code (so ``except NotFound`` is ``apierrors.IsNotFound``). A body that is not a
Status (a proxy's HTML page, an empty 503) gets a Status synthesized the way client-go's
``NewGenericServerResponse`` does, so callers always have ``.status``, ``.code``, ``.reason`` and ``.message``.
"""

# The class names are the API's Status reasons (NotFound, Conflict...), as client code already knows them.
# ruff: noqa: N818

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mxjob_controller.kube.field_errors import FieldError


class KubeError(Exception):
    """Base of every error this client raises."""


class TransportError(KubeError):
    """No HTTP answer: connection refused or reset, TLS failure, or a timeout. The request may or may not have
    reached the server."""


class ReadTimeout(TransportError):
    """The server sent nothing for longer than the request's read timeout (for a watch: the stream stalled)."""


class RateLimitTimeout(KubeError):
    """The client-side token bucket could not grant a request within the call's deadline; nothing was sent."""


class Cancelled(KubeError):
    """The caller's cancel event was set, or the client closed, while the request waited (for a token or before a
    retry); or the client was already closed. Nothing more was sent."""


class ApiError(KubeError):
    """The server answered with a failure ``Status``."""

    def __init__(self, status: dict[str, Any], headers: Mapping[str, str] | None = None) -> None:
        self.status: dict[str, Any] = status
        self.headers: dict[str, str] = {k.lower(): v for k, v in (headers or {}).items()}
        super().__init__(f"({self.code}) {self.reason}: {self.message}")

    @property
    def code(self) -> int:
        return int(self.status.get("code") or 0)

    @property
    def reason(self) -> str:
        return str(self.status.get("reason") or "")

    @property
    def message(self) -> str:
        return str(self.status.get("message") or "")

    @property
    def details(self) -> dict[str, Any]:
        return self.status.get("details") or {}

    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked us to wait: the ``Retry-After`` header, else ``details.retryAfterSeconds``
        (as client-go's ``checkWait`` and ``SuggestsClientDelay``); None when it asked nothing."""
        header = self.headers.get("retry-after", "").strip()
        if header.isdigit():
            return float(header)
        seconds = self.details.get("retryAfterSeconds")
        if isinstance(seconds, int) and seconds > 0:
            return float(seconds)
        return None


class BadRequest(ApiError):
    """400."""


class Unauthorized(ApiError):
    """401: no or bad credentials."""


class Forbidden(ApiError):
    """403: authenticated but not allowed (RBAC), or writing into a terminating namespace."""


class NotFound(ApiError):
    """404: the object, or the resource type itself, does not exist."""


class MethodNotAllowed(ApiError):
    """405."""


class NotAcceptable(ApiError):
    """406."""


class AlreadyExists(ApiError):
    """409 on create: the name is taken."""


class Conflict(ApiError):
    """409 otherwise: a stale resourceVersion or a failed delete precondition."""


class Gone(ApiError):
    """410: the requested resourceVersion (a watch resume point, a continue token) is no longer available."""


class Expired(Gone):
    """410 with reason Expired (what kube-apiserver sends since 1.18)."""


class RequestEntityTooLarge(ApiError):
    """413."""


class UnsupportedMediaType(ApiError):
    """415: e.g. a patch type the resource does not support."""


class Invalid(ApiError):
    """422: the object failed validation; :attr:`causes` names each bad field."""

    @property
    def causes(self) -> list[FieldError]:
        return [FieldError(c.get("field", ""), c.get("reason", ""), c.get("message", ""))
                for c in self.details.get("causes") or []]


class TooManyRequests(ApiError):
    """429: throttled by the server (priority and fairness); see :attr:`retry_after`."""


class ServerError(ApiError):
    """5xx."""


class InternalError(ServerError):
    """500."""


class ServiceUnavailable(ServerError):
    """503."""


class Timeout(ServerError):
    """504, reason Timeout: the server may still complete the request."""


class ServerTimeout(ServerError):
    """Reason ServerTimeout: the server could not finish in time and asks for a retry."""


_BY_REASON: dict[str, type[ApiError]] = {
    "BadRequest": BadRequest, "Unauthorized": Unauthorized, "Forbidden": Forbidden, "NotFound": NotFound,
    "MethodNotAllowed": MethodNotAllowed, "NotAcceptable": NotAcceptable, "AlreadyExists": AlreadyExists,
    "Conflict": Conflict, "Gone": Gone, "Expired": Expired, "RequestEntityTooLarge": RequestEntityTooLarge,
    "UnsupportedMediaType": UnsupportedMediaType, "Invalid": Invalid, "TooManyRequests": TooManyRequests,
    "InternalError": InternalError, "ServiceUnavailable": ServiceUnavailable, "Timeout": Timeout,
    "ServerTimeout": ServerTimeout,
}

_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    406: NotAcceptable, 409: Conflict, 410: Gone, 413: RequestEntityTooLarge, 415: UnsupportedMediaType,
    422: Invalid, 429: TooManyRequests, 500: InternalError, 503: ServiceUnavailable, 504: Timeout,
}

# When the body is not a Status: reason and message as client-go's NewGenericServerResponse words them.
_GENERIC: dict[int, tuple[str, str]] = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    403: ("Forbidden", ""),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    406: ("NotAcceptable", "the server was unable to respond with a content type that the client supports"),
    409: ("Conflict", "the server reported a conflict"),
    415: ("UnsupportedMediaType", ""),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests", "the server has received too many requests and has asked us to try again later"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted, but may still be "
                    "processing the request"),
}


def refused(error: BaseException) -> bool:
    """Whether ``error`` is the API server refusing the caller: 401 (its credentials) or 403 (RBAC). Retrying does
    not help until someone changes the RBAC or the credentials: callers log these as errors."""
    return isinstance(error, ApiError) and error.code in (401, 403)


def error_for_status(status: dict[str, Any], headers: Mapping[str, str] | None = None) -> ApiError:
    """The typed error for a failure ``Status`` (from a response body or a watch ERROR event)."""
    reason = str(status.get("reason") or "")
    cls = _BY_REASON.get(reason)
    if cls is None:
        code = int(status.get("code") or 0)
        cls = _BY_CODE.get(code) or (ServerError if code >= 500 else ApiError)
    return cls(status, headers)


def error_for_response(code: int, body: bytes, headers: Mapping[str, str] | None, method: str) -> ApiError:
    """The typed error for a non-2xx HTTP response."""
    text = body.decode("utf-8", "replace") if body else ""
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        status = dict(parsed)
        status.setdefault("code", code)
        return error_for_status(status, headers)
    return error_for_status(_generic_status(code, text.strip(), method), headers)


def _generic_status(code: int, server_message: str, method: str) -> dict[str, Any]:
    reason, message = _GENERIC.get(code, ("", ""))
    if code == 409 and method == "POST":
        reason = "AlreadyExists"
    if not message:
        if code >= 500 and code not in _GENERIC:
            reason = "InternalError"
            message = f"an error on the server ({server_message!r}) has prevented the request from succeeding"
        else:
            message = server_message or f"the server responded with the status code {code} but did not return " \
                                        "more information"
    status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": reason or "Unknown", "code": code}
    if server_message:
        status["details"] = {"causes": [{"reason": "UnexpectedServerResponse", "message": server_message}]}
    return status
