"""The local kubelet's container runtime: a container is a process group on this machine, in the pod sandbox
(``sandbox.py``: the group is then the sandbox's relay and init and the container's main process) or not.

Guarantees:
- every container runs in a session (and so a process group) of its own, whose id is its pid: a signal sent to the
  container reaches every process it started, however deep, unless one left the group on purpose;
- its standard output and error both go to one log file, opened before the process starts (nothing is lost to a
  pipe nobody reads);
- its exit status is reported as Kubernetes reports it: the exit code, or 128+N when signal N ended it;
- :class:`Reaper` notices every exit on one thread (a pidfd per process, polled; for a relay the sandbox's
  launcher forked, its word), so a pod needs no thread per container to wait on it; each exit is reported exactly
  once, to the callback given at :meth:`Reaper.watch`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mxjob_controller.local.kubelet import sandbox
from mxjob_controller.local.kubelet.launcher import Launched

log = logging.getLogger(__name__)

_POLL_SLICE = 0.5   # the reaper's longest wait: how soon it sees stop() and newly watched processes


def exit_code(returncode: int) -> int:
    """A process's status as the container's ``exitCode``: ``-N`` (killed by signal N) becomes ``128 + N``."""
    return 128 - returncode if returncode < 0 else returncode


@dataclass(frozen=True, slots=True)
class Launch:
    """What to run for one container instance: in the pod sandbox (``sandbox_spec``, see ``sandbox.py``), or as a
    plain process group (as ``user``: uid, gid and groups, when that needs a switch)."""

    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: str
    log_path: Path
    sandbox_spec: dict[str, Any] | None = None
    user: tuple[int, int, tuple[int, ...]] | None = None
    cgroup: Any = None
    launcher: Any = None    # the sandbox's launcher (launcher.py) that forks the relay, if it runs


def _make_log_folder(folder: str) -> None:
    """Make a container's log folder, its pod's first (``pathlib``'s ``mkdir(parents=True)`` tried the container's
    first, failed and came back: a system call more each start, each a hand-off of the kubelet's core)."""
    try:
        os.mkdir(os.path.dirname(folder))
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(os.path.dirname(folder), exist_ok=True)
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder)


