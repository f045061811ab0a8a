"""The pod sandbox: what the local kubelet puts around each container, as a container runtime would, with what Linux
offers a process directly (namespaces, mounts and cgroups through system calls: no daemon, no extra package).

Why direct system calls rather than ``bubblewrap`` (a tool made for this, but one more package every machine and CI
would install) or the ``unshare`` command (it cannot make the mounts, run an init that forwards nothing and reaps
orphans, or report why a start failed): ``sandbox_init.py``, run by this project's own interpreter, does all of it,
in a process the sandbox's launcher forks for each container (``launcher.py``: one interpreter started once, its
code compiled once by the kubelet), or, where the launcher does not run, in an interpreter of the container's own.

Each container gets (``sandbox_init.py`` builds it):

- a user namespace of its pod's (kube's ``hostUsers: false``): uid 0 inside is an unprivileged host user
  (``security_context.py``: a block of host ids per pod when ``local up`` is root, else ``local up``'s own user),
  and the capabilities a container runtime gives (containerd's default set, as ``securityContext.capabilities``
  changes it) count only inside the pod's own namespaces;
- a PID namespace of its own whose init dies with ``local up`` (even by SIGKILL) and takes every process of the
  container with it when the main process ends (``setsid`` cannot escape); IPC and UTS namespaces of its own (the
  hostname is the pod's);
- a ``/dev`` of its own (the runtime's default devices, the GPUs', a devpts of its own: no disk, no kernel log);
- a mount namespace where every host file is read-only (the checkout, ``.venv``, ``/etc``, the working directory),
  but for the pod's own places (``pod_places.py``: ``/tmp`` and ``/var/tmp``, kept across its containers'
  restarts) and a private ``/dev/shm`` and ``/run/lock``; the cluster's own files (TLS material, kubeconfigs,
  token directories, audit log, the kubelet's logs and the pods' places) are covered. The mounts are made in an
  outer namespace the pod does not own: in the pod's they are locked, so no capability it holds can take a cover
  off or make a mount writable;
- its user: ``securityContext.runAsUser``/``runAsGroup``/``supplementalGroups``/``fsGroup`` as kube resolves them,
  else the default (nobody, 65534:65534, when ``local up`` runs as root; else ``local up``'s own user);
  ``runAsNonRoot`` refused as the kubelet refuses it. Folders the user cannot pass through on the way to this
  interpreter (a root-only home) are covered and the interpreter's installation bound back, so ``python`` works
  for every user;
- ``seccompProfile: RuntimeDefault`` as the runtime's default filter (``security_context.py``);
  ``allowPrivilegeEscalation: false`` as ``no_new_privs``; ``readOnlyRootFilesystem`` as read-only ``/tmp``,
  ``/var/tmp`` and ``/run/lock`` too (``/dev/shm`` stays writable, as in a container);
- cgroup limits (``cgroups.py``) where a hierarchy is writable.

Off (``--no-sandbox``, or where namespaces cannot be made): containers are process groups of ``local up``'s user
(root switches to a ``runAsUser`` all the same), nothing is hidden, no limit is enforced, and
``local up`` says so.
"""

from __future__ import annotations

import functools
import logging
import marshal
import os
import pwd
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR
from typing import Any

from mxjob_controller.local.kubelet.cgroups import CONTROLLERS, CgroupTree, ContainerCgroup, container_limits
from mxjob_controller.local.kubelet.launcher import Launched, Launcher, LauncherGoneError
from mxjob_controller.local.kubelet.pod_places import PodKey, PodPlaces, own_temp_dir, remove_tree
from mxjob_controller.local.kubelet.security_context import (
    NOBODY,
    RunAs,
    capability_mask,
    check_mappable,
    host_user,
    id_maps,
    pod_ref,
    run_as,
    runtime_default_filter,
    seccomp_profile,
)

log = logging.getLogger(__name__)

