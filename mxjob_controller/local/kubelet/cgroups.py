"""Resource limits for the local kubelet's pods, through Linux control groups (v2, or v1 where its hierarchies are
mounted one per controller), as a container runtime sets them.

Layout, under the cgroup ``local up`` itself runs in, in each hierarchy used: ``mxjob-local-<pid>-<n>/pod-<uid>/
<container>-<n>`` (``n`` counts the container's instances, so each instance's OOM kills are its own). A container's
``limits.memory`` becomes ``memory.max`` (v2) or ``memory.limit_in_bytes`` (v1; swap capped with it where the
kernel accounts swap), its ``limits.cpu`` a CFS quota per 100 ms period (``milliCPU * period / 1000``, at least
1 ms, as the kubelet computes it) with the shares of that many CPUs, and the pod gets a ``pids`` limit. Only a
container with ``limits.cpu`` gets a CPU cgroup: a cgroup competes for the CPU as one task does, so a container
without a quota stays where ``local up`` is and is scheduled as any process (the cluster's and pods' cgroups weigh
as the machine's CPUs, as kube's ``kubepods`` does). Only the container's own processes join its
cgroup (the sandbox's relay and init stay in ``local up``'s), so a limit counts what the container uses.

Guarantees: :func:`detect` says per controller whether limits can be enforced here and why not; a container's
cgroups are planned here and made by its sandbox's relay, off the kubelet's process (:meth:`CgroupTree.container`);
nothing raises for a cgroup it cannot make or a file it cannot write (the relay tells the kubelet, which logs it,
and the container runs without that limit); every directory made is removed once its processes are gone, and
:meth:`CgroupTree.close` removes the cluster's own. A ``local up`` killed with SIGKILL leaves its empty tree
behind: the next one removes trees whose process is gone.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mxjob_controller.kube import quantity

log = logging.getLogger(__name__)

CONTROLLERS = ("memory", "cpu", "pids")
CFS_PERIOD_US = 100_000
MIN_QUOTA_US = 1_000
_TREE_PREFIX = "mxjob-local-"
_NODE_SHARES = 1024 * (os.cpu_count() or 1)   # what kubepods gets: the node's CPUs, so pods weigh as processes do
_TREES = itertools.count(1)   # trees made by this process (a test process runs several clusters)
_OOM_KILL = re.compile(r"^oom_kill (\d+)$", re.M)


# --- pure: where the hierarchies are, what the limits are -------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Hierarchy:
    """Where one controller's limits are written: ``directory`` is this process's own cgroup in it."""

    controller: str
    version: int
    directory: Path


def candidate_hierarchies(mountinfo: str, proc_cgroup: str) -> dict[str, list[Hierarchy]]:
    """For each controller, the cgroup directories of this process that could carry it, from ``/proc/self/mountinfo``
    and ``/proc/self/cgroup``: the v2 one first (whether it has the controller is for the caller to read), then v1."""
    own_v1: dict[str, str] = {}
    own_v2 = None
    for line in proc_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            own_v2 = parts[2]
        for controller in parts[1].split(","):
            own_v1[controller] = parts[2]
    found: dict[str, list[Hierarchy]] = {c: [] for c in CONTROLLERS}
    v1: list[Hierarchy] = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if "-" not in fields:
            continue
        sep = fields.index("-")
        root, mount_point = fields[3], _unescape(fields[4])
        fstype, super_options = fields[sep + 1], fields[sep + 3] if len(fields) > sep + 3 else ""
        if fstype == "cgroup2" and own_v2 is not None:
            for controller in CONTROLLERS:
                found[controller].insert(0, Hierarchy(controller, 2, _inside(mount_point, root, own_v2)))
        elif fstype == "cgroup":
            for controller in set(super_options.split(",")) & set(CONTROLLERS):
                if controller in own_v1:
                    v1.append(Hierarchy(controller, 1, _inside(mount_point, root, own_v1[controller])))
    for hierarchy in v1:
        found[hierarchy.controller].append(hierarchy)
    return found


def _unescape(path: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)


def _inside(mount_point: str, mount_root: str, cgroup_path: str) -> Path:
    relative = os.path.relpath(cgroup_path, mount_root) if cgroup_path.startswith(mount_root) else "."
    return Path(os.path.normpath(os.path.join(mount_point, relative)))


@dataclass(frozen=True, slots=True)
class Limits:
    """A container's limits in the units the files take; None: no limit."""

    memory_bytes: int | None = None
    cpu_quota_us: int | None = None


