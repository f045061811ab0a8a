"""GenericJob's variables: ``$(…)`` references in a replica's command, args and env values that the controller
replaces before it creates the pod. Pure.

=================================  ==========================================================  ================
reference                          becomes                                                      needs
=================================  ==========================================================  ================
``$(type)``                        the replica's own type (``worker``)
``$(rank)``                        its own rank (``2``)
``$(replicas[<type>])``            the replica count of ``<type>`` (``4``)                      a known type
``$(service.<type>[<rank>].host)`` that replica's Service name, ``<job>-<type>-<rank>``         ``spec.service``
``$(service.port[<name>])``        the number of the port named ``<name>`` in ``spec.service``  ``spec.service``
=================================  ==========================================================  ================

Anything else in ``$(…)`` is left as written, and ``$$`` stays ``$$``: the kubelet then expands ``$(VAR)`` for the
container's env vars and turns ``$$`` into ``$``, as for any pod (so ``$$(rank)`` reaches the process as the text
``$(rank)``). A reference of the known forms that cannot be resolved (no ``spec.service``, a type the job does not
have, a rank out of range, an unknown port name) is a validation error at the field that holds it
(:func:`reference_problems`): left literal, it would surface as a confusing host name inside the training script.

A host is the bare Service name, as T9k's manual gives it: replicas reach each other within the job's namespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

_REFERENCE = re.compile(r"\$\$|\$\(([^()$]*)\)")
_REPLICAS = re.compile(r"^replicas\[([^\[\]]+)\]$")
_SERVICE_HOST = re.compile(r"^service\.([^\[\].]+)\[([0-9]+)\]\.host$")
_SERVICE_PORT = re.compile(r"^service\.port\[([^\[\]]+)\]$")


@dataclass(frozen=True, slots=True)
class Scope:
    """What the references of one replica resolve against."""

    job_name: str
    replicas: Mapping[str, int]                  # type → replica count, every type of the job
    ports: Mapping[str, int] | None = None       # spec.service's port name → number; None: no spec.service
    type: str = ""
    rank: int = 0


def host(job_name: str, replica_type: str, rank: int) -> str:
    """The Service name (and pod name) of one replica: ``<job>-<type>-<rank>``."""
    return f"{job_name}-{replica_type}-{rank}"


def _resolve(name: str, scope: Scope) -> str | None:
    """The value of a reference, or None when it is none of ours or cannot be resolved."""
    if name == "type":
        return scope.type
    if name == "rank":
        return str(scope.rank)
    if m := _REPLICAS.match(name):
        count = scope.replicas.get(m[1])
        return None if count is None else str(count)
    if scope.ports is None:
        return None
    if m := _SERVICE_HOST.match(name):
        rank = int(m[2])
        return host(scope.job_name, m[1], rank) if rank < scope.replicas.get(m[1], 0) else None
    if m := _SERVICE_PORT.match(name):
        port = scope.ports.get(m[1])
        return None if port is None else str(port)
    return None


def substitute(text: str, scope: Scope) -> str:
    """``text`` with every resolvable reference replaced; the rest (``$$`` too) as written."""
    if "$(" not in text:
        return text

    def replace(m: re.Match[str]) -> str:
        if m[1] is None:
            return m[0]
        value = _resolve(m[1], scope)
        return m[0] if value is None else value

    return _REFERENCE.sub(replace, text)


def problem(name: str, scope: Scope) -> str | None:
    """Why a reference of a known form cannot be resolved; None when it can, or when it is none of ours."""
    if m := _REPLICAS.match(name):
        return None if m[1] in scope.replicas else f"$({name}) names replica type {m[1]!r}, which " \
                                                   f"spec.replicaSpecs does not have"
    if not name.startswith("service."):
        return None
    host_ref, port_ref = _SERVICE_HOST.match(name), _SERVICE_PORT.match(name)
    if host_ref is None and port_ref is None:
        return None
    if scope.ports is None:
        return f"$({name}) refers to the replicas' Services, but spec.service is not set"
    if host_ref is not None:
        rtype, rank = host_ref[1], int(host_ref[2])
        if rtype not in scope.replicas:
            return f"$({name}) names replica type {rtype!r}, which spec.replicaSpecs does not have"
        if rank >= scope.replicas[rtype]:
            return f"$({name}) names rank {rank}, but {rtype} has {scope.replicas[rtype]} replicas"
        return None
    assert port_ref is not None
    return None if port_ref[1] in scope.ports else f"$({name}) names port {port_ref[1]!r}, which " \
                                                   f"spec.service.ports does not have"


def reference_problems(text: str, scope: Scope) -> list[str]:
    """Why each unresolvable reference of a known form in ``text`` is so (empty: all fine)."""
    if "$(" not in text:
        return []
    found = (problem(m[1], scope) for m in _REFERENCE.finditer(text) if m[1] is not None)
    return list(dict.fromkeys(p for p in found if p is not None))


def container_texts(pod_spec: Mapping[str, Any], path: str) -> Iterator[tuple[str, str]]:
    """(field path, text) of every place variables are substituted in a pod spec: each container's and init
    container's ``command`` and ``args`` items and ``env[].value``."""
    for key in ("initContainers", "containers"):
        containers = pod_spec.get(key)
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if not isinstance(container, dict):
                continue
            at = f"{path}.{key}[{i}]"
            for field in ("command", "args"):
                items = container.get(field)
                if isinstance(items, list):
                    yield from ((f"{at}.{field}[{j}]", s) for j, s in enumerate(items) if isinstance(s, str))
            env = container.get("env")
            if isinstance(env, list):
                yield from ((f"{at}.env[{j}].value", e["value"]) for j, e in enumerate(env)
                            if isinstance(e, dict) and isinstance(e.get("value"), str))


def substitute_pod_spec(pod_spec: dict[str, Any], scope: Scope) -> None:
    """Substitute the variables of every container of ``pod_spec`` in place (the caller's own copy)."""
    for key in ("initContainers", "containers"):
        for container in pod_spec.get(key) or ():
            for field in ("command", "args"):
                if container.get(field):
                    container[field] = [substitute(s, scope) for s in container[field]]
            for env in container.get("env") or ():
                if isinstance(env.get("value"), str):
                    env["value"] = substitute(env["value"], scope)
