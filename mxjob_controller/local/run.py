"""``mxjob-controller local run``: submit jobs to a fresh local cluster, show them running, and end with their fate.

    outcome = run_jobs(cluster, documents, RunOptions(logs=True, timeout=600), out=sys.stdout)
    sys.exit(outcome.exit_code)      # 0 all succeeded, 1 one failed, 124 timed out, 130 interrupted

Everything goes through the API server over HTTP, as kubectl would: the documents are checked, then created in order
(``submission``), then the jobs among them (MXJobs, TFJobs, GenericJobs) are watched until every one has succeeded,
one has failed (fail fast: the others are stopped with the cluster), the time is up, or ``interrupt`` is set.
Progress (``run_view``) is a line per change (or, on a terminal, a block kept in place): each job's state, replica
counts, restarts and what it waits for, and, for a job whose pods wait for room (the local scheduler holds back what
does not fit), that it is queued: its position among the waiting jobs (the scheduler's order: priority, then age)
and the scheduler's reason. A pod that could not fit even the empty node (it asks for more CPU, memory or GPUs than
the machine offers) would wait for ever, as on a cluster without an autoscaler: ``local run`` fails at once instead,
naming the pod, what it asks for and what the node has. So does a gang (``--gang-scheduler-name``) that could not
fit the empty node all together: its PodGroup's ``minResources``, or the requests of its first ``minMember`` pods
(``placement.gang_never_fits``, the rule the local scheduler marks the PodGroup ``Unschedulable`` by).
So does a job whose pod Pod Security Admission refused (``--pod-security``, or the namespace's labels): the
controller would retry the create for ever; the job fails with kube's ``violates PodSecurity`` text.
With ``logs``, every container's output is streamed, each line prefixed by its pod. Output and, when a job fails, the
last lines of each failed container are read from the kubelet's files, which outlive the pods that the job's
cleanPodPolicy removes: a container that ran and ended between two looks at the API is shown all the same.

Which containers failed is asked of the kubelet too, not of the pods the API still shows: the kubelet records a
container's end (exit code, reason, its pod's job) before it reports it in the pod's status, the controller fails
the job from that status, and only then may it delete the pods. So once ``local run`` reads the job as Failed, the
record is there, whatever ``cleanPodPolicy`` says and however fast the pods went: there is nothing to race.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from mxjob_controller.core.job_vocabulary import controller_uid
from mxjob_controller.core.podgroups import COSCHEDULING_PODGROUPS, VOLCANO_PODGROUPS
from mxjob_controller.kube.timefmt import parse_time
from mxjob_controller.local.cluster import LocalCluster
from mxjob_controller.local.kubelet.logs import Instance, LogStore, tail_lines
from mxjob_controller.local.run_view import Display, JobView
from mxjob_controller.local.scheduler.placement import amounts, figure, gang_never_fits, pod_requests, shortfalls
from mxjob_controller.local.submission import JOB_RESOURCES, Job, SubmitError, api_message, submit
from mxjob_controller.runtime.client import EVENTS, PODS, Client, KubeError
from mxjob_controller.runtime.informer import SharedInformer, drop_managed_fields

log = logging.getLogger(__name__)

__all__ = ["JOB_RESOURCES", "Job", "Outcome", "RunOptions", "SubmitError", "run_jobs", "submit"]
SUCCEEDED, FAILED, TIMED_OUT, INTERRUPTED = 0, 1, 124, 130
_POLL = 0.25          # seconds between looks at the jobs (a job's end is seen at once: a watch wakes the look)
_INTERRUPT_CHECK = 0.05   # seconds a wait between looks may take to notice the interrupt
_STOP_WATCH = 2.0     # seconds the jobs' watches get to stop at the end
_TAIL = 20            # log lines shown of each failed container
_DRAIN = 5.0          # seconds the log streams get to deliver their last lines once every job succeeded
#: Waiting reasons that are only a container on its way: not worth showing.
_ON_ITS_WAY = ("ContainerCreating", "PodInitializing")


@dataclass(frozen=True, slots=True)
class RunOptions:
    logs: bool = False              # stream every container's output
    timeout: float | None = None    # seconds; None: no limit
    interactive: bool = False       # redraw the progress block in place (a terminal)


@dataclass
class Outcome:
    exit_code: int
    message: str = ""
    jobs: dict[str, str] = field(default_factory=dict)   # namespace/name → final state


class _LogStreams:
    """One named thread per started container instance, copying its output to ``out`` with the pod's name in front.

    Instances are heard of from the kubelet's log store as their processes start, not from the pods the API shows
    at each look: a container that ran and ended between two looks, its pod removed by the job's cleanPodPolicy,
    has its output shown all the same (the store keeps removed pods' files while ``local run`` lasts)."""

    def __init__(self, store: LogStore, write: Callable[[str], None], stop: threading.Event) -> None:
        self._store, self._write, self._stop = store, write, stop
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        store.add_listener(self._started)

    def _started(self, instance: Instance) -> None:
        thread = threading.Thread(target=self._copy, args=(instance,), daemon=True,
                                  name=f"logs-{instance.pod}-{instance.container}")
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _copy(self, instance: Instance) -> None:
        pending = b""
        for chunk in self._store.follow(instance.path):
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                self._write(f"[{instance.pod}] {line.decode('utf-8', 'replace')}")
            if self._stop.is_set():
                return
        if pending:
            self._write(f"[{instance.pod}] {pending.decode('utf-8', 'replace')}")

    def join(self, timeout: float) -> None:
        end = time.monotonic() + timeout
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(max(0.0, end - time.monotonic()))


def run_jobs(cluster: LocalCluster, client: Client, jobs: Sequence[Job], options: RunOptions,
             out: TextIO, interrupt: threading.Event, display: Display | None = None) -> Outcome:
    """Follow ``jobs`` until they all succeed, one fails, the timeout passes or ``interrupt`` is set."""
    start = time.monotonic()
    display = display or Display(out, options.interactive)
    write = display.message
    stop_logs = threading.Event()
    kubelet = cluster.kubelet
    streams = _LogStreams(kubelet.logs, write, stop_logs) if options.logs and kubelet is not None else None
    views = {job.key: JobView(job.key) for job in jobs}
    ended = threading.Event()
    watches = _watch_ends(client, jobs, ended)
    try:
        while True:
            for job in jobs:
                _read_job(client, job, views[job.key])
            pods = _pods(client, {job.namespace for job in jobs})
            waiting = [p for p in pods if not (p.get("spec") or {}).get("nodeName")
                       and (p.get("status") or {}).get("phase") == "Pending"]
            _add_pods(views, pods, waiting)
            allocatable = kubelet.allocatable if kubelet is not None else None
            _fail_what_never_fits(views, waiting, allocatable)
            if cluster.options.gang_scheduler_name:   # only then do jobs have PodGroups to look at
                _follow_gangs(client, jobs, views, pods, allocatable)
            _fail_what_pod_security_refuses(client, views, jobs)
            elapsed = time.monotonic() - start
            display.show(list(views.values()), elapsed)
            failed = [view for view in views.values() if view.state == "Failed"]
            done = failed or all(view.state == "Succeeded" for view in views.values())
            if done or (options.timeout is not None and elapsed >= options.timeout) or interrupt.is_set():
                display.finish()
            if failed:
                _report_failure(cluster, write, failed[0])
                return Outcome(FAILED, failed[0].message, {k: v.state for k, v in views.items()})
            if all(view.state == "Succeeded" for view in views.values()):
                if streams is not None:
                    streams.join(_DRAIN)  # every container has ended: its follower ends once it has read the rest
                write(f"all {len(views)} job(s) succeeded in {elapsed:.1f}s")
                return Outcome(SUCCEEDED, "", {k: v.state for k, v in views.items()})
            if options.timeout is not None and elapsed >= options.timeout:
                pending = ", ".join(f"{k} ({v.state})" + (f" [{v.waiting}]" if v.waiting else "")
                                    for k, v in views.items() if v.state != "Succeeded")
                message = f"timed out after {options.timeout:g}s: not finished: {pending}"
                write(message)
                return Outcome(TIMED_OUT, message, {k: v.state for k, v in views.items()})
            if _wait(interrupt, ended, _POLL):
                display.finish()
                write("interrupted: stopping the local cluster")
                return Outcome(INTERRUPTED, "interrupted", {k: v.state for k, v in views.items()})
    finally:
        stop_logs.set()
        for watch in watches:
            watch.stop(_STOP_WATCH)
        if streams is not None:
            streams.join(1.0)


def _watch_ends(client: Client, jobs: Sequence[Job], ended: threading.Event) -> list[SharedInformer]:
    """A watch of each of the jobs' kinds that sets ``ended`` when one of them has ended (or is gone): the look
    that sees it comes at once, not up to a poll later (issue 48: a short job's run ends as soon as it does). Only
    ends: a busy job's every status write does not bring its looks (each lists its pods) closer together."""
    def check(obj: dict[str, Any]) -> None:
        if _has_ended(obj):
            ended.set()

    watches = []
    for resource in dict.fromkeys(job.resource for job in jobs):
        watch = SharedInformer(client, resource, transform=drop_managed_fields, name=f"local-run-{resource.plural}")
        watch.add_handler(check, lambda _old, new: check(new), lambda _obj: ended.set(), inline=True)
        watches.append(watch.start())
    return watches


def _has_ended(job: Mapping[str, Any]) -> bool:
    status = job.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):   # GenericJob's model
        return True
    return any(c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"
               for c in status.get("conditions") or [])


