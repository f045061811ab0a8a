"""The operator's HTTP endpoints: ``/metrics`` for Prometheus, ``/healthz`` and ``/readyz`` for the kubelet.

    endpoints = Endpoints(registry, metrics_address=":8080", probe_address=":8081",
                          readiness={"informers": informers_synced(factory)}).start()
    ...
    endpoints.stop()

Addresses are given as the Go operators take them (``--metrics-bind-address``, ``--health-probe-bind-address``):
``:8080`` (every interface), ``127.0.0.1:8080``, ``[::1]:8080``, port ``0`` for any free port, and ``0`` alone
to disable. The same address (with a fixed port) for both serves every path from one server.

What each path answers (controller-runtime's and kube's conventions; any status >= 400 fails a probe):

- ``/metrics``: the registry in the text format, or OpenMetrics when the scraper asks for it.
- ``/healthz``: 200 ``ok`` while the process can answer (a ``ping`` check, plus any liveness checks given).
- ``/readyz``: 200 ``ok`` once every readiness check passes, else 503 naming the failing checks. A standby
  replica (not the leader) is ready too: readiness is about this process's caches, not about leading.
- ``/healthz/<check>``, ``/readyz/<check>``: one check alone; ``?verbose`` lists every check; ``?exclude=<check>``
  skips one.

A check is a callable returning True when healthy; returning False or raising makes it fail (the exception's text
is logged, never sent: probes are unauthenticated). Each server runs on a named thread and answers each connection on
a short-lived named thread with a socket timeout, so a slow client cannot block a probe; stopping is bounded by
its timeout, waits for the requests in progress and ends idle keep-alive connections.

The same server also serves the admission and conversion webhooks (``webhooks/server.py``): POST routes (a JSON body
of at most :data:`MAX_BODY` bytes, ``Content-Length`` required) over TLS, the context asked for per connection so
that a rotated certificate is used from the next connection on.
"""

from __future__ import annotations

import itertools
import logging
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from mxjob_controller.kube.vocabulary import TEXT_MEDIA_TYPE
from mxjob_controller.runtime.clock import IDLE_WAIT

log = logging.getLogger(__name__)

Check = Callable[[], bool]
Reply = tuple[int, str, bytes]          # status, content type, body
Route = Callable[[str, dict[str, list[str]], Mapping[str, str]], Reply]  # (subpath, query, headers) -> reply
PostRoute = Callable[[bytes, Mapping[str, str]], Reply]                   # (body, headers) -> reply
TLSContext = Callable[[], ssl.SSLContext]                                 # the context for the next connection
MAX_BODY = 7 * 1024 * 1024   # bytes of a POST body: controller-runtime's webhook limit (a conversion of a list page)
_BODY_DEADLINE = 30.0        # seconds a client may take to send a whole POST body (each read has its own timeout)

_REQUEST_TIMEOUT = 10.0                 # seconds a client may take to send its request
_JOIN_TIMEOUT = 5.0


def parse_bind_address(address: str) -> tuple[str, int] | None:
    """``(host, port)`` to bind, ``host`` "" meaning every interface; None when ``address`` disables the server."""
    address = address.strip()
    if address in ("", "0"):
        return None
    host, sep, port_text = address.rpartition(":")
    if not sep or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError(f"bind address {address!r}: expected [host]:port (e.g. :8080), or 0 to disable")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"bind address {address!r}: write an IPv6 host in brackets, e.g. [::1]:8080")
    return host, int(port_text)


def informers_synced(factory: Any) -> Check:
    """A readiness check: every informer of ``factory`` (a SharedInformerFactory) is started and has its initial
    list. True for a factory without informers (nothing to wait for)."""
    return factory.has_synced


