"""The sandbox's launcher: one long-lived process that forks each sandboxed container's relay
(``sandbox_init.serve``), so that a container's start costs a ``fork`` of a small single-threaded process rather
than a new interpreter (with ``ctypes``) per container: in a burst of 400 pods those starts were about 15 ms of
CPU each, on the core the kubelet's own process did not use (issue 48).

Why not fork the kubelet itself: it is a large process with hundreds of threads, where only ``fork`` + ``exec``
is safe. The launcher is started once, by the thread of its own that reads its messages (``kubelet-launcher``): it
dies with that thread (``PR_SET_PDEATHSIG``), and every relay it forked dies with it, as each relay died with
the kubelet's thread that started it before. What a relay gets is what ``Popen`` gave it (a session of its own, the
log as stdout and stderr, nothing else open, an empty environment, ``/``); the spec still comes through a pipe of
its own, never a command line or environment.

A relay is not the kubelet's child, so its end is told by the launcher (``exit PID STATUS``): :class:`Launched`
answers ``poll``/``wait`` as ``Popen`` does from that, and calls back on exit (the reaper's wake-up). If the
launcher is gone (killed), its relays are gone with it: each is then reported ended by SIGKILL.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout

log = logging.getLogger(__name__)

#: What the launcher runs (``-c``): the init's code (read from the descriptor its first argument names), then
#: ``serve`` on the control socket its second names.
BOOTSTRAP = ("import marshal, os, sys\n"
             "with os.fdopen(int(sys.argv[1]), 'rb') as f:\n"
             "    code = marshal.loads(f.read())\n"
             "init = {'__name__': 'sandbox_init'}\n"
             "exec(code, init)\n"
             "init['serve'](int(sys.argv[2]), int(sys.argv[3]))\n")
_READY_TIMEOUT = 10.0
_ANSWER_TIMEOUT = 10.0
_KILLED = -9   # Popen's returncode of a process SIGKILL ended


class LauncherGoneError(OSError):
    """The launcher is not running (any more): the start goes the old way."""


class Launched:
    """A relay the launcher forked, answering as ``subprocess.Popen`` does (``pid``, ``poll``, ``wait``)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = threading.Event()
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def on_exit(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once the process has ended (at once if it has)."""
        with self._lock:
            if self.returncode is None:
                self._callbacks.append(callback)
                return
        callback()

    def _ended_with(self, returncode: int) -> None:
        with self._lock:
            if self.returncode is not None:
                return
            self.returncode = returncode
            callbacks, self._callbacks = self._callbacks, []
        self._ended.set()
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("a callback on the exit of process %d failed", self.pid)


class Launcher:
    """The launcher process and the thread that started it and reads what it says (see the module)."""

    def __init__(self, init_code: bytes) -> None:
        self._init_code = init_code
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._answers: dict[str, Future[int]] = {}
        self._running: dict[int, Launched] = {}
        self._early: dict[int, int] = {}          # pid → status told before its start was answered (never, in order)
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen | None = None
        self._ready: Future[bool] = Future()
        self._gone = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelet-launcher", daemon=True)

    def start(self) -> bool:
        """Start it; whether it runs (if not, containers start as before, one interpreter each)."""
        self._thread.start()
        try:
            return self._ready.result(_READY_TIMEOUT)
        except FutureTimeout:
            log.warning("the sandbox's launcher did not start within %gs: containers start one interpreter each",
                        _READY_TIMEOUT)
            return False

    @property
    def usable(self) -> bool:
        return self._ready.done() and self._ready.result() and not self._gone.is_set()

    def launch(self, spec_r: int, status_w: int, stdout: int) -> Launched:
        """Fork a relay that reads its spec from ``spec_r``, reports on ``status_w`` and logs to ``stdout`` (the
        caller keeps and closes its descriptors); LauncherGoneError if the launcher cannot."""
        sock = self._sock
        if sock is None or not self.usable:
            raise LauncherGoneError(0, "the sandbox's launcher is not running")
        answer: Future[int] = Future()
        with self._lock:
            request = str(next(self._ids))
            self._answers[request] = answer
        try:
            sock.sendmsg([f"start {request}".encode()],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                           b"".join(fd.to_bytes(4, sys.byteorder) for fd in (spec_r, status_w, stdout)))])
            pid = answer.result(_ANSWER_TIMEOUT)
        except (OSError, FutureTimeout) as e:
            raise LauncherGoneError(0, f"the sandbox's launcher did not start the container: {e}") from None
        finally:
            with self._lock:
                self._answers.pop(request, None)
        return self._registered(pid)

    def close(self, timeout: float = 5.0) -> None:
        """End the launcher (its relays, if any are left, die with it) and its thread."""
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread.ident is not None:
            self._thread.join(timeout)
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(timeout)

    # --- the thread ------------------------------------------------------------------------------------------

    def _registered(self, pid: int) -> Launched:
        proc = Launched(pid)
        with self._lock:
            early = self._early.pop(pid, None)
            if early is None:
                self._running[pid] = proc
        if early is not None:
            proc._ended_with(os.waitstatus_to_exitcode(early))
        return proc

    def _run(self) -> None:
        try:
            self._sock = self._spawn()
        except OSError as e:
            log.warning("the sandbox's launcher cannot start (%s): containers start one interpreter each", e)
            self._ready.set_result(False)
            return
        self._ready.set_result(True)
        try:
            self._read(self._sock)
        finally:
            self._gone.set()
            self._end_all()
            self._sock.close()

    def _spawn(self) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        code_r, code_w = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", BOOTSTRAP, str(code_r), str(theirs.fileno()), str(os.getpid())],
                env={}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                pass_fds=(code_r, theirs.fileno()), cwd="/")
        except OSError:
            ours.close()
            os.close(code_w)
            raise
        finally:
            theirs.close()
            os.close(code_r)
        with os.fdopen(code_w, "wb") as f:
            f.write(self._init_code)
        return ours

    def _read(self, sock: socket.socket) -> None:
        while True:
            try:
                message = sock.recv(256)
            except OSError:
                return
            if not message:
                return
            words = message.decode(errors="replace").split()
            if len(words) != 3:
                continue
            kind, first, second = words
            if kind == "pid":
                with self._lock:
                    answer = self._answers.get(first)
                if answer is not None:
                    answer.set_result(int(second))
            elif kind == "fail":
                with self._lock:
                    answer = self._answers.get(first)
                if answer is not None:
                    answer.set_exception(OSError(int(second), os.strerror(int(second))))
            elif kind == "exit":
                pid, status = int(first), int(second)
                with self._lock:
                    proc = self._running.pop(pid, None)
                    if proc is None:
                        self._early[pid] = status
                if proc is not None:
                    proc._ended_with(os.waitstatus_to_exitcode(status))

    def _end_all(self) -> None:
        """The launcher is gone, and its relays with it (``PR_SET_PDEATHSIG``): each ended as SIGKILL ends one."""
        with self._lock:
            running, self._running = list(self._running.values()), {}
            answers = list(self._answers.values())
        for answer in answers:
            if not answer.done():
                answer.set_exception(LauncherGoneError(0, "the sandbox's launcher ended"))
        for proc in running:
            proc._ended_with(_KILLED)
        if self._proc is not None:
            try:
                self._proc.wait(_READY_TIMEOUT)
            except subprocess.TimeoutExpired:
                self._proc.kill()
