"""HTTP/1.1 for the embedded API server: routing URLs to discovery, OpenAPI and the REST verbs, and
streaming watches as chunked JSON lines.

One thread per connection (keep-alive), each named ``apiserver-conn-N``; ``TCP_NODELAY`` on every socket
(without it each small response waits ~40 ms for a delayed ACK). Every failure becomes a
``metav1.Status``; an unexpected exception is a 500 and is logged, never a dead server.

Requests are framed as Go's ``net/http`` frames them for kube-apiserver, by the rules the API client reads answers
with (``runtime/http1``: one strictness for both ends), and what it refuses is refused here, always with a
``Status`` in JSON and ``Connection: close`` (Go answers these in plain text):

- a request line that is not ``METHOD TARGET HTTP/1.x`` → 400 (bytes that cannot begin a method, such as a
  TLS handshake, are refused at once, without waiting for a line end); another major version → 505; a line
  over 64 KiB → 414;
- header lines over 64 KiB, more than 100 headers, or more than 1 MiB of headers (kube's ``MaxHeaderBytes``)
  → 431; a header line that is not ``token: value`` (a blank before the colon, a control character in the value,
  a folded line first) → 400, as RFC 9112 §5.1 asks (a folded line after a header continues it, §5.2);
  the request line and headers must arrive within 32 s (kube's ``ReadHeaderTimeout``), else the
  connection is closed without an answer, as Go does. The deadline is absolute, as Go's: it counts from the
  connection's start (a keep-alive's next request: from its first byte), so a client sending a header line every
  few seconds is cut off all the same. The body must have arrived by ``read_timeout`` after the request's start
  (Go's ``ReadTimeout``); an idle keep-alive is closed after 90 s (kube's ``IdleTimeout``);
- any method that is a token reaches the router (an unknown one is 405 there); others are 400;
- ``Content-Length`` headers that disagree, or one that is not 1-19 ASCII digits (empty too, as Go 1.22) → 400
  (identical ones are one, as Go dedupes them); a chunk size that is not 1-16 hex digits, or a chunk's data not
  ending in CRLF → 400; trailers bounded as headers are (100 lines, 64 KiB);
  ``Transfer-Encoding`` other than a single ``chunked`` → 400 (Go: 501), and with a ``Content-Length``
  → 400, where Go lets chunked win: either reading of such a request could be the wrong one (smuggling).

After such a refusal the rest of the request is read and dropped until the client closes (half a second at
most, as Go's ``closeWriteAndWait``): closing with bytes unread makes the kernel reset the connection.

A request's body is read only when its handler asks for it (:meth:`Exchange.read_body`), after the router's
interceptors authenticated and authorized it: a client refused there (401, 403) cannot make the server read (or
buffer) a body of up to ``MAX_BODY_BYTES``. Its framing is checked up front, from the headers. A body left unread
is dropped when small (up to 256 KiB, Go's ``maxPostHandlerReadBytes``), else the connection closes after the
answer; ``Expect: 100-continue`` is answered when the body is wanted, so a refused client never sends it.

With an ``ssl_context`` every connection is TLS: the handshake is made on the connection's own thread (a slow
client never holds up the accept loop) within the header timeout; a failed one closes the connection, and a plain
HTTP request gets Go's plain-text answer ``400 Client sent an HTTP request to an HTTPS server.``
"""

from __future__ import annotations

import functools
import io
import json
import logging
import re
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import parse_qsl, urlsplit

from mxjob_controller.kube.uids import random_uuid
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.http.deadlines import Deadline, Deadlines
from mxjob_controller.local.apiserver.request import (
    MAX_BODY_BYTES,
    EarlyResponseError,
    Exchange,
    Frame,
    RequestInfo,
    Response,
    WatchStream,
    dumps,
    frame_pieces,
)
from mxjob_controller.local.apiserver.storage.watch import Event
from mxjob_controller.runtime import http1

log = logging.getLogger(__name__)