INIT_SCRIPT = Path(__file__).with_name("sandbox_init.py")
#: Read once, with this module: the kubelet runs this text, never a file at each start.
INIT_SOURCE = INIT_SCRIPT.read_text(encoding="utf-8")
#: ... compiled once too, and sent marshalled through the spec's pipe with the spec: compiling the text took each
#: container's interpreter about 10 ms of CPU, more than half of what its start costs beyond the interpreter's own.
#: The child is this same interpreter (``sys.executable``), so the code object's format is its own.
INIT_CODE = marshal.dumps(compile(INIT_SOURCE, str(INIT_SCRIPT), "exec"))
#: What the child runs (``-c``): the init's code and its spec, read from the descriptor its argument names.
INIT_BOOTSTRAP = ("import marshal, os, sys\n"
                  "with os.fdopen(int(sys.argv[1]), 'rb') as f:\n"
                  "    code, spec = marshal.loads(f.read())\n"
                  "init = {'__name__': 'sandbox_init'}\n"
                  "exec(marshal.loads(code), init)\n"
                  "sys.exit(init['run'](spec))\n")
#: Folders a container gets of its own: the first two are its pod's places, the others a private tmpfs each.
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
TMPFS_DIRS = (("/dev/shm", "64m"), ("/run/lock", "5m"))   # sizes as containerd's /dev/shm and systemd's /run/lock
#: The host's device nodes a container sees (as a runtime's default devices), and the GPUs' (``nvidia*``: the
#: kubelet gives GPUs by environment, see devices.py, so their nodes are there for every container).
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
DEFAULT_POD_PIDS = 4096
WARNING_PREFIX = "warning\t"   # a line the relay writes to the status pipe first (sandbox_init._warn)
_MACHINE = os.uname().machine
_PROBE_TIMEOUT = 10.0
_START_TIMEOUT = 30.0     # seconds the sandbox may take to start a command

__all__ = ["NOBODY", "RunAs", "Sandbox", "SandboxConfig", "launch", "pod_ref", "run_as"]


# --- pure: what a container sees ------------------------------------------------------------------------------

def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


@dataclass(frozen=True, slots=True)
class MountPlan:
    hide_dirs: tuple[str, ...]
    hide_files: tuple[str, ...]
    binds: tuple[str, ...]
    covers: tuple[str, ...] = ()      # folders the user cannot pass through, covered so that binds inside are reached


def hidden_from(path: str, private: Iterable[str]) -> bool:
    """Whether ``path`` is (inside) one of the cluster's private paths: no container may use it."""
    return any(_within(path, p) for p in private)


def mount_plan(cwd: str, private: Iterable[tuple[str, bool]], private_dirs: Iterable[str] = PRIVATE_DIRS,
               needed: Iterable[tuple[str, str | None]] = ()) -> MountPlan:
    """What to cover and what to bind back for a container starting in ``cwd`` (absolute, resolved, not hidden);
    ``private``: the cluster's own paths, each with whether it is a directory (each once, however often it is
    named); ``needed``: (folder, the ancestor of it the container's user cannot pass through, or None), e.g. this
    interpreter's installation under a private home or in ``/tmp``."""
    private = list(dict.fromkeys(private))
    needed = list(needed)
    binds = [cwd for d in private_dirs if _within(cwd, d) and cwd != d][:1] + [path for path, _blocked in needed]
    return MountPlan(hide_dirs=tuple(p for p, is_dir in private if is_dir),
                     hide_files=tuple(p for p, is_dir in private if not is_dir), binds=tuple(dict.fromkeys(binds)),
                     covers=tuple(dict.fromkeys(blocked for _path, blocked in needed if blocked is not None)))


def blocked_ancestor(path: str, user: RunAs, stat: Callable[[str], os.stat_result] = os.stat) -> str | None:
    """The first folder on the way to ``path`` that ``user`` (host ids) may not pass through, or None."""
    if user.uid == 0:
        return None
    parts = Path(path).parts
    for depth in range(1, len(parts) + 1):
        folder = str(Path(*parts[:depth]))
        try:
            st = stat(folder)
        except OSError:
            return None
        if not may_pass(st, user):
            return folder
    return None


def read_only_root(container: Mapping[str, Any]) -> bool:
    return bool((container.get("securityContext") or {}).get("readOnlyRootFilesystem"))


def no_new_privs(container: Mapping[str, Any]) -> bool:
    return (container.get("securityContext") or {}).get("allowPrivilegeEscalation") is False

