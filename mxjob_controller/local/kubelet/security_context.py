"""A container's ``securityContext`` as the local kubelet honours it: its user and groups, its capabilities, and the
host ids its user namespace maps them to. Pure.

- The user: ``runAsUser``/``runAsGroup`` (container over pod), ``supplementalGroups`` and ``fsGroup``, else the
  "image's" user (the kubelet's default); ``runAsNonRoot`` checked as the kubelet's ``verifyRunAsNonRoot`` checks
  it, with its messages.
- The capabilities: the set containerd gives every container (:data:`DEFAULT_CAPABILITIES`), with
  ``capabilities.add`` and ``drop`` applied as containerd applies them (``ALL`` in either, names with or without
  ``CAP_``); a container running as root gets them, one running as another user none (as runc's ``exec`` leaves it).
- Seccomp: ``seccompProfile: RuntimeDefault`` (container over pod) is the runtime's default profile, as a filter
  of the system calls Docker's and containerd's default profiles leave out (``Unconfined``, the default, is none);
  known for x86_64, refused at admission elsewhere.
- The user namespace (kube's ``hostUsers: false``, KEP-127): every pod has one. When ``local up`` is root, the pod's
  ids 0-65535 map to a block of 65,536 host ids of its own that no host user has (blocks above the host's own
  0-65535, as the kubelet allocates them); an id outside 0-65535 cannot be mapped and the container does not start.
  Without root only ``local up``'s own user can be mapped: the container's user is that one, seen inside as the one
  asked for.
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.local.kubelet.container_env import ContainerConfigError

NOBODY = (65534, 65534)
IDS_PER_POD = 65536

#: Linux's capability numbers (``linux/capability.h``), by the names securityContext uses.
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
                "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK",
                "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN",
                "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE",
                "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM",
                "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE")
#: containerd's default set (``oci.DefaultCapabilities``): what a container gets unless it adds or drops some.
DEFAULT_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
                        "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE")
ALL_CAPABILITIES = (1 << len(CAPABILITIES)) - 1


@dataclass(frozen=True, slots=True)
class RunAs:
    uid: int
    gid: int
    groups: tuple[int, ...] = ()


def pod_ref(pod: Mapping[str, Any]) -> str:
    """The kubelet's ``format.Pod``: ``name_namespace(uid)``."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"


def run_as(pod: Mapping[str, Any], container: Mapping[str, Any], default: tuple[int, int],
           primary_gid: Callable[[int], int | None] = lambda _uid: None) -> RunAs:
    """The user, group and supplementary groups of ``container``: its ``securityContext`` over the pod's, else
    ``default`` (the image's user, as it were). A ``runAsUser`` without ``runAsGroup`` gets the user's primary
    group where this machine knows the user, else 0 (as a runtime reads the image's ``/etc/passwd``).
    ``runAsNonRoot`` is checked as the kubelet's ``verifyRunAsNonRoot`` checks it: ContainerConfigError."""
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    sc = container.get("securityContext") or {}

    def pick(key: str) -> Any:
        return sc[key] if sc.get(key) is not None else pod_sc.get(key)

    uid, gid, non_root = pick("runAsUser"), pick("runAsGroup"), pick("runAsNonRoot")
    name = container.get("name") or ""
    if non_root:
        if uid is not None and uid == 0:
            raise ContainerConfigError(f"container's runAsUser breaks non-root policy (pod: {json.dumps(pod_ref(pod))}"
                                       f", container: {name})")
        if uid is None and default[0] == 0:
            raise ContainerConfigError(f"container has runAsNonRoot and image will run as root (pod: "
                                       f"{json.dumps(pod_ref(pod))}, container: {name})")
    if uid is None:
        uid = default[0]
        gid = default[1] if gid is None else gid
    elif gid is None:
        gid = primary_gid(uid)
        gid = 0 if gid is None else gid
    groups = [int(g) for g in pod_sc.get("supplementalGroups") or () if isinstance(g, int)]
    if isinstance(pod_sc.get("fsGroup"), int):
        groups.append(pod_sc["fsGroup"])
    return RunAs(int(uid), int(gid), tuple(dict.fromkeys(groups)))


def _capability_bits(names: Any) -> int:
    bits = 0
    for given in names or ():
        if not isinstance(given, str):
            continue
        name = given.upper().removeprefix("CAP_")
        if name == "ALL":
            return ALL_CAPABILITIES
        if name in CAPABILITIES:
            bits |= 1 << CAPABILITIES.index(name)
    return bits


def capability_mask(container: Mapping[str, Any]) -> int:
    """The capabilities ``container`` keeps, as a bit mask: containerd's defaults, ``drop`` removed, ``add`` added
    (containerd drops first, so ``drop: [ALL]`` with ``add: [NET_BIND_SERVICE]`` keeps that one)."""
    caps = (container.get("securityContext") or {}).get("capabilities") or {}
    if not caps:
        return _DEFAULT_MASK
    mask = _DEFAULT_MASK & ~_capability_bits(caps.get("drop"))
    return mask | _capability_bits(caps.get("add"))


