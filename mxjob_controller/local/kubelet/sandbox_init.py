"""The first process of every sandboxed container: builds the pod sandbox with Linux system calls, then runs the
container's command in it. The sandbox's launcher (``launcher.py``), started once as ``python -I -S -c BOOTSTRAP``,
runs this module's code and :func:`serve`, which forks the process for each container; where it does not run, the
kubelet starts one interpreter per container as ``python -I -S -c BOOTSTRAP FD`` (``sandbox.INIT_BOOTSTRAP``).
Either reads the code in ``marshal``'s format (built into the interpreter: JSON's import costs more than the rest
of the start), compiled once by the kubelet's own import of its text (never read from a file at each start:
nothing a pod could have written is ever executed), and calls :func:`run` on the spec sent through a pipe: a dict
built by ``sandbox.py``, what to build and the command with its environment (neither on a command line, which
every local user can read, nor in its environment, where the pod's ``LD_PRELOAD`` would load into a process still
privileged). Standard library only (the package is not loaded).

Three processes, each with one job:

- the **relay** (the process the launcher forked, or the kubelet started; leader of the container's process
  group): dies with its parent (``PR_SET_PDEATHSIG``; the launcher dies with the kubelet's thread that started it:
  a ``local up`` killed by SIGKILL takes it along). It makes the pod's places (``pod_places.py``) and the
  container's cgroups as ``cgroups.py`` planned them, off the kubelet's process (a cgroup it cannot make is a
  warning, the limit not enforced; a place it cannot make fails the start), then the *outer*
  mount namespace (and, when ``local up`` is not root, the outer user namespace, its root being ``local up``'s own
  user) and the PID namespace, and builds the container's view there: every mount read-only, the pod's own
  ``/tmp`` and ``/var/tmp`` bound writable, private ``/dev/shm`` and ``/run/lock``, the cluster's files covered. It
  then writes the inner user namespace's id maps for the init, waits for it and exits with its status. It ignores
  the signals the kubelet sends to the group (the container's processes get them);
- the **init**, PID 1 of the new PID namespace: dies with the relay, mounts the namespace's own ``/proc`` (while it
  is still as privileged as the relay), then enters the *inner* user namespace together with a new mount, IPC and
  UTS namespace, owned by it. The outer mount table, copied into a namespace owned by a less privileged user
  namespace, is locked by the kernel (``MNT_LOCKED``): no mount can be taken off to uncover what it covers, and no
  read-only mount made writable, whatever capability the pod holds in its own namespace. The init then becomes that
  namespace's root, forks the main process, reaps every orphan and exits with the main process's status. When it
  exits the kernel kills every process left in the namespace, ``setsid`` or not;
- the **main process**: joins the container's cgroups (through descriptors the relay opened before the file system
  went read-only), keeps only the container's capabilities in its bounding set (the runtime's default set, as
  ``securityContext.capabilities`` changes it), loads the seccomp filter of ``RuntimeDefault``, takes the
  container's user and groups, sets ``no_new_privs`` when privilege escalation is not allowed, enters its working
  directory and ``exec``s the command.

The inner user namespace maps the pod's ids to host ids no host user has (a block of 65,536 per pod, when
``local up`` is root), or to ``local up``'s own user (when it is not, and only that one id can be mapped): uid 0 in
a pod is never root on the host, and its capabilities count only inside its own namespaces.

What failed before the command ran is written to the status pipe (``status_fd``) as ``stage<TAB>message`` (the stage
``exec`` carries ``errno<TAB>strerror``); the pipe closes without a word on a successful ``exec``.
"""

import ctypes
import marshal
import os
import select
import signal
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID = 0x10000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MOUNT_ATTR_RDONLY, AT_RECURSIVE, AT_FDCWD = 0x1, 0x8000, -100
SYS_MOUNT_SETATTR = 442   # the same number on every architecture (new system calls are numbered alike)
PR_SET_PDEATHSIG, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 22, 24, 38, 47
SECCOMP_MODE_FILTER = 2
PR_CAP_AMBIENT_CLEAR_ALL = 4
#: The signals the kubelet sends to a container's process group: the relay must not die of them.
GROUP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
#: What Python set to SIG_IGN at start: the command gets the default back, as subprocess gives it.
PYTHON_IGNORED = (signal.SIGPIPE, signal.SIGXFSZ)
#: statvfs flags a remount must keep (a locked mount refuses to lose them) besides read-only.
_KEPT_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
               (os.ST_NOATIME, 1024), (os.ST_NODIRATIME, 2048), (os.ST_RELATIME, 1 << 21))