def may_pass(st: os.stat_result, user: RunAs) -> bool:
    """Whether ``user`` has search permission on a folder (owner, group, then other bits, as the kernel checks)."""
    if user.uid == 0:
        return True
    if st.st_uid == user.uid:
        return bool(st.st_mode & 0o100)
    if st.st_gid in {user.gid, *user.groups}:
        return bool(st.st_mode & 0o010)
    return bool(st.st_mode & 0o001)


def cwd_blocked(cwd: str, user: RunAs, sandboxed: bool,
                stat: Callable[[str], os.stat_result] = os.stat) -> str | None:
    """The folder that keeps ``user`` from starting in ``cwd`` (absolute, resolved), or None. In the sandbox a
    ``cwd`` under a private directory (``/tmp``) is bound into the container's own (``mount_plan``): only the
    folder itself is passed through there; elsewhere every folder on the way is."""
    if sandboxed and any(_within(cwd, d) and cwd != d for d in PRIVATE_DIRS):
        try:
            return None if may_pass(stat(cwd), user) else cwd
        except OSError:
            return None
    return blocked_ancestor(cwd, user, stat)


# --- I/O ----------------------------------------------------------------------------------------------------------

@dataclass
class SandboxConfig:
    enabled: bool = True
    default_user: tuple[int, int] | None = None    # None: nobody when root, else our own user
    pod_pids_limit: int = DEFAULT_POD_PIDS          # <= 0: no limit
    private_paths: Callable[[], Iterable[str]] = field(default=lambda: ())
    # Folders every container sees (read-only) as on this machine even inside a private /tmp: the kubelet's
    # --workdir, which every pod starts in when its workingDir does not exist (a checkout cloned under /tmp, as CI
    # does, holds the jobs' scripts).
    shared_dirs: tuple[str, ...] = ()


