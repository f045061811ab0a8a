"""A parsed API request and the answer to it: what the HTTP layer, the verbs and the protocol codecs share.

Its own module (not the verbs') so that the wire formats (``kubeproto.py``) and the HTTP layer name a request
without importing the verbs that import them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.watch import Event, Watcher

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


@dataclass(slots=True)
class WatchStream:
    """What the HTTP layer needs to stream one watch: the watcher and how to encode its events."""

    watcher: Watcher
    encode: Callable[[Event], bytes | None]
    bookmark: Callable[[], bytes | None] | None
    timeout: float
    on_close: Callable[[], None]


@dataclass(slots=True)
class Response:
    code: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    stream: WatchStream | None = None
    chunks: Iterator[bytes] | None = None  # a streamed plain body (pod logs with follow)


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()

