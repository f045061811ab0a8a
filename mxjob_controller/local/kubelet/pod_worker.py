"""One pod bound to the local node, run from start to end on its own thread (``kubelet-pod-<ns>/<name>``).

The lifecycle, as a kubelet runs it:
0. admission: what the node cannot honour (``pod_admission.py``: rejected, ``UnsupportedPodSpec``); each
   container's GPUs (``devices.py``), held until the pod ends; when they are not free, the pod is
   rejected as kube's kubelet rejects it (``Failed``, ``UnexpectedAdmissionError``) and nothing of it runs;
1. init containers one at a time, in order; one that fails is restarted (back-off below) unless the pod's
   ``restartPolicy`` is ``Never``, which fails the pod;
2. then every app container at once. When one exits, the rest of its process group is killed (the container is
   over), and it is restarted in place when the policy says so (``Always``; ``OnFailure`` after a non-zero exit):
   ``restartCount`` grows, the ended instance becomes ``lastState``. The first restart is immediate; each later
   one waits (``CrashLoopBackOff``) ``initial * 2^(n-2)`` seconds, at most ``max``, as the kubelet's back-off does
   (and it forgets a container that ran for longer than twice ``max``);
3. ``spec.activeDeadlineSeconds`` past ``startTime``: every container is stopped, the pod ``Failed`` with reason
   ``DeadlineExceeded``;
4. deletion (``deletionTimestamp`` set): SIGTERM to every container's process group, the grace period (at most
   the options' ``max_grace_period``, with a Warning event ``GracePeriodCapped`` when that is less: any int64 is a
   valid grace period), SIGKILL; the final status is written, then the pod is deleted with grace period 0 (the
   node's confirmation that removes it). A pod removed without that (force-deleted) has its processes stopped the
   same way, with no writes.
5. a container that cannot be configured (a missing ConfigMap or key, a value past ``execve``'s bounds) waits with
   ``CreateContainerConfigError`` and is tried again every few seconds; one without a command, which can never
   start here, is ``CreateContainerError`` and then ends as a container that failed to start (exit 128), so the
   restart policy decides what follows. Each is said once in a Warning event ``Failed``, as a kubelet says it.
6. events about each container, as a kubelet writes them (``involvedObject.fieldPath`` naming it): ``Created`` and
   ``Started`` when its process starts, ``BackOff`` when a restart waits (the crash-loop back-off), ``Killing``
   when it is stopped for good (deletion, deadline). There is no ``Pulling``/``Pulled``: no image is pulled.

Only this thread changes the pod's containers (the reaper only wakes it), so their records need no lock.
Status is written through ``pods/<name>/status`` (merge patch of the whole status) once per turn of the thread in
which it changed (the latest status, not each step: the first write already says what the first start came to); a
write that fails is retried on the next turn, never dropped. The thread ends when the pod reaches ``Succeeded`` or
``Failed``, is removed, or the kubelet stops: then it just ends, writing nothing, and leaves its containers to the
kubelet, which stops them all from its one thread (a thousand workers each waiting on their own groups starved the
sandbox's launcher thread, and the stop with it).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from mxjob_controller.kube.timefmt import now_rfc3339, parse_time, rfc3339
from mxjob_controller.local.kubelet import pod_admission, reported_status
from mxjob_controller.local.kubelet.container_env import (
    ContainerConfigError,
    HostMemo,
    NoCommandError,
    base_environment,
    container_argv,
    container_env,
)
from mxjob_controller.local.kubelet.devices import Assignment, DevicesUnavailableError, NodeDevices, device_env
from mxjob_controller.local.kubelet.logs import LogStore
from mxjob_controller.local.kubelet.options import KubeletOptions
from mxjob_controller.local.kubelet.runtime import ContainerProcess, Launch, Reaper, terminate_groups
from mxjob_controller.local.kubelet.sandbox import Sandbox, pod_ref
from mxjob_controller.runtime.cache_keys import controller_uid_index
from mxjob_controller.runtime.client import PODS, Client, KubeError, NotFound
from mxjob_controller.runtime.events import NORMAL, WARNING, EventRecorder, ObjectReference

log = logging.getLogger(__name__)

_RETRY = 1.0              # seconds before a failed status write is retried
_CONFIG_RETRY = 5.0       # ... before a container waiting on a missing ConfigMap or Secret is tried again
_IDLE_WAKE = 5.0          # longest sleep between turns when no timer is due
_EXIT_STATUS_WAIT = 2.0   # ... for the status of a container whose group is gone (runtime.ContainerProcess.settle)
_FINAL_WRITE = 30.0       # seconds a pod's last status write is retried (the API server may be failing)
_KEPT_INSTANCES = 2       # log files kept per container: the current instance and the previous one
GRACE_PERIOD_CAPPED = "GracePeriodCapped"   # the event saying a pod's grace period was cut to max_grace_period


class _UnsupportedError(Exception):
    reason = pod_admission.REASON


# --- what a worker needs of its node ----------------------------------------------------------------------------

class Node(Protocol):
    """What a worker uses of the kubelet that runs it (``kubelet.Kubelet``). Declared here, on the worker's side,
    so that the kubelet imports its workers and not the other way round."""

    client: Client
    options: KubeletOptions
    logs: LogStore
    reaper: Reaper
    events: EventRecorder
    sandbox: Sandbox
    stopping: threading.Event
    allocatable: dict[str, str]
    devices: NodeDevices
    service_names: HostMemo

    def worker_done(self, worker: PodWorker) -> None: ...
    def lookup(self, kind: str, namespace: str, name: str) -> dict | None: ...
    def pod_address(self, namespace: str, name: str) -> str: ...
    def service_resolver(self, namespace: str) -> Callable[[str, str, bool], str | None]: ...


@dataclass
class Slot:
    """One container of the pod and what became of it."""

    spec: dict[str, Any]
    init: bool
    restart_count: int = 0
    exits: int = 0                       # ends so far, for the back-off
    last_exit: float = 0.0               # monotonic time of the last exit
    state: dict[str, Any] = field(default_factory=dict)
    last_state: dict[str, Any] = field(default_factory=dict)
    proc: ContainerProcess | None = None
    container_id: str = ""
    due: float | None = None             # monotonic time of the next start; None: not to be started
    config_error: bool = False

    @property
    def name(self) -> str:
        return self.spec.get("name") or ""

    @property
    def succeeded(self) -> bool:
        return (self.state.get("terminated") or {}).get("exitCode") == 0

    def status(self) -> dict[str, Any]:
        return reported_status.container_status(self.name, self.spec.get("image") or "", self.state, self.last_state,
                                           self.restart_count, self.container_id, self.init)


class PodWorker:
    def __init__(self, kubelet: Node, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.kubelet = kubelet
        self.namespace, self.name, self.uid = meta["namespace"], meta["name"], meta["uid"]
        self._pod = pod
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._gone = False
        self._terminating = False
        spec = pod.get("spec") or {}
        self.restart_policy = spec.get("restartPolicy") or "Always"
        self.init = [Slot(c, True, state=reported_status.waiting("PodInitializing"))
                     for c in spec.get("initContainers") or []]
        first_wait = "PodInitializing" if self.init else "ContainerCreating"
        self.app = [Slot(c, False, state=reported_status.waiting(first_wait)) for c in spec.get("containers") or []]
        self._start_time = (pod.get("status") or {}).get("startTime") or now_rfc3339()
        self.pod_ip = kubelet.pod_address(self.namespace, self.name)
        self._written: dict[str, Any] | None = None
        self._reason = self._message = ""
        self._instances = 0                  # container instances started: each gets cgroups of its own
        self._devices: Assignment = {}       # container name → its GPUs, from admission to the pod's end
        self._rejected: dict[str, Any] | None = None   # the status of a pod refused at admission
        self.thread = threading.Thread(target=self._run, name=f"kubelet-pod-{self.namespace}/{self.name}", daemon=True)

    # --- told by the kubelet --------------------------------------------------------------------------------

    def start(self) -> PodWorker:
        self.thread.start()
        return self

    def update(self, pod: dict[str, Any]) -> None:
        """A new version of the pod. The thread wakes only when it changes what a turn decides on (its spec or its
        deletion): the echo of the worker's own status write (every pod has one) then costs no turn, which in a
        burst of hundreds of pods is a thread woken, and a turn of the interpreter lock, for nothing."""
        with self._lock:
            old, self._pod = self._pod, pod
        if _decides_differently(old, pod):
            self._wake.set()

    def removed(self, pod: dict[str, Any]) -> None:
        """The pod is gone from the API (force-deleted, or its deletion confirmed): ``pod`` is its last state."""
        with self._lock:
            self._pod = pod
        self._gone = True
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    def processes(self) -> list[ContainerProcess]:
        """The running containers (read from other threads: a snapshot)."""
        return [proc for s in (*self.init, *self.app) if (proc := s.proc) is not None]

    # --- the thread ---------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except Exception:
            log.exception("pod %s/%s: the local kubelet's worker failed; stopping its containers", self.namespace,
                          self.name)
            self._reason, self._message = "KubeletError", "the local kubelet failed to run this pod (see its log)"
            self._terminate(0)
            self._write_final()
        finally:
            self.kubelet.worker_done(self)

    def _loop(self) -> None:
        if not self._admit():
            self._write_final()
            return
        # No status before the first turn: it starts the first containers and writes what came of it (Running, or
        # why they wait), as kube's status manager writes a pod's latest status rather than each step on the way.
        for slot in self.init[:1] or self.app:
            slot.due = time.monotonic()
        while True:
            if self.kubelet.stopping.is_set():
                return   # the kubelet stops every container itself (Kubelet.stop), from one thread
            pod = self._current()
            meta = pod.get("metadata") or {}
            if self._gone:
                self._terminate(self._capped(_grace(pod)))
                return
            if meta.get("deletionTimestamp"):
                self._terminate(self._capped(_grace(pod)))
                self._write_final()
                self._confirm_deletion()
                return
            if self._deadline_passed(pod):
                self._reason, self._message = "DeadlineExceeded", \
                    "Pod was active on the node longer than the specified deadline"
                self._terminate(self._capped((pod.get("spec") or {}).get("terminationGracePeriodSeconds") or 0))
                self._write_final()
                return
            self._collect_exits()
            self._start_due()
            status = self._status()
            written = self._write_status(status)
            if written and status["phase"] in (reported_status.SUCCEEDED, reported_status.FAILED):
                if (self._current().get("metadata") or {}).get("deletionTimestamp"):
                    self._confirm_deletion()  # deleted while it ended: nothing else will confirm it
                return
            self._wake.wait(_RETRY if not written else self._next_timer())
            self._wake.clear()

    def _admit(self) -> bool:
        """Kube's kubelet admission, before anything of the pod runs: each container's devices (``devices.py``),
        or the pod rejected as kube rejects it (a Warning event, then ``Failed`` with the reason and "Pod was
        rejected: …", the kubelet's conditions gone with the status it replaces)."""
        pod = self._current()
        refused = pod_admission.refusals(pod)   # the API server refuses these: a pod that got here some other way
        try:
            if refused:
                raise _UnsupportedError(pod_admission.message(refused))
            self._devices = self.kubelet.devices.admit(self.uid, pod)
        except (DevicesUnavailableError, _UnsupportedError) as e:
            log.warning("pod %s/%s: rejected at admission: %s", self.namespace, self.name, e)
            self.kubelet.events.event(ObjectReference.of(pod, "v1", "Pod"), WARNING, e.reason, str(e))
            self._rejected = {"phase": reported_status.FAILED, "reason": e.reason,
                              "message": f"Pod was rejected: {e}", "startTime": self._start_time, "conditions": None}
            return False
        return True

    def _current(self) -> dict[str, Any]:
        with self._lock:
            return self._pod

    def _next_timer(self) -> float:
        now = time.monotonic()
        dues = [s.due - now for s in self.init + self.app if s.due is not None]
        return max(0.0, min([_IDLE_WAKE, *dues]))

    def _deadline_passed(self, pod: dict[str, Any]) -> bool:
        seconds = (pod.get("spec") or {}).get("activeDeadlineSeconds")
        started = parse_time(self._start_time)
        return isinstance(seconds, int) and started is not None and time.time() - started >= seconds

    # --- containers ---------------------------------------------------------------------------------------

    def _start_due(self) -> None:
        now = time.monotonic()
        if not all(s.succeeded for s in self.init):
            slot = next(s for s in self.init if not s.succeeded)
            if slot.proc is None and slot.due is not None and slot.due <= now:
                self._start(slot)
            return
        for slot in self.app:
            if slot.proc is None and slot.due is not None and slot.due <= now:
                self._start(slot)

    def _start(self, slot: Slot) -> None:
        pod = self._current()
        try:
            base = {**base_environment(self.name), **device_env(self._devices.get(slot.name, ()))}
            env = container_env(pod, slot.spec, base, lookup=self.kubelet.lookup,
                                service_address=self.kubelet.service_resolver(self.namespace), pod_ip=self.pod_ip,
                                node_allocatable=self.kubelet.allocatable, host_memo=self.kubelet.service_names)
            argv = container_argv(slot.spec, env)
            cwd = slot.spec.get("workingDir") or ""
            if not cwd or not self.kubelet.sandbox.usable_dir(cwd):
                cwd = self.kubelet.options.workdir
            self._instances += 1
            spec, user, cgroup = self.kubelet.sandbox.prepare(pod, slot.spec, self._instances, argv, env, cwd)
        except KubeError as e:  # reading a ConfigMap, Secret or the Services failed: try again soon
            log.warning("pod %s/%s: container %s: reading its configuration failed (%s): retrying", self.namespace,
                        self.name, slot.name, e)
            slot.due = time.monotonic() + _RETRY
            return
        except NoCommandError as e:
            self._cannot_create(slot, e)
            return
        except ContainerConfigError as e:
            if "terminated" in slot.state:
                slot.last_state = {"terminated": slot.state["terminated"]}
            slot.state = reported_status.waiting(e.reason, str(e))
            slot.due = time.monotonic() + _CONFIG_RETRY
            if not slot.config_error:
                self._config_failed(slot, e)
            slot.config_error = True
            return
        slot.config_error = False
        self._new_instance(slot)
        path = self.kubelet.logs.path(self.uid, slot.name, slot.restart_count)
        self.kubelet.logs.prune(self.uid, slot.name, keep=_KEPT_INSTANCES - 1)
        started = now_rfc3339()
        owner_uid = "".join(controller_uid_index(self._pod))
        if self.kubelet.stopping.is_set():
            self.kubelet.sandbox.container_ended(cgroup)
            return  # the kubelet is stopping: nothing new starts
        try:
            switch = (user.uid, user.gid, user.groups) if spec is None and user.uid != os.geteuid() else None
            proc = ContainerProcess(Launch(argv, env, cwd, path, spec, switch, cgroup, self.kubelet.sandbox.launcher))
        except OSError as e:
            self.kubelet.sandbox.container_ended(cgroup)
            # The runtime could not start the process (no such executable...): an instance that ended at once.
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
            slot.state = reported_status.terminated(128, started, now_rfc3339(), "", "StartError",
                                               f"failed to start container process: {e.strerror or e}: {argv[0]}")
            slot.due = None
            self.kubelet.logs.started(path, self.namespace, self.name, owner_uid)
            self.kubelet.logs.ended(path, slot.state["terminated"])
            self._after_exit(slot, 128)
            return
        self.kubelet.logs.started(path, self.namespace, self.name, owner_uid)
        slot.proc, slot.due = proc, None
        if self.kubelet.stopping.is_set():
            proc.signal_group(signal.SIGKILL)  # started as the kubelet began to stop: it must not outlive it
        slot.container_id = f"process://{proc.pid}"
        slot.state = reported_status.running(started)
        self._container_event(slot, NORMAL, "Created", f"Created container: {slot.name}")
        self._container_event(slot, NORMAL, "Started", f"Started container {slot.name}")
        log.info("pod %s/%s: container %s started (pid %d, restart %d)", self.namespace, self.name, slot.name,
                 proc.pid, slot.restart_count)
        self.kubelet.reaper.watch(proc, self._on_exit)

    def _new_instance(self, slot: Slot) -> None:
        """Count a restart when an instance of ``slot`` ran (or failed to) before; its end becomes ``lastState``."""
        if slot.state.get("terminated") or slot.last_state or slot.exits:
            slot.restart_count += 1
            ended = slot.state.get("terminated") or (slot.last_state or {}).get("terminated")
            if ended:
                slot.last_state = {"terminated": ended}

    def _container_event(self, slot: Slot, kind: str, reason: str, message: str) -> None:
        """An event about one container of the pod, as a kubelet records it (``fieldPath`` names the container)."""
        ref = ObjectReference.of(self._current(), "v1", "Pod")
        part = f"spec.{'initContainers' if slot.init else 'containers'}{{{slot.name}}}"
        self.kubelet.events.event(dataclasses.replace(ref, field_path=part), kind, reason, message)

    def _config_failed(self, slot: Slot, error: ContainerConfigError) -> None:
        """What a kubelet says when it cannot create a container: a log line and a Warning event ``Failed``."""
        log.warning("pod %s/%s: container %s cannot start: %s", self.namespace, self.name, slot.name, error)
        self.kubelet.events.event(ObjectReference.of(self._current(), "v1", "Pod"), WARNING, "Failed",
                                  f"Error: {error}")

    def _cannot_create(self, slot: Slot, error: NoCommandError) -> None:
        """A container that can never be created (no command, and no image entrypoint here; a pod's commands
        cannot change): reported as a kubelet reports it, waiting with ``CreateContainerError``, and then, rather
        than retried for ever, ended as a container whose runtime could not start it (``StartError``: exit 128),
        so the restart policy decides: ``Never`` fails the pod at once, ``OnFailure``/``Always`` try again with
        the crash-loop back-off, each try a restart (counted against a job's ``backoffLimit``)."""
        if not slot.config_error:
            self._config_failed(slot, error)
        slot.config_error = True
        self._new_instance(slot)
        message = str(error)
        slot.state = reported_status.waiting(error.reason, message)
        if self.restart_policy == "Never":
            self._write_status()   # the waiting reason, as a watcher of a cluster's pod would see it first
        slot.state = reported_status.terminated(128, "", now_rfc3339(), "", error.reason, message)  # never started
        slot.due = None
        self._after_exit(slot, 128)
        if slot.due is not None:   # to be tried again: it waits, and says why
            slot.last_state = {"terminated": slot.state.get("terminated") or slot.last_state.get("terminated")}
            slot.state = reported_status.waiting(error.reason, message)

    def _on_exit(self, _proc: ContainerProcess) -> None:
        """On the reaper's thread: a container's main process ended; this pod's thread records it."""
        self._wake.set()

    def _collect_exits(self) -> None:
        for slot in self.init + self.app:
            if slot.proc is not None and slot.proc.poll() is not None:
                self._record_exit(slot, slot.proc)

    def _record_exit(self, slot: Slot, proc: ContainerProcess) -> None:
        code = proc.poll()
        if code is None:
            return
        proc.signal_group(signal.SIGKILL)  # the container is over: whatever it left in its group goes with it
        started = (slot.state.get("running") or {}).get("startedAt") or rfc3339(proc.started)
        reason = "OOMKilled" if self.kubelet.sandbox.container_ended(proc.cgroup) else ""
        slot.state = reported_status.terminated(code, started, rfc3339(proc.finished or time.time()), slot.container_id,
                                                reason)
        # Recorded before any status reports it (logs.py: what `local run` prints of a failed job relies on it).
        self.kubelet.logs.ended(proc.log_path, slot.state["terminated"], stopped=self._terminating)
        slot.proc = None
        log.info("pod %s/%s: container %s exited with %d", self.namespace, self.name, slot.name, code)
        self._after_exit(slot, code)

    def _after_exit(self, slot: Slot, code: int) -> None:
        """Schedule what follows an exit: the next init container, a restart (with back-off), or nothing."""
        now = time.monotonic()
        if self._terminating:
            return
        if slot.init and code == 0:
            index = self.init.index(slot)
            following = self.init[index + 1:index + 2] or self.app
            for nxt in following:
                nxt.due = now
            return
        restart = (self.restart_policy == "Always" and not slot.init) or (
            code != 0 and self.restart_policy in ("Always", "OnFailure"))
        if not restart:
            return
        options = self.kubelet.options
        if slot.exits and now - slot.last_exit > 2 * options.backoff_max:
            slot.exits = 0  # ran long enough: the back-off starts over
        slot.exits += 1
        slot.last_exit = now
        delay = 0.0 if slot.exits == 1 else min(options.backoff_initial * 2 ** (slot.exits - 2), options.backoff_max)
        slot.due = now + delay
        if delay > 0 and (slot.state.get("terminated") or {}).get("startedAt"):   # it ran, and crashed
            self._container_event(slot, WARNING, "BackOff", f"Back-off restarting failed container {slot.name} in "
                                                            f"pod {pod_ref(self._current())}")
        if delay > 0:
            slot.last_state = {"terminated": slot.state.get("terminated")}
            slot.state = reported_status.waiting(
                "CrashLoopBackOff", f"back-off {_duration(delay)} restarting failed container={slot.name} "
                                    f"pod={self.name}_{self.namespace}({self.uid})")

    def _capped(self, requested: int) -> float:
        """The seconds containers get of a ``requested`` grace period: at most the kubelet's
        ``max_grace_period`` (kube's kubelet waits whatever int64 it is given, so a pod could never go), said in a
        Warning event when that is less and something is running."""
        cap = self.kubelet.options.max_grace_period
        if requested <= cap:
            return float(requested)
        if self.processes():
            log.info("pod %s/%s: grace period %ds capped at %gs", self.namespace, self.name, requested, cap)
            self.kubelet.events.event(
                ObjectReference.of(self._current(), "v1", "Pod"), WARNING, GRACE_PERIOD_CAPPED,
                f"Grace period {requested}s is longer than the local kubelet waits: containers get {cap:g}s after "
                "SIGTERM, then SIGKILL")
        return cap

    def _terminate(self, grace: float) -> None:
        """Stop every container for good: SIGTERM, ``grace`` seconds, SIGKILL; their ends recorded."""
        self._terminating = True
        procs = self.processes()
        for slot in self.init + self.app:
            if slot.proc is not None:
                self._container_event(slot, NORMAL, "Killing", f"Stopping container {slot.name}")
        if procs:
            log.info("pod %s/%s: stopping %d container(s), grace period %gs", self.namespace, self.name, len(procs),
                     grace)
        left = terminate_groups(procs, grace)
        for slot in self.init + self.app:
            if slot.proc is not None:
                if slot.proc not in left:   # gone: its status is on its way, if not here yet
                    slot.proc.settle(_EXIT_STATUS_WAIT)
                self._record_exit(slot, slot.proc)
            slot.due = None
            if "terminated" not in slot.state:
                ended = (slot.last_state or {}).get("terminated")
                if ended is not None:   # waiting to restart: its last end is its end
                    slot.state = {"terminated": ended}
                else:                   # never started: kube reports it as lost when the pod ends
                    slot.state = reported_status.terminated(
                        137, "", now_rfc3339(), "", "ContainerStatusUnknown",
                        "The container could not be located when the pod was terminated")

    # --- status -------------------------------------------------------------------------------------------

    def _status(self) -> dict[str, Any]:
        if self._rejected is not None:
            return dict(self._rejected)
        init = [s.status() for s in self.init]
        app = [s.status() for s in self.app]
        previous = self._written or (self._current().get("status") or {})
        status = reported_status.pod_status(previous, self.restart_policy, init, app, self._start_time, now_rfc3339(),
                                       terminal=self._terminating, reason=self._reason, message=self._message,
                                       pod_ip=self.pod_ip)
        if self._reason:  # stopped by the kubelet (deadline, failure): Failed, whatever the exit codes
            status["phase"] = reported_status.FAILED
        return status

    def _write_status(self, status: dict[str, Any] | None = None) -> bool:
        """Write ``status`` (default: the current one) unless it is what was last written; False on failure."""
        status = status or self._status()
        if status["phase"] in (reported_status.SUCCEEDED, reported_status.FAILED):
            self.kubelet.devices.release(self.uid)   # before the API says so: a pod bound on that news finds them
        # Conditions keep their transition times while unchanged (reported_status.conditions), so equal means unchanged.
        if status == self._written:
            return True
        try:
            # The answer (the whole pod) is not used: not decoded (65 KB each in a 1,000-replica MXJob).
            self.kubelet.client.patch(PODS, self.name, {"metadata": {"uid": self.uid}, "status": status},
                                      self.namespace, subresource="status", timeout=10, deadline=15, decode=False)
            self._written = status
        except NotFound:
            self._gone = True
        except KubeError as e:
            log.warning("pod %s/%s: status write failed (%s)", self.namespace, self.name, e)
            return False
        return True

    def _write_final(self) -> None:
        """The pod's last status, retried for :data:`_FINAL_WRITE` seconds (unless the kubelet stops or the pod
        goes): nobody else would ever write it."""
        end = time.monotonic() + _FINAL_WRITE
        delay = 0.2
        while not self._write_status() and time.monotonic() < end and not self.kubelet.stopping.is_set():
            self.kubelet.stopping.wait(delay)
            delay = min(delay * 2, 2.0)

    def _confirm_deletion(self) -> None:
        """The node's side of a graceful deletion: remove the pod now that nothing of it runs."""
        for attempt in range(5):
            try:
                self.kubelet.client.delete(PODS, self.name, self.namespace, grace_period_seconds=0,
                                           precondition_uid=self.uid, timeout=10, deadline=15)
                return
            except NotFound:
                return
            except KubeError as e:
                if getattr(e, "code", None) == 409:
                    return  # another pod holds the name now: ours is gone
                log.warning("pod %s/%s: confirming the deletion failed (%s)", self.namespace, self.name, e)
                if self.kubelet.stopping.wait(min(0.2 * 2 ** attempt, 2.0)):
                    return


def _decides_differently(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a worker's turn could decide otherwise on ``new`` than on ``old``: a turn reads the pod's spec and
    its deletion (timestamp, grace); its status, labels and annotations are read only when a container starts."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    return (old_meta.get("deletionTimestamp") != new_meta.get("deletionTimestamp")
            or old_meta.get("deletionGracePeriodSeconds") != new_meta.get("deletionGracePeriodSeconds")
            or old.get("spec") != new.get("spec"))


def _grace(pod: dict[str, Any]) -> int:
    """Seconds a deleted pod's containers ask for: the deletion's grace period, else the pod's own."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    grace = meta.get("deletionGracePeriodSeconds")
    return grace if grace is not None else spec.get("terminationGracePeriodSeconds") or 0


def _duration(seconds: float) -> str:
    """Go's duration text for whole seconds and minutes (10s, 1m20s, 5m0s)."""
    total = round(seconds)
    minutes, secs = divmod(total, 60)
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"
