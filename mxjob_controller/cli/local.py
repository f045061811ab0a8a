"""``mxjob-controller local …``: the embedded cluster for users (and tests) without a real one."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from mxjob_controller.cli.flag_types import DurationOrSeconds
from mxjob_controller.cli.manifests import expand, read_documents
from mxjob_controller.kube import quantity
from mxjob_controller.local.apiserver.auth.pod_security_labels import LEVELS
from mxjob_controller.local.apiserver.http.deadlines import REQUEST_TIMEOUT
from mxjob_controller.local.apiserver.http.inflight_limits import MAX_MUTATING_REQUESTS_INFLIGHT, MAX_REQUESTS_INFLIGHT
from mxjob_controller.local.kubelet.devices import GPU_RESOURCE, GpuSpecError, detect_nvidia_gpus, parse_gpus
from mxjob_controller.local.kubelet.node import CapacityError, parse_capacity
from mxjob_controller.local.kubelet.options import KubeletOptions
from mxjob_controller.logs import setup_logging

if TYPE_CHECKING:   # the embedded cluster is imported when a command runs: `local run` says something first
    from mxjob_controller.local.apiserver.auth.pod_security_admission import PodSecurityConfiguration
    from mxjob_controller.local.apiserver.http.faults import FaultRule
    from mxjob_controller.local.cluster import LocalCluster

log = logging.getLogger(__name__)
DEFAULT_KUBECONFIG = ".mxjob-local/kubeconfig"
RUN_KUBECONFIG = ".mxjob-local/run-kubeconfig"
JOB_KINDS = ("MXJob", "TFJob", "GenericJob")   # what local run follows (local/submission.py: JOB_RESOURCES)
# A default `local up --help` shows, kept here so that loading this module loads no cluster (a test holds it equal
# to job_ports' DEFAULT_RANGE)
DEFAULT_JOB_PORTS = "20000-29999"
METRICS_ADDRESS = "127.0.0.1:8080"   # local up's controller /metrics (run's default port, on loopback)
_AUTHORIZATION = {"rbac": "RBAC", "always-allow": "AlwaysAllow"}   # --authorization → kube's mode names
# Containers run in sessions of their own, so a closed terminal (SIGHUP) reaches only us: we stop them all.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# HTTPS by default, as kind and minikube serve: strict clients (client-node, Headlamp) refuse plain HTTP.
_TLS_HELP = ("Serve HTTPS with a CA and a certificate made at start (the kubeconfig carries the CA and an "
             "administrator's token in system:masters), with authentication and RBAC, as kind does (the default; "
             "--tls is kept for older scripts). --insecure-http: plain HTTP without authentication (local up: "
             "unless --authorization rbac).")
_CAPACITY_HELP = ("What the node 'local' offers pods, replacing the machine's (its cores, memory, disk and 110 pods) "
                  "resource by resource, e.g. cpu=2,memory=4Gi,pods=110 (extended resources too: example.com/foo=2). "
                  "Pods bind only where their requests fit; a container without requests counts as cpu 100m and "
                  "memory 200Mi, so that a sweep of such pods still queues.")
_GANG_HELP = ("Gang-schedule every job (a PodGroup each; runPolicy.schedulingPolicy sets minAvailable, queue, "
              "minResources...) as the controller's flag of that name does: "
              "'volcano' (Volcano's PodGroups, scheduling.volcano.sh) or a scheduler-plugins scheduler name "
              "(coscheduling's PodGroups, scheduling.x-k8s.io); the local scheduler acts as that scheduler, binding "
              "a job's pods only all together. [default: off]")
_POD_SECURITY_HELP = ("The Pod Security Standard every namespace enforces unless its "
                      "pod-security.kubernetes.io/enforce label says otherwise (kube's PodSecurity admission "
                      "defaults.enforce): privileged (kube's default: nothing refused), baseline (no host namespaces, "
                      "privileged containers, hostPath volumes, added capabilities...) or restricted (baseline, and "
                      "non-root, allowPrivilegeEscalation=false, capabilities drop ALL, a seccomp profile). "
                      "[default: privileged, or the --admission-control-config-file's]")
_ADMISSION_CONFIG_HELP = ("kube-apiserver's AdmissionConfiguration file: its PodSecurity plugin's "
                          "PodSecurityConfiguration sets the defaults of every mode and the exempt usernames, "
                          "namespaces and runtime classes (--pod-security overrides its defaults.enforce).")
#: ``--validate`` as kubectl spells it → the server's ``fieldValidation``.
VALIDATE = {"strict": "Strict", "true": "Strict", "warn": "Warn", "ignore": "Ignore", "false": "Ignore"}
__all__ = ["DEFAULT_KUBECONFIG", "local"]


def __getattr__(name: str) -> Any:
    """``packaged_crds``, as this module has always offered it, without loading the cluster to import the module."""
    if name == "packaged_crds":
        from mxjob_controller.local.cluster import packaged_crds  # noqa: PLC0415

        return packaged_crds
    raise AttributeError(name)


def pod_security_options(f: Any) -> Any:
    """``--pod-security`` and ``--admission-control-config-file``, shared by ``local up`` and ``local run``."""
    f = click.option("--admission-control-config-file", "admission_config", default=None,
                     type=click.Path(dir_okay=False, exists=True), help=_ADMISSION_CONFIG_HELP)(f)
    return click.option("--pod-security", "pod_security", default=None, type=click.Choice(LEVELS),
                        help=_POD_SECURITY_HELP)(f)


def _pod_security(level: str | None, admission_config: str | None) -> PodSecurityConfiguration:
    from mxjob_controller.local.apiserver.auth.pod_security_admission import (  # noqa: PLC0415
        PodSecurityConfiguration,
    )
    from mxjob_controller.local.apiserver.auth.pod_security_config import (  # noqa: PLC0415
        ConfigError,
        load_admission_configuration,
        with_enforce,
    )

    try:
        config = load_admission_configuration(admission_config) if admission_config else PodSecurityConfiguration()
    except ConfigError as e:
        raise click.BadParameter(str(e), param_hint="--admission-control-config-file") from None
    return with_enforce(config, level)


@click.group()
def local() -> None:
    """The local cluster on this machine: an embedded API server, the MXJob and TFJob controllers, and a kubelet
    that runs pods as processes."""


@local.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port).")
@click.option("--kubeconfig-out", default=DEFAULT_KUBECONFIG, show_default=True, type=click.Path(dir_okay=False),
              help="Where to write a kubeconfig for this server (written atomically once it is ready; removed at "
                   "the end). A path another running local cluster holds is refused.")
@click.option("--no-crds", is_flag=True, help="Do not apply the project's CRDs at start.")
@click.option("--bookmark-interval", default=60.0, show_default=True, type=click.FloatRange(min=0.05),
              help="Seconds between watch bookmarks.")
@click.option("--log-level", default="info", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False))
@click.option("--json-log-format/--text-log-format", default=False, show_default=True)
@click.option("--watcher-queue", default=10_000, show_default=True, type=click.IntRange(min=1),
              help="Events a watch may lag behind before the server disconnects it.")
@click.option("--fault", "faults", multiple=True, metavar="RULE", callback=lambda _c, _p, v: _parse_faults(v),
              help="Inject a fault, e.g. 'verb=list,resource=pods,code=429,retry-after=2,count=3' "
                   "(repeatable; keys in mxjob_controller/local/apiserver/http/faults.py).")
@click.option("--fault-seed", default=0, show_default=True, type=int,
              help="Seed of the faults' random choices: the same seed reproduces the same faults.")
@click.option("--compact-every", default=0.0, show_default=True, type=click.FloatRange(min=0),
              help="Forget every resource's watch history this often (seconds; 0: never), as etcd's compaction "
                   "does: watches resuming from before it get 410 Expired and must relist.")
@click.option("--audit-log", default=None, type=click.Path(dir_okay=False),
              help="Append a JSON line per request (verb, resource, name, user agent, code, time spent).")
@click.option("--request-timeout", default=REQUEST_TIMEOUT, show_default=True, type=click.FloatRange(min=0),
              help="Seconds a request that is not a watch or a stream may take before the server answers 504 "
                   "Timeout, as kube-apiserver's flag (which takes a duration); 0: no limit.")
@click.option("--max-requests-inflight", default=MAX_REQUESTS_INFLIGHT, show_default=True,
              type=click.IntRange(min=1),
              help="With --max-mutating-requests-inflight: the requests the server runs at once, shared out among "
                   "API Priority and Fairness' priority levels (past a level's share, requests queue, then get 429).")
@click.option("--max-mutating-requests-inflight", default=MAX_MUTATING_REQUESTS_INFLIGHT, show_default=True,
              type=click.IntRange(min=1), help="See --max-requests-inflight.")
@click.option("--flow-control/--no-flow-control", default=True, show_default=True,
              help="API Priority and Fairness, as kube-apiserver's --enable-priority-and-fairness (--no-flow-control: "
                   "no queues, no 429s and no X-Kubernetes-PF-* headers, as a server without it, so that clients "
                   "keep their own rate limit; no --max-requests-inflight limit either).")
@click.option("--kubelet", "kubelet_mode", default="process", show_default=True,
              type=click.Choice(["process", "none"]),
              help="process: run pods' containers as local processes on the node 'local'; none: leave pods Pending "
                   "(for tests that play the kubelet).")
@click.option("--controller/--no-controller", default=True, show_default=True,
              help="Run the job controllers (MXJob, TFJob, GenericJob) in this process (--no-controller: run "
                   "`mxjob-controller run` yourself).")
@click.option("--webhooks/--no-webhooks", default=True, show_default=True,
              help="Serve the admission webhooks (an invalid job is refused at submit) and MXJob v1alpha1 through "
                   "the conversion webhook, in this process.")
@click.option("--threadiness", default=4, show_default=True, type=click.IntRange(min=1),
              help="Reconcile workers of the embedded controller.")
@click.option("--job-ports", default=DEFAULT_JOB_PORTS, show_default=True,
              callback=lambda _c, _p, v: _parse_ports(v), metavar="FIRST-LAST|none",
              help="Give each new MXJob scheduler ports of its own from this range where it leaves mxjob-port at "
                   "9091, so jobs can run side by side on one machine ('none': keep 9091). Only with --kubelet "
                   "process: with --kubelet none nothing runs, and every job keeps the ports it was written with.")
@click.option("--workdir", default=None, type=click.Path(file_okay=False, exists=True),
              help="Directory containers start in when their workingDir does not exist here.  [default: the current "
                   "directory]")
@click.option("--crashloop-backoff", default=10.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Seconds before the second restart of a crashing container (then doubling, at most 5 minutes).")
@click.option("--tls/--insecure-http", default=True, help=_TLS_HELP)
@click.option("--authorization", default=None, type=click.Choice(list(_AUTHORIZATION), case_sensitive=False),
              help="rbac: requests are authorized by the Roles and bindings applied to the server (the "
                   "kubeconfig's user is in system:masters; a request without a bearer token is system:anonymous); "
                   "always-allow: everything is allowed.  "
                   "[default: rbac, always-allow with --insecure-http]")
@click.option("--serviceaccount", "service_account", default=None, metavar="NAMESPACE/NAME",
              callback=lambda _c, _p, v: _parse_service_account(v),
              help="Write a token of this ServiceAccount (which may be created later, e.g. by kubectl apply) to "
                   "--token-dir with ca.crt and namespace, as a pod's projected volume holds them (not with "
                   "--insecure-http).")
@click.option("--token-dir", default=None, type=click.Path(file_okay=False),
              help="Where --serviceaccount's files go: `mxjob-controller run` reads them with "
                   "MXJOB_SERVICE_ACCOUNT_DIR set to it and KUBERNETES_SERVICE_HOST/PORT set, as in a pod.")
@click.option("--sandbox/--no-sandbox", default=True, show_default=True,
              help="Run each container in the pod sandbox (own PID and mount namespaces, private /tmp, the cluster's "
                   "files hidden, cgroup limits); --no-sandbox: plain processes (machines without namespaces).")
@click.option("--container-log-max-size", default="10Mi", show_default=True, metavar="QUANTITY",
              callback=lambda _c, _p, v: _parse_log_size(v),
              help="A container's log file is rotated past this size (the kubelet's containerLogMaxSize).")
@click.option("--container-log-max-files", default=5, show_default=True, type=click.IntRange(min=2),
              help="Log files kept per container instance, the live one included (containerLogMaxFiles).")
@click.option("--pod-max-pids", default=4096, show_default=True, type=int,
              help="Processes and threads a pod may have (cgroup pids limit; 0: unlimited).")
@click.option("--container-user", default=None, metavar="UID[:GID]", callback=lambda _c, _p, v: _parse_user(v),
              help="The user containers run as when their securityContext names none (as an image's USER).  "
                   "[default: 65534:65534 (nobody) when run as root, else your own]")
@click.option("--gpus", default="auto", show_default=True, metavar="auto|none|0,1,…",
              callback=lambda _c, _p, v: _parse_gpus(v),
              help=f"The GPUs the node advertises as {GPU_RESOURCE} and gives to containers that ask for them, each "
                   "its own (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES): auto: those `nvidia-smi -L` lists (none "
                   "without nvidia-smi); none; or these device indices.")
@click.option("--capacity", default="", metavar="NAME=QUANTITY,...", callback=lambda _c, _p, v: _parse_capacity(v),
              help=_CAPACITY_HELP)
@click.option("--gang-scheduler-name", default=None, metavar="NAME", help=_GANG_HELP)
@pod_security_options
@click.option("--metrics-bind-address", default=METRICS_ADDRESS, show_default=True, metavar="[HOST]:PORT|0",
              help="Serve the embedded controllers' /metrics there, as `run --metrics-bind-address` does (the same "
                   "names, so manifests/monitoring's dashboard and alerts work): Prometheus scrapes it. When the "
                   "default port is taken, any free port (printed); 0: off.")
def up(host: str, port: int, kubeconfig_out: str, no_crds: bool, bookmark_interval: float, log_level: str,
       json_log_format: bool, watcher_queue: int, faults: list[FaultRule], fault_seed: int, compact_every: float,
       audit_log: str | None, request_timeout: float, max_requests_inflight: int,
       max_mutating_requests_inflight: int, kubelet_mode: str, controller: bool, webhooks: bool, threadiness: int,
       job_ports: tuple[int, int] | None, workdir: str | None, crashloop_backoff: float, tls: bool,
       authorization: str | None, service_account: tuple[str, str] | None, token_dir: str | None, sandbox: bool,
       container_log_max_size: int, container_log_max_files: int,
       pod_max_pids: int, container_user: tuple[int, int] | None, gpus: tuple[str, ...] | None,
       flow_control: bool, capacity: dict[str, str], gang_scheduler_name: str | None, pod_security: str | None,
       admission_config: str | None, metrics_bind_address: str) -> None:
    """Run a local cluster in the foreground until SIGINT or SIGTERM: the embedded API server, its webhooks, the
    MXJob, TFJob and GenericJob controllers, and a kubelet that runs each pod's containers as processes of this
    machine."""
    if no_crds and controller:
        raise click.UsageError("--no-crds leaves the MXJob API out, which the controller needs: add --no-controller")
    if (service_account is None) != (token_dir is None):
        raise click.UsageError("--serviceaccount and --token-dir go together")
    if service_account is not None and not tls:
        raise click.UsageError("--serviceaccount needs TLS (drop --insecure-http): in-cluster clients speak HTTPS "
                               "only")
    from mxjob_controller.local.apiserver.server import ServerOptions  # noqa: PLC0415
    from mxjob_controller.local.cluster import ClusterOptions, LocalCluster  # noqa: PLC0415
    from mxjob_controller.local.kubeconfig_claim import KubeconfigInUseError, claim_path  # noqa: PLC0415

    try:
        claim = claim_path(kubeconfig_out)
    except KubeconfigInUseError as e:
        raise click.UsageError(str(e)) from None
    pod_security_config = _pod_security(pod_security, admission_config)
    setup_logging(log_level, json_log_format)
    stop = threading.Event()
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda *_: stop.set())
    cluster = LocalCluster(ClusterOptions(
        server=ServerOptions(host=host, port=port, bookmark_interval=bookmark_interval, watcher_queue=watcher_queue,
                             fault_seed=fault_seed, audit_log=audit_log, tls=tls, request_timeout=request_timeout,
                             max_requests_inflight=max_requests_inflight,
                             max_mutating_requests_inflight=max_mutating_requests_inflight, flow_control=flow_control,
                             authorization=_AUTHORIZATION[authorization.lower()] if authorization else None,
                             pod_security=pod_security_config),
        crds=not no_crds, kubelet=kubelet_mode == "process", controller=controller, webhooks=webhooks and not no_crds,
        threadiness=threadiness, gang_scheduler_name=gang_scheduler_name,
        job_ports=job_ports, metrics_bind_address=metrics_bind_address if controller else "0",
        metrics_free_port_if_taken=metrics_bind_address == METRICS_ADDRESS,
        kubelet_options=KubeletOptions(workdir=os.path.abspath(workdir or os.getcwd()),
                                       backoff_initial=crashloop_backoff, sandbox=sandbox,
                                       pod_pids_limit=pod_max_pids, container_user=container_user,
                                       gpus=_node_gpus(gpus), capacity=capacity,
                                       container_log_max_size=container_log_max_size,
                                       container_log_max_files=container_log_max_files)))
    for rule in faults:
        cluster.server.faults.add(rule)
    cluster.server.faults.compact_every(compact_every)
    try:
        cluster.start()
    except OSError as e:
        claim.release()
        raise click.ClickException(f"cannot listen on {e.filename or f'{host}:{port}'}: {e.strerror or e}") from None
    reports = None
    try:
        if service_account is not None and token_dir is not None:   # before the kubeconfig: that says "ready"
            cluster.server.write_token_dir(token_dir, *service_account)
        path = cluster.server.write_kubeconfig(kubeconfig_out)
        claim.written()
        parts = ["API server"] + (["MXJob and TFJob controllers"] if controller else []) + \
            (["kubelet (node 'local', pods run as processes)"] if kubelet_mode == "process" else [])
        click.echo(f"Local cluster running: {', '.join(parts)}")
        click.echo(f"Embedded Kubernetes API server listening on {cluster.server.url}"
                   + (f" (authorization: {cluster.server.options.authorization_mode})"
                      if cluster.server.admin_token else ""))
        defaults = pod_security_config.defaults
        if not defaults.fully_privileged:
            click.echo(f"Pod Security: a namespace without pod-security.kubernetes.io labels enforces "
                       f"{defaults.enforce}, audits {defaults.audit}, warns {defaults.warn}")
        if cluster.kubelet is not None:
            for line in cluster.kubelet.sandbox.report():
                click.echo(line)
            if cluster.kubelet.devices.devices:
                click.echo(f"GPUs: {GPU_RESOURCE} {len(cluster.kubelet.devices.devices)} (devices "
                           f"{','.join(cluster.kubelet.devices.devices)}), each container given its own")
        if cluster.metrics is not None and cluster.metrics.metrics_server is not None:
            click.echo(f"Controller metrics: {cluster.metrics.metrics_server.url}/metrics")
        click.echo(f"Kubeconfig written to {path}")
        click.echo(f"  export KUBECONFIG={Path(path).resolve()}")
        click.echo("  kubectl create -f examples/mxjob-dist-train.yaml && kubectl get mxjobs,pods")
        if service_account is not None and token_dir is not None:
            click.echo(f"Service account {'/'.join(service_account)}: token, ca.crt and namespace in {token_dir}; "
                       "the controller as in a pod:")
            click.echo(f"  MXJOB_SERVICE_ACCOUNT_DIR={Path(token_dir).resolve()} KUBERNETES_SERVICE_HOST="
                       f"{cluster.server.host} KUBERNETES_SERVICE_PORT={cluster.server.port} mxjob-controller run")
        if controller:   # a failed job's fate, and where its pods' logs went, said where the user looks
            from mxjob_controller.local.job_reports import JobReports  # noqa: PLC0415

            reports = JobReports(cluster.client("local-up-console"), click.echo).start()
        click.echo("Press Ctrl-C to stop.", err=False)
        while not stop.wait(0.5):
            pass
    finally:
        if reports is not None:
            reports.stop()
        cluster.stop()
        claim.release()
        if token_dir is not None:   # the token died with the server: as a pod's volume, it goes too
            Path(token_dir, "token").unlink(missing_ok=True)


def _parse_service_account(value: str | None) -> tuple[str, str] | None:
    if value is None:
        return None
    namespace, sep, name = value.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise click.BadParameter(f"{value!r}: expected NAMESPACE/NAME", param_hint="--serviceaccount")
    return namespace, name


def _parse_user(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    uid, _, gid = value.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        raise click.BadParameter(f"{value!r}: expected UID or UID:GID (numbers)", param_hint="--container-user")
    return int(uid), int(gid or uid)


def _parse_log_size(value: str) -> int:
    """``--container-log-max-size``: a quantity of bytes (``10Mi``, ``500Ki``), at least 4Ki."""
    try:
        size = int(quantity.parse(value).value)
    except quantity.QuantityError as e:
        raise click.BadParameter(f"{value!r}: {e}", param_hint="--container-log-max-size") from None
    if size < 4096:
        raise click.BadParameter(f"{value!r}: must be at least 4Ki", param_hint="--container-log-max-size")
    return size


def _parse_gpus(value: str) -> tuple[str, ...] | None:
    """``--gpus``: the device ids, or None for ``auto`` (found by :func:`_node_gpus` once logging is set up)."""
    try:
        return None if value.strip().lower() == "auto" else parse_gpus(value, tuple)
    except GpuSpecError as e:
        raise click.BadParameter(str(e), param_hint="--gpus") from None


def _node_gpus(gpus: tuple[str, ...] | None) -> tuple[str, ...]:
    return detect_nvidia_gpus() if gpus is None else gpus


def _parse_ports(value: str) -> tuple[int, int] | None:
    try:
        from mxjob_controller.local.job_ports import parse_range  # noqa: PLC0415

        return parse_range(value)
    except ValueError as e:
        raise click.BadParameter(f"{value!r}: {e}", param_hint="--job-ports") from None


def _parse_capacity(value: str) -> dict[str, str]:
    try:
        return parse_capacity(value)
    except CapacityError as e:
        raise click.BadParameter(str(e), param_hint="--capacity") from None


def _parse_faults(values: tuple[str, ...]) -> list[FaultRule]:
    from mxjob_controller.local.apiserver.http.faults import parse_rule  # noqa: PLC0415

    rules = []
    for text in values:
        try:
            rules.append(parse_rule(text))
        except ValueError as e:
            raise click.BadParameter(f"{text!r}: {e}", param_hint="--fault") from None
    return rules


@local.command("run")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True))
@click.option("--logs", is_flag=True, help="Stream every container's output, each line prefixed by its pod.")
@click.option("--timeout", default=None, type=DurationOrSeconds(), metavar="DURATION",
              help="Give up (exit 124) when the jobs have not all finished by then: a Go duration (90s, 5m, 1h30m) "
                   "or a number of seconds.")
@click.option("--validate", default="strict", show_default=True,
              type=click.Choice(sorted(VALIDATE), case_sensitive=False),
              help="As kubectl's flag: strict (true) refuses an object with an unknown or duplicate field (exit 2, "
                   "each field named, with the nearest valid name); warn prints them and drops them; ignore (false) "
                   "drops them silently.")
@click.option("--kubeconfig-out", default=None, type=click.Path(dir_okay=False),
              help=f"A kubeconfig for kubectl while the jobs run (removed at the end); never one a running local "
                   f"cluster holds.  [default: {RUN_KUBECONFIG}, or -2, -3… when another local run holds it]")
@click.option("--workdir", default=None, type=click.Path(file_okay=False, exists=True),
              help="Directory containers start in when their workingDir does not exist here.  [default: the current "
                   "directory]")
@click.option("--threadiness", default=4, show_default=True, type=click.IntRange(min=1),
              help="Reconcile workers of the embedded controller.")
@click.option("--log-level", default="warning", show_default=True,
              type=click.Choice(["debug", "info", "warning", "error"], case_sensitive=False),
              help="Least severe level of the cluster's own log (on stderr).")
@click.option("--sandbox/--no-sandbox", default=True, show_default=True,
              help="Run each container in the pod sandbox (see `local up --help`).")
@click.option("--container-user", default=None, metavar="UID[:GID]", callback=lambda _c, _p, v: _parse_user(v),
              help="The user containers run as when their securityContext names none (see `local up --help`).")
@click.option("--gpus", default="auto", show_default=True, metavar="auto|none|0,1,…",
              callback=lambda _c, _p, v: _parse_gpus(v),
              help=f"The GPUs the node gives to containers that ask for {GPU_RESOURCE} (see `local up --help`).")
@click.option("--tls/--insecure-http", default=True, help=_TLS_HELP)
@click.option("--capacity", default="", metavar="NAME=QUANTITY,...", callback=lambda _c, _p, v: _parse_capacity(v),
              help=_CAPACITY_HELP)
@click.option("--gang-scheduler-name", default=None, metavar="NAME", help=_GANG_HELP)
@pod_security_options
def run_files(files: tuple[str, ...], logs: bool, timeout: float | None, validate: str, kubeconfig_out: str | None,
              workdir: str | None, threadiness: int, log_level: str, sandbox: bool,
              container_user: tuple[int, int] | None, tls: bool, gpus: tuple[str, ...] | None,
              capacity: dict[str, str], gang_scheduler_name: str | None, pod_security: str | None,
              admission_config: str | None) -> None:
    """Run the MXJobs, TFJobs and GenericJobs in FILES (YAML or JSON, several documents each; a directory stands
    for its .yaml, .yml and .json files) on a fresh local cluster and wait for them.

    Exits 0 when every job succeeded, 1 when one failed (its message and its failed pods' last log lines are
    printed) or the API refused an object, 2 for a bad file (unknown fields, no job) or flag, 124 after --timeout,
    130 on Ctrl-C; every process is stopped before it exits."""
    from mxjob_controller.local.kubeconfig_claim import KubeconfigInUseError, claim_free, claim_path  # noqa: PLC0415
    from mxjob_controller.local.run_view import Display  # noqa: PLC0415

    sources, docs = read_documents(expand(files))
    if not any(doc.get("kind") in JOB_KINDS for doc in docs):
        raise click.BadParameter("no MXJob, TFJob or GenericJob in the files given", param_hint="FILES")
    try:
        claim = claim_path(kubeconfig_out) if kubeconfig_out else claim_free(RUN_KUBECONFIG)
    except KubeconfigInUseError as e:
        raise click.UsageError(str(e)) from None
    interrupt = threading.Event()   # before anything is said: a Ctrl-C from then on stops the run cleanly
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda *_: interrupt.set())
    interactive = sys.stdout.isatty() and not logs
    display = Display(sys.stdout, interactive)
    started = time.monotonic()
    display.message("Starting a local cluster…")   # before the cluster's modules load: a second or more
    try:
        pod_security_config = _pod_security(pod_security, admission_config)
    except click.BadParameter:
        claim.release()
        raise
    setup_logging(log_level, False)
    if interactive and sys.stderr.isatty():   # the cluster's log goes above the block, not through it
        _log_through(display)
    from mxjob_controller.local import run as local_run  # noqa: PLC0415  (only this command needs it)
    from mxjob_controller.local.apiserver.server import ServerOptions  # noqa: PLC0415
    from mxjob_controller.local.cluster import ClusterOptions, LocalCluster  # noqa: PLC0415

    cluster = LocalCluster(ClusterOptions(
        server=ServerOptions(tls=tls, pod_security=pod_security_config), threadiness=threadiness,
        gang_scheduler_name=gang_scheduler_name,
        kubelet_options=KubeletOptions(workdir=os.path.abspath(workdir or os.getcwd()), keep_logs=True,
                                       sandbox=sandbox, gpus=_node_gpus(gpus), capacity=capacity,
                                       container_user=container_user)))
    try:
        code = _run_on(cluster, docs, sources, claim, local_run.RunOptions(
            logs=logs, timeout=timeout, interactive=interactive), interrupt, display,
            VALIDATE[validate.lower()], started)
    finally:
        cluster.stop()
        claim.release()
    sys.exit(code)


def _log_through(display: Any) -> None:
    """Send the log handler's lines through ``display`` (above its block)."""
    from mxjob_controller.local.run_view import LineSink  # noqa: PLC0415

    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(LineSink(display))  # type: ignore[arg-type]


