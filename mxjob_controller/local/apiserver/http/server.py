"""The embedded API server's listening socket: the accept loop, the cap on connections (each with its thread) and
its refusal, each user's share of long-running requests, and bounded draining on shutdown. What one connection
does is ``connection.py``'s ``ConnectionHandler``."""

from __future__ import annotations

import itertools
import logging
import selectors
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any

from mxjob_controller.local.apiserver.auth.user import UserInfo
from mxjob_controller.local.apiserver.http.connection import (
    HEADER_TIMEOUT,
    IDLE_TIMEOUT,
    LINGER_SECONDS,
    READ_TIMEOUT,
    Application,
    ConnectionHandler,
    Observer,
)
from mxjob_controller.local.apiserver.http.deadlines import REQUEST_TIMEOUT, Deadlines
from mxjob_controller.local.apiserver.http.flowcontrol import too_many_requests
from mxjob_controller.local.apiserver.request import EarlyResponseError, Exchange

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 2048  # connections (each with its thread) at once: above the 2,000 concurrent clients APF must see
_EVICTION_WAIT = 1.0  # how long the accept loop waits for an evicted connection's thread to end
# A user (other than the cluster's own and system:masters) may hold at most this share of the connections in
# long-running requests (watches, logs, exec): 256 of 2,048.
LONG_RUNNING_SHARE = 8
# The cluster's own components by kube's names (kube-apiserver's loopback client is system:apiserver).
_COMPONENTS = frozenset(("system:apiserver", "system:kube-controller-manager", "system:kube-scheduler",
                         "system:kube-proxy"))
_NODES = "system:nodes"
# kube's max-in-flight refusal (Go's http.Error: plain text), for a connection past the cap.
_TOO_MANY_REQUESTS = (b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\n"
                      b"X-Content-Type-Options: nosniff\r\nRetry-After: 1\r\nContent-Length: 43\r\n"
                      b"Connection: close\r\n\r\nToo many requests, please try again later.\n")


def is_system(user: UserInfo | None) -> bool:
    """Whether ``user`` is the cluster's own (its components, its nodes) or in ``system:masters``: never refused a
    long-running request, nor a connection, for another user's share. None: the server asks nobody who they are."""
    return user is None or user.is_master or _NODES in user.groups or user.name in _COMPONENTS


def refuse_past_share(ex: Exchange) -> None:
    """A router interceptor, after authentication: a long-running request of a user who holds its share of them
    already is answered as APF answers past a share (429, ``Retry-After``), before a watcher is registered or a log
    opened, so a refusal costs little. kube-apiserver counts watches outside max-in-flight too, and has no
    connection cap to share; this server's threads are one per connection, so it bounds each user's share."""
    if ex.info.long_running and ex.claim_long_running is not None and not ex.claim_long_running(ex.user):
        raise EarlyResponseError(too_many_requests(1))


