"""The whole local cluster in one process: the embedded API server, the webhooks, the job controllers (MXJob, TFJob
and GenericJob), the local kubelet and the local scheduler.

    with LocalCluster(ClusterOptions()) as cluster:      # started; stopped (every process gone) on exit
        cluster.server.write_kubeconfig("kubeconfig")
        ...

The controller and the kubelet reach the API server over HTTP with the project's client, as they would on a cluster;
only the kubelet's log files are handed to the server in-process (``pods/log``). Each part can be left out for tests
that play it themselves (``kubelet=False`` leaves pods Pending, unbound; ``controller=False`` runs no job
controller). With ``metrics_bind_address`` the controllers' ``/metrics`` are served as ``run`` serves them. With the
kubelet runs the scheduler (``local/scheduler/``), which binds pods where they fit and acts as Volcano and
scheduler-plugins for gangs; their PodGroup CRDs are served with it. Start order: server, webhooks, CRDs (every
framework's: ``mxjob_controller/data/crds``), then kubelet, scheduler and controllers side by side (each waits for
its informers' first lists: those waits overlap); stop order: controllers (no new pods), scheduler, kubelet (every
container process stopped), server, webhooks.

The webhooks (``webhooks=True``, the default) are the ones ``run --webhook-bind-address`` serves, in this process on a
loopback port with a certificate made at start; the server calls them as kube-apiserver would, so every local user
gets an invalid job refused at submit, every job stored with its defaults (``local/job_defaults.py``, the defaulting
webhook's rules), and MXJob ``v1alpha1`` served through the conversion webhook.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from mxjob_controller import __version__
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from mxjob_controller.local.job_ports import DEFAULT_RANGE, JobPorts
from mxjob_controller.local.kubelet.kubelet import Kubelet, pod_informer
from mxjob_controller.local.kubelet.options import KubeletOptions
from mxjob_controller.local.kubelet.pod_admission import PodAdmission
from mxjob_controller.local.kubelet.sandbox import probe_ahead
from mxjob_controller.local.scheduler.scheduler import LocalScheduler, SchedulerOptions, podgroup_crds
from mxjob_controller.manager.process import PROGRAM
from mxjob_controller.manager.settings import DEFAULT_BURST, DEFAULT_QPS
from mxjob_controller.mxnet.api import CRD_NAME as MXJOBS_CRD
from mxjob_controller.mxnet.crd_conversion import CONVERT_PATH, with_conversion
from mxjob_controller.runtime.client import Client
from mxjob_controller.runtime.events import WARNING, EventRecorder, ObjectReference
from mxjob_controller.runtime.informer import SharedInformer

log = logging.getLogger(__name__)



def packaged_crds() -> list[dict[str, Any]]:
    """The project's CRDs, shipped as package data so the local cluster works from any directory or wheel (a fresh
    copy each call: the caller may change it), in their files' order. Read from the JSON copy ``make crd`` writes
    beside the YAML files (``data/crds.json``, the same CRDs): parsing the YAML, 7,500 lines for the MXJob CRD
    alone, took a third of a second of CPU at each start; decoding the JSON takes milliseconds (issue 48)."""
    data = _crds_json()
    if data is None:
        return []
    by_file = json.loads(data)
    return [by_file[name] for name in sorted(by_file)]


@functools.cache
def _crds_json() -> bytes | None:
    data = resources.files("mxjob_controller").joinpath("data", "crds.json")
    return data.read_bytes() if data.is_file() else None


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    server: ServerOptions = field(default_factory=ServerOptions)
    crds: bool = True                                  # apply the packaged CRDs at start
    kubelet: bool = True                               # run pods as local processes
    kubelet_options: KubeletOptions = field(default_factory=KubeletOptions)
    controller: bool = True                            # run the job controllers in this process
    webhooks: bool = True                              # the admission and conversion webhooks, called by the server
    threadiness: int = 4                               # the controller's reconcile workers
    job_ports: tuple[int, int] | None = DEFAULT_RANGE  # scheduler ports given to MXJobs; None: leave them
    # (only with the kubelet: the rewrite exists so local processes do not collide; without one nothing binds them)
    gang_scheduler_name: str | None = None             # the controller's --gang-scheduler-name (volcano, or a
    #                                                    scheduler-plugins name the local scheduler then acts as)
    metrics_bind_address: str = "0"                    # the controllers' /metrics, as run's flag ("0": off)
    metrics_free_port_if_taken: bool = False           # that address taken at start: any free port instead


class LocalCluster:
    def __init__(self, options: ClusterOptions | None = None) -> None:
        self.options = options = options or ClusterOptions()
        self.server = APIServer(options.server)
        if options.kubelet:   # what this node cannot run is refused at create, not ignored when it runs
            self.server.rest.validating_admission.append(PodAdmission())
        self._events: EventRecorder | None = None   # the cluster's own events (a job that got no port), from start()
        if options.job_ports is not None and options.kubelet:
            ports = JobPorts(self.server.store, options.job_ports, self._warn)
            self.server.rest.admission.append(ports)
            self.server.rest.update_admission.append(ports.on_update)
        self.kubelet: Kubelet | None = None
        self.pods: SharedInformer | None = None         # the pod informer the kubelet and the scheduler share
        self.scheduler: LocalScheduler | None = None
        self.controller: Any = None
        self.metrics: Any = None                        # the controllers' /metrics server (runtime.endpoints)
        self.webhooks: Any = None
        self._certificate: Any = None
        self._clients: list[Client] = []

    def start(self, api_ready: Callable[[Kubelet | None], None] | None = None) -> LocalCluster:
        """Start every part; on failure, stop what started and raise. What waits rather than computes runs side by
        side (issue 48: start fast): the sandbox's probe (a process) from the first moment, then the kubelet, the
        scheduler and the controllers together, each waiting for its informers' first lists.

        ``api_ready``, when given, is called on this thread as soon as the API serves everything a client may
        write (the CRDs, the webhooks, the PodGroup CRDs) while the kubelet (made, given as the argument; None
        without one), scheduler and controllers are still starting: ``local run`` submits its jobs there, and they
        are reconciled once the controllers' caches have synced. What it raises stops the cluster and is raised."""
        steps: list[_Step] = []
        made: Kubelet | None = None
        try:
            if self.options.kubelet and self.options.kubelet_options.sandbox:
                probe_ahead(self.options.kubelet_options.container_user)
            self.server.start()
            if self.options.job_ports is not None and self.options.kubelet:
                self._events = EventRecorder(self._client("local-job-ports", -1.0, 1),
                                             component="local-job-ports").start()
            if self.options.webhooks:
                self._start_webhooks()
            if self.options.crds:
                for crd in packaged_crds():
                    if self.webhooks is not None and crd["metadata"]["name"] == MXJOBS_CRD:
                        with_conversion(crd, {"url": self.webhooks.url + CONVERT_PATH,
                                              "caBundle": self._certificate.ca_bundle})
                    self.server.create(crd)
                    log.info("applied CRD %s", crd["metadata"]["name"])
            if self.options.kubelet:
                kubelet_options = dataclasses.replace(self.options.kubelet_options, private_paths=self.private_paths)
                client = self._client("kubelet", -1.0, 1)
                # One watch of pods for the kubelet and the scheduler: both run here, and each pod version decoded
                # and cached twice cost seconds of this process's one core with a 1,000-replica MXJob (issue 48).
                self.pods = pod_informer(client)
                made = kubelet = Kubelet(client, kubelet_options, pods=self.pods)
                self.server.rest.log_reader = kubelet.logs.read
                steps.append(_Step("local-start-kubelet", lambda: setattr(self, "kubelet", kubelet.start())))
                served = self._podgroup_crds()
                steps.append(_Step("local-start-scheduler",
                                   lambda: setattr(self, "scheduler", self._start_scheduler(served))))
            if self.options.controller:
                steps.append(_Step("local-start-controllers",
                                   lambda: setattr(self, "controller", self._start_controller())))
            if api_ready is not None:
                api_ready(made)
            for step in steps:
                step.wait()
        except BaseException:
            for step in steps:   # every step ends (each of its waits has a timeout) before what started stops
                step.join()
            self.stop()
            raise
        return self

    def _warn(self, obj: dict[str, Any], reason: str, message: str) -> None:
        """A Warning event on ``obj`` (written by the recorder's own thread: admission may call this)."""
        if self._events is not None:
            self._events.event(ObjectReference.of(obj), WARNING, reason, message)

    def _podgroup_crds(self) -> frozenset[str]:
        """With the CRDs, the PodGroup CRDs of the gang schedulers the scheduler acts as (created before the
        controllers start: they watch them when gang-scheduling); the groups served (``crds=False`` serves none,
        as a bare cluster)."""
        served = []
        for crd in podgroup_crds():
            present = self.server.get(crd["apiVersion"], crd["kind"], crd["metadata"]["name"]) is not None
            if not present and self.options.crds:
                self.server.create(crd)
            if present or self.options.crds:
                served.append(crd["spec"]["group"])
        return frozenset(served)

    def _start_scheduler(self, served: frozenset[str]) -> LocalScheduler:
        """The scheduler, watching the PodGroups of the groups ``served``."""
        gang = (self.options.gang_scheduler_name or "").strip()
        names = frozenset(SchedulerOptions().coscheduling_names | ({gang} if gang and gang != "volcano" else set()))
        options = SchedulerOptions(node_name=self.options.kubelet_options.node_name, coscheduling_names=names,
                                   podgroup_groups=served)
        return LocalScheduler(self._client("scheduler", -1.0, 1), options, pods=self.pods).start()

    def private_paths(self) -> list[str]:
        """The cluster's own files, which no pod may read: TLS material, kubeconfigs and token directories written,
        the audit log, and whatever the kubelet's options add."""
        paths = [str(p) for p in self.server.credential_files]
        if self.server.ca_file:
            paths.append(os.path.dirname(self.server.ca_file))
        if self.server.options.audit_log:
            paths.append(os.path.abspath(self.server.options.audit_log))
        if self._certificate is not None:
            paths.append(str(self._certificate.material.directory))
        return paths + [str(p) for p in self.options.kubelet_options.private_paths()]

    def client(self, component: str) -> Client:
        """A client of this cluster's API server for ``component`` (closed by stop())."""
        return self._client(component, -1.0, 1)

    def _client(self, component: str, qps: float, burst: int, detect_flow_control: bool = False) -> Client:
        # With authentication on, each part is a user of its own in system:masters: the cluster's own parts are
        # trusted, as kube's control plane is (the controller under its ServiceAccount is `mxjob-controller run`).
        token = self.server.issue_user_token(f"mxjob-local:{component}", ("system:masters",)) \
            if self.server.admin_token else None
        config = self.server.client_config(token, qps=qps, burst=burst).with_overrides(
            detect_flow_control=detect_flow_control)
        client = Client(config, component=component,
                        program=PROGRAM, version=__version__)
        self._clients.append(client)
        return client

    def _start_webhooks(self) -> None:
        # Imported here: they load the frameworks' APIs, which `local up --no-webhooks` does not need.
        from mxjob_controller.frameworks import DEFAULT_FRAMEWORKS  # noqa: PLC0415
        from mxjob_controller.local.job_defaults import JobDefaults  # noqa: PLC0415
        from mxjob_controller.webhooks.certs import SelfSignedCertificate  # noqa: PLC0415
        from mxjob_controller.webhooks.configuration import (  # noqa: PLC0415
            url_client_config,
            validating_webhook_configuration,
        )
        from mxjob_controller.webhooks.server import WebhookServer  # noqa: PLC0415

        self._certificate = SelfSignedCertificate("127.0.0.1")
        self.webhooks = WebhookServer("127.0.0.1:0", self._certificate.context, frameworks=DEFAULT_FRAMEWORKS).start()
        defaults = JobDefaults()   # what the defaulting webhook does on a cluster (local/job_defaults.py)
        self.server.rest.admission.append(defaults)
        self.server.rest.update_admission.append(defaults.on_update)
        self.server.create(validating_webhook_configuration(
            url_client_config(self.webhooks.url, self._certificate.ca_bundle), DEFAULT_FRAMEWORKS))
        log.info("webhooks serving on %s", self.webhooks.url)

    def _start_controller(self) -> Any:
        # Imported here: `local up --no-controller` (tests, benchmarks) does not load the controller at all.
        from mxjob_controller.core.job_controller import ControllerOptions  # noqa: PLC0415
        from mxjob_controller.frameworks import DEFAULT_FRAMEWORKS  # noqa: PLC0415
        from mxjob_controller.manager.controllers import build_controllers  # noqa: PLC0415
        from mxjob_controller.runtime.endpoints import Endpoints, parse_bind_address  # noqa: PLC0415
        from mxjob_controller.runtime.registry import new_registry  # noqa: PLC0415

        # As `run` at its defaults: no client-side limit while the server advertises flow control (--no-flow-control:
        # the token bucket a server without it needs).
        client = self._client("controller", DEFAULT_QPS, DEFAULT_BURST, detect_flow_control=True)
        registry = new_registry()
        options = ControllerOptions(threadiness=self.options.threadiness, registry=registry,
                                    gang_scheduler_name=self.options.gang_scheduler_name)
        controllers = build_controllers(client, options, DEFAULT_FRAMEWORKS).start()
        if parse_bind_address(self.options.metrics_bind_address) is not None:
            # what `run --metrics-bind-address` serves: the same registry, so the same dashboards and alerts work
            address = self.options.metrics_bind_address
            try:
                self.metrics = Endpoints(registry, metrics_address=address, probe_address="0").start()
            except OSError as e:
                if e.errno != errno.EADDRINUSE or not self.options.metrics_free_port_if_taken:
                    raise OSError(e.errno, e.strerror, f"{address} (the controllers' metrics)") from None
                # Taken by another process (a second local up, a controller): never a reason not to start.
                log.warning("metrics address %s is taken: serving the controllers' metrics on a free port", address)
                host = address.rpartition(":")[0]
                self.metrics = Endpoints(registry, metrics_address=f"{host}:0", probe_address="0").start()
        return controllers

    def stop(self, timeout: float = 15.0) -> bool:
        """Stop within about ``timeout`` seconds; True if every part stopped cleanly. No container process started
        by the kubelet is left when this returns."""
        end = time.monotonic() + timeout
        clean = True
        if self.controller is not None:
            clean = self.controller.stop(max(1.0, (end - time.monotonic()) / 3)) and clean
            self.controller = None
        if self.metrics is not None:
            clean = self.metrics.stop(max(1.0, (end - time.monotonic()) / 4)) and clean
            self.metrics = None
        if self.scheduler is not None:
            clean = self.scheduler.stop(max(1.0, (end - time.monotonic()) / 3)) and clean
            self.scheduler = None
        if self.kubelet is not None:
            clean = self.kubelet.stop(max(1.0, (end - time.monotonic()) / 2)) and clean
            self.kubelet = None
            self.server.rest.log_reader = None
        if self.pods is not None:   # after both of its users
            clean = self.pods.stop(max(0.5, (end - time.monotonic()) / 3)) and clean
            self.pods = None
        if self._events is not None:
            self._events.stop(max(0.5, (end - time.monotonic()) / 4))
            self._events = None
        for client in self._clients:
            client.close()
        self._clients.clear()
        clean = self.server.stop(max(1.0, end - time.monotonic())) and clean
        if self.webhooks is not None:
            clean = self.webhooks.stop(max(1.0, end - time.monotonic())) and clean
            self.webhooks = None
        if self._certificate is not None:
            self._certificate.close()
            self._certificate = None
        return clean

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Step:
    """One part's start on a thread of its own, named for it: :meth:`wait` re-raises what it raised."""

    TIMEOUT = 120.0   # above every part's own start timeouts (informers' cache sync: 30 s; the sandbox probe's)

    def __init__(self, name: str, start: Callable[[], object]) -> None:
        self._start = start
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._start()
        except BaseException as e:   # handed to the caller of wait()
            self._error = e

    def join(self) -> None:
        self._thread.join(self.TIMEOUT)

    def wait(self) -> None:
        self.join()
        if self._thread.is_alive():
            raise TimeoutError(f"{self._thread.name}: not started within {self.TIMEOUT:g} s")
        if self._error is not None:
            raise self._error