def _wait(interrupt: threading.Event, ended: threading.Event, seconds: float) -> bool:
    """Wait up to ``seconds`` for the next look, less when a job has ended; True if ``interrupt`` was set."""
    deadline = time.monotonic() + seconds
    while not interrupt.is_set():
        left = deadline - time.monotonic()
        if left <= 0 or ended.wait(min(left, _INTERRUPT_CHECK)):
            ended.clear()
            return False
    return True


def queue_positions(waiting: Sequence[dict[str, Any]]) -> dict[str, tuple[int, int, str]]:
    """Owner uid → (position, pods waiting, the scheduler's reason) for each job with pods marked unschedulable,
    ordered as the scheduler orders them: its most urgent waiting pod's priority (highest first), then age."""
    by_owner: dict[str, list[tuple[int, str, str]]] = {}
    for pod in waiting:
        meta = pod.get("metadata") or {}
        owner = controller_uid(pod)
        reason = _unschedulable(pod)
        if owner and reason is not None:
            priority = (pod.get("spec") or {}).get("priority") or 0
            by_owner.setdefault(owner, []).append((-priority, meta.get("creationTimestamp") or "", reason))
    ordered = sorted(by_owner, key=lambda uid: min(by_owner[uid])[:2])
    return {uid: (i + 1, len(by_owner[uid]), min(by_owner[uid])[2]) for i, uid in enumerate(ordered)}


