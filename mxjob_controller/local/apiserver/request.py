"""A parsed API request and the answer to it: what the HTTP layer, the verbs and the protocol codecs share.

Its own module (not the verbs') so that the wire formats (``kubeproto.py``) and the HTTP layer name a request
without importing the verbs that import them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.storage.watch import Event, SharedEncodings, Watcher

MAX_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's limit for a JSON request body
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (MERGE_PATCH, JSON_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
_LONG_RUNNING_SUBRESOURCES = ("attach", "exec", "proxy", "log", "portforward")


@dataclass(slots=True)
class RequestInfo:
    """What a request asks, as kube-apiserver's RequestInfoFactory parses it from the URL (also what audit, faults
    and metrics match); with its user it is what the authorizer decides on (``auth.rbac.Attributes``, the same
    record). The HTTP layer fills it by keyword; the router sets the resource part."""

    user: Any = None          # the subject asked about (auth.UserInfo): set for the authorizer, None in the HTTP layer
    verb: str = ""
    resource_request: bool = False
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""            # the URL path (what non-resource requests are decided on)
    method: str = ""
    user_agent: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    @property
    def long_running(self) -> bool:
        """kube's ``BasicLongRunningRequestCheck``: watches and the streaming subresources, which no request deadline
        ends and no in-flight limit counts."""
        return self.resource_request and (self.verb in ("watch", "proxy")
                                          or self.subresource in _LONG_RUNNING_SUBRESOURCES)


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
    # What admission adds to the request's audit record (kube's audit annotations): the Exchange's own dict.
    audit_annotations: dict[str, str] = field(default_factory=dict)
    # what a client asking to switch protocols sent (Upgrade, X-Stream-Protocol-Version, Sec-WebSocket-Key and
    # -Protocol; lower-case names, several values joined by commas); empty for a plain request
    upgrade: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WatchFrame:
    """One watch event in JSON, ``{"type":T,"object":O}`` and a newline, with ``O`` an encoding of the object that
    every watcher of it shares: sent after the frame's head, never copied into a frame of its own per watcher (100
    watchers of a 1 MB object would hold 100 copies). ``key`` names that encoding (the object's version and form),
    for the forms made from it (protobuf) to be shared as well."""

    type: str
    obj: bytes
    key: tuple

    def pieces(self) -> tuple[bytes, ...]:
        return b'{"type":"' + self.type.encode() + b'","object":', self.obj, b"}\n"


#: What a watch stream sends for one event: a whole frame, a WatchFrame, or pieces sent one after the other.
Frame = bytes | WatchFrame | tuple[bytes, ...]


def frame_pieces(frame: Frame) -> tuple[bytes, ...]:
    if isinstance(frame, WatchFrame):
        return frame.pieces()
    return (frame,) if isinstance(frame, bytes) else frame


@dataclass(slots=True)
class WatchStream:
    """What the HTTP layer needs to stream one watch: the watcher, how to encode its events, and the encodings its
    frames share with other watchers' (``shared``: the store's)."""

    watcher: Watcher
    encode: Callable[[Event], Frame | None]
    bookmark: Callable[[], Frame | None] | None
    timeout: float
    on_close: Callable[[], None]
    shared: SharedEncodings | None = None


@dataclass(slots=True)
class Response:
    code: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    stream: WatchStream | None = None
    chunks: Iterator[bytes] | None = None  # a streamed plain body (pod logs with follow)
    # A JSON body is sent with a final newline, as kube's serializer (json.Encoder.Encode) writes every object;
    # False: as it is (the OpenAPI documents and /version, which kube writes with json.Marshal).
    encoder_newline: bool = True
    # a protocol switched to (101 with these headers): it is handed the connection, whose bytes are its own from
    # then on, and the event set when the server stops (pods/portforward's SPDY session)
    upgrade: Callable[[Any, threading.Event], None] | None = None


def page_not_found() -> Response:
    """Go's ``http.NotFound``, which kube-apiserver answers for a path no handler serves (an unknown group or
    version, an unknown non-resource path): plain text, no Status."""
    return Response(404, b"404 page not found\n", content_type="text/plain; charset=utf-8",
                    headers={"X-Content-Type-Options": "nosniff"})


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


@dataclass(slots=True)
class Exchange:
    """One request as the application sees it, and what it answered (for the audit log)."""

    info: RequestInfo
    query: dict[str, str]
    headers: Any
    body: bytes = b""  # what read_body() read
    code: int = 0
    started: float = 0.0
    response_bytes: int = 0
    user: Any = None  # who the server authenticated (auth.UserInfo); None when it authenticates nobody
    impersonator: Any = None  # who authenticated, when the request acts as ``user`` (Impersonate-* headers)
    reader: Callable[[], bytes] | None = None  # reads the body off the connection; None once read (or none)
    response_headers: dict[str, str] = field(default_factory=dict)  # sent with whatever answers it (flow control)
    finishers: list[Callable[[], None]] = field(default_factory=list)  # run once the application has returned
    audit_annotations: dict[str, str] = field(default_factory=dict)  # admission's, for the audit record
    # Set by the HTTP layer: marks its connection as serving a long-running request of this user until the exchange
    # ends; False when the user holds its share of long-running requests already (http/server.py).
    claim_long_running: Callable[[Any], bool] | None = None
    # Set while the request waits to be admitted (flow control's queue): called at the request's deadline, it takes
    # the request out and gives what to answer in place of the 504, or None once it no longer waits.
    on_deadline: Callable[[], Response | None] | None = None

    def read_body(self) -> bytes:
        """The request's body, read from the connection on the first call. Called by whatever serves an admitted
        request, never before the interceptors: a refused client's body is never read. Raises the 400 or 413 a
        malformed or oversized body gets."""
        if self.reader is not None:
            reader, self.reader = self.reader, None
            self.body = reader()
        return self.body


class EarlyResponseError(Exception):
    """Raised by whatever serves a request to answer it with ``response`` as it is (not a JSON ``Status``: kube's
    429 from flow control is Go's plain-text ``http.Error``)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.code)
        self.response = response
