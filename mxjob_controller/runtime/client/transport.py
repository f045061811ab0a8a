"""The client's transport for ordinary requests: HTTP/1.1 on kept-alive sockets, read and written by hand.

Why not urllib3's ``urlopen`` for them: its layers (pool manager, URL parsing, retry and timeout objects, and
``http.client``'s header parsing through the ``email`` package) cost most of a request's client CPU, which is most
of a controller's. The sockets themselves are still made by urllib3 (its connection objects, from the same pool
manager's settings: TLS verification, CA bundle, client certificates, SNI name), so TLS behaves exactly as before;
only the bytes of a request and of its answer are handled here. Watches, log streams and requests through a proxy
stay on urllib3 (see ``api.Client``).

Guarantees:
- one request at a time per socket; an idle socket is kept (at most ``maxsize``) only when its answer was read
  whole and said nothing against keeping it (``Connection: close``, HTTP/1.0, a body that ends with the
  connection), and it is given back to a request only while the server has not closed it (polled first, as
  urllib3 does);
- every read and write waits at most the read timeout; connecting at most the connect timeout, retried up to
  :data:`CONNECT_RETRIES` times when it fails (as the client's urllib3 retry policy did), never once a request was
  sent: a request is sent once or not at all by this module;
- an answer that breaks HTTP/1.1 framing, or ends early, raises :class:`MalformedAnswerError` and its socket is closed;
  a read that times out raises :class:`AnswerTimeoutError` (the request may have been applied); connecting that fails
  raises the ``OSError`` of the last try.
"""

from __future__ import annotations

import re
import ssl
import threading
from dataclasses import dataclass
from typing import Any

import urllib3

CONNECT_RETRIES = 3
MAX_LINE = 65536          # bytes of a status line, a header line or a chunk-size line
MAX_HEADERS = 100         # header lines of one answer (http.client's limit)
_DISALLOWED_TARGET = re.compile(r"[\x00-\x20\x7f]")
_DISALLOWED_VALUE = re.compile(r"[\r\n\x00]")


class MalformedAnswerError(OSError):
    """The server's answer was not well-formed HTTP/1.1, or the connection ended in the middle of it."""


class AnswerTimeoutError(TimeoutError):
    """No byte of the answer (or of its rest) arrived within the read timeout."""


@dataclass(slots=True)
class Answer:
    """A whole answer, read: its status, its headers (lower-cased names; repeated ones joined by ", ") and body."""

    status: int
    headers: dict[str, str]
    data: bytes

    def release_conn(self) -> None:
        """Nothing to give back: the body is read and the socket returned already (the urllib3 response's API)."""