_DRAIN_LIMIT = 64 * 1024 * 1024  # read and discard an oversized body up to this, so the client sees the 413
_UNREAD_DROP_LIMIT = 256 * 1024  # an unread body up to this is dropped to keep the connection (Go's value)
_MAX_REQUEST_LINE = http1.MAX_LINE  # http.server's limit (→ 414)
_MAX_HEADER_BYTES = http1.MAX_HEADER_BYTES  # kube-apiserver's http.Server{MaxHeaderBytes} (→ 431)
HEADER_TIMEOUT = 32.0  # kube-apiserver's http.Server{ReadHeaderTimeout}
READ_TIMEOUT = 60.0  # the whole request, body included (Go's ReadTimeout; kube bounds it by --request-timeout)
IDLE_TIMEOUT = 90.0  # kube-apiserver's http.Server{IdleTimeout}
LINGER_SECONDS = 0.5  # after a refusal, how long the rest of the request is drained (Go's rstAvoidanceDelay)
_LINGER_BYTES = 4 << 20  # ... and how much of it
_BATCH_EVENTS = 64            # events of one watch sent in one write at most...
_BATCH_BYTES = 256 * 1024      # ... and their bytes (the batch is built before the first of them is sent)
_SEPARATE_BODY_BYTES = 64 * 1024  # a body this large is sent after the headers, not copied into one buffer with them
_PHRASES = {status.value: status.phrase for status in HTTPStatus}  # a status line's words (no enum call per answer)
# RFC 9110 token characters: a method is one or more of them.
_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


Application = Callable[[Exchange], Response]
Observer = Callable[[Exchange, float], None]


class ConnectionOwner(Protocol):
    """What a connection's handler needs of the server that accepted it (``server.APIHTTPServer``)."""

    app: Application
    observers: list[Observer]
    bookmark_interval: float
    header_timeout: float
    read_timeout: float
    idle_timeout: float
    request_timeout: float
    deadlines: Deadlines
    stopping: threading.Event

    def set_busy(self, sock: socket.socket, busy: bool) -> None: ...

    def claim_long_running(self, sock: socket.socket, user: Any) -> bool: ...


