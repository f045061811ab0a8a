"""HTTPS calls to admission and conversion webhooks, made as kube-apiserver's webhook client makes them (client-go's
REST client, configured by ``k8s.io/apiserver/pkg/util/webhook``).

- The URL is ``clientConfig.url`` as written, or ``https://<name>.<namespace>.svc:<port><path>`` for a Service, with
  ``?timeout=<the call's timeout>`` added (Go's duration format): that is the URL kube's error messages name.
- Trust: a ``caBundle`` (PEM) is the only root the server is verified against; without one, the system's roots. The
  name verified is the URL's host, or ``<name>.<namespace>.svc`` for a Service.
- A Service is reached as kube-apiserver reaches it (``ResolveCluster``): it must exist and, unless it is an
  ExternalName, serve the port; where to connect comes from :attr:`HookClient.service_resolver`, since this server
  has no cluster network. Unset, or answering None, it is kube's ``service "<name>" not found``.
- Every step (connect, handshake, send, the answer's headers and body) is bounded by the call's deadline, however
  the webhook paces its bytes: each read waits at most what is left of it (a webhook trickling its headers a byte
  at a time cannot hold the request past its timeout); the answer's body is at most :data:`MAX_RESPONSE_BYTES`.
- Connections are kept alive, as Go's transport keeps them: at most 2 idle per (address, name, CA bundle), each for
  at most 90 s. A kept connection the webhook closed meanwhile is replaced by a new one, once, without the call
  failing. (A TLS handshake per call would weigh on every admitted write.)
- Failures are :class:`CallError` carrying what Go prints, e.g. ``Post "<url>": dial tcp 127.0.0.1:9: connect:
  connection refused``, ``Post "<url>": context deadline exceeded``, ``Post "<url>": tls: failed to verify
  certificate: x509: certificate signed by unknown authority``, an HTTP error status as client-go words it, or
  ``couldn't get version/kind; json parse error: ...`` for a body that is not JSON.

The call runs on the caller's thread: the request being admitted or converted waits for it, as in kube.
"""

from __future__ import annotations

import base64
import http.client
import io
import ipaddress
import json
import logging
import posixpath
import socket
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

ServiceResolver = Callable[[str, str, int], "str | None"]
"""``(namespace, name, port) -> "host:port"``: where to connect to reach a Service's port; None when it cannot be
reached. kube-apiserver dials the Service's cluster IP; this server has no cluster network, so whoever runs it says."""

ServiceLookup = Callable[[str, str], "Mapping[str, Any] | None"]
"""``(namespace, name) -> the Service object``, or None when there is none."""

MAX_RESPONSE_BYTES = 64 * 1024 * 1024  # a webhook answering more than this is failing, not answering
IDLE_PER_HOST = 2      # Go's DefaultMaxIdleConnsPerHost
IDLE_SECONDS = 90.0    # Go's DefaultTransport IdleConnTimeout
USER_AGENT = "kube-apiserver-admission"


class CallError(Exception):
    """The webhook could not be called, or did not answer with JSON: kube's ``ErrCallingWebhook`` reason (or a
    conversion webhook's call failure). ``str()`` is Go's text of the error."""


@dataclass(frozen=True, slots=True)
class ServiceRef:
    namespace: str
    name: str
    port: int = 443
    path: str = ""


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """A webhook's ``clientConfig``: exactly one of ``url`` and ``service`` (validated where it is written)."""

    url: str | None = None
    service: ServiceRef | None = None
    ca_bundle: bytes = b""  # PEM; empty: the system's roots

    @classmethod
    def from_json(cls, config: Mapping[str, Any]) -> ClientConfig:
        """From a stored (validated, defaulted) ``clientConfig``; the CA bundle is base64 there."""
        service = config.get("service")
        ref = None
        if isinstance(service, Mapping):
            ref = ServiceRef(str(service.get("namespace") or ""), str(service.get("name") or ""),
                             int(service.get("port") or 443), str(service.get("path") or ""))
        bundle = config.get("caBundle") or ""
        try:
            pem = base64.b64decode(bundle) if bundle else b""
        except ValueError:
            pem = b""
        url = config.get("url")
        return cls(url if isinstance(url, str) else None, ref, pem)

    def base_url(self) -> str:
        """``scheme://host[:port]/path`` as client-go builds it (the path cleaned, ``/`` when there is none)."""
        if self.service is not None:
            svc = self.service
            return f"https://{svc.name}.{svc.namespace}.svc:{svc.port}{_clean_path(svc.path)}"
        parts = urlsplit(self.url or "")
        return f"{parts.scheme}://{parts.netloc}{_clean_path(parts.path)}"


