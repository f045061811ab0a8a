"""A webhook server for the API server's webhook tests: HTTPS on loopback with a CA of its own, answering each path
as the test says, and recording every request it received.

    with WebhookServer() as hooks:
        hooks.answer("/validate", deny("no", code=403))
        config = validating_configuration("deny.example.com", hooks.url("/validate"), hooks.ca_bundle)

Answers are functions of the decoded request body (an ``AdmissionReview`` or ``ConversionReview``) returning an
:class:`Answer`: a JSON body or raw bytes, a status, a delay (waited on an event that :meth:`WebhookServer.stop`
sets, so a slow answer never outlives the test). Threads are named (``webhook-server``, ``webhook-conn-N``).
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import itertools
import json
import socket
import ssl
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


class Certificates:
    """A CA of its own and a serving certificate it signs for ``dns_names`` and ``ips`` (ECDSA P-256, as the API
    server's own TLS material); the key stays in memory but while :meth:`server_context` loads it."""

    def __init__(self, dns_names: tuple[str, ...] = ("localhost",), ips: tuple[str, ...] = ("127.0.0.1", "::1"),
                 ) -> None:
        now = datetime.datetime.now(datetime.UTC)
        valid = (now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1))
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"webhook-test-ca-{x509.random_serial_number()}")])
        ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
              .serial_number(x509.random_serial_number()).not_valid_before(valid[0]).not_valid_after(valid[1])
              .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
              .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                           content_commitment=False, key_encipherment=False, data_encipherment=False,
                                           key_agreement=False, encipher_only=False, decipher_only=False),
                             critical=True)
              .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
        cert = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
                .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(valid[0]).not_valid_after(valid[1])
                .add_extension(x509.SubjectAlternativeName(names), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                .sign(ca_key, hashes.SHA256()))
        self.ca_pem = ca.public_bytes(serialization.Encoding.PEM)
        self._cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        self._key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())

    @property
    def ca_bundle(self) -> str:
        """The CA as a ``caBundle`` (base64 of the PEM)."""
        return base64.b64encode(self.ca_pem).decode()

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory(prefix="webhook-test-tls-") as directory:  # 0700, removed at once
            cert_file, key_file = Path(directory) / "tls.crt", Path(directory) / "tls.key"
            cert_file.write_bytes(self._cert_pem)
            key_file.write_bytes(self._key_pem)
            context.load_cert_chain(cert_file, key_file)
        return context


@dataclass
class Answer:
    body: Any = None          # JSON-encoded unless bytes
    status: int = 200
    content_type: str = "application/json"
    delay: float = 0.0        # seconds to wait before answering
    close: bool = False       # close the connection without answering


@dataclass
class Received:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any                 # the decoded JSON (None if it was not JSON)


Handler = Callable[[Any], Answer]


def review_response(review: dict, allowed: bool, **response: Any) -> dict:
    """An ``AdmissionReview`` answer echoing the request's uid."""
    return {"apiVersion": review.get("apiVersion", "admission.k8s.io/v1"), "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": allowed, **response}}


def allow(warnings: list[str] | None = None) -> Handler:
    def answer(review: Any) -> Answer:
        extra = {"warnings": warnings} if warnings else {}
        return Answer(review_response(review, True, **extra))
    return answer


def deny(message: str = "", code: int | None = None, reason: str | None = None,
         warnings: list[str] | None = None, details: dict | None = None) -> Handler:
    def answer(review: Any) -> Answer:
        status: dict[str, Any] = {}
        if message:
            status["message"] = message
        if code is not None:
            status["code"] = code
        if reason is not None:
            status["reason"] = reason
        if details is not None:
            status["details"] = details
        extra: dict[str, Any] = {"status": status} if status else {}
        if warnings:
            extra["warnings"] = warnings
        return Answer(review_response(review, False, **extra))
    return answer


