"""Test helpers: talk to an embedded API server the way real clients do.

- :class:`Kube` sends requests through the official ``kubernetes`` client (``ApiClient.call_api`` with
  ``_preload_content=False``) and hands back plain dicts: the same HTTP a controller sends.
- :class:`Kubectl` runs the real ``/usr/bin/kubectl`` with its own ``--cache-dir`` (kubectl caches
  discovery per host:port, and every test's server has a new port).
- :func:`wait_for` polls a condition with a deadline: tests never sleep blindly.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

from kubernetes import client
from kubernetes import config as kube_config

KUBECTL = os.environ.get("KUBECTL", "/usr/bin/kubectl")
T = TypeVar("T")


def wait_for(fn: Callable[[], T], timeout: float = 10.0, interval: float = 0.02, what: str = "") -> T:
    """Return fn()'s first truthy value; fail the test if none comes within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = fn()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or fn!r}; last value: {last!r}")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for a server that cannot be told to pick one and report it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any  # parsed JSON, or text when the server did not send JSON

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class Kube:
    """The official client, used raw: plain dicts in and out, every status visible. ``token`` and ``ca_file``: the
    bearer token sent and the CA the server is verified against (a server with TLS and authentication)."""

    def __init__(self, url: str, user_agent: str = "mxjob-tests", *, token: str | None = None,
                 ca_file: str | None = None) -> None:
        config = client.Configuration()
        config.host = url
        if ca_file:
            config.ssl_ca_cert = ca_file
        self.api = client.ApiClient(config)
        self.api.user_agent = user_agent
        self._auth = {"Authorization": f"Bearer {token}"} if token else {}
        if token:
            self.api.set_default_header("Authorization", f"Bearer {token}")

    @classmethod
    def of(cls, apiserver: Any, user_agent: str = "mxjob-tests", token: str | None = None) -> Kube:
        """A client of ``apiserver`` (an embedded ``APIServer``) as its administrator, or as ``token``'s user."""
        return cls(apiserver.url, user_agent, token=token or apiserver.admin_token, ca_file=apiserver.ca_file)

    @classmethod
    def from_kubeconfig(cls, path: str | Path, user_agent: str = "mxjob-tests") -> Kube:
        """A client configured as the official one configures itself from a kubeconfig: its server, the CA of
        ``certificate-authority-data`` and the user's token."""
        config = client.Configuration()
        kube_config.load_kube_config(config_file=str(path), client_configuration=config)
        token = (config.api_key.get("authorization") or "").removeprefix("Bearer ") or None
        return cls(config.host, user_agent, token=token, ca_file=config.ssl_ca_cert)

    def close(self) -> None:
        self.api.close()

    def request(self, method: str, path: str, body: Any = None, query: dict | None = None,
                content_type: str | None = None, accept: str = "application/json",
                raw_body: bytes | None = None) -> Reply:
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        elif body is not None or raw_body is not None:
            headers["Content-Type"] = "application/json"
        if raw_body is not None:
            # The generated client JSON-encodes every body it is given; send exact bytes through its
            # connection pool instead (malformed JSON, odd media types).
            url = self.api.configuration.host + path
            if query:
                url += "?" + urlencode(query)
            r = self.api.rest_client.pool_manager.request(method, url, body=raw_body, headers={**headers, **self._auth})
            raw, status, hdrs = r.data, r.status, r.headers
        else:
            try:
                resp = self.api.call_api(path, method, query_params=list((query or {}).items()),
                                         header_params=headers, body=body, _preload_content=False,
                                         _return_http_data_only=False)
                raw, status, hdrs = resp[0].data, resp[1], resp[2]
            except client.ApiException as e:
                raw, status, hdrs = e.body or b"", e.status, e.headers or {}
        text = raw.decode() if isinstance(raw, bytes) else (raw or "")
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return Reply(status, {k.lower(): v for k, v in dict(hdrs).items()}, parsed)

    def get(self, path: str, **query: Any) -> Reply:
        return self.request("GET", path, query={k: str(v) for k, v in query.items()})

    def post(self, path: str, body: Any, **query: Any) -> Reply:
        return self.request("POST", path, body=body, query={k: str(v) for k, v in query.items()})

    def put(self, path: str, body: Any, **query: Any) -> Reply:
        return self.request("PUT", path, body=body, query={k: str(v) for k, v in query.items()})

    def patch(self, path: str, body: Any, content_type: str = "application/merge-patch+json",
              **query: Any) -> Reply:
        """PATCH with exact bytes: the generated client would turn a non-list JSON patch into a strategic one."""
        return self.request("PATCH", path, raw_body=json.dumps(body).encode(), content_type=content_type,
                            query={k: str(v) for k, v in query.items()})

    def delete(self, path: str, body: Any = None, **query: Any) -> Reply:
        return self.request("DELETE", path, body=body, query={k: str(v) for k, v in query.items()})

    def watch(self, path: str, timeout: float = 10.0, accept: str = "application/json",
              **query: Any) -> Iterator[dict]:
        """Stream a watch's events (dicts) until the server ends it or ``timeout`` passes."""
        q = {"watch": "true", **{k: str(v) for k, v in query.items()}}
        resp = self.api.call_api(path, "GET", query_params=list(q.items()),
                                 header_params={"Accept": accept}, _preload_content=False,
                                 _request_timeout=timeout, _return_http_data_only=True)
        try:
            buf = b""
            for chunk in resp.stream(amt=None, decode_content=False):
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            resp.release_conn()


def pod(name: str, namespace: str = "default", labels: dict | None = None, image: str = "busybox:1.36",
        **spec: Any) -> dict:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"containers": [{"name": "main", "image": image}], **spec}}
    return body


def configmap(name: str, data: dict | None = None, namespace: str = "default", labels: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}, "data": data or {}}


class Kubectl:
    def __init__(self, kubeconfig: Path, cache_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir

    def argv(self, *args: str) -> list[str]:
        return [KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir), *args]

    def run(self, *args: str, input: str | None = None, timeout: float = 30.0,
            check: bool = False) -> subprocess.CompletedProcess:
        proc = subprocess.run(self.argv(*args), check=False, input=input, capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    def ok(self, *args: str, input: str | None = None, timeout: float = 30.0) -> str:
        return self.run(*args, input=input, timeout=timeout, check=True).stdout

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(self.argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "-o", "json"))