def _clean_path(path: str) -> str:
    """Go's ``path.Join("/", p)``: rooted, cleaned, no trailing slash."""
    cleaned = posixpath.normpath("/" + path)
    return "/" + cleaned.lstrip("/")


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()``: ``10s``, ``1.5s``, ``500ms``, ``1m0s``."""
    ns = round(seconds * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _trim(ns / size) + unit
    hours, ns = divmod(ns, 3_600_000_000_000)
    minutes, ns = divmod(ns, 60_000_000_000)
    text = _trim(ns / 1e9) + "s"
    if hours or minutes:
        text = f"{minutes}m" + text
    if hours:
        text = f"{hours}h" + text
    return sign + text


def _trim(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".")


class _Failure(Exception):  # noqa: N818 - a transport failure, worded as Go words it (then prefixed with Post "url")
    pass


@dataclass(slots=True)
class _Answer:
    status: int
    content_type: str
    body: bytes


class HookClient:
    """Calls webhooks; shared by admission and conversion. ``service_resolver`` may be set at any time."""

    def __init__(self, services: ServiceLookup) -> None:
        self._services = services
        self.service_resolver: ServiceResolver | None = None
        self._contexts: dict[bytes, ssl.SSLContext] = {}
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, int, str, bytes], list[tuple[ssl.SSLSocket, float]]] = {}
        self._closed = False

    def close(self) -> None:
        """Close the kept-alive connections; later calls open (and close) their own."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for tls, _ in conns:
                _close_quietly(tls)

    def post(self, config: ClientConfig, payload: Any, timeout: float) -> Any:
        """POST ``payload`` as JSON and return the decoded JSON answer; CallError when that fails."""
        query = f"?timeout={go_duration(timeout)}"
        url = config.base_url() + query
        deadline = time.monotonic() + timeout
        body = json.dumps(payload, separators=(",", ":")).encode()
        try:
            answer = self._exchange(config, query, body, deadline)
        except _Failure as e:
            raise CallError(f'Post "{url}": {e}') from None
        return _decode(answer)

    # --- the exchange ---------------------------------------------------------------------------------

    def _exchange(self, config: ClientConfig, query: str, body: bytes, deadline: float) -> _Answer:
        if config.service is not None:
            host, port = self._resolve(config.service)
            server_name = f"{config.service.name}.{config.service.namespace}.svc"
            host_header = f"{server_name}:{config.service.port}"
            path = _clean_path(config.service.path)
        else:
            parts = urlsplit(config.url or "")
            host = parts.hostname or ""
            try:
                port = parts.port or 443
            except ValueError:
                raise _Failure(f"dial tcp: address {parts.netloc.rpartition(':')[2]}: invalid port") from None
            server_name, host_header, path = host, parts.netloc, _clean_path(parts.path)
        key = (host, port, server_name, config.ca_bundle)
        kept = self._take(key)
        if kept is not None:
            try:
                return self._finish(key, kept, host_header, path + query, body, deadline, reused=True)
            except _StaleConnectionError:
                pass  # the webhook closed it while it was idle: a new connection, as Go's transport retries
        sock = self._connect(host, port, deadline)
        try:
            tls = self._handshake(sock, config.ca_bundle, server_name, deadline)
        except BaseException:
            sock.close()
            raise
        return self._finish(key, tls, host_header, path + query, body, deadline, reused=False)

    def _finish(self, key: tuple[str, int, str, bytes], tls: ssl.SSLSocket, host_header: str, path: str,
                body: bytes, deadline: float, reused: bool) -> _Answer:
        """One exchange on ``tls``; the connection is kept for the next call when the answer allows it."""
        try:
            answer, reusable = self._http(tls, host_header, path, body, deadline, reused)
        except BaseException:
            _close_quietly(tls)
            raise
        if reusable:
            self._give_back(key, tls)
        else:
            _close_quietly(tls)
        return answer

    def _take(self, key: tuple[str, int, str, bytes]) -> ssl.SSLSocket | None:
        now = time.monotonic()
        stale = []
        found = None
        with self._lock:
            conns = self._idle.get(key)
            while conns and found is None:
                tls, since = conns.pop()
                if now - since < IDLE_SECONDS:
                    found = tls
                else:
                    stale.append(tls)
        for tls in stale:
            _close_quietly(tls)
        return found

    def _give_back(self, key: tuple[str, int, str, bytes], tls: ssl.SSLSocket) -> None:
        with self._lock:
            conns = self._idle.setdefault(key, [])
            if not self._closed and len(conns) < IDLE_PER_HOST:
                conns.append((tls, time.monotonic()))
                return
        _close_quietly(tls)

    def _resolve(self, svc: ServiceRef) -> tuple[str, int]:
        """kube's ``ResolveCluster``, then the resolver: (host, port) to dial, or the error Go's dial reports."""
        obj = self._services(svc.namespace, svc.name)
        if obj is None:
            raise _Failure(f'service "{svc.name}" not found')
        spec = obj.get("spec") or {}
        kind = spec.get("type") or "ClusterIP"
        if kind == "ClusterIP" and spec.get("clusterIP") == "None":
            raise _Failure('cannot route to service with ClusterIP "None"')
        if kind in ("ClusterIP", "LoadBalancer", "NodePort"):
            if not any(isinstance(p, Mapping) and p.get("port") == svc.port for p in spec.get("ports") or ()):
                raise _Failure(f'no service port {svc.port} found for service "{svc.name}"')
        elif kind != "ExternalName":
            raise _Failure(f'unsupported service type "{kind}"')
        resolver = self.service_resolver
        address = resolver(svc.namespace, svc.name, svc.port) if resolver is not None else None
        if not address:
            raise _Failure(f'service "{svc.name}" not found')
        return _split_host_port(address)

    def _connect(self, host: str, port: int, deadline: float) -> socket.socket:
        where = _join_host_port(host, port)
        try:
            return socket.create_connection((host, port), timeout=_left(deadline))
        except ConnectionRefusedError:
            raise _Failure(f"dial tcp {where}: connect: connection refused") from None
        except TimeoutError:
            raise _Failure("context deadline exceeded") from None
        except socket.gaierror:
            raise _Failure(f"dial tcp: lookup {host}: no such host") from None
        except OSError as e:
            raise _Failure(f"dial tcp {where}: connect: {(e.strerror or str(e)).lower()}") from None

    def _context(self, ca_bundle: bytes) -> ssl.SSLContext:
        """One context per CA bundle (loading roots costs milliseconds); the name is checked after the handshake,
        so that a mismatch is reported as Go reports it."""
        with self._lock:
            context = self._contexts.get(ca_bundle)
            if context is None:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                context.minimum_version = ssl.TLSVersion.TLSv1_2
                context.check_hostname = False
                context.verify_mode = ssl.CERT_REQUIRED
                if ca_bundle:
                    try:
                        context.load_verify_locations(cadata=ca_bundle.decode("ascii", "replace"))
                    except (ssl.SSLError, ValueError):
                        pass  # no usable root: every server is then of an unknown authority, as in Go
                else:
                    context.load_default_certs()
                context.set_alpn_protocols(["http/1.1"])
                self._contexts[ca_bundle] = context
            return context

    def _handshake(self, sock: socket.socket, ca_bundle: bytes, server_name: str,
                   deadline: float) -> ssl.SSLSocket:
        sock.settimeout(_left(deadline))
        sni = None if _is_ip(server_name) else server_name
        try:
            tls = self._context(ca_bundle).wrap_socket(sock, server_hostname=sni)
        except ssl.SSLCertVerificationError as e:
            raise _Failure("tls: failed to verify certificate: " + _verification_text(e)) from None
        except TimeoutError:
            raise _Failure("context deadline exceeded") from None
        except ssl.SSLError as e:
            raise _Failure(_tls_text(e)) from None
        except (ConnectionResetError, BrokenPipeError):
            raise _Failure("read: connection reset by peer") from None
        except OSError as e:
            raise _Failure(str(e) or "EOF") from None
        problem = _hostname_problem(tls.getpeercert() or {}, server_name)
        if problem:
            tls.close()
            raise _Failure("tls: failed to verify certificate: " + problem)
        return tls

    def _http(self, tls: ssl.SSLSocket, host_header: str, path: str, body: bytes, deadline: float,
              reused: bool = False) -> tuple[_Answer, bool]:
        """(the answer, whether the connection may carry another call). On a ``reused`` connection, the webhook
        having closed it before answering anything is :class:`_StaleConnectionError`, not a failure."""
        head = (f"POST {path} HTTP/1.1\r\nHost: {host_header}\r\nUser-Agent: {USER_AGENT}\r\n"
                "Content-Type: application/json\r\nAccept: application/json, */*\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1", "replace")
        begun = False
        try:
            tls.settimeout(_left(deadline))
            tls.sendall(head + body)
            # http.client only parses the answer, read through a reader that keeps the deadline on every recv
            resp = http.client.HTTPResponse(_DeadlineSocket(tls, deadline), method="POST")  # type: ignore[arg-type]
            try:
                resp.begin()
                begun = True
                chunks, size = [], 0
                while True:
                    chunk = resp.read1(65536)
                    if not chunk:
                        break
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise _Failure(f"response body larger than {MAX_RESPONSE_BYTES} bytes")
                    chunks.append(chunk)
                answer = _Answer(resp.status, resp.getheader("Content-Type") or "", b"".join(chunks))
                return answer, not resp.will_close
            finally:
                resp.close()   # its reader only: the socket stays open until closed itself
        except TimeoutError:
            raise _Failure("context deadline exceeded") from None
        except (http.client.RemoteDisconnected, http.client.IncompleteRead, ssl.SSLEOFError):
            if reused and not begun:
                raise _StaleConnectionError from None
            raise _Failure("EOF") from None
        except (ConnectionResetError, BrokenPipeError):
            if reused and not begun:
                raise _StaleConnectionError from None
            raise _Failure("read: connection reset by peer") from None
        except (http.client.HTTPException, OSError) as e:
            raise _Failure(f"net/http: {e}") from None