class Sandbox:
    """What this machine enforces (found once, at start) and how each container is launched in it."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self.root = os.geteuid() == 0
        self.own = (os.geteuid(), os.getegid())
        wanted = _wanted_user(config.default_user)
        self.namespaces = False
        self.why_not = "turned off (--no-sandbox)" if not config.enabled else ""
        self.cgroups: CgroupTree | None = None
        self.cgroups_missing: dict[str, str] = {}
        self._scratch: Path | None = None
        self.places: PodPlaces | None = None
        self.hide_source = ""          # an empty file mode 000: what a hidden file shows
        self.launcher: Launcher | None = None   # forks each container's relay (launcher.py); None: one interpreter each
        # Found once per kubelet, not at every start (issue 48: a start spent about a millisecond of CPU on these):
        # the users' passwd entries, the interpreter's and shared folders resolved, their ancestors' modes, and the
        # cluster's private paths resolved (each path once it exists: they are the cluster's own files).
        self._passwd: dict[int, pwd.struct_passwd | None] = {}
        self._interpreter = tuple(dict.fromkeys(os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)))
        self._shared = tuple(dict.fromkeys(os.path.realpath(p) for p in config.shared_dirs))
        self._folder_stats: dict[str, os.stat_result | int] = {}   # folder → its stat, or the errno
        self._resolved: dict[str, str] = {}
        if config.enabled:
            self.why_not = _probe(wanted)
            self.namespaces = not self.why_not
            if self.namespaces:
                self.cgroups, self.cgroups_missing = CgroupTree.open(config.pod_pids_limit)
                self._scratch = own_temp_dir("sandbox")
                self.hide_source = str(self._scratch / "hidden")
                os.close(os.open(self.hide_source, os.O_CREAT | os.O_WRONLY, 0o000))
                (self._scratch / "pods").mkdir(mode=0o700)
                self.places = PodPlaces(self._scratch / "pods", self.root)
                self.launcher = Launcher(INIT_CODE)
                if not self.launcher.start():
                    self.launcher.close()
                    self.launcher = None
        # Without the sandbox, nothing makes this interpreter reachable to another user: containers keep ours.
        self.default_user = wanted if self.namespaces else (config.default_user or self.own)
        if not self.namespaces:
            self.cgroups_missing = {c: "the sandbox is off" for c in CONTROLLERS}

    def report(self) -> list[str]:
        """What is enforced on this machine, one line each, for ``local up``'s start-up."""
        if not self.namespaces:
            who = "nobody (65534)" if self.default_user == NOBODY else f"uid {self.default_user[0]}"
            return [f"Pod sandbox OFF: {self.why_not}. Containers are plain processes that can read every file and "
                    f"process local up's user can (they run as {who}); resource limits are not enforced."]
        user = f"uid {self.default_user[0]}, gid {self.default_user[1]} unless securityContext says otherwise"
        if self.default_user == NOBODY and self.root:
            user = "nobody (65534:65534) unless securityContext says otherwise"
        mapped = "a block of 65536 host ids of its own, above the host's users" if self.root else \
            f"local up's own user (uid {self.own[0]}: without root no other id can be mapped)"
        enforced = sorted(self.cgroups.hierarchies) if self.cgroups else []
        lines = ["Pod sandbox: each container in its own PID and mount namespace (private /tmp, cluster files "
                 "hidden), dies with its pod and with local up",
                 f"  user namespace per pod: root in a pod is {mapped}; containerd's default capabilities, "
                 "honoured only inside it",
                 "  host files read-only (the working directory too); a pod writes to its own /tmp and /var/tmp",
                 f"  containers run as {user}"]
        for controller in CONTROLLERS:
            if controller in enforced and self.cgroups is not None:
                h = self.cgroups.hierarchies[controller]
                what = {"memory": "limits.memory enforced (OOMKilled, exit 137)",
                        "cpu": "limits.cpu enforced (CFS quota)",
                        "pids": f"at most {self.config.pod_pids_limit} processes per pod"
                        if self.config.pod_pids_limit > 0 else "no pids limit (--pod-max-pids 0)"}[controller]
                lines.append(f"  {controller}: {what} (cgroup v{h.version})")
            else:
                lines.append(f"  {controller}: NOT enforced: {self.cgroups_missing.get(controller, '')}")
        return lines

    @property
    def unenforced(self) -> dict[str, str]:
        return dict(self.cgroups_missing)

    def user_of(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> RunAs:
        return run_as(pod, container, self.default_user, self._primary_gid)

    def cwd_blocked(self, cwd: str, user: RunAs) -> str | None:
        """:func:`cwd_blocked` as this sandbox starts containers."""
        return cwd_blocked(os.path.realpath(cwd), user, self.namespaces)

    def usable_dir(self, path: str) -> bool:
        """Whether a container may start in ``path``: it exists and is none of the cluster's own."""
        return os.path.isdir(path) and not hidden_from(os.path.realpath(path), self._private())

    def prepare(self, pod: Mapping[str, Any], container: Mapping[str, Any], instance: int, argv: list[str],
                env: dict[str, str], cwd: str) -> tuple[dict[str, Any] | None, RunAs, ContainerCgroup | None]:
        """The spec ``sandbox_init.py`` runs (None with the sandbox off), the user, and the instance's cgroups.
        Raises ContainerConfigError for what the kubelet refuses (``runAsNonRoot``, an id the pod's user namespace
        cannot map)."""
        user = self.user_of(pod, container)
        if user.uid != os.geteuid() and env.get("HOME") == os.environ.get("HOME"):
            env = {**env, "HOME": self._home_of(user.uid)}
        if not self.namespaces or self.places is None:
            return None, user, None
        if self.root:
            check_mappable(pod, container, user)
        folder, block = self.places.of(pod)
        cgroup = None
        if self.cgroups is not None and self.cgroups.hierarchies:
            meta = pod.get("metadata") or {}
            cgroup = self.cgroups.container(meta.get("uid") or "", container.get("name") or "", instance,
                                            container_limits(container))
        private_paths = self._private()
        private = [(p, is_dir) for p in private_paths if (is_dir := _kind(p)) is not None]
        real_cwd = os.path.realpath(cwd)
        on_host = host_user(self.root, block, user, self.own)
        needed: list[tuple[str, str | None]] = []
        # The interpreter on the containers' PATH, wherever it is installed: bound back into a private /tmp, or
        # through a folder the user may not pass.
        for folder_ in self._interpreter:
            blocked = blocked_ancestor(folder_, on_host, self._folder_stat) if self.root else None
            if any(_within(folder_, d) for d in PRIVATE_DIRS):
                needed.append((folder_, None))
            elif blocked is not None and blocked != folder_:
                needed.append((folder_, blocked))
        for shared in self._shared:
            in_private_dir = any(_within(shared, d) and shared != d for d in PRIVATE_DIRS)
            if in_private_dir and not hidden_from(shared, private_paths):
                needed.append((shared, None))
        plan = mount_plan(real_cwd, private, needed=needed)
        uid_map, gid_map = id_maps(self.root, block, user)
        capabilities = capability_mask(container)
        spec = {**_spec_of(argv, env, real_cwd, user, cgroup, plan, self.places.writable_dirs(folder)),
                "make_dirs": self.places.folders(folder),
                "hide_source": self.hide_source, "no_new_privs": no_new_privs(container),
                "capabilities": capabilities, "read_only_root": read_only_root(container),
                "seccomp": runtime_default_filter(capabilities, _MACHINE)
                if seccomp_profile(pod, container) == "RuntimeDefault" else None,
                "uid_map": uid_map, "gid_map": gid_map,
                "hostname": (pod.get("spec") or {}).get("hostname") or (pod.get("metadata") or {}).get("name")}
        return spec, user, cgroup

    def host_path(self, pod: Mapping[str, Any], inside: str) -> Path | None:
        """Where on this machine a pod's file under its /tmp or /var/tmp is (None: not there, or no sandbox)."""
        return self.places.host_path(pod, inside) if self.places is not None else None

    def container_ended(self, cgroup: ContainerCgroup | None) -> bool:
        """After an instance's exit: whether the OOM killer killed one of its processes; its cgroups removed."""
        if cgroup is None or self.cgroups is None:
            return False
        oom = self.cgroups.oom_killed(cgroup)
        self.cgroups.remove_container(cgroup)
        return oom

    def pod_ended(self, uid: str) -> None:
        if self.cgroups is not None:
            self.cgroups.remove_pod(uid)

    def place_keys(self) -> list[PodKey]:
        """The pod identities that have places now."""
        return list(self.places.keys()) if self.places is not None else []

    def release_places(self, keep: Callable[[PodKey], bool]) -> None:
        """Remove the places of the pod identities ``keep`` says no pod will come back to."""
        if self.places is not None:
            self.places.release(keep)

    def close(self, timeout: float = 5.0) -> None:
        """End the launcher and remove the cluster's cgroups, those of every container left in them too (a kubelet
        that stops leaves its pods' to this), within about ``timeout`` seconds."""
        end = time.monotonic() + timeout
        if self.launcher is not None:
            self.launcher.close(max(0.1, (end - time.monotonic()) / 2))
        if self.cgroups is not None:
            self.cgroups.close(max(0.1, end - time.monotonic()))
        if self._scratch is not None:
            remove_tree(self._scratch)

    def _private(self) -> list[str]:
        """The cluster's private paths, resolved (asked of the cluster each time: it writes more of them, e.g.
        token directories, as it goes)."""
        paths = [self._resolve(p) for p in self.config.private_paths() if p]
        if self._scratch is not None:
            paths.append(str(self._scratch))
        return list(dict.fromkeys(paths))

    def _resolve(self, path: str) -> str:
        """``os.path.realpath(path)``, kept once the path exists (one that does not yet is resolved again)."""
        found = self._resolved.get(path)
        if found is None:
            found = os.path.realpath(path)
            if os.path.lexists(found):
                self._resolved[path] = found
        return found

    def _folder_stat(self, folder: str) -> os.stat_result:
        """``os.stat`` of a folder on the way to the interpreter, kept (each start asked every one of them)."""
        found = self._folder_stats.get(folder)
        if found is None:
            try:
                found = os.stat(folder)
            except OSError as e:
                found = e.errno or 0
            self._folder_stats[folder] = found
        if isinstance(found, int):
            raise OSError(found, os.strerror(found))
        return found

    def _passwd_entry(self, uid: int) -> pwd.struct_passwd | None:
        try:
            return self._passwd[uid]
        except KeyError:
            pass
        try:
            entry: pwd.struct_passwd | None = pwd.getpwuid(uid)
        except KeyError:
            entry = None
        self._passwd[uid] = entry
        return entry

    def _primary_gid(self, uid: int) -> int | None:
        entry = self._passwd_entry(uid)
        return entry.pw_gid if entry is not None else None

    def _home_of(self, uid: int) -> str:
        """HOME as a runtime sets it: the user's home from the passwd file, else ``/``."""
        entry = self._passwd_entry(uid)
        return (entry.pw_dir or "/") if entry is not None else "/"


def _wanted_user(default_user: tuple[int, int] | None) -> tuple[int, int]:
    """Whom containers run as unless their securityContext says: the configured user, else nobody for root, else
    our own."""
    return default_user or (NOBODY if os.geteuid() == 0 else (os.geteuid(), os.getegid()))


_probes: dict[tuple[int, int], Future[str]] = {}
_probes_lock = threading.Lock()


def probe_ahead(default_user: tuple[int, int] | None = None) -> None:
    """Start, in a thread of its own, the probe a :class:`Sandbox` of ``default_user`` makes at its start: the
    local cluster starts it first, so that the probe's process (an interpreter start, tens of milliseconds) runs
    while the API server starts and takes its CRDs (issue 48: start fast). The thread ends with the probe, within
    its timeout."""
    user = _wanted_user(default_user)
    with _probes_lock:
        if user in _probes:
            return
    threading.Thread(target=_probe, args=(user,), name="sandbox-probe", daemon=True).start()


def _probe(user: tuple[int, int]) -> str:
    """Whether a sandboxed process starts as ``user``: found once per process (the first caller runs it, others
    wait for its answer)."""
    with _probes_lock:
        answer = _probes.get(user)
        first = answer is None
        if answer is None:
            answer = _probes[user] = Future()
    if first:
        try:
            answer.set_result(_run_probe(user))
        except BaseException as e:
            answer.set_exception(e)
    return answer.result(_PROBE_TIMEOUT + _START_TIMEOUT + 5.0)


def _run_probe(user: tuple[int, int]) -> str:
    """Start one sandboxed ``true`` as ``user``, with every step a container's start takes: '' if it worked, else
    why not."""
    scratch = own_temp_dir("sandbox")
    try:
        places = [(inside, str(scratch)) for inside in PRIVATE_DIRS[:2]]
        spec = {**_spec_of(["true"], {"PATH": os.defpath}, "/", RunAs(*user), None, MountPlan((), (), ()), places),
                "capabilities": capability_mask({}),
                **dict(zip(("uid_map", "gid_map"), id_maps(os.geteuid() == 0, 1, RunAs(*user)), strict=True))}
        proc = launch(spec, subprocess.DEVNULL)
        code = proc.wait(_PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"namespaces cannot be made here ({getattr(e, 'strerror', None) or e})"
    finally:
        remove_tree(scratch)
    return "" if code == 0 else f"namespaces cannot be made here (probe exited {code})"


def launch(spec: dict[str, Any], stdout: int, launcher: Launcher | None = None) -> subprocess.Popen | Launched:
    """Start ``sandbox_init.py`` on ``spec`` and wait until the command is running: OSError (its ``strerror`` the
    reason) when any step before it failed, as a runtime's start error. ``stdout`` is the descriptor of the
    container's log (or ``subprocess.DEVNULL``). Forked by ``launcher`` when it runs (the spec alone goes through
    the pipe), else a new interpreter of its own (the init's code with the spec)."""
    spec_r, spec_w = os.pipe()
    status_r, status_w = os.pipe()
    proc: subprocess.Popen | Launched | None = None
    try:
        if launcher is not None and launcher.usable and stdout >= 0:
            try:
                proc = launcher.launch(spec_r, status_w, stdout)
            except LauncherGoneError as e:
                log.warning("%s: starting the container with an interpreter of its own", e.strerror)
                # Pipes of its own: a launcher that answers late may still fork a relay holding these (it reads
                # an empty spec and exits), never the spec meant for the interpreter.
                for fd in (spec_r, spec_w, status_r, status_w):
                    os.close(fd)
                spec_r, spec_w = os.pipe()
                status_r, status_w = os.pipe()
        if proc is None:
            proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", INIT_BOOTSTRAP, str(spec_r)], env={},
                                    stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.STDOUT,
                                    start_new_session=True, close_fds=True, pass_fds=(spec_r, status_w), cwd="/")
    finally:
        os.close(spec_r)
        os.close(status_w)
    try:
        _write_all(spec_w, marshal.dumps({**spec, "status_fd": status_w}) if isinstance(proc, Launched) else
                   marshal.dumps((INIT_CODE, {**spec, "status_fd": status_w})))
        failure = _read_until_closed(status_r, _START_TIMEOUT)
    except OSError:
        failure = "setup\tthe sandbox's init did not start"
    warnings, failure = split_warnings(failure)
    for warning in warnings:
        log.warning("pod %s's container (pid %d): %s", spec.get("hostname") or "?", proc.pid, warning)
    if failure is None:
        os.killpg(proc.pid, 9)
        failure = f"setup\tthe sandbox did not start the command within {_START_TIMEOUT:g}s"
    if failure:
        proc.wait(_PROBE_TIMEOUT)
        stage, _, message = failure.partition("\t")
        if stage == "exec":
            number, _, text = message.partition("\t")
            raise OSError(int(number) if number.isdigit() else 0, text)
        raise OSError(0, message)
    return proc


def _spec_of(argv: list[str], env: dict[str, str], cwd: str, user: RunAs, cgroup: ContainerCgroup | None,
             plan: MountPlan, writable_dirs: list[tuple[str, str]]) -> dict[str, Any]:
    """What ``sandbox_init.py`` reads: the command and how to build its sandbox."""
    root = os.geteuid() == 0
    return {"argv": list(argv), "env": env, "cwd": cwd, "parent_pid": os.getpid(), "outer_userns": not root,
            "uid": user.uid, "gid": user.gid, "groups": list(user.groups), "set_groups": root,
            "host_uid": os.geteuid(), "host_gid": os.getegid(),
            "writable_dirs": writable_dirs, "private_dirs": list(TMPFS_DIRS), "dev_nodes": _dev_nodes(),
            "writable_when_read_only": ["/dev/shm"], "covers": list(plan.covers),
            "hide_dirs": list(plan.hide_dirs), "hide_files": list(plan.hide_files), "binds": list(plan.binds),
            "cgroup_procs": cgroup.procs_files if cgroup is not None else [],
            "cgroup_setup": cgroup.setup if cgroup is not None else []}


@functools.cache
def _dev_nodes() -> list[str]:
    try:
        gpus = sorted(name for name in os.listdir("/dev") if name.startswith("nvidia") and
                      not os.path.isdir(os.path.join("/dev", name)))
    except OSError:
        gpus = []
    return [*DEV_NODES, *gpus]


def _write_all(fd: int, data: bytes) -> None:
    """Write ``data`` to the pipe ``fd`` and close it (a file object around it asked the kernel three more things
    a start: issue 48)."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def split_warnings(status: str | None) -> tuple[list[str], str | None]:
    """The relay's status words: the warnings it wrote first (``warning<TAB>text`` lines: what it could not do and
    went on without, a cgroup limit), and the failure after them ("" when the command started)."""
    warnings = []
    while status and status.startswith(WARNING_PREFIX):
        line, _newline, status = status.partition("\n")
        warnings.append(line.removeprefix(WARNING_PREFIX))
    return warnings, status


def _read_until_closed(fd: int, timeout: float) -> str | None:
    """All that is written to ``fd`` until its writers close it (closes ``fd``); None after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    chunks = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return b"".join(chunks).decode(errors="replace")
            chunks.append(chunk)
    finally:
        os.close(fd)


def _kind(path: str) -> bool | None:
    """Whether ``path`` is a folder, None when it does not exist (one ``stat``: exists and isdir were two)."""
    try:
        return S_ISDIR(os.stat(path).st_mode)
    except (OSError, ValueError):
        return None
