"""Admission of the local cluster: each MXJob gets scheduler ports of its own, so jobs can run side by side.

On a cluster every pod has its own IP, so every job's scheduler listens on the same ``mxjob-port`` (9091). On one
machine every pod listens on the loopback, and ps-lite binds ``*:port``: two jobs on 9091 collide even on different
loopback addresses. So, as a mutating admission plugin of the embedded API server, when an MXJob is created each
replica type whose MXNet container leaves ``mxjob-port`` at its default (absent, or 9091) gets a port from the
range, written into the template as ``{name: mxjob-port, containerPort: N}`` (the controller then wires ``MX_CONFIG``
and ``DMLC_PS_ROOT_PORT`` from it as always). Types get distinct ports (MXTune's tracker and server both listen).

A port is free when no unfinished MXJob in the store declares it and nothing on this machine is bound to it now
(a port some process holds is skipped); the search goes round the range from where it last stopped (first from a
random point), so a port just released is not reused at once and two local clusters on one machine seldom try the
same port. When no port of the range is free the job is still created, keeping ``mxjob-port`` 9091 as it was
written, and a Warning event ``JobPortsExhausted`` on that job says why (the creates of other jobs, and of
everything else, are not refused: one pod binding the whole range cannot stop the cluster). The ports chosen are named
in the annotation :data:`ANNOTATION`. A port the user chose (not 9091) is kept as it is. The local cluster installs
the plugin only when its kubelet runs pods as processes (``--kubelet process``): without one nothing binds a port,
and a job keeps 9091 as on a cluster.

An update keeps what was chosen: a client-side ``kubectl apply`` of the manifest the job was created from replaces
the containers' ``ports`` and drops the chosen one, and a scaled-up job's new pods would then look for their
scheduler on 9091. A type the update leaves at the default gets back the port it was given (as the annotation of
the stored job names it); a type the update adds gets a port of its own.
"""

from __future__ import annotations

import errno
import logging
import random
import socket
import threading
from collections.abc import Callable
from typing import Any

from mxjob_controller.kubeflow_api.constants import GROUP
from mxjob_controller.kubeflow_api.defaults import default_container_index
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.strategy import WriteContext
from mxjob_controller.mxnet import v1alpha1
from mxjob_controller.mxnet.api import DEFAULT_CONTAINER_NAME, DEFAULT_PORT, DEFAULT_PORT_NAME, PLURAL

log = logging.getLogger(__name__)

ANNOTATION = "local.mxjob-controller.kubeflow.org/assigned-ports"
MXJOBS_KEY = f"{GROUP}/{PLURAL}"
DEFAULT_RANGE = (20000, 29999)


def parse_range(text: str) -> tuple[int, int] | None:
    """``"20000-29999"`` → (20000, 29999); ``"none"`` → None; ValueError otherwise."""
    if text.strip().lower() in ("none", "off", ""):
        return None
    first, sep, last = text.partition("-")
    if not sep or not first.strip().isdigit() or not last.strip().isdigit():
        raise ValueError("expected FIRST-LAST, e.g. 20000-29999, or none")
    lo, hi = int(first), int(last)
    if not 1024 <= lo <= hi <= 65535:
        raise ValueError("ports must satisfy 1024 <= FIRST <= LAST <= 65535")
    return lo, hi


EXHAUSTED = "JobPortsExhausted"   # the reason of the Warning event on a job that got no port


class PortsExhaustedError(Exception):
    """No port of the range is free now."""


