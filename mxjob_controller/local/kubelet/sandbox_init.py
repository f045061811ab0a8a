"""The first process of every sandboxed container: builds the pod sandbox with Linux system calls, then runs the
container's command in it. Run by the kubelet as ``python -I -S sandbox_init.py FD``: standard library only (it is not
imported, so the package is not loaded); it reads from descriptor ``FD`` a dict built by ``sandbox.py``, in
``marshal``'s format (built into the interpreter: reading it costs no import, JSON's costs more than the rest of the
start): what to build, and the command with its environment (neither on its own command line, which every local
user can read, nor in its environment, where the pod's ``LD_PRELOAD`` would load into a process still root).

Three processes, each with one job:

- the **relay** (the process the kubelet started, leader of the container's process group): dies with the thread
  that started it (``PR_SET_PDEATHSIG``: a ``local up`` killed by SIGKILL takes it along), creates the namespaces
  (mount and PID; a user namespace too when not root), builds the mount table, forks the init, waits for it and
  exits with its status. It ignores the signals the kubelet sends to the group (the container's processes get them);
- the **init**, PID 1 of the new PID namespace: dies with the relay (``PR_SET_PDEATHSIG`` again), mounts the
  namespace's own ``/proc``, forks the main process, reaps every orphan and exits with the main process's status.
  When it exits the kernel kills every process left in the namespace, ``setsid`` or not: nothing outlives the
  container. As PID 1 it ignores signals it has no handler for, so the group's SIGTERM reaches only the others;
- the **main process**: joins the container's cgroups, takes the container's user and groups, enters its working
  directory and ``exec``s the command. It stays in the relay's process group (a signal to the group reaches it and
  every descendant that did not leave the group, as without the sandbox).

What failed before the command ran is written to the status pipe (``status_fd``) as ``stage<TAB>message`` (the stage
``exec`` carries ``errno<TAB>strerror``); the pipe closes without a word on a successful ``exec``.
"""

import ctypes
import marshal
import os
import select
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
#: The signals the kubelet sends to a container's process group: the relay must not die of them.
GROUP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: What Python set to SIG_IGN at start: the command gets the default back, as subprocess gives it.
PYTHON_IGNORED = (signal.SIGPIPE, signal.SIGXFSZ)

_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(Exception):
    """A step of building the sandbox failed: ``stage`` names it."""

    def __init__(self, stage, message):
        super().__init__(message)
        self.stage = stage


def _check(result, stage, what):
    if result != 0:
        err = ctypes.get_errno()
        raise SetupError(stage, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data, stage):
    _check(_libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                       ctypes.c_ulong(flags), data and data.encode()), stage, f"mount {target}")


def _die_with_parent():
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl", "PR_SET_PDEATHSIG")


def _write(path, text):
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def _map_user(spec):
    """Without root: the container's uid and gid are the caller's own, seen inside as the ones the pod asked for."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{spec['uid']} {spec['host_uid']} 1")
    _write("/proc/self/gid_map", f"{spec['gid']} {spec['host_gid']} 1")


def _build_mounts(spec):
    """The container's view of the file system: nothing propagates back to the host; private temporary
    directories; folders the container's user cannot pass through covered; what it needs inside them (its working
    directory, the interpreter) bound back; the cluster's own files hidden."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None, "mount")
    # Opened before anything covers them: the bind's source is reached through the descriptor.
    binds = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in spec.get("binds", ())]
    empty = os.open(spec["hide_source"], os.O_PATH) if spec.get("hide_source") else None
    for path in spec.get("private_dirs", ()):
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", "mount")
    for path in spec.get("covers", ()):
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=64k", "mount")
    os.umask(0o022)
    for path, fd in binds:
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None, "mount")
        os.close(fd)
    # Last, so that a bind brought back above cannot uncover them. A file is covered by an empty one nobody but
    # root may read (opened before /tmp, where it lives, was covered).
    for path in spec.get("hide_files", ()):
        if os.path.isfile(path) and empty is not None:
            _mount(f"/proc/self/fd/{empty}", path, None, MS_BIND, None, "mount")
    for path in spec.get("hide_dirs", ()):
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=000,size=4k", "mount")


def _report(status_fd, stage, message):
    try:
        os.write(status_fd, f"{stage}\t{message}".encode(errors="replace")[:4000])
    except OSError:
        pass


