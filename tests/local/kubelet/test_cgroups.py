"""The pod sandbox's cgroups (local/kubelet/cgroups.py), table-tested: where the hierarchies are, limits as cgroup
values, the plan of a container's cgroups the relay carries out, OOM counts, and removing a tree another remover
took first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mxjob_controller.local.kubelet.cgroups import (
    CgroupTree,
    Hierarchy,
    Limits,
    candidate_hierarchies,
    container_limits,
    cpu_weight,
    oom_kills,
    remove_tree,
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


V1_TREE = {"memory": Hierarchy("memory", 1, Path("/cg/memory")), "cpu": Hierarchy("cpu", 1, Path("/cg/cpu")),
           "pids": Hierarchy("pids", 1, Path("/cg/pids"))}
V2_TREE = {c: Hierarchy(c, 2, Path("/cg/unified")) for c in ("memory", "cpu", "pids")}


def test_a_v1_plan_makes_each_pod_folder_before_its_instances_and_a_cpu_cgroup_only_with_a_quota():
    tree = CgroupTree(V1_TREE, 4096, "t")
    plan = tree.container("u", "main", 2, Limits(memory_bytes=1000))
    assert plan.setup == [("/cg/memory/t/pod-u", []),
                          ("/cg/memory/t/pod-u/main-2", [("memory.limit_in_bytes", "1000", False),
                                                         ("memory.memsw.limit_in_bytes", "1000", True)]),
                          ("/cg/pids/t/pod-u", [("pids.max", "4096", False)]), ("/cg/pids/t/pod-u/main-2", [])]
    assert plan.procs_files == ["/cg/memory/t/pod-u/main-2/cgroup.procs", "/cg/pids/t/pod-u/main-2/cgroup.procs"]
    quota = tree.container("u", "main", 3, Limits(cpu_quota_us=50_000))
    assert ("/cg/cpu/t/pod-u", [cpu_weight(1, 1024 * (os.cpu_count() or 1))]) in quota.setup
    assert ("/cg/cpu/t/pod-u/main-3", [("cpu.shares", "512", False), ("cpu.cfs_period_us", "100000", False),
                                       ("cpu.cfs_quota_us", "50000", False)]) in quota.setup
    assert tree.container("u", "main", 1, Limits()).setup[-1] == ("/cg/pids/t/pod-u/main-1", [])


def test_a_v2_plan_makes_one_folder_a_level_and_enables_the_controllers_before_the_instance_folder():
    tree = CgroupTree(V2_TREE, 0, "t")
    plan = tree.container("u", "main", 1, Limits(memory_bytes=1000, cpu_quota_us=2_000))
    pod, instance = plan.setup
    assert pod[0] == "/cg/unified/t/pod-u" and pod[1][0] == ("cgroup.subtree_control", "+memory +cpu +pids", False)
    assert instance == ("/cg/unified/t/pod-u/main-1", [("memory.max", "1000", False), ("memory.swap.max", "0", True),
                                                       cpu_weight(2, 20), ("cpu.max", "2000 100000", False)])
    assert not [w for w in pod[1] if w[0] == "pids.max"], "a pids limit of 0 is none"
    assert plan.procs_files == ["/cg/unified/t/pod-u/main-1/cgroup.procs"]


def test_oom_kill_counts_of_v1_and_v2_files():
    assert oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n") == 2
    assert oom_kills("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n") == 1
    assert oom_kills("oom_kill_disable 0\nunder_oom 0\n") == 0


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
