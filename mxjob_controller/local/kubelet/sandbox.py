"""The pod sandbox: what the local kubelet puts around each container, as a container runtime would, with what Linux
offers a process directly (namespaces, mounts and cgroups through system calls: no daemon, no extra package).

Why direct system calls rather than ``bubblewrap`` (a tool made for this, but one more package every machine and CI
would install) or the ``unshare`` command (it cannot make the mounts, run an init that forwards nothing and reaps
orphans, or report why a start failed): ``sandbox_init.py``, run by this project's own interpreter, does all of it
at the cost of one interpreter start per container.

Each container gets (``sandbox_init.py`` builds it):

- a PID namespace of its own whose init dies with ``local up`` (even by SIGKILL) and takes every process of the
  container with it when the main process ends (``setsid`` cannot escape);
- a mount namespace where ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are private (empty at start), the cluster's own
  files (TLS material, kubeconfigs, token directories, audit log, the kubelet's logs) are covered, and the
  container's working directory is bound back when a private directory covered it;
- its user: ``securityContext.runAsUser``/``runAsGroup``/``supplementalGroups``/``fsGroup`` as kube resolves them,
  else the default (nobody, 65534:65534, when ``local up`` runs as root; else ``local up``'s own user, seen inside
  as the one asked for through a user namespace); ``runAsNonRoot`` refused as the kubelet refuses it. Folders the
  user cannot pass through on the way to this interpreter (a root-only home) are covered and the interpreter's
  installation bound back, so ``python`` works for every user;
- cgroup limits (``cgroups.py``) where a hierarchy is writable.

Off (``--no-sandbox``, or where namespaces cannot be made): containers are process groups of ``local up``'s user
(root switches to a ``runAsUser`` all the same), nothing is hidden, no limit is enforced, and ``local up`` says so.
"""

from __future__ import annotations

import functools
import json
import logging
import marshal
import os
import pwd
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mxjob_controller.local.kubelet.cgroups import CONTROLLERS, CgroupTree, ContainerCgroup, container_limits
from mxjob_controller.local.kubelet.container_env import ContainerConfigError

log = logging.getLogger(__name__)

INIT_SCRIPT = Path(__file__).with_name("sandbox_init.py")
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
NOBODY = (65534, 65534)
DEFAULT_POD_PIDS = 4096
_PROBE_TIMEOUT = 10.0
_START_TIMEOUT = 30.0     # seconds the sandbox may take to start a command


# --- pure: who a container runs as, what it sees ----------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class RunAs:
    uid: int
    gid: int
    groups: tuple[int, ...] = ()