def _unschedulable(pod: Mapping[str, Any]) -> str | None:
    """The scheduler's message when it marked the pod ``Unschedulable`` (None when it did not)."""
    return next((c.get("message") or "" for c in (pod.get("status") or {}).get("conditions") or []
                 if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"), None)


def pod_waiting(pod: Mapping[str, Any]) -> str:
    """Why the pod waits, as kube says it ('' when it does not): a container's waiting reason (with its message
    when the reason alone does not say what is wrong), else the scheduler's."""
    status = pod.get("status") or {}
    for cs in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())):
        state = (cs.get("state") or {}).get("waiting") or {}
        reason = state.get("reason") or ""
        if reason and reason not in _ON_ITS_WAY:
            message = state.get("message") or ""
            return reason if reason == "CrashLoopBackOff" or not message else f"{reason}: {message}"
    unschedulable = _unschedulable(pod)
    return f"Unschedulable: {unschedulable}" if unschedulable else ""


def restarts(pod: Mapping[str, Any]) -> int:
    status = pod.get("status") or {}
    return sum(int(cs.get("restartCount") or 0)
               for cs in (*(status.get("initContainerStatuses") or ()), *(status.get("containerStatuses") or ())))


def never_fits(pod: dict[str, Any], allocatable: dict[str, str]) -> str:
    """Why ``pod`` cannot fit the node even when nothing else runs on it ('' when it can): each short resource with
    what the pod asks for and what the node has."""
    wanted, offered = pod_requests(pod.get("spec") or {}), amounts(allocatable)
    short = [reason.removeprefix("Insufficient ") for reason in shortfalls(wanted, offered, {})
             if reason.startswith("Insufficient ")]
    return ", ".join(f"{name} {figure(wanted[name])} (the node has {allocatable.get(name, '0')})" for name in short)


