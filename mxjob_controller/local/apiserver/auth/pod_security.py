"""The Pod Security Standards as k8s.io/pod-security-admission's ``policy`` package checks them: pure functions.

A check reads a pod's metadata and spec (plain dicts: a pod's, or a workload's pod template) and answers ``None``
(allowed) or a :class:`Forbidden` with kube's reason (``"runAsUser=0"``) and detail (``pod must not set
runAsUser=0``), word for word, since users and their tooling match on them. A check that changed
between policy versions has one function per version, named for the first it applies to (``_1_25`` exempts Windows
pods); each reads a field the way kube's Go reads the typed pod (``privileged: true`` only, not a truthy value).

Which checks run at which level and version is ``pod_security_evaluator.py``'s; levels, versions and the namespace
labels that choose them are ``pod_security_labels.py``'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Forbidden:
    """One check's refusal: ``reason`` always shown, ``detail`` (may be empty) in parentheses after it."""

    reason: str
    detail: str = ""


Meta = Mapping[str, Any]
Spec = Mapping[str, Any]
CheckFn = Callable[[Meta, Spec], "Forbidden | None"]


# --- what the checks share ---------------------------------------------------------------------------------------

def join_quote(items: list[str]) -> str:
    """kube's ``joinQuote``: ``"a", "b"`` (the items as they are, not escaped)."""
    return '"' + '", "'.join(items) + '"' if items else ""


