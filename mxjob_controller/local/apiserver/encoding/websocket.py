"""WebSocket framing (RFC 6455), the server's side: what the channel protocols (``v4.channel.k8s.io``) ride on, for
the clients that port-forward over WebSocket (the Python client's ``kubernetes.stream.portforward``).

    accept_key(request_key)                 # Sec-WebSocket-Accept for the 101
    for opcode, payload in parser.feed(bytes_received): ...
    sock.sendall(frame(BINARY, payload))    # unmasked, as a server sends

A client's frames are masked (a server must refuse unmasked ones); fragments are joined into their message; the
control frames (close, ping, pong) come whole. Pure: bytes in, messages out; bytes out.
"""

from __future__ import annotations

import base64
import hashlib
import struct

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"   # RFC 6455's, for the accept key
MAX_MESSAGE = 64 << 20


class WebSocketError(Exception):
    """The peer broke the protocol: the connection cannot go on."""


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key.strip() + _GUID).encode()).digest()).decode()


def frame(opcode: int, payload: bytes = b"") -> bytes:
    """One final, unmasked frame."""
    head = bytes([0x80 | opcode])
    size = len(payload)
    if size < 126:
        head += bytes([size])
    elif size < 1 << 16:
        head += bytes([126]) + struct.pack(">H", size)
    else:
        head += bytes([127]) + struct.pack(">Q", size)
    return head + payload


class FrameParser:
    """Whole messages out of a client's bytes: (opcode, payload), fragments joined."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._fragments: list[bytes] = []
        self._opcode = 0

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buffer += data
        out: list[tuple[int, bytes]] = []
        while True:
            parsed = self._frame()
            if parsed is None:
                return out
            fin, opcode, payload = parsed
            if opcode >= CLOSE:          # control frames are never fragmented
                out.append((opcode, payload))
                continue
            if opcode != CONTINUATION:
                self._opcode, self._fragments = opcode, []
            self._fragments.append(payload)
            if sum(len(f) for f in self._fragments) > MAX_MESSAGE:
                raise WebSocketError(f"a message larger than {MAX_MESSAGE} bytes")
            if fin:
                out.append((self._opcode, b"".join(self._fragments)))
                self._fragments = []

    def _frame(self) -> tuple[bool, int, bytes] | None:
        buf = self._buffer
        if len(buf) < 2:
            return None
        fin, opcode, masked, size = bool(buf[0] & 0x80), buf[0] & 0x0F, bool(buf[1] & 0x80), buf[1] & 0x7F
        if not masked:
            raise WebSocketError("an unmasked frame from a client")
        pos = 2
        if size == 126:
            if len(buf) < 4:
                return None
            size, pos = struct.unpack_from(">H", buf, 2)[0], 4
        elif size == 127:
            if len(buf) < 10:
                return None
            size, pos = struct.unpack_from(">Q", buf, 2)[0], 10
        if size > MAX_MESSAGE:
            raise WebSocketError(f"a frame larger than {MAX_MESSAGE} bytes")
        if len(buf) < pos + 4 + size:
            return None
        mask = bytes(buf[pos:pos + 4])
        data = bytes(buf[pos + 4:pos + 4 + size])
        del buf[:pos + 4 + size]
        if size:
            data = (int.from_bytes(data, "big") ^ int.from_bytes((mask * (size // 4 + 1))[:size], "big")).to_bytes(
                size, "big")
        return fin, opcode, data
