"""``pods/portforward``: kubectl's port-forward streams to a pod of the local node, as a kubelet serves them.

kubectl upgrades the request to SPDY/3.1 (``encoding/spdy.py``) with the subprotocol ``portforward.k8s.io``;
for each local connection it opens two streams with the headers ``streamType`` (``error``, then ``data``), ``port``
and ``requestID``. Once both of a request are open the pod's port is dialled (pods run as processes on loopback
addresses of their own: ``status.podIP``), and bytes go both ways: the data stream's to the pod, the pod's back as
data frames; each side's end (``FIN``, TCP EOF) half-closes the other. A port that cannot be dialled is said on the
request's error stream (kubectl prints it), as the kubelet says it, and both streams end.

The Python client port-forwards over a WebSocket instead (``v4.channel.k8s.io``, ``?ports=8080,9090``): channel 2i
carries the i-th port's data both ways, 2i+1 its errors; each channel's first message is its port (2 bytes, little
endian); the ports are dialled as the WebSocket opens, and it closes once every pod side has ended
(:class:`WebSocketPortForward`).

Guarantees: one thread serves the whole connection (the handler's: a TLS socket cannot be read and written by two
threads), with a select over the connection and every dialled socket, each wait at most
:data:`_TICK`, each read or write of a ready socket at most :data:`_IO_TIMEOUT`; it ends when kubectl goes, sends
GOAWAY, or the server stops, closing every socket it dialled.
"""

from __future__ import annotations

import logging
import select
import socket
import ssl
import struct
import threading
from dataclasses import dataclass

from mxjob_controller.local.apiserver.encoding import spdy
from mxjob_controller.local.apiserver.encoding import websocket as ws

log = logging.getLogger(__name__)

PROTOCOL = "portforward.k8s.io"
WEBSOCKET_PROTOCOL = "v4.channel.k8s.io"
_TICK = 1.0          # seconds: the longest wait, between looks at the server's stopping
_DIAL_TIMEOUT = 5.0
_IO_TIMEOUT = 30.0   # seconds a read or write of a ready socket may take (a peer that stopped reading)
_READ = 65536


def port_error(port: str, pod: str, address: str, error: OSError) -> str:
    """The kubelet's words for a port it could not dial."""
    return (f"error forwarding port {port} to pod {pod}: failed to connect to {address}:{port}: "
            f"{error.strerror or error}")


@dataclass
class _Forward:
    """One forwarded connection: its two streams and the pod's socket."""

    port: str
    error_stream: int = 0
    data_stream: int = 0
    sock: socket.socket | None = None
    to_pod_done: bool = False     # kubectl's half ended (FIN on the data stream)
    from_pod_done: bool = False   # the pod's half ended (EOF)


class PortForwardSession:
    """The SPDY session of one upgraded connection (``run`` serves it on the handler's thread)."""

    def __init__(self, pod_name: str, pod_address: str, stopping: threading.Event) -> None:
        self.pod_name, self.address, self.stopping = pod_name, pod_address, stopping
        self.parser, self.writer = spdy.FrameParser(), spdy.FrameWriter()
        self.forwards: dict[str, _Forward] = {}          # requestID → its forward
        self.streams: dict[int, tuple[str, str]] = {}    # stream id → (requestID, streamType)
        self._last_stream = 0

    def run(self, conn: socket.socket) -> None:
        conn.settimeout(_IO_TIMEOUT)   # waits are select's (at most _TICK); this bounds a write kubectl does not read
        try:
            self._loop(conn)
        except (OSError, spdy.SpdyError) as e:
            log.debug("port-forward to %s ended: %s", self.pod_name, e)
        finally:
            for forward in self.forwards.values():
                if forward.sock is not None:
                    forward.sock.close()

    def _loop(self, conn: socket.socket) -> None:
        while not self.stopping.is_set():
            pods = {f.sock: f for f in self.forwards.values() if f.sock is not None and not f.from_pod_done}
            for source in _readable(conn, list(pods)):
                if source is conn:
                    try:
                        data = conn.recv(_READ)
                    except (TimeoutError, ssl.SSLWantReadError):
                        continue
                    if not data:
                        return   # kubectl went
                    for frame in self.parser.feed(data):
                        if not self._handle(conn, frame):
                            return
                else:
                    self._from_pod(conn, pods[source])

    def _handle(self, conn: socket.socket, frame: spdy.Frame) -> bool:
        """Act on one frame; False when the session is over (GOAWAY)."""
        if isinstance(frame, spdy.DataFrame):
            self._to_pod(conn, frame)
            return True
        if frame.type == spdy.SYN_STREAM:
            self._open(conn, frame)
        elif frame.type == spdy.PING:
            conn.sendall(self.writer.ping(frame.value))
        elif frame.type == spdy.RST_STREAM:
            self._reset(frame.stream_id)
        elif frame.type == spdy.GOAWAY:
            return False
        return True

    def _open(self, conn: socket.socket, frame: spdy.ControlFrame) -> None:
        kind, port, request = (frame.headers.get(k, "") for k in ("streamtype", "port", "requestid"))
        self._last_stream = max(self._last_stream, frame.stream_id)
        if kind not in ("error", "data") or not port.isdigit():
            conn.sendall(self.writer.rst_stream(frame.stream_id, spdy.RST_PROTOCOL_ERROR))
            return
        conn.sendall(self.writer.syn_reply(frame.stream_id, {}))
        self.streams[frame.stream_id] = (request, kind)
        forward = self.forwards.setdefault(request, _Forward(port))
        if kind == "error":
            forward.error_stream = frame.stream_id
        else:
            forward.data_stream = frame.stream_id
        if forward.error_stream and forward.data_stream and forward.sock is None:
            self._dial(conn, request, forward)

    def _dial(self, conn: socket.socket, request: str, forward: _Forward) -> None:
        try:
            forward.sock = socket.create_connection((self.address, int(forward.port)), timeout=_DIAL_TIMEOUT)
            forward.sock.settimeout(_IO_TIMEOUT)
        except OSError as e:
            message = port_error(forward.port, self.pod_name, self.address, e)
            log.info("port-forward: %s", message)
            conn.sendall(spdy.FrameWriter.data(forward.error_stream, message.encode(), fin=True) +
                         spdy.FrameWriter.data(forward.data_stream, b"", fin=True))
            self._forget(request)

    def _to_pod(self, conn: socket.socket, frame: spdy.DataFrame) -> None:
        request, kind = self.streams.get(frame.stream_id, ("", ""))
        forward = self.forwards.get(request)
        if forward is None or kind != "data":
            return   # kubectl's error stream carries nothing to the pod; a stream already gone: dropped
        if forward.sock is not None and frame.data:
            forward.sock.sendall(frame.data)
        if frame.fin:
            forward.to_pod_done = True
            if forward.sock is not None:
                try:
                    forward.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            self._maybe_done(request, forward)

    def _from_pod(self, conn: socket.socket, forward: _Forward) -> None:
        assert forward.sock is not None
        try:
            data = forward.sock.recv(_READ)
        except (TimeoutError, ConnectionResetError):
            data = b""
        if data:
            conn.sendall(spdy.FrameWriter.data(forward.data_stream, data))
            return
        forward.from_pod_done = True
        conn.sendall(spdy.FrameWriter.data(forward.data_stream, b"", fin=True) +
                     spdy.FrameWriter.data(forward.error_stream, b"", fin=True))
        request = self.streams.get(forward.data_stream, ("", ""))[0]
        self._maybe_done(request, forward)

    def _maybe_done(self, request: str, forward: _Forward) -> None:
        if forward.to_pod_done and forward.from_pod_done:
            self._forget(request)

    def _reset(self, stream_id: int) -> None:
        request = self.streams.get(stream_id, ("", ""))[0]
        if request in self.forwards:
            self._forget(request)

    def _forget(self, request: str) -> None:
        forward = self.forwards.pop(request, None)
        if forward is None:
            return
        if forward.sock is not None:
            forward.sock.close()
        for stream in (forward.error_stream, forward.data_stream):
            self.streams.pop(stream, None)


