"""Credential plugins: a kubeconfig user's ``exec`` (``aws eks get-token``, ``gke-gcloud-auth-plugin``,
``kubelogin``...), run as client-go runs them.

The plugin is a program printing an ``ExecCredential`` (``client.authentication.k8s.io/v1`` or ``v1beta1``) on its
standard output: a bearer token, or a client certificate and key, and optionally when they expire. What client-go
does, this does:

- ``command``: an absolute path, a path relative to the kubeconfig file naming it (it holds a ``/``; resolved by
  the kubeconfig loader), or a bare name looked up in ``PATH``. When it is missing the error names the user entry,
  the command and the entry's ``installHint``;
- ``args``, ``env`` (added to this process's environment) and ``KUBERNETES_EXEC_INFO``: an ``ExecCredential``
  whose ``spec.interactive`` says whether the plugin may talk to the user and, with ``provideClusterInfo``, whose
  ``spec.cluster`` describes the cluster (server, CA data, TLS server name, proxy, the cluster's
  ``client.authentication.k8s.io/exec`` extension as ``config``);
- ``interactiveMode``: ``Never`` (the plugin gets no standard input), ``IfAvailable`` (standard input when it is a
  terminal) or ``Always`` (a terminal is required: without one the run fails at once, saying so). A plugin that
  may be interactive shares this process's standard input and error (its prompts reach the user); otherwise its
  standard error is captured, and its last lines are in the error when it fails;
- the plugin runs when a credential is first needed: a token for a request, or the certificate when an
  ``api.Client`` is made (its connections' settings are fixed then); loading the kubeconfig runs nothing;
- the credential is cached until ``status.expirationTimestamp`` (none: for the process's life) and the plugin
  run again after it, or when the server answers 401 to the token it gave (once per refused credential, however
  many requests were refused with it);
- every run has a timeout (:data:`RUN_TIMEOUT`, :data:`INTERACTIVE_RUN_TIMEOUT` when the user may be asked).

A certificate the plugin gives is written, with its key, to one private file (replaced whole when a later run
gives another, and :attr:`ExecToken.certificate_generation` counted up): the client presents it on the connections
it opens, and when it changes drops the connections it kept, as client-go does (``api.Client``).

The pure half (:func:`parse_plugin`, :func:`parse_exec_credential`, :func:`exec_info`) is separate from the
runner (:class:`ExecToken`), so that what is accepted and refused is tested without running anything.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mxjob_controller.logs import register_secret
from mxjob_controller.runtime.client.config import ConfigError, CredentialError, private_file

log = logging.getLogger(__name__)

API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")
EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
CLUSTER_CONFIG_EXTENSION = "client.authentication.k8s.io/exec"   # a cluster extension passed as spec.cluster.config
RUN_TIMEOUT = 60.0               # seconds a plugin that cannot ask the user anything may run
INTERACTIVE_RUN_TIMEOUT = 300.0  # ... and one that may (a browser login, a device code, an MFA prompt)
STDERR_TAIL = 10                 # lines of a failed plugin's standard error quoted in the error


@dataclass(frozen=True)
class ExecPlugin:
    """A user's ``exec`` entry, checked."""

    api_version: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str = ""
    interactive_mode: str = "IfAvailable"
    provide_cluster_info: bool = False


@dataclass(frozen=True)
class ExecCredential:
    """What a plugin printed: a token and/or a PEM certificate and key, valid until ``expires`` (epoch seconds)."""

    token: str | None = field(default=None, repr=False)
    client_certificate: str | None = field(default=None, repr=False)
    client_key: str | None = field(default=None, repr=False)
    expires: float | None = None

    def expired(self, now: float) -> bool:
        return self.expires is not None and now >= self.expires


def parse_plugin(entry: Any, user: str, resolve: Callable[[str], str] = lambda c: c) -> ExecPlugin:
    """A kubeconfig user's ``exec`` mapping, checked as clientcmd checks it (``resolve``: how a command holding a
    path separator becomes a path, relative to its kubeconfig file)."""
    where = f"user {user!r}: exec"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a mapping")
    version = entry.get("apiVersion") or ""
    if version not in API_VERSIONS:
        raise ConfigError(f"{where}: apiVersion {version!r} is not supported (one of: {', '.join(API_VERSIONS)}; "
                          "client.authentication.k8s.io/v1alpha1 was removed in Kubernetes 1.24)")
    command = entry.get("command")
    if not isinstance(command, str) or not command:
        raise ConfigError(f"{where}: command is required")
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}: args must be a list of strings")
    env: list[tuple[str, str]] = []
    for item in entry.get("env") or []:
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item.get("name"):
            raise ConfigError(f"{where}: every env entry needs a name and a value")
        env.append((item["name"], str(item.get("value") if item.get("value") is not None else "")))
    mode = entry.get("interactiveMode")
    if not mode:
        if version.endswith("/v1"):
            raise ConfigError(f"{where}: interactiveMode must be specified for {version} (Never, IfAvailable or "
                              "Always)")
        mode = "IfAvailable"   # v1beta1's default
    if mode not in INTERACTIVE_MODES:
        raise ConfigError(f"{where}: invalid interactiveMode {mode!r} (one of: {', '.join(INTERACTIVE_MODES)})")
    return ExecPlugin(api_version=version, command=resolve(command) if os.sep in command else command,
                      args=tuple(args), env=tuple(env), install_hint=str(entry.get("installHint") or ""),
                      interactive_mode=mode, provide_cluster_info=bool(entry.get("provideClusterInfo")))


