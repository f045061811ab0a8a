"""The webhook client's bounds (issue 44, item 5): a webhook's answer is read within the call's deadline, however
the webhook paces its bytes, and within a size."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from mxjob_controller.local.apiserver.webhooks import client
from mxjob_controller.local.apiserver.webhooks.client import CallError, ClientConfig, HookClient
from tests.webhook_support import Certificates


class _Trickler:
    """A TLS server that reads a request, then sends ``answer`` one byte every ``interval`` seconds."""

    def __init__(self, answer: bytes, interval: float) -> None:
        self.certificates = Certificates()
        self._context = self.certificates.server_context()
        self._answer, self._interval = answer, interval
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(10)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="trickling-webhook", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            raw, _ = self._listener.accept()
        except OSError:
            return
        with self._context.wrap_socket(raw, server_side=True) as tls:
            tls.settimeout(10)
            try:
                tls.recv(65536)
                for i in range(len(self._answer)):
                    if self._stop.wait(self._interval):
                        return
                    tls.sendall(self._answer[i:i + 1])
            except OSError:
                return

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        self._thread.join(10)


@pytest.fixture
def trickler() -> Iterator[_Trickler]:
    server = _Trickler(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n{}",
                       interval=0.05)
    try:
        yield server
    finally:
        server.close()


def test_a_webhook_trickling_its_answer_is_cut_off_at_the_calls_deadline(trickler: _Trickler):
    """A byte every 50 ms keeps each recv well within any per-read timeout: the whole answer (about 250 bytes)
    would take 12 s. The call's timeout is 1 s, and it fails then, as Go's client does."""
    hooks = HookClient(lambda namespace, name: None)
    config = ClientConfig(url=f"https://127.0.0.1:{trickler.port}/validate", ca_bundle=trickler.certificates.ca_pem)
    started = time.monotonic()
    try:
        with pytest.raises(CallError) as e:
            hooks.post(config, {"kind": "AdmissionReview"}, timeout=1.0)
    finally:
        hooks.close()
    assert time.monotonic() - started < 5.0   # generous: 1 s, where unbounded reads took 12
    assert str(e.value) == (f'Post "https://127.0.0.1:{trickler.port}/validate?timeout=1s": '
                            "context deadline exceeded")


def test_an_answer_over_the_size_limit_is_refused(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(client, "MAX_RESPONSE_BYTES", 1000)
    server = _Trickler(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n"
                       + b" " * 5000, interval=0)
    hooks = HookClient(lambda namespace, name: None)
    try:
        config = ClientConfig(url=f"https://127.0.0.1:{server.port}/validate", ca_bundle=server.certificates.ca_pem)
        with pytest.raises(CallError, match="response body larger than 1000 bytes"):
            hooks.post(config, {"kind": "AdmissionReview"}, timeout=10.0)
    finally:
        hooks.close()
        server.close()