_libc = ctypes.CDLL(None, use_errno=True)


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]


class SetupError(Exception):
    """A step of building the sandbox failed: ``stage`` names it."""

    def __init__(self, stage, message):
        super().__init__(message)
        self.stage = stage


def _check(result, stage, what):
    if result != 0:
        err = ctypes.get_errno()
        raise SetupError(stage, f"{what}: {os.strerror(err)}")


def _mount(source, target, fstype, flags, data, stage="mount"):
    _check(_libc.mount(source and source.encode(), target.encode(), fstype and fstype.encode(),
                       ctypes.c_ulong(flags), data and data.encode()), stage, f"mount {target}")


def _die_with_parent():
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl", "PR_SET_PDEATHSIG")


def _write(path, text):
    """Bytes through descriptors, here and below: a codec is a lazy import, which a user switched to may no longer
    be able to read."""
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _unescape(field):
    """A mount point as mountinfo writes it (octal escapes for space, tab, newline, backslash) as a path."""
    out, i = bytearray(), 0
    while i < len(field):
        if field[i] == 0x5C and field[i + 1:i + 4].isdigit():
            out.append(int(field[i + 1:i + 4], 8))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return os.fsdecode(bytes(out))


def _set_read_only(path, read_only, recursive):
    """Make the mount at ``path`` (and every mount below it, ``recursive``) read-only or writable again."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY if read_only else 0, 0 if read_only else MOUNT_ATTR_RDONLY, 0, 0)
    result = _libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), AT_RECURSIVE if recursive else 0,
                           ctypes.byref(attr), ctypes.sizeof(attr))
    if result == 0:
        return
    if ctypes.get_errno() != 38:   # ENOSYS: a kernel before 5.12, remounted one mount at a time below
        _check(result, "mount", f"mount_setattr {path}")
    targets = [path]
    if recursive:
        points = [_unescape(line.split()[4]) for line in _read("/proc/self/mountinfo").splitlines()]
        targets = [p for p in points if p == path or p.startswith(path.rstrip("/") + "/")]
    for target in targets:
        try:
            st = os.statvfs(target)
        except OSError:
            continue   # a mount point covered by a later mount: not reachable, so nothing to change
        flags = MS_REMOUNT | MS_BIND | (MS_RDONLY if read_only else 0)
        flags |= sum(ms for st_flag, ms in _KEPT_FLAGS if st.f_flag & st_flag)
        _mount(None, target, None, flags, None)


def _map_outer_user(spec):
    """Without root: the outer user namespace, whose root is ``local up``'s own user (so it may build mounts)."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"0 {spec['host_uid']} 1")
    _write("/proc/self/gid_map", f"0 {spec['host_gid']} 1")


