"""Whether a pod fits the node: kube-scheduler's NodeResourcesFit filter and its words when it does not.

A pod's request is kube's effective request (``resourcehelper.PodRequests``): per resource, the larger of the sum
of its app containers (plus restartable "sidecar" init containers, which keep running) and the largest init
container (plus the sidecars started before it), then the pod's ``overhead``. Every resource counts, extended
ones (``nvidia.com/gpu``, ``example.com/foo``) included, and each pod takes one of the node's ``pods``.

A container that sets no ``cpu`` (or no ``memory``) request counts as :data:`DEFAULT_REQUESTS` of it (kube-scheduler's
non-zero defaults, which it uses for scoring only): on one machine a sweep of pods written without requests must
still queue rather than start all at once. Pods that set requests are fitted by them exactly.

The node is full for a pod when, for a resource the pod requests, what the node allocates minus what its bound,
not finished pods request is less than the request; kube's message then lists every reason, sorted
(``0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.``). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from mxjob_controller.kube.quantity import QuantityError, parse

Amounts = dict[str, Fraction]

#: What a container without a cpu or memory request counts as (kube-scheduler's DefaultMilliCPURequest and
#: DefaultMemoryRequest).
DEFAULT_REQUESTS: Mapping[str, Fraction] = {"cpu": Fraction(1, 10), "memory": Fraction(200 * 1024 * 1024)}
PODS = "pods"
TERMINAL_PHASES = ("Succeeded", "Failed")


def amounts(resources: Mapping[str, Any] | None) -> Amounts:
    """Quantities by resource name as exact numbers; a value that is not a quantity counts as 0 (the API server
    refuses such pods and nodes)."""
    out: Amounts = {}
    for name, value in (resources or {}).items():
        try:
            out[name] = parse(value).value
        except QuantityError:
            continue
    return out


def add(total: Amounts, more: Mapping[str, Fraction]) -> Amounts:
    """``total`` plus ``more``, a new mapping."""
    out = dict(total)
    for name, value in more.items():
        out[name] = out.get(name, Fraction(0)) + value
    return out


def _container_requests(container: Mapping[str, Any]) -> Amounts:
    requests = amounts((container.get("resources") or {}).get("requests"))
    for name, default in DEFAULT_REQUESTS.items():
        if name not in requests:
            requests[name] = default
    return requests


def larger(a: Mapping[str, Fraction], b: Mapping[str, Fraction]) -> Amounts:
    return {name: max(a.get(name, Fraction(0)), b.get(name, Fraction(0))) for name in {*a, *b}}


def pod_requests(spec: Mapping[str, Any]) -> Amounts:
    """The pod's effective request (see the module), defaults included; ``pods`` is not in it."""
    app: Amounts = {}
    for container in spec.get("containers") or ():
        app = add(app, _container_requests(container))
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for container in spec.get("initContainers") or ():
        requests = _container_requests(container)
        if container.get("restartPolicy") == "Always":
            sidecars = add(sidecars, requests)
            init_peak = larger(init_peak, sidecars)
        else:
            init_peak = larger(init_peak, add(requests, sidecars))
    total = larger(add(app, sidecars), init_peak)
    return add(total, amounts(spec.get("overhead")))


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def node_usage(requests: Iterable[Mapping[str, Fraction]]) -> Amounts:
    """What pods bound to the node (and not finished) take of it, ``pods`` included."""
    used: Amounts = {PODS: Fraction(0)}
    for one in requests:
        used = add(used, one)
        used[PODS] += 1
    return used


def shortfalls(requests: Mapping[str, Fraction], allocatable: Mapping[str, Fraction], used: Mapping[str, Fraction],
               pods: int = 1) -> list[str]:
    """kube's reasons why ``pods`` pods requesting ``requests`` (together) do not fit, sorted; empty if they fit."""
    reasons = []
    if used.get(PODS, 0) + pods > allocatable.get(PODS, 0):
        reasons.append("Too many pods")
    for name, wanted in requests.items():
        if name == PODS or wanted <= 0:
            continue
        if used.get(name, 0) + wanted > allocatable.get(name, 0):
            reasons.append(f"Insufficient {name}")
    return sorted(reasons)


def unschedulable_message(reasons: Iterable[str], nodes: int = 1) -> str:
    """kube-scheduler's FitError text for one node that failed for ``reasons``."""
    histogram = sorted(f"1 {reason}" for reason in reasons)
    message = f"0/{nodes} nodes are available:"
    if histogram:
        message += f" {', '.join(histogram)}."
    return message
