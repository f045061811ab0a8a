"""The sandbox's launcher (``launcher.py``): containers it forks start, end and are reported as those ``Popen``
started were, hold nothing of the launcher's, and die with it; once it is gone, containers start as before."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from mxjob_controller.local.kubelet.launcher import Launched
from mxjob_controller.local.kubelet.runtime import ContainerProcess, Launch, Reaper
from mxjob_controller.local.kubelet.sandbox import Sandbox, SandboxConfig
from mxjob_controller.local.kubelet.sandbox_init import GROUP_SIGNALS, PYTHON_IGNORED
from tests.support import wait_for

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not Path("/proc/self/ns/user").exists(), reason="needs namespaces")]

POD = {"metadata": {"name": "p", "namespace": "default", "uid": "launcher-test"}, "spec": {}}
ENV = {"PATH": os.defpath}


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    made = Sandbox(SandboxConfig())
    if not made.namespaces:
        made.close()
        pytest.skip(f"no sandbox here: {made.why_not}")
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def reaper() -> Iterator[Reaper]:
    made = Reaper().start()
    try:
        yield made
    finally:
        made.stop(5.0)


def _start(sandbox: Sandbox, argv: list[str], log: Path, instance: int = 1) -> ContainerProcess:
    spec, _user, cgroup = sandbox.prepare(POD, {"name": "main"}, instance, argv, dict(ENV), "/")
    return ContainerProcess(Launch(argv, ENV, "/", log, spec, None, cgroup, sandbox.launcher))


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_the_launcher_forks_containers_that_hold_nothing_of_its_own_and_report_their_ends(sandbox, reaper, tmp_path):
    assert sandbox.launcher is not None and sandbox.launcher.usable
    ended: dict[int, int | None] = {}
    look = ("ls /proc/self/fd; grep -E '^Sig(Blk|Ign)' /proc/self/status; "
            "test -z \"$(env | grep -v '^PATH=\\|^PWD=\\|^SHLVL=\\|^_=')\" && echo clean-env; exit 3")
    proc = _start(sandbox, ["sh", "-c", look], tmp_path / "look.log")
    assert isinstance(proc._popen, Launched)
    assert _parent(proc.pid) != os.getpid()   # the launcher's child, not this process's
    reaper.watch(proc, lambda p: ended.__setitem__(p.pid, p.poll()))
    wait_for(lambda: proc.pid in ended, what="the reaper told of the end")
    assert ended[proc.pid] == 3
    out = (tmp_path / "look.log").read_text().split("\n")
    # 0, 1, 2 and the descriptor ls itself opens on /proc/self/fd: nothing of the launcher's, the kubelet's or the
    # status pipe
    assert out[:4] == ["0", "1", "2", "3"] and out[4].startswith("SigBlk:")
    # none blocked; none of what the launcher ignores for itself (the signals a container's group is sent, and what
    # Python ignores at start) is ignored in the container; a disposition the launcher only inherited (from the
    # process that started it, e.g. for glibc's reserved signals 32 and 33, which Python cannot reach) passes on as
    # it does through Popen
    launcher_status = Path(f"/proc/{sandbox.launcher._proc.pid}/status").read_text()
    launcher_ignored = int(next(line for line in launcher_status.splitlines() if line.startswith("SigIgn:")).split()[1],
                           16)
    reset = sum(1 << (int(sig) - 1) for sig in GROUP_SIGNALS + PYTHON_IGNORED)
    assert int(out[4].split()[1], 16) == 0, out
    assert int(out[5].split()[1], 16) == launcher_ignored & ~reset, (out, hex(launcher_ignored))
    assert "clean-env" in out

    killed = _start(sandbox, ["sleep", "300"], tmp_path / "killed.log", 2)
    reaper.watch(killed, lambda p: ended.__setitem__(p.pid, p.poll()))
    killed.signal_group(signal.SIGKILL)
    wait_for(lambda: killed.pid in ended, what="the end of the killed container")
    assert ended[killed.pid] == 137

    with pytest.raises(OSError, match="No such file or directory"):
        _start(sandbox, ["no-such-command-here"], tmp_path / "missing.log", 3)


def test_containers_die_with_the_launcher_and_later_ones_start_without_it(sandbox, reaper, tmp_path):
    launcher = sandbox.launcher
    assert launcher is not None and launcher._proc is not None
    ended: dict[int, int | None] = {}
    first = _start(sandbox, ["sleep", "300"], tmp_path / "first.log")
    reaper.watch(first, lambda p: ended.__setitem__(p.pid, p.poll()))
    launcher._proc.send_signal(signal.SIGKILL)
    wait_for(lambda: first.pid in ended, what="the container ended with the launcher")
    assert ended[first.pid] == 137
    wait_for(lambda: not first.group_alive(), what="every process of the container gone")
    wait_for(lambda: not launcher.usable, what="the launcher known gone")

    after = _start(sandbox, ["sh", "-c", "exit 5"], tmp_path / "after.log", 2)
    assert not isinstance(after._popen, Launched)
    reaper.watch(after, lambda p: ended.__setitem__(p.pid, p.poll()))
    wait_for(lambda: after.pid in ended, what="the end of the container started without the launcher")
    assert ended[after.pid] == 5


def test_a_cgroup_the_relay_cannot_make_is_a_warning_and_the_container_runs_without_it(sandbox, reaper, tmp_path,
                                                                                        caplog):
    spec, _user, cgroup = sandbox.prepare(POD, {"name": "main"}, 1, ["true"], dict(ENV), "/")
    made = tmp_path / "made"
    # A folder that cannot be made (its cgroup.procs would be joined) and a limit file that cannot be written.
    spec["cgroup_setup"] = [*spec["cgroup_setup"], ("/proc/no-such/pod-x", []), (str(made), [("no-such", "1", False)]),
                            (str(made), [("quiet-one", "1", True)])]
    spec["cgroup_procs"] = [*spec["cgroup_procs"], "/proc/no-such/pod-x/cgroup.procs"]
    with caplog.at_level("WARNING", logger="mxjob_controller.local.kubelet.sandbox"):
        proc = ContainerProcess(Launch(["true"], ENV, "/", tmp_path / "c.log", spec, None, cgroup, sandbox.launcher))
    ended: dict[int, int | None] = {}
    reaper.watch(proc, lambda p: ended.__setitem__(p.pid, p.poll()))
    wait_for(lambda: proc.pid in ended, what="the container ended")
    assert ended[proc.pid] == 0
    assert made.is_dir()
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2, warned
    assert "cannot make cgroup /proc/no-such/pod-x (No such file or directory)" in warned[0]
    assert f"cannot write 1 to {made}/no-such (No such file or directory): that limit is not enforced" in warned[1]


def test_the_relay_makes_the_pods_places_whole_at_its_first_start(sandbox, reaper, tmp_path):
    """The pod's folder (its owner's alone) and its /tmp and /var/tmp (as /tmp is) are made by the relay, not the
    kubelet, with their modes from the start; a second start of the pod finds and shares them."""
    folder, _block = sandbox.places.of(POD)
    assert not folder.exists()   # nothing made by the kubelet
    ended: dict[int, int | None] = {}
    for instance in (1, 2):
        proc = _start(sandbox, ["sh", "-c", "stat -c %a /tmp /var/tmp; echo x >> /tmp/starts"],
                      tmp_path / f"{instance}.log", instance)
        reaper.watch(proc, lambda p: ended.__setitem__(p.pid, p.poll()))
        wait_for(lambda proc=proc: proc.pid in ended, what="the container ended")
        assert ended[proc.pid] == 0, (tmp_path / f"{instance}.log").read_text()
        assert (tmp_path / f"{instance}.log").read_text().split() == ["1777", "1777"]
    assert oct(folder.stat().st_mode & 0o7777) == "0o700"
    assert [oct((folder / name).stat().st_mode & 0o7777) for name in ("tmp", "var-tmp")] == ["0o1777", "0o1777"]
    assert (folder / "tmp" / "starts").read_text() == "x\nx\n"
