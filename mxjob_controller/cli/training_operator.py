"""Kubeflow training-operator's flags (v1.8, ``cmd/training-operator.v1/main.go`` and controller-runtime's
``--zap-*``), accepted by ``run`` with the same meanings, so that a Deployment written for training-operator keeps
its ``args`` when its image is swapped for this one.

Why a table of its own: training-operator's spellings differ from this operator's (``--enable-scheme tfjob`` for
``--frameworks tensorflow``, ``--zap-encoder console`` for ``--json-log-format=false``), some of its flags name
things this operator has not (PyTorchJob's init container, certificate generation), and a flag the Go flag package
knew must never become click's exit 2. Each flag here either maps onto a setting (the pure functions below, which
``cli/run.py`` applies) or has no meaning here and is accepted with a one-line warning naming it (:data:`IGNORED`).
Same-named flags with the same meaning (``--leader-elect``, ``--metrics-bind-address``,
``--health-probe-bind-address``, ``--namespace``, ``--gang-scheduler-name``, ``--leader-election-id``,
``--kubeconfig``) are ``run``'s own, and ``--controller-threads`` is the deprecated alias of ``--threadiness``.

    frameworks_for_schemes(["tfjob", "PyTorchJob"])   # (("tensorflow",), ("pytorchjob",)): served, not served
    zap_logging(devel=True, encoder=None, level=None) # ("debug", False): development mode's defaults
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# --enable-scheme: training-operator's kinds (case-insensitive) → the framework here; None: known to
# training-operator, not served by this operator (a warning, not an error). ``genericjob`` is this operator's own.
SCHEMES: dict[str, str | None] = {
    "mxjob": "mxnet",
    "tfjob": "tensorflow",
    "genericjob": "generic",
    "pytorchjob": None,
    "xgboostjob": None,
    "mpijob": None,
    "paddlejob": None,
}
SERVED_SCHEMES = tuple(name for name, framework in SCHEMES.items() if framework)

# controller-runtime's zap flag values (pkg/log/zap/flags.go), lower case as it compares them.
ZAP_LEVELS = ("debug", "info", "error")           # or an integer > 0: logr's V levels, more verbose than debug
ZAP_ENCODERS = ("json", "console")
ZAP_STACKTRACE_LEVELS = ("info", "error", "panic")
ZAP_TIME_ENCODINGS = ("epoch", "millis", "nanos", "iso8601", "rfc3339", "rfc3339nano")
WEBHOOK_DEFAULT_PORT = 9443   # controller-runtime's webhook server: its port, and what a port of 0 means

# Flags with no meaning here: flag → why it is ignored (the warning's second half).
IGNORED: dict[str, str] = {
    "--zap-stacktrace-level": "a traceback is logged with the error that carries an exception, never otherwise",
    "--zap-time-encoding": "timestamps are always RFC 3339 in UTC with milliseconds (the ts field)",
    "--webhook-service-name": "this operator does not generate its webhook certificate: mount one in "
                              "--webhook-cert-dir (cert-manager, or the Secret training-operator filled)",
    "--webhook-secret-name": "this operator does not generate its webhook certificate: mount one in "
                             "--webhook-cert-dir (cert-manager, or the Secret training-operator filled)",
    "--pytorch-init-container-image": "this operator serves no PyTorchJob",
    "--pytorch-init-container-template-file": "this operator serves no PyTorchJob",
    "--pytorch-init-container-max-tries": "this operator serves no PyTorchJob",
    "--mpi-kubectl-delivery-image": "this operator serves no MPIJob",
}


def ignored_warning(flag: str, value: object) -> str:
    """The one line logged for a flag of :data:`IGNORED` that was given."""
    return f"{flag}={value} (training-operator) has no effect here: {IGNORED[flag]}"


def split_schemes(values: Iterable[str]) -> list[str]:
    """Every ``--enable-scheme`` occurrence's names, lower case (training-operator takes one per occurrence; commas
    and spaces are accepted too)."""
    return [name.lower() for value in values for name in re.split(r"[\s,]+", value) if name]


def frameworks_for_schemes(values: Iterable[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``--enable-scheme`` values → (the frameworks to reconcile, in order and without repeats; the schemes
    training-operator knows and this operator does not serve). A name neither knows: ValueError (training-operator
    exits 2 on it too: ``scheme … is not supported yet``)."""
    served: dict[str, None] = {}
    unserved: dict[str, None] = {}
    for name in split_schemes(values):
        if name not in SCHEMES:
            raise ValueError(f"scheme {name!r} is not supported: one of {', '.join(SCHEMES)}")
        framework = SCHEMES[name]
        if framework is None:
            unserved[name] = None
        else:
            served[framework] = None
    return tuple(served), tuple(unserved)


def unserved_warning(scheme: str) -> str:
    return (f"--enable-scheme={scheme} (training-operator): {scheme} is not served by this operator, ignored; "
            f"it serves {', '.join(SERVED_SCHEMES)}")


def zap_level(value: str) -> str:
    """``--zap-log-level`` → this process's level: ``debug``, ``info``, ``error``, or an integer > 0 (logr's V
    levels, beyond debug: here debug). ValueError with controller-runtime's wording otherwise."""
    text = value.strip().lower()
    if text in ZAP_LEVELS:
        return text
    if re.fullmatch(r"[+-]?\d+", text) and int(text) > 0:
        return "debug"
    raise ValueError(f'invalid log level "{value}": one of {", ".join(ZAP_LEVELS)} or an integer > 0')


def zap_logging(devel: bool | None, encoder: str | None, level: str | None) -> tuple[str | None, bool | None]:
    """What the ``--zap-*`` flags given ask for: (log level, JSON lines?), None where they ask nothing.

    ``--zap-devel`` sets controller-runtime's development defaults (console encoder, debug level), ``=false`` its
    production ones (JSON, info); ``--zap-encoder`` and ``--zap-log-level`` override them. (training-operator's
    binary starts in development mode when no flag is given; this operator keeps its JSON/info defaults.)
    """
    out_level: str | None = None
    out_json: bool | None = None
    if devel is not None:
        out_level, out_json = ("debug", False) if devel else ("info", True)
    if encoder is not None:
        out_json = encoder.strip().lower() == "json"
    if level is not None:
        out_level = zap_level(level)
    return out_level, out_json


def webhook_address(port: int) -> str:
    """``--webhook-server-port`` → ``--webhook-bind-address`` (every interface, as controller-runtime binds; 0 is
    its default port)."""
    return f":{port or WEBHOOK_DEFAULT_PORT}"
