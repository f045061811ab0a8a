"""A container's security context as the sandbox applies it (local/kubelet/security_context.py), table-tested:
capabilities as containerd applies add and drop, a pod's id maps onto its block, the RuntimeDefault seccomp filter."""

from __future__ import annotations

import struct

import pytest

from mxjob_controller.local.kubelet.container_env import ContainerConfigError
from mxjob_controller.local.kubelet.sandbox import RunAs
from mxjob_controller.local.kubelet.security_context import (
    capability_mask,
    check_mappable,
    id_maps,
    runtime_default_filter,
    seccomp_profile,
)


@pytest.mark.parametrize(("container", "mask"), [
    ({}, 0xA80425FB),                                                   # containerd's default set
    ({"securityContext": {"capabilities": {"drop": ["ALL"]}}}, 0),
    ({"securityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}, 1 << 10),
    ({"securityContext": {"capabilities": {"add": ["CAP_SYS_ADMIN"], "drop": ["NET_RAW", "mknod"]}}},
     (0xA80425FB | 1 << 21) & ~(1 << 13) & ~(1 << 27)),
])
def test_capabilities_as_containerd_applies_add_and_drop(container, mask):
    assert capability_mask(container) == mask


def test_a_pods_ids_map_onto_its_block_and_ids_past_it_are_refused():
    assert id_maps(True, 3, RunAs(0, 0)) == ("0 196608 65536", "0 196608 65536")
    assert id_maps(False, 0, RunAs(1000, 100)) == ("1000 0 1", "100 0 1")   # without root: local up's own user
    pod = {"metadata": {"name": "p", "namespace": "default", "uid": "u"}}
    check_mappable(pod, {"name": "main"}, RunAs(65535, 65535, (1, 2)))
    with pytest.raises(ContainerConfigError, match=r"^runAsUser 70000 is outside the pod's user namespace, which "
                                                   r"maps ids 0-65535 \(pod: \"p_default\(u\)\", container: main\)$"):
        check_mappable(pod, {"name": "main"}, RunAs(70000, 0))


def _denied(program: bytes) -> set[int]:
    entries = [struct.unpack("=HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    return {k for code, _jt, _jf, k in entries[4:-2] if code == 0x15}


def test_the_runtime_default_profile_refuses_what_containerd_s_does_unless_a_capability_unlocks_it():
    default = runtime_default_filter(capability_mask({}), "x86_64")
    assert default is not None
    denied = _denied(default)
    assert {250, 321, 323, 272, 308, 165, 175, 169} <= denied   # keyctl, bpf, userfaultfd, unshare, setns, mount, ...
    assert not {0, 1, 2, 56, 57, 59, 61, 101} & denied          # read, write, open, clone, fork, execve, wait4, ptrace
    admin = _denied(runtime_default_filter(capability_mask({"securityContext": {"capabilities": {
        "add": ["SYS_ADMIN"]}}}), "x86_64") or b"")
    assert 272 not in admin and 165 not in admin and 250 in admin
    assert runtime_default_filter(capability_mask({}), "riscv64") is None
    pod = {"spec": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}}
    assert seccomp_profile(pod, {}) == "RuntimeDefault"
    assert seccomp_profile(pod, {"securityContext": {"seccompProfile": {"type": "Unconfined"}}}) == "Unconfined"
    assert seccomp_profile({}, {}) == "Unconfined"
