"""The pod sandbox's pure rules (local/kubelet/sandbox.py), table-tested: the user a container runs as (kube's
``runAsNonRoot`` errors), what its mount namespace covers, and the first folder a user cannot pass. (The sandbox on
real processes is tests/local/kubelet/test_sandbox.py: slow, and skipped where user namespaces are not.)"""

from __future__ import annotations

import os
import stat

import pytest

from mxjob_controller.local.kubelet.container_env import ContainerConfigError
from mxjob_controller.local.kubelet.sandbox import (
    NOBODY,
    RunAs,
    blocked_ancestor,
    mount_plan,
    run_as,
    split_warnings,
)

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


@pytest.mark.parametrize(("status", "want"), [
    ("", ([], "")),
    (None, ([], None)),                                              # the relay said nothing in time
    ("warning\tno cgroup a\nwarning\tno limit b\n", (["no cgroup a", "no limit b"], "")),
    ("warning\tno cgroup a\nexec\t2\tNo such file", (["no cgroup a"], "exec\t2\tNo such file")),
    ("setup\tmount: warning\tin a message", ([], "setup\tmount: warning\tin a message")),
])
def test_the_relays_warnings_come_before_its_failure(status, want):
    assert split_warnings(status) == want
