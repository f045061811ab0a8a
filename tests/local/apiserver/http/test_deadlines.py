"""The request deadline (issue 33): a request that is not long-running gets kube's 504 ``Status`` at
``--request-timeout``; watches are not cut by it."""

from __future__ import annotations

import json
import socket
import time

import pytest

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.support import Kube, configmap

CMS = "/api/v1/namespaces/default/configmaps"
TIMEOUT_MESSAGE = "Timeout: request did not complete within requested timeout - context deadline exceeded"


@pytest.fixture(scope="module")
def api():
    with APIServer(ServerOptions(request_timeout=0.5, bookmark_interval=0.2)) as server:
        yield server


@pytest.fixture
def kube(api):
    k = Kube.of(api)
    try:
        yield k
    finally:
        api.faults.clear()
        k.close()


def test_the_default_request_timeout_is_kubes():
    assert ServerOptions().request_timeout == 60.0


def test_a_request_past_its_deadline_gets_kubes_504_at_the_deadline(api, kube):
    api.faults.add(FaultRule(verb="list", resource="configmaps", latency=5.0, count=1))  # genuinely slow
    started = time.monotonic()
    reply = kube.get(CMS)
    elapsed = time.monotonic() - started
    assert reply.status == 504 and 0.45 <= elapsed < 3.0, elapsed
    assert reply.body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                          "message": TIMEOUT_MESSAGE, "reason": "Timeout", "details": {}, "code": 504}
    assert kube.get(CMS).status == 200  # the server serves on (a new connection), the slow handler still running
    records = [r for r in api.audit.records() if r.code == 504]
    assert len(records) == 1 and records[0].verb == "list"


def test_a_slow_write_gets_504_and_the_late_answer_is_dropped(api, kube):
    api.faults.add(FaultRule(verb="create", resource="configmaps", latency=1.0, count=1))
    with socket.create_connection((api.host, api.port), timeout=10) as s:
        body = json.dumps(configmap("late")).encode()
        s.sendall(f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        s.settimeout(5)
        answer = b""
        while chunk := s.recv(65536):  # the 504, then the end: nothing of the handler's late 201 follows
            answer += chunk
    head, _, rest = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 504 ") and b"\r\nConnection: close" in head
    assert json.loads(rest)["message"] == TIMEOUT_MESSAGE and b"HTTP/1.1" not in rest


def test_a_watch_is_not_cut_by_the_request_deadline(api, kube):
    with socket.create_connection((api.host, api.port), timeout=10) as s:
        s.sendall(f"GET {CMS}?watch=1&allowWatchBookmarks=true HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        s.settimeout(5)
        data = s.recv(65536)
        assert data.startswith(b"HTTP/1.1 200 ")
        started = time.monotonic()
        assert kube.post(CMS, configmap("seen")).status == 201
        while b'"name":"seen"' not in data:
            data += s.recv(65536)
        while time.monotonic() - started < 1.5:  # three request timeouts: still streaming (bookmarks every 0.2 s)
            chunk = s.recv(65536)
            assert chunk, "the watch was closed"
            data += chunk
        assert b"HTTP/1.1 504" not in data and b'"code":504' not in data   # (an Audit-Id may hold the digits)
