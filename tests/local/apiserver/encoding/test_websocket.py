"""``encoding/websocket.py``: RFC 6455 as a server speaks it, pure: the accept key, a client's masked frames (at
any size, fragmented, cut anywhere) read back whole, unmasked frames refused, the server's frames unmasked."""

from __future__ import annotations

import os
import struct

import pytest

from mxjob_controller.local.apiserver.encoding import websocket as ws


def client_frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    """A frame as a client sends it: masked."""
    mask = os.urandom(4)
    size = len(payload)
    length = bytes([0x80 | size]) if size < 126 else (bytes([0x80 | 126]) + struct.pack(">H", size) if size < 65536
                                                     else bytes([0x80 | 127]) + struct.pack(">Q", size))
    return bytes([(0x80 if fin else 0) | opcode]) + length + mask + bytes(b ^ mask[i % 4] for i, b in
                                                                          enumerate(payload))


def test_the_accept_key_is_rfc_6455s():
    assert ws.accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="   # the RFC's own example


@pytest.mark.parametrize("size", [0, 125, 126, 65535, 65536, 300_000])
def test_a_clients_masked_frames_are_read_back_whole_however_the_bytes_arrive(size):
    payload = os.urandom(size)
    wire = client_frame(ws.BINARY, payload) + client_frame(ws.PING, b"hi") + client_frame(ws.CLOSE, b"\x03\xe8")
    parser = ws.FrameParser()
    step = max(1, len(wire) // 7)
    messages = [m for i in range(0, len(wire), step) for m in parser.feed(wire[i:i + step])]
    assert messages == [(ws.BINARY, payload), (ws.PING, b"hi"), (ws.CLOSE, b"\x03\xe8")]


def test_fragments_are_joined_around_a_control_frame():
    wire = client_frame(ws.BINARY, b"one ", fin=False) + client_frame(ws.PING, b"") + \
        client_frame(ws.CONTINUATION, b"two", fin=True)
    assert ws.FrameParser().feed(wire) == [(ws.PING, b""), (ws.BINARY, b"one two")]


def test_an_unmasked_frame_from_a_client_is_refused_and_the_servers_are_unmasked():
    with pytest.raises(ws.WebSocketError, match="unmasked"):
        ws.FrameParser().feed(ws.frame(ws.BINARY, b"x"))
    assert ws.frame(ws.BINARY, b"abc") == b"\x82\x03abc"
    assert ws.frame(ws.BINARY, b"a" * 200)[:4] == b"\x82\x7e\x00\xc8"
    assert ws.frame(ws.BINARY, b"a" * 70000)[:10] == b"\x82\x7f" + struct.pack(">Q", 70000)