class _DeadlineReader(io.RawIOBase):
    """The connection's bytes for the buffered ``rfile``, each read bounded by an absolute ``deadline`` (a
    ``time.monotonic()`` value; None: the socket's own timeout applies, as while waiting for a keep-alive's next
    request). Go sets its read deadlines this way: bytes trickling in do not move it."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("read deadline passed")
            self._sock.settimeout(left)
        try:
            return self._sock.recv_into(buffer)
        except BlockingIOError:
            return None


class ConnectionHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mxjob-local-apiserver"
    server: ConnectionOwner
    expect_continue = False  # the request waits for "100 Continue" before it sends its body
    unread_length: int | None = None  # the length of the body while it is unread (None: chunked, or none)

    @property  # type: ignore[override]
    def timeout(self) -> float:
        """The socket's timeout outside the deadlines: an idle keep-alive's wait, and each write."""
        return self.server.idle_timeout

    def setup(self) -> None:
        accepted = time.monotonic()
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile.close()   # the stdlib's reader, replaced by one that keeps absolute deadlines
        self.reader = _DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self.reader, 65536)
        self.requests_read = 0
        # Held by whoever answers (this thread, or the deadline thread's 504) and while the body is read: a TLS
        # connection cannot be read and written by two threads at once.
        self.answer_lock = threading.Lock()
        self.deadline: Deadline | None = None
        self.timed_out = False
        self.handshake_failed = False
        if isinstance(self.connection, ssl.SSLSocket):
            self.handshake_failed = not self._handshake(accepted + self.server.header_timeout)

    def _handshake(self, deadline: float) -> bool:
        """The TLS handshake, done by ``deadline`` (Go gives it the header timeout, from the accept) however the
        client paces its bytes; False (the connection is then closed) when it fails."""
        sock = self.connection
        assert isinstance(sock, ssl.SSLSocket)
        try:
            sock.setblocking(False)
            while True:
                try:
                    sock.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    wanted = select.POLLIN
                except ssl.SSLWantWriteError:
                    wanted = select.POLLOUT
                left = deadline - time.monotonic()
                if left <= 0 or not _ready(sock, wanted, left):
                    log.debug("TLS handshake with %s timed out", self.address_string())
                    return False
        except ssl.SSLError as e:
            if e.reason == "HTTP_REQUEST":   # Go's answer to plain HTTP on a TLS port, written unencrypted
                try:
                    sock.settimeout(1.0)
                    socket.socket.sendall(sock, b"HTTP/1.0 400 Bad Request\r\n\r\n"
                                                b"Client sent an HTTP request to an HTTPS server.\n")
                except OSError:
                    pass
            log.debug("TLS handshake with %s failed: %s", self.address_string(), e.reason or e)
            return False
        except OSError:
            return False
        finally:
            sock.settimeout(self.timeout)
        return True

    def _restore_timeout(self) -> None:
        """The socket's own timeout back (after a deadline's read set another): ``settimeout`` is a system call
        (``ioctl``) even when the timeout is the one set, and a request would make three."""
        timeout = self.timeout
        if self.connection.gettimeout() != timeout:
            self.connection.settimeout(timeout)

    def handle(self) -> None:
        if not self.handshake_failed:
            super().handle()

    def handle_one_request(self) -> None:
        """Wait for a request (a new connection: within the header timeout; a keep-alive: the idle timeout), read
        its line and headers by the header deadline, serve it with its body due by the read deadline."""
        if self.requests_read == 0:   # Go: a new connection's header deadline counts from its start
            self.reader.deadline = time.monotonic() + self.server.header_timeout
        try:
            first = self.rfile.peek(1)
        except OSError:  # the idle or header timeout, or the client reset the connection
            self.close_connection = True
            return
        if not first:
            self.close_connection = True
            return
        started = time.monotonic()
        if self.requests_read > 0:
            self.reader.deadline = started + self.server.header_timeout
        self.requests_read += 1
        try:
            if not _could_start_request(first):
                line = first.partition(b"\n")[0].rstrip(b"\r")
                self.send_error(HTTPStatus.BAD_REQUEST, f"malformed HTTP request {_quote(line[:64])}")
                return
            self.raw_requestline = self.rfile.readline(_MAX_REQUEST_LINE + 1)
            if len(self.raw_requestline) > _MAX_REQUEST_LINE:
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG, f"URI longer than {_MAX_REQUEST_LINE} bytes")
                return
            if not self.parse_request():
                return
        except OSError:  # the header timeout (Go closes without an answer too), or the client went away
            self.close_connection = True
            return
        finally:
            self.reader.deadline = None
            self._restore_timeout()
        self.reader.deadline = started + self.server.read_timeout if self.server.read_timeout > 0 else None
        try:
            self._serve()
        finally:
            self.reader.deadline = None
            self._restore_timeout()

    def parse_request(self) -> bool:
        """The request line and headers, as Go's ``readRequest`` takes them; False once refused.

        A plain header reader instead of the stdlib's ``email`` parser, which is built for mail and slow for this."""
        self.close_connection = True  # until the request is known good
        line = self.raw_requestline.rstrip(b"\r\n")
        self.requestline = line.decode("iso-8859-1")
        try:
            self.command, self.path, self.request_version = http1.parse_request_line(line)
        except http1.FramingError as e:
            self.send_error(e.status, str(e))
            return False
        if self.path.startswith("//"):
            self.path = "/" + self.path.lstrip("/")
        try:
            self.headers = Headers(http1.read_header_block(self.rfile, max_bytes=_MAX_HEADER_BYTES
                                                           - len(self.raw_requestline)))
        except http1.IncompleteMessageError:   # the client went away in its headers: nobody to answer
            return False
        except http1.FramingError as e:   # 431 past the limits, 400 for a line that is not a header
            self.send_error(e.status, str(e))
            return False
        self.close_connection = not http1.keep_alive(self.request_version, self.headers.by_name)
        # Answered when the body is read (_continue), not now: a request refused before would otherwise be sent
        # its body for nothing.
        self.expect_continue = (self.headers.get("Expect", "").lower() == "100-continue"
                                and self.request_version == "HTTP/1.1")
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A request refused before it reached the application (see the module's docstring): a Status in
        JSON, and the connection closes, since what follows on it cannot be trusted to be a request."""
        self.close_connection = True
        err = errors.http_refusal(code, message or HTTPStatus(code).phrase)
        body = dumps(err.status()) + b"\n"
        try:
            self._write_head(code, "application/json", {}, len(body), body)
        except OSError:
            return
        self._linger()

    def _linger(self) -> None:
        """Before closing on a refusal: end our side (FIN), then read and drop what the client still sends
        until it closes, for half a second at most (Go's ``closeWriteAndWait``). Closing with request bytes
        unread makes the kernel answer with a reset, which can destroy the refusal before the client reads it.
        """
        deadline = time.monotonic() + LINGER_SECONDS
        budget = _LINGER_BYTES
        try:
            self.connection.shutdown(socket.SHUT_WR)
            while budget > 0 and (left := deadline - time.monotonic()) > 0:
                self.connection.settimeout(left)
                data = self.connection.recv(min(budget, 65536))
                if not data:
                    return
                budget -= len(data)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    # --- one exchange ---------------------------------------------------------------------------------

    def _serve(self) -> None:
        self.server.set_busy(self.connection, True)
        try:
            self._exchange()
        finally:
            self.server.set_busy(self.connection, False)
            if self.server.stopping.is_set():
                self.close_connection = True

    def _exchange(self) -> None:
        started = time.monotonic()
        split = urlsplit(self.path)
        query = dict(parse_qsl(split.query, keep_blank_values=True)) if split.query else {}
        info = RequestInfo(method=self.command, path=split.path,
                           user_agent=self.headers.get("User-Agent", ""))
        ex = Exchange(info, query, self.headers, started=started,
                      claim_long_running=functools.partial(self.server.claim_long_running, self.connection))
        deadline = self._request_deadline(ex)
        try:
            ex.reader = self._body_reader()   # the framing checked now; the body read when the handler wants it
            resp = self.server.app(ex)
        except TimeoutError:  # the body did not arrive by the read deadline: what kube's request timeout answers
            self.close_connection = True
            resp = _status_response(errors.deadline_exceeded())
        except StatusError as e:
            resp = _status_response(e)
        except EarlyResponseError as e:
            resp = e.response
        except Exception as e:  # a bug must cost one request, not the server
            log.exception("internal error serving %s %s", self.command, self.path)
            resp = _status_response(errors.internal(f"{type(e).__name__}: {e}"))
        finally:
            for finish in ex.finishers:
                finish()
        if deadline is not None:
            with self.answer_lock:
                deadline.cancel()
                self.deadline = None   # it holds this handler (its callback): no cycle left for the collector
            if self.timed_out:   # answered 504 already (_time_out): this late answer is dropped, as kube's is
                self.close_connection = True
                return
        unread = ex.reader is not None and not self._drop_unread_body()
        self.reader.deadline = None   # the request is read: what follows is the answer (and a stream's watch)
        self._restore_timeout()
        ex.code = resp.code
        if self.server.stopping.is_set():
            self.close_connection = True  # the server is going: this is the connection's last answer
        streamed = resp.stream is not None or resp.chunks is not None or resp.upgrade is not None
        headers = {**ex.response_headers, **resp.headers} if ex.response_headers else resp.headers
        try:
            if resp.upgrade is not None:
                self._switch(resp, headers)
            elif resp.stream is not None:
                self._stream_watch(resp.stream, resp, headers)
            elif resp.chunks is not None:
                self._stream_chunks(resp, resp.chunks, headers)
            else:
                body = resp.body
                if _pretty(query) and resp.content_type == "application/json" and body:
                    body = json.dumps(json.loads(body), indent=2).encode() + b"\n"
                tail = json_tail(resp.content_type, body) if resp.encoder_newline else b""
                ex.response_bytes = len(body) + len(tail)
                # Observed before the answer is sent: whoever has the answer can already see its audit record.
                self._observe(ex, started)
                if self.command == "HEAD":
                    body = tail = b""
                self._write_head(resp.code, resp.content_type, headers, ex.response_bytes, body, tail)
                if self.close_connection and (resp.code >= 400 or unread) and not self.server.stopping.is_set():
                    self._linger()  # a refusal that may have left part of the request unread
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True
        finally:
            if streamed:
                self._observe(ex, started)  # a stream is recorded when it ends, with how long it was open

    def _request_deadline(self, ex: Exchange) -> Deadline | None:
        timeout = self.server.request_timeout
        self.timed_out = False
        if timeout <= 0:
            return None
        self.deadline = self.server.deadlines.add(ex.started + timeout, functools.partial(self._time_out, ex))
        return self.deadline

    def _time_out(self, ex: Exchange) -> float | None:
        """On the deadline thread, when ``ex`` is still unanswered at its deadline: kube's 504, unless it is a
        long-running request (a watch, a log stream: known by now, the router parsed its URL first). Asks to be
        called again shortly (returns the delay) while the body is being read."""
        if ex.info.long_running:
            return None
        if not self.answer_lock.acquire(blocking=False):
            return 0.05
        try:
            if self.deadline is None or self.deadline.cancelled:
                return None
            self.timed_out = self.close_connection = True
            refusal = ex.on_deadline() if ex.on_deadline is not None else None
            if refusal is not None:   # still queued for a seat: refused (429), as it would have been in time
                code, content_type, body = refusal.code, refusal.content_type, refusal.body
                headers = {**ex.response_headers, **refusal.headers}
            else:
                code, content_type, headers = 504, "application/json", ex.response_headers
                body = dumps(errors.deadline_exceeded().status()) + b"\n"
                log.info("%s %s did not complete within %.3gs: 504", self.command, self.path,
                         self.server.request_timeout)
            ex.code, ex.response_bytes = code, len(body)
            self._observe(ex, ex.started)
            try:
                self._write_head(code, content_type, headers, len(body), body if self.command != "HEAD" else b"")
                self.connection.shutdown(socket.SHUT_WR)   # the client sees the end now, not when the handler ends
            except OSError:
                pass
        finally:
            self.answer_lock.release()
        return None

    def _observe(self, ex: Exchange, started: float) -> None:
        elapsed = time.monotonic() - started
        for observe in self.server.observers:
            try:
                observe(ex, elapsed)
            except Exception:
                log.exception("request observer failed")

    def _body_reader(self) -> Callable[[], bytes] | None:
        """What reads the request's body (None: it has none), once its framing is known good: lengths or codings
        that could smuggle a second request are a 400 now, from the headers alone, as Go refuses them."""
        self.unread_length = None
        try:
            framing = http1.body_framing(self.headers.by_name, request=True)
        except http1.FramingError as e:   # Go answers an unknown coding 501; kube's clients know this 400
            self.close_connection = True
            raise errors.bad_request(str(e)) from None
        if framing.kind == http1.CHUNKED:
            return self._read_chunked
        if framing.kind == http1.NO_BODY:
            return None
        self.unread_length = framing.length
        return functools.partial(self._read_length, framing.length)

    def _continue(self) -> None:
        """``100 Continue`` for a client that waits for it before sending the body it is now asked for."""
        if self.expect_continue:
            self.expect_continue = False
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def _read_length(self, length: int) -> bytes:
        with self.answer_lock:
            self._continue()
            if length > MAX_BODY_BYTES:
                self._discard(length)
                raise errors.too_large(MAX_BODY_BYTES)
            return self.rfile.read(length)

    def _drop_unread_body(self) -> bool:
        """After a request answered without its body (refused before it was needed): drop a small one, as Go does
        after a handler, and keep the connection; True then. Else (large, chunked, or never sent because no
        ``100 Continue`` asked for it) the connection closes after the answer: False."""
        length = self.unread_length
        if self.expect_continue or length is None or length > _UNREAD_DROP_LIMIT:
            self.close_connection = True
            return False
        try:
            self._discard(length)
        except OSError:
            self.close_connection = True
            return False
        return True

    def _discard(self, length: int) -> None:
        if length > _DRAIN_LIMIT:
            self.close_connection = True
            return
        while length > 0:
            chunk = self.rfile.read(min(length, 1 << 20))
            if not chunk:
                break
            length -= len(chunk)

    def _read_chunked(self) -> bytes:
        with self.answer_lock:
            return self._read_chunks()

    def _read_chunks(self) -> bytes:
        self._continue()
        try:
            return http1.read_chunked(self.rfile, MAX_BODY_BYTES, too_large=lambda: errors.too_large(MAX_BODY_BYTES))
        except http1.FramingError:   # a size that is not hex digits, data not ending in CRLF, the client gone
            self.close_connection = True
            raise errors.bad_request("malformed chunked request body") from None
        except StatusError:
            self.close_connection = True
            raise

    def _write_head(self, code: int, ctype: str, headers: dict[str, str], length: int | None,
                    body: bytes = b"", tail: bytes = b"") -> None:
        """Send the status line and headers, and ``body`` and ``tail`` with them: one send (one syscall) per
        response; a large body is sent after them instead, not copied behind them (a list of large objects is tens
        of megabytes), nor copied to have ``tail`` (a JSON body's final newline) after it."""
        lines = [f"HTTP/1.1 {code} {_PHRASES.get(code, '')}", f"Content-Type: {ctype}"]
        if "Cache-Control" not in headers:   # kube's WithCacheControl: a default the handler may replace
            lines.append("Cache-Control: no-cache, private")
        lines.append(f"Audit-Id: {random_uuid()}")
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        if len(body) < _SEPARATE_BODY_BYTES:
            self.wfile.write(head + body + tail)
        else:
            self.wfile.write(head)
            self.wfile.write(body)
            if tail:
                self.wfile.write(tail)

    def _write_chunk(self, frame: Frame) -> None:
        """One chunk: small frames in one send; a large one's pieces (an object's encoding that other watchers
        share) sent as they are, never copied into a chunk of their own."""
        pieces = frame_pieces(frame)
        size = sum(len(p) for p in pieces)
        if size < _SEPARATE_BODY_BYTES:
            self.wfile.write(_small_chunk(pieces, size))
            return
        self.wfile.write(b"%x\r\n" % size)
        for piece in pieces:
            self.wfile.write(piece)
        self.wfile.write(b"\r\n")

    def _write_events(self, stream: WatchStream, first: Event) -> bool:
        """``first`` and the events queued behind it (up to :data:`_BATCH_EVENTS` or :data:`_BATCH_BYTES`), each a
        chunk of its own, sent in one write: a burst's events for a watcher that fell a few behind cost one
        system call, not one each (and each send on a socket with a timeout is a ``poll`` and a ``send``, two
        hand-offs of the interpreter: issue 48). False when the watcher's end was among them."""
        watcher = stream.watcher
        small: list[bytes] = []
        size = 0
        ev: Event | None = first
        alive = True
        counted = 0
        while True:
            assert ev is not None
            frame = stream.encode(ev)
            if frame is not None:
                pieces = frame_pieces(frame)
                length = sum(len(p) for p in pieces)
                if length >= _SEPARATE_BODY_BYTES:   # a large one's shared pieces are sent as they are
                    self._flush_chunks(small)
                    small, size = [], 0
                    self._write_chunk(frame)
                else:
                    small.append(_small_chunk(pieces, length))
                    size += length
                counted += 1
            if len(small) >= _BATCH_EVENTS or size >= _BATCH_BYTES or not watcher.pending():
                break
            ev = watcher.next(timeout=0)
            if ev is None:   # the sentinel of close(): nothing follows it
                alive = False
                break
        self._flush_chunks(small)
        watcher.events_sent += counted
        return alive

    def _flush_chunks(self, chunks: list[bytes]) -> None:
        if chunks:
            self.wfile.write(chunks[0] if len(chunks) == 1 else b"".join(chunks))

    def _switch(self, resp: Response, headers: dict[str, str]) -> None:
        """101 Switching Protocols, then the connection is the new protocol's (``resp.upgrade``) until it ends; it
        is closed after. The request was read whole before the answer, so nothing of the new protocol's is in the
        reader's buffer (its client waits for the 101 before it speaks)."""
        self.close_connection = True
        lines = ["HTTP/1.1 101 Switching Protocols", *(f"{k}: {v}" for k, v in headers.items())]
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace"))
        self.wfile.flush()
        assert resp.upgrade is not None
        resp.upgrade(self.connection, self.server.stopping)


    def _stream_chunks(self, resp: Response, chunks: Iterator[bytes], headers: dict[str, str]) -> None:
        self._write_head(resp.code, resp.content_type, headers, None)
        try:
            for chunk in chunks:
                if chunk:
                    self._write_chunk(chunk)
                elif self._client_gone():  # an empty chunk is the producer's pause: is anyone still reading?
                    self.close_connection = True
                    break
                if self.server.stopping.is_set():
                    break
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        self.wfile.write(b"0\r\n\r\n")

    def _client_gone(self) -> bool:
        try:
            if not _ready(self.connection, select.POLLIN, 0):
                return False
            if not isinstance(self.connection, ssl.SSLSocket):
                return self.connection.recv(1, socket.MSG_PEEK) == b""
            # TLS: what arrived may be part of a record; peek at what it decrypts to without waiting.
            self.connection.settimeout(0)
            try:
                return self.rfile.peek(1) == b""
            except (ssl.SSLWantReadError, BlockingIOError):
                return False
            finally:
                self._restore_timeout()
        except (OSError, ValueError):
            return True

    def _stream_watch(self, stream: WatchStream, resp: Response, headers: dict[str, str]) -> None:
        """Send events until the watch times out, the watcher is closed, or the client goes away."""
        self._write_head(200, resp.content_type, headers, None)
        watcher = stream.watcher
        deadline = time.monotonic() + stream.timeout
        interval = self.server.bookmark_interval
        next_bookmark = time.monotonic() + interval
        try:
            while not self.server.stopping.is_set():
                now = time.monotonic()
                if now >= deadline:
                    break
                ev = watcher.next(timeout=min(0.2, deadline - now))
                if ev is not None:
                    if self._write_events(stream, ev):
                        continue
                    break   # the watcher's end came in the batch: what was queued before it is sent
                if watcher.closed.is_set():
                    break
                if stream.bookmark is not None and time.monotonic() >= next_bookmark:
                    frame = stream.bookmark()
                    if frame is not None:
                        self._write_chunk(frame)
                        next_bookmark = time.monotonic() + interval
                if self._client_gone():
                    self.close_connection = True
                    return
            if watcher.overflowed:
                self.close_connection = True
                return
            self.wfile.write(b"0\r\n\r\n")
        finally:
            stream.on_close()


def _small_chunk(pieces: tuple[bytes, ...], size: int) -> bytes:
    """One HTTP/1.1 chunk of ``size`` bytes made of ``pieces``, copied into one buffer (a frame below
    :data:`_SEPARATE_BODY_BYTES`)."""
    return b"%x\r\n%s\r\n" % (size, b"".join(pieces))


class Headers:
    """A request's headers as the server reads them: ``get`` (the first value) and ``get_all``, by name in any case.
    (The stdlib's ``HTTPMessage`` stores and fetches every header through the ``email`` package's policy, a cost
    paid on every request.)"""

    __slots__ = ("by_name",)

    def __init__(self, pairs: http1.Headers) -> None:
        self.by_name = http1.header_map(pairs)   # lower-cased name → its values

    def get(self, name: str, default: Any = None) -> Any:
        values = self.by_name.get(name.lower())
        return values[0] if values else default

    def get_all(self, name: str, default: Any = None) -> Any:
        values = self.by_name.get(name.lower())
        return list(values) if values else default

    def names(self) -> list[str]:
        """Every header name sent, lower-cased, in the order first sent."""
        return list(self.by_name)


def _ready(sock: socket.socket, events: int, timeout: float) -> bool:
    """Whether ``sock`` becomes readable (or writable: ``events``) within ``timeout`` seconds; poll, not select,
    which refuses descriptors from 1024 up (a server with a thousand connections has them)."""
    poller = select.poll()
    poller.register(sock, events)
    return bool(poller.poll(timeout * 1000))


def _could_start_request(data: bytes) -> bool:
    """Whether ``data``, the first bytes of a request, can begin ``METHOD SP``: token characters up to a
    space (or up to the end of what has arrived)."""
    matched = _TOKEN.match(data)
    end = matched.end() if matched else 0
    return end > 0 and (end == len(data) or data[end:end + 1] == b" ")


def _quote(data: bytes) -> str:
    """Bytes from the wire as Go's ``%q`` shows them: a double-quoted string with escapes."""
    return json.dumps(data.decode("iso-8859-1"))


def _pretty(query: dict[str, str]) -> bool:
    return query.get("pretty", "").lower() in ("1", "true")


def json_tail(content_type: str, body: bytes) -> bytes:
    """What a JSON body needs after it to end as kube's do: every one ends in a newline (Go's ``json.Encoder.Encode``,
    which kube's serializer writes with)."""
    if body and content_type.startswith("application/json") and not body.endswith(b"\n"):
        return b"\n"
    return b""


def _status_response(err: StatusError) -> Response:
    return Response(err.code, dumps(err.status()), headers=dict(err.headers))
