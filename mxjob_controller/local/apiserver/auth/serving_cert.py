"""The embedded API server's TLS material: a CA of its own and a serving certificate naming every address a client
of the local server uses (``localhost``, ``127.0.0.1``, ``::1``, the listening host) and kube's in-cluster names
(``kubernetes``, ``kubernetes.default.svc``...), made at start by ``runtime/tls.py``."""

from __future__ import annotations

import os

from mxjob_controller.runtime.tls import TLSMaterial

KUBE_DNS_NAMES = ("kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")


def apiserver_tls(host: str = "127.0.0.1") -> TLSMaterial:
    # The pid in the folder's name: a server killed by SIGKILL leaves it, and the next local up removes it (it
    # holds no key, but nothing should pile up).
    return TLSMaterial(host, KUBE_DNS_NAMES, common_name="kube-apiserver",
                       prefix=f"mxjob-apiserver-tls-{os.getpid()}-")