def _hint(resources: Sequence[str]) -> str:
    """What to say to get a larger node: GPUs are the node's devices (``--gpus``), the rest ``--capacity``."""
    flags = []
    if any(r != "nvidia.com/gpu" for r in resources):
        flags.append("`local run --capacity` declares a larger node")
    if "nvidia.com/gpu" in resources:
        flags.append("`local run --gpus 0,1,…` declares GPUs (device indices) for the node")
    return "; ".join(flags)


def _fail(view: JobView, summary: str, message: str) -> None:
    view.state, view.replicas, view.message, view.queue, view.waiting = "Failed", summary, message, "", ""


def _fail_what_never_fits(views: dict[str, JobView], waiting: Sequence[dict[str, Any]],
                          allocatable: dict[str, str] | None) -> None:
    """Mark Failed the jobs with a waiting pod that no amount of waiting can place (see the module)."""
    if allocatable is None:
        return
    by_uid = {view.uid: view for view in views.values() if not view.finished}
    for pod in waiting:
        meta = pod.get("metadata") or {}
        view = by_uid.get(controller_uid(pod) or "")
        if view is None or not (why := never_fits(pod, allocatable)):
            continue
        short = [name for name in pod_requests(pod.get("spec") or {}) if f"{name} " in why]
        _fail(view, f"pod {meta.get('name')} can never fit this node",
              f"pod {meta.get('name')} can never be scheduled on this machine: it asks for {why}; {_hint(short)}")


def _fail_what_pod_security_refuses(client: Client, views: dict[str, JobView], jobs: Sequence[Job]) -> None:
    """Mark Failed the jobs whose pod create PodSecurity refused (their ``FailedCreatePod`` event says so): no retry
    can succeed while the namespace's policy stands."""
    for job in jobs:
        view = views[job.key]
        if view.finished or not view.uid:
            continue
        try:
            events = client.list_all(EVENTS, job.namespace,
                                     field_selector=f"involvedObject.uid={view.uid},reason=FailedCreatePod")
        except KubeError:
            continue   # asked again next turn
        refused = next((str(e.get("message") or "") for e in events.get("items") or []
                        if "violates PodSecurity" in str(e.get("message") or "")), None)
        if refused is not None:
            _fail(view, "a pod refused by PodSecurity",
                  f"{refused.removeprefix('Error creating: ')} (the namespace's pod-security.kubernetes.io labels "
                  "or `local run --pod-security` set the level)")


def _follow_gangs(client: Client, jobs: Sequence[Job], views: dict[str, JobView], pods: Sequence[dict[str, Any]],
                  allocatable: dict[str, str] | None) -> None:
    """For the jobs not running yet: why their gang waits (its PodGroup's ``Unschedulable`` condition, the only
    word of a Volcano job whose pods are held back), and Failed for a gang that could not fit the empty node all
    together (see the module)."""
    for job in jobs:
        view = views[job.key]
        if view.finished or view.state == "Running":
            continue
        podgroup = _podgroup(client, job)
        if podgroup is None:
            continue
        reason = next((c.get("message") or "" for c in (podgroup.get("status") or {}).get("conditions") or []
                       if c.get("type") == "Unschedulable" and c.get("status") == "True"), None)
        if reason is not None and not view.waiting:
            view.waiting = f"PodGroup Unschedulable: {reason}"
        if allocatable is None:
            continue
        members = [p for p in pods if controller_uid(p) == view.uid]
        short = gang_never_fits(podgroup, members, allocatable)
        if short:
            what = ", ".join(f"{name} {figure} (the node has {allocatable.get(name, '0')})"
                             for name, figure in short.items())
            _fail(view, "its gang can never fit this node",
                  f"the gang of {job.key} (PodGroup {job.key}, minMember "
                  f"{(podgroup.get('spec') or {}).get('minMember')}) can never be scheduled on this machine: "
                  f"it needs {what} at once; {_hint(list(short))}")


def _podgroup(client: Client, job: Job) -> dict[str, Any] | None:
    """The job's PodGroup (named after it), in whichever gang API has one."""
    for resource in (VOLCANO_PODGROUPS, COSCHEDULING_PODGROUPS):
        try:
            return client.get(resource, job.name, job.namespace)
        except KubeError:
            continue
    return None