_DEFAULT_MASK = _capability_bits(DEFAULT_CAPABILITIES)


def capability_names(mask: int) -> list[str]:
    return [name for number, name in enumerate(CAPABILITIES) if mask >> number & 1]


def check_mappable(pod: Mapping[str, Any], container: Mapping[str, Any], user: RunAs) -> None:
    """A pod's user namespace holds ids 0-65535: a user or group past them cannot be given (ContainerConfigError)."""
    for what, value in (("runAsUser", user.uid), ("runAsGroup", user.gid),
                        *(("supplementalGroups/fsGroup", g) for g in user.groups)):
        if not 0 <= value < IDS_PER_POD:
            raise ContainerConfigError(
                f"{what} {value} is outside the pod's user namespace, which maps ids 0-{IDS_PER_POD - 1} (pod: "
                f"{json.dumps(pod_ref(pod))}, container: {container.get('name') or ''})")


def id_maps(root: bool, block: int, user: RunAs) -> tuple[str, str]:
    """The pod's ``uid_map`` and ``gid_map``: with root, its 65,536 ids onto host block ``block``; without, the
    container's user and group onto the outer namespace's root (``local up``'s own user)."""
    if root:
        first = block * IDS_PER_POD
        return f"0 {first} {IDS_PER_POD}", f"0 {first} {IDS_PER_POD}"
    return f"{user.uid} 0 1", f"{user.gid} 0 1"


def host_user(root: bool, block: int, user: RunAs, own: tuple[int, int]) -> RunAs:
    """Who ``user`` of a pod is on the host: its ids in the pod's block, or ``local up``'s own user."""
    if not root:
        return RunAs(own[0], own[1])
    first = block * IDS_PER_POD
    return RunAs(first + user.uid, first + user.gid, tuple(first + g for g in user.groups))


# --- seccomp: the runtime's default profile ----------------------------------------------------------------------

#: x86_64 system calls the runtime's default profile refuses (EPERM), as Docker's and containerd's default
#: profiles leave them out: kernel modules, kexec, reboot, swap, clocks, accounting, keyrings, bpf, perf events,
#: userfaultfd, NUMA policy, handles by id, the removed ones; and those a capability unlocks, refused unless the
#: container holds it (mount and namespaces with SYS_ADMIN).
_X86_64_DENIED: dict[str, tuple[int, ...]] = {
    "": (134, 136, 139, 156, 174, 177, 178, 180, 212, 248, 249, 250, 298, 303, 304, 312, 321, 323),
    "SYS_ADMIN": (155, 165, 166, 167, 168, 179, 272, 308, 428, 429, 430, 431, 432, 433, 442),
    "SYS_MODULE": (175, 176, 313),
    "SYS_BOOT": (169, 246, 320),
    "SYS_PACCT": (163,),
    "SYS_TIME": (164, 227, 305),
    "SYS_NICE": (237, 238, 239, 279),
    "SYS_RAWIO": (172, 173),
}
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_RET_ALLOW, _RET_EPERM = 0x7FFF0000, 0x00050000 | 1
_LD_ABS, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06


def seccomp_profile(pod: Mapping[str, Any], container: Mapping[str, Any]) -> str:
    """The container's ``seccompProfile.type`` (container over pod); ``Unconfined`` when neither sets one."""
    for sc in ((container.get("securityContext") or {}), ((pod.get("spec") or {}).get("securityContext") or {})):
        profile = sc.get("seccompProfile")
        if isinstance(profile, Mapping) and profile.get("type"):
            return str(profile["type"])
    return "Unconfined"


@functools.lru_cache(maxsize=64)   # pure, and the same few masks for every container
def runtime_default_filter(capabilities: int, machine: str) -> bytes | None:
    """The runtime's default profile as a classic BPF program (``struct sock_filter`` entries) for this machine,
    given the container's capability mask; None where it is not known (another architecture than x86_64)."""
    if machine != "x86_64":
        return None
    held = set(capability_names(capabilities))
    denied = sorted({nr for key, numbers in _X86_64_DENIED.items() if key not in held for nr in numbers})
    # ld arch; jeq x86_64 (else deny); ld nr; jge x32 (deny); jeq each denied (deny); ret allow; deny: ret EPERM
    count = len(denied)
    program = [(_LD_ABS, 0, 0, 4), (_JEQ, 0, count + 3, _AUDIT_ARCH_X86_64), (_LD_ABS, 0, 0, 0),
               (_JGE, count + 1, 0, _X32_BIT)]
    program += [(_JEQ, count - i, 0, nr) for i, nr in enumerate(denied)]
    program += [(_RET, 0, 0, _RET_ALLOW), (_RET, 0, 0, _RET_EPERM)]
    return b"".join(struct.pack("=HBBI", *entry) for entry in program)
