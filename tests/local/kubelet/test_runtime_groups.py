"""A container's process group is gone once only zombies are left in it (issue 48): a process that has ended but
that its adopter has not reaped yet runs nothing, and waiting for it kept a stopping pod waiting out its grace
period. The zombie here is made deterministic: its parent never reaps it and has left the group. A relay the
sandbox's launcher forked counts the same way (its zombie waits for the launcher), and a reading of /proc older
than a group's start never says it is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mxjob_controller.local.kubelet import runtime
from mxjob_controller.local.kubelet.launcher import Launched
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



def test_a_reading_older_than_the_groups_start_does_not_say_it_is_gone(tmp_path):
    log = tmp_path / "leader.log"
    script = "import os, time\nif os.fork() == 0:\n    time.sleep(120)\n    os._exit(0)\nprint('forked', flush=True)\n"
    before = time.monotonic()
    proc = ContainerProcess(Launch(argv=[sys.executable, "-c", script], env={}, cwd=str(tmp_path), log_path=log))
    try:
        wait_for(lambda: proc.poll() is not None, timeout=30, what="the leader ended")
        # A reading of /proc taken before the start (the kubelet's is shared, and up to 50 ms old): without the
        # group in it, yet it cannot say the group is gone.
        with runtime._scan_lock:
            runtime._last_scan = (before, frozenset())
        assert proc.group_alive()
    finally:
        proc.signal_group(signal.SIGKILL)
        wait_for(lambda: not proc.group_alive(), timeout=30, what="the group killed")


def test_a_relays_group_of_zombies_only_is_not_alive(tmp_path, monkeypatch):
    """A relay is the launcher's child: until the launcher reaps it and its word is read, the relay's zombie is
    all that is left of the group, and the relay's own ``poll`` still says it runs."""
    relay = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        wait_for(lambda: _state(relay.pid) == "Z", timeout=30, what="the relay a zombie")   # never reaped: Z
        monkeypatch.setattr(runtime.sandbox, "launch", lambda _spec, _out, _launcher: Launched(relay.pid))
        proc = ContainerProcess(Launch(argv=["true"], env={}, cwd=str(tmp_path), log_path=tmp_path / "relay.log",
                                       sandbox_spec={}))
        os.killpg(proc.pid, 0)   # the kernel still counts the group: its zombie is in it
        assert proc.poll() is None
        wait_for(lambda: not proc.group_alive(), timeout=5, what="the zombie relay's group counted as ended")
        started = time.monotonic()
        assert terminate_groups([proc], grace=30.0) == []
        assert time.monotonic() - started < 5.0, "the zombie relay's group was waited for"
    finally:
        relay.wait(10)


def test_a_gone_groups_status_is_waited_for_until_the_launchers_word_comes(tmp_path, monkeypatch):
    """The relay's zombie is all that is left, so the group is gone, but the launcher has not told its status yet:
    ``settle`` waits for that word (a SIGTERM's 143) instead of reporting the container as never found (137)."""
    relay = subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        wait_for(lambda: _state(relay.pid) == "Z", timeout=30, what="the relay a zombie")
        monkeypatch.setattr(runtime.sandbox, "launch", lambda _spec, _out, _launcher: Launched(relay.pid))
        proc = ContainerProcess(Launch(argv=["true"], env={}, cwd=str(tmp_path), log_path=tmp_path / "relay.log",
                                       sandbox_spec={}))
        assert terminate_groups([proc], grace=30.0) == [] and proc.poll() is None
        assert proc.settle(0.1) is None   # no word within the wait: still unknown, the caller says so
        word = threading.Timer(0.3, proc._popen._ended_with, (-signal.SIGTERM,))
        word.start()
        try:
            assert proc.settle(10.0) == 128 + signal.SIGTERM
        finally:
            word.join(10)
    finally:
        relay.wait(10)
