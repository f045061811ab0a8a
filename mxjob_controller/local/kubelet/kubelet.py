"""The local kubelet: the Node ``local``, and every pod on it run as processes of this machine.

    kubelet = Kubelet(client, KubeletOptions(workdir=os.getcwd())).start()
    server.rest.log_reader = kubelet.logs.read       # ``kubectl logs`` reads the files it keeps
    ...
    kubelet.stop(timeout=10)                         # every container process is gone when this returns

It talks to the API server over HTTP like any node: it registers its Node (``node``: what it offers pods), watches
every pod, runs those bound to it (``pod_worker``; the local scheduler binds them, ``local/scheduler/``), writes their
status and confirms their graceful deletion. Each pod gets a loopback address of its own (``addresses``), to which
its Service's name resolves.

Guarantees: one worker per pod uid, started when the pod is first seen bound here and not yet finished;
:meth:`stop` stops every container (``stop_grace`` seconds after SIGTERM, then SIGKILL of its process group) and
every thread it started, and removes the log folder it created.
"""

from __future__ import annotations

import logging
import queue
import shutil
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.local.kubelet.addresses import PodAddresses
from mxjob_controller.local.kubelet.devices import NodeDevices, node_resources
from mxjob_controller.local.kubelet.logs import LogStore
from mxjob_controller.local.kubelet.node import machine_capacity, node_capacity, node_object
from mxjob_controller.local.kubelet.options import KubeletOptions
from mxjob_controller.local.kubelet.pod_places import PodKey, own_temp_dir, sweep_leftovers
from mxjob_controller.local.kubelet.pod_worker import PodWorker
from mxjob_controller.local.kubelet.runtime import ContainerProcess, Reaper, kill_groups, wait_gone
from mxjob_controller.local.kubelet.sandbox import Sandbox, SandboxConfig
from mxjob_controller.local.kubelet.service_names import ServiceNames
from mxjob_controller.runtime.cache_keys import CONTROLLER_UID_INDEX, DeletedFinalStateUnknown, controller_uid_index
from mxjob_controller.runtime.client import (
    CONFIGMAPS,
    EVENTS,
    NODES,
    PODS,
    SECRETS,
    SERVICES,
    AlreadyExists,
    ApiError,
    Client,
    Conflict,
    NotFound,
    TransportError,
)
from mxjob_controller.runtime.events import NODE_EVENTS_AT_STOP, EventRecorder
from mxjob_controller.runtime.informer import SharedInformer, drop_managed_fields

log = logging.getLogger(__name__)

_HOUSEKEEPING = 1.0     # seconds between looks for removed pods whose worker has ended
# How long a controller's pods' places outlive its last pod here: a job controller restarting every replica
# deletes them all before it creates their successors (seconds later, after a failed write or a backoff), and
# those must find what their predecessors wrote.
PLACES_GRACE = 300.0
_SYNC_TIMEOUT = 30.0
# Threads that start the pod workers' threads. ``Thread.start`` returns only once the new thread has run, which
# takes it a turn of the interpreter lock: in a burst of 400 pods, among hundreds of busy threads, 5-9 ms each. On
# the pod informer's one handler thread, those waits put every start in one line (the 400th pod's worker was made
# 1.8 s after its binding was seen, all but 0.2 s of it waiting); on several, the waits overlap, as kube's kubelet
# starts a goroutine per pod without waiting for it.
_STARTERS = 8
_IDLE_STARTER = 0.5     # seconds an idle starter waits before it looks whether the kubelet stops


def pod_informer(client: Client) -> SharedInformer:
    """The informer of every pod a kubelet watches: what :class:`Kubelet` makes for itself unless given one. The
    embedded cluster makes it once and hands it to the kubelet and the scheduler, which run in one process: one
    watch, one decode of each pod version and one cache instead of two (issue 48: with a 1,000-replica MXJob, whose
    pods carry 65 KB of ``MX_CONFIG`` each, the second informer cost seconds of the process's one core)."""
    return SharedInformer(client, PODS, transform=drop_managed_fields,
                          indexers={CONTROLLER_UID_INDEX: controller_uid_index})


