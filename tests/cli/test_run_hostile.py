"""``mxjob-controller run`` against an API server that answers garbage (issue 45): it never crashes. At start a
malformed answer is a clean "cannot reach the API server" exit (it was a ``ValueError`` escaping ``run``); while
running, the requests answered with garbage fail as transport errors, are retried, and the controller reconciles
as before once the server speaks HTTP again.

The garbage comes from a TCP proxy in front of the embedded API server: while its ``garbage`` switch is on, every
request but a watch gets one of the malformed answers of ``tests/runtime/client/test_hostile_server.py`` on a
connection kept open (so a reader that waited for more would hang), and the connections open when it is switched
are cut (the controller's kept-alive sockets must reconnect into it).
"""

from __future__ import annotations

import select
import socket
import threading
import time
from urllib.parse import urlsplit

import pytest

from tests.cli.test_run import MXJOBS, created
from tests.run_process import LOCAL_PORTS, RunProcess, install_mxjob_crd, mxjob
from tests.runtime.client.test_hostile_server import GARBAGE
from tests.support import wait_for

pytestmark = pytest.mark.slow

ANSWERS = list(GARBAGE.values())


class GarbageProxy:
    """Forwards connections to ``upstream`` (host, port); with :attr:`garbage` set, answers each request that is
    not a watch with the next of :data:`ANSWERS` instead."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.answers = ANSWERS
        self.garbage = threading.Event()
        self.garbage_answers: list[bytes] = []   # the request lines answered with garbage
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._spawn(self._accept, "garbage-proxy")

    def _spawn(self, target: object, name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)  # type: ignore[arg-type]
        thread.start()
        self._threads.append(thread)

    def switch(self, on: bool) -> None:
        """Turn the garbage on or off, cutting every connection open now."""
        if on:
            self.garbage.set()
        else:
            self.garbage.clear()
        with self._lock:
            cut = list(self._open)
        for sock in cut:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._spawn(self._serve, "garbage-proxy-conn", conn)

    def _track(self, *socks: socket.socket, add: bool) -> None:
        with self._lock:
            for sock in socks:
                (self._open.add if add else self._open.discard)(sock)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        self._track(conn, add=True)
        upstream = None
        try:
            if not self.garbage.is_set():
                self._pump(conn, b"")
                return
            buffered = b""
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buffered:
                    more = _recv(conn, self._stop)
                    if not more:
                        return
                    buffered += more
                head, _, buffered = buffered.partition(b"\r\n\r\n")
                line = head.split(b"\r\n", 1)[0]
                if b"watch=true" in line or not self.garbage.is_set():
                    self._pump(conn, head + b"\r\n\r\n" + buffered)
                    return
                length = next((int(h.split(b":", 1)[1]) for h in head.split(b"\r\n")[1:]
                               if h.lower().startswith(b"content-length:")), 0)
                while len(buffered) < length:
                    more = _recv(conn, self._stop)
                    if not more:
                        return
                    buffered += more
                buffered = buffered[length:]
                with self._lock:
                    answer = self.answers[len(self.garbage_answers) % len(self.answers)]
                    self.garbage_answers.append(line)
                conn.sendall(answer)
        except OSError:
            pass
        finally:
            self._track(conn, add=False)
            conn.close()
            if upstream is not None:
                upstream.close()

    def _pump(self, conn: socket.socket, first: bytes) -> None:
        """Forward both ways until either side ends (or the proxy stops, or the switch cuts it)."""
        upstream = socket.create_connection(self.upstream, timeout=5)
        self._track(upstream, add=True)
        try:
            if first:
                upstream.sendall(first)
            while not self._stop.is_set():
                readable, _, _ = select.select([conn, upstream], [], [], 0.2)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    (upstream if sock is conn else conn).sendall(data)
        finally:
            self._track(upstream, add=False)
            upstream.close()

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        self.switch(False)
        for thread in self._threads:
            thread.join(5)


def _recv(conn: socket.socket, stop: threading.Event) -> bytes:
    while not stop.is_set():
        try:
            return conn.recv(65536)
        except TimeoutError:
            continue
    return b""


@pytest.fixture
def proxy(apiserver):
    parts = urlsplit(apiserver.url)
    made = GarbageProxy((parts.hostname, parts.port))
    yield made
    made.close()


@pytest.mark.parametrize("garbage", ["content-length-superscript", "status-superscript", "chunk-size-minus-one"])
def test_garbage_at_start_is_a_clean_exit_saying_the_server_cannot_be_reached(apiserver, proxy, garbage):
    install_mxjob_crd(apiserver)
    proxy.answers = [GARBAGE[garbage]]
    proxy.switch(True)
    proc = RunProcess(["--master", proxy.url, *LOCAL_PORTS]).start()
    started = time.monotonic()
    try:
        assert proc.wait_exit(60) == 1
    finally:
        proc.kill()
    # At once: not after the CRD check's 30 s read timeout (a reader waiting for bytes that never come).
    assert time.monotonic() - started < 20, proc.output()
    error = next(r for r in proc.records() if r["level"] == "error")
    assert error["msg"].startswith(f"cannot start: cannot reach the API server at {proxy.url}"), proc.output()
    assert "Traceback" not in proc.output() and "ValueError" not in proc.output()


def test_run_keeps_running_while_the_server_answers_garbage_and_reconciles_after(apiserver, kube, proxy):
    install_mxjob_crd(apiserver)
    with RunProcess(["--master", proxy.url, *LOCAL_PORTS]) as proc:
        proc.wait_running()
        assert kube.post(MXJOBS.format(ns="default"), mxjob("before")).status == 201
        wait_for(lambda: created(kube, "default", "before"), timeout=30, what="the first job reconciled")
        proxy.switch(True)
        # Seen through its (forwarded) watch, the job's reconcile writes through the transport: into the garbage.
        assert kube.post(MXJOBS.format(ns="default"), mxjob("during")).status == 201
        wait_for(lambda: len(proxy.garbage_answers) >= len(ANSWERS), timeout=60,
                 what="every kind of garbage answered to the controller")
        assert proc.proc.poll() is None, proc.output()
        proxy.switch(False)
        wait_for(lambda: created(kube, "default", "during"), timeout=60, what="the job reconciled after the garbage")
        assert proc.proc.poll() is None
        assert "ValueError" not in proc.output()
