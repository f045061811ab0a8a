"""The HTTP/1.1 framing rules (``runtime/http1``) that the client's transport reads answers by and the API server
reads requests by: what issue 45 found accepted (a ``Content-Length: ²``, a status ``2²0``, chunk sizes ``-1``,
``0x2``, ``0_2``, ``Transfer-Encoding`` with ``Content-Length``) refused; and a seeded property test: any byte
string, valid, mutated or random, either parses to the answer ``h11`` reads from it or is refused with a
:class:`FramingError`, never anything else.
"""

from __future__ import annotations

import io
import random

import h11
import pytest

from mxjob_controller.runtime import http1
from mxjob_controller.runtime.client.transport import parse_answer

OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


def answer(head: bytes, body: bytes = b"") -> bytes:
    return OK_HEAD + head + b"\r\n" + body


@pytest.mark.parametrize("data", [
    answer("Content-Length: ²\r\n".encode()),
    answer("Content-Length: \u0661\r\n".encode()),   # an Arabic-Indic digit: str.isdigit() is true for it too
    b"HTTP/1.1 2\xc2\xb20 OK\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 20 OK\r\n\r\n",
    b"HTTP/1.1 2000 OK\r\n\r\n",
    b"HTTP/2.0 200 OK\r\n\r\n",
    b"HTTP/1.1 200 O\x00K\r\n\r\n",
    b"HTTP/1.1 200 OK\rContent-Length: 0\r\n\r\n",
    answer(b"Content-Length: -1\r\n"),
    answer(b"Content-Length: +2\r\n", b"ab"),
    answer(b"Content-Length: 0x2\r\n", b"ab"),
    answer(b"Content-Length: 2 2\r\n", b"ab"),
    answer(b"Content-Length: 2, 2\r\n", b"ab"),
    answer(b"Content-Length:\r\n"),
    answer(b"Content-Length: 2\r\nContent-Length: 3\r\n", b"abc"),
    answer(b"Content-Length: 12345678901234567890\r\n"),
    answer(b"Transfer-Encoding: chunked\r\n", b"-1\r\nab\r\n0\r\n\r\n"),
    answer(b"Transfer-Encoding: chunked\r\n", b"0x2\r\nab\r\n0\r\n\r\n"),
    answer(b"Transfer-Encoding: chunked\r\n", b"0_2\r\nab\r\n0\r\n\r\n"),
    answer(b"Transfer-Encoding: chunked\r\n", b" 2\r\nab\r\n0\r\n\r\n"),
    answer(b"Transfer-Encoding: chunked\r\n", b"+2\r\nab\r\n0\r\n\r\n"),
    answer(b"Transfer-Encoding: chunked\r\n", b"11111111111111111\r\nab\r\n0\r\n\r\n"),
    answer(b"Transfer-Encoding: chunked\r\n", b"2\r\nabX\r\n0\r\n\r\n"),     # the data does not end in CRLF
    answer(b"Transfer-Encoding: chunked\r\n", b"2\nab\r\n0\r\n\r\n"),        # a chunk line needs CRLF
    answer(b"Transfer-Encoding: chunked\r\n", b"2;x\x00\r\nab\r\n0\r\n\r\n"),
    answer(b"Transfer-Encoding: chunked\r\nContent-Length: 6\r\n", b"0\r\n\r\n"),
    answer(b"Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", b"0\r\n\r\n"),
    answer(b"Transfer-Encoding: gzip, chunked\r\n", b"0\r\n\r\n"),
    answer(b"Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", b"0\r\n\r\n"),
    answer(b"Transfer-Encoding: identity\r\n", b"ab"),
    answer(b"X-Bad : value\r\n"),
    answer(b"X Bad: value\r\n"),
    answer(b"X-Bad: a\x01b\r\n"),
    answer(b"no colon at all\r\n"),
    b"HTTP/1.1 200 OK\r\n folded: first\r\n\r\n",
    b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n",
    answer(b"Content-Length: 5\r\n", b"abc"),                               # ends early
    answer(b"Transfer-Encoding: chunked\r\n", b"5\r\nabc"),
    answer(b"Transfer-Encoding: chunked\r\n", b"0\r\nX-Trailer: t\r\n"),     # the trailers do not end
    b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n",
    b"",
], ids=lambda d: repr(d[:70]))
def test_answers_that_break_framing_are_refused(data):
    with pytest.raises(http1.FramingError):
        parse_answer(data)


