"""``pods/exec``, ``pods/attach`` and ``pods/portforward`` (GET and POST): what kube-apiserver answers before it
would proxy the stream to the pod's kubelet, and what the kubelet answers for a container that is not running.

- The pod must exist (404), have a node (400 ``pod <name> does not have a host assigned``) and, for exec and
  attach, the container must be named when the pod has several (400 ``a container name must be specified for pod
  <name>, choose one of: [a b]``) and be one of its containers (400 ``container <c> is not valid for pod <name>``).
- A container that is not running: the kubelet's plain-text 404 ``container not found ("<c>")`` (kubectl: ``error:
  unable to upgrade connection: container not found ("<c>")``).
- A running container: the local kubelet runs containers as local processes and serves no exec or attach
  streams, so this is a 400 saying so (kubectl: ``Error from server (BadRequest): ...``); ``kubectl logs`` works.
- Port-forward to a running pod switches to SPDY/3.1 (``port_forward.py`` serves it): kubectl port-forward works.
"""

from __future__ import annotations

import threading
from typing import Any

from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.encoding.websocket import accept_key
from mxjob_controller.local.apiserver.kinds.port_forward import (
    PROTOCOL,
    WEBSOCKET_PROTOCOL,
    PortForwardSession,
    WebSocketPortForward,
)
from mxjob_controller.local.apiserver.request import Request, Response
from mxjob_controller.local.apiserver.storage.store import Store

CONNECT_SUBRESOURCES = ("exec", "attach", "portforward")
_ACTION = {"exec": "exec", "attach": "attach", "portforward": "port-forward"}


def _names(containers: list[dict]) -> str:
    return " ".join(str(c.get("name", "")) for c in containers)


class PodConnect:
    def __init__(self, store: Store, pods_key: str) -> None:
        self._store = store
        self._key = pods_key

    def __call__(self, req: Request) -> Response:
        name = req.name or ""
        entry = self._store.get(self._key, (req.namespace or "", name))
        if entry is None:
            raise errors.not_found(req.rt.resource, name)
        pod = entry.obj
        spec = pod.get("spec") or {}
        status = pod.get("status") or {}
        sub = req.subresource or ""
        action = _ACTION.get(sub, sub)
        if sub == "portforward":
            if not spec.get("nodeName"):
                raise errors.bad_request(f"pod {name} does not have a host assigned")
            return _port_forward(req, pod)
        containers = list(spec.get("containers") or ())
        inits = list(spec.get("initContainers") or ())
        ephemeral = list(spec.get("ephemeralContainers") or ())
        container = req.query.get("container", "")
        if not container:
            if len(containers) == 1:
                container = str(containers[0].get("name", ""))
            elif not containers:
                raise errors.bad_request(f"a container name must be specified for pod {name}")
            else:
                message = f"a container name must be specified for pod {name}, choose one of: [{_names(containers)}]"
                if inits:
                    message += f" or one of the init containers: [{_names(inits)}]"
                raise errors.bad_request(message)
        elif not any(c.get("name") == container for c in containers + inits + ephemeral):
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        if not spec.get("nodeName"):
            raise errors.bad_request(f"pod {name} does not have a host assigned")
        statuses = [*(status.get("containerStatuses") or ()), *(status.get("initContainerStatuses") or ()),
                    *(status.get("ephemeralContainerStatuses") or ())]
        running = any(s.get("name") == container and "running" in (s.get("state") or {}) for s in statuses)
        if not running:
            return Response(404, f'container not found ("{container}")'.encode(),
                            content_type="text/plain; charset=utf-8")
        raise errors.bad_request(_unsupported(action, name))


def _port_forward(req: Request, pod: dict) -> Response:
    """The switch kubectl asks for, to SPDY/3.1 (``port_forward.py`` serves the streams), or to a WebSocket of
    ``v4.channel.k8s.io`` channels (the Python client's); any other WebSocket (kubectl's SPDY tunnelled in one) is a
    400, so that kubectl falls back to SPDY, as with a kubelet that serves no WebSocket."""
    upgrade = {k: v.lower() if k != "sec-websocket-key" else v for k, v in req.upgrade.items()}
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    spdy = "spdy/3.1" in upgrade.get("upgrade", "") and PROTOCOL in upgrade.get("x-stream-protocol-version", "")
    websocket = upgrade.get("upgrade") == "websocket" and WEBSOCKET_PROTOCOL in upgrade.get(
        "sec-websocket-protocol", "").split(",")
    if not (spdy or websocket):
        raise errors.bad_request(f"pods/portforward is served over SPDY/3.1 ({PROTOCOL}) or a WebSocket of "
                                 f"{WEBSOCKET_PROTOCOL} channels (kubectl port-forward falls back to SPDY)")
    address = status.get("podIP") or ""
    if not address:   # kubectl itself refuses a pod that is not Running; the kubelet gives every running pod one
        raise errors.bad_request(f"pod {meta.get('name')} has no IP address yet (status.podIP): the local kubelet "
                                 "has not started it")
    pod_name = f"{meta.get('name')}_{meta.get('namespace')}"
    if spdy:
        def serve(conn: Any, stopping: threading.Event) -> None:
            PortForwardSession(pod_name, address, stopping).run(conn)

        return Response(101, headers={"Connection": "Upgrade", "Upgrade": "SPDY/3.1",
                                      "X-Stream-Protocol-Version": PROTOCOL}, upgrade=serve)
    ports = websocket_ports(req.query.get("ports", ""))

    def serve_websocket(conn: Any, stopping: threading.Event) -> None:
        WebSocketPortForward(pod_name, address, ports, stopping).run(conn)

    return Response(101, headers={"Connection": "Upgrade", "Upgrade": "websocket",
                                  "Sec-WebSocket-Accept": accept_key(req.upgrade.get("sec-websocket-key", "")),
                                  "Sec-WebSocket-Protocol": WEBSOCKET_PROTOCOL}, upgrade=serve_websocket)


def websocket_ports(text: str) -> list[int]:
    """``?ports=8080,9090``, as the kubelet reads it (a 400 in its words otherwise)."""
    if not text:
        raise errors.bad_request('query parameter "port" is required')
    ports = []
    for part in text.split(","):
        if not part.isdigit() or not 0 < int(part) < 65536:
            raise errors.bad_request(f'unable to parse "{part}" as a port: port must be between 1 and 65535')
        ports.append(int(part))
    return ports


def _unsupported(action: str, pod: str) -> str:
    # What to do instead: a local process's ports are this machine's, its output is the pod's log.
    instead = ("connect to its ports on this machine directly" if action == "port-forward"
               else "use kubectl logs to see their output")
    return f"the local kubelet does not support {action}: pod {pod} runs its containers as local processes ({instead})"
