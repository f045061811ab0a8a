"""HTTP/1.1 message framing (RFC 9112), one strictness for both ends: the API client's transport reads answers with
it and the embedded API server reads requests with it.

Why one module: the two ends used to parse HTTP/1.1 each its own way, and the laxer one (the client) could be
desynced: bytes a server sent after an answer were read as the next request's answer, ``Content-Length: ²``
escaped as ``ValueError``, a chunk size of ``-1`` read until the peer closed. Here every rule is written once:

- pure functions on top: the status line, the request line, a header line (a token name right before the colon;
  a value without control characters but HTAB; an obsolete folded line joins the line before with a space, as
  RFC 9112 §5.2 lets a recipient do, and is refused at the start of a block), ``Content-Length`` (ASCII digits
  only, at most 19; repeated headers must all be equal and are then one, as Go's ``net/http`` merges them; a
  comma list in one header is refused, as Go refuses it), a chunk-size line (1 to 16 hex digits, then nothing but
  an extension, which is ignored, and trailing blanks; CRLF), the body's framing (RFC 9112 §6.3: no body for HEAD,
  1xx, 204, 304; ``Transfer-Encoding`` other than one ``chunked`` refused; ``Transfer-Encoding`` with
  ``Content-Length`` refused, never "chunked wins": either reading could be the wrong one) and whether the
  connection may carry another message (``Connection`` tokens, HTTP/1.0);
- readers below, on any buffered binary file (``readline(limit)``, ``read(n)``; the caller bounds each read in
  time): a line (CRLF or a bare LF in the head, as RFC 9112 §2.2 allows a recipient; a bare CR is refused), a
  header block (count and size limits), a body by length or by chunks (a chunk's data must end with CRLF; trailers
  read and bounded like headers, then dropped).

Every refusal is a :class:`FramingError` carrying the status a server answers it with (400, 414, 431, 501, 505);
a message that ends early is an :class:`IncompleteMessageError` (one of them). Nothing here raises anything else on any
input: the tests feed it random and mutated bytes and compare what it accepts with ``h11``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

MAX_LINE = 65536              # bytes of a request line, a status line or a header line (http.server/http.client)
MAX_HEADERS = 100             # header lines of one message (http.client's limit)
MAX_HEADER_BYTES = 1 << 20    # bytes of one header block (kube-apiserver's MaxHeaderBytes)
MAX_CHUNK_LINE = 4096         # bytes of a chunk-size line, extensions included
MAX_TRAILERS = 100            # trailer lines after the last chunk
MAX_TRAILER_BYTES = 64 * 1024
MAX_LENGTH_DIGITS = 19        # a Content-Length up to 10**19 - 1: it fits in Go's int64 as parsed by ParseUint

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# name ":" OWS value OWS, the value without control characters but HTAB (obs-text allowed), then CRLF or LF.
_HEADER_LINE = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*((?:[^\x00-\x20\x7f]"
                          rb"(?:[^\x00-\x08\x0a-\x1f\x7f]*[^\x00-\x20\x7f])?)?)[ \t]*\r?\n")
# The same, of a whole block decoded as latin-1, one match per line (``^``: a match starts where a line does and
# ends at its line end, so a block whose every line is a header has exactly as many matches as lines).
_HEADER_LINES = re.compile(_HEADER_LINE.pattern.decode("latin-1").join(["(?m)^", ""]))
_STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\x00-\x08\x0a-\x1f\x7f]*))?\r?\n")
_REQUEST_VERSION = re.compile(rb"HTTP/([0-9]{1,3})\.([0-9]{1,3})")
_TARGET = re.compile(rb"[\x21-\x7e\x80-\xff]+")
_LENGTH = re.compile(f"[0-9]{{1,{MAX_LENGTH_DIGITS}}}")
_CHUNK_LINE = re.compile(rb"([0-9a-fA-F]{1,16})(?:;[^\x00-\x08\x0a-\x1f\x7f]*)?[ \t]*\r\n")

Headers = list[tuple[str, str]]   # (lower-cased name, value), in order; values latin-1 decoded
HeaderMap = Mapping[str, list[str]]   # lower-cased name → its values, in order (see header_map)


class FramingError(ValueError):
    """The message breaks HTTP/1.1 framing; ``status`` is what a server answers it with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class IncompleteMessageError(FramingError):
    """The connection ended in the middle of a message (or before its first byte: ``at_start``)."""

    def __init__(self, message: str, at_start: bool = False) -> None:
        super().__init__(message)
        self.at_start = at_start


class Readable(Protocol):
    """What the readers read from: a buffered binary file (``io.BufferedReader``, ``io.BytesIO``)."""

    def readline(self, size: int = -1, /) -> bytes: ...

    def read(self, size: int = -1, /) -> bytes: ...


# --- pure parsing -------------------------------------------------------------------------------------------------

