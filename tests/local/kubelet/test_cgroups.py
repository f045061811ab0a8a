"""The pod sandbox's cgroups (local/kubelet/cgroups.py), table-tested: where the hierarchies are, limits as cgroup
values, OOM counts, and removing a tree another remover took first."""

from __future__ import annotations

from pathlib import Path

import pytest

from mxjob_controller.local.kubelet.cgroups import (
    Hierarchy,
    Limits,
    candidate_hierarchies,
    container_limits,
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