class HealthChecks:
    """Named checks answering one probe path (``healthz`` or ``readyz``), as controller-runtime's healthz handler."""

    def __init__(self, kind: str, checks: Mapping[str, Check] | None = None) -> None:
        self.kind = kind
        self._lock = threading.Lock()
        self._checks: dict[str, Check] = {}
        for name, check in (checks or {}).items():
            self.add(name, check)

    def add(self, name: str, check: Check) -> None:
        if not name or "/" in name:
            raise ValueError(f"check name {name!r}: non-empty, without '/'")
        with self._lock:
            if name in self._checks:
                raise ValueError(f"{self.kind} check {name!r} is already registered")
            self._checks[name] = check

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._checks)

    def _passes(self, name: str, check: Check) -> bool:
        try:
            return bool(check())
        except Exception as e:
            log.warning("%s check %s failed: %s", self.kind, name, e)
            return False

    def route(self, subpath: str, query: dict[str, list[str]], headers: Mapping[str, str]) -> Reply:
        with self._lock:
            checks = dict(self._checks)
        if subpath:  # one check alone
            check = checks.get(subpath)
            if check is None:
                return 404, TEXT_MEDIA_TYPE, f"{self.kind} check {subpath!r} not found\n".encode()
            if self._passes(subpath, check):
                return 200, TEXT_MEDIA_TYPE, b"ok"
            return 503, TEXT_MEDIA_TYPE, f"internal server error: {self.kind} check {subpath} failed\n".encode()
        excluded = {name for value in query.get("exclude", []) for name in value.split(",")}
        results = [(name, self._passes(name, checks[name])) for name in sorted(checks) if name not in excluded]
        failed = [name for name, ok in results if not ok]
        if not failed and "verbose" not in query:
            return 200, TEXT_MEDIA_TYPE, b"ok"
        lines = [f"[+]{name} ok" if ok else f"[-]{name} failed: reason withheld" for name, ok in results]
        lines += [f"[+]{name} excluded: ok" for name in sorted(excluded & set(checks))]
        lines.append(f"{self.kind} check failed" if failed else f"{self.kind} check passed")
        return (503 if failed else 200), TEXT_MEDIA_TYPE, ("\n".join(lines) + "\n").encode()


