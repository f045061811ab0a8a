"""The client's transport against a hostile loopback server (issue 45): a thread serving crafted bytes on a real
socket. Bytes after an answer are never read as the next request's answer (the socket is dropped); every answer that
breaks HTTP/1.1 framing is a :class:`MalformedAnswerError` (a ``TransportError`` to the client's callers), at once,
its socket closed; no call outlives its deadline, however the server paces its bytes; and, over a few hundred
generated and mutated answers (those of ``tests/runtime/test_http1.py``), the socket gives what the pure parser
reads or an error, and never stays reusable after an error or after bytes it was not asked for.
"""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from mxjob_controller.runtime import http1
from mxjob_controller.runtime.client import ReadTimeout, TransportError
from mxjob_controller.runtime.client.transport import (
    AnswerTimeoutError,
    Connections,
    MalformedAnswerError,
    Target,
    parse_answer,
)
from tests.runtime.client.peer import JSON_OK, ok
from tests.runtime.test_http1 import cases
from tests.support import wait_for

FORGED = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{"forged":true}'
REAL = b'{"real":1}'


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
@pytest.mark.parametrize("after", [FORGED, b"\r\n", b"\n", b"x"], ids=["forged-answer", "crlf", "lf", "one-byte"])
def test_bytes_sent_with_an_answer_are_dropped_with_its_socket(peer_client, after, tls):
    peer, client = peer_client([ok() + after, ok(REAL), ok(REAL)], tls=tls)
    assert client.request("GET", "/x") == {"kind": "Status", "ok": 1}
    assert client.request("GET", "/y") == {"real": 1}      # not the forged answer: a new connection's
    assert client.request("GET", "/z") == {"real": 1}      # and a trailing CRLF does not fail every second request
    assert peer.connections == 2


@pytest.mark.parametrize("tls", [False, True], ids=["http", "https"])
def test_bytes_that_come_while_the_socket_is_idle_make_it_unusable(peer_client, tls):
    send_forged = threading.Event()

    def answer_then_forge(conn: socket.socket) -> None:
        conn.sendall(ok())
        if send_forged.wait(10):
            conn.sendall(FORGED)

    peer, client = peer_client([answer_then_forge, ok(REAL)], tls=tls)
    assert client.request("GET", "/x") == {"kind": "Status", "ok": 1}
    send_forged.set()
    wait_for(lambda: client._direct._idle and not client._direct._idle[0].quiet(), timeout=5)
    assert client.request("GET", "/y") == {"real": 1}
    assert peer.connections == 2


GARBAGE = {
    "content-length-superscript": "HTTP/1.1 200 OK\r\nContent-Length: ²\r\n\r\n{}".encode(),
    "status-superscript": "HTTP/1.1 2²0 OK\r\nContent-Length: 2\r\n\r\n{}".encode(),
    "chunk-size-minus-one": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n{}",
    "chunk-size-0x": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\n{}\r\n0\r\n\r\n",
    "chunk-size-underscore": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0_2\r\n{}\r\n0\r\n\r\n",
    "te-and-cl": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    "cl-disagree": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{} ",
    "header-without-colon": b"HTTP/1.1 200 OK\r\nContent-Length 2\r\n\r\n{}",
    "not-http": b"SSH-2.0-OpenSSH_9.6\r\n",
    "unsolicited-101": b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
}


@pytest.mark.parametrize("garbage", GARBAGE.values(), ids=GARBAGE.keys())
def test_every_malformed_answer_is_refused_at_once_and_its_socket_closed(peer_client, garbage):
    # The peer keeps the connection open after its garbage: a reader that waited for more (read(-1) on a chunk
    # size of -1) would wait the whole deadline; the refusal must come at once.
    peer, client = peer_client([garbage, ok(REAL)])
    conns = client._direct
    started = time.monotonic()
    with pytest.raises(MalformedAnswerError):
        conns.request("GET", "/x", {}, None, 5.0, 5.0, deadline=time.monotonic() + 5.0)
    assert time.monotonic() - started < 2.5
    assert conns._idle == []
    assert client.request("GET", "/y") == {"real": 1}   # a new socket; the garbage one was closed
    assert peer.connections == 2


