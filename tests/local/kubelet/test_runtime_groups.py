"""A container's process group is gone once only zombies are left in it (issue 48): a process that has ended but
that its adopter has not reaped yet runs nothing, and waiting for it kept a stopping pod waiting out its grace
period. The zombie here is made deterministic: its parent never reaps it and has left the group."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import pytest

from mxjob_controller.local.kubelet.runtime import ContainerProcess, Launch, terminate_groups
from tests.support import wait_for

pytestmark = pytest.mark.integration

# The leader forks a parent that forks a child; the child ends at once, its parent never reaps it and moves to a
# process group of its own; the leader writes both pids and ends. Left in the leader's group: the zombie alone.
LEADER = """
import os, sys, time
ready_r, ready_w = os.pipe()
parent = os.fork()
if parent == 0:
    child = os.fork()
    if child == 0:
        os._exit(0)
    os.setpgid(0, 0)
    os.write(ready_w, str(child).encode())
    time.sleep(120)
    os._exit(0)
child = os.read(ready_r, 32).decode()
print(parent, child, flush=True)
"""


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def test_a_group_of_zombies_only_is_not_alive_and_is_not_waited_for(tmp_path):
    log = tmp_path / "leader.log"
    proc = ContainerProcess(Launch(argv=[sys.executable, "-c", LEADER], env={}, cwd=str(tmp_path), log_path=log))
    pids = wait_for(lambda: log.read_text().split() if log.exists() and log.read_text().endswith("\n") else None,
                    timeout=30, what="the leader's pids")
    parent, child = int(pids[0]), int(pids[1])
    try:
        wait_for(lambda: proc.poll() is not None, timeout=30, what="the leader ended")
        wait_for(lambda: _state(child) == "Z", timeout=30, what="the child a zombie")
        os.killpg(proc.pid, 0)   # the kernel still counts the group: its zombie is in it
        assert os.getpgid(child) == proc.pid and os.getpgid(parent) != proc.pid
        assert not proc.group_alive()
        started = time.monotonic()
        terminate_groups([proc], grace=30.0)
        assert time.monotonic() - started < 10.0, "the zombie's group was waited for"
    finally:
        os.kill(parent, signal.SIGKILL)   # its zombie then goes to this machine's init, which reaps it


def test_a_group_with_a_running_member_is_alive(tmp_path):
    log = tmp_path / "leader.log"
    script = "import os, time\nif os.fork() == 0:\n    time.sleep(120)\n    os._exit(0)\nprint('forked', flush=True)\n"
    proc = ContainerProcess(Launch(argv=[sys.executable, "-c", script], env={}, cwd=str(tmp_path), log_path=log))
    try:
        wait_for(lambda: proc.poll() is not None, timeout=30, what="the leader ended")
        assert proc.group_alive()   # its child still runs in the group
    finally:
        proc.signal_group(signal.SIGKILL)
        wait_for(lambda: not proc.group_alive(), timeout=30, what="the group killed")