def _minimal_dev(nodes):
    """A /dev of a container's: a small tmpfs holding the device nodes ``nodes`` names (bound from the host's:
    null, zero, the random ones, tty, the GPUs'), a devpts of its own, and the usual links; no disk, no kernel log,
    no other host device."""
    found = [(name, os.open(f"/dev/{name}", os.O_PATH)) for name in nodes if os.path.exists(f"/dev/{name}")]
    _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k")
    for name, fd in found:
        os.close(os.open(f"/dev/{name}", os.O_CREAT | os.O_WRONLY, 0o644))   # what the node is bound over
        _mount(f"/proc/self/fd/{fd}", f"/dev/{name}", None, MS_BIND, None)
        os.close(fd)
    for folder in ("pts", "shm"):
        os.mkdir(f"/dev/{folder}", 0o755)
    _mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
    for link, target in (("ptmx", "pts/ptmx"), ("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"/dev/{link}")


def _build_mounts(spec):
    """The container's view of the file system, in the outer mount namespace: nothing propagates back to the host;
    the pod's own /tmp and /var/tmp; a /dev of its own; private /dev/shm and /run/lock; folders the container's
    user cannot pass through covered; what it needs inside them bound back; then everything read-only but the
    pod's own places; the cluster's own files covered last."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
    # Opened before anything covers them: each bind's source is reached through its descriptor.
    binds = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in spec.get("binds", ())]
    writable = [(path, os.open(source, os.O_PATH | os.O_DIRECTORY))
                for path, source in spec.get("writable_dirs", ()) if os.path.isdir(path)]
    empty = os.open(spec["hide_source"], os.O_PATH) if spec.get("hide_source") else None
    for path, fd in writable:
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND, None)
        os.close(fd)
    if spec.get("dev_nodes"):
        _minimal_dev(spec["dev_nodes"])
    private = [(path, size) for path, size in spec.get("private_dirs", ()) if os.path.isdir(path)]
    for path, size in private:
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={size}")
    for path in spec.get("covers", ()):
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=64k")
    os.umask(0o022)
    for path, fd in binds:
        os.makedirs(path, mode=0o755, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None)
        os.close(fd)
    _set_read_only("/", True, recursive=True)
    # What stays writable: the pod's own places (unless its root file system is to be read-only) and /proc, which
    # the init mounts anew (the kernel lets a user namespace mount proc only where it is as writable as here).
    keep = [path for path, _fd in writable] + [path for path, _size in private]
    if spec.get("read_only_root"):
        keep = [path for path in keep if path in spec.get("writable_when_read_only", ())]
    if spec.get("dev_nodes"):
        keep.append("/dev/pts")
    for path in [*keep, "/proc"]:
        _set_read_only(path, False, recursive=False)
    # Last, so that nothing mounted above can uncover them. A file is covered by an empty one nobody but the
    # cluster may read (opened before /tmp, where it lives, was covered).
    for path in spec.get("hide_files", ()):
        if os.path.isfile(path) and empty is not None:
            _mount(f"/proc/self/fd/{empty}", path, None, MS_BIND, None)
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None)
    for path in spec.get("hide_dirs", ()):
        if os.path.isdir(path):
            _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=000,size=4k")
    if empty is not None:
        os.close(empty)


def _make_dirs(dirs):
    """Make the pod's places the kubelet named (its folder, its /tmp and /var/tmp) where they are not there yet,
    each with its mode whole from the start (no umask: a container of the pod starting beside this one never finds
    a /tmp without its sticky bit); the container's own umask is put back."""
    umask = os.umask(0)
    try:
        for path, mode in dirs:
            try:
                os.mkdir(path, mode)
            except FileExistsError:
                pass
    finally:
        os.umask(umask)


def _make_cgroups(status_fd, setup):
    """Make the container's cgroups as ``cgroups.py`` planned them: each folder (a pod's before its instance's;
    one already there is used) and the limits written in it. What cannot be made or written is told as a warning
    and the container runs without it, as it ran before the relay made them; the folders not made are returned
    (their ``cgroup.procs`` is not joined)."""
    missing = set()
    for directory, writes in setup:
        try:
            os.mkdir(directory)
        except FileExistsError:
            pass
        except OSError as e:
            missing.add(directory)
            _warn(status_fd, f"cannot make cgroup {directory} ({e.strerror}): the container runs without its "
                             f"limits there")
            continue
        for name, value, quiet in writes:
            path = os.path.join(directory, name)
            try:
                _write(path, value)
            except OSError as e:
                if not quiet:
                    _warn(status_fd, f"cannot write {value} to {path} ({e.strerror}): that limit is not enforced")
    return missing


def _warn(status_fd, message):
    """A line the kubelet logs and goes on (``sandbox.split_warnings``), before any failure's report."""
    try:
        os.write(status_fd, f"warning\t{message}".replace("\n", " ").encode(errors="replace")[:4000] + b"\n")
    except OSError:
        pass


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


def _keep_capabilities(keep):
    """Drop from the bounding set every capability not in the mask ``keep``: an ``exec`` as root then gets exactly
    these, one as another user none (as a container runtime sets them)."""
    try:
        last = int(_read("/proc/sys/kernel/cap_last_cap"))
    except (OSError, ValueError):
        last = 40
    for cap in range(last + 1):
        if not keep >> cap & 1:
            _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "capabilities", f"dropping capability {cap}")
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)