def parse_exec_credential(output: str, api_version: str, user: str) -> ExecCredential:
    """The ``ExecCredential`` a plugin printed, checked as client-go checks it: JSON, of the plugin's configured
    ``apiVersion`` and kind ``ExecCredential``, with a token or a certificate and its key."""
    where = f"user {user!r}: the exec plugin's output"
    try:
        doc = json.loads(output)
    except ValueError as e:
        raise CredentialError(f"{where} is not JSON ({e}): {output[:100]!r}") from None
    if not isinstance(doc, dict):
        raise CredentialError(f"{where} is not a JSON object")
    if doc.get("kind") != "ExecCredential":
        raise CredentialError(f"{where} is of kind {doc.get('kind')!r}, not ExecCredential")
    if doc.get("apiVersion") != api_version:
        raise CredentialError(f"{where}: the plugin is configured to use API version {api_version}, it returned "
                              f"{doc.get('apiVersion')!r}")
    status = doc.get("status")
    if not isinstance(status, dict):
        raise CredentialError(f"{where} has no status")
    token = status.get("token") or None
    cert = status.get("clientCertificateData") or None
    key = status.get("clientKeyData") or None
    for name, value in (("token", token), ("clientCertificateData", cert), ("clientKeyData", key)):
        if value is not None and not isinstance(value, str):
            raise CredentialError(f"{where}: status.{name} must be a string")
    if bool(cert) != bool(key):
        raise CredentialError(f"{where}: status.clientCertificateData and status.clientKeyData must both be present "
                              "or both absent")
    if not token and not cert:
        raise CredentialError(f"{where}: status has neither a token nor a client certificate")
    expires: float | None = None
    stamp = status.get("expirationTimestamp")
    if stamp:
        try:
            moment = datetime.fromisoformat(str(stamp))
        except ValueError:
            raise CredentialError(f"{where}: status.expirationTimestamp {stamp!r} is not an RFC 3339 time") from None
        if moment.tzinfo is None:
            raise CredentialError(f"{where}: status.expirationTimestamp {stamp!r} has no time zone")
        expires = moment.timestamp()
    return ExecCredential(token=token, client_certificate=cert, client_key=key, expires=expires)