def request_head(method: str, target: str, host: str, headers: dict[str, str], body_length: int | None) -> bytes:
    """The request line and headers, checked against request smuggling: a target or a value holding a control
    character (CR, LF, NUL, a space in the target) is refused, as ``http.client`` refuses it."""
    if _DISALLOWED_TARGET.search(target):
        raise ValueError(f"URL path or query can't contain control characters or spaces: {target!r}")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    for name, value in headers.items():
        if _DISALLOWED_VALUE.search(name) or _DISALLOWED_VALUE.search(value):
            raise ValueError(f"invalid header {name!r}: it holds a line break or NUL")
        lines.append(f"{name}: {value}")
    if body_length is not None:
        lines.append(f"Content-Length: {body_length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class _Socket:
    """One connection: urllib3's connection object (it made the socket, TLS included) and a buffered reader."""

    __slots__ = ("conn", "reader")

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.reader = conn.sock.makefile("rb")

    def close(self) -> None:
        try:
            self.reader.close()
        finally:
            self.conn.close()

    def dropped(self) -> bool:
        """Whether the server closed it (or sent bytes nobody asked for) while it was idle: urllib3's own look
        (a readable idle socket), and for TLS the bytes already decrypted, which no poll sees."""
        sock = self.conn.sock
        return not self.conn.is_connected or bool(getattr(sock, "pending", lambda: 0)())


class Connections:
    """Kept-alive sockets to one server (``pool``: the urllib3 connection pool whose settings make them)."""

    def __init__(self, pool: Any, maxsize: int) -> None:
        self._pool = pool
        self._host = _host_header(pool)
        self._maxsize = max(1, maxsize)
        self._idle: list[_Socket] = []
        self._lock = threading.Lock()
        self._closed = False

    def request(self, method: str, target: str, headers: dict[str, str], body: bytes | None,
                connect_timeout: float, read_timeout: float) -> Answer:
        """Send one request and read its whole answer."""
        length = len(body) if body is not None else (0 if method in ("POST", "PUT", "PATCH") else None)
        head = request_head(method, target, self._host, headers, length)
        sock = self._idle_socket() or self._connect(connect_timeout)
        try:
            sock.conn.sock.settimeout(read_timeout)
            sock.conn.sock.sendall(head + body if body else head)
            answer, reusable = _read_answer(sock.reader, method)
        except TimeoutError as e:
            sock.close()
            raise AnswerTimeoutError(f"no answer within {read_timeout:g}s") from e
        except BaseException:
            sock.close()
            raise
        if reusable:
            self._keep(sock)
        else:
            sock.close()
        return answer

    def clear(self) -> None:
        """Close the idle sockets, and every socket given back from now on."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()

    def drop_idle(self) -> None:
        """Close the idle sockets, keeping the pool open: the next requests connect anew (a new client
        certificate to present)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()

    def _idle_socket(self) -> _Socket | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                sock = self._idle.pop()
            if not sock.dropped():
                return sock
            sock.close()

    def _keep(self, sock: _Socket) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._maxsize:
                self._idle.append(sock)
                return
        sock.close()

    def _connect(self, timeout: float) -> _Socket:
        tries = 0
        while True:
            conn = self._pool._new_conn()   # urllib3's own way to make a configured connection
            conn.timeout = timeout
            try:
                conn.connect()   # with urllib3's socket options: TCP_NODELAY among them
                return _Socket(conn)
            except (OSError, urllib3.exceptions.HTTPError) as e:
                conn.close()
                tries += 1
                # A certificate the client does not trust stays untrusted: only reaching the server is retried.
                if tries > CONNECT_RETRIES or isinstance(e, (ssl.SSLError, urllib3.exceptions.SSLError)):
                    raise


def _host_header(pool: Any) -> str:
    host, port = pool.host, pool.port
    host = f"[{host}]" if ":" in host else host
    default = 443 if pool.scheme == "https" else 80
    return host if port in (None, default) else f"{host}:{port}"


# --- reading an answer -------------------------------------------------------------------------------------------

def _line(reader: Any) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise MalformedAnswerError("a line of the answer is too long")
    return line


def _read_answer(reader: Any, method: str) -> tuple[Answer, bool]:
    """The answer to ``method``, and whether its connection may carry another request."""
    while True:
        status_line = _line(reader)
        if not status_line:
            raise MalformedAnswerError("the server closed the connection without answering")
        parts = status_line.decode("latin-1").rstrip("\r\n").split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit() or len(parts[1]) != 3:
            raise MalformedAnswerError(f"not an HTTP status line: {status_line[:100]!r}")
        version, status = parts[0], int(parts[1])
        headers = _headers(reader)
        if not 100 <= status < 200 or status == 101:
            break   # an interim answer (100 Continue, 103 Early Hints) precedes the real one
    keep = version == "HTTP/1.1" and "close" not in headers.get("connection", "").lower()
    if method == "HEAD" or status in (101, 204, 304):
        return Answer(status, headers, b""), keep
    coding = headers.get("transfer-encoding", "").lower()
    if coding:
        if coding != "chunked":
            raise MalformedAnswerError(f"unsupported Transfer-Encoding {coding!r}")
        return Answer(status, headers, _chunked(reader)), keep
    length = headers.get("content-length")
    if length is None:   # the body ends with the connection
        return Answer(status, headers, reader.read()), False
    if not length.isdigit():
        raise MalformedAnswerError(f"invalid Content-Length {length!r}")
    data = reader.read(int(length))
    if len(data) != int(length):
        raise MalformedAnswerError(f"the answer ended after {len(data)} of its {length} bytes")
    return Answer(status, headers, data), keep


def _headers(reader: Any) -> dict[str, str]:
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        line = _line(reader)
        if line in (b"\r\n", b"\n"):
            return headers
        if not line:
            raise MalformedAnswerError("the connection ended in the answer's headers")
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep or not name or name != name.strip():
            raise MalformedAnswerError(f"malformed header line {line[:100]!r}")
        key, value = name.lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value
    raise MalformedAnswerError(f"more than {MAX_HEADERS} header lines")


def _chunked(reader: Any) -> bytes:
    parts: list[bytes] = []
    while True:
        size_line = _line(reader).split(b";", 1)[0].strip()
        try:
            size = int(size_line, 16)
        except ValueError:
            raise MalformedAnswerError(f"invalid chunk size {size_line[:20]!r}") from None
        if size == 0:
            _headers(reader)   # trailers, if any, up to the empty line
            return b"".join(parts)
        chunk = reader.read(size)
        if len(chunk) != size or reader.read(2) != b"\r\n":
            raise MalformedAnswerError("the connection ended in a chunk of the answer")
        parts.append(chunk)