def _main_process(spec, argv, env, status_fd, cgroups):
    """In the forked child of the init: become the container's process, then exec its command (never returns)."""
    try:
        for sig in GROUP_SIGNALS + PYTHON_IGNORED:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        for fd in cgroups:
            try:
                os.write(fd, b"0")
            except OSError as e:
                raise SetupError("cgroup", f"joining the container's cgroup: {e.strerror}") from None
            os.close(fd)
        _keep_capabilities(spec.get("capabilities", 0))
        if spec.get("seccomp"):   # while still root of the namespace (CAP_SYS_ADMIN there lets it load a filter)
            program = spec["seccomp"]
            fprog = _SockFprog(len(program) // 8, program)
            _check(_libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp",
                   "loading the RuntimeDefault seccomp filter")
        try:
            os.setgroups(spec.get("groups", []) if spec.get("set_groups") else [])
        except OSError:
            if spec.get("set_groups"):
                raise SetupError("user", "cannot set the container's supplementary groups") from None
        try:
            os.setresgid(spec["gid"], spec["gid"], spec["gid"])
            os.setresuid(spec["uid"], spec["uid"], spec["uid"])
        except OSError as e:
            raise SetupError("user", f"cannot run as {spec['uid']}:{spec['gid']}: {e.strerror}") from None
        if spec.get("no_new_privs"):
            _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl", "PR_SET_NO_NEW_PRIVS")
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


def _init(spec, argv, env, status_fd, alive_r, unshared_w, mapped_r, cgroups):
    """PID 1 of the namespace (never returns)."""
    try:
        _die_with_parent()
        if select.select([alive_r], [], [], 0)[0]:
            os._exit(137)  # the relay died before PR_SET_PDEATHSIG took hold
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None, "proc")
        _check(_libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS), "unshare",
               "unshare (the pod's user namespace)")
        os.write(unshared_w, b"u")
        os.close(unshared_w)
        if os.read(mapped_r, 1) != b"m":
            raise SetupError("user", "the pod's user namespace could not be mapped")
        os.close(mapped_r)
        if spec.get("set_groups"):
            # Root on the host until now: the namespace's root instead (a host id of the pod's block), with no host
            # group left, so that nothing in the pod (a ptrace of PID 1) can act as the host's root.
            os.setgroups([])
            os.setresgid(0, 0, 0)
            os.setresuid(0, 0, 0)
            _die_with_parent()   # a change of user clears the parent-death signal
            if select.select([alive_r], [], [], 0)[0]:
                os._exit(137)
        name = (spec.get("hostname") or "").encode()[:64]
        if name:
            _check(_libc.sethostname(name, len(name)), "setup", "sethostname")
    except SetupError as e:
        _report(status_fd, e.stage, str(e))
        os._exit(127)
    except OSError as e:
        _report(status_fd, "setup", f"{e.filename or ''}: {e.strerror}")
        os._exit(127)
    main = os.fork()
    if main == 0:
        os.close(alive_r)
        _main_process(spec, argv, env, status_fd, cgroups)
    for fd in cgroups:
        os.close(fd)
    os.close(status_fd)
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(127)
        if pid == main:
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _map_inner_user(spec, init):
    """The pod's user namespace (the init's, just made): its ids as ``sandbox.py`` chose them. Opened after the
    init entered it (a map file belongs to the namespace its process was in when opened); pid 1 is the init in the
    /proc it mounted, which the relay shares."""
    if not spec.get("set_groups"):
        _write(f"/proc/{init}/setgroups", "deny")
    _write(f"/proc/{init}/uid_map", spec["uid_map"])
    _write(f"/proc/{init}/gid_map", spec["gid_map"])


def _relay(spec, argv, env):
    status_fd = spec["status_fd"]
    try:
        _die_with_parent()
        if os.getppid() != spec["parent_pid"]:
            os._exit(137)  # the kubelet died before PR_SET_PDEATHSIG took hold
        for sig in GROUP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        _make_dirs(spec.get("make_dirs", ()))
        missing = _make_cgroups(status_fd, spec.get("cgroup_setup", ()))
        # The cgroup files the main process joins, opened on the host's mounts: a descriptor open for writing on a
        # mount of the new namespace would keep it from being made read-only.
        cgroups = [os.open(procs, os.O_WRONLY) for procs in spec.get("cgroup_procs", ())
                   if os.path.dirname(procs) not in missing]
        flags = CLONE_NEWNS | CLONE_NEWPID | (CLONE_NEWUSER if spec.get("outer_userns") else 0)
        _check(_libc.unshare(flags), "unshare", "unshare")
        if spec.get("outer_userns"):
            _map_outer_user(spec)
        _build_mounts(spec)
    except SetupError as e:
        _report(status_fd, e.stage, str(e))
        os._exit(127)
    except OSError as e:
        _report(status_fd, "setup", f"{e.filename or ''}: {e.strerror}")
        os._exit(127)
    alive_r, alive_w = os.pipe()
    unshared_r, unshared_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    init = os.fork()
    if init == 0:
        for fd in (alive_w, unshared_r, mapped_w):
            os.close(fd)
        _init(spec, argv, env, status_fd, alive_r, unshared_w, mapped_r, cgroups)
    for fd in [alive_r, unshared_w, mapped_r, status_fd, *cgroups]:
        os.close(fd)
    try:
        if os.read(unshared_r, 1) == b"u":   # else the init failed, and said why
            _map_inner_user(spec, 1)
            os.write(mapped_w, b"m")
    except OSError:
        pass   # the init reads EOF and reports it
    os.close(mapped_w)
    os.close(unshared_r)
    while True:
        pid, status = os.waitpid(init, 0)
        if pid == init:
            os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def run(spec):
    """Build the sandbox ``spec`` describes and run its command in it (the relay exits with the container)."""
    _relay(spec, spec.pop("argv"), spec.pop("env"))
    return 127