def _readable(conn: socket.socket, others: list[socket.socket]) -> list[socket.socket]:
    """What can be read now, waiting at most :data:`_TICK` (a TLS connection's decrypted bytes count)."""
    if isinstance(conn, ssl.SSLSocket) and conn.pending() > 0:
        return [conn]
    return select.select([conn, *others], [], [], _TICK)[0]


class WebSocketPortForward:
    """The WebSocket session of one upgraded connection (see the module)."""

    def __init__(self, pod_name: str, pod_address: str, ports: list[int], stopping: threading.Event) -> None:
        self.pod_name, self.address, self.ports, self.stopping = pod_name, pod_address, ports, stopping
        self.parser = ws.FrameParser()
        self.socks: dict[int, socket.socket] = {}    # port index → the pod's socket, while it is open

    def run(self, conn: socket.socket) -> None:
        conn.settimeout(_IO_TIMEOUT)
        try:
            self._open(conn)
            self._loop(conn)
            conn.sendall(ws.frame(ws.CLOSE, struct.pack(">H", 1000)))
        except (OSError, ws.WebSocketError) as e:
            log.debug("port-forward (WebSocket) to %s ended: %s", self.pod_name, e)
        finally:
            for sock in self.socks.values():
                sock.close()

    def _send(self, conn: socket.socket, channel: int, data: bytes) -> None:
        conn.sendall(ws.frame(ws.BINARY, bytes([channel]) + data))

    def _open(self, conn: socket.socket) -> None:
        for index, port in enumerate(self.ports):
            number = struct.pack("<H", port)
            self._send(conn, 2 * index, number)
            self._send(conn, 2 * index + 1, number)
            try:
                self.socks[index] = socket.create_connection((self.address, port), timeout=_DIAL_TIMEOUT)
                self.socks[index].settimeout(_IO_TIMEOUT)
            except OSError as e:
                self._send(conn, 2 * index + 1, port_error(str(port), self.pod_name, self.address, e).encode())

    def _loop(self, conn: socket.socket) -> None:
        while self.socks and not self.stopping.is_set():
            by_sock = {sock: index for index, sock in self.socks.items()}
            for source in _readable(conn, list(by_sock)):
                if source is not conn:
                    data = source.recv(_READ)
                    if data:
                        self._send(conn, 2 * by_sock[source], data)
                    else:
                        self.socks.pop(by_sock[source]).close()
                    continue
                data = conn.recv(_READ)
                if not data:
                    return
                for opcode, payload in self.parser.feed(data):
                    if opcode == ws.CLOSE:
                        return
                    if opcode == ws.PING:
                        conn.sendall(ws.frame(ws.PONG, payload))
                    elif opcode == ws.BINARY and payload and payload[0] % 2 == 0:
                        sock = self.socks.get(payload[0] // 2)
                        if sock is not None and len(payload) > 1:
                            sock.sendall(payload[1:])
