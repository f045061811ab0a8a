"""The embedded Kubernetes API server: the one public entry point of this package.

    with APIServer() as api:                 # listens on a free loopback port
        api.write_kubeconfig("kubeconfig")  # for kubectl and the official client
        ...

    with APIServer(ServerOptions(tls=True)) as api:      # HTTPS, bearer tokens, RBAC enforced (auth/)
        api.write_kubeconfig("kubeconfig")              # the CA and the administrator's token in it
        api.write_token_dir(sa_dir, "kubeflow", "mxjob-controller")   # a pod's service-account volume
        client = Client(api.client_config())            # an administrator's client in this process

Everything is in memory; nothing survives ``stop()``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import platform
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mxjob_controller.kube.k8s_schemas import KUBE_VERSION
from mxjob_controller.local.apiserver import builtin, errors
from mxjob_controller.local.apiserver.auth.admission import OwnerReferencesPermissionEnforcement
from mxjob_controller.local.apiserver.auth.authorizer import ALWAYS_ALLOW, RBAC
from mxjob_controller.local.apiserver.auth.pod_security_admission import PodSecurity, PodSecurityConfiguration
from mxjob_controller.local.apiserver.auth.reviews import REVIEW_TYPES
from mxjob_controller.local.apiserver.auth.security import Security, bootstrap_policy
from mxjob_controller.local.apiserver.controllers.gc import GarbageCollector
from mxjob_controller.local.apiserver.controllers.namespace import NamespaceController
from mxjob_controller.local.apiserver.controllers.namespace_content import NamespaceContent
from mxjob_controller.local.apiserver.controllers.token_dirs import TokenDirs
from mxjob_controller.local.apiserver.encoding import tables
from mxjob_controller.local.apiserver.encoding.discovery import Discovery
from mxjob_controller.local.apiserver.encoding.openapi import OpenAPI
from mxjob_controller.local.apiserver.http.audit import DEFAULT_CAPACITY, AuditLog
from mxjob_controller.local.apiserver.http.connection import HEADER_TIMEOUT, IDLE_TIMEOUT, READ_TIMEOUT
from mxjob_controller.local.apiserver.http.deadlines import REQUEST_TIMEOUT
from mxjob_controller.local.apiserver.http.faults import FaultInjector
from mxjob_controller.local.apiserver.http.flowcontrol import (
    MAX_MUTATING_REQUESTS_INFLIGHT,
    MAX_REQUESTS_INFLIGHT,
    FlowControl,
)
from mxjob_controller.local.apiserver.http.observability import Metrics, storage_counts, storage_sizes
from mxjob_controller.local.apiserver.http.server import MAX_CONNECTIONS, APIHTTPServer, refuse_past_share
from mxjob_controller.local.apiserver.kinds import conversions, workloads
from mxjob_controller.local.apiserver.kinds import flowcontrol as flowcontrol_objects
from mxjob_controller.local.apiserver.kinds.certificates import CSRStrategy
from mxjob_controller.local.apiserver.kinds.crds import CRDStrategy
from mxjob_controller.local.apiserver.kinds.custom_resources import CustomResourceStrategy
from mxjob_controller.local.apiserver.kinds.defaults import DEFAULTERS, DefaultingStrategy, PersistentVolumeStrategy
from mxjob_controller.local.apiserver.kinds.deployments import DeploymentStrategy
from mxjob_controller.local.apiserver.kinds.limitranges import LimitRangeStrategy
from mxjob_controller.local.apiserver.kinds.namespaces import NamespaceStrategy
from mxjob_controller.local.apiserver.kinds.pod_connect import CONNECT_SUBRESOURCES, PodConnect
from mxjob_controller.local.apiserver.kinds.pods import PodStrategy, bind
from mxjob_controller.local.apiserver.kinds.rbac import BindingStrategy, ClusterRoleStrategy, EscalationCheck
from mxjob_controller.local.apiserver.kinds.secrets import SecretStrategy
from mxjob_controller.local.apiserver.kinds.services import ServiceStrategy
from mxjob_controller.local.apiserver.patch.field_manager import KUBE_APISERVER
from mxjob_controller.local.apiserver.request import Request, Response
from mxjob_controller.local.apiserver.resources import Registry, ResourceType
from mxjob_controller.local.apiserver.rest import REST
from mxjob_controller.local.apiserver.router import Router
from mxjob_controller.local.apiserver.storage.memory import limit_allocator
from mxjob_controller.local.apiserver.storage.store import (
    BLOCK_TIMEOUT,
    HISTORY_AGE,
    HISTORY_BYTES,
    Missing,
    Store,
    StoreOptions,
)
from mxjob_controller.local.apiserver.storage.watch import MAX_BACKLOG_BYTES
from mxjob_controller.local.apiserver.strategy import Strategy
from mxjob_controller.local.apiserver.validation import strict_json, typed_decode
from mxjob_controller.local.apiserver.validation.schemas import SchemaValidation
from mxjob_controller.local.apiserver.webhooks import config as webhook_config
from mxjob_controller.local.apiserver.webhooks.client import HookClient, ServiceResolver
from mxjob_controller.local.apiserver.webhooks.conversion import Converter
from mxjob_controller.local.apiserver.webhooks.dispatch import ValidatingWebhooks
from mxjob_controller.local.kubeconfig import kubeconfig_for, write_kubeconfig
from mxjob_controller.runtime.client.config import ClientConfig, StaticToken

log = logging.getLogger(__name__)

_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}
BOOTSTRAP_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


def _remaining(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def version_info() -> dict[str, str]:
    major, minor = KUBE_VERSION.split(".")
    return {
        "major": major, "minor": minor, "gitVersion": f"v{KUBE_VERSION}.0+mxjob-local",
        "gitCommit": "0" * 40, "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}", "compiler": "cpython",
        "platform": f"{platform.system().lower()}/{_ARCH.get(platform.machine(), platform.machine())}",
    }


def client_host(bound: str) -> str:
    """Where a client connects to a server bound to ``bound``: loopback instead of an unspecified address."""
    try:
        address = ipaddress.ip_address(bound)
    except ValueError:
        return bound
    if not address.is_unspecified:
        return bound
    return "::1" if address.version == 6 else "127.0.0.1"


@dataclass(frozen=True, slots=True)
class ServerOptions:
    host: str = "127.0.0.1"
    port: int = 0
    history_events: int = 10_000
    history_age: float = HISTORY_AGE  # seconds (pruned on a timer as well as on writes)
    history_bytes: int = HISTORY_BYTES  # what every kind's watch history together may keep alive, encoded
    watcher_queue: int = 10_000  # events a watcher may lag behind before it is disconnected
    watcher_bytes: int = MAX_BACKLOG_BYTES  # ... and the encoded bytes of those events (0: no bound)
    bookmark_interval: float = 60.0
    block_timeout: float = BLOCK_TIMEOUT  # seconds a read waits for a resourceVersion not reached (kube's: 3 s)
    fault_seed: int = 0  # seeds every fault rule's random choices (faults.py)
    audit_capacity: int = DEFAULT_CAPACITY  # audit records kept in memory
    audit_log: str | None = None  # also append audit records here, as JSON lines
    header_timeout: float = HEADER_TIMEOUT  # seconds for a request's line and headers to arrive
    read_timeout: float = READ_TIMEOUT  # seconds for a whole request, body included, to arrive (0: no limit)
    idle_timeout: float = IDLE_TIMEOUT  # seconds an idle keep-alive connection is kept open
    max_connections: int = MAX_CONNECTIONS  # connections (threads) at once: http.APIHTTPServer
    request_timeout: float = REQUEST_TIMEOUT  # kube's --request-timeout: seconds a non-long-running request may take
    # kube's flags of the same names: their sum is the seats flow control shares out among priority levels
    max_requests_inflight: int = MAX_REQUESTS_INFLIGHT
    max_mutating_requests_inflight: int = MAX_MUTATING_REQUESTS_INFLIGHT
    # kube's --enable-priority-and-fairness: False serves as an older server (no queues, no 429s, no PF headers)
    flow_control: bool = True
    tls: bool = False  # serve HTTPS with a CA and certificate made at start (auth/serving_cert.py)
    # kube's --authorization-mode: "AlwaysAllow" or "RBAC"; None: RBAC with TLS, else AlwaysAllow. Either TLS or
    # RBAC turns authentication on (bearer tokens; without one, system:anonymous under RBAC, 401 under AlwaysAllow).
    authorization: str | None = None
    # kube's PodSecurity admission configuration (auth/pod_security_admission.py): the defaults of a namespace that
    # sets no pod-security.kubernetes.io labels, and who is exempt. kube's default: privileged, nobody exempt.
    pod_security: PodSecurityConfiguration = field(default_factory=PodSecurityConfiguration)

    @property
    def authorization_mode(self) -> str:
        return self.authorization or (RBAC if self.tls else ALWAYS_ALLOW)


class APIServer:
    def __init__(self, options: ServerOptions | None = None) -> None:
        self.options = options or ServerOptions()
        self.credential_files: list[Path] = []   # kubeconfigs and token directories written: no pod may read them
        self.registry = Registry()
        self.registry.add(*builtin.BUILTIN_TYPES, *REVIEW_TYPES)
        self.store = Store(StoreOptions(self.options.history_events, self.options.history_age,
                                        self.options.watcher_queue, self.options.history_bytes,
                                        self.options.watcher_bytes, block_timeout=self.options.block_timeout))
        self.security = Security(self.store, tls=self.options.tls, authorization=self.options.authorization_mode,
                                 host=self.options.host)
        try:
            self._assemble()
        except BaseException:
            self.security.close()   # its TLS material must not outlive a server that never was
            raise

    def _assemble(self) -> None:
        """Everything but the store and security: REST, routing, the built-in controllers, the bootstrap objects."""
        strategies: dict[str, Strategy] = {
            key: DefaultingStrategy(defaulter) for key, defaulter in DEFAULTERS.items()}
        strategies.update({
            builtin.PODS.storage_key: PodStrategy(),
            builtin.DEPLOYMENTS.storage_key: DeploymentStrategy(),
            builtin.SERVICES.storage_key: ServiceStrategy(),
            builtin.SECRETS.storage_key: SecretStrategy(),
            builtin.NAMESPACES.storage_key: NamespaceStrategy(),
            builtin.LIMITRANGES.storage_key: LimitRangeStrategy(),
            builtin.CRDS.storage_key: CRDStrategy(self.registry, self._write_crd_status, self._purge_crd),
            builtin.CLUSTERROLES.storage_key: ClusterRoleStrategy(self.store, builtin.CLUSTERROLES.storage_key),
            builtin.ROLEBINDINGS.storage_key: BindingStrategy(),
            builtin.CLUSTERROLEBINDINGS.storage_key: BindingStrategy(),
            builtin.VALIDATING_WEBHOOK_CONFIGURATIONS.storage_key: webhook_config.ValidatingWebhookStrategy(),
            builtin.MUTATING_WEBHOOK_CONFIGURATIONS.storage_key: webhook_config.MutatingWebhookStrategy(),
            builtin.REPLICASETS.storage_key: workloads.ReplicaSetStrategy(),
            builtin.DAEMONSETS.storage_key: workloads.DaemonSetStrategy(),
            builtin.STATEFULSETS.storage_key: workloads.StatefulSetStrategy(),
            builtin.REPLICATIONCONTROLLERS.storage_key: workloads.ReplicationControllerStrategy(),
            builtin.PODTEMPLATES.storage_key: workloads.PodTemplateStrategy(),
            builtin.JOBS.storage_key: workloads.JobStrategy(),
            builtin.CRONJOBS.storage_key: workloads.CronJobStrategy(),
            builtin.CSRS.storage_key: CSRStrategy(),
            builtin.PVS.storage_key: PersistentVolumeStrategy(),
        })
        self.rest = REST(self.store, strategies, CustomResourceStrategy())
        self.rest.virtual_creators.update(self.security.reviews.creators())
        self.rest.subresource_creators[(builtin.SERVICEACCOUNTS.storage_key, "token")] = \
            self.security.reviews.token_request
        if self.options.authorization_mode == RBAC:
            # kube's policy-based RBAC storage: no role or binding grants more than its writer holds.
            self.rest.validating_admission.append(EscalationCheck(self.security.authorizer))
            # As hardened clusters (OpenShift) run it: auth/admission.py.
            self.rest.validating_admission.append(
                OwnerReferencesPermissionEnforcement(self.security.authorizer, self.registry))
        # kube's validating admission plugins, after validation and before the webhooks: PodSecurity.
        self.pod_security = PodSecurity(self.options.pod_security, self._namespace, self._pods)
        self.rest.validating_plugins.append(self.pod_security)
        self.rest.lookup = self._lookup
        self.rest.subresource_creators[(builtin.PODS.storage_key, "binding")] = self._bind
        connect = PodConnect(self.store, builtin.PODS.storage_key)   # exec, attach, port-forward: kinds/pod_connect.py
        for sub in CONNECT_SUBRESOURCES:
            self.rest.subresource_creators[(builtin.PODS.storage_key, sub)] = connect
            self.rest.subresource_getters[(builtin.PODS.storage_key, sub)] = connect
        self.rest.table_converter = tables.convert
        for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            tables.register_printer("admissionregistration.k8s.io", kind, webhook_config.printer())
        tables.register_printer("events.k8s.io", "Event", conversions.events_printer())
        # Schemas compiled now and as CRDs change; kinds carrying webhook configuration compiled as kube checks them.
        schemas = SchemaValidation(self.registry, {kind: webhook_config.object_schema
                                                   for kind in webhook_config.SCHEMA_KINDS})
        self.rest.schema_validator = schemas
        self.rest.typed_decode = typed_decode
        # Webhooks (webhooks/): CRD conversion on every path that serves or stores a custom resource at another
        # version than its storage one, and validating admission webhooks on every create, update and delete.
        self.webhook_client = HookClient(self._service)
        self.converter = Converter(self.store, self.registry, self.webhook_client, schemas.schema_for,
                                   builtin.CRDS.storage_key, conversions.CONVERSIONS)
        self.rest.conversion = self.converter
        self.rest.webhook_admission = ValidatingWebhooks(self.store, self.registry, self.webhook_client,
                                                         self.converter)
        self.version = version_info()
        self.discovery = Discovery(self.registry)
        self.openapi = OpenAPI(self.registry, self.version)
        self.router = Router(self.registry, self.rest, self.discovery, self.openapi, self.version)
        # kube-controller-manager's part: garbage collection and namespace termination (threads start in start()).
        self.gc = GarbageCollector(self.registry, self.store, self.rest)
        self.namespace_controller = NamespaceController(self.registry, self.store, self.rest)
        tls = self.security.tls   # the default ServiceAccount and kube-root-ca.crt of every namespace
        self.namespace_content = NamespaceContent(self.store, self.rest,
                                                  tls.ca_pem.decode() if tls is not None else None)
        self.token_dirs = TokenDirs(self.store, self.security)   # --token-dir tokens, renewed as a kubelet does
        self.faults = FaultInjector(self.store, self.options.fault_seed)
        # A request waits in a queue for at most a quarter of its deadline (kube's APF filter), at most a minute.
        timeout = self.options.request_timeout
        self.flow_control = FlowControl(self.options.max_requests_inflight,
                                        self.options.max_mutating_requests_inflight,
                                        min(timeout / 4, 60.0) if timeout > 0 else 15.0)
        # kube's order: authentication and impersonation, flow control, authorization; a refusal goes no further.
        self.router.interceptors.append(self.security.intercept)
        self.router.interceptors.append(refuse_past_share)   # a user's share of long-running requests
        if self.options.flow_control:
            self.router.interceptors.append(self.flow_control.intercept)
        self.router.interceptors.append(self.security.intercept_authorization)
        self.router.interceptors.append(self.faults.intercept)
        self.router.response_wrappers.append(self.faults.wrap)
        self.audit = AuditLog(self.options.audit_capacity, self.options.audit_log)
        self.metrics = Metrics(storage_counts(self.store, self.registry),   # /metrics (observability.py)
                               storage_sizes(self.store, self.registry))
        self.metrics.sources.append(self.flow_control.metrics)
        self.metrics.sources.append(self.pod_security.metrics.render)
        self.router.non_resource_handlers["/metrics"] = lambda ex: self.metrics.render()
        self._http: APIHTTPServer | None = None
        self._thread: threading.Thread | None = None
        for ns in BOOTSTRAP_NAMESPACES:
            self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for obj in flowcontrol_objects.bootstrap_objects():   # with the UIDs the PF headers carry
            self.store.create(self.resource_for(obj).storage_key, obj)
        if self.options.authorization_mode == RBAC:
            for obj in bootstrap_policy():
                self.create(obj)

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> APIServer:
        if self._http is not None:
            return self
        tls = self.security.tls
        self._http = APIHTTPServer((self.options.host, self.options.port), self.metrics.wrap(self.router),
                                   tls.server_context() if tls is not None else None)
        self._http.bookmark_interval = self.options.bookmark_interval
        self._http.header_timeout = self.options.header_timeout
        self._http.read_timeout = self.options.read_timeout
        self._http.idle_timeout = self.options.idle_timeout
        self._http.max_connections = self.options.max_connections
        self._http.request_timeout = self.options.request_timeout
        self._http.observers.append(self.audit.observe)
        self._http.observers.append(self.metrics.observe)
        self.discovery.server_address = self.address
        limit_allocator()   # before the connection threads: few arenas, large answers mapped on their own
        self.faults.start()
        self.store.start_pruning()
        self.gc.start()
        self.namespace_controller.start()
        self.namespace_content.start()
        self.token_dirs.start()
        self._thread = threading.Thread(target=self._http.serve, kwargs={"poll_interval": 0.1},
                                        name="apiserver-http", daemon=True)
        self._thread.start()
        log.info("embedded API server listening on %s", self.url)
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop within about ``timeout`` seconds: no new connections, requests in progress may finish, then the
        built-in controllers. True if every thread ended; False (and a warning naming them) otherwise."""
        http, self._http = self._http, None
        if http is None:
            self.security.close()   # never started (or stopped already): its key material goes all the same
            return True
        deadline = time.monotonic() + timeout
        left: list[str] = []
        http.stop_accepting()
        self.faults.stop()  # injected delays end now
        self.flow_control.stop()  # and queued requests are refused
        if self._thread is not None:
            self._thread.join(_remaining(deadline))  # no connection is accepted after this
            if self._thread.is_alive():
                left.append(self._thread.name)
        self.store.close_watchers()
        self.store.end_waits()   # a read waiting for a resourceVersion answers now, not after its wait
        left += http.drain(_remaining(deadline))
        http.server_close()
        if not self.store.stop_pruning(_remaining(deadline)):
            left.append("history pruner")
        for controller, name in ((self.gc, "garbage collector"), (self.namespace_controller, "namespace controller"),
                                 (self.namespace_content, "namespace content controller"),
                                 (self.token_dirs, "token directories")):
            if not controller.stop(_remaining(deadline)):
                left.append(name)
        self.audit.close()
        self.security.close()
        self.webhook_client.close()
        if left:
            log.warning("embedded API server stopped with threads still running after %.1fs: %s", timeout,
                        ", ".join(left))
        else:
            log.info("embedded API server stopped")
        return not left

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until the garbage collector and namespace controller have nothing left to do; False on timeout."""
        deadline = time.monotonic() + timeout
        return (self.gc.wait_idle(timeout)
                and self.namespace_controller.wait_idle(max(0.0, deadline - time.monotonic()))
                and self.gc.wait_idle(max(0.0, deadline - time.monotonic()))
                and self.namespace_content.wait_idle(max(0.0, deadline - time.monotonic())))

    def __enter__(self) -> APIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def host(self) -> str:
        """The address clients reach the server at: the one it is bound to, or, bound to every address (``0.0.0.0``,
        ``::``), the loopback address of that family, which the serving certificate names (an unspecified address
        is no destination, nor in any certificate)."""
        assert self._http is not None, "server not started"
        return client_host(self._http.server_address[0])

    @property
    def port(self) -> int:
        assert self._http is not None, "server not started"
        return self._http.server_address[1]

    @property
    def address(self) -> str:
        """``host:port`` as Go's ``net.JoinHostPort`` writes it (an IPv6 host in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        scheme = "https" if self.security.tls is not None else "http"
        return f"{scheme}://{self.address}"

    @property
    def http(self) -> APIHTTPServer:
        assert self._http is not None, "server not started"
        return self._http

    # --- credentials (auth/security.py) -----------------------------------------------------------------

    @property
    def admin_token(self) -> str | None:
        """The kubeconfig user's token (a member of ``system:masters``); None when the server authenticates no one."""
        return self.security.admin_token

    @property
    def ca_file(self) -> str | None:
        """The PEM file of the CA that signed the serving certificate (TLS only)."""
        tls = self.security.tls
        return str(tls.ca_file) if tls is not None else None

    def kubeconfig(self, namespace: str = "default", token: str | None = None) -> dict[str, Any]:
        """A kubeconfig for this server: the CA to verify it by, and ``token`` (default: the administrator's)."""
        tls = self.security.tls
        return kubeconfig_for(self.url, namespace=namespace, ca_pem=tls.ca_pem if tls is not None else None,
                              token=token or self.admin_token)

    def write_kubeconfig(self, path: str | Path, namespace: str = "default", token: str | None = None) -> Path:
        self.credential_files.append(Path(path).absolute())
        return write_kubeconfig(path, self.kubeconfig(namespace, token))

    def client_config(self, token: str | None = None, **overrides: Any) -> ClientConfig:
        """How a client in this process reaches the server: its URL, CA and ``token`` (default: the
        administrator's); ``overrides`` set other ``ClientConfig`` fields (qps, burst...)."""
        token = token or self.admin_token
        settings: dict[str, Any] = {"host": self.url, "ca_file": self.ca_file,
                                    "token": StaticToken(token) if token else None, "source": "embedded API server"}
        return ClientConfig(**{**settings, **overrides})

    def issue_user_token(self, name: str, groups: tuple[str, ...] = ()) -> str:
        """A token for the user ``name`` in ``groups`` (and ``system:authenticated``), as kube's token file makes
        one: to act as a user RBAC knows by name."""
        return self.security.issue_user_token(name, groups)

    def issue_service_account_token(self, namespace: str, name: str) -> str:
        """A token of the ServiceAccount ``namespace/name``: it authenticates while that account exists (which it
        need not yet)."""
        return self.security.issue_service_account_token(namespace, name)

    def write_token_dir(self, directory: str | Path, namespace: str, name: str) -> Path:
        """``token``, ``ca.crt`` and ``namespace`` in ``directory``, as a pod's service-account volume (TLS only); the
        token is renewed when its ServiceAccount is deleted and created again (``token_dirs.py``)."""
        self.credential_files.append(Path(directory).absolute())
        return self.token_dirs.write(directory, namespace, name)

    # --- webhooks --------------------------------------------------------------------------------------

    @property
    def service_resolver(self) -> ServiceResolver | None:
        """How a webhook's ``clientConfig.service`` is reached: ``(namespace, name, port) -> "host:port"`` (None: not
        reachable). kube-apiserver dials the Service's cluster IP; this server has no cluster network, so whoever
        runs the webhook says where it listens. The Service must exist (and serve the port) all the same; without a
        resolver, or when it answers None, calls fail as kube's do for a missing Service."""
        return self.webhook_client.service_resolver

    @service_resolver.setter
    def service_resolver(self, resolver: ServiceResolver | None) -> None:
        self.webhook_client.service_resolver = resolver

    @property
    def conversion_timeout(self) -> float:
        """Seconds a CRD conversion webhook may take (kube's fixed 30; lower it to test a slow webhook quickly)."""
        return self.converter.timeout

    @conversion_timeout.setter
    def conversion_timeout(self, seconds: float) -> None:
        self.converter.timeout = seconds

    def _service(self, namespace: str, name: str) -> dict | None:
        entry = self.store.get(builtin.SERVICES.storage_key, (namespace, name))
        return entry.obj if entry is not None else None

    # --- in-process access (bootstrap, tests) ---------------------------------------------------------

    def resource_for(self, obj: dict) -> ResourceType:
        rt = self.registry.by_kind(obj.get("apiVersion", ""), obj.get("kind", ""))
        if rt is None:
            raise errors.bad_request(f"no resource serves {obj.get('apiVersion')}/{obj.get('kind')}")
        return rt

    def create(self, obj: dict) -> dict:
        """Create ``obj`` through the same path as an HTTP POST (defaults, validation, hooks)."""
        rt = self.resource_for(obj)
        ns = (obj.get("metadata") or {}).get("namespace") or ("default" if rt.namespaced else None)
        resp = self.rest.handle(Request("create", rt, namespace=ns, body=json.dumps(obj).encode(),
                                        content_type="application/json"))
        return json.loads(resp.body)

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> dict | None:
        rt = self.registry.by_kind(api_version, kind)
        if rt is None:
            return None
        entry = self.store.get(rt.storage_key, (namespace if rt.namespaced else "", name))
        return entry.obj if entry else None

    def _namespace(self, name: str) -> dict | None:
        return self._lookup(builtin.NAMESPACES.storage_key, "", name)

    def _pods(self, namespace: str) -> list[dict]:
        return [entry.obj for _, entry in self.store.list(builtin.PODS.storage_key, namespace)[0]]

    def _lookup(self, storage_key: str, namespace: str, name: str) -> dict | None:
        entry = self.store.get(storage_key, (namespace, name))
        return entry.obj if entry else None

    def _bind(self, req: Request) -> Response:
        try:
            body = strict_json.loads(req.body or b"{}")
        except ValueError as e:
            raise errors.bad_request(f"the object provided is unrecognized (must be of type Binding): {e}") from e
        if not isinstance(body, dict) or body.get("kind") not in (None, "Binding"):
            raise errors.bad_request("the object provided is unrecognized (must be of type Binding)")
        status = bind(self.store, builtin.PODS.storage_key, req.namespace or "", req.name or "", body)
        return Response(201, json.dumps(status).encode())

    # --- CRD plumbing ---------------------------------------------------------------------------------

    def _write_crd_status(self, name: str, status: dict) -> None:
        self.rest.update_status(builtin.CRDS, ("", name), status, KUBE_APISERVER)

    def _purge_crd(self, crd_name: str) -> None:
        plural, _, group = crd_name.partition(".")
        key = f"{group}/{plural}"
        for entry in list(self.store.iter_all(key)):
            meta = entry.obj.get("metadata") or {}
            try:
                self.store.delete(key, (meta.get("namespace") or "", meta.get("name") or ""))
            except Missing:
                pass