def pluralize(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def go_quote(text: str) -> str:
    """Go's ``%q`` for the printable strings these messages carry."""
    return json.dumps(text, ensure_ascii=False)


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def containers(spec: Spec) -> Iterator[Mapping[str, Any]]:
    """Init containers, containers, then ephemeral containers (kube's ``visitContainers``)."""
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in _list(spec.get(key)):
            if isinstance(c, Mapping):
                yield c


def _name(container: Mapping[str, Any]) -> str:
    return str(container.get("name") or "")


def _sc(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _dict(obj.get("securityContext"))


def _setters(pod: bool, bad_containers: list[str]) -> list[str]:
    """``pod`` and/or ``container(s) "a", "b"``: who set a forbidden value."""
    out = ["pod"] if pod else []
    if bad_containers:
        out.append(f"{pluralize('container', 'containers', len(bad_containers))} {join_quote(bad_containers)}")
    return out


def _who_uses(kind: str, names: list[str], what: str, values: list[str], quote: bool = True) -> str:
    """kube's ``containers "b", "c" use hostPorts 10, 20``: who uses which forbidden things (sorted values)."""
    listed = join_quote(values) if quote else ", ".join(values)
    return (f"{pluralize(kind, kind + 's', len(names))} {join_quote(names)} {pluralize('uses', 'use', len(names))} "
            f"{pluralize(what, what + 's', len(values))} {listed}")


def _windows(spec: Spec) -> bool:
    return _dict(spec.get("os")).get("name") == "windows"


def _user_namespace(spec: Spec) -> bool:
    """``hostUsers: false``: the pod runs in a user namespace (some checks relax from v1.35)."""
    return spec.get("hostUsers") is False


def _is_zero(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value == 0


# --- baseline checks ---------------------------------------------------------------------------------------------

def app_armor_profile_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    allowed_types = ("RuntimeDefault", "Localhost")
    setters: list[str] = []
    bad_values: set[str] = set()
    pod_profile = _sc(spec).get("appArmorProfile")
    if isinstance(pod_profile, Mapping) and pod_profile.get("type") not in allowed_types:
        setters.append("pod")
        bad_values.add(str(pod_profile.get("type") or ""))
    bad = []
    for c in containers(spec):
        profile = _sc(c).get("appArmorProfile")
        if isinstance(profile, Mapping) and profile.get("type") not in allowed_types:
            bad.append(_name(c))
            bad_values.add(str(profile.get("type") or ""))
    setters += _setters(False, bad)
    annotations = sorted(f"{k}={go_quote(str(v))}" for k, v in _dict(meta.get("annotations")).items()
                         if k.startswith("container.apparmor.security.beta.kubernetes.io/")
                         and not (not v or v == "runtime/default" or str(v).startswith("localhost/")))
    values = sorted(bad_values) + annotations
    if annotations:
        setters.append(pluralize("annotation", "annotations", len(annotations)))
    if not setters:
        return None
    return Forbidden(pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(values)),
                     f"{' and '.join(setters)} must not set AppArmor profile type to {join_quote(values)}")


_BASELINE_CAPABILITIES = frozenset({"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
                                    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def capabilities_baseline_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    bad, caps = [], set()
    for c in containers(spec):
        added = [str(a) for a in _list(_dict(_sc(c).get("capabilities")).get("add"))]
        extra = [a for a in added if a not in _BASELINE_CAPABILITIES]
        if extra:
            bad.append(_name(c))
            caps.update(extra)
    if not bad:
        return None
    return Forbidden("non-default capabilities",
                     f"{pluralize('container', 'containers', len(bad))} {join_quote(bad)} must not include "
                     f"{join_quote(sorted(caps))} in securityContext.capabilities.add")


def host_namespaces_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    shared = [f"{key}=true" for key in ("hostNetwork", "hostPID", "hostIPC") if spec.get(key) is True]
    return Forbidden("host namespaces", ", ".join(shared)) if shared else None


def host_path_volumes_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    names = [str(v.get("name") or "") for v in _list(spec.get("volumes"))
             if isinstance(v, Mapping) and v.get("hostPath") is not None]
    if not names:
        return None
    return Forbidden("hostPath volumes", f"{pluralize('volume', 'volumes', len(names))} {join_quote(names)}")


def host_ports_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    bad, ports = [], set()
    for c in containers(spec):
        used = [p.get("hostPort") for p in _list(c.get("ports")) if isinstance(p, Mapping) and p.get("hostPort")]
        if used:
            bad.append(_name(c))
            ports.update(str(p) for p in used)
    if not bad:
        return None
    return Forbidden("hostPort", _who_uses("container", bad, "hostPort", sorted(ports), quote=False))


def _probe_hosts(handler: Any) -> list[str]:
    handler = _dict(handler)
    return [str(h) for h in (_dict(handler.get("httpGet")).get("host"), _dict(handler.get("tcpSocket")).get("host"))
            if h]


def host_probes_and_host_lifecycle_1_34(meta: Meta, spec: Spec) -> Forbidden | None:
    bad, hosts = set(), set()
    for c in containers(spec):
        lifecycle = _dict(c.get("lifecycle"))
        for handler in (c.get("livenessProbe"), c.get("readinessProbe"), c.get("startupProbe"),
                        lifecycle.get("postStart"), lifecycle.get("preStop")):
            found = _probe_hosts(handler)
            if found:
                bad.add(_name(c))
                hosts.update(found)
    if not bad:
        return None
    return Forbidden("probe or lifecycle host",
                     _who_uses("container", sorted(bad), "probe or lifecycle host", sorted(hosts)))


def privileged_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    bad = [_name(c) for c in containers(spec) if _sc(c).get("privileged") is True]
    if not bad:
        return None
    return Forbidden("privileged", f"{pluralize('container', 'containers', len(bad))} {join_quote(bad)} must not "
                                   "set securityContext.privileged=true")


def proc_mount_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    bad, types = [], set()
    for c in containers(spec):
        value = _sc(c).get("procMount")
        if value is not None and value != "Default":
            bad.append(_name(c))
            types.add(str(value))
    if not bad:
        return None
    return Forbidden("procMount", f"{pluralize('container', 'containers', len(bad))} {join_quote(bad)} must not set "
                                  f"securityContext.procMount to {join_quote(sorted(types))}")


def proc_mount_1_35_baseline(meta: Meta, spec: Spec) -> Forbidden | None:
    return None if _user_namespace(spec) else proc_mount_1_0(meta, spec)


_SELINUX_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
_SELINUX_TYPES_1_31 = _SELINUX_TYPES_1_0 | {"container_engine_t"}


def _se_linux_options(spec: Spec, allowed: frozenset[str]) -> Forbidden | None:
    bad_types: set[str] = set()
    flags = {"user": False, "role": False}

    def valid(opts: Mapping[str, Any]) -> bool:
        ok = True
        kind = str(opts.get("type") or "")
        if kind not in allowed:
            ok = False
            bad_types.add(kind)
        for key in flags:
            if opts.get(key):
                ok = False
                flags[key] = True
        return ok

    pod_opts = _sc(spec).get("seLinuxOptions")
    pod_bad = isinstance(pod_opts, Mapping) and not valid(pod_opts)
    bad = [_name(c) for c in containers(spec)
           if isinstance(_sc(c).get("seLinuxOptions"), Mapping) and not valid(_sc(c)["seLinuxOptions"])]
    setters = _setters(pod_bad, bad)
    if not setters:
        return None
    data = [f"{pluralize('type', 'types', len(bad_types))} {join_quote(sorted(bad_types))}"] if bad_types else []
    data += [f"{key} may not be set" for key, was_set in flags.items() if was_set]
    return Forbidden("seLinuxOptions", f"{' and '.join(setters)} set forbidden securityContext.seLinuxOptions: "
                                       f"{'; '.join(data)}")


def se_linux_options_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    return _se_linux_options(spec, _SELINUX_TYPES_1_0)


def se_linux_options_1_31(meta: Meta, spec: Spec) -> Forbidden | None:
    return _se_linux_options(spec, _SELINUX_TYPES_1_31)


_SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"
_SECCOMP_TYPES = ("RuntimeDefault", "Localhost")


def seccomp_profile_baseline_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    annotations = _dict(meta.get("annotations"))
    keys = [_SECCOMP_POD_ANNOTATION] + [_SECCOMP_CONTAINER_ANNOTATION + _name(c) for c in containers(spec)]
    forbidden = {f"{k}={go_quote(str(annotations[k]))}" for k in keys if k in annotations
                 and not (annotations[k] in ("runtime/default", "docker/default")
                          or str(annotations[k]).startswith("localhost/"))}
    if not forbidden:
        return None
    return Forbidden("seccompProfile", f"forbidden {pluralize('annotation', 'annotations', len(forbidden))} "
                                       f"{', '.join(sorted(forbidden))}")


def _seccomp_explicit(spec: Spec) -> tuple[bool, list[str], list[str], set[str]]:
    """(pod sets an allowed type, setters of forbidden types, containers that set none, the forbidden types)."""
    bad_values: set[str] = set()
    pod_profile = _sc(spec).get("seccompProfile")
    pod_bad = pod_set = False
    if isinstance(pod_profile, Mapping):
        pod_bad = pod_profile.get("type") not in _SECCOMP_TYPES
        pod_set = not pod_bad
        if pod_bad:
            bad_values.add(str(pod_profile.get("type") or ""))
    bad, unset = [], []
    for c in containers(spec):
        profile = _sc(c).get("seccompProfile")
        if isinstance(profile, Mapping):
            if profile.get("type") not in _SECCOMP_TYPES:
                bad.append(_name(c))
                bad_values.add(str(profile.get("type") or ""))
        elif not pod_set:
            unset.append(_name(c))
    return pod_set, _setters(pod_bad, bad), unset, bad_values


def seccomp_profile_baseline_1_19(meta: Meta, spec: Spec) -> Forbidden | None:
    _, setters, _, values = _seccomp_explicit(spec)
    if not setters:
        return None
    return Forbidden("seccompProfile", f"{' and '.join(setters)} must not set securityContext.seccompProfile.type "
                                       f"to {join_quote(sorted(values))}")


_SYSCTLS_1_0 = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                          "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"})
_SYSCTLS_1_27 = _SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
_SYSCTLS_1_29 = _SYSCTLS_1_27 | {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                                 "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
_SYSCTLS_1_32 = _SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
_SYSCTLS_1_37 = _SYSCTLS_1_32 | {"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}


def _sysctls(allowed: frozenset[str]) -> CheckFn:
    def check(meta: Meta, spec: Spec) -> Forbidden | None:
        names = [str(s.get("name") or "") for s in _list(_sc(spec).get("sysctls")) if isinstance(s, Mapping)]
        forbidden = [n for n in names if n not in allowed]
        return Forbidden("forbidden sysctls", ", ".join(forbidden)) if forbidden else None
    return check


sysctls_1_0, sysctls_1_27, sysctls_1_29, sysctls_1_32, sysctls_1_37 = (
    _sysctls(s) for s in (_SYSCTLS_1_0, _SYSCTLS_1_27, _SYSCTLS_1_29, _SYSCTLS_1_32, _SYSCTLS_1_37))


def windows_host_process_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    def host_process(obj: Mapping[str, Any]) -> bool:
        return _dict(_sc(obj).get("windowsOptions")).get("hostProcess") is True

    setters = _setters(host_process(spec), [_name(c) for c in containers(spec) if host_process(c)])
    if not setters:
        return None
    return Forbidden("hostProcess", f"{' and '.join(setters)} must not set "
                                    "securityContext.windowsOptions.hostProcess=true")


# --- restricted checks -------------------------------------------------------------------------------------------

def allow_privilege_escalation_1_8(meta: Meta, spec: Spec) -> Forbidden | None:
    bad = [_name(c) for c in containers(spec) if _sc(c).get("allowPrivilegeEscalation") is not False]
    if not bad:
        return None
    return Forbidden("allowPrivilegeEscalation != false",
                     f"{pluralize('container', 'containers', len(bad))} {join_quote(bad)} must set "
                     "securityContext.allowPrivilegeEscalation=false")


def allow_privilege_escalation_1_25(meta: Meta, spec: Spec) -> Forbidden | None:
    return None if _windows(spec) else allow_privilege_escalation_1_8(meta, spec)


def capabilities_restricted_1_22(meta: Meta, spec: Spec) -> Forbidden | None:
    missing_drop, adding, caps = [], [], set()
    for c in containers(spec):
        capabilities = _sc(c).get("capabilities")
        if not isinstance(capabilities, Mapping):
            missing_drop.append(_name(c))
            continue
        if "ALL" not in _list(capabilities.get("drop")):
            missing_drop.append(_name(c))
        extra = [str(a) for a in _list(capabilities.get("add")) if a != "NET_BIND_SERVICE"]
        if extra:
            adding.append(_name(c))
            caps.update(extra)
    details = []
    if missing_drop:
        details.append(f"{pluralize('container', 'containers', len(missing_drop))} {join_quote(missing_drop)} must "
                       'set securityContext.capabilities.drop=["ALL"]')
    if adding:
        details.append(f"{pluralize('container', 'containers', len(adding))} {join_quote(adding)} must not include "
                       f"{join_quote(sorted(caps))} in securityContext.capabilities.add")
    return Forbidden("unrestricted capabilities", "; ".join(details)) if details else None


def capabilities_restricted_1_25(meta: Meta, spec: Spec) -> Forbidden | None:
    return None if _windows(spec) else capabilities_restricted_1_22(meta, spec)


_ALLOWED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim",
                    "projected", "secret")
# In kube's order of looking: a volume's type is the first of these it sets, else "unknown".
_RESTRICTED_VOLUMES = ("hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi",
                       "glusterfs", "rbd", "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile",
                       "vsphereVolume", "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO",
                       "storageos")


def restricted_volumes_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    bad, types = [], set()
    for v in _list(spec.get("volumes")):
        if not isinstance(v, Mapping) or any(v.get(k) is not None for k in _ALLOWED_VOLUMES):
            continue
        bad.append(str(v.get("name") or ""))
        types.add(next((k for k in _RESTRICTED_VOLUMES if v.get(k) is not None), "unknown"))
    if not bad:
        return None
    return Forbidden("restricted volume types", _who_uses("volume", bad, "restricted volume type", sorted(types)))


def run_as_non_root_1_0(meta: Meta, spec: Spec) -> Forbidden | None:
    pod_value = _sc(spec).get("runAsNonRoot")
    explicit, implicit = [], []
    for c in containers(spec):
        value = _sc(c).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicit.append(_name(c))
        elif pod_value is not True:
            implicit.append(_name(c))
    setters = _setters(pod_value is False, explicit)
    if setters:
        return Forbidden("runAsNonRoot != true", f"{' and '.join(setters)} must not set "
                                                 "securityContext.runAsNonRoot=false")
    if implicit:
        return Forbidden("runAsNonRoot != true", f"pod or {pluralize('container', 'containers', len(implicit))} "
                                                 f"{join_quote(implicit)} must set securityContext.runAsNonRoot=true")
    return None


def run_as_non_root_1_35(meta: Meta, spec: Spec) -> Forbidden | None:
    return None if _user_namespace(spec) else run_as_non_root_1_0(meta, spec)


def run_as_user_1_23(meta: Meta, spec: Spec) -> Forbidden | None:
    setters = _setters(_is_zero(_sc(spec).get("runAsUser")),
                       [_name(c) for c in containers(spec) if _is_zero(_sc(c).get("runAsUser"))])
    return Forbidden("runAsUser=0", f"{' and '.join(setters)} must not set runAsUser=0") if setters else None


def run_as_user_1_35(meta: Meta, spec: Spec) -> Forbidden | None:
    return None if _user_namespace(spec) else run_as_user_1_23(meta, spec)


def seccomp_profile_restricted_1_19(meta: Meta, spec: Spec) -> Forbidden | None:
    _, setters, unset, values = _seccomp_explicit(spec)
    if setters:
        return Forbidden("seccompProfile", f"{' and '.join(setters)} must not set "
                                           f"securityContext.seccompProfile.type to {join_quote(sorted(values))}")
    if unset:
        return Forbidden("seccompProfile", f"pod or {pluralize('container', 'containers', len(unset))} "
                                           f"{join_quote(unset)} must set securityContext.seccompProfile.type to "
                                           '"RuntimeDefault" or "Localhost"')
    return None


def seccomp_profile_restricted_1_25(meta: Meta, spec: Spec) -> Forbidden | None:
    return None if _windows(spec) else seccomp_profile_restricted_1_19(meta, spec)
