"""In-cluster configuration: the pod's service account, as client-go's ``rest.InClusterConfig``.

The API server is ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`` (IPv6 hosts bracketed); the
token is read from the mounted file on every request that follows a rotation (see :class:`FileToken`), and the
server is verified with the mounted ``ca.crt``. The pod's namespace comes from the mounted ``namespace`` file.

The mount is at :data:`SERVICE_ACCOUNT_DIR`, as in every pod. Outside a pod (a test, ``local up --serviceaccount
... --token-dir DIR``), ``$MXJOB_SERVICE_ACCOUNT_DIR`` names another directory holding the same three files
(:func:`default_service_account_dir`); client-go has no such variable, and in a pod nothing sets it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from mxjob_controller.runtime.client.config import ClientConfig, ConfigError, FileToken

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_DIR_ENV = "MXJOB_SERVICE_ACCOUNT_DIR"


def default_service_account_dir(env: Mapping[str, str] | None = None) -> str:
    """``$MXJOB_SERVICE_ACCOUNT_DIR`` when set, else the pod's mount."""
    env = os.environ if env is None else env
    return env.get(SERVICE_ACCOUNT_DIR_ENV) or SERVICE_ACCOUNT_DIR


def in_cluster_available(env: Mapping[str, str] | None = None, root: str = SERVICE_ACCOUNT_DIR) -> bool:
    env = os.environ if env is None else env
    return bool(env.get("KUBERNETES_SERVICE_HOST") and env.get("KUBERNETES_SERVICE_PORT")
                and os.path.isfile(os.path.join(root, "token")))


def load_in_cluster(env: Mapping[str, str] | None = None, root: str = SERVICE_ACCOUNT_DIR) -> ClientConfig:
    env = os.environ if env is None else env
    host, port = env.get("KUBERNETES_SERVICE_HOST", ""), env.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError("unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
                          "KUBERNETES_SERVICE_PORT must be defined")
    token = FileToken(os.path.join(root, "token"))
    if not token():
        raise ConfigError(f"unable to load in-cluster configuration: no token in {token.path}")
    ca_file = os.path.join(root, "ca.crt")
    namespace = "default"
    try:
        with open(os.path.join(root, "namespace"), encoding="utf-8") as f:
            namespace = f.read().strip() or namespace
    except OSError:
        pass
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return ClientConfig(host=f"https://{netloc}", ca_file=ca_file if os.path.isfile(ca_file) else None,
                        token=token, namespace=namespace, source="in-cluster service account")
