"""Kubeconfig files for the embedded cluster, written atomically (temp file + rename).

A reader (kubectl, a controller started by a script) never sees a half-written file: the file appears
only once it is complete, which is also the signal that the server behind it is ready. A server with TLS puts its
CA in the file (``certificate-authority-data``: clients verify it) and, when it authenticates, the user's bearer
token: the file is the credential, hence mode 0600.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from mxjob_controller.local.files import write_atomically

CONTEXT = "mxjob-local"


def kubeconfig_for(server_url: str, namespace: str = "default", ca_pem: bytes | None = None,
                   token: str | None = None) -> dict[str, Any]:
    cluster: dict[str, Any] = {"server": server_url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": {"token": token} if token else {}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT,
                                                   "namespace": namespace}}],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, config: dict[str, Any]) -> Path:
    return write_atomically(path, yaml.safe_dump(config, sort_keys=False).encode(), 0o600)
