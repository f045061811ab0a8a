"""SPDY/3.1 framing, the stream multiplexing kubectl speaks for ``port-forward`` (client-go's ``spdystream``).

    parser = FrameParser()
    for frame in parser.feed(received_bytes): ...      # DataFrame or ControlFrame, whole ones only
    writer = FrameWriter()
    sock.sendall(writer.syn_reply(stream_id, {}))       # header blocks compressed with the connection's context

A frame is 8 bytes of head then its payload. Control frames (first bit set): version 3, a 16-bit type, 8 bits of
flags, a 24-bit length; SYN_STREAM, SYN_REPLY and HEADERS carry a header block, compressed with zlib and the SPDY/3
dictionary in one context per direction for the whole connection (each block ends in a sync flush). Data frames: a
31-bit stream id, flags (``FIN`` ends the sender's half of the stream), a 24-bit length. Header names are lower
case; a value holding several is joined by NUL bytes. Pure: bytes in, frames out; bytes out.

Flow control (WINDOW_UPDATE) is read and not enforced, as ``spdystream``, kubectl's side, does.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 1, 2, 3, 4, 6, 7, 8, 9
FLAG_FIN = 0x01
MAX_FRAME = (1 << 24) - 1
RST_PROTOCOL_ERROR, RST_INVALID_STREAM, RST_REFUSED_STREAM, RST_CANCEL = 1, 2, 3, 5

# The SPDY/3 header compression dictionary (draft 3, 2.6.10.1): these names, each with a 4-byte length in front,
# then this text, 1,423 bytes in all. Both sides must use it to the byte, or inflating fails.
_DICTIONARY_WORDS = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location", "content-md5",
    "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host", "if-match",
    "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
    "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer", "retry-after",
    "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via", "warning",
    "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie",
    "keep-alive", "origin",
)
_DICTIONARY_TEXT = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.")
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _DICTIONARY_WORDS) + _DICTIONARY_TEXT.encode()


class SpdyError(Exception):
    """The peer sent what is not SPDY/3.1: the connection cannot go on."""


@dataclass(frozen=True, slots=True)
class DataFrame:
    stream_id: int
    flags: int
    data: bytes

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


@dataclass(frozen=True, slots=True)
class ControlFrame:
    type: int
    flags: int
    stream_id: int = 0                    # SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE
    headers: dict[str, str] = field(default_factory=dict)
    value: int = 0                        # RST_STREAM's status, PING's id, GOAWAY's status, WINDOW_UPDATE's delta

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)


Frame = DataFrame | ControlFrame


def header_block(headers: Mapping[str, str]) -> bytes:
    """An uncompressed header block: a count, then each name and value with a 4-byte length."""
    out = [struct.pack(">I", len(headers))]
    for name, value in headers.items():
        key, val = name.lower().encode(), value.encode()
        out += [struct.pack(">I", len(key)), key, struct.pack(">I", len(val)), val]
    return b"".join(out)


def parse_header_block(block: bytes) -> dict[str, str]:
    try:
        (count,), pos, headers = struct.unpack_from(">I", block), 4, {}
        for _ in range(count):
            (length,) = struct.unpack_from(">I", block, pos)
            name = block[pos + 4:pos + 4 + length].decode()
            pos += 4 + length
            (length,) = struct.unpack_from(">I", block, pos)
            headers[name.lower()] = block[pos + 4:pos + 4 + length].decode().replace("\x00", ",")
            pos += 4 + length
    except (struct.error, UnicodeDecodeError) as e:
        raise SpdyError(f"a malformed header block: {e}") from None
    return headers


class FrameParser:
    """Whole frames out of the bytes received so far (one per connection: the header context carries over)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while len(self._buffer) >= 8:
            first, second = struct.unpack_from(">II", self._buffer)
            length = second & 0xFFFFFF
            if len(self._buffer) < 8 + length:
                break
            payload = bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            flags = second >> 24
            if not first & 0x80000000:
                frames.append(DataFrame(first & 0x7FFFFFFF, flags, payload))
                continue
            version, kind = (first >> 16) & 0x7FFF, first & 0xFFFF
            if version != VERSION:
                raise SpdyError(f"SPDY version {version}: only 3 is spoken")
            frames.append(self._control(kind, flags, payload))
        return frames

    def _headers(self, compressed: bytes) -> dict[str, str]:
        try:
            return parse_header_block(self._inflate.decompress(compressed))
        except zlib.error as e:
            raise SpdyError(f"a header block that does not inflate: {e}") from None

    def _control(self, kind: int, flags: int, payload: bytes) -> ControlFrame:
        def word(at: int) -> int:
            if len(payload) < at + 4:
                raise SpdyError(f"control frame {kind} too short ({len(payload)} bytes)")
            return struct.unpack_from(">I", payload, at)[0]
        if kind == SYN_STREAM:
            return ControlFrame(kind, flags, word(0) & 0x7FFFFFFF, self._headers(payload[10:]))
        if kind in (SYN_REPLY, HEADERS):
            return ControlFrame(kind, flags, word(0) & 0x7FFFFFFF, self._headers(payload[4:]))
        if kind in (RST_STREAM, WINDOW_UPDATE):
            return ControlFrame(kind, flags, word(0) & 0x7FFFFFFF, value=word(4) & 0x7FFFFFFF)
        if kind == PING:
            return ControlFrame(kind, flags, value=word(0))
        if kind == GOAWAY:
            return ControlFrame(kind, flags, word(0) & 0x7FFFFFFF, value=word(4))
        return ControlFrame(kind, flags)   # SETTINGS and the rest: nothing this server acts on


class FrameWriter:
    """Frames to send (one per connection: the header context carries over)."""

    def __init__(self) -> None:
        self._deflate = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_DEFAULT_STRATEGY, zdict=DICTIONARY)

    @staticmethod
    def _control(kind: int, flags: int, payload: bytes) -> bytes:
        return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(payload)) + payload

    def _compressed(self, headers: Mapping[str, str]) -> bytes:
        return self._deflate.compress(header_block(headers)) + self._deflate.flush(zlib.Z_SYNC_FLUSH)

    def syn_stream(self, stream_id: int, headers: Mapping[str, str], flags: int = 0) -> bytes:
        return self._control(SYN_STREAM, flags, struct.pack(">IIH", stream_id, 0, 0) + self._compressed(headers))

    def syn_reply(self, stream_id: int, headers: Mapping[str, str], flags: int = 0) -> bytes:
        return self._control(SYN_REPLY, flags, struct.pack(">I", stream_id) + self._compressed(headers))

    def rst_stream(self, stream_id: int, status: int) -> bytes:
        return self._control(RST_STREAM, 0, struct.pack(">II", stream_id, status))

    def ping(self, ping_id: int) -> bytes:
        return self._control(PING, 0, struct.pack(">I", ping_id))

    def goaway(self, last_stream_id: int, status: int = 0) -> bytes:
        return self._control(GOAWAY, 0, struct.pack(">II", last_stream_id, status))

    @staticmethod
    def data(stream_id: int, data: bytes, fin: bool = False) -> bytes:
        """One data frame per ``MAX_FRAME`` bytes (the last one carrying ``fin``)."""
        chunks = [data[i:i + MAX_FRAME] for i in range(0, len(data), MAX_FRAME)] or [b""]
        return b"".join(struct.pack(">II", stream_id & 0x7FFFFFFF,
                                    ((FLAG_FIN if fin and i == len(chunks) - 1 else 0) << 24) | len(chunk)) + chunk
                        for i, chunk in enumerate(chunks))
