"""The client's transport for ordinary requests: HTTP/1.1 on kept-alive sockets of its own, read and written by hand.

Why not urllib3's ``urlopen`` for them: its layers (pool manager, URL parsing, retry and timeout objects, and
``http.client``'s header parsing through the ``email`` package) cost most of a request's client CPU, which is most
of a controller's (``make bench``: ``client_transport``). The sockets are plain ``socket.create_connection`` ones,
wrapped by the client's ``ssl.SSLContext`` (:func:`client_ssl_context`: the same verification, CA bundle, client
certificate and SNI name the client's urllib3 pool manager is given for watches and streams). Answers are framed
by :mod:`mxjob_controller.runtime.http1`, the rules the embedded API server reads requests by.

Guarantees:
- one request at a time per socket; an idle socket is kept (at most ``maxsize``) only when its answer was read
  whole, nothing came after it, and the answer said nothing against keeping it (``Connection: close``, HTTP/1.0,
  a body that ends with the connection); it is given back to a request only while nothing has arrived on it since
  (polled first, TLS's decrypted bytes included): a byte a server sends after an answer is never read as the
  next request's answer; the socket is closed instead;
- the whole exchange (connecting, sending, 1xx answers, head and body) ends by the call's ``deadline`` (a
  ``time.monotonic()`` value): each read and write waits at most the read timeout and never past the deadline
  (by more than :data:`TIMEOUT_SLACK`), recomputed before every read, so a server trickling bytes or flooding 1xx
  answers is cut off on time;
- connecting waits at most the connect timeout, retried up to :data:`CONNECT_RETRIES` times when it fails (as the
  client's urllib3 retry policy did), never once a request was sent: a request is sent once or not at all;
- an answer that breaks HTTP/1.1 framing, or ends early, raises :class:`MalformedAnswerError` and its socket is
  closed; a read that times out raises :class:`AnswerTimeoutError` (the request may have been applied), its socket
  closed too; connecting that fails raises the ``OSError`` of the last try.
"""

from __future__ import annotations

import io
import re
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from mxjob_controller.runtime import http1

try:
    import certifi  # the official client's roots (it depends on certifi), when no CA bundle is configured
except ImportError:  # pragma: no cover - the system's roots then
    certifi = None

CONNECT_RETRIES = 3
MAX_INTERIM = 32          # 1xx answers tolerated before the real one
_DISALLOWED_TARGET = re.compile(r"[\x00-\x20\x7f]")
_DISALLOWED_VALUE = re.compile(r"[\r\n\x00]")
_NO_READ = -1.0           # the reader's deadline meaning "never touch the socket" (what is buffered only)
#: How much longer than asked a socket's timeout may stay: CPython's ``settimeout`` is an ``ioctl`` each call, which
#: lets go of the interpreter, and a request set it twice (its value a few microseconds less each time).
TIMEOUT_SLACK = 0.05


def bound(sock: socket.socket, seconds: float) -> None:
    """Make each blocking call on ``sock`` wait at most ``seconds`` (> 0), and never less: the timeout it has is
    kept when it is no shorter and at most :data:`TIMEOUT_SLACK` longer."""
    current = sock.gettimeout()
    if current is None or not seconds <= current <= seconds + TIMEOUT_SLACK:
        sock.settimeout(seconds)


class MalformedAnswerError(OSError):
    """The server's answer was not well-formed HTTP/1.1, or the connection ended in the middle of it."""


class AnswerTimeoutError(TimeoutError):
    """The answer (or its rest) did not arrive within the read timeout or by the call's deadline."""


@dataclass(slots=True)
class Answer:
    """A whole answer, read: its status, its headers (lower-cased names; repeated ones joined by ", ") and body."""

    status: int
    headers: dict[str, str]
    data: bytes

    def release_conn(self) -> None:
        """Nothing to give back: the body is read and the socket returned already (the urllib3 response's API)."""