class _DeadlineSocket:
    """``tls`` as http.client reads an answer from it (``makefile``): each recv waits at most what is left of
    ``deadline``, and TimeoutError once it has passed (a socket timeout alone is per recv: a webhook sending a
    byte just before each one ran out would hold the call for as long as it liked)."""

    def __init__(self, tls: ssl.SSLSocket, deadline: float) -> None:
        self._tls = tls
        self._deadline = deadline

    def makefile(self, mode: str = "rb") -> io.BufferedReader:
        return io.BufferedReader(_DeadlineRaw(self._tls, self._deadline), 65536)


class _DeadlineRaw(io.RawIOBase):
    def __init__(self, tls: ssl.SSLSocket, deadline: float) -> None:
        super().__init__()
        self._tls = tls
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._tls.settimeout(_left(self._deadline))
        return self._tls.recv_into(buffer)


class _StaleConnectionError(Exception):
    """A kept-alive connection the webhook had closed: the call goes again on a new one."""


def _close_quietly(tls: ssl.SSLSocket) -> None:
    try:
        tls.close()
    except OSError:
        pass


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Failure("context deadline exceeded")
    return left


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _join_host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _split_host_port(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise _Failure(f"address {address}: missing port in address")
    return host.strip("[]"), int(port)


# --- TLS errors, in Go's words --------------------------------------------------------------------------

# Self-signed, no local issuer, cannot verify the leaf; and a CA of the issuer's name that did not sign it (Go adds
# which candidate it tried: "(possibly because of ... while trying to verify candidate authority certificate ...)").
_UNKNOWN_AUTHORITY = frozenset({2, 7, 18, 19, 20, 21})


def _verification_text(e: ssl.SSLCertVerificationError) -> str:
    if e.verify_code in _UNKNOWN_AUTHORITY:
        return "x509: certificate signed by unknown authority"
    if e.verify_code in (9, 10):  # not yet valid, expired
        return "x509: certificate has expired or is not yet valid"
    return f"x509: {e.verify_message or e.reason or e}"


def _tls_text(e: ssl.SSLError) -> str:
    if e.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"):
        return "tls: first record does not look like a TLS handshake"
    if isinstance(e, ssl.SSLEOFError) or e.reason == "UNEXPECTED_EOF_WHILE_READING":
        return "EOF"
    reason = (e.reason or str(e)).lower().replace("_", " ")
    if reason.startswith(("sslv3 alert ", "tlsv1 alert ")):
        reason = reason.split(" alert ", 1)[1]
    return f"remote error: tls: {reason}"


def _hostname_problem(cert: Mapping[str, Any], host: str) -> str:
    """Go's ``HostnameError`` text when the verified certificate does not name ``host``; "" when it does."""
    dns = [v for k, v in cert.get("subjectAltName", ()) if k == "DNS"]
    ips = []
    for k, v in cert.get("subjectAltName", ()):
        if k == "IP Address":
            try:
                ips.append(ipaddress.ip_address(v.strip()))
            except ValueError:
                continue
    if _is_ip(host):
        wanted = ipaddress.ip_address(host)
        if wanted in ips:
            return ""
        if not ips:
            return f"x509: cannot validate certificate for {host} because it doesn't contain any IP SANs"
        valid = ", ".join(str(ip) for ip in ips)
    else:
        if any(_dns_match(pattern, host) for pattern in dns):
            return ""
        valid = ", ".join(dns)
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {host}"
    return f"x509: certificate is valid for {valid}, not {host}"


def _dns_match(pattern: str, host: str) -> bool:
    pattern, host = pattern.lower().rstrip("."), host.lower().rstrip(".")
    if pattern == host:
        return True
    if pattern.startswith("*.") and "." in host:
        return host.split(".", 1)[1] == pattern[2:]
    return False


# --- the answer, as client-go decodes it ------------------------------------------------------------------

_FIND_KIND = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
              'Kind string "json:\\"kind,omitempty\\"" }')


