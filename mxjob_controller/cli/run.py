"""``mxjob-controller run``: the operator, as a Deployment (or a person) runs it.

Every flag can also be set by an environment variable named ``MXJOB_`` + the flag in upper case with ``-`` as ``_``
(``--kube-api-qps`` ↔ ``MXJOB_KUBE_API_QPS``); the flag wins over the variable. The names are written out below
(and shown by ``--help``), not derived from the command's name as click's ``auto_envvar_prefix`` would
(``MXJOB_RUN_…``), so renaming or moving the command cannot silently rename them. The Go mxnet-operator's flags
``--resyc-period`` (sic) and ``--enable-gang-scheduling`` still work, with a warning; so do training-operator's
(``--enable-scheme``, ``--webhook-server-port``, ``--zap-*``, ``--controller-threads`` …: ``cli/training_operator.py``
says what each maps to), which have no environment variable, and ``--help`` lists apart.

Exit codes: 0 after a graceful stop (SIGTERM/SIGINT); 1 when it cannot start (configuration, API server, missing
CRD or RBAC, busy port) or lost its Lease; 2 for a bad flag value, reported on one line naming the flag. A second
SIGTERM/SIGINT during the graceful stop exits 1 at once. SIGQUIT prints every thread's stack and ends the process.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource
from prometheus_client import disable_created_metrics

from mxjob_controller import __version__
from mxjob_controller.cli import training_operator as to
from mxjob_controller.cli.flag_types import (
    BindAddress,
    GoDuration,
    NameList,
    NamespaceList,
    go_bool_option,
    go_flag_spellings,
)
from mxjob_controller.core.podgroups import VOLCANO
from mxjob_controller.frameworks import DEFAULT_FRAMEWORKS, FRAMEWORKS, OPTIONAL_BY_DEFAULT
from mxjob_controller.kube.names import dns1123_label_errors, dns1123_subdomain_errors
from mxjob_controller.logs import LEVELS, setup_logging
from mxjob_controller.manager.settings import (
    DEFAULT_BURST,
    DEFAULT_CACHE_SYNC_TIMEOUT,
    DEFAULT_CERT_DIR,
    DEFAULT_EVENT_BURST,
    DEFAULT_EVENT_QPS,
    DEFAULT_LEASE_NAME,
    DEFAULT_QPS,
    DEFAULT_RESYNC_PERIOD,
    RunSettings,
    lease_namespace,
)
from mxjob_controller.runtime.client.incluster import default_service_account_dir

if TYPE_CHECKING:
    from mxjob_controller.manager.process import Manager

log = logging.getLogger(__name__)

# Where the pod's service account is mounted (read for the Lease namespace and in-cluster credentials), when set
# (tests); None: $MXJOB_SERVICE_ACCOUNT_DIR (local up --token-dir) or /var/run/secrets/kubernetes.io/serviceaccount,
# read when the settings are built, not when this module is imported.
service_account_dir: str | None = None


def service_account_directory() -> str:
    """The service-account directory this run uses (see ``service_account_dir``)."""
    return service_account_dir if service_account_dir is not None else default_service_account_dir()


class FlagError(click.UsageError):
    """A usage error shown as one line (``mxjob-controller run: <what is wrong>``), exit code 2."""

    def show(self, file: Any = None) -> None:
        click.echo(f"mxjob-controller run: {self.format_message()}", err=True)


# ``--help``'s sections, by parameter name (the rest: "Options").
TRAINING_OPERATOR_SECTION = "training-operator compatibility (its Deployments' args; no environment variables)"
DEPRECATED_SECTION = "Deprecated (the Go mxnet-operator's; no environment variables)"
TRAINING_OPERATOR_NOTE = ("Its --leader-elect, --leader-election-id, --metrics-bind-address, "
                          "--health-probe-bind-address, --namespace, --gang-scheduler-name and --kubeconfig are the "
                          "flags above, same meaning.")
SECTIONS = {
    TRAINING_OPERATOR_SECTION: ("enable_schemes", "webhook_server_port", "controller_threads", "zap_devel",
                                "zap_encoder", "zap_log_level", "zap_stacktrace_level", "zap_time_encoding",
                                "webhook_service_name", "webhook_secret_name", "pytorch_init_container_image",
                                "pytorch_init_container_template_file", "pytorch_init_container_max_tries",
                                "mpi_kubectl_delivery_image"),
    DEPRECATED_SECTION: ("resyc_period", "enable_gang_scheduling"),
}


class RunCommand(click.Command):
    """Reports every usage error as one :class:`FlagError` line naming the flag (and its variable when the bad
    value came from the environment); takes Go's one-dash spelling of every long flag (``-leader-elect``);
    ``--help`` shows the compatibility flags in sections of their own."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        long_flags = {opt for param in self.get_params(ctx) for opt in param.opts if opt.startswith("--")}
        return super().parse_args(ctx, go_flag_spellings(args, long_flags))

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        section_of = {name: title for title, names in SECTIONS.items() for name in names}
        rows: dict[str, list[tuple[str, str]]] = {"Options": [], **{title: [] for title in SECTIONS}}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                rows[section_of.get(param.name or "", "Options")].append(record)
        for title, records in rows.items():
            if records:
                with formatter.section(title):
                    if title == TRAINING_OPERATOR_SECTION:
                        formatter.write_text(TRAINING_OPERATOR_NOTE)
                    formatter.write_dl(records)

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.BadParameter as e:
            raise FlagError(_describe(e), e.ctx) from None
        except click.UsageError as e:
            if isinstance(e, FlagError):
                raise
            raise FlagError(e.format_message().replace("\n", " "), e.ctx) from None