def cluster_info(cluster: Mapping[str, Any], server: str, ca_pem: bytes | None) -> dict[str, Any]:
    """``spec.cluster`` of ``KUBERNETES_EXEC_INFO`` for a kubeconfig ``cluster`` (``ca_pem``: its CA, read)."""
    info: dict[str, Any] = {"server": server}
    if cluster.get("tls-server-name"):
        info["tls-server-name"] = cluster["tls-server-name"]
    if cluster.get("insecure-skip-tls-verify"):
        info["insecure-skip-tls-verify"] = True
    if ca_pem:
        info["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    if cluster.get("proxy-url"):
        info["proxy-url"] = cluster["proxy-url"]
    if cluster.get("disable-compression"):
        info["disable-compression"] = True
    for ext in cluster.get("extensions") or []:
        if isinstance(ext, Mapping) and ext.get("name") == CLUSTER_CONFIG_EXTENSION:
            info["config"] = ext.get("extension")
    return info


def exec_info(plugin: ExecPlugin, interactive: bool, cluster: Mapping[str, Any] | None) -> str:
    """The ``KUBERNETES_EXEC_INFO`` value: the plugin's API version, ``spec.interactive``, and ``spec.cluster``
    when the plugin asked for it (``provideClusterInfo``)."""
    spec: dict[str, Any] = {"interactive": interactive}
    if plugin.provide_cluster_info and cluster is not None:
        spec["cluster"] = dict(cluster)
    return json.dumps({"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec},
                      separators=(",", ":"))


def interactive_for(mode: str, stdin_is_terminal: bool, user: str) -> bool:
    """Whether a plugin of ``interactiveMode`` ``mode`` runs interactive; ``Always`` without a terminal fails."""
    if mode == "Never":
        return False
    if mode == "Always" and not stdin_is_terminal:
        raise CredentialError(f"user {user!r}: the exec plugin requires an interactive terminal (interactiveMode "
                              "Always), and standard input is not one; run it where it can ask, or use a "
                              "non-interactive credential")
    return stdin_is_terminal


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):   # closed or detached
        return False


def _tail(text: str, lines: int = STDERR_TAIL) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


class ExecToken:
    """The token source of a user with an ``exec`` plugin (see the module's docstring). Thread-safe: one run at a
    time; callers meanwhile wait for its credential."""

    def __init__(self, plugin: ExecPlugin, user: str, cluster: Mapping[str, Any] | None = None, *,
                 stdin_is_terminal: Callable[[], bool] = _stdin_is_terminal,
                 clock: Callable[[], float] = time.time) -> None:
        self.plugin = plugin
        self.user = user
        self._cluster = cluster
        self._stdin_is_terminal = stdin_is_terminal
        self._clock = clock
        self._lock = threading.Lock()
        self._credential: ExecCredential | None = None
        self._cert_file: str | None = None
        self._cert_pem: str | None = None
        self.certificate_generation = 0   # counts the certificates given: the client drops connections made before
        self.runs = 0                     # how many times the plugin ran (for messages and tests)

    def __repr__(self) -> str:
        return f"ExecToken({self.plugin.command!r} of user {self.user!r})"

    def __call__(self) -> str | None:
        return self._current().token

    def client_certificate(self) -> str | None:
        self._current()
        return self._cert_file

    def refresh(self, refused: str | None) -> bool:
        with self._lock:
            held = self._credential
            if held is not None and held.token != refused and not held.expired(self._clock()):
                return True   # another caller already replaced the refused credential
            fresh = self._run()
            return fresh.token != refused

    def _current(self) -> ExecCredential:
        with self._lock:
            held = self._credential
            if held is None or held.expired(self._clock()):
                held = self._run()
            return held

    def _run(self) -> ExecCredential:
        """Run the plugin (the lock held) and keep its credential."""
        plugin, user = self.plugin, self.user
        interactive = interactive_for(plugin.interactive_mode, self._stdin_is_terminal(), user)
        env = dict(os.environ)
        env.update(plugin.env)
        env[EXEC_INFO_ENV] = exec_info(plugin, interactive, self._cluster)
        command = plugin.command
        found = command if os.sep in command else shutil.which(command, path=env.get("PATH"))
        if found is None or not os.path.exists(found):
            where = "" if os.sep in command else " in PATH"
            hint = f"\n{plugin.install_hint.strip()}" if plugin.install_hint.strip() else ""
            raise CredentialError(f"user {user!r}: the exec plugin's command {command!r} was not found{where}"
                                  f"{hint}")
        timeout = INTERACTIVE_RUN_TIMEOUT if interactive else RUN_TIMEOUT
        self.runs += 1
        started = time.monotonic()
        try:
            done = subprocess.run([found, *plugin.args], env=env, stdout=subprocess.PIPE,
                                  stdin=None if interactive else subprocess.DEVNULL,
                                  stderr=None if interactive else subprocess.PIPE,
                                  timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise CredentialError(f"user {user!r}: the exec plugin {command!r} did not finish within {timeout:g}s "
                                  "(it was killed)") from None
        except OSError as e:
            raise CredentialError(f"user {user!r}: cannot run the exec plugin {command!r}: "
                                  f"{e.strerror or e}") from None
        stderr = (done.stderr or b"").decode("utf-8", "replace")
        if done.returncode != 0:
            said = _tail(stderr)
            raise CredentialError(f"user {user!r}: the exec plugin {command!r} exited with code {done.returncode}"
                                  + (f"; its last output on standard error:\n{said}" if said else
                                     " (see its output above)" if interactive else ""))
        credential = parse_exec_credential(done.stdout.decode("utf-8", "replace"), plugin.api_version, user)
        register_secret(credential.token)
        if credential.client_certificate and credential.client_key:
            pem = credential.client_certificate.rstrip("\n") + "\n" + credential.client_key.rstrip("\n") + "\n"
            if pem != self._cert_pem:
                self._cert_file = private_file(pem.encode(), replacing=self._cert_file)
                self._cert_pem = pem
                self.certificate_generation += 1
        if stderr.strip():
            log.info("exec plugin %r of user %r said: %s", command, user, _tail(stderr))
        log.debug("exec plugin %r of user %r ran in %.0f ms (run %d)", command, user,
                  (time.monotonic() - started) * 1000, self.runs)
        self._credential = credential
        return credential
