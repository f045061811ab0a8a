"""PodSecurity's metrics, as kube-apiserver exposes them on ``/metrics`` (pod-security-admission's ``metrics``):

- ``pod_security_evaluations_total{decision, policy_level, policy_version, mode, request_operation, resource,
  subresource}``: each policy evaluation (enforce: allow or deny; audit and warn: deny only), not counting ignored or
  exempt requests; ``policy_version`` is ``latest`` (also for any privileged level), the version, or ``future``
  past the server's own;
- ``pod_security_exemptions_total{request_operation, resource, subresource}``: exempt requests;
- ``pod_security_errors_total{fatal, request_operation, resource, subresource}``: what kept a request from its
  normal evaluation (a namespace not found: fatal; labels that do not parse: not).

``resource`` is ``pod``, ``namespace`` or ``controller`` (any pod controller). Thread-safe counters, rendered as
Prometheus text lines for the server's ``Metrics.sources``.
"""

from __future__ import annotations

import threading
from typing import Any

from mxjob_controller.local.apiserver.auth.pod_security_labels import PRIVILEGED, LevelVersion

_EVALUATION_LABELS = ("decision", "policy_level", "policy_version", "mode", "request_operation", "resource",
                      "subresource")
_EXEMPTION_LABELS = ("request_operation", "resource", "subresource")
_ERROR_LABELS = ("fatal", "request_operation", "resource", "subresource")
_FAMILIES = (
    ("pod_security_evaluations_total", "Number of policy evaluations that occurred, not counting ignored or exempt "
                                       "requests.", _EVALUATION_LABELS),
    ("pod_security_exemptions_total", "Number of exempt requests, not counting ignored or out of scope requests.",
     _EXEMPTION_LABELS),
    ("pod_security_errors_total", "Number of errors preventing normal evaluation. Non-fatal errors may result in the "
                                  "latest restricted profile being used for evaluation.", _ERROR_LABELS),
)


def _request(attrs: Any) -> tuple[str, str, str]:
    resource = {("", "pods"): "pod", ("", "namespaces"): "namespace"}.get((attrs.rt.group, attrs.rt.plural),
                                                                          "controller")
    return attrs.operation.lower(), resource, attrs.subresource or ""


class PodSecurityMetrics:
    def __init__(self, server_minor: int) -> None:
        self._server_minor = server_minor
        self._lock = threading.Lock()
        self._counts: dict[str, dict[tuple[str, ...], int]] = {name: {} for name, _, _ in _FAMILIES}

    def _inc(self, family: str, key: tuple[str, ...]) -> None:
        with self._lock:
            counts = self._counts[family]
            counts[key] = counts.get(key, 0) + 1

    def evaluation(self, decision: str, lv: LevelVersion, mode: str, attrs: Any) -> None:
        if lv.minor is None or lv.level == PRIVILEGED:
            version = "latest"
        else:
            version = f"v1.{lv.minor}" if lv.minor <= self._server_minor else "future"
        self._inc("pod_security_evaluations_total", (decision, lv.level, version, mode, *_request(attrs)))

    def exemption(self, attrs: Any) -> None:
        self._inc("pod_security_exemptions_total", _request(attrs))

    def error(self, fatal: bool, attrs: Any) -> None:
        self._inc("pod_security_errors_total", ("true" if fatal else "false", *_request(attrs)))

    def value(self, family: str, **labels: str) -> int:
        """The sum of ``family``'s counters whose labels include ``labels`` (for tests and diagnostics)."""
        names = next(n for f, _, n in _FAMILIES if f == family)
        with self._lock:
            return sum(v for k, v in self._counts[family].items()
                       if all(dict(zip(names, k, strict=True)).get(n) == want for n, want in labels.items()))

    def render(self) -> list[str]:
        out: list[str] = []
        with self._lock:
            snapshot = {name: sorted(counts.items()) for name, counts in self._counts.items()}
        for name, help_text, names in _FAMILIES:
            out += [f"# HELP {name} [ALPHA] {help_text}", f"# TYPE {name} counter"]
            for key, count in snapshot[name]:
                labels = ",".join(f'{n}="{v}"' for n, v in zip(names, key, strict=True))
                out.append(f"{name}{{{labels}}} {count}")
        return out
