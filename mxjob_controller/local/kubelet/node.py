"""The local Node: what it offers (``capacity``/``allocatable``) and the object the kubelet registers.

What a pod may use here is what a scheduler fits pods into, so it must be said once and truthfully: by default the
machine's own cores, memory and disk (the working directory's file system, for ``ephemeral-storage``) and kube's
110 pods; ``local up --capacity cpu=2,memory=4Gi,pods=110`` (and ``local run``) replaces any of them, or adds an
extended resource (``example.com/foo=4``), so that a sweep of jobs can be held to a share of the machine. Capacity
and allocatable are the same here: the local kubelet reserves nothing for the system.

Pure on top (parsing, the defaults' shape, the Node object); the machine is read below.
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Mapping
from typing import Any

from mxjob_controller.kube.k8s_schemas import KUBE_VERSION
from mxjob_controller.kube.quantity import QuantityError, canonical, parse
from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.local.kubelet.addresses import LOCAL_IP

#: kube's kubelet default (``--max-pods``).
DEFAULT_MAX_PODS = 110
#: The resources every Node reports; others given to ``--capacity`` must look like extended resources.
STANDARD_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")


class CapacityError(ValueError):
    """A ``--capacity`` text that is not ``NAME=QUANTITY,…`` of valid names and quantities."""


def parse_capacity(text: str) -> dict[str, str]:
    """``"cpu=2,memory=4Gi,pods=110"`` → ``{"cpu": "2", "memory": "4Gi", "pods": "110"}`` (quantities in canonical
    form). Names are the standard ones or extended resources (a domain-prefixed name, as ``nvidia.com/gpu``);
    ``pods`` and extended resources must be whole numbers, as kube requires of them."""
    out: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, value = (s.strip() for s in item.partition("="))
        if not sep or not name or not value:
            raise CapacityError(f"{item!r}: expected NAME=QUANTITY (e.g. cpu=2,memory=4Gi,pods=110)")
        if name not in STANDARD_RESOURCES and "/" not in name:
            raise CapacityError(f"{name!r}: not a resource name: one of {', '.join(STANDARD_RESOURCES)} or an "
                                "extended resource (domain/name, e.g. example.com/foo)")
        try:
            quantity = parse(value)
        except QuantityError as e:
            raise CapacityError(f"{name}={value}: {e}") from None
        if quantity.value < 0:
            raise CapacityError(f"{name}={value}: must be at least 0")
        if (name == "pods" or "/" in name) and quantity.value.denominator != 1:
            raise CapacityError(f"{name}={value}: must be a whole number")
        out[name] = canonical(quantity)
    return out


def node_capacity(overrides: Mapping[str, str], machine: Mapping[str, str]) -> dict[str, str]:
    """The Node's capacity: the machine's, with ``overrides`` (``--capacity``) replacing or adding resources."""
    return {**machine, **overrides}


def node_object(name: str, allocatable: Mapping[str, str]) -> dict[str, Any]:
    """The Node as a kubelet registers it, describing this machine."""
    now = now_rfc3339()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())

    def condition(ctype: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {"type": ctype, "status": status, "reason": reason, "message": message, "lastHeartbeatTime": now,
                "lastTransitionTime": now}

    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                              "kubernetes.io/arch": arch, "beta.kubernetes.io/os": "linux",
                                              "beta.kubernetes.io/arch": arch}},
        "spec": {},
        "status": {
            "capacity": dict(allocatable), "allocatable": dict(allocatable),
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory "
                          "available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status (containers run as "
                          "local processes)"),
            ],
            "addresses": [{"type": "InternalIP", "address": LOCAL_IP}, {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": platform.release(),
                         "osImage": f"{platform.system()} (mxjob-controller local)",
                         "containerRuntimeVersion": "process://", "kubeletVersion": f"v{KUBE_VERSION}.0+mxjob-local",
                         "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": arch},
        },
    }


# --- the machine --------------------------------------------------------------------------------------------------

def machine_capacity(workdir: str) -> dict[str, str]:
    """What this machine has: the cores this process may run on, its memory, the free-or-used size of the file
    system ``workdir`` is on (what containers write to), and kube's default pod count."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    out = {"cpu": str(max(1, cores)), "memory": f"{_memory_kib()}Ki", "pods": str(DEFAULT_MAX_PODS)}
    try:
        out["ephemeral-storage"] = f"{shutil.disk_usage(workdir).total // 1024}Ki"
    except OSError:
        pass
    return out


def _memory_kib() -> int:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0