def pod_ref(pod: Mapping[str, Any]) -> str:
    """The kubelet's ``format.Pod``: ``name_namespace(uid)``."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('name')}_{meta.get('namespace')}({meta.get('uid')})"


def run_as(pod: Mapping[str, Any], container: Mapping[str, Any], default: tuple[int, int],
           primary_gid: Callable[[int], int | None] = lambda _uid: None) -> RunAs:
    """The user, group and supplementary groups of ``container``: its ``securityContext`` over the pod's, else
    ``default`` (the image's user, as it were). A ``runAsUser`` without ``runAsGroup`` gets the user's primary
    group where this machine knows the user, else 0 (as a runtime reads the image's ``/etc/passwd``).
    ``runAsNonRoot`` is checked as the kubelet's ``verifyRunAsNonRoot`` checks it: ContainerConfigError."""
    pod_sc = (pod.get("spec") or {}).get("securityContext") or {}
    sc = container.get("securityContext") or {}

    def pick(key: str) -> Any:
        return sc[key] if sc.get(key) is not None else pod_sc.get(key)

    uid, gid, non_root = pick("runAsUser"), pick("runAsGroup"), pick("runAsNonRoot")
    name = container.get("name") or ""
    if non_root:
        if uid is not None and uid == 0:
            raise ContainerConfigError(f"container's runAsUser breaks non-root policy (pod: {json.dumps(pod_ref(pod))}"
                                       f", container: {name})")
        if uid is None and default[0] == 0:
            raise ContainerConfigError(f"container has runAsNonRoot and image will run as root (pod: "
                                       f"{json.dumps(pod_ref(pod))}, container: {name})")
    if uid is None:
        uid = default[0]
        gid = default[1] if gid is None else gid
    elif gid is None:
        gid = primary_gid(uid)
        gid = 0 if gid is None else gid
    groups = [int(g) for g in pod_sc.get("supplementalGroups") or () if isinstance(g, int)]
    if isinstance(pod_sc.get("fsGroup"), int):
        groups.append(pod_sc["fsGroup"])
    return RunAs(int(uid), int(gid), tuple(dict.fromkeys(groups)))


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
    ``private``: the cluster's own paths, each with whether it is a directory; ``needed``: (folder, the ancestor of
    it the container's user cannot pass through, or None), e.g. this interpreter's installation under a private
    home or in ``/tmp``."""
    private = list(private)
    needed = list(needed)
    binds = [cwd for d in private_dirs if _within(cwd, d) and cwd != d][:1] + [path for path, _blocked in needed]
    return MountPlan(hide_dirs=tuple(p for p, is_dir in private if is_dir),
                     hide_files=tuple(p for p, is_dir in private if not is_dir), binds=tuple(dict.fromkeys(binds)),
                     covers=tuple(dict.fromkeys(blocked for _path, blocked in needed if blocked is not None)))


def blocked_ancestor(path: str, user: RunAs, stat: Callable[[str], os.stat_result] = os.stat) -> str | None:
    """The first folder on the way to ``path`` that ``user`` may not pass through (no search permission), or None."""
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
    # Folders every container sees as on this machine even inside a private /tmp: the kubelet's --workdir, which is
    # shared by every pod like a hostPath (a checkout cloned under /tmp, as CI does, holds the jobs' scripts).
    shared_dirs: tuple[str, ...] = ()


class Sandbox:
    """What this machine enforces (found once, at start) and how each container is launched in it."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self.root = os.geteuid() == 0
        own = (os.geteuid(), os.getegid())
        wanted = config.default_user or (NOBODY if self.root else own)
        self.namespaces = False
        self.why_not = "turned off (--no-sandbox)" if not config.enabled else ""
        self.cgroups: CgroupTree | None = None
        self.cgroups_missing: dict[str, str] = {}
        self._scratch = ""
        self.hide_source = ""          # an empty file mode 000: what a hidden file shows
        if config.enabled:
            self.why_not = _probe(wanted)
            self.namespaces = not self.why_not
            if self.namespaces:
                self.cgroups, self.cgroups_missing = CgroupTree.open(config.pod_pids_limit)
                self._scratch = tempfile.mkdtemp(prefix="mxjob-sandbox-")
                self.hide_source = os.path.join(self._scratch, "hidden")
                os.close(os.open(self.hide_source, os.O_CREAT | os.O_WRONLY, 0o000))
        # Without the sandbox, nothing makes this interpreter reachable to another user: containers keep ours.
        self.default_user = wanted if self.namespaces else (config.default_user or own)
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
        elif not self.root:
            user += " (local up's own user, seen inside as the runAsUser asked for: a user namespace)"
        enforced = sorted(self.cgroups.hierarchies) if self.cgroups else []
        lines = ["Pod sandbox: each container in its own PID and mount namespace (private /tmp, cluster files "
                 "hidden), dies with its pod and with local up",
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
        return run_as(pod, container, self.default_user, _primary_gid)

    def cwd_blocked(self, cwd: str, user: RunAs) -> str | None:
        """:func:`cwd_blocked` as this sandbox starts containers."""
        return cwd_blocked(os.path.realpath(cwd), user, self.namespaces)

    def usable_dir(self, path: str) -> bool:
        """Whether a container may start in ``path``: it exists and is none of the cluster's own."""
        return os.path.isdir(path) and not hidden_from(os.path.realpath(path), self._private())

    def prepare(self, pod: Mapping[str, Any], container: Mapping[str, Any], instance: int, argv: list[str],
                env: dict[str, str], cwd: str) -> tuple[dict[str, Any] | None, RunAs, ContainerCgroup | None]:
        """The spec ``sandbox_init.py`` runs (None with the sandbox off), the user, and the instance's cgroups.
        Raises ContainerConfigError for what the kubelet refuses (``runAsNonRoot``)."""
        user = self.user_of(pod, container)
        if user.uid != os.geteuid() and env.get("HOME") == os.environ.get("HOME"):
            env = {**env, "HOME": _home_of(user.uid)}
        if not self.namespaces:
            return None, user, None
        cgroup = None
        if self.cgroups is not None and self.cgroups.hierarchies:
            meta = pod.get("metadata") or {}
            cgroup = self.cgroups.container(meta.get("uid") or "", container.get("name") or "", instance,
                                            container_limits(container))
        private = [(p, os.path.isdir(p)) for p in self._private() if os.path.exists(p)]
        real_cwd = os.path.realpath(cwd)
        needed: list[tuple[str, str | None]] = []
        # The interpreter on the containers' PATH, wherever it is installed: bound back into a private /tmp, or
        # through a folder the user may not pass.
        for folder in dict.fromkeys(os.path.realpath(p) for p in (sys.base_prefix, sys.prefix)):
            blocked = blocked_ancestor(folder, user) if self.root else None
            if any(_within(folder, d) for d in PRIVATE_DIRS):
                needed.append((folder, None))
            elif blocked is not None and blocked != folder:
                needed.append((folder, blocked))
        for folder in dict.fromkeys(os.path.realpath(p) for p in self.config.shared_dirs):
            in_private_dir = any(_within(folder, d) and folder != d for d in PRIVATE_DIRS)
            if in_private_dir and not hidden_from(folder, self._private()):
                needed.append((folder, None))
        plan = mount_plan(real_cwd, private, needed=needed)
        no_new_privs = (container.get("securityContext") or {}).get("allowPrivilegeEscalation") is False
        return {**_spec_of(argv, env, real_cwd, user, cgroup, plan), "hide_source": self.hide_source,
                "no_new_privs": no_new_privs}, user, cgroup

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

    def close(self) -> None:
        if self.cgroups is not None:
            self.cgroups.close()
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def _private(self) -> list[str]:
        return [os.path.realpath(p) for p in self.config.private_paths() if p]



@functools.cache
def _probe(user: tuple[int, int]) -> str:
    """Start one sandboxed ``true`` as ``user`` (once per process): '' if it worked, else why not."""
    try:
        spec = _spec_of(["true"], {"PATH": os.defpath}, "/", RunAs(*user), None, MountPlan((), (), ()))
        proc = launch(spec, subprocess.DEVNULL)
        code = proc.wait(_PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"namespaces cannot be made here ({getattr(e, 'strerror', None) or e})"
    return "" if code == 0 else f"namespaces cannot be made here (probe exited {code})"


def launch(spec: dict[str, Any], stdout: Any) -> subprocess.Popen:
    """Start ``sandbox_init.py`` on ``spec`` and wait until the command is running: OSError (its ``strerror`` the
    reason) when any step before it failed, as a runtime's start error."""
    spec_r, spec_w = os.pipe()
    status_r, status_w = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-I", "-S", str(INIT_SCRIPT), str(spec_r)], env={},
                                stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, pass_fds=(spec_r, status_w), cwd="/")
    finally:
        os.close(spec_r)
        os.close(status_w)
    try:
        with os.fdopen(spec_w, "wb") as f:
            f.write(marshal.dumps({**spec, "status_fd": status_w}))
        failure = _read_until_closed(status_r, _START_TIMEOUT)
    except OSError:
        failure = "setup\tthe sandbox's init did not start"
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
             plan: MountPlan) -> dict[str, Any]:
    """What ``sandbox_init.py`` reads: the command and how to build its sandbox."""
    root = os.geteuid() == 0
    return {"argv": list(argv), "env": env, "cwd": cwd, "parent_pid": os.getpid(), "userns": not root,
            "uid": user.uid, "gid": user.gid, "groups": list(user.groups), "switch_user": root,
            "host_uid": os.geteuid(), "host_gid": os.getegid(), "mount_proc": True,
            "private_dirs": list(PRIVATE_DIRS), "covers": list(plan.covers), "hide_dirs": list(plan.hide_dirs),
            "hide_files": list(plan.hide_files), "binds": list(plan.binds),
            "cgroup_procs": cgroup.procs_files if cgroup is not None else []}


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


def _primary_gid(uid: int) -> int | None:
    try:
        return pwd.getpwuid(uid).pw_gid
    except KeyError:
        return None


def _home_of(uid: int) -> str:
    """HOME as a runtime sets it: the user's home from the passwd file, else ``/``."""
    try:
        return pwd.getpwuid(uid).pw_dir or "/"
    except KeyError:
        return "/"

