"""A scripted HTTP peer on a real loopback socket, for the transport's tests: it answers each request it reads with
the next of its answers (bytes sent as they are, or a callable given the connection, which may trickle, forge or
close), so that answers the embedded API server never sends can be tried.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Iterator

import pytest

from mxjob_controller.runtime.client import Client, ClientConfig
from mxjob_controller.runtime.tls import TLSMaterial

JSON_OK = b'{"kind":"Status","ok":1}'


def ok(body: bytes = JSON_OK, extra: str = "") -> bytes:
    return (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
            ).encode() + body


class ScriptedPeer:
    """A TCP server answering each request it reads with the next of ``answers`` (bytes, or a callable given the
    connection, which may also close it); counts the connections it accepted. With ``tls`` (a server context) every
    connection is TLS."""

    def __init__(self, answers: list[bytes | Callable[[socket.socket], None]],
                 tls: ssl.SSLContext | None = None) -> None:
        self.answers = list(answers)
        self._tls = tls
        self.connections = 0
        self.requests: list[bytes] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self._server.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="scripted-peer", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), name="scripted-peer-conn", daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        if self._tls is not None:
            try:
                conn = self._tls.wrap_socket(conn, server_side=True)
            except OSError:
                conn.close()
                return
        reader = conn.makefile("rb")
        try:
            while self.answers:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = next((int(h.split(b":")[1]) for h in head.split(b"\r\n")
                               if h.lower().startswith(b"content-length:")), 0)
                self.requests.append(head + reader.read(length))
                answer = self.answers.pop(0)
                if callable(answer):
                    answer(conn)
                else:
                    conn.sendall(answer)
        except OSError:
            pass
        finally:
            reader.close()
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        self._thread.join(5)


@pytest.fixture
def peer_client() -> Iterator[Callable[..., tuple[ScriptedPeer, Client]]]:
    made: list[tuple[ScriptedPeer, Client]] = []
    materials: list[TLSMaterial] = []

    def make(answers: list, tls: bool = False, **config: object) -> tuple[ScriptedPeer, Client]:
        context = None
        if tls:
            material = TLSMaterial("127.0.0.1")
            materials.append(material)
            context = material.server_context()
            config.setdefault("ca_file", str(material.ca_file))
        peer = ScriptedPeer(answers, context)
        client = Client(ClientConfig(host=peer.url, qps=-1, **config), component="transport-tests",  # type: ignore[arg-type]
                        max_retries=0)
        made.append((peer, client))
        return peer, client

    yield make
    for peer, client in made:
        client.close()
        peer.close()
    for material in materials:
        material.close()