class WebhookServer:
    def __init__(self, certificates: Certificates | None = None, host: str = "127.0.0.1") -> None:
        self.certificates = certificates or Certificates()
        self.host = host
        self.requests: list[Received] = []
        self._answers: dict[str, Handler] = {}
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ---------------------------------------------------------------------------------------

    def start(self) -> WebhookServer:
        server = _Server((self.host, 0), _Handler)
        server.owner = self
        server.context = self.certificates.server_context()
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="webhook-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server.join_connections(5.0)
        if self._thread is not None:
            self._thread.join(5.0)

    def __enter__(self) -> WebhookServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- what tests use ----------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None
        return self._server.server_address[1]

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connections(self) -> int:
        """TLS connections accepted so far (kube's client keeps them alive)."""
        assert self._server is not None
        return self._server.connections

    def url(self, path: str = "/") -> str:
        return f"https://{self.host}:{self.port}{path}"

    @property
    def ca_bundle(self) -> str:
        return self.certificates.ca_bundle

    def answer(self, path: str, handler: Handler) -> None:
        with self._lock:
            self._answers[path] = handler

    def received(self, path: str | None = None) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if path is None or r.path == path]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    # --- serving -----------------------------------------------------------------------------------------

    def _serve(self, path: str, query: dict[str, str], headers: dict[str, str], raw: bytes) -> Answer:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self.requests.append(Received(path, query, headers, body))
            handler = self._answers.get(path)
        if handler is None:
            return Answer(b"404 page not found\n", 404, "text/plain; charset=utf-8")
        answer = handler(body)
        if answer.delay:
            self._released.wait(answer.delay)
        return answer


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: WebhookServer
    context: ssl.SSLContext

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._ids = itertools.count(1)
        self._conn_threads: set[threading.Thread] = set()
        self._conn_lock = threading.Lock()
        self.open_sockets: set[Any] = set()   # kept-alive connections, cut when the server stops (as a real one's)
        self.connections = 0                   # TLS connections accepted so far
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        t = threading.Thread(target=self._run, args=(request, client_address), name=f"webhook-conn-{next(self._ids)}",
                             daemon=True)
        with self._conn_lock:
            self._conn_threads.add(t)
        t.start()

    def _run(self, request: Any, client_address: Any) -> None:
        try:
            self.process_request_thread(request, client_address)
        finally:
            with self._conn_lock:
                self._conn_threads.discard(threading.current_thread())

    def join_connections(self, timeout: float) -> None:
        with self._conn_lock:
            threads = list(self._conn_threads)
            sockets = list(self.open_sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in threads:
            t.join(timeout)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    timeout = 10

    def setup(self) -> None:
        self.request.settimeout(10)
        try:
            self.request = self.server.context.wrap_socket(self.request, server_side=True)
        except (ssl.SSLError, OSError):
            self.handshake_failed = True
        else:
            self.handshake_failed = False
            with self.server._conn_lock:
                self.server.open_sockets.add(self.request)
                self.server.connections += 1
        super().setup()

    def finish(self) -> None:
        with self.server._conn_lock:
            self.server.open_sockets.discard(self.request)
        super().finish()

    def handle(self) -> None:
        if not self.handshake_failed:
            super().handle()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        split = urlsplit(self.path)
        answer = self.server.owner._serve(split.path, dict(parse_qsl(split.query)),
                                          {k.lower(): v for k, v in self.headers.items()}, raw)
        if answer.close:
            self.close_connection = True
            try:
                self.request.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        body = answer.body if isinstance(answer.body, bytes) else json.dumps(answer.body).encode()
        try:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


def validating_configuration(name: str, url: str | None, ca_bundle: str | None, *, config_name: str = "",
                             rules: list[dict] | None = None, **webhook: Any) -> dict:
    """A ValidatingWebhookConfiguration with one webhook (``webhook`` fields override the defaults here)."""
    client: dict[str, Any] = {"url": url} if url is not None else {}
    if ca_bundle:
        client["caBundle"] = ca_bundle
    hook = {"name": name, "clientConfig": client, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "rules": rules if rules is not None else [
                {"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                 "resources": ["configmaps"]}],
            **webhook}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": config_name or name}, "webhooks": [hook]}



# --- a CRD with two versions and its converter ------------------------------------------------------------------

GADGETS = "gadgets.example.com"


def gadget_crd(url: str | None, ca_bundle: str | None, storage: str = "v1", strategy: str = "Webhook",
               service: dict | None = None) -> dict:
    """``Gadget`` in ``example.com``: ``v1`` has ``spec.items`` (a list of strings), ``v2`` ``spec.itemsCsv`` (the
    same, comma-separated); both have a status subresource and a printer column of their own."""
    def version(name: str, spec_props: dict, column: dict) -> dict:
        return {"name": name, "served": True, "storage": name == storage, "subresources": {"status": {}},
                "additionalPrinterColumns": [column],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": spec_props},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}}
    conversion: dict[str, Any] = {"strategy": strategy}
    if strategy == "Webhook":
        client: dict[str, Any] = {"service": service} if service is not None else {"url": url}
        if ca_bundle:
            client["caBundle"] = ca_bundle
        conversion["webhook"] = {"clientConfig": client, "conversionReviewVersions": ["v1"]}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": GADGETS},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
                 "versions": [
                     version("v1", {"items": {"type": "array", "items": {"type": "string"}},
                                    "size": {"type": "integer", "default": 1}},
                             {"name": "Items", "type": "string", "jsonPath": ".spec.items"}),
                     version("v2", {"itemsCsv": {"type": "string"}, "size": {"type": "integer", "default": 2}},
                             {"name": "Csv", "type": "string", "jsonPath": ".spec.itemsCsv"})],
                 "conversion": conversion}}


def gadget(name: str, version: str = "v1", items: tuple[str, ...] = ("a", "b"), namespace: str = "default",
           **meta: Any) -> dict:
    spec: dict[str, Any] = {"items": list(items)} if version == "v1" else {"itemsCsv": ",".join(items)}
    return {"apiVersion": f"example.com/{version}", "kind": "Gadget",
            "metadata": {"name": name, "namespace": namespace, **meta}, "spec": spec}


def convert_gadget(obj: dict, desired: str) -> dict:
    """The test converter: v1 ``items`` <-> v2 ``itemsCsv``; everything else kept."""
    out = json.loads(json.dumps(obj))
    spec = out.setdefault("spec", {})
    if desired == "example.com/v2" and "items" in spec:
        spec["itemsCsv"] = ",".join(spec.pop("items"))
    elif desired == "example.com/v1" and "itemsCsv" in spec:
        csv = spec.pop("itemsCsv")
        spec["items"] = csv.split(",") if csv else []
    out["apiVersion"] = desired
    return out


def converter(change: Callable[[dict, dict], dict] | None = None, **result: Any) -> Handler:
    """A conversion webhook answer: every object converted, ``change(response, review)`` applied to the answer
    (to break it), ``result`` overriding ``response.result``."""
    def answer(review: Any) -> Answer:
        request = review["request"]
        converted = [convert_gadget(o, request["desiredAPIVersion"]) for o in request["objects"]]
        response = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                    "response": {"uid": request["uid"], "convertedObjects": converted,
                                 "result": result or {"status": "Success"}}}
        return Answer(change(response, review) if change is not None else response)
    return answer