def _run_on(cluster: LocalCluster, docs: list[dict], sources: list[str], claim: Any, options: Any,
            interrupt: threading.Event, display: Any, validate: str, started: float) -> int:
    """Start ``cluster``, check ``docs`` (their dry runs) as soon as its API server takes them while the rest of
    the cluster starts, create them once it has, and follow their jobs: the exit code."""
    from mxjob_controller.local import run as local_run  # noqa: PLC0415
    from mxjob_controller.local.preflight import workdir_warnings  # noqa: PLC0415
    from mxjob_controller.local.submission import check, create  # noqa: PLC0415
    from mxjob_controller.runtime.client import KubeError  # noqa: PLC0415

    submitted: dict[str, Any] = {}

    def submit(kubelet: Any) -> None:
        """Called as soon as the API server takes writes (issue 48: start fast), while the kubelet, the scheduler
        and the controllers start: the warnings and the dry runs, most of a submission's work."""
        if interrupt.is_set():
            return
        if kubelet is not None:   # before any of the jobs' containers can start
            sandbox = kubelet.sandbox
            for warning in workdir_warnings(docs, sandbox.user_of, sandbox.usable_dir, kubelet.options.workdir,
                                            sandbox.cwd_blocked):
                click.echo(warning, err=True)
        client = submitted["client"] = cluster.client("local-run")
        try:
            submitted["checked"] = check(client, docs, validate, sources, warn=lambda line: click.echo(line, err=True))
        except local_run.SubmitError as e:
            submitted["error"] = (f"Error: {e}", e.exit_code)
        except KubeError as e:
            submitted["error"] = (f"Error: {e}", local_run.FAILED)

    try:
        cluster.start(api_ready=submit)
    except OSError as e:
        click.echo(f"Error: the local cluster cannot start: {e.strerror or e}", err=True)
        return local_run.FAILED
    cluster.server.write_kubeconfig(claim.path)
    claim.written()
    if interrupt.is_set():
        return local_run.INTERRUPTED
    display.message(f"Local cluster ready in {time.monotonic() - started:.1f}s; kubectl: export KUBECONFIG="
                    f"{Path(claim.path).resolve()}")
    if "error" not in submitted:   # created once the controllers run: a sweep's pods come in the files' order
        try:
            submitted["jobs"] = create(submitted["client"], submitted["checked"])
        except local_run.SubmitError as e:
            submitted["error"] = (f"Error: {e}", e.exit_code)
        except KubeError as e:
            submitted["error"] = (f"Error: {e}", local_run.FAILED)
    if "error" in submitted:
        message, code = submitted["error"]
        click.echo(message, err=True)
        return code
    jobs = submitted["jobs"]
    display.message(f"Running {len(jobs)} job(s)")
    return local_run.run_jobs(cluster, submitted["client"], jobs, options, sys.stdout, interrupt,
                              display).exit_code
