"""The operator process: API access, the CRD check, endpoints, leader election and the controller, started in that
order and stopped in the reverse one (controller-runtime's manager, for one controller).

    manager = Manager(settings)
    code = manager.run()          # blocks; another thread (a signal handler) calls manager.request_stop()

What it guarantees:

- Start: a configuration or connection problem, a missing CRD of a framework that must run (MXJob's, or any named
  by ``--frameworks``), missing RBAC, a busy port or a missing webhook certificate ends ``run`` with 1 and one error
  line saying what to do; nothing is left running. The webhook server (``--webhook-bind-address``) serves on every
  replica, leader or not. Without ``--frameworks``, TFJobs are reconciled where their CRD is installed (else a
  warning).
- Only a leader reconciles: with ``leader_elect`` the controller is built and started when the Lease is acquired,
  on the elector's ``-leading`` thread; a standby serves ``/metrics`` (``leader_election_master_status 0``) and
  reports ready. Without it, the controller starts at once.
- Losing the Lease stops taking work at once; in-flight reconciles get :data:`LOST_DRAIN` seconds; ``run`` returns
  1 (the Deployment restarts the pod, which becomes a standby).
- :meth:`request_stop` (SIGTERM, SIGINT): no new reconcile starts, in-flight ones finish within the shutdown budget,
  then the Lease is released (so a standby takes over within a round trip), then the endpoints stop; ``run``
  returns 0 within ``settings.shutdown_timeout`` seconds, every thread it started joined (any that outlived the
  budget is named in a warning).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Mapping

from prometheus_client import CollectorRegistry

from mxjob_controller import __version__
from mxjob_controller.frameworks import FRAMEWORKS
from mxjob_controller.logs import register_secret
from mxjob_controller.manager import controllers
from mxjob_controller.manager.controllers import (
    CacheSyncTimeoutError,
    ControllerFactory,
    ManagedController,
    PodGroupAPIMissingError,
    StartCancelledError,
)
from mxjob_controller.manager.crd_check import StartupError, frameworks_to_run
from mxjob_controller.manager.settings import RunSettings, describe_budget
from mxjob_controller.runtime.client import Client, ClientConfig, ConfigError, load_config
from mxjob_controller.runtime.client.incluster import SERVICE_ACCOUNT_DIR
from mxjob_controller.runtime.endpoints import Endpoints, parse_bind_address
from mxjob_controller.runtime.leaderelection import LeaderElectionConfig, LeaderElector, leader_election_client
from mxjob_controller.runtime.registry import new_registry
from mxjob_controller.runtime.rest_client_metrics import register_retry_metrics
from mxjob_controller.webhooks.certs import CertificateError, CertificateFiles
from mxjob_controller.webhooks.server import WebhookServer

log = logging.getLogger(__name__)

PROGRAM = "mxjob-controller"  # the User-Agent's program: the server's audit log names us by it
LOST_DRAIN = 2.0              # seconds in-flight reconciles get after the Lease was lost
FAILED_START_STOP = 5.0       # seconds a controller that failed to start gets to stop what it started
_RELEASE_BUDGET = 2.0         # seconds kept, out of the shutdown budget, for releasing the Lease
_ENDPOINTS_BUDGET = 1.0       # ... and for stopping the endpoints
SIGNAL_WAIT = 0.5             # seconds the main thread waits between looks for a stop a signal asked for


class Manager:
    def __init__(self, settings: RunSettings, *, controller_factory: ControllerFactory | None = None,
                 env: Mapping[str, str] | None = None, service_account_dir: str = SERVICE_ACCOUNT_DIR) -> None:
        self.settings = settings
        self._factory = controller_factory
        self._env = env
        self._service_account_dir = service_account_dir
        self._wake = threading.Event()          # stop requested, or a failure: the main thread acts
        self._stopping = threading.Event()      # the shutdown began: controllers stop taking work
        self._failure: str | None = None
        self._webhooks: WebhookServer | None = None
        self._drain_until: float | None = None  # monotonic deadline of a graceful drain
        self._controller: ManagedController | None = None
        self._elector: LeaderElector | None = None
        self._runner: threading.Thread | None = None
        self._clients: list[Client] = []

    # --- the public view ------------------------------------------------------------------------------

    def request_stop(self) -> None:
        """Begin a graceful stop (safe from a signal handler: it only sets an event)."""
        self._wake.set()

    def run(self) -> int:
        """Run until :meth:`request_stop` or a failure: 0 after a graceful stop, 1 after a failure."""
        try:
            config, client = self._connect()
            chosen = frameworks_to_run(client, self.settings.frameworks)
            self.settings = dataclasses.replace(self.settings, frameworks=chosen)   # what the factory builds
            log.info("reconciling %s", ", ".join(chosen), extra={"frameworks": list(chosen)})
            registry = new_registry()
            register_retry_metrics(registry, client.retries)
            endpoints = self._endpoints(registry)
            try:
                self._webhooks = self._webhook_server(registry)
            except StartupError:
                endpoints.stop(_ENDPOINTS_BUDGET)
                raise
        except StartupError as e:
            log.error("cannot start: %s", e)
            self._close_clients()
            return 1
        try:
            if not self._wake.is_set():         # a signal during start-up: stop without starting to control
                self._start_controlling(config, client, registry)
            # A signal's handler sets _wake; it runs on this (the main) thread, and only once this thread runs
            # again: a SIGTERM the kernel delivers to another thread does not end this wait early, so under a long
            # one a graceful stop waited up to 30 s (clock.IDLE_WAIT; kube's grace period, then SIGKILL). A short wait
            # costs a wake-up twice a second.
            while not self._wake.wait(SIGNAL_WAIT):
                pass
        finally:
            self._shutdown(endpoints)
        if self._failure:
            log.error("exiting: %s", self._failure)
            return 1
        log.info("stopped cleanly")
        return 0

    # --- start ----------------------------------------------------------------------------------------

    def _connect(self) -> tuple[ClientConfig, Client]:
        s = self.settings
        try:
            config = load_config(s.kubeconfig, s.master, env=self._env, service_account_dir=self._service_account_dir)
        except ConfigError as e:
            raise StartupError(f"no usable API configuration: {e}") from None
        qps, burst, detect = s.client_budget()
        config = config.with_overrides(qps=qps, burst=burst, detect_flow_control=detect)
        if config.token is not None:
            try:   # a credential plugin runs now: its failure (a missing command...) ends the start, said plainly
                register_secret(config.token())
            except ConfigError as e:
                raise StartupError(f"cannot authenticate to {config.host}: {e}") from None
        register_secret(config.password)
        client = Client(config, component="controller", program=PROGRAM, version=__version__)
        self._clients.append(client)
        log.info("mxjob-controller %s: API server %s (%s), watching %s, %d worker(s); client budget: %s; the same "
                 "again for the informers, events apart: %g/s (burst %d)", __version__, config.host, config.source,
                 s.scope, s.threadiness, describe_budget(s, client.budget.current()), s.event_qps, s.event_burst)
        return config, client

    def _endpoints(self, registry: CollectorRegistry) -> Endpoints:
        s = self.settings
        try:
            endpoints = Endpoints(registry, metrics_address=s.metrics_bind_address,
                                  probe_address=s.health_probe_bind_address, readiness={"controller": self._ready})
        except (OSError, ValueError) as e:
            raise StartupError(f"cannot serve --metrics-bind-address {s.metrics_bind_address!r} and "
                               f"--health-probe-bind-address {s.health_probe_bind_address!r}: "
                               f"{getattr(e, 'strerror', None) or e}") from None
        endpoints.start()
        metrics, probes = endpoints.metrics_server, endpoints.probe_server
        log.info("endpoints serving", extra={"metrics_url": metrics.url + "/metrics" if metrics else "off",
                                             "probes_url": probes.url if probes else "off"})
        return endpoints

    def _webhook_server(self, registry: CollectorRegistry) -> WebhookServer | None:
        """The webhook server, serving (every replica does, leader or not), or None when it is off."""
        s = self.settings
        if parse_bind_address(s.webhook_bind_address) is None:
            return None
        certificate = CertificateFiles(s.webhook_cert_dir)
        try:
            certificate.load()
            # Every kind's path, not only the reconciled ones': the webhook configuration names them all, and a
            # path missing (a CRD installed after the start, a kind another operator reconciles) would refuse
            # every write of that kind under failurePolicy Fail. Validating needs no controller.
            server = WebhookServer(s.webhook_bind_address, certificate.context, frameworks=tuple(FRAMEWORKS),
                                   registry=registry)
        except CertificateError as e:
            raise StartupError(f"cannot serve the webhooks: {e}") from None
        except OSError as e:
            raise StartupError(f"cannot serve --webhook-bind-address {s.webhook_bind_address!r}: "
                               f"{e.strerror or e}") from None
        server.start()
        log.info("webhooks serving", extra={"webhook_url": server.url, "paths": list(server.paths)})
        return server

    def _start_controlling(self, config: ClientConfig, client: Client, registry: CollectorRegistry) -> None:
        s = self.settings
        if not s.leader_elect:
            self._runner = threading.Thread(target=self._lead, args=(client, registry, self._stopping),
                                            name="controller-runner", daemon=True)
            self._runner.start()
            return
        election_client = leader_election_client(config, "leader-election", program=PROGRAM, version=__version__,
                                                 budget_of=client)
        self._clients.append(election_client)
        register_retry_metrics(registry, election_client.retries)
        election = LeaderElectionConfig(s.leader_election_id, s.leader_election_namespace)
        log.info("leader election on Lease %s/%s as %s", election.namespace, election.lease_name, election.identity)
        self._elector = LeaderElector(election_client, election,
                                      on_started_leading=lambda ended: self._lead(client, registry, ended),
                                      on_stopped_leading=self._leadership_ended, registry=registry).start()

    def _ready(self) -> bool:
        """``/readyz``: the controller's caches have synced; a standby (not leading) is ready as it is."""
        controller = self._controller
        if controller is None:
            return self._elector is not None
        return controller.factory.has_synced()

    # --- the controller, while we lead ---------------------------------------------------------------

    def _lead(self, client: Client, registry: CollectorRegistry, until: threading.Event) -> None:
        """Build and start the controller, run it until ``until`` is set, then drain it. Runs on its own thread.

        ``until`` also cancels the start (the caches' initial lists can take up to a minute): a stop requested
        meanwhile starts no worker. A start that fails or is cancelled is stopped before this returns."""
        factory = self._factory or controllers.new_controller
        controller: ManagedController | None = None
        try:
            controller = factory(client, self.settings, registry)
            self._controller = controller
            controller.start(cancel=until)
        except StartCancelledError:
            log.info("stop requested while the controller was starting: no reconcile was started")
            self._stop_unstarted(controller)
            return
        except PodGroupAPIMissingError as e:
            self._fail(str(e))  # the message says which CRD to install: no traceback needed
            self._stop_unstarted(controller)
            return
        except CacheSyncTimeoutError as e:
            self._fail(f"{e}: the API server did not list them in time; a large cluster or a slow server may need a "
                       f"longer --cache-sync-timeout (now {self.settings.cache_sync_timeout:g}s)")
            self._stop_unstarted(controller)
            return
        except Exception as e:
            log.exception("the controller failed to start")
            self._fail(f"the controller failed to start: {e}")
            self._stop_unstarted(controller)
            return
        log.info("controller running", extra={"frameworks": list(self.settings.frameworks)})
        while not until.wait(60.0):
            pass
        lost = self._elector is not None and self._elector.lost
        drain_until = self._drain_until
        budget = LOST_DRAIN if lost or drain_until is None else max(0.5, drain_until - time.monotonic())
        log.info("controller stopping: no new reconciles; in-flight ones get %.1fs", budget)
        if not controller.stop(budget):
            log.warning("the controller did not stop within %.1fs", budget)

    @staticmethod
    def _stop_unstarted(controller: ManagedController | None) -> None:
        """Stop whatever threads a failed start left behind (a no-op for one that cleaned up after itself)."""
        if controller is not None and not controller.stop(FAILED_START_STOP):
            log.warning("the controller that failed to start did not stop within %.1fs", FAILED_START_STOP)

    def _leadership_ended(self) -> None:
        elector = self._elector
        if elector is not None and elector.lost:
            self._fail("lost the leader-election Lease; reconciling stopped (the pod restarts as a standby)")

    def _fail(self, why: str) -> None:
        if self._failure is None:
            self._failure = why
        self._wake.set()

    # --- stop -----------------------------------------------------------------------------------------

    def _shutdown(self, endpoints: Endpoints) -> None:
        start = time.monotonic()
        end = start + self.settings.shutdown_timeout
        self._drain_until = end - _RELEASE_BUDGET - _ENDPOINTS_BUDGET
        self._stopping.set()
        # Stopping the elector ends leadership: the -leading thread drains the controller, then the Lease is released.
        if self._elector is not None and not self._elector.stop(max(0.5, end - _ENDPOINTS_BUDGET - time.monotonic())):
            log.warning("leader election did not stop in time")
        if self._runner is not None:
            self._runner.join(max(0.5, end - _ENDPOINTS_BUDGET - time.monotonic()))
        if self._webhooks is not None and not self._webhooks.stop(max(0.2, end - time.monotonic()) / 2):
            log.warning("the webhook server did not stop in time")
        if not endpoints.stop(max(0.2, end - time.monotonic())):
            log.warning("the endpoints did not stop in time")
        self._close_clients()
        leftover = [t.name for t in threading.enumerate()
                    if t is not threading.main_thread() and t is not threading.current_thread() and t.is_alive()]
        if leftover:
            log.warning("threads still running at exit: %s", ", ".join(sorted(leftover)))
        log.info("shutdown took %.2fs", time.monotonic() - start)

    def _close_clients(self) -> None:
        for client in self._clients:
            client.close()
        self._clients.clear()
