"""Connection bounds of the embedded API server (issue 33): absolute header and read deadlines, the idle
keep-alive timeout, and the cap on connections (threads) with its refusal."""

from __future__ import annotations

import http.client
import json
import os
import socket
import ssl
import threading
import time

import pytest

from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.local.apiserver.test_hardening import _answer
from tests.support import configmap

# Each test starts the embedded API server or a process of its own (no server fixture).
pytestmark = pytest.mark.integration

CMS = "/api/v1/namespaces/default/configmaps"


def _closed_within(s: socket.socket, seconds: float) -> bytes:
    """Everything the server sends until it closes the connection, which must happen within ``seconds``."""
    s.settimeout(seconds)
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    return data


def _readyz(api: APIServer) -> float:
    """Seconds a fresh connection takes to get ``/readyz``'s ``ok``."""
    started = time.monotonic()
    conn = http.client.HTTPConnection(api.host, api.port, timeout=10)
    try:
        conn.request("GET", "/readyz")
        resp = conn.getresponse()
        assert (resp.status, resp.read()) == (200, b"ok")
    finally:
        conn.close()
    return time.monotonic() - started


def test_the_default_deadlines_are_kubes():
    options = ServerOptions()
    assert options.header_timeout == 32.0  # kube-apiserver's ReadHeaderTimeout: under the 35 s
    assert options.idle_timeout == 90.0  # kube-apiserver's IdleTimeout
    assert options.read_timeout == 60.0  # the request timeout: a body may not take longer
    with APIServer(options) as api:
        assert api._http is not None and api._http.header_timeout == 32.0


def test_header_lines_trickling_in_do_not_move_the_header_deadline():
    """A header line every 0.3 s would keep a per-read timeout of 1 s from ever firing; the deadline is absolute,
    as Go's ReadHeaderTimeout: the connection is closed, unanswered, about 1 s after it opened."""
    with APIServer(ServerOptions(header_timeout=1.0)) as api, \
            socket.create_connection((api.host, api.port), timeout=10) as s:
        started = time.monotonic()
        s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n")
        s.settimeout(0.3)
        closed = False
        for i in range(30):  # 9 s of header lines, unless the server closes first
            try:
                if s.recv(1024) == b"":
                    closed = True
                    break
            except TimeoutError:
                pass
            try:
                s.sendall(f"X-Slow-{i}: y\r\n".encode())
            except OSError:  # reset: closed
                closed = True
                break
        elapsed = time.monotonic() - started
    assert closed and 0.9 <= elapsed < 4.0, elapsed


def test_a_keep_alive_gets_the_header_deadline_anew_for_its_next_request():
    with APIServer(ServerOptions(header_timeout=1.0)) as api, \
            socket.create_connection((api.host, api.port), timeout=10) as s:
        s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 200 ")
        time.sleep(1.2)  # idle (the idle timeout, not the header deadline, applies while nothing arrives)
        s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert _closed_within(s, 5).startswith(b"HTTP/1.1 200 ")


def test_an_idle_keep_alive_is_closed_after_the_idle_timeout():
    with APIServer(ServerOptions(idle_timeout=0.5)) as api, \
            socket.create_connection((api.host, api.port), timeout=10) as s:
        s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = s.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200 ") and b"Connection: close" not in answer
        started = time.monotonic()
        assert _closed_within(s, 5) == b""
        assert 0.4 <= time.monotonic() - started < 4.0


def test_a_body_not_there_by_the_read_deadline_gets_kubes_timeout():
    with APIServer(ServerOptions(read_timeout=1.0)) as api, \
            socket.create_connection((api.host, api.port), timeout=10) as s:
        s.sendall(f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  "Content-Length: 100\r\n\r\n{\"kind\":".encode())
        started = time.monotonic()
        code, headers, body = _answer(_closed_within(s, 5))
        assert time.monotonic() - started < 4.0
    assert code == 504 and headers["connection"] == "close"
    assert body["reason"] == "Timeout" and body["message"] == \
        "Timeout: request did not complete within requested timeout - context deadline exceeded"


def connection_threads() -> int:
    return sum(t.name.startswith("apiserver-conn-") for t in threading.enumerate())


