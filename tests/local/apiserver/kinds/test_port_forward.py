"""``kubectl port-forward`` to a pod of the local cluster, the real kubectl over HTTPS: the SPDY/3.1 session
(``kinds/port_forward.py``) carries each local connection to the pod's own loopback address and back, several at
once and megabytes each, and a port nothing listens on is said as the kubelet says it."""

from __future__ import annotations

import re
import signal
import socket
import threading
import urllib.request

import pytest

from tests.local_support import local_cluster, script_pod, wait_phase
from tests.support import wait_for

pytestmark = pytest.mark.slow

PODS = "/api/v1/namespaces/default/pods"
SIZE = 3 * 1024 * 1024
SERVER = f"""
import http.server, os
BODY = bytes(range(256)) * ({SIZE} // 256)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = BODY if self.path == '/big' else ('hello from ' + os.environ['HOSTNAME']).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer((os.environ['POD_IP'], 8080), Handler).serve_forever()
"""
FORWARDING = re.compile(r"Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)")


def forward(kubectl, *args: str):
    """``kubectl port-forward`` in the background, and the local port it listens on (it picks one: ``0:``)."""
    proc = kubectl.popen("port-forward", *args)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True, name="port-forward-stdout")
    reader.start()

    def listening() -> str | None:
        assert proc.poll() is None, f"kubectl port-forward ended: {lines} {proc.stderr.read()}"
        found = [m.group(1) for line in list(lines) if (m := FORWARDING.search(line))]
        return found[0] if found else None
    return proc, wait_for(listening, timeout=30, what="kubectl port-forward listening")


def get(port: str, path: str) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as reply:
        return reply.read()


def test_kubectl_port_forward_reaches_the_pods_port_and_names_a_refused_one(tmp_path):
    with local_cluster(tmp_path) as (_cluster, kube, kubectl):
        env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        assert kube.post(PODS, script_pod("web", SERVER, container={"env": env})).ok
        pod = wait_phase(kube, "web", "Running")
        assert pod["status"]["podIP"].startswith("127.") and pod["status"]["podIP"] != "127.0.0.1"
        # listening before kubectl forwards: a refused first connection would end kubectl (as against a cluster)
        wait_for(lambda: listening(pod["status"]["podIP"], 8080), timeout=30, what="the pod's server listening")

        proc, port = forward(kubectl, "pod/web", "0:8080")
        try:
            assert get(port, "/") == b"hello from web"
            bodies: list[bytes] = []
            threads = [threading.Thread(target=lambda: bodies.append(get(port, "/big")), name=f"get-{i}")
                       for i in range(3)]   # three connections at once, three request ids on one session
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(60)
            assert len(bodies) == 3 and all(body == bytes(range(256)) * (SIZE // 256) for body in bodies)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(30)

        refused, port = forward(kubectl, "pod/web", "0:9")   # nothing listens on 9 at the pod's address
        try:
            with pytest.raises(OSError):
                get(port, "/")
            refused.wait(30)   # kubectl ends: a forward's error ends the session (as against a cluster)
            said = refused.stderr.read()
        finally:
            if refused.poll() is None:
                refused.kill()
                refused.wait(10)
        address = pod["status"]["podIP"]
        assert f"an error occurred forwarding {port} -> 9: error forwarding port 9 to pod web_default: failed to " \
               f"connect to {address}:9: Connection refused" in said, said


def listening(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=5).close()
    except OSError:
        return False
    return True


def test_the_python_clients_websocket_port_forward_reaches_the_pod_and_names_a_refused_port(tmp_path):
    """``kubernetes.stream.portforward`` (the official Python client) speaks v4.channel.k8s.io over a WebSocket:
    a request and its 3 MiB answer through the pod's port, and a second port nothing listens on, said on its
    error channel in the kubelet's words."""
    from kubernetes import client, config
    from kubernetes.stream import portforward

    with local_cluster(tmp_path) as (cluster, kube, _kubectl):
        env = [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        assert kube.post(PODS, script_pod("web", SERVER, container={"env": env})).ok
        address = wait_phase(kube, "web", "Running")["status"]["podIP"]
        wait_for(lambda: listening(address, 8080), timeout=30, what="the pod's server listening")
        api = client.CoreV1Api(config.new_client_from_config(str(cluster.server.write_kubeconfig(
            tmp_path / "python-kubeconfig"))))

        forward = portforward(api.connect_get_namespaced_pod_portforward, "web", "default", ports="8080,9")
        sock = forward.socket(8080)
        sock.setblocking(True)
        sock.sendall(b"GET /big HTTP/1.0\r\n\r\n")
        received = b""
        while chunk := sock.recv(1 << 20):
            received += chunk
        sock.close()
        refused = forward.error(9)
        assert received.endswith(b"\r\n\r\n" + bytes(range(256)) * (SIZE // 256)), received[:200]
        assert refused == f"error forwarding port 9 to pod web_default: failed to connect to {address}:9: " \
                          "Connection refused", refused
