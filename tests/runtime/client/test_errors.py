"""The client's typed errors (runtime/client/errors.py), pure: an answer that is not a Status still maps to its
type by code and verb, a Status's reason and Retry-After are read, and the hierarchy callers catch by. (Errors
from real server answers: test_api.py.)"""

from __future__ import annotations

import json

from mxjob_controller.runtime.client import (
    AlreadyExists,
    ApiError,
    Conflict,
    Expired,
    Gone,
    InternalError,
    NotFound,
    ReadTimeout,
    ServerError,
    ServiceUnavailable,
    TooManyRequests,
    TransportError,
)
from mxjob_controller.runtime.client.errors import error_for_response


def test_error_for_bodies_that_are_not_a_status():
    err = error_for_response(502, b"<html>bad gateway</html>", {}, "GET")
    assert isinstance(err, InternalError) and err.code == 502
    assert "bad gateway" in err.message
    assert isinstance(error_for_response(409, b"", {}, "POST"), AlreadyExists)
    assert type(error_for_response(409, b"", {}, "PUT")) is Conflict
    unknown_reason = json.dumps({"kind": "Status", "code": 404, "reason": "Mystery"}).encode()
    assert isinstance(error_for_response(404, unknown_reason, {}, "GET"), NotFound)
    throttled = error_for_response(429, json.dumps({"kind": "Status", "code": 429, "reason": "TooManyRequests",
                                                   "details": {"retryAfterSeconds": 4}}).encode(), {}, "GET")
    assert throttled.retry_after == 4.0


def test_error_hierarchy():
    assert issubclass(TooManyRequests, ApiError) and issubclass(Expired, Gone)
    assert issubclass(ServiceUnavailable, ServerError) and issubclass(ReadTimeout, TransportError)
