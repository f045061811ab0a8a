"""The webhook server's certificate: files a Secret or cert-manager mounts, or a pair made at start.

``--webhook-cert-dir`` holds ``tls.crt`` and ``tls.key`` (a ``kubernetes.io/tls`` Secret's keys, controller-runtime's
default directory). cert-manager renews a certificate before it expires by rewriting the files in place; the server
asks for its TLS context per connection and the files are checked at most every :data:`RECHECK_SECONDS`, so a
renewed certificate is served from the next connection on, with no restart. A renewal caught half-written (the key
of one pair, the certificate of the other) fails to load: the previous context is kept and loading is tried again
at the next check.

For one machine (``local up``) and tests, :class:`SelfSignedCertificate` makes a CA and a serving certificate at start
(``runtime/tls.py``); its ``ca_bundle`` is what a webhook configuration's ``caBundle`` must hold.
"""

from __future__ import annotations

import base64
import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path

from mxjob_controller.runtime.tls import TLSMaterial, server_context

log = logging.getLogger(__name__)

CERT_FILE, KEY_FILE = "tls.crt", "tls.key"
DEFAULT_CERT_DIR = "/tmp/k8s-webhook-server/serving-certs"   # controller-runtime's
RECHECK_SECONDS = 10.0


class CertificateError(Exception):
    """The certificate files are missing or cannot be loaded (the message says which and what to do)."""


class CertificateFiles:
    """``tls.crt`` / ``tls.key`` in ``directory``, loaded again when they change. Thread-safe."""

    def __init__(self, directory: str | os.PathLike[str], *, recheck: float = RECHECK_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.directory = Path(directory)
        self.cert, self.key = self.directory / CERT_FILE, self.directory / KEY_FILE
        self.recheck = recheck
        self.clock = clock
        self._lock = threading.Lock()
        self._checked = float("-inf")
        self._stamp: tuple[float, float] | None = None
        self._current: ssl.SSLContext | None = None

    def _stamps(self) -> tuple[float, float]:
        return self.cert.stat().st_mtime, self.key.stat().st_mtime

    def load(self) -> ssl.SSLContext:
        """Load the files now; :class:`CertificateError` naming what is wrong."""
        missing = [p.name for p in (self.cert, self.key) if not p.is_file()]
        if missing:
            raise CertificateError(
                f"no {' and no '.join(missing)} in {self.directory}: mount the webhook's TLS Secret there "
                f"(keys {CERT_FILE} and {KEY_FILE}; manifests/components/webhook does), or let cert-manager issue it "
                "(manifests/components/webhook-cert-manager)")
        try:
            stamp = self._stamps()
            context = server_context(self.cert, self.key)
        except (OSError, ssl.SSLError) as e:
            raise CertificateError(f"cannot load {self.cert} and {self.key}: {e}") from e
        with self._lock:
            self._stamp, self._current, self._checked = stamp, context, self.clock()
        return context

    def context(self) -> ssl.SSLContext:
        """The context for the next connection: the last one loaded, reloaded first if the files changed."""
        with self._lock:
            current, due = self._current, self.clock() - self._checked >= self.recheck
            if current is not None and not due:
                return current
            self._checked = self.clock()
        try:
            if current is not None and self._stamps() == self._stamp:
                return current
            context = self.load()
        except (CertificateError, OSError) as e:
            if current is None:
                raise
            log.warning("the webhook certificate could not be reloaded (the previous one is served): %s", e)
            return current
        if current is not None:
            log.info("the webhook certificate in %s changed: serving the new one", self.directory)
        return context


class SelfSignedCertificate:
    """A CA and a serving certificate for ``host`` and ``dns_names``, made now; the key stays in memory."""

    def __init__(self, host: str = "127.0.0.1", dns_names: tuple[str, ...] = ()) -> None:
        self.material = TLSMaterial(host, dns_names, common_name="mxjob-controller-webhook",
                                    ca_name="mxjob-controller-webhook-ca",
                                    prefix=f"mxjob-webhook-tls-{os.getpid()}-")   # pid: swept once it is gone
        self._context = self.material.server_context()
        self.ca_bundle = base64.b64encode(self.material.ca_pem).decode()

    def context(self) -> ssl.SSLContext:
        return self._context

    def close(self) -> None:
        self.material.close()
