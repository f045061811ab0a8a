"""Container logs: one file per container instance, served through ``pods/log`` as a kubelet serves them.

Layout: ``<root>/<pod uid>/<container>/<restartCount>.log``, stdout and stderr together, kept until the pod is gone,
each rotated as the kubelet rotates it (``log_rotation.py``: 10 MiB per file, 5 files, ``<n>.log.<seq>`` the rotated
ones); a read covers the rotated files and the live one. The newest instance is the container's log; the one
before it is ``previous`` (rotated apart from the newest: ``--previous`` is whole after any rotation).

Each instance's end is recorded too (its ``terminated`` state, and whether the kubelet stopped it), before the
kubelet reports it in the pod's status. So whoever learns from the API that a job failed (which the controller
decides from that status) finds the failed instances here already, with their output (:meth:`LogStore.failed`),
even when the job's pods were deleted at once (``cleanPodPolicy``) and never seen failing in the API: ``local run``
prints their last lines from this.

What a request gets follows the kubelet (``validateContainerLogStatus``), read from the pod's status: a container
that has not started yet is a 400 "container … is waiting to start: <reason>", one that ended without ever running
(its pod failed or was stopped first) "container … is terminated"; ``previous`` without an earlier instance
is a 400 "previous terminated container … not found". ``follow`` streams until the instance ends and its output is
read (or the kubelet stops); ``tailLines``, ``limitBytes``, ``sinceSeconds``/``sinceTime`` and ``timestamps`` as kube
does (the server has decoded and validated the options): lines after both cut-offs, each after its time with
``timestamps``, and at most ``limitBytes`` of that. Lines' times come from ``log_times.py``.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.kinds.pod_log_options import LogOptions
from mxjob_controller.local.kubelet.log_rotation import MAX_FILES, MAX_SIZE, RotatedLog
from mxjob_controller.local.kubelet.log_times import LogTimes, Timeline, stamped

_FOLLOW_POLL = 0.1   # seconds between looks at a followed log file that has nothing new
_BLOCK = 64 * 1024


class Instance(NamedTuple):
    """One container instance whose process started: its pod, container and log file, and the uid of the pod's
    controller (its job; "" when it has none)."""

    namespace: str
    pod: str
    container: str
    path: Path
    owner_uid: str = ""


class Ended(NamedTuple):
    """How an instance ended: its ``terminated`` state as the pod's status reports it, and whether the kubelet
    stopped it (the pod deleted, its deadline passed, the kubelet stopping) rather than it exiting by itself."""

    terminated: Mapping[str, Any]
    stopped: bool


Listener = Callable[[Instance], None]


class LogStore:
    def __init__(self, root: Path, max_size: int = MAX_SIZE, max_files: int = MAX_FILES) -> None:
        self.root = root
        self.max_size, self.max_files = max_size, max_files
        self._logs: dict[Path, RotatedLog] = {}
        self._lock = threading.Lock()
        self._running: set[Path] = set()   # files whose process has not ended yet
        self._instances: list[Instance] = []   # instances started whose files remain (for listeners added late)
        self._ends: dict[Path, Ended] = {}      # how each of them ended, once it has
        self._listeners: list[Listener] = []
        self._closed = threading.Event()
        self._times = LogTimes(self._closed, self._measure)

    def path(self, pod_uid: str, container: str, attempt: int) -> Path:
        return self.root / pod_uid / container / f"{attempt}.log"

    def started(self, path: Path, namespace: str = "", pod: str = "", owner_uid: str = "") -> None:
        """A container's process started writing ``path``: listeners hear of it now, on the caller's thread."""
        instance = Instance(namespace, pod, path.parent.name, path, owner_uid)
        with self._lock:
            self._logs[path] = RotatedLog(path, self.max_size, self.max_files)
            self._running.add(path)
            self._instances.append(instance)
            listeners = list(self._listeners)
        self._times.started(path)
        for listener in listeners:
            listener(instance)

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` for every instance started so far, then for each one as it starts: none is missed,
        however quickly it ran and its pod was removed (``local run --logs``). It must not block."""
        with self._lock:
            self._listeners.append(listener)
            earlier = list(self._instances)
        for instance in earlier:
            listener(instance)

    def follow(self, path: Path) -> Iterator[bytes]:
        """The file's output from its start, until its process has ended and the rest is read, or :meth:`close`
        (an empty chunk now and then while nothing new comes: the reader's chance to stop)."""
        return self._limited(self._chunks(path, None, True), None)

    def ended(self, path: Path, terminated: Mapping[str, Any] | None = None, stopped: bool = False) -> None:
        """The process writing ``path`` ended (``terminated``: its state, recorded for :meth:`failed`)."""
        self._times.ended(path)
        with self._lock:
            self._running.discard(path)
            if terminated is not None:
                self._ends[path] = Ended(dict(terminated), stopped)

    def failed(self, owner_uid: str) -> list[tuple[Instance, Ended]]:
        """The containers of ``owner_uid``'s pods whose newest instance (per pod name: a pod recreated under its
        name counts once) ended by itself with a non-zero exit code, in the order they started."""
        with self._lock:
            newest = {(i.namespace, i.pod, i.container): i for i in self._instances if i.owner_uid == owner_uid}
            ends = {i: self._ends.get(i.path) for i in newest.values()}
        return [(i, end) for i, end in ends.items()
                if end is not None and not end.stopped and end.terminated.get("exitCode")]

    def is_running(self, path: Path) -> bool:
        with self._lock:
            return path in self._running

    def remove_pod(self, pod_uid: str) -> None:
        shutil.rmtree(self.root / pod_uid, ignore_errors=True)
        self._forget(lambda path: path.parent.parent.name == pod_uid)

    def log_of(self, path: Path) -> RotatedLog:
        """The rotated log whose live file is ``path`` (one this store did not start is read as its files show)."""
        with self._lock:
            found = self._logs.get(path)
            if found is None:
                found = self._logs[path] = RotatedLog.from_disk(path, self.max_size, self.max_files)
            return found

    def _measure(self, path: Path) -> int | None:
        """For the times' sampler: rotate ``path``'s log if it is due; the bytes written to it so far."""
        with self._lock:
            found = self._logs.get(path)
        return found.rotate() if found is not None else None

    def _forget(self, gone: Callable[[Path], bool]) -> None:
        """Drop the record of instances whose files are removed: it lasts only as long as the files do."""
        with self._lock:
            for path in [p for p in self._logs if gone(p)]:
                self._logs.pop(path).remove()
            self._instances = [i for i in self._instances if not gone(i.path)]
            self._ends = {path: end for path, end in self._ends.items() if not gone(path)}
        self._times.forget(gone)

    def close(self, timeout: float = 2.0) -> None:
        """Followers end, and the sampling of log times; files stay until the caller removes ``root``."""
        self._closed.set()
        self._times.join(timeout)

    def prune(self, pod_uid: str, container: str, keep: int) -> None:
        """Remove all but the newest ``keep`` instances' files (kube keeps the current and the previous one)."""
        pruned = set(self.attempts(pod_uid, container)[:-keep or None])
        for path in pruned:
            self.log_of(path).remove()
            path.unlink(missing_ok=True)
        if pruned:
            self._forget(pruned.__contains__)

    def attempts(self, pod_uid: str, container: str) -> list[Path]:
        folder = self.root / pod_uid / container
        try:
            files = [p for p in folder.iterdir() if p.suffix == ".log" and p.stem.isdigit()]
        except FileNotFoundError:
            return []
        return sorted(files, key=lambda p: int(p.stem))

    # --- pods/log ---------------------------------------------------------------------------------------------

    def read(self, pod: dict[str, Any], container: str, options: LogOptions) -> Iterator[bytes]:
        """The ``pods/log`` answer for a bound pod's ``container`` (options decoded and validated by the server):
        checked now, streamed by the returned iterator."""
        meta = pod.get("metadata") or {}
        name = meta.get("name") or ""
        previous = options.previous
        files = self.attempts(meta.get("uid") or "", container)
        if previous:
            # kube's "previous" is the instance in lastState: the newest file while the container waits to
            # restart (CrashLoopBackOff), the one before it once a newer instance has started.
            back = 1 if _waiting_after_an_end(pod, container) else 2
            if len(files) < back or (back == 2 and not _has_last_state(pod, container)):
                raise errors.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
            path = files[-back]
        elif files:
            path = files[-1]
        elif _never_ran_and_ended(pod, container):   # e.g. its pod failed before it started
            raise errors.bad_request(f'container "{container}" in pod "{name}" is terminated')
        else:
            raise errors.bad_request(f'container "{container}" in pod "{name}" is waiting to start: '
                                     f"{_waiting_reason(pod, container)}")
        follow = options.follow and not previous
        timeline = self._times.timeline(path) if options.timestamps or options.since is not None else None
        start = self._start(self.log_of(path), options.tail_lines, options.since, timeline)
        chunks = self._chunks(path, start, follow)
        if options.timestamps and timeline is not None:
            chunks = stamped(chunks, start if start is not None else self.log_of(path).bounds()[0], timeline)
        return self._limited(chunks, options.limit_bytes)

    @staticmethod
    def _start(rotated: RotatedLog, tail: int | None, since: float | None, timeline: Timeline | None) -> int | None:
        """Where the answer begins (an absolute offset): the later of the ``tail`` lines' start and the first line
        written ``since``."""
        if tail is None and since is None:
            return None
        f = rotated.reader()
        start = _tail_offset(f, tail) if tail is not None else f.tell()
        if since is not None and timeline is not None:
            start = max(start, _line_start(f, timeline.offset_since(since)))
        return start

    def _chunks(self, path: Path, start: int | None, follow: bool) -> Iterator[bytes]:
        if not path.exists():
            return
        f = self.log_of(path).reader()
        try:
            if start is not None:
                f.seek(start)
            while True:
                chunk = f.read(_BLOCK)
                if chunk:
                    yield chunk
                    continue
                if not follow or self._closed.is_set() or not path.exists():
                    return
                if not self.is_running(path):
                    rest = f.read()  # the last words, written just before the process ended
                    if rest:
                        yield rest
                    return
                self._closed.wait(_FOLLOW_POLL)
                yield b""  # lets the server notice a stop or a client that went away
        finally:
            f.close()

    @staticmethod
    def _limited(chunks: Iterator[bytes], limit: int | None) -> Iterator[bytes]:
        """At most ``limit`` bytes of ``chunks`` (all of them for None); the source is closed when cut short."""
        sent = 0
        try:
            for chunk in chunks:
                part = chunk if limit is None else chunk[: max(0, limit - sent)]
                sent += len(part)
                yield part
                if limit is not None and sent >= limit:
                    return
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()