def _describe(e: click.BadParameter) -> str:
    param = e.param
    if not isinstance(param, click.Option) or e.ctx is None:
        return e.format_message().replace("\n", " ")
    flag = max(param.opts, key=len)
    source = e.ctx.get_parameter_source(param.name or "")
    where = f" (from ${param.envvar})" if source is ParameterSource.ENVIRONMENT and param.envvar else ""
    return f"invalid value for {flag}{where}: {e.message}".replace("\n", " ")


def _deprecated(replacement: str) -> Any:
    """A callback noting that a deprecated alias was used (logged as a warning once logging is set up)."""
    def note(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None and ctx.get_parameter_source(param.name or "") is ParameterSource.COMMANDLINE:
            flag = max(param.opts, key=len)
            ctx.meta.setdefault("deprecations", []).append(f"{flag} is deprecated: use {replacement}")
        return value
    return note


def _option(flag: str, envvar: str, *names: str, **kwargs: Any) -> Any:
    """A flag and its environment variable (shown in ``--help``)."""
    return click.option(flag, *names, envvar=envvar, show_envvar=True, **kwargs)


@click.command(cls=RunCommand, context_settings={"max_content_width": 120})
@click.version_option(__version__, "--version", prog_name="mxjob-controller")
@_option("--kubeconfig", "MXJOB_KUBECONFIG", default=None, metavar="PATH",
         help="Kubeconfig file (default: $KUBECONFIG, the in-cluster service account, ~/.kube/config).")
@_option("--master", "MXJOB_MASTER", default=None, metavar="URL",
         help="API server URL; overrides the kubeconfig's server.")
@_option("--namespace", "MXJOB_NAMESPACE", "namespaces", multiple=True, type=NamespaceList(),
         help="Reconcile jobs in this namespace only; repeat (or separate with commas) for several. "
              "Default: every namespace.")
@_option("--frameworks", "MXJOB_FRAMEWORKS", "frameworks", multiple=True, type=NameList(tuple(FRAMEWORKS)),
         help=f"Reconcile these frameworks' jobs only ({', '.join(FRAMEWORKS)}); repeat or separate with commas. "
              f"Each one's CRD must be installed. Default: {', '.join(DEFAULT_FRAMEWORKS)}, where "
              f"{' and '.join(sorted(OPTIONAL_BY_DEFAULT))} only if its CRD is installed.")
@_option("--threadiness", "MXJOB_THREADINESS", default=None, type=click.IntRange(min=1),
         help="Reconcile worker threads (jobs reconciled at once), per framework.  [default: 1]")
@click.option("--controller-threads", default=None, type=click.IntRange(min=1), allow_from_autoenv=False,
              callback=_deprecated("--threadiness"), help="Deprecated alias of --threadiness (training-operator's "
              "worker threads per controller: the same).")
@_option("--metrics-bind-address", "MXJOB_METRICS_BIND_ADDRESS", default=":8080", show_default=True,
         type=BindAddress(), help="Address of /metrics: [host]:port, or 0 to disable.")
@_option("--health-probe-bind-address", "MXJOB_HEALTH_PROBE_BIND_ADDRESS", default=":8081", show_default=True,
         type=BindAddress(), help="Address of /healthz and /readyz: [host]:port, or 0 to disable.")
@_option("--webhook-bind-address", "MXJOB_WEBHOOK_BIND_ADDRESS", default="0", show_default=True, type=BindAddress(),
         help="Serve the validating and conversion webhooks over HTTPS on [host]:port (e.g. :9443), or 0: off.")
@_option("--webhook-cert-dir", "MXJOB_WEBHOOK_CERT_DIR", default=DEFAULT_CERT_DIR, show_default=True, metavar="DIR",
         help="Where the webhook's tls.crt and tls.key are (a mounted Secret); reloaded when they change.")
@go_bool_option("--leader-elect", default=False, envvar="MXJOB_LEADER_ELECT",
                help="Run as one of several replicas: only the holder of the Lease reconciles.")
@_option("--leader-election-id", "MXJOB_LEADER_ELECTION_ID", default=DEFAULT_LEASE_NAME, show_default=True,
         help="Name of the Lease used for leader election.")
@_option("--leader-election-namespace", "MXJOB_LEADER_ELECTION_NAMESPACE", default=None,
         help="Namespace of the Lease. Default: $POD_NAMESPACE, else the service account's namespace, "
              "else 'default'.")
@_option("--kube-api-qps", "MXJOB_KUBE_API_QPS", default=None, type=float,
         help="Requests per second to the API server, a client-side token bucket (-1: no limit); the informers' "
              "lists and watches have a budget of this size of their own. Default: no client-side limit when the "
              "server advertises API Priority and Fairness (X-Kubernetes-PF-* headers on GET /version, asked at "
              f"start and after a lost connection), else {DEFAULT_QPS:g}/s. Given (this or --kube-api-burst): "
              "always this bucket. The start-up log line says which budget is in force and why.")
@_option("--kube-api-burst", "MXJOB_KUBE_API_BURST", default=None, type=click.IntRange(min=1),
         help=f"Requests allowed in a burst above --kube-api-qps.  [default: {DEFAULT_BURST}, where a bucket applies]")
@_option("--event-qps", "MXJOB_EVENT_QPS", default=DEFAULT_EVENT_QPS, show_default=True, type=float,
         help="Event writes per second, a budget apart from --kube-api-qps so that events and pod creations never "
              "wait for each other (negative: no limit).")
@_option("--event-burst", "MXJOB_EVENT_BURST", default=DEFAULT_EVENT_BURST, show_default=True,
         type=click.IntRange(min=1), help="Event writes allowed in a burst above --event-qps.")
@_option("--resync-period", "MXJOB_RESYNC_PERIOD", default=None, type=GoDuration(),
         help="Reconcile every job at least this often, changed or not (Go duration: 12h, 30m; 0: never).  "
              "[default: 12h]")
@_option("--cache-sync-timeout", "MXJOB_CACHE_SYNC_TIMEOUT", default=DEFAULT_CACHE_SYNC_TIMEOUT, show_default=True,
         type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
         help="Longest wait at start for the caches' initial lists (jobs, pods, services); past it the controller "
              "exits 1 saying so. Raise it for many thousands of jobs on a slow API server.")
@click.option("--resyc-period", default=None, type=GoDuration(), allow_from_autoenv=False,
              callback=_deprecated("--resync-period"), help="Deprecated alias of --resync-period (mxnet-operator).")
@_option("--gang-scheduler-name", "MXJOB_GANG_SCHEDULER_NAME", default=None,
         help="Gang scheduling: 'volcano', or the scheduler name of scheduler-plugins. Default: off.")
@go_bool_option("--enable-gang-scheduling", default=None, callback=_deprecated("--gang-scheduler-name=volcano"),
                help="Deprecated: --enable-gang-scheduling=true means --gang-scheduler-name=volcano (mxnet-operator).")
@go_bool_option("--json-log-format", default=True, envvar="MXJOB_JSON_LOG_FORMAT",
                help="Log JSON lines; =false for readable text.")
@_option("--log-level", "MXJOB_LOG_LEVEL", default="info", show_default=True,
         type=click.Choice(LEVELS, case_sensitive=False), help="Least severe level logged.")
@click.option("--enable-scheme", "enable_schemes", multiple=True, allow_from_autoenv=False, metavar="KIND",
              help=f"Serve these job kinds only (case-insensitive; repeat): {', '.join(to.SERVED_SCHEMES)}, as "
                   "--frameworks mxnet/tensorflow/generic. training-operator's other kinds (pytorchjob, xgboostjob, "
                   "mpijob, paddlejob) are not served here: a warning each.")
@click.option("--webhook-server-port", default=None, type=click.IntRange(0, 65535), allow_from_autoenv=False,
              help="Serve the webhooks on this port (= --webhook-bind-address :PORT; 0: 9443), with the "
                   "certificate in --webhook-cert-dir. Not given: webhooks as --webhook-bind-address says.")
@go_bool_option("--zap-devel", default=None,
                help="=true: readable text at debug level (as --json-log-format=false --log-level debug); =false: "
                     "JSON at info. --zap-encoder and --zap-log-level override it.")
@click.option("--zap-encoder", default=None, type=click.Choice(to.ZAP_ENCODERS, case_sensitive=False),
              allow_from_autoenv=False, help="json (= --json-log-format) or console (= --json-log-format=false).")
@click.option("--zap-log-level", default=None, metavar="LEVEL", allow_from_autoenv=False,
              help="debug, info or error (= --log-level), or an integer > 0 (more verbose: debug).")
@click.option("--zap-stacktrace-level", default=None, allow_from_autoenv=False,
              type=click.Choice(to.ZAP_STACKTRACE_LEVELS, case_sensitive=False),
              help="Accepted, no effect (a warning): tracebacks are logged with the error they belong to.")
@click.option("--zap-time-encoding", default=None, allow_from_autoenv=False,
              type=click.Choice(to.ZAP_TIME_ENCODINGS, case_sensitive=False),
              help="Accepted, no effect (a warning): timestamps are RFC 3339, UTC, milliseconds.")
@click.option("--webhook-service-name", default=None, allow_from_autoenv=False,
              help="Accepted, no effect (a warning): the webhook certificate is mounted, not generated.")
@click.option("--webhook-secret-name", default=None, allow_from_autoenv=False,
              help="Accepted, no effect (a warning): the webhook certificate is mounted, not generated.")
@click.option("--pytorch-init-container-image", default=None, allow_from_autoenv=False,
              help="Accepted, no effect (a warning): no PyTorchJob here.")
@click.option("--pytorch-init-container-template-file", default=None, allow_from_autoenv=False,
              help="Accepted, no effect (a warning): no PyTorchJob here.")
@click.option("--pytorch-init-container-max-tries", default=None, type=int, allow_from_autoenv=False,
              help="Accepted, no effect (a warning): no PyTorchJob here.")
@click.option("--mpi-kubectl-delivery-image", default=None, allow_from_autoenv=False,
              help="Accepted, no effect (a warning): no MPIJob here.")
@click.pass_context
def run(ctx: click.Context, **flags: Any) -> None:
    """Run the job controllers (MXJob, TFJob, GenericJob) against a Kubernetes API server until SIGTERM or SIGINT."""
    sa_dir = service_account_directory()
    settings = build_settings(ctx, flags, sa_dir)
    setup_logging(settings.log_level, settings.json_log_format)
    # Series as Go operators expose them: no ``*_created`` sample beside every counter and histogram.
    disable_created_metrics()
    for note in [*ctx.meta.get("deprecations", []), *ctx.meta.get("warnings", [])]:
        log.warning(note)
    # Imported here: the controller (and all it imports) loads only for `run`, not for every other subcommand.
    from mxjob_controller.manager.process import Manager  # noqa: PLC0415

    manager = Manager(settings, service_account_dir=sa_dir)
    _handle_signals(manager)
    sys.exit(manager.run())


def build_settings(ctx: click.Context, flags: dict[str, Any], sa_dir: str | None = None) -> RunSettings:
    """Resolve aliases, cross-flag rules and the Lease namespace (``sa_dir``: the service-account directory, by
    default :func:`service_account_directory`); :class:`FlagError` on a contradiction. training-operator's flags
    are mapped here; those with no meaning here leave a warning each in ``ctx.meta["warnings"]``."""
    threadiness = _one_of(flags, "threadiness", "controller_threads", "--threadiness", "--controller-threads", ctx)
    resync = _one_of(flags, "resync_period", "resyc_period", "--resync-period", "--resyc-period", ctx)
    gang = (flags["gang_scheduler_name"] or "").strip()
    if gang.lower() == "none":
        gang = ""
    if gang.lower() == VOLCANO:      # training-operator compares it case-insensitively
        gang = VOLCANO
    if flags["enable_gang_scheduling"]:
        if gang and gang != VOLCANO:
            raise FlagError(f"--enable-gang-scheduling means --gang-scheduler-name={VOLCANO}, which contradicts "
                            f"--gang-scheduler-name={gang}", ctx)
        gang = VOLCANO
    if gang and gang != VOLCANO:
        errors = dns1123_subdomain_errors(gang)
        if errors:
            raise FlagError(f"invalid value for --gang-scheduler-name: {gang!r} is not a valid scheduler name: "
                            f"{'; '.join(errors)}", ctx)
    lease_name = flags["leader_election_id"]
    errors = dns1123_subdomain_errors(lease_name)
    if errors:
        raise FlagError(f"invalid value for --leader-election-id: {lease_name!r}: {'; '.join(errors)}", ctx)
    flag_namespace = flags["leader_election_namespace"]
    errors = dns1123_label_errors(flag_namespace) if flag_namespace else []
    if errors:
        raise FlagError(f"invalid value for --leader-election-namespace: {flag_namespace!r}: {'; '.join(errors)}",
                        ctx)
    namespace, _source = lease_namespace(flag_namespace, service_account_dir=sa_dir or service_account_directory())
    namespaces = tuple(dict.fromkeys(n for group in flags["namespaces"] for n in group))
    frameworks = _frameworks(ctx, flags)
    log_level, json_log_format = _logging(ctx, flags)
    for flag in to.IGNORED:
        value = flags[flag[2:].replace("-", "_")]
        if value is not None:
            ctx.meta.setdefault("warnings", []).append(to.ignored_warning(flag, value))
    return RunSettings(
        kubeconfig=flags["kubeconfig"] or None, master=flags["master"] or None, namespaces=namespaces,
        frameworks=frameworks,
        threadiness=threadiness or 1, metrics_bind_address=flags["metrics_bind_address"],
        health_probe_bind_address=flags["health_probe_bind_address"],
        webhook_bind_address=_webhook_address(ctx, flags), webhook_cert_dir=flags["webhook_cert_dir"],
        leader_elect=bool(flags["leader_elect"]),
        leader_election_id=lease_name, leader_election_namespace=namespace, kube_api_qps=flags["kube_api_qps"],
        kube_api_burst=flags["kube_api_burst"], event_qps=flags["event_qps"], event_burst=flags["event_burst"],
        resync_period=DEFAULT_RESYNC_PERIOD if resync is None else resync,
        cache_sync_timeout=flags["cache_sync_timeout"],
        gang_scheduler_name=gang, json_log_format=json_log_format, log_level=log_level)


def _given(ctx: click.Context, name: str) -> bool:
    """The flag (or its variable) was given, not left at its default."""
    return ctx.get_parameter_source(name) in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _frameworks(ctx: click.Context, flags: dict[str, Any]) -> tuple[str, ...]:
    """--frameworks, or training-operator's --enable-scheme (a warning for each kind not served here); both given
    must name the same."""
    frameworks = tuple(dict.fromkeys(n for group in flags["frameworks"] for n in group))
    if not flags["enable_schemes"]:
        return frameworks
    try:
        served, unserved = to.frameworks_for_schemes(flags["enable_schemes"])
    except ValueError as e:
        raise FlagError(f"invalid value for --enable-scheme: {e}", ctx) from None
    ctx.meta.setdefault("warnings", []).extend(to.unserved_warning(s) for s in unserved)
    if not served:
        raise FlagError(f"--enable-scheme names only kinds this operator does not serve ({', '.join(unserved)}): "
                        f"name one of {', '.join(to.SERVED_SCHEMES)}", ctx)
    if frameworks and set(frameworks) != set(served):
        raise FlagError(f"--enable-scheme (training-operator) selects {', '.join(served)}, which contradicts "
                        f"--frameworks {','.join(frameworks)}: give one of them", ctx)
    return frameworks or served


def _webhook_address(ctx: click.Context, flags: dict[str, Any]) -> str:
    """--webhook-bind-address, or training-operator's --webhook-server-port; both given must agree."""
    address = flags["webhook_bind_address"].strip()
    if flags["webhook_server_port"] is None:
        return address
    from_port = to.webhook_address(flags["webhook_server_port"])
    if _given(ctx, "webhook_bind_address") and address != from_port:
        raise FlagError(f"--webhook-server-port {flags['webhook_server_port']} (training-operator) means "
                        f"--webhook-bind-address {from_port}, which contradicts --webhook-bind-address {address}",
                        ctx)
    return from_port


def _logging(ctx: click.Context, flags: dict[str, Any]) -> tuple[str, bool]:
    """(level, JSON?) from --log-level/--json-log-format, or training-operator's --zap-* flags where those are not
    given; both given must agree."""
    try:
        zap_level, zap_json = to.zap_logging(flags["zap_devel"], flags["zap_encoder"], flags["zap_log_level"])
    except ValueError as e:
        raise FlagError(f"invalid value for --zap-log-level: {e}", ctx) from None
    level, json_lines = flags["log_level"].lower(), bool(flags["json_log_format"])
    if zap_level is not None:
        if _given(ctx, "log_level") and flags["zap_log_level"] is not None and level != zap_level:
            raise FlagError(f"--zap-log-level {flags['zap_log_level']} (training-operator) and --log-level {level} "
                            "disagree: give one of them", ctx)
        if not _given(ctx, "log_level"):
            level = zap_level
    if zap_json is not None:
        if _given(ctx, "json_log_format") and flags["zap_encoder"] is not None and json_lines != zap_json:
            raise FlagError(f"--zap-encoder {flags['zap_encoder']} (training-operator) and --json-log-format="
                            f"{str(json_lines).lower()} disagree: give one of them", ctx)
        if not _given(ctx, "json_log_format"):
            json_lines = zap_json
    return level, json_lines


def _one_of(flags: dict[str, Any], name: str, alias: str, flag: str, alias_flag: str, ctx: click.Context) -> Any:
    """The value of a flag or of its deprecated alias; both given is a contradiction unless they agree."""
    value, old = flags[name], flags[alias]
    if value is not None and old is not None and value != old:
        raise FlagError(f"{alias_flag} (deprecated) and {flag} disagree: give {flag} only", ctx)
    return value if value is not None else old


def _handle_signals(manager: Manager) -> None:
    """SIGTERM/SIGINT: a graceful stop; a second one while stopping: exit 1 at once. SIGQUIT: every thread's stack
    on stderr, then exit, as a Go controller does: what an operator (or a test) needs of a process that hangs. A
    SIGQUIT ignored by whoever started the process (a shell's background job) is taken back, as Go's runtime does:
    the dump chains to the default action, and an inherited SIG_IGN would leave the process running after it."""
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    faulthandler.register(signal.SIGQUIT, all_threads=True, chain=True)  # then the default: exit
    seen = threading.Event()

    def handle(signum: int, _frame: Any) -> None:
        if seen.is_set():
            os._exit(1)
        seen.set()
        log.info("received %s: stopping", signal.Signals(signum).name)
        manager.request_stop()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, handle)
