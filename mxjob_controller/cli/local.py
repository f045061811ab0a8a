"""``mxjob-controller local …``: the embedded cluster for users (and tests) without a real one."""

from __future__ import annotations

import logging
import signal
import threading
from importlib import resources
from pathlib import Path

import click
import yaml

from mxjob_controller.local.apiserver import APIServer, ServerOptions
from mxjob_controller.local.apiserver.faults import FaultRule, parse_rule
from mxjob_controller.logs import setup_logging

log = logging.getLogger(__name__)
DEFAULT_KUBECONFIG = ".mxjob-local/kubeconfig"


def packaged_crds() -> list[dict]:
    """The project's CRDs, shipped as package data so ``local up`` works from any directory or wheel."""
    folder = resources.files("mxjob_controller").joinpath("data", "crds")
    docs: list[dict] = []
    if not folder.is_dir():
        return docs
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith((".yaml", ".yml")):
            docs.extend(d for d in yaml.safe_load_all(entry.read_text()) if d)
    return docs


@click.group()
def local() -> None:
    """The embedded cluster: an in-process Kubernetes API server on this machine."""


@local.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port).")
@click.option("--kubeconfig-out", default=DEFAULT_KUBECONFIG, show_default=True, type=click.Path(dir_okay=False),
              help="Where to write a kubeconfig for this server (written atomically once it is ready).")
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
                   "(repeatable; keys in mxjob_controller/local/apiserver/faults.py).")
@click.option("--fault-seed", default=0, show_default=True, type=int,
              help="Seed of the faults' random choices: the same seed reproduces the same faults.")
@click.option("--audit-log", default=None, type=click.Path(dir_okay=False),
              help="Append a JSON line per request (verb, resource, name, user agent, code, time spent).")
def up(host: str, port: int, kubeconfig_out: str, no_crds: bool, bookmark_interval: float, log_level: str,
       json_log_format: bool, watcher_queue: int, faults: list[FaultRule], fault_seed: int,
       audit_log: str | None) -> None:
    """Start the embedded API server in the foreground until SIGINT or SIGTERM."""
    setup_logging(log_level, json_log_format)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server = APIServer(ServerOptions(host=host, port=port, bookmark_interval=bookmark_interval,
                                     watcher_queue=watcher_queue, fault_seed=fault_seed, audit_log=audit_log))
    for rule in faults:
        server.faults.add(rule)
    try:
        server.start()
    except OSError as e:
        raise click.ClickException(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    try:
        if not no_crds:
            for crd in packaged_crds():
                server.create(crd)
                log.info("applied CRD %s", crd["metadata"]["name"])
        path = server.write_kubeconfig(kubeconfig_out)
        click.echo(f"Embedded Kubernetes API server listening on {server.url}")
        click.echo(f"Kubeconfig written to {path}")
        click.echo(f"  export KUBECONFIG={Path(path).resolve()}")
        click.echo("  kubectl get namespaces")
        click.echo("Press Ctrl-C to stop.", err=False)
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
        try:
            Path(kubeconfig_out).unlink()
        except FileNotFoundError:
            pass


def _parse_faults(values: tuple[str, ...]) -> list[FaultRule]:
    rules = []
    for text in values:
        try:
            rules.append(parse_rule(text))
        except ValueError as e:
            raise click.BadParameter(f"{text!r}: {e}", param_hint="--fault") from None
    return rules