def parse_status_line(line: bytes) -> tuple[str, int, str]:
    """``HTTP/1.x SP 3DIGIT [SP reason] CRLF`` → (version, status, reason). Only HTTP/1.0 and 1.1 answers."""
    matched = _STATUS_LINE.fullmatch(line)
    if matched is None:
        raise FramingError(f"not an HTTP/1.x status line: {line[:100]!r}")
    minor, status, reason = matched.group(1, 2, 3)
    return "HTTP/1.1" if minor == b"1" else "HTTP/1.0", int(status), reason.decode("latin-1") if reason else ""


def parse_request_line(line: bytes) -> tuple[str, str, str]:
    """``METHOD SP TARGET SP HTTP/1.x`` (its line end stripped) → (method, target, "HTTP/1.0" | "HTTP/1.1"), as Go's
    ``readRequest`` takes it, its refusals worded as Go words them: 400, or 505 for another major version."""
    words = line.split(b" ")
    if len(words) != 3 or not words[1]:
        raise FramingError(f"malformed HTTP request {_go_quote(line[:256])}")
    method, target, version = words
    matched = _REQUEST_VERSION.fullmatch(version)
    if matched is None:
        raise FramingError(f"malformed HTTP version {_go_quote(version[:64])}")
    if matched.group(1) != b"1":
        raise FramingError("unsupported protocol version", 505)
    if not _TOKEN.fullmatch(method):
        raise FramingError(f"invalid method {_go_quote(method[:64])}")
    if not _TARGET.fullmatch(target):
        raise FramingError(f"malformed HTTP request {_go_quote(line[:256])}")
    return (method.decode("ascii"), target.decode("latin-1"),
            "HTTP/1.0" if matched.group(2) == b"0" else "HTTP/1.1")


def parse_header_lines(lines: list[bytes]) -> Headers:
    """Header lines (each with its line end) → (name, value) pairs. A folded line (starting with blanks) is joined
    to the line before with one space, before either is parsed (as h11 and Go's textproto join them); one that
    comes first is refused."""
    found = _HEADER_LINES.findall(b"".join(lines).decode("latin-1"))
    if len(found) != len(lines):   # malformed, or folded (a name never starts with a blank): the careful way
        return _parse_folded_lines(lines)
    return [(name.lower(), value) for name, value in found]


def _parse_folded_lines(lines: list[bytes]) -> Headers:
    headers: Headers = []
    for index, first in enumerate(lines):
        if first[:1] in (b" ", b"\t"):
            if index == 0:
                raise FramingError(f"malformed header line {first[:100]!r}: a continuation first")
            continue   # joined to the line it continues, below
        line, follows = first, index + 1
        while follows < len(lines) and lines[follows][:1] in (b" ", b"\t"):
            line = line.rstrip(b"\r\n") + b" " + lines[follows].lstrip(b" \t")
            follows += 1
        matched = _HEADER_LINE.fullmatch(line)
        if matched is None:
            raise FramingError(f"malformed header line {line[:100]!r}")
        headers.append((matched.group(1).lower().decode("ascii"), matched.group(2).decode("latin-1")))
    return headers


def header_map(headers: Headers) -> dict[str, list[str]]:
    """The headers by lower-cased name: every value of each, in order."""
    by_name: dict[str, list[str]] = {}
    for name, value in headers:
        if name in by_name:
            by_name[name].append(value)
        else:
            by_name[name] = [value]
    return by_name


def tokens_of(values: list[str]) -> list[str]:
    """The comma-separated tokens of a header's values, lower-cased, empty ones dropped (RFC 9110 §5.6.1)."""
    return [t for v in values for t in (p.strip().lower() for p in v.split(",")) if t]


def content_length(values: list[str]) -> int | None:
    """The body's length from the ``Content-Length`` values (None: none sent). Repeated ones must be equal (they are
    then one, as Go merges them); each must be 1 to 19 ASCII digits: no sign, no space inside, no list, no ``²``."""
    if not values:
        return None
    first = values[0].strip()
    if any(v.strip() != first for v in values[1:]):
        raise FramingError("http: message cannot contain multiple Content-Length headers; got "
                           + _go_quote_list(values))
    if not _LENGTH.fullmatch(first):
        raise FramingError(f"invalid Content-Length {first!r}")
    return int(first)


NO_BODY, LENGTH, CHUNKED, UNTIL_CLOSE = "none", "length", "chunked", "until-close"


@dataclass(frozen=True, slots=True)
class Framing:
    """How a message's body is delimited: ``kind`` (one of the constants above) and, for LENGTH, its ``length``."""

    kind: str
    length: int = 0