@dataclass(frozen=True, slots=True)
class Target:
    """Where the sockets go: ``scheme`` "http" or "https" (then ``ssl_context`` wraps them, for ``server_hostname``,
    default ``host``)."""

    scheme: str
    host: str
    port: int
    ssl_context: ssl.SSLContext | None = None
    server_hostname: str | None = None

    @classmethod
    def of(cls, url: str, ssl_context: ssl.SSLContext | None = None, server_hostname: str | None = None) -> Target:
        parts = urlsplit(url)
        scheme = parts.scheme or "http"
        port = parts.port or (443 if scheme == "https" else 80)
        return cls(scheme, parts.hostname or "localhost", port, ssl_context if scheme == "https" else None,
                   server_hostname)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == (443 if self.scheme == "https" else 80) else f"{host}:{self.port}"


def client_ssl_context(verify: bool = True, ca_file: str | None = None, cert_file: str | None = None,
                       key_file: str | None = None) -> ssl.SSLContext:
    """The TLS settings of the client's sockets (and, as a separate instance, of its urllib3 pool manager, which
    changes the context it is given): the server verified against ``ca_file`` (else certifi's roots, as the
    official client did, else the system's), its name checked, unless ``verify`` is False; a client certificate
    when given. Only those roots: a configured CA is the only one trusted, as client-go and the official client
    trust it (and the system's store, tens of milliseconds to load per context, is not read for nothing: the local
    cluster's parts make two dozen contexts at start)."""
    if verify:
        cafile = ca_file or (certifi.where() if certifi is not None else None)
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile)  # None: the system's roots
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


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