def test_what_framing_allows_is_read_as_meant():
    got, keep, rest = parse_answer(answer(b"Content-Length: 2\r\nContent-Length:  2 \r\n", b"ab\r\n"))
    assert (got.data, keep, rest) == (b"ab", True, b"\r\n")   # equal duplicates are one (as Go merges them)
    got, keep, _ = parse_answer(answer(b"Transfer-Encoding: Chunked\r\nConnection: keep-alive, Close\r\n",
                                       b"2;name=value\r\nab\r\n1 \r\nc\r\n0\r\nX-Trailer: t\r\n\r\n"))
    assert (got.data, keep) == (b"abc", False)
    got, keep, _ = parse_answer(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                                b"HTTP/1.0 200\nX-Folded: a\n  b\nContent-Length: 1\n\nz")
    assert (got.status, got.headers["x-folded"], got.data, keep) == (200, "a b", b"z", False)
    got, keep, _ = parse_answer(answer(b"", b"until the end"))
    assert (got.data, keep) == (b"until the end", False)
    for status in (204, 304):
        got, keep, rest = parse_answer(b"HTTP/1.1 %d X\r\nContent-Length: 4\r\n\r\n" % status)
        assert (got.data, keep, rest) == (b"", True, b"")
    got, _, rest = parse_answer(answer(b"Content-Length: 4\r\n", b""), method="HEAD")
    assert (got.data, rest) == (b"", b"")


def test_limits_bound_what_is_read():
    many = b"".join(b"X-%d: v\r\n" % i for i in range(http1.MAX_HEADERS + 1))
    with pytest.raises(http1.FramingError) as refused:
        parse_answer(answer(many))
    assert refused.value.status == 431
    with pytest.raises(http1.FramingError):
        parse_answer(answer(b"X-Long: " + b"v" * http1.MAX_LINE + b"\r\n"))
    trailers = b"".join(b"T-%d: v\r\n" % i for i in range(http1.MAX_TRAILERS + 1))
    with pytest.raises(http1.FramingError):
        parse_answer(answer(b"Transfer-Encoding: chunked\r\n", b"0\r\n" + trailers + b"\r\n"))
    with pytest.raises(http1.FramingError):
        parse_answer(answer(b"Transfer-Encoding: chunked\r\n", b"1;" + b"e" * http1.MAX_CHUNK_LINE + b"\r\n"))
    with pytest.raises(http1.FramingError) as refused:
        http1.read_chunked(io.BytesIO(b"4\r\nabcd\r\n0\r\n\r\n"), max_body=3)
    assert refused.value.status == 413


@pytest.mark.parametrize(("line", "status"), [
    (b"GET / HTTP/1.1", None), (b"PATCH /a?b=c HTTP/1.0", None), (b"GET /  HTTP/1.1", 400), (b"GET HTTP/1.1", 400),
    (b"G(T / HTTP/1.1", 400), (b"GET / HTTP/2.0", 505), (b"GET / HTTP/1.x", 400), (b"GET /\x00 HTTP/1.1", 400),
    (b"GET /\x7f HTTP/1.1", 400),
])
def test_request_lines(line, status):
    if status is None:
        method, target, version = http1.parse_request_line(line)
        assert f"{method} {target} {version}".encode() == line
    else:
        with pytest.raises(http1.FramingError) as refused:
            http1.parse_request_line(line)
        assert refused.value.status == status


def test_request_framing_and_keep_alive():
    def framing(*pairs: tuple[str, str]) -> http1.Framing:
        return http1.body_framing(http1.header_map(list(pairs)), request=True)

    assert framing() == http1.Framing(http1.NO_BODY)            # a request without either has no body
    assert framing(("content-length", "0")) == http1.Framing(http1.NO_BODY)
    assert framing(("content-length", "7"), ("content-length", "7")) == http1.Framing(http1.LENGTH, 7)
    assert framing(("transfer-encoding", "chunked")) == http1.Framing(http1.CHUNKED)
    with pytest.raises(http1.FramingError) as refused:
        framing(("transfer-encoding", "gzip"))
    assert refused.value.status == 501
    keep = http1.keep_alive
    assert keep("HTTP/1.1", {}) and not keep("HTTP/1.0", {})
    assert keep("HTTP/1.0", {"connection": ["Keep-Alive"]}) and not keep("HTTP/1.1", {"connection": ["x, close"]})


# --- the property: h11's reading, or a refusal ------------------------------------------------------------------

def h11_reading(data: bytes, method: str = "GET") -> tuple[int, dict[str, str], bytes] | None:
    """The final answer h11 reads from ``data`` followed by the connection's end (status, headers joined as the
    transport joins them, but for the framing headers h11 normalizes, and body); None when h11 refuses it."""
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=1 << 20)
    conn.send(h11.Request(method=method, target="/", headers=[("Host", "x")]))
    conn.send(h11.EndOfMessage())
    conn.receive_data(data)
    conn.receive_data(b"")
    response, body = None, b""
    while True:
        try:
            event = conn.next_event()
        except h11.ProtocolError:
            return None
        if isinstance(event, h11.Response):
            response = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, h11.EndOfMessage):
            assert response is not None
            return response.status_code, _joined(response.headers), body
        elif not isinstance(event, h11.InformationalResponse):   # NEED_DATA after the end, ConnectionClosed
            return None