class APIHTTPServer(ThreadingHTTPServer):
    """The listening socket, its accept loop, and one tracked thread per connection.

    At most ``max_connections`` connections (threads) at once. Past that a new connection takes the place of the
    oldest one that is serving no request (idle, or still sending its headers: a client may close an idle keep-alive
    at any time, and HTTP clients retry on one), so slow or idle clients can never lock the others out. Requests
    that are not long-running are bounded by flow control's seats and queues and by the request timeout; a user
    other than the cluster's own and ``system:masters`` (:func:`is_system`) may hold at most
    ``max_connections / LONG_RUNNING_SHARE`` long-running ones (:func:`refuse_past_share`). When every connection is
    serving a request, the new one takes the place of the oldest long-running request of the user who holds the
    most (its client resumes, as after any watch closed by the server); only when no such request is left is it
    refused with kube's max-in-flight answer, ``429 Too many requests`` with ``Retry-After: 1`` (over TLS it is
    closed: an answer would need a handshake the accept loop cannot wait for). Accepting and refusing, rather than
    not accepting, keeps the refusal quick and clear instead of a connect that hangs in the kernel's backlog.

    Stopping is bounded and in kube-apiserver's order: :meth:`stop_accepting`, then :meth:`drain` (watches end,
    idle keep-alives are closed, requests in progress finish and answer ``Connection: close``; whatever is still
    running at the deadline has its socket shut and is reported).
    """

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], app: Application,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.app = app
        self.ssl_context = ssl_context
        self.observers: list[Observer] = []
        self.bookmark_interval = 60.0
        self.header_timeout = HEADER_TIMEOUT  # seconds for a request line and its headers to arrive
        self.read_timeout = READ_TIMEOUT  # seconds for the whole request, body included (0: no limit)
        self.idle_timeout = IDLE_TIMEOUT  # seconds an idle keep-alive connection is kept
        self.max_connections = MAX_CONNECTIONS
        self.long_running_share = LONG_RUNNING_SHARE
        self.request_timeout = REQUEST_TIMEOUT  # seconds a request that is not long-running may take (0: any)
        self.deadlines = Deadlines()
        self.stopping = threading.Event()  # connections: finish what is in progress, take nothing new
        self._accepting_ends = threading.Event()
        # stop_accepting writes a byte here, so the accept loop wakes at once instead of at its next poll
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._conns: dict[socket.socket, _Connection] = {}  # oldest first
        self._conns_lock = threading.Lock()
        self._holders: dict[str, int] = {}  # user → long-running requests it holds (is_system users uncounted)
        self._refusing: set[str] = set()  # users refused since they last held less than their share (logged once)
        self._conn_ids = itertools.count(1)
        self._refused: dict[socket.socket, float] = {}  # refused connections drained until these times
        self._selector: selectors.BaseSelector | None = None
        if ":" in address[0]:   # an IPv6 address (``::``, ``::1``): socketserver binds IPv4 unless told
            self.address_family = socket.AF_INET6
        try:
            super().__init__(address, ConnectionHandler)
        except BaseException:   # the port is taken, say: the wake-up pair goes with the server that never was
            self._wake_reader.close()
            self._wake_writer.close()
            raise

    # --- accepting ----------------------------------------------------------------------------------------

    def serve(self, poll_interval: float = 0.1) -> None:
        """Accept connections until :meth:`stop_accepting`, which wakes the loop at once (``poll_interval`` only
        bounds how long a missed wake-up could go unseen)."""
        self.deadlines.start()
        with selectors.DefaultSelector() as selector:
            self._selector = selector
            selector.register(self, selectors.EVENT_READ)
            selector.register(self._wake_reader, selectors.EVENT_READ)
            try:
                while not self._accepting_ends.is_set():
                    ready = selector.select(poll_interval)
                    for key, _ in ready:
                        if key.fileobj in self._refused:
                            self._drain_refused(key.fileobj)  # type: ignore[arg-type]
                    if any(key.fileobj is self for key, _ in ready) and not self._accepting_ends.is_set():
                        self._handle_request_noblock()
                    self._expire_refused()
                    self.service_actions()
            finally:
                for sock in list(self._refused):
                    self._close_refused(sock)
                self._selector = None

    def stop_accepting(self) -> None:
        self._accepting_ends.set()
        try:
            self._wake_writer.send(b"\0")
        except OSError:   # closed already: the loop has ended
            pass

    def server_close(self) -> None:
        super().server_close()
        self.deadlines.stop()
        self._wake_reader.close()
        self._wake_writer.close()

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.ssl_context is not None:   # the handshake waits for the connection's thread (_Handler.setup)
            sock = self.ssl_context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._make_room():
            self._refuse(request)
            return
        t = threading.Thread(target=self._connection, args=(request, client_address),
                             name=f"apiserver-conn-{next(self._conn_ids)}", daemon=True)
        with self._conns_lock:
            self._conns[request] = _Connection(t)
        t.start()

    def _connection(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._conns_lock:
                conn = self._conns.pop(request, None)
                if conn is not None:
                    self._release(conn)

    # --- the connection cap -------------------------------------------------------------------------------

    def _make_room(self) -> bool:
        """Whether a new connection may have a thread: under the cap, or once the oldest connection serving no
        request, else the oldest long-running request of the user holding the most, has been closed (its thread
        waited for, briefly). False when every connection serves a request and none is such a long-running one."""
        with self._conns_lock:
            if len(self._conns) < self.max_connections:
                return True
            victim = next(((sock, conn) for sock, conn in self._conns.items() if not conn.busy and not conn.evicted),
                          None) or self._heaviest_holder()
            if victim is None:
                return False
            sock, conn = victim
            conn.evicted = True  # not picked twice
        if conn.holder:   # a client's watch ends: worth a line (idle ones go all the time under slow clients)
            log.info("%d connections: closing %s, a long-running request of %s, the user holding the most, for a "
                     "new one", self.max_connections, conn.thread.name, conn.holder)
        else:
            log.debug("%d connections: closing %s, which serves no request, for a new one", self.max_connections,
                      conn.thread.name)
        _shutdown(sock)
        conn.thread.join(_EVICTION_WAIT)
        return True

    def _heaviest_holder(self) -> tuple[socket.socket, _Connection] | None:
        """The oldest connection serving a long-running request of the user who holds the most (under the lock)."""
        for user, _ in sorted(self._holders.items(), key=lambda item: -item[1]):
            found = next(((sock, conn) for sock, conn in self._conns.items()
                          if conn.holder == user and not conn.evicted), None)
            if found is not None:
                return found
        return None

    def _refuse(self, sock: socket.socket) -> None:
        """kube's max-in-flight refusal (429, ``Retry-After: 1``), then the rest of the request drained for half a
        second (as after any refusal: see ``_Handler._linger``) by the accept loop, which never blocks on it."""
        log.warning("%d connections, each serving a request: refusing a new one", self.max_connections)
        if isinstance(sock, ssl.SSLSocket) or self._selector is None:
            _shutdown(sock)
            sock.close()
            return
        try:
            sock.setblocking(False)
            sock.send(_TOO_MANY_REQUESTS)  # a fresh socket's buffer takes it whole
            sock.shutdown(socket.SHUT_WR)
            self._selector.register(sock, selectors.EVENT_READ)
        except (OSError, ValueError):
            sock.close()
            return
        self._refused[sock] = time.monotonic() + LINGER_SECONDS

    def _drain_refused(self, sock: socket.socket) -> None:
        try:
            if sock.recv(65536):
                return
        except BlockingIOError:
            return
        except OSError:
            pass
        self._close_refused(sock)

    def _expire_refused(self) -> None:
        now = time.monotonic()
        for sock in [s for s, until in self._refused.items() if until <= now]:
            self._close_refused(sock)

    def _close_refused(self, sock: socket.socket) -> None:
        self._refused.pop(sock, None)
        if self._selector is not None:
            try:
                self._selector.unregister(sock)
            except (KeyError, ValueError):
                pass
        sock.close()

    def connection_count(self) -> int:
        with self._conns_lock:
            return len(self._conns)

    def serving_count(self) -> int:
        """Connections serving a request (its headers read), which the cap closes only for a heavy user's watch."""
        with self._conns_lock:
            return sum(conn.busy for conn in self._conns.values())

    # --- connections --------------------------------------------------------------------------------------

    def set_busy(self, sock: socket.socket, busy: bool) -> None:
        """The connection starts (True) or ends serving a request; at its end, any long-running claim ends too."""
        with self._conns_lock:
            conn = self._conns.get(sock)
            if conn is not None:
                conn.busy = busy
                if not busy:
                    self._release(conn)

    def claim_long_running(self, sock: socket.socket, user: UserInfo | None) -> bool:
        """Count the request ``sock`` serves as one of ``user``'s long-running requests (until it ends); False,
        counting nothing, when the user holds its share already. The cluster's own are never counted."""
        if is_system(user):
            return True
        assert user is not None
        limit = max(1, self.max_connections // self.long_running_share)
        with self._conns_lock:
            conn = self._conns.get(sock)
            if conn is None or conn.holder:
                return True
            held = self._holders.get(user.name, 0)
            if held >= limit:
                if user.name not in self._refusing:   # once per spell at the share, not once per refusal
                    self._refusing.add(user.name)
                    log.info("%s holds %d long-running requests, its share: refusing more (429)", user.name, held)
                return False
            self._holders[user.name] = held + 1
            conn.holder = user.name
        return True

    def long_running_held(self) -> dict[str, int]:
        """User → the long-running requests it holds now (the cluster's own are not counted)."""
        with self._conns_lock:
            return dict(self._holders)

    def _release(self, conn: _Connection) -> None:
        """End ``conn``'s long-running claim, if any (under the lock)."""
        if conn.holder:
            left = self._holders.get(conn.holder, 1) - 1
            if left > 0:
                self._holders[conn.holder] = left
            else:
                self._holders.pop(conn.holder, None)
            self._refusing.discard(conn.holder)
            conn.holder = ""

    def drain(self, timeout: float) -> list[str]:
        """Let every connection end within ``timeout`` seconds; the names of the threads still running after.

        Watches and log streams end at once, idle keep-alives are closed, and requests in progress get most of
        the time to answer; then the sockets of those left are shut (their threads end at their next read or
        write) and they get the rest.
        """
        deadline = time.monotonic() + timeout
        forced = min(0.5, timeout / 4)  # the part of the time kept for the threads whose sockets are shut
        self.stopping.set()
        self._shut(busy_too=False)
        left = self._join(deadline - forced)
        if left:
            self._shut(busy_too=True)
            left = self._join(deadline)
        return sorted(t.name for t in left)

    def _shut(self, busy_too: bool) -> None:
        with self._conns_lock:
            socks = [sock for sock, conn in self._conns.items() if busy_too or not conn.busy]
        for sock in socks:
            _shutdown(sock)

    def _join(self, deadline: float) -> list[threading.Thread]:
        with self._conns_lock:
            threads = [conn.thread for conn in self._conns.values()]
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return [t for t in threads if t.is_alive()]


@dataclass(slots=True)
class _Connection:
    thread: threading.Thread
    busy: bool = False  # serving a request (not idle, not still reading one)
    holder: str = ""  # the user whose long-running request it serves, when counted (claim_long_running)
    evicted: bool = False  # closed to make room for a new connection


def _shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