def container_limits(container: Mapping) -> Limits:
    """``resources.limits`` of a container as cgroup values (CPU as the kubelet's ``milliCPUToQuota``)."""
    limits = (container.get("resources") or {}).get("limits") or {}
    memory = cpu = None
    with contextlib.suppress(quantity.QuantityError, TypeError):
        if "memory" in limits:
            memory = max(1, int(quantity.parse(limits["memory"]).value))
    with contextlib.suppress(quantity.QuantityError, TypeError):
        if "cpu" in limits:
            millis = int(-(-quantity.parse(limits["cpu"]).value * 1000 // 1))
            if millis > 0:
                cpu = max(MIN_QUOTA_US, millis * CFS_PERIOD_US // 1000)
    return Limits(memory, cpu)


def cpu_weight(version: int, shares: int) -> tuple[str, str, bool]:
    """The CPU weight as the kubelet writes it, as (file, value, quiet): v1 ``cpu.shares``, v2 ``cpu.weight`` from
    those shares."""
    if version == 1:
        return "cpu.shares", str(shares), False
    return "cpu.weight", str(max(1, min(10_000, 1 + ((shares - 2) * 9999) // 262142))), False


def oom_kills(text: str) -> int:
    """The ``oom_kill`` count of a ``memory.events`` (v2) or ``memory.oom_control`` (v1) file."""
    match = _OOM_KILL.search(text)
    return int(match.group(1)) if match else 0


# --- I/O: the cluster's tree ------------------------------------------------------------------------------------

@dataclass
class ContainerCgroup:
    """One container instance's cgroups: the ``cgroup.procs`` files its main process joins, and ``setup``, what the
    relay makes first: each folder (a pod's before its instance's) with the files written in it, as (file, value,
    quiet: a file some kernels lack, whose write may fail unsaid)."""

    directories: dict[str, Path] = field(default_factory=dict)
    setup: list[tuple[str, list[tuple[str, str, bool]]]] = field(default_factory=list)

    @property
    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in dict.fromkeys(self.directories.values())]


class CgroupTree:
    """The cluster's cgroups: made by :meth:`open`, one per pod and one per container instance below it."""

    def __init__(self, hierarchies: dict[str, Hierarchy], pod_pids_limit: int, name: str) -> None:
        self.hierarchies = hierarchies          # the controllers enforced, each where
        self.pod_pids_limit = pod_pids_limit
        self._roots: dict[str, Path] = {c: h.directory / name for c, h in hierarchies.items()}

    @classmethod
    def open(cls, pod_pids_limit: int) -> tuple[CgroupTree, dict[str, str]]:
        """The tree for this machine, and for each controller that cannot be used, why."""
        name = f"{_TREE_PREFIX}{os.getpid()}-{next(_TREES)}"
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
            proc_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError as e:
            return cls({}, pod_pids_limit, name), {c: f"cannot read /proc: {e.strerror}" for c in CONTROLLERS}
        usable: dict[str, Hierarchy] = {}
        why: dict[str, str] = {}
        for controller, candidates in candidate_hierarchies(mountinfo, proc_cgroup).items():
            reasons = []
            for hierarchy in candidates:
                reason = _prepare(hierarchy, name)
                if reason is None:
                    usable[controller] = hierarchy
                    break
                reasons.append(reason)
            else:
                why[controller] = "; ".join(reasons) or "no cgroup hierarchy has it"
        tree = cls(usable, pod_pids_limit, name)
        tree.sweep_stale()
        return tree, why

    def container(self, uid: str, name: str, instance: int, limits: Limits) -> ContainerCgroup:
        """One container instance's cgroups with its limits, as a plan the sandbox's relay carries out before it
        joins them (``sandbox_init._make_cgroups``): no file is touched here. Only the hierarchies the instance uses
        (a pod without ``limits.cpu`` has no CPU cgroup), each folder once (v2's controllers share one). Each plan
        makes its pod's folder too, where it is not there yet, and sets the pod's limits again: two containers of
        one pod starting at once each find the pod's folder ready for theirs (issue 48: these ``mkdir``s and
        writes, a fraction of a millisecond each of the kernel's time and a hand-off of the kubelet's one core,
        now run in the relay, on another)."""
        made = ContainerCgroup()
        steps: dict[str, list[tuple[str, str, bool]]] = {}   # folder → the files written in it, in order
        for controller, root in self._roots.items():
            if controller == "cpu" and limits.cpu_quota_us is None:
                # A cgroup of its own competes for the CPU as one task would: without a quota to enforce, the
                # container stays in local up's, scheduled as any process of this machine.
                continue
            pod_folder = root / f"pod-{uid}"
            directory = pod_folder / f"{name}-{instance}"
            made.directories[controller] = directory
            v2 = self.hierarchies[controller].version == 2
            pod_writes = steps.setdefault(str(pod_folder), [])
            if v2 and not pod_writes:
                pod_writes.append(("cgroup.subtree_control", " ".join(f"+{c}" for c in self._v2_controllers()),
                                   False))
            writes = steps.setdefault(str(directory), [])
            if controller == "pids" and self.pod_pids_limit > 0:
                pod_writes.append(("pids.max", str(self.pod_pids_limit), False))
            if controller == "cpu":
                pod_writes.append(cpu_weight(2 if v2 else 1, _NODE_SHARES))
                writes.append(cpu_weight(2 if v2 else 1, max(2, limits.cpu_quota_us * 1024 // CFS_PERIOD_US)))
                if v2:
                    writes.append(("cpu.max", f"{limits.cpu_quota_us} {CFS_PERIOD_US}", False))
                else:
                    writes.append(("cpu.cfs_period_us", str(CFS_PERIOD_US), False))
                    writes.append(("cpu.cfs_quota_us", str(limits.cpu_quota_us), False))
            if controller == "memory" and limits.memory_bytes is not None:
                if v2:
                    writes.append(("memory.max", str(limits.memory_bytes), False))
                    writes.append(("memory.swap.max", "0", True))
                else:
                    writes.append(("memory.limit_in_bytes", str(limits.memory_bytes), False))
                    writes.append(("memory.memsw.limit_in_bytes", str(limits.memory_bytes), True))
        made.setup = list(steps.items())   # in the order first named: each pod's folder before its instance's
        return made

    def oom_killed(self, cgroup: ContainerCgroup) -> bool:
        """Whether the kernel's OOM killer killed a process of this container instance."""
        directory = cgroup.directories.get("memory")
        if directory is None:
            return False
        name = "memory.events" if self.hierarchies["memory"].version == 2 else "memory.oom_control"
        try:
            return oom_kills((directory / name).read_text()) > 0
        except OSError:
            return False

    def remove_container(self, cgroup: ContainerCgroup) -> None:
        for directory in dict.fromkeys(cgroup.directories.values()):
            _rmdir(directory)

    def remove_pod(self, uid: str) -> None:
        for root in dict.fromkeys(self._roots.values()):
            remove_tree(root / f"pod-{uid}")

    def close(self, timeout: float = 5.0) -> None:
        """Remove the cluster's cgroups, every pod's and container's below them, within about ``timeout`` seconds
        for them all (a busy one is not waited for 2 s each: a stop may leave a thousand)."""
        deadline = time.monotonic() + timeout
        for root in self._roots.values():
            remove_tree(root, deadline)

    def sweep_stale(self) -> None:
        """Remove the trees of ``local up`` processes that are gone (killed before they could)."""
        for hierarchy in self.hierarchies.values():
            with contextlib.suppress(OSError):
                for entry in hierarchy.directory.iterdir():
                    pid = entry.name.removeprefix(_TREE_PREFIX).split("-")[0]
                    if entry.name.startswith(_TREE_PREFIX) and pid.isdigit() and not Path(f"/proc/{pid}").exists():
                        remove_tree(entry)

    def _v2_controllers(self) -> list[str]:
        return [c for c, h in self.hierarchies.items() if h.version == 2]


def _prepare(hierarchy: Hierarchy, name: str) -> str | None:
    """Make the cluster's own cgroup in ``hierarchy``; None if limits of its controller can be set there, else why
    not."""
    base = hierarchy.directory
    controller = hierarchy.controller
    if hierarchy.version == 2:
        try:
            available = (base / "cgroup.controllers").read_text().split()
        except OSError as e:
            return f"cgroup v2 at {base}: {e.strerror}"
        if controller not in available:
            return f"cgroup v2 at {base} does not delegate {controller}"
        try:
            enabled = (base / "cgroup.subtree_control").read_text().split()
            if controller not in enabled:
                (base / "cgroup.subtree_control").write_text(f"+{controller}")
        except OSError as e:
            return f"cgroup v2 at {base}: cannot enable {controller} for child cgroups ({e.strerror})"
    root = base / name
    try:
        root.mkdir(exist_ok=True)
        if hierarchy.version == 2:
            (root / "cgroup.subtree_control").write_text(f"+{controller}")
        if controller == "cpu":
            weight_file, weight, _quiet = cpu_weight(hierarchy.version, _NODE_SHARES)
            _write(root / weight_file, weight)
    except OSError as e:
        with contextlib.suppress(OSError):
            root.rmdir()
        return f"cgroup v{hierarchy.version} at {base} is not writable ({e.strerror})"
    return None


def _write(path: Path, value: str, quiet: bool = False) -> None:
    try:   # as write_text, without its text layer (a few files per container start)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)
    except OSError as e:
        if not quiet:
            log.warning("cannot write %s to %s (%s): that limit is not enforced", value, path, e.strerror)


def _rmdir(directory: Path, deadline: float | None = None) -> None:
    """Remove a cgroup once its last process is gone (the kernel frees it a moment after the exit): tried until the
    monotonic ``deadline`` (default: 2 s from now)."""
    deadline = time.monotonic() + 2.0 if deadline is None else deadline
    while True:
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as e:
            if time.monotonic() >= deadline:
                log.warning("cannot remove cgroup %s: %s", directory, e.strerror)
                return
            time.sleep(0.02)


def remove_tree(directory: Path, deadline: float | None = None) -> None:
    """Remove a cgroup and every cgroup below it, deepest first, each tried until the monotonic ``deadline``
    (default: 2 s from when it is tried). Two removers may meet (a pod's end and the kubelet's close): a part the
    other took first is not an error. The children are told apart by the directory's own listing (no ``stat`` of
    each of a cgroup's dozens of files: a thousand containers' cost a second)."""
    try:
        with os.scandir(directory) as entries:
            children = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return
    for child in children:
        remove_tree(child, deadline)
    _rmdir(directory, deadline)
