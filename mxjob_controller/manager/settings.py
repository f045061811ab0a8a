"""What ``mxjob-controller run`` was asked to do, validated and resolved: one frozen value the manager runs from.

The command line (``cli/run.py``) builds it; nothing downstream reads flags or the environment again, except the
one documented fallback chain for the Lease's namespace (:func:`lease_namespace`), which reads the pod's own
environment and service-account mount.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from mxjob_controller.runtime.client.budget import Budget, explicit_budget
from mxjob_controller.runtime.client.incluster import SERVICE_ACCOUNT_DIR
from mxjob_controller.runtime.events import DEFAULT_EVENT_BURST, DEFAULT_EVENT_QPS
from mxjob_controller.webhooks.certs import DEFAULT_CERT_DIR

DEFAULT_LEASE_NAME = "mxjob-controller"
DEFAULT_RESYNC_PERIOD = 12 * 3600.0      # the Go mxnet-operator's DefaultResyncPeriod
DEFAULT_CACHE_SYNC_TIMEOUT = 60.0        # seconds the caches' initial lists may take before the start fails
DEFAULT_QPS = 20.0                       # training-operator's --kube-api-qps: the bucket where the server has no APF
DEFAULT_BURST = 30                       # training-operator's --kube-api-burst
POD_NAMESPACE_ENV = "POD_NAMESPACE"      # set from the downward API by manifests/controller/deployment.yaml


@dataclass(frozen=True, slots=True)
class RunSettings:
    kubeconfig: str | None = None
    master: str | None = None
    namespaces: tuple[str, ...] = ()            # empty: every namespace
    frameworks: tuple[str, ...] = ()            # empty: the default ones (frameworks.DEFAULT_FRAMEWORKS) whose CRD
                                                # is installed; named: exactly these, each CRD required
    threadiness: int = 1
    metrics_bind_address: str = ":8080"
    health_probe_bind_address: str = ":8081"
    webhook_bind_address: str = "0"             # "0" (or ""): no webhook server (webhooks/server.py)
    webhook_cert_dir: str = DEFAULT_CERT_DIR    # tls.crt and tls.key, as a Secret or cert-manager mounts them
    leader_elect: bool = False
    leader_election_id: str = DEFAULT_LEASE_NAME
    leader_election_namespace: str = ""         # resolved: never empty once built by the command line
    # None (neither given): no client-side limit where the server advertises API Priority and Fairness, else a
    # bucket of DEFAULT_QPS/DEFAULT_BURST. Either given: always that bucket (qps negative: no limit).
    kube_api_qps: float | None = None
    kube_api_burst: int | None = None
    event_qps: float = DEFAULT_EVENT_QPS         # the events client's own budget, apart from kube_api_*
    event_burst: int = DEFAULT_EVENT_BURST
    resync_period: float = DEFAULT_RESYNC_PERIOD
    cache_sync_timeout: float = DEFAULT_CACHE_SYNC_TIMEOUT
    gang_scheduler_name: str = ""               # "": off; "volcano"; anything else: scheduler-plugins
    json_log_format: bool = True
    log_level: str = "info"
    shutdown_timeout: float = 8.0               # SIGTERM to exit, all included (the pod gets 15 s)

    @property
    def explicit_client_budget(self) -> bool:
        return self.kube_api_qps is not None or self.kube_api_burst is not None

    def client_budget(self) -> tuple[float, int, bool]:
        """(qps, burst, detect_flow_control) for the controller's clients."""
        qps = DEFAULT_QPS if self.kube_api_qps is None else self.kube_api_qps
        burst = DEFAULT_BURST if self.kube_api_burst is None else self.kube_api_burst
        return qps, burst, not self.explicit_client_budget

    @property
    def scope(self) -> str:
        """How the logs name what is watched."""
        return ", ".join(self.namespaces) if self.namespaces else "all namespaces"


def describe_budget(settings: RunSettings, detected: Budget) -> str:
    """The client budget in force and why, for the start-up line: the flags', or what the server called for."""
    if not settings.explicit_client_budget:
        return detected.why
    qps, burst, _ = settings.client_budget()
    flags = f"explicit --kube-api-qps {qps:g}" + (f" --kube-api-burst {burst}" if qps >= 0 else "")
    return f"{flags}: {explicit_budget(qps, burst).why}"


def lease_namespace(flag: str | None, env: Mapping[str, str] | None = None,
                    service_account_dir: str = SERVICE_ACCOUNT_DIR) -> tuple[str, str]:
    """The Lease's namespace and where it came from: ``--leader-election-namespace``, else ``$POD_NAMESPACE``, else
    the mounted service account's ``namespace`` file, else ``default``.

    Why not ``default`` first, as the Go mxnet-operator did: its lock then lived outside the operator's own
    namespace, where its Role (and an admin's eyes) are.
    """
    if flag:
        return flag, "--leader-election-namespace"
    env = os.environ if env is None else env
    if env.get(POD_NAMESPACE_ENV, "").strip():
        return env[POD_NAMESPACE_ENV].strip(), f"${POD_NAMESPACE_ENV}"
    path = os.path.join(service_account_dir, "namespace")
    try:
        with open(path, encoding="utf-8") as f:
            found = f.read().strip()
    except OSError:
        found = ""
    if found:
        return found, path
    return "default", "the default"
