"""Watch fan-out (issue 44, item 4): an event is encoded once per form and shared by its watchers, and a watcher's
backlog is bounded in bytes.

The attack as the issue tried it: 100 watchers that never read, then large pod events. Unfixed, each watcher
encoded (and chunk-framed) its own copy of each event: the server grew from 196 to 798 MB.
"""

from __future__ import annotations

import fcntl
import http.client
import json
import socket
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver.builtin import PODS
from mxjob_controller.local.apiserver.encoding.kubeproto import MEDIA_TYPE, read_watch_frames
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from mxjob_controller.local.apiserver.storage.watch import Event, SharedEncodings, Watcher
from tests.support import pod, wait_for

PODS_PATH = "/api/v1/namespaces/default/pods"
ROOT = Path(__file__).resolve().parents[4]
# The embedded API server alone, in a process of its own: its RSS is the server's, not the test's.
_SERVER = """
import sys
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
api = APIServer(ServerOptions()).start()
print(api.port, flush=True)
sys.stdin.read()
api.stop()
"""


def _rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of ``pid`` in bytes."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


def _request(port: int, method: str, path: str, body: object = None,
             ctype: str = "application/json") -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(method, path, data, {"Content-Type": ctype} if data is not None else {})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


def _stalled_watch(port: int, rv: str) -> socket.socket:
    """A watch whose client reads its answer's head and never more (a small receive buffer: it fills at once)."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(30)
    s.connect(("127.0.0.1", port))
    s.sendall(f"GET {PODS_PATH}?watch=1&resourceVersion={rv} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 200 ")
    return s


def _pending(s: socket.socket) -> int:
    """Bytes arrived at ``s`` and not read."""
    return struct.unpack("i", fcntl.ioctl(s.fileno(), termios.FIONREAD, b"\0\0\0\0"))[0]


def _big_pod(name: str, fill: str, size: int) -> dict:
    """A pod of about ``size`` bytes: its container's one argument (annotations are limited to 256 KiB)."""
    obj = pod(name)
    obj["spec"]["containers"][0]["args"] = [fill * size]
    return obj


@pytest.mark.integration
def test_100_stalled_watchers_and_large_pod_events_grow_the_server_by_under_100_mb():
    """100 watchers that never read, then 2.8 MB of pod events (a 1.4 MB pod created and deleted: a pod of 2.8 MB
    is itself over the stored-object limit now): the server's RSS grows by ≤ 100 MB while every watcher is being
    sent the events (each socket has started to receive them)."""
    proc = subprocess.Popen([sys.executable, "-c", _SERVER], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    watchers: list[socket.socket] = []
    try:
        port = int(proc.stdout.readline())
        code, created = _request(port, "POST", PODS_PATH, pod("warm-up"))   # every path warmed once
        assert code == 201
        code, _ = _request(port, "DELETE", f"{PODS_PATH}/warm-up")
        assert code == 200
        _, listed = _request(port, "GET", PODS_PATH)
        rv = listed["metadata"]["resourceVersion"]
        watchers = [_stalled_watch(port, rv) for _ in range(100)]

        code, body = _request(port, "POST", PODS_PATH, _big_pod("huge", "x", 2_800_000))
        assert code == 500 and body["message"] == "etcdserver: request is too large", body
        before, _ = _rss(proc.pid)
        code, created = _request(port, "POST", PODS_PATH, _big_pod("big", "a", 1_400_000))
        assert code == 201, created
        code, _ = _request(port, "DELETE", f"{PODS_PATH}/big?gracePeriodSeconds=0")   # its DELETED event: 1.4 MB more
        assert code == 200
        wait_for(lambda: all(_pending(s) > 0 for s in watchers), timeout=60, what="every watcher being sent")
        after, peak = _rss(proc.pid)
        print(f"server RSS {before >> 20} MB before, {after >> 20} MB after (peak {peak >> 20} MB)")
        assert after - before <= 100 << 20, f"the server grew by {(after - before) >> 20} MB"
        assert peak - before <= 100 << 20, f"the server's peak was {(peak - before) >> 20} MB over its start"
    finally:
        for s in watchers:
            s.close()
        proc.stdin.close()
        proc.wait(30)


@pytest.mark.integration
def test_a_watcher_over_its_byte_budget_is_closed_and_its_client_resumes():
    """A watcher whose client stalls is closed once its backlog passes its byte budget (as kube closes a slow
    watcher); its client, reading again, sees the stream end and resumes from the last version it saw, missing
    nothing."""
    with APIServer(ServerOptions(watcher_bytes=1 << 20)) as api:
        rv = str(api.store.resource_version)
        stalled = _stalled_watch(api.port, rv)
        try:
            wait_for(lambda: len(api.store.watchers(PODS.storage_key)) == 1, what="the watch registered")
            # 12 of 1 MB: what the kernel's buffers take, then one being written, then more than 1 MiB queued.
            for i in range(12):
                api.create(_big_pod(f"p{i}", "z", 1_000_000))
            wait_for(lambda: not api.store.watchers(PODS.storage_key), what="the slow watcher closed")
            stalled.settimeout(30)
            data = b""
            while chunk := stalled.recv(1 << 20):
                data += chunk
        finally:
            stalled.close()
        assert not data.endswith(b"0\r\n\r\n"), "a closed slow watcher's stream ends abruptly, as kube's does"
        seen = [json.loads(line) for line in _chunks(data) if line.strip()]
        last = seen[-1]["object"]["metadata"]["resourceVersion"] if seen else rv
        with socket.create_connection((api.host, api.port), timeout=30) as again:   # the client resumes from it
            again.sendall(f"GET {PODS_PATH}?watch=1&resourceVersion={last}&timeoutSeconds=1 HTTP/1.1\r\n"
                          f"Host: x\r\nConnection: close\r\n\r\n".encode())
            answer = b""
            while chunk := again.recv(1 << 20):
                answer += chunk
        code = int(answer.split(b" ", 2)[1])
        assert code == 200
        resumed = [json.loads(line) for line in _chunks(answer.partition(b"\r\n\r\n")[2]) if line.strip()]
        names = [e["object"]["metadata"]["name"] for e in seen + resumed]
        assert names == [f"p{i}" for i in range(12)]


def _chunks(data: bytes) -> list[bytes]:
    """The JSON lines of a chunked body that may be cut anywhere (a last partial chunk is dropped)."""
    body = data.partition(b"\r\n\r\n")[2] if data.startswith(b"HTTP/") else data
    return b"".join(_raw_chunks(body)).split(b"\n")


def _raw_chunks(body: bytes) -> list[bytes]:
    """The payloads of the whole chunks of a chunked body."""
    out, i = [], 0
    while True:
        end = body.find(b"\r\n", i)
        if end < 0:
            break
        size = int(body[i:end], 16)
        if size == 0 or end + 2 + size > len(body):
            break
        out.append(body[end + 2:end + 2 + size])
        i = end + 2 + size + 2
    return out


def test_the_initial_events_of_a_watch_do_not_count_against_its_budget():
    """A watch starting from the current objects (or resuming through history) starts with what is alive already:
    only live events count, so a new watch of many objects is not closed for them."""
    big = Event("ADDED", 1, _entry(600_000), None, time.time())
    w = Watcher("pods", lambda obj: True, max_queue=100, max_bytes=1 << 20)
    for _ in range(5):
        assert w.offer(big, initial=True)
    assert w.backlog_bytes() == 0
    assert w.offer(big) and w.backlog_bytes() == len(big.entry.raw)
    assert not w.offer(big) and w.closed.is_set() and w.overflowed   # a second live 600 KB passes 1 MiB
    assert "backlog of events is over 1048576 bytes" in w.close_reason


def test_taking_events_frees_the_budget():
    big = Event("ADDED", 1, _entry(600_000), None, time.time())
    w = Watcher("pods", lambda obj: True, max_queue=100, max_bytes=1 << 20)
    for _ in range(10):
        assert w.offer(big)
        assert w.next(timeout=1) is big
    assert w.backlog_bytes() == 0 and not w.closed.is_set()


def _entry(size: int):
    from mxjob_controller.local.apiserver.storage.watch import Entry
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "annotations": {"a": "x" * size}}}
    return Entry(obj, 1)