def _pods(client: Client, namespaces: set[str]) -> list[dict[str, Any]]:
    """The pods of ``namespaces`` (a read that fails shows nothing of them this turn)."""
    pods: list[dict[str, Any]] = []
    for namespace in sorted(namespaces):
        try:
            listed = client.list_all(PODS, namespace)
        except KubeError:
            continue
        pods.extend(listed.get("items") or [])
    return pods


def _add_pods(views: dict[str, JobView], pods: Sequence[dict[str, Any]], waiting: Sequence[dict[str, Any]]) -> None:
    """Each job's restarts, what it waits for, and its place in the queue, from its pods."""
    by_uid = {view.uid: view for view in views.values() if view.uid}
    seen: dict[str, tuple[int, str]] = {}
    for pod in sorted(pods, key=lambda p: (p.get("metadata") or {}).get("name") or ""):
        owner = controller_uid(pod) or ""
        if owner not in by_uid:
            continue
        count, why = seen.get(owner, (0, ""))
        seen[owner] = (count + restarts(pod), why or pod_waiting(pod))
    for uid, view in by_uid.items():
        count, why = seen.get(uid, (0, ""))
        view.restarts = max(view.restarts, count)   # pods a policy deleted took their counts with them
        view.waiting = why
        view.queue = ""
    for uid, (position, count, reason) in queue_positions(waiting).items():
        view = by_uid.get(uid)
        if view is not None and not view.finished:
            view.queue = f"queued #{position}: {count} pod(s) waiting ({reason})"


def _read_job(client: Client, submitted: Job, view: JobView) -> None:
    """The job's state, replica counts and message into ``view``."""
    if view.finished:
        return
    try:
        job = client.get(submitted.resource, submitted.name, submitted.namespace)
    except KubeError as e:  # a job that vanished has failed; a read that failed is asked again next turn
        if getattr(e, "code", 0) == 404:
            _fail(view, f"cannot be read: {api_message(e)}",
                  f"{submitted.resource.kind} {submitted.name}: {api_message(e)}")
        return
    meta = job.get("metadata") or {}
    view.uid = meta.get("uid") or ""
    status = job.get("status") or {}
    started = parse_time(status.get("startTime") or meta.get("creationTimestamp") or "")
    ended = parse_time(status.get("completionTime") or "")
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
    if status.get("phase"):   # GenericJob's model: a phase, and replicas counted per phase
        view.state = status["phase"]
        view.replicas = " · ".join(f"{n} {what}" for what, n in (status.get("aggregate") or {}).items() if n) \
            or "no pods yet"
        view.message = (conditions.get("Failed") or conditions.get("Completed") or {}).get("message") or ""
    else:
        view.state = next((t for t in ("Failed", "Succeeded", "Suspended", "Restarting", "Running", "Created")
                           if t in conditions), "Pending")
        counts = status.get("replicaStatuses") or {}
        view.replicas = " · ".join(
            f"{rtype} " + (" ".join(f"{n} {what}" for what in ("active", "succeeded", "failed")
                                    if (n := (counts.get(rtype) or {}).get(what))) or "pending")
            for rtype in counts) or "no pods yet"
        view.message = (conditions.get(view.state) or {}).get("message") or ""
    if started is not None:
        view.elapsed = (ended or time.time()) - started


def _report_failure(cluster: LocalCluster, write: Callable[[str], None], view: JobView) -> None:
    """The job's failure message, then the last lines of each of its containers that failed (the module says why
    the kubelet's records are complete by now), each with the reason its runtime gave."""
    write(f"{view.key} failed: {view.message}")
    kubelet = cluster.kubelet
    if kubelet is None or not view.uid:
        return
    for instance, end in kubelet.logs.failed(view.uid):
        ended = end.terminated
        write(f"--- pod {instance.pod} container {instance.container} exited with {ended['exitCode']} "
              f"({ended.get('reason', '')}); its last lines:")
        if ended.get("message"):
            write(f"[{instance.pod}] (terminated.message) {ended['message']}")
        for line in tail_lines(instance.path, _TAIL) or ["(no output)"]:
            write(f"[{instance.pod}] {line}")