def _launched(parent, fds, closing):
    """In a child the launcher forked: become what ``Popen`` made before (a session of its own, the log as stdout
    and stderr, /dev/null as stdin, ``/`` as working directory, no other descriptor), read the spec, run it."""
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        spec_r, status_w, out = fds
        for fd in closing:
            os.close(fd)
        os.setsid()
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(out, 2)
        keep = sorted({spec_r, status_w})
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, os.sysconf("SC_OPEN_MAX"))
        os.chdir("/")
        chunks = []
        while chunk := os.read(spec_r, 1 << 16):
            chunks.append(chunk)
        os.close(spec_r)
        spec = marshal.loads(b"".join(chunks))
        spec["status_fd"], spec["parent_pid"] = status_w, parent
        run(spec)
    except BaseException:   # nothing of the launcher's may go on in its child
        pass
    os._exit(127)


def _tell(sock, text):
    """Send the kubelet a message; if it is gone (its end closed while a child ended), so is the launcher: quietly,
    its children die with it."""
    try:
        sock.send(text.encode())
    except OSError:
        os._exit(0)


def serve(control_fd, kubelet_pid):
    """The launcher (``sandbox.py``'s ``Launcher``): one process, started once, that forks each container's relay
    instead of a new interpreter per container (an interpreter's start was most of a sandboxed start's CPU). It dies
    with the kubelet's thread that started it, and its children die with it. Messages on ``control_fd`` (a
    ``SOCK_SEQPACKET`` socket the kubelet holds the other end of): ``start ID`` with three descriptors (the spec's
    pipe, the status pipe, the log) forks a relay and answers ``pid ID PID`` (``fail ID ERRNO`` if the fork
    failed); each child's end is told as ``exit PID STATUS`` (a ``waitpid`` status). EOF: the kubelet is gone."""
    import socket  # noqa: PLC0415 - the launcher's alone: a container's own interpreter never needs it

    _die_with_parent()
    if os.getppid() != kubelet_pid:
        os._exit(137)
    sock = socket.socket(fileno=control_fd)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _sig, _frame: None)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):   # a Ctrl-C at local up's terminal is not for it
        signal.signal(sig, signal.SIG_IGN)
    me = os.getpid()
    room = socket.CMSG_SPACE(3 * 4)
    while True:
        readable = select.select([sock, wake_r], [], [])[0]
        if wake_r in readable:
            try:
                while os.read(wake_r, 4096):
                    pass
            except BlockingIOError:
                pass
            while True:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                _tell(sock, f"exit {pid} {status}")
        if sock in readable:
            try:
                message, ancillary, _flags, _address = sock.recvmsg(256, room)
            except OSError:
                message, ancillary = b"", []
            if not message:   # the kubelet is gone: so is the launcher, and its children with it
                os._exit(0)
            fds = []
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.extend(int.from_bytes(data[i:i + 4], sys.byteorder) for i in range(0, len(data) - 3, 4))
            request = message.decode().split()
            if request[:1] != ["start"] or len(request) != 2 or len(fds) != 3:
                for fd in fds:
                    os.close(fd)
                continue
            try:
                pid = os.fork()
            except OSError as e:
                _tell(sock, f"fail {request[1]} {e.errno}")
                pid = None
            if pid == 0:
                _launched(me, fds, (sock.fileno(), wake_r, wake_w))
            for fd in fds:
                os.close(fd)
            if pid is not None:
                _tell(sock, f"pid {request[1]} {pid}")


def main(args):
    if len(args) != 1 or not args[0].isdigit():
        print("usage: sandbox_init FD (a marshalled spec to read from descriptor FD)", file=sys.stderr)
        return 2
    with os.fdopen(int(args[0]), "rb") as f:
        spec = marshal.loads(f.read())
    return run(spec)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