def _decode(answer: _Answer) -> Any:
    content_type = answer.content_type or "application/json"
    if not 200 <= answer.status <= 206:
        raise CallError(_status_text(answer))
    if not answer.body:
        raise CallError(f"0-length response with status code: {answer.status} and content type: {content_type}")
    try:
        value = json.loads(answer.body)
    except ValueError as e:
        raise CallError(f"couldn't get version/kind; json parse error: {_go_json_error(e)}") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CallError(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                        f"{_json_kind(value)} into Go value of type {_FIND_KIND}")
    for key in ("apiVersion", "kind"):
        if key in value and not isinstance(value[key], str | None):
            raise CallError(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                            f"{_json_kind(value[key])} into Go struct field .{key} of type string")
    return value


def _status_text(answer: _Answer) -> str:
    """client-go's error for a status outside 200-206: the body's ``Status`` message when it sends one, else
    ``NewGenericServerResponse``'s text."""
    try:
        value = json.loads(answer.body) if answer.body else None
    except ValueError:
        value = None
    if isinstance(value, dict) and value.get("kind") == "Status" and value.get("status") == "Failure":
        return str(value.get("message") or "")
    media = answer.content_type.split(";")[0].strip().lower()
    text = answer.body[:2048].decode("utf-8", "replace").strip() if (not media or media.startswith("text/")) \
        else "unknown"
    return generic_server_response(answer.status, text)


