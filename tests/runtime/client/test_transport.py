"""The client's own HTTP/1.1 transport (``runtime/client/transport.py``): kept-alive sockets, answers framed by
Content-Length, chunks or the connection's end, sockets the server closed while idle never reused, and answers that
break HTTP refused, not misread.

Framing cases run against a scripted peer on a real TCP socket (the embedded API server never sends a malformed
answer); reuse runs against the embedded API server too.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import pytest

from mxjob_controller.runtime.client import CONFIGMAPS, Client, ClientConfig, ReadTimeout, TransportError
from mxjob_controller.runtime.client.transport import bound, request_head
from tests.runtime.client.peer import JSON_OK, ok
from tests.support import configmap, wait_for


def test_requests_share_one_kept_alive_connection_of_the_api_server(apiserver):
    client = Client(ClientConfig(host=apiserver.url, qps=-1), component="transport-tests")
    try:
        client.create(CONFIGMAPS, configmap("kept-alive"), "default")
        before = len(client._direct._idle)   # the pool's state is what is tested
        for _ in range(5):
            assert client.get(CONFIGMAPS, "kept-alive", "default")["metadata"]["name"] == "kept-alive"
        assert before == len(client._direct._idle) == 1
    finally:
        client.delete(CONFIGMAPS, "kept-alive", "default")
        client.close()


def test_a_chunked_answer_with_trailers_and_an_interim_100_are_read_whole(peer_client):
    chunked = (b"HTTP/1.1 100 Continue\r\n\r\n"
               b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"5;ext=1\r\n{\"a\":\r\n3\r\n[1]\r\n1\r\n}\r\n0\r\nX-Trailer: t\r\n\r\n")
    peer, client = peer_client([chunked, ok()])
    assert client.request("GET", "/x") == {"a": [1]}
    assert client.request("GET", "/y") == {"kind": "Status", "ok": 1}
    assert peer.connections == 1   # the chunked answer ended where its framing said: the socket was reused


def test_connection_close_http_1_0_and_unframed_bodies_are_not_reused(peer_client):
    unframed = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + JSON_OK

    def send_and_close(answer: bytes) -> Callable[[socket.socket], None]:
        def act(conn: socket.socket) -> None:
            conn.sendall(answer)
            conn.shutdown(socket.SHUT_WR)
        return act

    peer, client = peer_client([ok(extra="Connection: close\r\n"), ok().replace(b"HTTP/1.1", b"HTTP/1.0", 1),
                                send_and_close(unframed), ok()])
    for _ in range(4):
        assert client.request("GET", "/x") == {"kind": "Status", "ok": 1}
    assert peer.connections == 4


def test_a_connection_the_server_closed_while_idle_is_not_reused(peer_client):
    def answer_then_close(conn: socket.socket) -> None:
        conn.sendall(ok())
        conn.shutdown(socket.SHUT_RDWR)   # as an idle timeout does, after the answer, with nothing said

    peer, client = peer_client([answer_then_close, ok()])
    assert client.request("GET", "/x") == {"kind": "Status", "ok": 1}
    wait_for(lambda: client._direct._idle and not client._direct._idle[0].quiet(), timeout=5)
    assert client.request("GET", "/y") == {"kind": "Status", "ok": 1}   # on a new connection, not an error
    assert peer.connections == 2


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",                        # not a status line
    b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n{}",                       # ends before its length
    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",                         # an invalid length
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",                    # a coding it cannot frame
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",           # an invalid chunk size
    b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n",                     # too many headers
    b"HTTP/1.1 200 OK\r\n Folded: header\r\n\r\n",                            # a malformed header line
], ids=["status-line", "short-body", "bad-length", "unknown-coding", "bad-chunk", "too-many-headers",
        "bad-header"])
def test_an_answer_that_breaks_http_is_a_transport_error_and_its_socket_is_dropped(peer_client, answer):
    def send_and_close(conn: socket.socket) -> None:
        conn.sendall(answer)
        conn.shutdown(socket.SHUT_WR)

    peer, client = peer_client([send_and_close, ok()])
    with pytest.raises(TransportError):
        client.request("GET", "/x")
    assert client.request("GET", "/y") == {"kind": "Status", "ok": 1}
    assert peer.connections == 2


def test_an_answer_that_does_not_come_is_a_read_timeout_and_the_socket_is_dropped(peer_client):
    never = threading.Event()
    _peer, client = peer_client([lambda conn: never.wait(5), ok()], timeout=0.3)
    try:
        with pytest.raises(ReadTimeout):
            client.request("GET", "/x")
        assert client._direct._idle == []   # a late answer must not be read as the next one's
    finally:
        never.set()


def test_request_heads_refuse_smuggling_and_send_a_length_for_every_write():
    assert request_head("POST", "/a?b=c", "h:1", {"Accept": "x"}, 0) == (
        b"POST /a?b=c HTTP/1.1\r\nHost: h:1\r\nAccept: x\r\nContent-Length: 0\r\n\r\n")
    assert b"Content-Length" not in request_head("GET", "/a", "h", {}, None)
    for target, headers in (("/a b", {}), ("/a\r\nX: y", {}), ("/a", {"User-Agent": "x\r\nX-Injected: 1"}),
                            ("/a", {"X\nY": "z"})):
        with pytest.raises(ValueError):
            request_head("GET", target, "h", headers, None)


def test_a_body_less_write_sends_a_zero_length_and_the_body_is_sent_as_is(peer_client):
    peer, client = peer_client([ok(), ok()])
    client.request("POST", "/x")
    client.request("PUT", "/y", body=b'{"k":"v"}')
    assert b"Content-Length: 0\r\n" in peer.requests[0]
    assert peer.requests[1].endswith(b'\r\nContent-Length: 9\r\n\r\n{"k":"v"}')


@pytest.mark.parametrize(("current", "asked", "want"), [
    (None, 5.0, 5.0),                    # blocking: bounded
    (10.0, 9.97, 10.0),                  # a few ms longer than asked: kept (no ioctl)
    (10.0, 9.9, 9.9),                    # longer than the slack allows: set
    (1.0, 2.0, 2.0),                     # shorter than asked: never kept (it would time out early)
    (0.0, 0.5, 0.5),                     # non-blocking: set
])
def test_a_sockets_timeout_is_set_only_when_it_is_shorter_or_too_long(current, asked, want):
    with socket.socket() as sock:
        sock.settimeout(current)
        bound(sock, asked)
        assert sock.gettimeout() == want