class JobPorts:
    """The admission plugin (``REST.admission``): ``JobPorts(store, (20000, 29999), warn)``; ``warn(job, reason,
    message)`` records a Warning event on a job (the cluster writes it, off the request's thread)."""

    def __init__(self, store: Store, port_range: tuple[int, int],
                 warn: Callable[[dict[str, Any], str, str], None] | None = None) -> None:
        self._store = store
        self._warn = warn
        self._first, self._last = port_range
        # A random starting point: two local clusters on one machine (a `local up` and a `local run`) would
        # otherwise hand out the same first ports, and the one that binds second fails.
        self._next = random.randint(self._first, self._last)
        self._lock = threading.Lock()

    def __call__(self, rt: ResourceType, obj: dict[str, Any], ctx: WriteContext) -> None:
        """Admission of a create."""
        if rt.storage_key == MXJOBS_KEY:
            self._admit(obj, {})

    def on_update(self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any], ctx: WriteContext) -> None:
        """Admission of an update (``REST.update_admission``): the ports given at create stay the job's."""
        if rt.storage_key == MXJOBS_KEY and not ctx.subresource:
            self._admit(new, assigned_ports(old))

    def _admit(self, obj: dict[str, Any], kept: dict[str, int]) -> None:
        if obj.get("apiVersion") == v1alpha1.API_VERSION:
            # The same ports as for the v1 job it converts to (PsRootPort is a type's mxjob-port), so a job
            # submitted as v1alpha1 runs exactly as its v1 equivalent.
            try:
                converted = v1alpha1.to_v1(obj)
            except v1alpha1.ConversionError:
                return   # validation reports it
            self._assign(converted, kept)
            back = v1alpha1.to_v1alpha1(converted)
            obj.clear()
            obj.update(back)
            return
        self._assign(obj, kept)

    def _assign(self, obj: dict[str, Any], kept: dict[str, int]) -> None:
        """Give each type left at the default port its ``kept`` one (unless another job has declared it since),
        else a free one; name in the annotation every type whose port the cluster chose."""
        specs = (obj.get("spec") or {}).get("mxReplicaSpecs")
        if not isinstance(specs, dict):
            return  # validation reports it
        lists = {rtype: ports for rtype, spec in specs.items() if (ports := _port_list(spec, create=True)) is not None}
        wanted = [rtype for rtype, ports in lists.items() if _declared(ports) in (None, DEFAULT_PORT)]
        if not wanted and not kept:
            return
        meta = obj.setdefault("metadata", {})
        with self._lock:
            taken = self._taken(skip=(meta.get("namespace"), meta.get("name"))) | {
                p for ports in lists.values() if (p := _declared(ports)) is not None}
            for rtype in list(wanted):
                given = kept.get(rtype)
                try:
                    port = given if given is not None and given not in taken else self._free(taken)
                except PortsExhaustedError as e:
                    wanted = wanted[:wanted.index(rtype)]   # these and the rest keep the port they were written with
                    self._exhausted(obj, str(e))
                    break
                taken.add(port)
                for entry in lists[rtype]:
                    if isinstance(entry, dict) and entry.get("name") == DEFAULT_PORT_NAME:
                        entry["containerPort"] = port
                        break
                else:
                    lists[rtype].append({"name": DEFAULT_PORT_NAME, "containerPort": port})
        chosen = [f"{rtype}={port}" for rtype, ports in lists.items()
                  if (port := _declared(ports)) is not None and (rtype in wanted or kept.get(rtype) == port)]
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != ANNOTATION}
        if chosen:   # a port the user now chose himself is no longer the cluster's: its entry goes
            annotations[ANNOTATION] = ",".join(chosen)
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)

    def _taken(self, skip: tuple[Any, Any] | None = None) -> set[int]:
        """Ports declared by MXJobs that have not finished, but for the job ``skip`` (namespace, name) names."""
        taken: set[int] = set()
        for entry in self._store.iter_all(MXJOBS_KEY):
            job = entry.obj
            meta = job.get("metadata") or {}
            if skip is not None and (meta.get("namespace"), meta.get("name")) == skip:
                continue
            conditions = (job.get("status") or {}).get("conditions") or []
            if any(c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True" for c in conditions):
                continue
            for spec in ((job.get("spec") or {}).get("mxReplicaSpecs") or {}).values():
                port = _declared(_port_list(spec) or [])
                if port is not None:
                    taken.add(port)
        return taken

    def _free(self, taken: set[int]) -> int:
        size = self._last - self._first + 1
        for step in range(size):
            port = self._first + (self._next - self._first + step) % size
            if port not in taken and _bindable(port):
                self._next = port + 1 if port < self._last else self._first
                return port
        raise PortsExhaustedError(
            f"no free port for this job's scheduler in the local cluster's range {self._first}-{self._last} (each "
            f"is declared by an unfinished MXJob or bound on this machine): it keeps mxjob-port {DEFAULT_PORT}, "
            "which another job may hold; wait for a job to finish, or restart the local cluster with a larger "
            "--job-ports range")

    def _exhausted(self, job: dict[str, Any], message: str) -> None:
        meta = job.get("metadata") or {}
        log.warning("MXJob %s/%s: %s", meta.get("namespace"), meta.get("name"), message)
        if self._warn is not None:
            self._warn(job, EXHAUSTED, message)


def assigned_ports(job: dict[str, Any]) -> dict[str, int]:
    """The ports a job was given, by replica type, as its :data:`ANNOTATION` names them (what cannot be read is
    left out: such a type gets a new port)."""
    text = ((job.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION)
    out: dict[str, int] = {}
    for item in text.split(",") if isinstance(text, str) else ():
        rtype, _, port = item.partition("=")
        if rtype and port.isdigit():
            out[rtype] = int(port)
    return out


def _port_list(replica_spec: Any, create: bool = False) -> list[Any] | None:
    """The ``ports`` list of the replica's MXNet container (with ``create``, added empty if absent); None if
    malformed."""
    template = replica_spec.get("template") if isinstance(replica_spec, dict) else None
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    containers = pod_spec.get("containers") if isinstance(pod_spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return None
    container = containers[default_container_index(containers, DEFAULT_CONTAINER_NAME)]
    if not isinstance(container, dict):
        return None
    ports = container.setdefault("ports", []) if create else container.get("ports") or []
    return ports if isinstance(ports, list) else None


def _declared(ports: list[Any]) -> int | None:
    for entry in ports:
        if isinstance(entry, dict) and entry.get("name") == DEFAULT_PORT_NAME:
            value = entry.get("containerPort")
            return value if isinstance(value, int) and not isinstance(value, bool) else None
    return None


def _bindable(port: int) -> bool:
    """Whether a listener could bind ``*:port`` now (as ps-lite's scheduler will)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("", port))
        except OSError as e:
            if e.errno not in (errno.EADDRINUSE, errno.EACCES):
                log.debug("port %d: %s", port, e)
            return False
    return True