def _joined(pairs: object) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in pairs:  # type: ignore[attr-defined]
        key = name.decode("latin-1").lower()
        if key not in ("content-length", "transfer-encoding"):
            text = value.decode("latin-1")
            out[key] = f"{out[key]}, {text}" if key in out else text
    return out


PIECES = [b"\r\n", b"\n", b"\r", b" ", b"\t", b"\x00", b":", b";", b",", b"-", b"0x", b"_", b"\xb2", b"0", b"1",
          b"f", b"HTTP/1.1 200 OK\r\n", b"Content-Length: 3\r\n", b"Transfer-Encoding: chunked\r\n",
          b"Connection: close\r\n", b"\r\n\r\n", b"0\r\n\r\n", b"HTTP/1.1 100 Continue\r\n\r\n"]


def generated_answer(rng: random.Random) -> bytes:
    """A well-formed answer of random shape: interim answers, versions, reasons, line ends, headers, framing by
    length, chunks (extensions, trailers) or the connection's end, and maybe bytes after it."""
    out = b""
    for _ in range(rng.choice([0, 0, 0, 1, 2])):
        out += rng.choice([b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"])
    eol = b"\r\n" if rng.random() < 0.85 else b"\n"
    status = rng.choice([200, 201, 204, 299, 304, 404, 500])
    reason = rng.choice([b" OK", b"", b" ", b" Not Found", b" a\treason", b" \xe9t\xe9"])
    out += rng.choice([b"HTTP/1.1", b"HTTP/1.0"]) + b" %d" % status + reason + eol
    headers = [b"Content-Type: application/json", b"X-Empty:", b"x-multi: a", b"X-Multi:  b ", b"Audit-Id: 1-2",
               b"X-Obs: \xff\xfe", b"Connection: keep-alive", b"Connection: close"]
    for header in rng.sample(headers, rng.randint(0, 4)):
        out += header + eol
        if rng.random() < 0.05:
            out += b"   folded more" + eol
    body = rng.randbytes(rng.randint(0, 30))
    framing = rng.choice(["length", "length", "chunked", "chunked", "close"])
    if framing == "length":
        out += b"Content-Length: %d" % len(body) + eol
        if rng.random() < 0.1:
            out += b"Content-Length: %d" % len(body) + eol
        out += eol + body
    elif framing == "chunked":
        out += rng.choice([b"Transfer-Encoding: chunked", b"transfer-encoding: Chunked"]) + eol + eol
        rest = body
        while rest:
            size = rng.randint(1, len(rest))
            ext = rng.choice([b"", b"", b";ext", b";a=b;c=\"d\"", b" ", b"\t"])
            digits = rng.choice([b"%x", b"%X", b"%04x"]) % size
            out += digits + ext + b"\r\n" + rest[:size] + b"\r\n"
            rest = rest[size:]
        out += b"0\r\n" + rng.choice([b"", b"X-Trailer: t\r\n", b"A: 1\r\nB: 2\r\n"]) + b"\r\n"
    else:
        out += eol + body
    return out + rng.choice([b"", b"", b"", b"\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"])


def mutated(rng: random.Random, data: bytes) -> bytes:
    """``data`` with one to three random edits: a byte changed, a piece inserted, a range dropped or repeated,
    the end cut."""
    for _ in range(rng.randint(1, 3)):
        at = rng.randint(0, len(data))
        edit = rng.randrange(5)
        if edit == 0 and data:
            at = min(at, len(data) - 1)
            data = data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]
        elif edit == 1:
            data = data[:at] + rng.choice(PIECES) + data[at:]
        elif edit == 2:
            data = data[:at] + data[at + rng.randint(1, 8):]
        elif edit == 3:
            data = data[:at] + data[at:at + rng.randint(1, 12)] * 2 + data[at + 12:]
        else:
            data = data[:at]
    return data


def cases(seed: int, count: int) -> list[bytes]:
    """``count`` inputs from ``seed``: a fifth well-formed, three fifths mutated, a fifth random bytes or pieces."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        kind = i % 5
        if kind == 0:
            out.append(generated_answer(rng))
        elif kind < 4:
            out.append(mutated(rng, generated_answer(rng)))
        elif rng.random() < 0.5:
            out.append(rng.randbytes(rng.randint(0, 60)))
        else:
            out.append(b"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12))))
    return out


def test_any_bytes_parse_as_h11_reads_them_or_are_refused():
    accepted = refused = 0
    for data in cases(seed=45, count=4000):
        try:
            got, _keep, _rest = parse_answer(data)
        except http1.FramingError:   # nothing else may escape: not ValueError, not IndexError
            refused += 1
            continue
        accepted += 1
        theirs = h11_reading(data)
        assert theirs is not None, f"accepted what h11 refuses: {data!r}"
        mine = (got.status, {k: v for k, v in got.headers.items()
                             if k not in ("content-length", "transfer-encoding")}, got.data)
        assert mine == theirs, f"read otherwise than h11: {data!r}"
    assert accepted > 800 and refused > 800   # the cases reach both sides
