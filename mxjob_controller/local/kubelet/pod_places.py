"""What the local kubelet keeps on this machine for each pod: its own writable places (what it sees as ``/tmp`` and
``/var/tmp``) and, when ``local up`` is root, the block of host user ids its user namespace maps to; and the
sweeping of what a ``local up`` killed by SIGKILL left behind.

A pod's places belong to its identity: its namespace, its name and the uid of its controller. A pod a job's
controller recreates under the same name (an MXJob replica restarted by its ``ExitCode`` policy) finds what its
predecessor wrote there, with the same host ids (as a StatefulSet's volume follows its pod's name); no other pod
ever sees them. A pod without a controller has them until it is removed; a controller's are removed once no pod
of that controller has been here for a grace (``kubelet.PLACES_GRACE``, 5 min: a job restarting every replica
deletes them all before it creates their successors).

Every temporary folder of a local cluster (the kubelet's, the sandbox's, the TLS folders) is named
``mxjob-<what>-<pid>-…`` under the temporary directory, so that the next kubelet to start removes those whose
``local up`` is gone (:func:`sweep_leftovers`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from mxjob_controller.local.kubelet.security_context import IDS_PER_POD
from mxjob_controller.runtime.cache_keys import controller_uid_index

log = logging.getLogger(__name__)

#: The pod's own writable places: where it sees them, and their folder's name in its places.
WRITABLE = (("/tmp", "tmp"), ("/var/tmp", "var-tmp"))
_FIRST_BLOCK, _LAST_BLOCK = 1, 65534   # block 0 holds the host's own users; 65535 would reach uid 2^32-1 (-1)
# Temporary folders of a local cluster, each named with its process's pid: the sandbox's, the kubelet's logs, the
# API server's and the webhooks' TLS folders.
_PREFIXES = ("mxjob-sandbox-", "mxjob-local-logs-", "mxjob-apiserver-tls-", "mxjob-webhook-tls-")

PodKey = tuple[str, str, str]


def pod_key(pod: Mapping[str, Any]) -> PodKey:
    """(namespace, name, controller uid or ""): whose places a pod gets."""
    meta = pod.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or "", "".join(controller_uid_index(dict(pod)))


def own_temp_dir(what: str) -> Path:
    """A new private folder ``mxjob-<what>-<pid>-…`` in the temporary directory (swept once this process is gone)."""
    return Path(tempfile.mkdtemp(prefix=f"mxjob-{what}-{os.getpid()}-"))


def _leftover_pid(name: str) -> int | None:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            pid = name[len(prefix):].split("-", 1)[0]
            return int(pid) if pid.isdigit() else None
    return None


def sweep_leftovers(directory: str | None = None, alive: Callable[[int], bool] | None = None) -> list[str]:
    """Remove this user's folders of ``local up`` processes that are gone (killed before they could); their names."""
    directory = directory or tempfile.gettempdir()
    alive = alive or (lambda pid: os.path.exists(f"/proc/{pid}"))
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            pid = _leftover_pid(entry.name)
            if pid is None or pid == os.getpid() or alive(pid):
                continue
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.geteuid():
                    remove_tree(entry.path)
                    removed.append(entry.name)
    if removed:
        log.info("removed what earlier local clusters left behind: %s", ", ".join(removed))
    return removed


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove ``path`` whatever a pod left in it (folders it made unreadable to their owner included). Only folders
    inside ``path`` have their mode changed: never the folder it lies in (``/tmp`` made 0700 locked every other
    user out of it)."""
    top = os.path.abspath(path)

    def unblock(_function: Any, failed: str, _error: Any) -> None:
        with contextlib.suppress(OSError):
            failed = os.path.abspath(failed)
            parent = os.path.dirname(failed)
            if failed == top:   # the tree's own folder: opened up itself (if it is still there), never its parent
                if os.path.isdir(failed) and not os.path.islink(failed):
                    os.chmod(failed, stat.S_IRWXU)
                    shutil.rmtree(failed, ignore_errors=True)
                return
            if parent != top and not parent.startswith(top + os.sep):
                return
            os.chmod(parent, stat.S_IRWXU)
            if os.path.isdir(failed) and not os.path.islink(failed):
                os.chmod(failed, stat.S_IRWXU)
                shutil.rmtree(failed, ignore_errors=True)
            else:
                os.unlink(failed)
    shutil.rmtree(path, onerror=unblock)


class PodPlaces:
    """The pods' places under ``root`` and their id blocks; thread-safe (workers start containers in parallel)."""

    def __init__(self, root: Path, root_user: bool) -> None:
        self.root = root
        self._root_user = root_user
        self._lock = threading.Lock()
        self._places: dict[PodKey, tuple[Path, int]] = {}   # key → (folder, id block)
        self._blocks_used: set[int] = set()
        # A random first block: two local clusters on one machine seldom hand out the same ids.
        self._next_block = random.randint(_FIRST_BLOCK, _LAST_BLOCK)
        self._count = 0

    def of(self, pod: Mapping[str, Any]) -> tuple[Path, int]:
        """The pod's folder and its id block (0 without root), handed out on first use. Nothing is made here: the
        sandbox's relay makes the folder and its writable places (:meth:`folders`) before it binds them, off the
        kubelet's process (issue 48: five system calls a pod's first start, each a hand-off of its core)."""
        key = pod_key(pod)
        with self._lock:
            entry = self._places.get(key)
            if entry is None:
                block = self._take_block() if self._root_user else 0
                self._count += 1
                entry = self._places[key] = (self.root / str(self._count), block)
            return entry

    @staticmethod
    def folders(folder: Path) -> list[tuple[str, int]]:
        """What the relay makes where it is not there yet, in order, each with its mode (made with no umask): the
        pod's folder, its owner's alone, then each writable place as /tmp is (every user of the pod writes, none
        removes another's), complete from the moment it exists."""
        return [(str(folder), 0o700), *((str(folder / name), 0o1777) for _inside, name in WRITABLE)]

    def writable_dirs(self, folder: Path) -> list[tuple[str, str]]:
        """(where the pod sees it, the host folder) of each of the pod's writable places."""
        return [(inside, str(folder / name)) for inside, name in WRITABLE]

    def host_path(self, pod: Mapping[str, Any], inside: str) -> Path | None:
        """Where on this machine the pod's file ``inside`` (under /tmp or /var/tmp) is, or None."""
        with self._lock:
            entry = self._places.get(pod_key(pod))
        if entry is None:
            return None
        for where, name in WRITABLE:
            if inside == where or inside.startswith(where + "/"):
                return entry[0] / name / os.path.relpath(inside, where)
        return None

    def release(self, keep: Callable[[PodKey], bool]) -> None:
        """Remove the places of every pod identity ``keep`` does not keep, and free their blocks."""
        with self._lock:
            gone = [(key, entry) for key, entry in self._places.items() if not keep(key)]
            for key, (_folder, block) in gone:
                del self._places[key]
                self._blocks_used.discard(block)
        for _key, (folder, _block) in gone:
            remove_tree(folder)

    def keys(self) -> Iterable[PodKey]:
        with self._lock:
            return list(self._places)

    def _take_block(self) -> int:
        span = _LAST_BLOCK - _FIRST_BLOCK + 1
        for step in range(span):
            block = _FIRST_BLOCK + (self._next_block - _FIRST_BLOCK + step) % span
            if block not in self._blocks_used:
                self._blocks_used.add(block)
                self._next_block = block + 1 if block < _LAST_BLOCK else _FIRST_BLOCK
                return block
        raise RuntimeError(f"every block of {IDS_PER_POD} host ids is in use")
