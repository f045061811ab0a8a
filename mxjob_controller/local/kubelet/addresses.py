"""Pod addresses on one machine: each pod its own loopback address, so replicas that share a port do not collide.

On a cluster every pod has its own IP: all of a TFJob's workers listen on ``tfjob-port`` 2222, each on its own
address. On one machine, with every pod on 127.0.0.1, the second worker to bind 2222 fails. Linux routes the whole
of 127.0.0.0/8 to the loopback interface, so the local kubelet gives every pod an address of its own there, and
resolves Service names to those addresses:

- a pod's address (``status.podIP``, the downward API's ``status.podIP``) is the one its *name* was given, and a
  Service with a selector resolves (in the values the kubelet rewrites) to the address of the Service's name. Every
  training-operator replica has a headless Service named like its pod (``<job>-<type>-<index>``), so its peers
  reach it at its own address: worker 1 of TFJob ``j`` listens on ``j-worker-1``'s address, port 2222, and worker
  0 on another address, same port;
- a Service without a selector (something outside the cluster, on this machine) resolves to 127.0.0.1, as every
  name did before;
- a process that listens on all addresses (``""``, ``0.0.0.0``: ps-lite, most servers) is reachable at any of
  them, so it is unaffected; only processes that bind their own address (what ``TF_CONFIG`` gives each replica)
  need one each. Real TensorFlow's gRPC server binds all addresses, so two real TF workers still collide on one
  machine; the addresses make the wiring checkable, not a cluster network.

Why by name and not per pod object: a pod starts while its peers may not exist yet (a job's pods are created in
batches), nor their Services (created side by side with the pods); naming the address after the name makes the
answer the same before and after either exists, with nothing to wait for. So a name written in the Services' own
DNS form (``<svc>.<ns>.svc[.cluster.local]``, as ``TF_CONFIG`` writes every peer) resolves to its name's address
even before its Service is created; a bare name (``<svc>``, ``<svc>.<ns>``, as ``MX_CONFIG`` writes them) is taken
for a Service's only once that Service exists, since any word could be one. A name keeps its address for the
kubelet's life (a job run again under the same name gets the same addresses); names are counted, never reused for
another.

Addresses come from one /16 of 127.0.0.0/8 chosen at random when the kubelet starts (127.1.0.0/16 to
127.254.0.0/16, skipping each block's .0 and .255 hosts), so two local clusters on one machine seldom hand out the
same ones; past 65,024 names the next block is used. Where 127.0.0.0/8 is not all loopback (macOS configures only
127.0.0.1), every pod gets 127.0.0.1, as before.
"""

from __future__ import annotations

import logging
import random
import socket
import threading

log = logging.getLogger(__name__)

LOCAL_IP = "127.0.0.1"
_HOSTS_PER_BLOCK = 254 * 256   # x.y.z with z in 1..254


def loopback_range_usable() -> bool:
    """Whether an address of 127.0.0.0/8 other than 127.0.0.1 can be bound here (Linux: yes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.1.2.3", 0))
        except OSError:
            return False
    return True


class PodAddresses:
    """Thread-safe: ``address(namespace, name)`` is the same for the same name, different for different names."""

    def __init__(self, enabled: bool | None = None, first_block: int | None = None) -> None:
        self.enabled = loopback_range_usable() if enabled is None else enabled
        if not self.enabled:
            log.warning("127.0.0.0/8 is not all loopback here: every pod gets %s (pods listening on one port "
                        "collide)", LOCAL_IP)
        self._block = random.randint(1, 254) if first_block is None else first_block
        self._lock = threading.Lock()
        self._by_name: dict[tuple[str, str], str] = {}

    def address(self, namespace: str, name: str) -> str:
        """The address of the pod, or the selected Service, named ``name`` in ``namespace``."""
        if not self.enabled:
            return LOCAL_IP
        key = (namespace, name)
        # Read without the lock: a name's address never changes once given (a dict read is atomic), and a
        # container start asks for every name of its job's MX_CONFIG, so a 1,000-replica job's starts ask a
        # million times; under one lock, their threads queued on it behind the interpreter's switch interval.
        found = self._by_name.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._by_name.get(key)
            if found is None:
                found = self._by_name[key] = self._nth(len(self._by_name))
            return found

    def _nth(self, n: int) -> str:
        block = (self._block - 1 + n // _HOSTS_PER_BLOCK) % 254 + 1
        rest = n % _HOSTS_PER_BLOCK
        return f"127.{block}.{rest // 254}.{rest % 254 + 1}"