def metrics_route(registry: CollectorRegistry) -> Route:
    """``/metrics``: the Prometheus text format (0.0.4), or OpenMetrics when the Accept header asks for it."""
    def route(subpath: str, query: dict[str, list[str]], headers: Mapping[str, str]) -> Reply:
        if subpath:
            return 404, TEXT_MEDIA_TYPE, b"404 page not found\n"
        encoder, content_type = choose_encoder(headers.get("accept", ""))
        return 200, content_type, encoder(registry)
    return route


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = _REQUEST_TIMEOUT
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()   # the socket timeout is set: the TLS handshake below is bounded by it too
        self._failed_handshake = False
        if isinstance(self.connection, ssl.SSLSocket):
            try:
                self.connection.do_handshake()
            except (ssl.SSLError, OSError) as e:   # a client that does not trust us, or went away: its problem
                log.debug("%s: TLS handshake failed: %s", self.server.name, e)
                self._failed_handshake = True

    def handle(self) -> None:
        if self._failed_handshake:
            return
        try:
            super().handle()
        except (ssl.SSLError, OSError) as e:
            log.debug("%s: connection ended: %s", self.server.name, e)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        self._reply(*self.server.dispatch(parts.path, query, {k.lower(): v for k, v in self.headers.items()}))

    def do_POST(self) -> None:
        if not self.server.post_routes:   # as BaseHTTPRequestHandler answers a method it does not serve
            self.send_error(501, f"Unsupported method ({self.command!r})")
            return
        route = self.server.post_routes.get(urlsplit(self.path).path)
        length = self.headers.get("Content-Length")
        if route is None or length is None or not length.isdigit() or int(length) > MAX_BODY:
            self.close_connection = True   # the body stays unread: the connection cannot serve another request
            if route is None:
                self._reply(404, TEXT_MEDIA_TYPE, b"404 page not found\n")
            elif length is None or not length.isdigit():
                self._reply(411, TEXT_MEDIA_TYPE, b"Content-Length required\n")
            else:
                self._reply(413, TEXT_MEDIA_TYPE, b"request body too large\n")
        else:
            body = self._read_body(int(length))
            if body is None:
                self.close_connection = True
                self._reply(408, TEXT_MEDIA_TYPE, b"request body not received in time\n")
                return
            self._reply(*route(body, {k.lower(): v for k, v in self.headers.items()}))

    def _read_body(self, length: int) -> bytes | None:
        """The body, or None when it does not arrive within :data:`_BODY_DEADLINE` (a client trickling bytes
        would otherwise hold this thread for as long as it likes)."""
        deadline = time.monotonic() + _BODY_DEADLINE
        chunks: list[bytes] = []
        left = length
        while left > 0:
            if time.monotonic() > deadline:
                return None
            chunk = self.rfile.read1(min(left, 65536))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _reply(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class _Server(ThreadingHTTPServer):
    """Answers each connection on its own named thread (``<name>-request-<n>``), and knows them all, so a stop can
    end idle keep-alive connections and wait for the requests in progress."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, name: str, host: str, port: int, routes: Mapping[str, Route],
                 post_routes: Mapping[str, PostRoute] | None = None, tls: TLSContext | None = None) -> None:
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.name = name
        self.routes = dict(routes)
        self.post_routes = dict(post_routes or {})
        self.tls = tls
        self._connections: dict[threading.Thread, socket.socket] = {}
        self._connections_lock = threading.Lock()
        self._connection_ids = itertools.count(1)
        super().__init__((host, port), _Handler)

    def dispatch(self, path: str, query: dict[str, list[str]], headers: Mapping[str, str]) -> Reply:
        for prefix, route in self.routes.items():
            if path == prefix or path.startswith(prefix + "/"):
                return route(path[len(prefix) + 1:], query, headers)
        return 404, TEXT_MEDIA_TYPE, b"404 page not found\n"

    def get_request(self) -> tuple[Any, Any]:
        sock, address = super().get_request()
        # An answer goes out as headers then body: without this, Nagle holds the body back until the client's
        # delayed ACK of the headers (40 ms per request on a kept-alive connection, measured on the webhooks).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is not None:   # the handshake happens on the connection's own thread (_Handler.setup)
            sock = self.tls().wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(target=self._serve_connection, args=(request, client_address),
                                  name=f"{self.name}-request-{next(self._connection_ids)}", daemon=True)
        with self._connections_lock:
            self._connections[thread] = request
        thread.start()

    def _serve_connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._connections_lock:
                self._connections.pop(threading.current_thread(), None)

    def connection_threads(self) -> list[threading.Thread]:
        with self._connections_lock:
            return list(self._connections)

    def end_connections(self) -> list[threading.Thread]:
        """Stop reading from every connection (an idle keep-alive ends at once; a request in progress still gets
        its answer); the threads serving them."""
        with self._connections_lock:
            connections = dict(self._connections)
        for sock in connections.values():
            try:
                # socket.socket's own shutdown, also for a TLS socket: SSLSocket.shutdown drops the TLS layer, and
                # an answer still being written would then go out in clear text.
                socket.socket.shutdown(sock, socket.SHUT_RD)
            except OSError:
                pass
        return list(connections)


class EndpointServer:
    """One HTTP server on ``bind_address`` serving ``routes`` (path prefix -> route) and ``post_routes`` (exact
    path -> route) on a thread named ``endpoints-<name>``, each connection on a thread named
    ``endpoints-<name>-request-<n>``; HTTPS when ``tls`` gives the context."""

    def __init__(self, name: str, bind_address: str, routes: Mapping[str, Route],
                 post_routes: Mapping[str, PostRoute] | None = None, tls: TLSContext | None = None) -> None:
        parsed = parse_bind_address(bind_address)
        if parsed is None:
            raise ValueError(f"endpoint server {name}: bind address {bind_address!r} disables it")
        self.name = name
        self._server = _Server(f"endpoints-{name}", parsed[0], parsed[1], routes, post_routes, tls)
        self._server.timeout = 0   # handle_request() is only called once the listening socket is readable
        self._stop = threading.Event()
        self._wake_reader, self._wake_writer = socket.socketpair()   # stop() wakes the idle accept loop at once
        self._thread = threading.Thread(target=self._serve, name=f"endpoints-{name}", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = str(self._server.server_address[0])
        if host in ("0.0.0.0", "::", ""):
            host = "127.0.0.1" if self._server.address_family == socket.AF_INET else "::1"
        scheme = "https" if self._server.tls is not None else "http"
        return f"{scheme}://[{host}]:{self.port}" if ":" in host else f"{scheme}://{host}:{self.port}"

    def start(self) -> EndpointServer:
        self._thread.start()
        host, port = self._server.server_address[:2]
        listening = f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
        log.info("serving %s on %s (locally %s)", ", ".join([*self._server.routes, *self._server.post_routes]),
                 listening, self.url)
        return self

    def _serve(self) -> None:
        # Not serve_forever(): its shutdown() waits without a timeout, and it polls. This loop sleeps until a
        # connection or stop() arrives, so an idle controller's endpoints cost no wake-ups.
        with selectors.DefaultSelector() as selector:
            selector.register(self._server, selectors.EVENT_READ)
            selector.register(self._wake_reader, selectors.EVENT_READ)
            while not self._stop.is_set():
                try:
                    ready = selector.select(IDLE_WAIT)
                    if self._stop.is_set():
                        return
                    if any(key.fileobj is self._server for key, _ in ready):
                        self._server.handle_request()
                except (OSError, ValueError):
                    if not self._stop.is_set():
                        raise
                    return  # the socket was closed under us by a stop that gave up waiting

    def stop(self, timeout: float = _JOIN_TIMEOUT) -> bool:
        """Stop accepting, close the socket, end idle connections, and join the server's thread and the requests
        in progress, all within ``timeout``; False if one of them outlived it."""
        deadline = time.monotonic() + timeout
        self._stop.set()
        try:
            self._wake_writer.send(b"x")
        except OSError:   # already stopped: the pair is closed
            pass
        if self._thread.ident is not None:
            self._thread.join(timeout)
        self._server.server_close()
        if not self._thread.is_alive():
            self._wake_reader.close()
            self._wake_writer.close()
        for thread in self._server.end_connections():
            thread.join(max(0.0, deadline - time.monotonic()))
        left = [t.name for t in self._server.connection_threads() if t.is_alive()]
        if left:
            log.warning("endpoint server %s: requests still in progress after %.1fs: %s", self.name, timeout,
                        ", ".join(left))
        return not self._thread.is_alive() and not left


class Endpoints:
    """``/metrics`` on ``metrics_address`` and the probes on ``probe_address`` (one server if they are the same
    fixed address; none for an address of ``0``). ``liveness`` adds checks to ``/healthz`` beside ``ping``."""

    def __init__(self, registry: CollectorRegistry, *, metrics_address: str = ":8080", probe_address: str = ":8081",
                 readiness: Mapping[str, Check] | None = None, liveness: Mapping[str, Check] | None = None) -> None:
        self.healthz = HealthChecks("healthz", {"ping": lambda: True, **(liveness or {})})
        self.readyz = HealthChecks("readyz", readiness)
        metrics = {"/metrics": metrics_route(registry)}
        probes = {"/healthz": self.healthz.route, "/readyz": self.readyz.route}
        self.metrics_server: EndpointServer | None = None
        self.probe_server: EndpointServer | None = None
        metrics_bind, probe_bind = parse_bind_address(metrics_address), parse_bind_address(probe_address)
        metrics_on, probes_on = metrics_bind is not None, probe_bind is not None
        if metrics_bind is not None and metrics_bind == probe_bind and metrics_bind[1] != 0:
            self.metrics_server = self.probe_server = EndpointServer("http", metrics_address, {**metrics, **probes})
            return
        if metrics_on:
            self.metrics_server = EndpointServer("metrics", metrics_address, metrics)
        if probes_on:
            self.probe_server = EndpointServer("probes", probe_address, probes)

    def _servers(self) -> Iterable[EndpointServer]:
        seen: list[EndpointServer] = []
        for server in (self.metrics_server, self.probe_server):
            if server is not None and server not in seen:
                seen.append(server)
        return seen

    def start(self) -> Endpoints:
        for server in self._servers():
            server.start()
        return self

    def stop(self, timeout: float = _JOIN_TIMEOUT) -> bool:
        return all([server.stop(timeout) for server in self._servers()])