def tail_lines(path: Path, lines: int) -> list[str]:
    """The last ``lines`` lines of one instance's log, its rotated files included ([] when it is gone)."""
    if not path.exists():
        return []
    f = RotatedLog.from_disk(path).reader()
    f.seek(_tail_offset(f, lines))
    return f.read().decode("utf-8", "replace").splitlines()


def _tail_offset(f: Any, lines: int) -> int:
    """The offset where the last ``lines`` lines begin (a final line without a newline counts as one)."""
    first = f.seek(0)
    end = f.seek(0, 2)
    if lines <= 0:
        return end
    pos, count = end, 0
    while pos > first:
        step = min(_BLOCK, pos - first)
        pos -= step
        f.seek(pos)
        block = f.read(step)
        i = len(block)
        while (i := block.rfind(b"\n", 0, i)) >= 0:
            if pos + i != end - 1:  # the newline ending the last line starts no line after it
                count += 1
                if count == lines:
                    return pos + i + 1
    return first


def _line_start(f: Any, offset: int) -> int:
    """The start of the line holding the byte at ``offset``: just after the newline before it (the first byte
    kept if none)."""
    first = f.seek(0)
    pos = max(offset, first)
    while pos > first:
        step = min(_BLOCK, pos - first)
        f.seek(pos - step)
        block = f.read(step)
        i = block.rfind(b"\n")
        if i >= 0:
            return pos - step + i + 1
        pos -= step
    return first