def test_slow_connections_past_the_cap_raise_no_threads_and_readyz_keeps_answering():
    """200 clients trickling their headers against a cap of 100 connections: the server never runs more than 100
    connection threads (each new connection takes the place of the oldest that is serving nothing), and a fresh
    client's /readyz is answered at once all along."""
    with APIServer(ServerOptions(max_connections=100, header_timeout=30.0)) as api:
        assert api._http is not None
        # The server's own connection threads, not every thread of this process: another test's client or server
        # may still be winding down (or starting a thread of its own) while this one counts.
        before = connection_threads()
        slow: list[socket.socket] = []
        try:
            for i in range(200):
                s = socket.create_connection((api.host, api.port), timeout=10)
                s.sendall(b"GET /version HTTP/1.1\r\nX-Slow: ")  # and never more
                slow.append(s)
                if i % 50 == 49:
                    assert _readyz(api) < 2.0
                assert api._http.connection_count() <= 100
                assert connection_threads() <= before + 100 + 1  # +1: a /readyz connection's thread, ending
            for _ in range(5):
                assert _readyz(api) < 2.0
            assert connection_threads() <= before + 100 + 1
        finally:
            for s in slow:
                s.close()


def test_past_the_cap_with_every_connection_serving_a_new_one_gets_429():
    """Two watches hold the only two connections; a third client gets kube's max-in-flight refusal (plain text,
    ``Retry-After: 1``), not a hang or a reset, and is served once a watch ends."""
    with APIServer(ServerOptions(max_connections=2)) as api:
        watches = []
        try:
            for _ in range(2):
                w = socket.create_connection((api.host, api.port), timeout=10)
                w.sendall(f"GET {CMS}?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                assert w.recv(65536).startswith(b"HTTP/1.1 200 ")
                watches.append(w)
            with socket.create_connection((api.host, api.port), timeout=10) as s:
                s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
                answer = _closed_within(s, 5)
            head, _, body = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 429 ")
            assert b"\r\nRetry-After: 1\r\n" in head and b"Content-Type: text/plain; charset=utf-8" in head
            assert body == b"Too many requests, please try again later.\n"
        finally:
            for w in watches:
                w.close()
        deadline = time.monotonic() + 10
        while api._http is not None and api._http.connection_count() > 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _readyz(api) < 2.0


def test_connections_on_descriptors_past_1024_handshake_and_stream():
    """With a thousand connections open, new sockets get descriptors from 1024 up, which select() refuses: the TLS
    handshake and a watch's is-the-client-gone check must work there too (poll)."""
    with APIServer(ServerOptions(tls=True)) as api:
        held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1030)]
        try:
            context = ssl.create_default_context(cafile=api.ca_file)
            with socket.create_connection((api.host, api.port), timeout=10) as raw, \
                    context.wrap_socket(raw, server_hostname=api.host) as s:
                s.sendall(f"GET {CMS}?watch=1 HTTP/1.1\r\nHost: x\r\n"
                          f"Authorization: Bearer {api.admin_token}\r\n\r\n".encode())
                assert s.recv(65536).startswith(b"HTTP/1.1 200 ")
                time.sleep(0.6)  # the stream checks whether its client is gone every 0.2 s without events
                api.create(configmap("seen"))
                data = b""
                while b'"name":"seen"' not in data:
                    chunk = s.recv(65536)
                    assert chunk, "the watch was closed"
                    data += chunk
        finally:
            for fd in held:
                os.close(fd)


def _chunks(s: socket.socket) -> list[bytes]:
    """The chunks of a chunked answer's body, read until its last chunk (the head already read off)."""
    reader = s.makefile("rb")
    chunks = []
    while True:
        size = int(reader.readline().strip(), 16)
        if size == 0:
            return chunks
        chunks.append(reader.read(size))
        assert reader.read(2) == b"\r\n"


def test_a_watchs_queued_events_are_sent_together_each_in_a_chunk_of_its_own_in_order():
    """Events a watch has queued (here: 150 from its history at once) go out in few writes, but each is still a
    chunk of its own, in order, and the stream still ends with its last chunk at its timeout."""
    with APIServer(ServerOptions()) as api:
        since = api.create(configmap("first"))["metadata"]["resourceVersion"]
        names = [f"cm-{i}" for i in range(150)]
        for name in names:
            api.create(configmap(name))
        with socket.create_connection((api.host, api.port), timeout=10) as s:
            s.sendall(f"GET {CMS}?watch=1&resourceVersion={since}&timeoutSeconds=2 HTTP/1.1\r\nHost: x\r\n"
                      f"Connection: close\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(1)
            assert head.startswith(b"HTTP/1.1 200 ") and b"Transfer-Encoding: chunked" in head
            chunks = _chunks(s)
    events = [json.loads(chunk) for chunk in chunks]   # one JSON event a chunk, nothing split or joined
    assert [e["object"]["metadata"]["name"] for e in events] == names
    assert {e["type"] for e in events} == {"ADDED"}