class ContainerProcess:
    """One running container instance: a process leading its own process group."""

    def __init__(self, launch: Launch) -> None:
        _make_log_folder(str(launch.log_path.parent))
        out = os.open(launch.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
        try:
            if launch.sandbox_spec is not None:
                self._popen: subprocess.Popen | Launched = sandbox.launch(launch.sandbox_spec, out, launch.launcher)
            else:
                # start_new_session: setsid() in the child, so the group can be signalled as a whole and a Ctrl-C
                # meant for the local cluster's terminal never reaches the containers directly.
                user = {"user": launch.user[0], "group": launch.user[1], "extra_groups": list(launch.user[2])} \
                    if launch.user is not None else {}
                self._popen = subprocess.Popen(list(launch.argv), env=dict(launch.env), cwd=launch.cwd,
                                               stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                               start_new_session=True, close_fds=True, **user)
        finally:
            os.close(out)
        self.pid = self._popen.pid
        self.cgroup = launch.cgroup
        self.log_path = launch.log_path
        self.started = time.time()
        self.finished: float | None = None
        self.returncode: int | None = None
        # Monotonic time of the last signal_group, and first of the start: a reading of /proc taken before the
        # group existed cannot say it is gone (from 0.0, a cached one a moment older than the start did).
        self._signalled = time.monotonic()

    def poll(self) -> int | None:
        """The exit code once the process has ended (and is reaped), else None."""
        if self.returncode is None:
            code = self._popen.poll()
            if code is not None:
                self.returncode = exit_code(code)
                self.finished = time.time()
        return self.returncode

    def settle(self, timeout: float) -> int | None:
        """The exit code of a container whose group is gone, waiting up to ``timeout`` seconds for it: /proc says a
        group is gone as soon as its leader is a zombie, but a relay's status comes from the launcher, which
        reaps it and tells the kubelet's thread a moment later. Read too soon, a container SIGTERM ended (143)
        was reported as never found (137, ``ContainerStatusUnknown``) under load."""
        if self.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._popen.wait(timeout)
        return self.poll()

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to every process of the container's group (its leader may already be gone)."""
        self._signalled = time.monotonic()
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def group_alive(self) -> bool:
        """Whether any process of the group is left (the leader reaped or not), zombies aside: a process of the
        group that has ended but was not yet reaped by whoever adopted it (a sandboxed container's processes,
        orphaned when its namespace's init ends, go to this machine's init, which may take seconds to reap) runs
        nothing and holds nothing but its pid. Counting it kept a stopping pod waiting out its grace period
        (issue 48: `local run`'s end took 1.3-2 s longer in one run out of three). A relay the launcher forked is
        its child, not ours: its zombie waits for the launcher to reap it and for the kubelet's thread to read that
        it did, so the relay's own word (``poll``) is not asked; /proc says whether anything of the group runs
        (at a 1,000-pod kubelet's stop, the launcher blocked on a full socket left 615 groups of zombies that
        counted as alive until the stop gave up on them)."""
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        if isinstance(self._popen, Launched):
            return _live_member(self.pid, self._signalled)
        return self.poll() is None or _live_member(self.pid, self._signalled)

    def notifies(self, callback: Callable[[], None]) -> bool:
        """Whether ``callback()`` will be called once the process has ended (a relay the launcher forked: it is not
        this process's child, and its end is known when the launcher tells it, not when a pidfd says it)."""
        if isinstance(self._popen, Launched):
            self._popen.on_exit(callback)
            return True
        return False

    def pidfd(self) -> int | None:
        try:
            return os.pidfd_open(self.pid)
        except (OSError, AttributeError):
            return None  # already reaped, or no pidfd on this kernel: the reaper polls instead


class Reaper:
    """One thread that notices containers' exits and calls back; named ``kubelet-reaper``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watched: dict[int, tuple[ContainerProcess, int | None, Callable[[ContainerProcess], None]]] = {}
        self._told: set[int] = set()          # pids whose end is told (notifies), not seen on a pidfd
        self._ended_pids: set[int] = set()    # ... and told ended, not handled yet
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kubelet-reaper", daemon=True)

    def start(self) -> Reaper:
        self._thread.start()
        return self

    def watch(self, proc: ContainerProcess, on_exit: Callable[[ContainerProcess], None]) -> None:
        """Call ``on_exit(proc)`` (on the reaper's thread) once ``proc`` has ended."""
        told = proc.notifies(lambda: self._ended(proc.pid))
        with self._lock:
            self._watched[proc.pid] = (proc, None if told else proc.pidfd(), on_exit)
            if told:
                self._told.add(proc.pid)
        os.write(self._wake_w, b"x")

    def _ended(self, pid: int) -> None:
        with self._lock:   # under the lock: stop() closes the pipe under it, and its number may be reused
            self._ended_pids.add(pid)
            if not self._closed:
                os.write(self._wake_w, b"x")

    def stop(self, timeout: float) -> bool:
        self._stop.set()
        os.write(self._wake_w, b"x")
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        with self._lock:
            for _proc, fd, _cb in self._watched.values():
                if fd is not None:
                    os.close(fd)
            self._watched.clear()
            self._closed = True
            os.close(self._wake_r)
            os.close(self._wake_w)
        return True

    def _loop(self) -> None:
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        registered: set[int] = set()
        while not self._stop.is_set():
            with self._lock:
                watched = dict(self._watched)
            fds = {fd for _p, fd, _cb in watched.values() if fd is not None}
            for fd in fds - registered:
                poller.register(fd, select.POLLIN)
            for fd in registered - fds:
                poller.unregister(fd)
            registered = fds
            # Without a pidfd (or a word at its end) for every process, poll them all every slice.
            with self._lock:
                told = set(self._told)
            slice_ms = int(_POLL_SLICE * 1000) \
                if all(fd is not None or pid in told for pid, (_p, fd, _c) in watched.items()) else 100
            ready = set()
            for fd, _events in poller.poll(slice_ms):
                if fd == self._wake_r:
                    os.read(self._wake_r, 4096)
                else:
                    ready.add(fd)
            with self._lock:
                ended = set(self._ended_pids)   # each taken out once handled below (watch() may not have put it in yet)
            for pid, (proc, fd, on_exit) in watched.items():
                # Only a process whose pidfd (or launcher) says it ended, or one without either, is asked: each
                # watch() wakes the loop, and asking all of them then was quadratic in a burst of starts (400 pods:
                # 80,000 waitpids).
                if (fd is not None and fd not in ready) or (pid in told and pid not in ended) or proc.poll() is None:
                    continue
                with self._lock:
                    self._watched.pop(pid, None)
                    self._told.discard(pid)
                    self._ended_pids.discard(pid)
                if fd is not None:
                    poller.unregister(fd)
                    registered.discard(fd)
                    os.close(fd)
                try:
                    on_exit(proc)
                except Exception:
                    log.exception("handling the exit of process %d failed", pid)


_SCAN_FRESH = 0.05   # seconds one reading of /proc answers for every group being stopped
_scan_lock = threading.Lock()
_last_scan: tuple[float, frozenset[int] | None] = (float("-inf"), None)


def _live_groups() -> tuple[float, frozenset[int] | None]:
    """(when read, the process groups that have a process other than a zombie) from /proc, read at most every
    :data:`_SCAN_FRESH` seconds whoever asks (None where /proc cannot be read). One reading for all: each pod being
    stopped read every process's stat for itself, 50 times a second, so stopping a 1,000-pod job read some
    2,000 files a million times (minutes of CPU). A reading up to that old only makes a stop notice a group's end
    that much later."""
    global _last_scan
    with _scan_lock:
        taken, groups = _last_scan
        if time.monotonic() - taken < _SCAN_FRESH:
            return taken, groups
        try:
            entries = os.listdir("/proc")
        except OSError:
            _last_scan = (time.monotonic(), None)
            return _last_scan
        found: set[int] = set()
        for entry in entries:
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue   # gone meanwhile
            if len(fields) > 2 and fields[0] != b"Z":
                found.add(int(fields[2]))
        _last_scan = (time.monotonic(), frozenset(found))
        return _last_scan


def _live_member(group: int, signalled: float) -> bool:
    """Whether a process of process group ``group`` is not a zombie (read from /proc; True where it cannot be read:
    the group then counts as alive, as before). Only a reading taken after the group was last ``signalled`` (a
    monotonic time) can say it is gone; an older one says it may be alive, and the caller asks again."""
    taken, groups = _live_groups()
    return groups is None or taken < signalled or group in groups


def terminate_groups(procs: Sequence[ContainerProcess], grace: float) -> list[ContainerProcess]:
    """SIGTERM every group, wait up to ``grace`` seconds for them all to end, then SIGKILL what is left; returns
    once every group is gone, or 5 s after the SIGKILL with the survivors (a warning names them)."""
    for proc in procs:
        proc.signal_group(signal.SIGTERM)
    return kill_groups(wait_gone(procs, time.monotonic() + max(0.0, grace)))


def kill_groups(procs: Sequence[ContainerProcess], wait: float = 5.0) -> list[ContainerProcess]:
    """SIGKILL every group and wait (up to ``wait`` seconds) until no process of them is left; the survivors."""
    for proc in procs:
        proc.signal_group(signal.SIGKILL)
    left = wait_gone(procs, time.monotonic() + wait, interval=0.02)
    if left:
        log.warning("processes still alive after SIGKILL: groups %s", ", ".join(str(p.pid) for p in left))
    return left


def wait_gone(procs: Sequence[ContainerProcess], deadline: float,
              interval: float = 0.05) -> list[ContainerProcess]:
    """Wait until every group has ended or the monotonic ``deadline`` has passed; the groups still alive. Each
    round asks only the groups not yet seen gone (a 1,000-pod kubelet's stop asked them all every round)."""
    left = list(procs)
    while True:
        left = [proc for proc in left if proc.group_alive()]   # group_alive reaps a leader that is our child
        now = time.monotonic()
        if not left or now >= deadline:
            return left
        time.sleep(min(interval, deadline - now))