def _exec(argv, env):
    """``execvpe`` without its imports (the user may no longer read this interpreter's library): the error of the
    most telling attempt if none succeeded."""
    name = argv[0]
    if "/" in name:
        candidates = [name]
    else:
        candidates = [os.path.join(d or ".", name) for d in env.get("PATH", os.defpath).split(os.pathsep)]
    error = None
    for path in candidates:
        try:
            os.execve(path, argv, env)
        except OSError as e:
            if error is None or e.errno not in (2, 20):   # ENOENT, ENOTDIR: keep looking, report others first
                error = e if error is None or error.errno in (2, 20) else error
    return error or OSError(2, "No such file or directory")


def _main_process(spec, argv, env, status_fd):
    """In the forked child of the init: become the container's process, then exec its command (never returns)."""
    try:
        for sig in GROUP_SIGNALS + PYTHON_IGNORED:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for procs in spec.get("cgroup_procs", ()):
            try:
                _write(procs, "0")
            except OSError as e:
                raise SetupError("cgroup", f"joining {os.path.dirname(procs)}: {e.strerror}") from None
        if spec.get("no_new_privs"):
            _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl", "PR_SET_NO_NEW_PRIVS")
        if not spec.get("userns") and spec.get("switch_user"):
            try:
                os.setgroups(spec.get("groups", []))
                os.setresgid(spec["gid"], spec["gid"], spec["gid"])
                os.setresuid(spec["uid"], spec["uid"], spec["uid"])
            except OSError as e:
                raise SetupError("user", f"cannot run as {spec['uid']}:{spec['gid']}: {e.strerror}") from None
        try:
            os.chdir(spec["cwd"])
        except OSError as e:
            raise SetupError("chdir", f"chdir to cwd ({spec['cwd']!r}) set in config.json failed: {e.strerror}") \
                from None
        os.set_inheritable(status_fd, False)   # closed by a successful exec: the kubelet reads EOF
        error = _exec(argv, env)
        _report(status_fd, "exec", f"{error.errno}\t{error.strerror}")
    except SetupError as e:
        _report(status_fd, e.stage, str(e))
    except BaseException as e:  # whatever it is, the kubelet must hear of it
        _report(status_fd, "setup", repr(e))
    os._exit(127)


def _init(spec, argv, env, status_fd, alive_r):
    """PID 1 of the namespace (never returns)."""
    try:
        _die_with_parent()
        if select.select([alive_r], [], [], 0)[0]:
            os._exit(137)  # the relay died before PR_SET_PDEATHSIG took hold
        if spec.get("mount_proc"):
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None, "proc")
    except SetupError as e:
        _report(status_fd, e.stage, str(e))
        os._exit(127)
    main = os.fork()
    if main == 0:
        os.close(alive_r)
        _main_process(spec, argv, env, status_fd)
    os.close(status_fd)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(127)
        if pid == main:
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _relay(spec, argv, env):
    status_fd = spec["status_fd"]
    try:
        _die_with_parent()
        if os.getppid() != spec["parent_pid"]:
            os._exit(137)  # the kubelet died before PR_SET_PDEATHSIG took hold
        for sig in GROUP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        flags = CLONE_NEWNS | CLONE_NEWPID | (CLONE_NEWUSER if spec.get("userns") else 0)
        _check(_libc.unshare(flags), "unshare", "unshare")
        if spec.get("userns"):
            _map_user(spec)
        _build_mounts(spec)
    except SetupError as e:
        _report(status_fd, e.stage, str(e))
        os._exit(127)
    except OSError as e:
        _report(status_fd, "setup", f"{e.filename or ''}: {e.strerror}")
        os._exit(127)
    alive_r, alive_w = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(alive_w)
        _init(spec, argv, env, status_fd, alive_r)
    os.close(alive_r)
    os.close(status_fd)
    while True:
        pid, status = os.waitpid(init, 0)
        if pid == init:
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def main(args):
    if len(args) != 1 or not args[0].isdigit():
        print("usage: sandbox_init.py FD (a marshalled spec to read from descriptor FD)", file=sys.stderr)
        return 2
    with os.fdopen(int(args[0]), "rb") as f:
        spec = marshal.loads(f.read())
    _relay(spec, spec.pop("argv"), spec.pop("env"))
    return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