def body_framing(headers: HeaderMap, *, request: bool, method: str = "", status: int = 0) -> Framing:
    """RFC 9112 §6.3 for a request (``request``) or for the answer with ``status`` to a ``method`` request.
    ``Transfer-Encoding`` must be exactly one ``chunked`` (a server answers others 501, Go's code) and never comes
    with ``Content-Length``; both are checked even where no body follows (HEAD, 1xx, 204, 304), as h11 checks
    them. A request without either has no body; an answer has one until the connection ends."""
    encodings = headers.get("transfer-encoding")
    lengths = headers.get("content-length") or []
    if encodings is None and len(lengths) == 1 and _LENGTH.fullmatch(lengths[0]):   # the usual case, at once
        framing = Framing(LENGTH, int(lengths[0])) if lengths[0].strip("0") else Framing(NO_BODY)
    elif encodings:
        if len(encodings) > 1 or encodings[0].strip().lower() != "chunked":
            raise FramingError(f"unsupported transfer encoding: {_go_quote_list(encodings)}", 501)
        if lengths:
            raise FramingError("http: message cannot contain both Transfer-Encoding and Content-Length")
        framing = Framing(CHUNKED)
    else:
        length = content_length(lengths)
        if length is None:
            framing = Framing(NO_BODY if request else UNTIL_CLOSE)
        else:
            framing = Framing(LENGTH, length) if length else Framing(NO_BODY)
    if not request and (method == "HEAD" or 100 <= status < 200 or status in (204, 304)):
        return Framing(NO_BODY)
    return framing


def keep_alive(version: str, headers: HeaderMap) -> bool:
    """Whether the connection may carry another message after this one: HTTP/1.1 unless ``Connection: close``;
    HTTP/1.0 only with ``Connection: keep-alive``."""
    values = headers.get("connection")
    if not values:
        return version == "HTTP/1.1"
    tokens = tokens_of(values)
    if "close" in tokens:
        return False
    return version == "HTTP/1.1" or "keep-alive" in tokens


def parse_chunk_size(line: bytes) -> int:
    """A chunk-size line (with its CRLF) → the size: hex digits only (no sign, ``0x``, ``_`` or blank before them),
    at most 16; an extension after ``;`` is ignored; trailing blanks are tolerated (as h11 tolerates them)."""
    matched = _CHUNK_LINE.fullmatch(line)
    if matched is None:
        raise FramingError(f"malformed chunk size line {line[:40]!r}")
    return int(matched.group(1), 16)


# --- reading from a buffered file ---------------------------------------------------------------------------------

def read_line(rfile: Readable, limit: int, what: str, status: int = 431) -> bytes:
    """One line with its line end; FramingError(``status``) past ``limit`` bytes, IncompleteMessageError at the end."""
    line = rfile.readline(limit + 1)
    if len(line) > limit:
        raise FramingError(f"{what} longer than {limit} bytes", status)
    if not line.endswith(b"\n"):
        raise IncompleteMessageError(f"the connection ended in the {what}", at_start=not line)
    return line


def read_header_block(rfile: Readable, *, max_headers: int = MAX_HEADERS, max_bytes: int = MAX_HEADER_BYTES,
                      what: str = "header") -> Headers:
    """The header lines up to the blank line, parsed by :func:`parse_header_lines`; at most ``max_headers`` lines
    and ``max_bytes`` bytes (431). (One loop, not a call per line: it runs per message.)"""
    lines: list[bytes] = []
    readline = rfile.readline
    budget = max_bytes
    while True:
        limit = min(MAX_LINE, budget)
        line = readline(limit + 1)
        if line in (b"\r\n", b"\n"):
            return parse_header_lines(lines)
        if len(line) > limit:
            raise FramingError(f"{what} line longer than {limit} bytes", 431)
        if not line.endswith(b"\n"):
            raise IncompleteMessageError(f"the connection ended in the {what}s")
        budget -= len(line)
        if len(lines) >= max_headers:
            raise FramingError(f"more than {max_headers} {what}s", 431)
        lines.append(line)


def read_exactly(rfile: Readable, length: int) -> bytes:
    """``length`` bytes of a body; IncompleteMessageError if the connection ends first."""
    data = rfile.read(length)
    if len(data) != length:
        raise IncompleteMessageError(f"the connection ended after {len(data)} of the body's {length} bytes")
    return data


def read_chunked(rfile: Readable, max_body: int | None = None, *, too_large: type[Exception] | None = None) -> bytes:
    """A chunked body, its trailers read (bounded) and dropped. Past ``max_body`` bytes: ``too_large`` raised (a
    FramingError(413) if none is given), before the chunk that would pass it is read."""
    parts: list[bytes] = []
    total = 0
    while True:
        size = parse_chunk_size(read_line(rfile, MAX_CHUNK_LINE, "chunk size line", 400))
        if size == 0:
            read_header_block(rfile, max_headers=MAX_TRAILERS, max_bytes=MAX_TRAILER_BYTES, what="trailer")
            return b"".join(parts)
        total += size
        if max_body is not None and total > max_body:
            if too_large is not None:
                raise too_large()
            raise FramingError(f"a chunked body larger than {max_body} bytes", 413)
        parts.append(read_exactly(rfile, size))
        end = rfile.read(2)
        if end != b"\r\n":
            if len(end) < 2 and b"\r\n".startswith(end):
                raise IncompleteMessageError("the connection ended in a chunk")
            raise FramingError("malformed chunked encoding: a chunk's data does not end with CRLF")


def _go_quote(data: bytes) -> str:
    """Bytes from the wire as Go's ``%q`` shows them: a double-quoted string with escapes."""
    return json.dumps(data.decode("iso-8859-1"))


def _go_quote_list(values: list[str]) -> str:
    """Go's ``%q`` of a ``[]string``: ``["2" "40"]``."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"