class Kubelet:
    def __init__(self, client: Client, options: KubeletOptions | None = None,
                 pods: SharedInformer | None = None) -> None:
        """``pods``: an informer of every pod (:func:`pod_informer`) shared with other parts of this process; the
        kubelet starts it if it has not started, and leaves stopping it to its owner (it only removes its handler).
        None: one of its own."""
        self.client = client
        self.options = options = options or KubeletOptions()
        sweep_leftovers()   # what a local up killed by SIGKILL left in the temporary directory
        self._own_root = options.log_root is None
        root = options.log_root or own_temp_dir("local-logs")
        self.logs = LogStore(root, options.container_log_max_size, options.container_log_max_files)
        self.reaper = Reaper()
        # Events about pods (Created, Started, BackOff, Killing, Failed...) go through a client of their own with
        # kube's kubelet's event budget (eventRecordQPS 50, eventBurst 100): a flood of them never delays status
        # writes, and a burst of pod starts (two events each) leaves most of its events for after the starts.
        self.events = EventRecorder(client.sibling(None, qps=options.event_qps if options.event_qps > 0 else -1.0,
                                                   burst=options.event_burst),
                                    component="kubelet", host=options.node_name)
        self.sandbox = Sandbox(SandboxConfig(options.sandbox, options.container_user, options.pod_pids_limit,
                                             lambda: (str(self.logs.root), *options.private_paths()),
                                             shared_dirs=(options.workdir,)))
        self.stopping = threading.Event()
        self.allocatable = node_capacity(options.capacity, machine_capacity(options.workdir))
        self.addresses = PodAddresses()
        self._lock = threading.Lock()
        self._workers: dict[str, PodWorker] = {}        # pod uid → its worker, while it runs
        self._finished: set[str] = set()                # uids whose worker ended: never started again
        self._gone_pending: dict[str, PodWorker] = {}   # removed pods whose worker still stops their containers
        self._controllers_seen: dict[str, float] = {}   # controller uid → when a pod of it was last here
        self._own_pods = pods is None
        self._pods = pods if pods is not None else pod_informer(client)
        self._pod_handler = self._pods.add_handler(self._on_pod, lambda _old, new: self._on_pod(new),
                                                   self._on_pod_deleted)
        # What Service names resolve to at a container's start, as kube's kubelet reads Services for their env
        # vars: from a watched cache (its serviceLister), synced before any pod starts. A list per start instead
        # made a 1,000-replica job's starts read a million Services (quadratic: 105 s until all ran).
        self._services = SharedInformer(client, SERVICES, transform=drop_managed_fields)
        self.service_names = ServiceNames(self._services.store, self.addresses)
        self._services.add_handler(self.service_names.changed, lambda _old, new: self.service_names.changed(new),
                                   self.service_names.changed, inline=True)
        self._housekeeping = threading.Thread(target=self._housekeep, name="kubelet-housekeeping", daemon=True)
        self._starts: queue.SimpleQueue[PodWorker | None] = queue.SimpleQueue()   # workers to start; None: end
        self._starters = [threading.Thread(target=self._start_workers, name=f"kubelet-pod-start-{i}", daemon=True)
                          for i in range(_STARTERS)]
        self.devices = NodeDevices(options.gpus)         # GPUs: advertised on the Node, given at admission
        self.allocatable.update(node_resources(self.devices.devices))

    # --- lifecycle --------------------------------------------------------------------------------------------

    def start(self) -> Kubelet:
        self._register_node()
        self._report_sandbox()
        self.reaper.start()
        self.events.start()
        self._services.start()
        self._pods.start()
        if not (self._services.wait_for_cache_sync(_SYNC_TIMEOUT) and self._pods.wait_for_cache_sync(_SYNC_TIMEOUT)):
            self.stop(5.0)
            raise RuntimeError(f"the local kubelet could not list pods and services within {_SYNC_TIMEOUT:g}s")
        self._housekeeping.start()
        for starter in self._starters:
            starter.start()
        log.info("local kubelet running node %s (logs in %s)", self.options.node_name, self.logs.root)
        return self

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop every container and thread within about ``timeout`` seconds; False (and a warning) if any outlived
        it. No process started here survives this call: leftovers are SIGKILLed by process group.

        The containers are stopped here, from this one thread (SIGTERM to every group, up to ``stop_grace``
        seconds, SIGKILL to what is left), while the workers just end: a thousand workers each stopping their own
        polled /proc 20 times a second each and starved the sandbox's launcher thread, whose relays then stayed
        unreaped (``LocalCluster.stop(15)`` of 1,000 pods took 8-36 s, with warnings)."""
        end = time.monotonic() + timeout
        self.stopping.set()
        for _ in self._starters:
            self._starts.put(None)   # each starter ends at once, starting nothing queued before it
        stopping = self._containers()
        for proc in stopping:   # before any worker wakes: a thousand waking threads held the GIL for seconds
            proc.signal_group(signal.SIGTERM)
        for worker in self._worker_list():
            worker.wake()   # it ends at once, and stays listed: what it started is found below
        grace_end = min(time.monotonic() + max(0.0, self.options.stop_grace), time.monotonic() + timeout / 2)
        self.logs.close(min(2.0, timeout / 4))
        for starter in self._starters:   # once they have ended, a worker whose thread has not started never will
            if starter.ident is not None:
                starter.join(max(0.1, grace_end - time.monotonic()))
        self._join_workers(grace_end)
        late = self._containers() - stopping   # started as the stop began
        for proc in late:
            proc.signal_group(signal.SIGTERM)
        stopping |= late
        left = wait_gone(list(stopping), grace_end)
        survivors = kill_groups(left, max(0.5, (end - time.monotonic()) / 2)) if left else []
        clean = self._stop_pods(max(0.1, end - time.monotonic()))
        clean = self._services.stop(max(0.1, end - time.monotonic())) and clean
        workers = self._join_workers(end)
        late = self._containers() - stopping   # started by a worker that ended only now
        if late:
            survivors += kill_groups(list(late), max(0.5, end - time.monotonic()))
        alive = [w.thread.name for w in workers if w.thread.is_alive()]
        alive += [s.name for s in self._starters if s.is_alive()]
        if self._housekeeping.is_alive():
            self._housekeeping.join(max(0.1, end - time.monotonic()))
            if self._housekeeping.is_alive():
                alive.append(self._housekeeping.name)
        if not self.reaper.stop(max(0.1, end - time.monotonic())):
            alive.append("kubelet-reaper")
        # What the event budget has not written yet is dropped (said in one line, not a warning): the node goes.
        self.events.stop(min(NODE_EVENTS_AT_STOP, max(0.1, end - time.monotonic())), left_level=logging.INFO)
        self.events.client.close()
        self.sandbox.close(max(0.5, end - time.monotonic()))   # the containers' cgroups with the cluster's
        if self._own_root:
            shutil.rmtree(self.logs.root, ignore_errors=True)
        if alive:
            log.warning("local kubelet stopped with threads still running: %s", ", ".join(alive))
        return clean and not alive and not survivors

    def _worker_list(self) -> list[PodWorker]:
        with self._lock:
            return list(self._workers.values())

    def _containers(self) -> set[ContainerProcess]:
        """Every container process the workers hold (those of workers that ended while stopping too)."""
        return {proc for worker in self._worker_list() for proc in worker.processes()}

    def _join_workers(self, deadline: float) -> list[PodWorker]:
        """Wait (until the monotonic ``deadline``) for every listed worker's thread to end; the workers."""
        workers = self._worker_list()
        for worker in workers:
            if worker.thread.ident is not None:   # else never started: the kubelet stopped first
                worker.thread.join(max(0.0, deadline - time.monotonic()))
        return workers

    def _stop_pods(self, timeout: float) -> bool:
        """Stop the pod informer if it is the kubelet's own; else only its handler (its owner stops the rest)."""
        if self._own_pods:
            return self._pods.stop(timeout)
        self._pod_handler.remove(timeout)
        return True

    def worker_done(self, worker: PodWorker) -> None:
        """A worker's thread ends. While the kubelet stops, the worker stays listed and its pod's cgroups stay: its
        containers may still run, and stop() finds them through it (the sandbox's close removes the cgroups)."""
        with self._lock:
            stopping = self.stopping.is_set()
            if self._workers.get(worker.uid) is worker and not stopping:
                del self._workers[worker.uid]
            self._finished.add(worker.uid)
        if not stopping:
            self.sandbox.pod_ended(worker.uid)
        self.devices.release(worker.uid)

    # --- what workers ask -------------------------------------------------------------------------------------

    def lookup(self, kind: str, namespace: str, name: str) -> dict | None:
        resource = {"ConfigMap": CONFIGMAPS, "Secret": SECRETS}[kind]
        try:
            return self.client.get(resource, name, namespace, timeout=10, deadline=15)
        except NotFound:
            return None

    def pod_address(self, namespace: str, name: str) -> str:
        """The pod's own loopback address (its ``status.podIP``)."""
        return self.addresses.address(namespace, name)

    def service_resolver(self, namespace: str) -> Callable[[str, str, bool], str | None]:
        """The address each (namespace, name) Service resolves to, None for no such Service, from the kubelet's
        watched cache of Services (synced before any pod started; a Service created a moment before a start is
        there once its watch event is, as for kube's kubelet), its answers kept across starts until that Service
        changes (``service_names.py``). A Service with a selector resolves to the address of its name (that of
        the pod named like it), one without to 127.0.0.1. A name written in the Services' DNS form
        (``<svc>.<ns>.svc``, as TF_CONFIG writes them) resolves to its name's address even if that Service is not
        there yet: a job's Services and pods are created side by side, and the address does not depend on the
        Service. ``namespace``: the pod's (bare names are looked for there by the caller)."""
        return self.service_names.address

    # --- pods -----------------------------------------------------------------------------------------------

    def _on_pod(self, pod: dict[str, Any]) -> None:
        if self.stopping.is_set():
            return
        meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        uid = meta.get("uid") or ""
        if (spec.get("nodeName") or "") != self.options.node_name:
            return
        with self._lock:
            worker = self._workers.get(uid)
            if worker is not None:
                worker.update(pod)
                return
            finished = uid in self._finished or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
            if not finished:
                worker = self._workers[uid] = PodWorker(self, pod)
        if worker is not None:
            self._starts.put(worker)
        elif meta.get("deletionTimestamp"):
            self._confirm_deletion(pod)  # nothing of it runs here any more: the node's grace-0 delete removes it

    def _start_workers(self) -> None:
        """A ``kubelet-pod-start`` thread: start the queued workers' threads until the kubelet stops, then end at the
        stop's None, starting none of what is queued before it."""
        while True:
            try:
                worker = self._starts.get(timeout=_IDLE_STARTER)
            except queue.Empty:
                if self.stopping.is_set():
                    return
                continue
            if worker is None:
                return
            if not self.stopping.is_set():
                worker.start()

    def _on_pod_deleted(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        uid = (pod.get("metadata") or {}).get("uid") or ""
        with self._lock:
            worker = self._workers.get(uid)
        if worker is not None:
            worker.removed(pod)
        self._forget_when_done(uid, worker)

    def _forget_when_done(self, uid: str, worker: PodWorker | None) -> None:
        """Remove a gone pod's logs once its worker (if any) has ended (checked again by housekeeping)."""
        if worker is None or not worker.thread.is_alive():
            if not self.options.keep_logs:
                self.logs.remove_pod(uid)
            with self._lock:
                self._finished.discard(uid)
            return
        with self._lock:
            self._gone_pending[uid] = worker

    def _confirm_deletion(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        try:
            self.client.delete(PODS, meta["name"], meta["namespace"], grace_period_seconds=0,
                               precondition_uid=meta["uid"], timeout=10, deadline=15)
        except (NotFound, Conflict):
            pass
        except (ApiError, TransportError) as e:
            log.warning("confirming the deletion of pod %s/%s failed: %s", meta["namespace"], meta["name"], e)

    def _housekeep(self) -> None:
        while not self.stopping.wait(_HOUSEKEEPING):
            with self._lock:
                gone = [(uid, w) for uid, w in self._gone_pending.items() if not w.thread.is_alive()]
                for uid, _w in gone:
                    del self._gone_pending[uid]
            for uid, worker in gone:
                self._forget_when_done(uid, worker)
            self.sandbox.release_places(self._places_in_use())

    def _places_in_use(self) -> Callable[[PodKey], bool]:
        """Whether a pod may still come to the places of a key (sandbox.py): a pod of that name is here (its
        containers may still be stopping), or, for a controller's pods, a pod of that controller was here within
        PLACES_GRACE (it recreates its replicas under their names). Made once per sweep: each key then costs a
        lookup or two. Runs on the housekeeping thread only (it alone touches ``_controllers_seen``)."""
        with self._lock:
            running = {(w.namespace, w.name) for w in [*self._workers.values(), *self._gone_pending.values()]}

        controllers: dict[str, bool] = {}   # controller uid → has pods here, or had within the grace
        now = time.monotonic()
        seen = self._controllers_seen
        for gone in set(seen) - {key[2] for key in self.sandbox.place_keys()}:
            del seen[gone]

        def in_use(key: PodKey) -> bool:
            namespace, name, controller = key
            if (namespace, name) in running or self._pods.store.get(f"{namespace}/{name}") is not None:
                if controller:
                    seen[controller] = now
                return True
            if not controller:
                return False
            if controller not in controllers:
                if self._pods.store.by_index(CONTROLLER_UID_INDEX, controller):
                    seen[controller] = now
                controllers[controller] = now - seen.setdefault(controller, now) < PLACES_GRACE
            return controllers[controller]
        return in_use

    # --- the node ---------------------------------------------------------------------------------------------

    def _register_node(self) -> None:
        node = node_object(self.options.node_name, self.allocatable)
        try:
            self.client.create(NODES, node, timeout=10, deadline=20)
        except AlreadyExists:
            current = self.client.get(NODES, self.options.node_name, timeout=10, deadline=20)
            current["status"] = node["status"]
            self.client.update_status(NODES, current, timeout=10, deadline=20)


    def _report_sandbox(self) -> None:
        """Say once, in the log and as a Warning event on the node, what the sandbox cannot enforce here."""
        missing = self.sandbox.unenforced
        if not self.sandbox.namespaces:
            log.warning("pod sandbox off: %s", self.sandbox.why_not)
        elif missing:
            log.warning("resource limits not enforced: %s", "; ".join(f"{c}: {why}" for c, why in missing.items()))
        if not missing:
            return
        reason = "SandboxDisabled" if not self.sandbox.namespaces else "ResourceLimitsNotEnforced"
        message = f"pod sandbox off ({self.sandbox.why_not}): containers are not isolated and " \
                  "resources.limits are not enforced" if not self.sandbox.namespaces else \
            "not enforced on this node: " + "; ".join(f"{c} ({why})" for c, why in missing.items())
        now = now_rfc3339()
        name = self.options.node_name
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": f"{name}.{time.time_ns():x}", "namespace": "default"},
                 "involvedObject": {"kind": "Node", "name": name, "uid": name, "apiVersion": "v1"},
                 "reason": reason, "message": message, "type": "Warning", "count": 1,
                 "source": {"component": "kubelet", "host": name}, "firstTimestamp": now, "lastTimestamp": now,
                 "reportingComponent": "kubelet", "reportingInstance": name}
        try:
            self.client.create(EVENTS, event, "default", timeout=10, deadline=15)
        except (ApiError, TransportError) as e:
            log.warning("recording the node's %s event failed: %s", reason, e)