class _Wire(io.RawIOBase):
    """A socket's bytes for a buffered reader, each read bounded by ``timeout`` seconds and the absolute
    ``deadline`` (monotonic); with ``deadline`` :data:`_NO_READ` it reads nothing (what is buffered is all there
    is). ``ended``: the peer closed its side."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.timeout = 0.0
        self.deadline = _NO_READ
        self.ended = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        if self.deadline == _NO_READ:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the call's deadline passed")
        bound(self.sock, min(left, self.timeout))
        count = self.sock.recv_into(buffer)
        if not count:
            self.ended = True
        return count


class _Socket:
    """One connection: the socket and its buffered reader."""

    __slots__ = ("poller", "reader", "sock", "wire")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.poller: Any = None
        self.wire = _Wire(sock)
        self.reader = io.BufferedReader(self.wire, 65536)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def quiet(self, poll: bool = True) -> bool:
        """Whether nothing is waiting to be read: no byte buffered, none decrypted (TLS), and (``poll``) none
        arrived and no close."""
        self.wire.deadline = _NO_READ
        if self.reader.peek(1) or self.wire.ended:
            return False
        if isinstance(self.sock, ssl.SSLSocket) and self.sock.pending():
            return False
        if not poll:
            return True
        try:
            if self.poller is None:
                self.poller = select.poll()
                self.poller.register(self.sock, select.POLLIN)
            return not self.poller.poll(0)
        except (OSError, ValueError):
            return False


class Connections:
    """Kept-alive sockets to one server (``target``)."""

    def __init__(self, target: Target, maxsize: int) -> None:
        self._target = target
        self._host = target.host_header
        self._maxsize = max(1, maxsize)
        self._idle: list[_Socket] = []
        self._lock = threading.Lock()
        self._closed = False

    def request(self, method: str, target: str, headers: dict[str, str], body: bytes | None,
                connect_timeout: float, read_timeout: float, deadline: float | None = None) -> Answer:
        """Send one request and read its whole answer, by ``deadline`` (monotonic; default: the read timeout from
        now) at the latest."""
        ends = deadline if deadline is not None else time.monotonic() + read_timeout
        length = len(body) if body is not None else (0 if method in ("POST", "PUT", "PATCH") else None)
        head = request_head(method, target, self._host, headers, length)
        sock = self._idle_socket() or self._connect(min(connect_timeout, max(ends - time.monotonic(), 0.001)))
        try:
            left = ends - time.monotonic()
            if left <= 0:
                raise TimeoutError("the call's deadline passed")
            bound(sock.sock, min(read_timeout, left))
            sock.sock.sendall(head + body if body else head)
            sock.wire.timeout, sock.wire.deadline = read_timeout, ends
            answer, reusable = _read_answer(sock.reader, method)
        except TimeoutError as e:
            sock.close()
            raise AnswerTimeoutError(f"no whole answer within {read_timeout:g}s or by the call's deadline") from e
        except http1.FramingError as e:
            sock.close()
            raise MalformedAnswerError(str(e)) from None
        except BaseException:
            sock.close()
            raise
        if reusable and sock.quiet(poll=False):   # bytes after the answer: it cannot be trusted
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

    def drop_idle(self, target: Target | None = None) -> None:
        """Close the idle sockets, keeping the pool open: the next requests connect anew, to ``target`` if given (a
        new client certificate to present, in its ``ssl_context``)."""
        with self._lock:
            if target is not None:
                self._target = target
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()

    def _idle_socket(self) -> _Socket | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                sock = self._idle.pop()
            if sock.quiet():
                return sock
            sock.close()

    def _keep(self, sock: _Socket) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._maxsize:
                self._idle.append(sock)
                return
        sock.close()

    def _connect(self, timeout: float) -> _Socket:
        target = self._target
        tries = 0
        while True:
            raw = None
            try:
                raw = socket.create_connection((target.host, target.port), timeout=timeout)
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if target.ssl_context is not None:
                    raw = target.ssl_context.wrap_socket(raw, server_hostname=target.server_hostname or target.host)
                return _Socket(raw)
            except OSError as e:
                if raw is not None:
                    raw.close()
                tries += 1
                # A certificate the client does not trust stays untrusted: only reaching the server is retried.
                if tries > CONNECT_RETRIES or isinstance(e, ssl.SSLError):
                    raise


# --- reading an answer -------------------------------------------------------------------------------------------

def _read_answer(reader: http1.Readable, method: str) -> tuple[Answer, bool]:
    """The answer to ``method``, and whether its connection may carry another request; FramingError if it breaks
    HTTP/1.1 (or ends early)."""
    for _ in range(MAX_INTERIM + 1):
        line = http1.read_line(reader, http1.MAX_LINE, "status line")
        version, status, _reason = http1.parse_status_line(line)
        fields = http1.read_header_block(reader)
        if status >= 200:
            break
        if status == 101:
            raise http1.FramingError("101 Switching Protocols to a request that asked for no upgrade")
        # an interim answer (100 Continue, 103 Early Hints) precedes the real one
    else:
        raise http1.FramingError(f"more than {MAX_INTERIM} interim (1xx) answers")
    by_name = http1.header_map(fields)
    framing = http1.body_framing(by_name, request=False, method=method, status=status)
    headers = {k: v[0] if len(v) == 1 else ", ".join(v) for k, v in by_name.items()}   # as urllib3 joins them
    keep = http1.keep_alive(version, by_name)
    kind = framing.kind
    if kind == http1.LENGTH:
        return Answer(status, headers, http1.read_exactly(reader, framing.length)), keep
    if kind == http1.NO_BODY:
        return Answer(status, headers, b""), keep
    if kind == http1.CHUNKED:
        return Answer(status, headers, http1.read_chunked(reader)), keep
    return Answer(status, headers, reader.read()), False   # the body ends with the connection


def parse_answer(data: bytes, method: str = "GET") -> tuple[Answer, bool, bytes]:
    """An answer read from ``data`` as the transport reads it from a socket (for the tests and the fuzzing): the
    answer, whether the socket would be kept, and the bytes after it; FramingError as :func:`_read_answer`."""
    reader = io.BytesIO(data)
    answer, keep = _read_answer(reader, method)
    return answer, keep, data[reader.tell():]
