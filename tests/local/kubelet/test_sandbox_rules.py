"""The pod sandbox's pure rules, table-tested: where the cgroup hierarchies are, limits as cgroup values, OOM counts,
the user a container runs as (kube's ``runAsNonRoot`` errors), and what its mount namespace covers."""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

import pytest

from mxjob_controller.local.kubelet import pod_admission
from mxjob_controller.local.kubelet.cgroups import (
    Hierarchy,
    Limits,
    candidate_hierarchies,
    container_limits,
    oom_kills,
    remove_tree,
)
from mxjob_controller.local.kubelet.container_env import ContainerConfigError
from mxjob_controller.local.kubelet.pod_places import PodPlaces, sweep_leftovers
from mxjob_controller.local.kubelet.sandbox import NOBODY, RunAs, blocked_ancestor, mount_plan, run_as
from mxjob_controller.local.kubelet.security_context import (
    capability_mask,
    check_mappable,
    id_maps,
    runtime_default_filter,
    seccomp_profile,
)

V1_MOUNTINFO = """\
25 30 0:22 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755
26 25 0:23 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
27 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
28 25 0:25 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
29 25 0:26 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_CGROUP = "8:pids:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/\n0::/\n"
V2_MOUNTINFO = "30 1 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
V2_CGROUP = "0::/user.slice/user-1000.slice/session-2.scope\n"


def test_v1_hierarchies_are_found_per_controller_after_the_v2_one():
    found = candidate_hierarchies(V1_MOUNTINFO, V1_CGROUP)
    assert found["memory"] == [Hierarchy("memory", 2, Path("/sys/fs/cgroup/unified")),
                               Hierarchy("memory", 1, Path("/sys/fs/cgroup/memory/process_api/abc"))]
    assert found["cpu"][1] == Hierarchy("cpu", 1, Path("/sys/fs/cgroup/cpu,cpuacct"))
    assert found["pids"][1] == Hierarchy("pids", 1, Path("/sys/fs/cgroup/pids"))


def test_a_pure_v2_machine_uses_the_process_own_cgroup():
    found = candidate_hierarchies(V2_MOUNTINFO, V2_CGROUP)
    own = Path("/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope")
    assert found == {c: [Hierarchy(c, 2, own)] for c in ("memory", "cpu", "pids")}


@pytest.mark.parametrize(("limits", "want"), [
    ({"memory": "200Mi", "cpu": "500m"}, Limits(200 * 1024 * 1024, 50_000)),
    ({"cpu": "2"}, Limits(None, 200_000)),
    ({"cpu": "1m"}, Limits(None, 1_000)),            # the kubelet's minimum quota, 1 ms
    ({"cpu": "0.0001"}, Limits(None, 1_000)),        # rounded up to 1m first
    ({"memory": "1G"}, Limits(10 ** 9, None)),
    ({}, Limits(None, None)),
    ({"memory": "lots"}, Limits(None, None)),        # the API server refuses it; here it is simply no limit
])
def test_limits_as_cgroup_values(limits, want):
    assert container_limits({"resources": {"limits": limits}}) == want


def test_oom_kill_counts_of_v1_and_v2_files():
    assert oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n") == 2
    assert oom_kills("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n") == 1
    assert oom_kills("oom_kill_disable 0\nunder_oom 0\n") == 0


POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u-1"}, "spec": {}}


def with_sc(pod_sc=None):
    return {**POD, "spec": {"securityContext": pod_sc or {}}}


@pytest.mark.parametrize(("pod_sc", "container_sc", "default", "want"), [
    ({}, {}, NOBODY, RunAs(65534, 65534)),
    ({"runAsUser": 10, "runAsGroup": 20, "supplementalGroups": [30, 31], "fsGroup": 40}, {}, NOBODY,
     RunAs(10, 20, (30, 31, 40))),
    ({"runAsUser": 10}, {"runAsUser": 11}, NOBODY, RunAs(11, 0)),        # no group: the unknown user's gid is 0
    ({"runAsGroup": 5}, {}, NOBODY, RunAs(65534, 5)),
    ({"runAsNonRoot": True}, {}, NOBODY, RunAs(65534, 65534)),
    ({"runAsNonRoot": True}, {"runAsUser": 7}, (0, 0), RunAs(7, 0)),
])
def test_the_user_a_container_runs_as(pod_sc, container_sc, default, want):
    assert run_as(with_sc(pod_sc), {"name": "c", "securityContext": container_sc}, default) == want


@pytest.mark.parametrize(("pod_sc", "container_sc", "default", "message"), [
    ({"runAsNonRoot": True}, {}, (0, 0),
     'container has runAsNonRoot and image will run as root (pod: "p_ns(u-1)", container: c)'),
    ({}, {"runAsNonRoot": True, "runAsUser": 0}, NOBODY,
     'container\'s runAsUser breaks non-root policy (pod: "p_ns(u-1)", container: c)'),
    ({"runAsUser": 0}, {"runAsNonRoot": True}, NOBODY,
     'container\'s runAsUser breaks non-root policy (pod: "p_ns(u-1)", container: c)'),
])
def test_run_as_non_root_is_refused_as_the_kubelet_refuses_it(pod_sc, container_sc, default, message):
    with pytest.raises(ContainerConfigError) as refused:
        run_as(with_sc(pod_sc), {"name": "c", "securityContext": container_sc}, default)
    assert str(refused.value) == message


def test_the_mount_plan():
    private = [("/tmp/mxjob-tls-x", True), ("/work/.mxjob-local/kubeconfig", False), ("/srv/audit.log", False)]
    plan = mount_plan("/tmp/pytest-of-root/t0", private, needed=[("/root/.pyenv/versions/3.11", "/root"),
                                                                   ("/tmp/venv", None)])
    assert plan.binds == ("/tmp/pytest-of-root/t0", "/root/.pyenv/versions/3.11", "/tmp/venv")
    assert plan.covers == ("/root",)
    assert plan.hide_dirs == ("/tmp/mxjob-tls-x",)
    assert plan.hide_files == ("/work/.mxjob-local/kubeconfig", "/srv/audit.log")
    assert mount_plan("/tmp", []).binds == ()            # /tmp itself: the container's own, empty one
    assert mount_plan("/work", []).binds == ()


def test_the_first_folder_a_user_cannot_pass():
    modes = {"/": 0o755, "/root": 0o700, "/root/.pyenv": 0o755, "/srv": 0o750, "/srv/x": 0o755}

    def fake_stat(path: str) -> os.stat_result:
        return os.stat_result((stat.S_IFDIR | modes[path], 0, 0, 0, 0, 50 if path == "/srv" else 0, 0, 0, 0, 0))
    nobody = RunAs(65534, 65534)
    assert blocked_ancestor("/root/.pyenv", nobody, fake_stat) == "/root"
    assert blocked_ancestor("/srv/x", nobody, fake_stat) == "/srv"
    assert blocked_ancestor("/srv/x", RunAs(65534, 65534, (50,)), fake_stat) is None   # its group may
    assert blocked_ancestor("/root/.pyenv", RunAs(0, 0), fake_stat) is None


class _GoneWhenListed(type(Path())):
    """A cgroup another remover takes between the look and the listing."""

    def is_dir(self) -> bool:
        return True


def test_removing_a_cgroup_tree_another_remover_took_first_is_not_an_error(tmp_path):
    (tmp_path / "pod-a" / "main").mkdir(parents=True)
    (tmp_path / "pod-a" / "sidecar").mkdir()
    remove_tree(_GoneWhenListed(tmp_path / "pod-b"))   # seen, then gone: the kubelet's close beside a pod's end
    remove_tree(tmp_path / "pod-a")
    assert not (tmp_path / "pod-a").exists()
    remove_tree(tmp_path / "pod-a")   # already gone


def _pod(**spec) -> dict:
    container = {"name": "main", "image": "x", "command": ["true"], **spec.pop("container", {})}
    return {"metadata": {"name": "p"}, "spec": {"containers": [container], **spec}}


@pytest.mark.parametrize(("spec", "refused"), [
    ({}, []),
    ({"hostNetwork": True}, []),   # every pod here shares the machine's network: honoured
    ({"hostUsers": False}, []),
    ({"container": {"ports": [{"containerPort": 80, "hostPort": 80}]}}, []),
    ({"container": {"securityContext": {"privileged": False, "procMount": "Default",
                                        "seccompProfile": {"type": "RuntimeDefault"},
                                        "appArmorProfile": {"type": "Unconfined"}}}}, []),
    ({"hostPID": True, "hostIPC": True}, ["spec.hostPID: Forbidden: every pod has a PID namespace of its own here",
                                          "spec.hostIPC: Forbidden: every pod has an IPC namespace of its own here"]),
    ({"hostUsers": True}, ["spec.hostUsers: Forbidden: every pod has a user namespace of its own here "
                           "(hostUsers: false)"]),
    ({"volumes": [{"name": "h", "hostPath": {"path": "/"}}, {"name": "e", "emptyDir": {}}]},
     ["spec.volumes[0].hostPath: Forbidden: the local kubelet mounts no volumes (a pod writes to its own /tmp and "
      "/var/tmp)",
      "spec.volumes[1].emptyDir: Forbidden: the local kubelet mounts no volumes (a pod writes to its own /tmp and "
      "/var/tmp)"]),
    ({"container": {"securityContext": {"privileged": True}}},
     ["spec.containers[0].securityContext.privileged: Forbidden: the local kubelet runs no privileged container "
      "(root in a pod is an unprivileged user of this machine)"]),
    ({"container": {"securityContext": {"procMount": "Unmasked"}}},
     ["spec.containers[0].securityContext.procMount: Forbidden: only the Default /proc can be mounted here"]),
    ({"container": {"ports": [{"containerPort": 80, "hostPort": 8080}]}},
     ["spec.containers[0].ports[0].hostPort: Forbidden: pods share this machine's network, so a container listens "
      "on its own port; a different hostPort cannot be mapped"]),
    ({"securityContext": {"sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}],
                          "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}},
     ["spec.securityContext.seccompProfile.type: Forbidden: Localhost seccomp profiles cannot be loaded by the "
      "local kubelet (RuntimeDefault and Unconfined can)",
      "spec.securityContext.sysctls: Forbidden: sysctls cannot be set by the local kubelet"]),
    ({"os": {"name": "windows"}}, ["spec.os.name: Forbidden: this node runs linux, not windows"]),
])
def test_what_the_local_kubelet_cannot_honour_is_named(spec, refused):
    assert pod_admission.refusals(_pod(**spec)) == refused


def test_probes_and_hooks_pass_with_a_warning():
    pod = _pod(container={"readinessProbe": {"exec": {"command": ["true"]}}, "lifecycle": {"preStop": {}}})
    assert pod_admission.refusals(pod) == []
    assert pod_admission.warnings(pod) == [
        "spec.containers[0].readinessProbe, spec.containers[0].lifecycle: not run by the local kubelet (containers "
        "are started and stopped without probes or hooks)"]


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


def test_leftovers_of_gone_clusters_are_swept_and_nothing_else(tmp_path):
    names = ["mxjob-sandbox-111-a", "mxjob-local-logs-222-b", "mxjob-apiserver-tls-222-c", "mxjob-webhook-tls-333-d",
             "mxjob-sandbox-notapid-e", "mxjob-attack-222-f", "other-222-g"]
    for name in names:
        (tmp_path / name / "inner").mkdir(parents=True)
        (tmp_path / name / "inner").chmod(0)   # as a pod may leave it
    removed = sweep_leftovers(str(tmp_path), alive=lambda pid: pid == 111)
    assert sorted(removed) == ["mxjob-apiserver-tls-222-c", "mxjob-local-logs-222-b", "mxjob-webhook-tls-333-d"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mxjob-attack-222-f", "mxjob-sandbox-111-a",
                                                          "mxjob-sandbox-notapid-e", "other-222-g"]


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


def test_a_pods_places_follow_its_name_and_controller_and_go_when_released(tmp_path):
    places = PodPlaces(tmp_path, root_user=True)
    bare = {"metadata": {"namespace": "ns", "name": "a", "uid": "1"}}
    replica = {"metadata": {"namespace": "ns", "name": "job-worker-0", "uid": "2",
                            "ownerReferences": [{"controller": True, "uid": "job", "kind": "MXJob", "name": "job"}]}}
    again = {"metadata": {**replica["metadata"], "uid": "3"}}   # recreated by its controller under its name
    stranger = {"metadata": {"namespace": "ns", "name": "job-worker-0", "uid": "4"}}   # same name, no controller
    (folder_a, block_a), (folder_r, block_r) = places.of(bare), places.of(replica)
    assert places.of(again) == (folder_r, block_r), "the recreated replica finds its predecessor's places"
    assert places.of(stranger)[0] not in (folder_a, folder_r)
    assert len({block_a, block_r, places.of(stranger)[1]}) == 3 and min(block_a, block_r) >= 1
    assert oct((folder_r / "tmp").stat().st_mode & 0o7777) == "0o1777"
    assert places.host_path(again, "/tmp/mark") == folder_r / "tmp" / "mark"
    assert places.host_path(again, "/etc/passwd") is None
    places.release(lambda key: key[2] == "job")   # only the controller's pods may come back
    assert folder_r.exists() and not folder_a.exists() and places.host_path(bare, "/tmp/x") is None