def _status_of(pod: dict[str, Any], container: str) -> dict[str, Any]:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            if cs.get("name") == container:
                return cs
    return {}


def _has_last_state(pod: dict[str, Any], container: str) -> bool:
    return bool((_status_of(pod, container).get("lastState") or {}).get("terminated"))


def _waiting_after_an_end(pod: dict[str, Any], container: str) -> bool:
    cs = _status_of(pod, container)
    return "waiting" in (cs.get("state") or {}) and _has_last_state(pod, container)


def _never_ran_and_ended(pod: dict[str, Any], container: str) -> bool:
    """The kubelet's ``validateContainerLogStatus``: a container terminated (now or last) without an instance to read
    is "terminated", not "waiting to start"."""
    cs = _status_of(pod, container)
    return bool((cs.get("state") or {}).get("terminated") or (cs.get("lastState") or {}).get("terminated"))


def _waiting_reason(pod: dict[str, Any], container: str) -> str:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(key) or ():
            if cs.get("name") == container:
                waiting = (cs.get("state") or {}).get("waiting")
                if waiting and waiting.get("reason"):
                    return waiting["reason"]
    is_init = any(c.get("name") == container for c in (pod.get("spec") or {}).get("initContainers") or ())
    pending_init = not is_init and (pod.get("spec") or {}).get("initContainers")
    return "PodInitializing" if pending_init else "ContainerCreating"