def test_shared_encodings_are_made_once_and_bounded():
    made: list[int] = []
    shared = SharedEncodings(max_bytes=1000)

    def make(n: int) -> bytes:
        made.append(n)
        return bytes(n)

    assert shared.get(("a",), lambda: make(400)) is shared.get(("a",), lambda: make(400))
    assert made == [400]
    shared.get(("b",), lambda: make(400))
    shared.get(("c",), lambda: make(400))   # over 1000 bytes: the least recently used ("a") goes
    assert shared.size() == (2, 800)
    shared.get(("a",), lambda: make(400))
    assert made == [400, 400, 400, 400]
    assert len(shared.get(("huge",), lambda: make(5000))) == 5000 and shared.size()[1] <= 1000


@pytest.mark.integration
def test_protobuf_and_json_watchers_get_the_same_events_encoded_once_per_form(apiserver, kube):
    """Ten protobuf and ten JSON watchers of one pod: each gets the event, and the protobuf form of the object
    is made once, shared by the ten."""
    sockets = []
    rv = str(apiserver.store.resource_version)
    try:
        for accept in [MEDIA_TYPE] * 10 + ["application/json"] * 10:
            s = socket.create_connection((apiserver.host, apiserver.port), timeout=30)
            s.sendall(f"GET {PODS_PATH}?watch=1&resourceVersion={rv}&timeoutSeconds=2 HTTP/1.1\r\nHost: x\r\n"
                      f"Accept: {accept}\r\nConnection: close\r\n\r\n".encode())
            sockets.append(s)
        wait_for(lambda: len(apiserver.store.watchers(PODS.storage_key)) == 20, what="20 watchers")
        kept_before = apiserver.store.encodings.size()[0]
        kube.post(PODS_PATH, pod("shared"))
        answers = []
        for s in sockets:
            data = b""
            while chunk := s.recv(1 << 16):
                data += chunk
            answers.append(data.partition(b"\r\n\r\n")[2])
    finally:
        for s in sockets:
            s.close()
    assert apiserver.store.encodings.size()[0] == kept_before + 1   # one protobuf form for the ten
    for body in answers[:10]:
        events = read_watch_frames(b"".join(_raw_chunks(body)))
        assert [e["type"] for e in events] == ["ADDED"]
    for body in answers[10:]:
        events = [json.loads(line) for line in _chunks(body) if line.strip()]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "shared")]
