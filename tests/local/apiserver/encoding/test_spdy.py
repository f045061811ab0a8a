"""``encoding/spdy.py``: SPDY/3.1 frames both ways, pure: header blocks compressed in one context per direction with
the SPDY/3 dictionary, frames cut anywhere still parsed whole, data frames with FIN, the control frames a
port-forward session meets. (kubectl's own spdystream speaking to it: tests/local/apiserver/kinds/
test_port_forward.py.)"""

from __future__ import annotations

import zlib

import pytest

from mxjob_controller.local.apiserver.encoding import spdy


def test_the_dictionary_is_spdy3s():
    assert len(spdy.DICTIONARY) == 1423
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2   # the DICTID a SPDY/3 zlib stream names
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b"charset=iso-8859-1,utf-,*,enq=0.")


def test_frames_round_trip_with_one_header_context_per_direction_however_the_bytes_arrive():
    client, server = spdy.FrameWriter(), spdy.FrameParser()
    wire = b"".join([
        client.syn_stream(1, {"streamType": "error", "port": "8080", "requestID": "0"}),
        client.syn_stream(3, {"streamType": "data", "port": "8080", "requestID": "0"}),   # reuses the context
        spdy.FrameWriter.data(3, b"GET / HTTP/1.0\r\n\r\n"), spdy.FrameWriter.data(3, b"", fin=True),
        client.ping(7), client.rst_stream(1, spdy.RST_CANCEL), client.goaway(3)])
    frames = [f for i in range(0, len(wire), 5) for f in server.feed(wire[i:i + 5])]   # 5 bytes at a time
    assert frames == [
        spdy.ControlFrame(spdy.SYN_STREAM, 0, 1, {"streamtype": "error", "port": "8080", "requestid": "0"}),
        spdy.ControlFrame(spdy.SYN_STREAM, 0, 3, {"streamtype": "data", "port": "8080", "requestid": "0"}),
        spdy.DataFrame(3, 0, b"GET / HTTP/1.0\r\n\r\n"), spdy.DataFrame(3, spdy.FLAG_FIN, b""),
        spdy.ControlFrame(spdy.PING, 0, value=7), spdy.ControlFrame(spdy.RST_STREAM, 0, 1, value=spdy.RST_CANCEL),
        spdy.ControlFrame(spdy.GOAWAY, 0, 3, value=0)]
    assert frames[3].fin and not frames[2].fin


def test_a_reply_is_read_back_by_a_fresh_peer_and_large_data_is_cut_into_frames():
    writer, reader = spdy.FrameWriter(), spdy.FrameParser()
    [reply] = reader.feed(writer.syn_reply(5, {}))
    assert (reply.type, reply.stream_id, reply.headers) == (spdy.SYN_REPLY, 5, {})
    big = bytes(range(256)) * (70_000)   # 17.9 MB: more than one frame holds
    frames = reader.feed(spdy.FrameWriter.data(5, big, fin=True))
    assert [len(f.data) for f in frames] == [spdy.MAX_FRAME, len(big) - spdy.MAX_FRAME]
    assert b"".join(f.data for f in frames) == big and [f.fin for f in frames] == [False, True]


@pytest.mark.parametrize(("wire", "says"), [
    (b"\x80\x02\x00\x01\x00\x00\x00\x00", "SPDY version 2: only 3 is spoken"),
    (b"\x80\x03\x00\x01\x00\x00\x00\x0c" + b"\x00" * 10 + b"\xff\xff", "a header block that does not inflate"),
])
def test_what_is_not_spdy3_is_refused(wire, says):
    with pytest.raises(spdy.SpdyError, match=says):
        spdy.FrameParser().feed(wire)
