"""How to reach and authenticate to an API server: the resolved form of a kubeconfig context or of the
in-cluster service account (client-go's ``rest.Config``), independent of where it came from.

Credentials that change under a running process are read when used, not once: a service-account token file is
re-read whenever the kubelet rotates it (the file's identity or mtime changes), as client-go's cached file token
source does. Certificate and key *data* (base64 in a kubeconfig) are written once to private 0600 files, since
OpenSSL loads them only from files; those files are removed when the process exits. Nothing here logs secrets.

Credentials that a program makes (a kubeconfig's ``exec`` plugin, an ``auth-provider``) are token sources too
(``exec_credential``, ``auth_provider``): consulted per request, cached until they expire, and asked again once when
the server answers 401 (:meth:`RefreshableToken.refresh`).
"""

from __future__ import annotations

import atexit
import base64
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from mxjob_controller.runtime.client.errors import TransportError

DEFAULT_QPS = 5.0    # client-go's rest.DefaultQPS
DEFAULT_BURST = 10   # client-go's rest.DefaultBurst


class ConfigError(Exception):
    """No usable configuration: a missing file, an unknown context, malformed credentials."""


class CredentialError(ConfigError, TransportError):
    """A credential program (an ``exec`` plugin, an ``auth-provider``'s refresh) failed: missing, exited non-zero,
    timed out, or printed no usable credential. A configuration error at start-up, a transport error (retried as
    one) when it happens to a request later."""


class TokenSource(Protocol):
    def __call__(self) -> str | None:
        """The bearer token to send now, or None."""
        ...


@runtime_checkable
class RefreshableToken(Protocol):
    """A token source that can make a new credential when the server refused the one it gave (401)."""

    def __call__(self) -> str | None: ...

    def refresh(self, refused: str | None) -> bool:
        """Forget ``refused`` (the token the server answered 401 to) and get a new credential, unless another caller
        already did; True when the token to send now differs from ``refused`` (a retry is worth it)."""
        ...

    def client_certificate(self) -> str | None:
        """A PEM file holding the client certificate and its key to present, or None (the credential has none)."""
        ...


class StaticToken:
    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self) -> str | None:
        return self._token

    def __repr__(self) -> str:
        return "StaticToken(<redacted>)"


class FileToken:
    """A token kept in a file that may be replaced at any time (projected service-account tokens rotate).

    Guarantee: every call returns the file's content as of a ``stat`` made during the call; an unreadable or
    momentarily empty file (mid-rotation) keeps the last good token rather than sending none.
    """

    def __init__(self, path: str, initial: str | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int, int, int] | None = None
        self._token: str | None = initial  # sent until the file is first read (kubeconfig `token` + `tokenFile`)

    def __call__(self) -> str | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return self._token
        stamp = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            if stamp != self._stamp:
                try:
                    with open(self.path, encoding="utf-8") as f:
                        token = f.read().strip()
                except OSError:
                    return self._token
                if token:
                    self._token, self._stamp = token, stamp
            return self._token

    def __repr__(self) -> str:
        return f"FileToken({self.path!r})"


@dataclass(frozen=True)
class ClientConfig:
    host: str                                   # https://10.0.0.1:443
    ca_file: str | None = None                  # PEM bundle to verify the server; None: system roots
    verify_tls: bool = True
    tls_server_name: str | None = None          # SNI/verification name when it differs from the host
    client_cert_file: str | None = None
    client_key_file: str | None = None
    token: TokenSource | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    proxy_url: str | None = None
    namespace: str = "default"                  # the context's (or the service account's) namespace
    qps: float = DEFAULT_QPS                    # 0: client-go's default; negative: no client-side limit
    burst: int = DEFAULT_BURST
    # True: qps/burst apply only while the server does not advertise API Priority and Fairness (client/budget.py)
    detect_flow_control: bool = False
    user_agent: str | None = None               # None: built from the component name by the Client
    connect_timeout: float = 10.0
    timeout: float = 60.0                       # read timeout of ordinary requests (not watches)
    max_connections: int = 32                   # idle connections kept per host
    source: str = ""                            # where it came from, for messages

    def with_overrides(self, **changes: object) -> ClientConfig:
        return replace(self, **changes)  # type: ignore[arg-type]

    def authorization(self) -> str | None:
        """The Authorization header value to send now (bearer token wins over basic auth, as in client-go)."""
        if self.token is not None:
            token = self.token()
            if token:
                return f"Bearer {token}"
        if self.username is not None and self.password is not None:
            pair = f"{self.username}:{self.password}".encode()
            return "Basic " + base64.b64encode(pair).decode()
        return None


_data_dir: str | None = None
_data_lock = threading.Lock()


def data_file(data: str, what: str) -> str:
    """Write base64 ``data`` (a ``*-data`` kubeconfig field) to a private file and return its path."""
    try:
        raw = base64.b64decode(data, validate=True)
    except ValueError as e:
        raise ConfigError(f"{what}: not valid base64 ({e})") from None
    return private_file(raw)


def private_file(raw: bytes, replacing: str | None = None) -> str:
    """Write ``raw`` to a private 0600 file removed at exit and return its path. ``replacing``: a path this function
    returned before, whose content is replaced at once (a rename: a reader sees the old bytes or the new, whole)."""
    global _data_dir
    with _data_lock:
        if _data_dir is None:
            _data_dir = tempfile.mkdtemp(prefix="kube-client-")
            atexit.register(shutil.rmtree, _data_dir, True)
        fd, path = tempfile.mkstemp(dir=_data_dir, suffix=".pem")
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    if replacing is None:
        return path
    os.replace(path, replacing)
    return replacing
