"""What of a pod the local kubelet cannot honour, refused when the pod is created rather than ignored when it runs.

Every pod runs here in the pod sandbox (``sandbox.py``): a user, PID, mount, IPC and UTS namespace of its own, the
host's file system read-only, no volume. A field that asks for something else (``privileged``, ``hostPID``,
``hostIPC``, ``hostUsers: true``, ``shareProcessNamespace``, ``procMount: Unmasked``, a volume of any type, a
``hostPort`` other than the container's own port, a profile or label of a security module this node does not load,
``sysctls``) would be silently dropped; so the embedded API server refuses the pod, as an admission plugin does
(403 ``pods "p" is forbidden: …``), naming each field. A pod a controller creates (an MXJob's) is refused the same
way, and the controller reports it on its job (``FailedCreatePod``: "Error creating: …"). Fields the kubelet does
not act on but whose absence changes no boundary (probes, lifecycle hooks) pass with a ``Warning:`` naming them.

Where: installed by the local cluster when its kubelet runs pods (``cluster.py``), beside Pod Security Admission (the
API server's, which enforces a namespace's level): this one says what this node can do, not what a namespace allows.
The kubelet checks again at its own admission (``pod_worker.py``), so a pod that reached it some other way is
rejected (``Failed``) and never runs unconfined. :func:`refusals` and :func:`warnings` are pure.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import Any

from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.strategy import WriteContext
from mxjob_controller.local.kubelet.security_context import runtime_default_filter

REASON = "UnsupportedPodSpec"   # the kubelet's rejection of a pod that got past the API server's check
_PODS_KEY = "/pods"   # the core group's pods (ResourceType.storage_key)
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def _containers(spec: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for key in _CONTAINER_LISTS:
        items = spec.get(key)
        if isinstance(items, list):
            for i, container in enumerate(items):
                if isinstance(container, Mapping):
                    yield f"spec.{key}[{i}]", container


def _security_modules(path: str, sc: Mapping[str, Any]) -> Iterator[str]:
    """A security module's settings this node cannot apply: SELinux labels, AppArmor and seccomp profiles."""
    if sc.get("seLinuxOptions"):
        yield f"{path}.seLinuxOptions: Forbidden: SELinux labels cannot be applied by the local kubelet"
    apparmor = (sc.get("appArmorProfile") or {}).get("type") if isinstance(sc.get("appArmorProfile"), Mapping) else None
    if apparmor not in (None, "Unconfined"):
        yield f"{path}.appArmorProfile.type: Forbidden: AppArmor profiles cannot be loaded by the local kubelet " \
              f"(only Unconfined)"
    seccomp = (sc.get("seccompProfile") or {}).get("type") if isinstance(sc.get("seccompProfile"), Mapping) else None
    if seccomp == "Localhost":
        yield f"{path}.seccompProfile.type: Forbidden: Localhost seccomp profiles cannot be loaded by the local " \
              "kubelet (RuntimeDefault and Unconfined can)"
    if seccomp == "RuntimeDefault" and runtime_default_filter(0, os.uname().machine) is None:
        yield f"{path}.seccompProfile.type: Forbidden: the local kubelet knows the runtime's default profile for " \
              f"x86_64 only, not {os.uname().machine}"


def refusals(pod: Mapping[str, Any]) -> list[str]:
    """Each field of ``pod`` the local kubelet cannot honour, as ``path: Forbidden: why`` (empty: it can run)."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return []
    out: list[str] = []
    for key, why in (("hostPID", "every pod has a PID namespace of its own here"),
                     ("hostIPC", "every pod has an IPC namespace of its own here"),
                     ("shareProcessNamespace", "each container has a PID namespace of its own here")):
        if spec.get(key) is True:
            out.append(f"spec.{key}: Forbidden: {why}")
    if spec.get("hostUsers") is True:
        out.append("spec.hostUsers: Forbidden: every pod has a user namespace of its own here (hostUsers: false)")
    os_name = spec["os"].get("name") if isinstance(spec.get("os"), Mapping) else None
    if os_name not in (None, "linux"):
        out.append(f"spec.os.name: Forbidden: this node runs linux, not {os_name}")
    for i, volume in enumerate(spec.get("volumes") or []):
        kinds = [k for k in volume if k != "name"] if isinstance(volume, Mapping) else []
        what = kinds[0] if kinds else "emptyDir"
        out.append(f"spec.volumes[{i}].{what}: Forbidden: the local kubelet mounts no volumes (a pod writes to "
                   "its own /tmp and /var/tmp)")
    pod_sc = spec.get("securityContext")
    if isinstance(pod_sc, Mapping):
        out.extend(_security_modules("spec.securityContext", pod_sc))
        if pod_sc.get("sysctls"):
            out.append("spec.securityContext.sysctls: Forbidden: sysctls cannot be set by the local kubelet")
    for path, container in _containers(spec):
        sc = container.get("securityContext")
        if isinstance(sc, Mapping):
            if sc.get("privileged") is True:
                out.append(f"{path}.securityContext.privileged: Forbidden: the local kubelet runs no privileged "
                           "container (root in a pod is an unprivileged user of this machine)")
            if sc.get("procMount") not in (None, "Default"):
                out.append(f"{path}.securityContext.procMount: Forbidden: only the Default /proc can be mounted here")
            out.extend(_security_modules(f"{path}.securityContext", sc))
        for key in ("volumeMounts", "volumeDevices"):
            if container.get(key):
                out.append(f"{path}.{key}: Forbidden: the local kubelet mounts no volumes")
        for j, port in enumerate(container.get("ports") or []):
            if not isinstance(port, Mapping):
                continue
            host_port = port.get("hostPort")
            if host_port not in (None, 0) and host_port != port.get("containerPort"):
                out.append(f"{path}.ports[{j}].hostPort: Forbidden: pods share this machine's network, so a "
                           "container listens on its own port; a different hostPort cannot be mapped")
            if port.get("hostIP"):
                out.append(f"{path}.ports[{j}].hostIP: Forbidden: ports are not mapped by the local kubelet")
    return out


def warnings(pod: Mapping[str, Any]) -> list[str]:
    """What of ``pod`` passes but is not acted on here: its probes and lifecycle hooks."""
    spec = pod.get("spec")
    if not isinstance(spec, Mapping):
        return []
    out = []
    for path, container in _containers(spec):
        unused = [f"{path}.{key}" for key in _PROBES if container.get(key)]
        if container.get("lifecycle"):
            unused.append(f"{path}.lifecycle")
        if unused:
            out.append(f"{', '.join(unused)}: not run by the local kubelet (containers are started and stopped "
                       "without probes or hooks)")
    return out


def message(found: list[str]) -> str:
    return "the local kubelet cannot honour " + "; ".join(found)


class PodAdmission:
    """The validating admission plugin (``REST.validating_admission``) refusing pods this node cannot honour."""

    def __call__(self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any] | None, ctx: WriteContext) -> None:
        if rt.storage_key != _PODS_KEY or old is not None or ctx.subresource:
            return   # a pod's spec does not change once created (what may, a new image, changes nothing here)
        found = refusals(new)
        if found:
            raise errors.forbidden(rt.resource, (new.get("metadata") or {}).get("name") or "", message(found))
        ctx.warnings.extend(warnings(new))