def generic_server_response(code: int, server_message: str) -> str:
    """apimachinery's ``NewGenericServerResponse`` message for ``code`` (no resource named)."""
    fixed = {409: "the server reported a conflict", 404: "the server could not find the requested resource",
             400: "the server rejected our request for an unknown reason",
             401: "the server has asked for the client to provide credentials",
             405: "the server does not allow this method on the requested resource",
             422: "the server rejected our request due to an error in our request",
             503: "the server is currently unable to handle the request",
             504: "the server was unable to return a response in the time allotted, but may still be processing "
                  "the request",
             429: "the server has received too many requests and has asked us to try again later"}
    if code in fixed:
        return fixed[code]
    if code in (403, 415):
        return server_message
    if code == 406:
        return server_message if server_message not in ("", "unknown") else \
            "the server was unable to respond with a content type that the client supports"
    if code >= 500:
        return f"an error on the server ({json.dumps(server_message)}) has prevented the request from succeeding"
    return f"the server responded with the status code {code} but did not return more information"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "value")


def _go_json_error(e: ValueError) -> str:
    """encoding/json's syntax error text for what Python's parser refused."""
    if not isinstance(e, json.JSONDecodeError):
        return "invalid character in input"
    pos, doc = e.pos, e.doc
    if pos >= len(doc.rstrip()):
        return "unexpected end of JSON input"
    char = doc[pos]
    if e.msg == "Expecting value" and char in "tfn":  # Go reads the literal a letter at a time
        literal = {"t": "true", "f": "false", "n": "null"}[char]
        for i in range(1, len(literal)):
            if pos + i >= len(doc):
                return "unexpected end of JSON input"
            if doc[pos + i] != literal[i]:
                return f"invalid character {_quote_char(doc[pos + i])} in literal {literal} (expecting " \
                       f"{_quote_char(literal[i])})"
    quoted = _quote_char(char)
    context = {
        "Expecting value": "looking for beginning of value",
        "Extra data": "after top-level value",
        "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
        "Expecting ':' delimiter": "after object key",
        "Expecting ',' delimiter": "after object key:value pair" if _in_object(doc, pos) else "after array element",
    }.get(e.msg, "in string literal")
    return f"invalid character {quoted} {context}"


def _quote_char(char: str) -> str:
    """encoding/json's ``quoteChar``."""
    if char == "'":
        return "'\\''"
    if char == '"':
        return "'\"'"
    return f"'{char}'" if char.isprintable() else json.dumps(char)


def _in_object(doc: str, pos: int) -> bool:
    """Whether ``pos`` is inside an object rather than an array (the innermost unclosed bracket, strings skipped)."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in doc[:pos]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append(ch)
        elif ch in "]}" and stack:
            stack.pop()
    return bool(stack) and stack[-1] == "{"