def test_the_api_client_turns_malformed_answers_into_transport_errors(peer_client):
    _peer, client = peer_client(list(GARBAGE.values()))
    for name in GARBAGE:
        with pytest.raises(TransportError) as failed:
            client.request("GET", f"/{name}")
        assert not isinstance(failed.value, ReadTimeout), name


def trickle(first: bytes, each: bytes, every: float, seconds: float = 8.0) -> Callable[[socket.socket], None]:
    """An answer that starts with ``first`` then sends ``each`` every ``every`` seconds, for ``seconds`` at most or
    until the client closes: every read gets a byte well within its read timeout."""
    def act(conn: socket.socket) -> None:
        conn.sendall(first)
        pace = threading.Event()
        ends = time.monotonic() + seconds
        while time.monotonic() < ends and not pace.wait(every):
            try:
                conn.sendall(each)
            except OSError:
                return
    return act


@pytest.mark.parametrize("answer", [
    trickle(b"HTTP/1.1 200 OK\r\n", b"X: y\r\n", 0.05),
    trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", b"{", 0.05),
    trickle(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\n{\r\n", 0.05),
    trickle(b"", b"HTTP/1.1 100 Continue\r\n\r\n", 0.02),
], ids=["headers", "body", "chunks", "interim-flood"])
def test_no_call_outlives_its_deadline_however_the_server_paces_its_bytes(peer_client, answer):
    _peer, client = peer_client([answer], timeout=5.0)
    started = time.monotonic()
    with pytest.raises(TransportError):   # ReadTimeout, or MalformedAnswerError past the 1xx limit
        client.request("GET", "/slow", deadline=1.0)
    assert time.monotonic() - started < 2.0
    assert client._direct._idle == []


# --- the property, on sockets -------------------------------------------------------------------------------------

class OneShotServer:
    """Each connection accepted gets the next bytes of ``scripts`` once its request arrived, then the server's end
    (a FIN); the connection closes when the client closes it."""

    def __init__(self) -> None:
        self.scripts: queue.Queue[bytes] = queue.Queue()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="one-shot-server", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    head = b""
                    while b"\r\n\r\n" not in head:
                        more = conn.recv(4096)
                        if not more:
                            break
                        head += more
                    conn.sendall(self.scripts.get(timeout=5))
                    conn.shutdown(socket.SHUT_WR)
                    while conn.recv(4096):
                        pass
                except (OSError, queue.Empty):
                    pass

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        self._thread.join(5)


@pytest.fixture
def one_shot() -> Iterator[OneShotServer]:
    server = OneShotServer()
    yield server
    server.close()


def test_sockets_give_what_the_parser_reads_or_an_error_and_are_never_kept_after_one(one_shot):
    kept = refused = 0
    for data in cases(seed=4545, count=300):
        try:
            expected, keep, rest = parse_answer(data)
        except http1.FramingError:
            expected, keep, rest = None, False, b""
        conns = Connections(Target("http", "127.0.0.1", one_shot.port), maxsize=1)
        one_shot.scripts.put(data)
        started = time.monotonic()
        try:
            got = conns.request("GET", "/", {}, None, 2.0, 2.0, deadline=started + 2.0)
        except (MalformedAnswerError, AnswerTimeoutError):
            assert expected is None, f"refused what the parser reads: {data!r}"
            assert conns._idle == [], f"a socket kept after an error: {data!r}"
            refused += 1
        else:
            assert expected is not None and got == expected, f"read otherwise than the parser: {data!r}"
            if rest or not keep:
                assert conns._idle == [], f"a socket kept with bytes after its answer: {data!r}"
            kept += len(conns._idle)
        finally:
            conns.clear()
        assert time.monotonic() - started < 3.0
    assert refused > 50 and kept > 10


def test_a_request_is_sent_on_a_reused_socket_only_when_it_is_quiet(peer_client):
    peer, client = peer_client([ok(), ok(JSON_OK)])
    for _ in range(2):
        assert client.request("GET", "/x") == {"kind": "Status", "ok": 1}
    assert peer.connections == 1   # a well-behaved server's socket is reused
