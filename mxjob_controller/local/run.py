"""``mxjob-controller local run``: submit jobs to a fresh local cluster, show them running, and end with their fate.

    outcome = run_jobs(cluster, documents, RunOptions(logs=True, timeout=600), out=sys.stdout)
    sys.exit(outcome.exit_code)      # 0 all succeeded, 1 one failed, 124 timed out, 130 interrupted

Everything goes through the API server over HTTP, as kubectl would: the documents are created in order (a missing
namespace is created first), then the jobs among them (MXJobs, TFJobs) are watched until every one has succeeded,
one has failed (fail fast: the others are stopped with the cluster), the time is up, or ``interrupt`` is set.
Progress is a line per change (or, on a terminal, a block redrawn in place): each job's state and replica counts,
and, for a job whose pods wait for room (the local scheduler holds back what does not fit), that it is queued: its
position among the waiting jobs (the scheduler's order: priority, then age) and the scheduler's reason. A pod that
could not fit even the empty node (it asks for more CPU, memory or GPUs than the machine offers) would wait for
ever, as on a cluster without an autoscaler: ``local run`` fails at once instead, naming the pod, what it asks for and
what the node has. So does a job whose pod Pod Security Admission refused (``--pod-security``, or the namespace's
labels): the controller would retry the create for ever; the job fails with kube's ``violates PodSecurity`` text.
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TextIO

from mxjob_controller.core.job_vocabulary import controller_uid
from mxjob_controller.frameworks import FRAMEWORKS
from mxjob_controller.local.cluster import LocalCluster
from mxjob_controller.local.kubelet.logs import Instance, LogStore, tail_lines
from mxjob_controller.local.scheduler.placement import amounts, pod_requests, shortfalls
from mxjob_controller.runtime.client import (
    EVENTS,
    NAMESPACES,
    PODS,
    AlreadyExists,
    ApiError,
    Client,
    KubeError,
    Resource,
)

log = logging.getLogger(__name__)

#: The job kinds followed to their end, and where they are served.
JOB_RESOURCES = {entry.kind: entry.framework().resource for entry in FRAMEWORKS.values()}
SUCCEEDED, FAILED, TIMED_OUT, INTERRUPTED = 0, 1, 124, 130
_POLL = 0.25          # seconds between looks at the jobs
_TAIL = 20            # log lines shown of each failed container
_DRAIN = 5.0          # seconds the log streams get to deliver their last lines once every job succeeded


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


class SubmitError(Exception):
    """A document the API server refused: the message names it and says why."""


class Job(NamedTuple):
    """A submitted job: its resource and where it is."""

    resource: Resource
    namespace: str
    name: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def submit(client: Client, docs: Sequence[dict[str, Any]]) -> list[Job]:
    """Create every document in order; the jobs (MXJobs, TFJobs) among them."""
    jobs: list[Job] = []
    made_namespaces: set[str] = set()
    for doc in docs:
        kind, meta = doc.get("kind") or "", doc.get("metadata") or {}
        api_version = doc.get("apiVersion") or ""
        resource = _resource_for(client, api_version, kind)
        namespace = (meta.get("namespace") or "default") if resource.namespaced else None
        if namespace and namespace not in made_namespaces:
            try:
                client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            except AlreadyExists:
                pass
            made_namespaces.add(namespace)
        what = f"{kind} {(namespace + '/') if namespace else ''}{meta.get('name') or meta.get('generateName') or ''}"
        try:
            created = client.create(resource, doc, namespace)
        except KubeError as e:
            raise SubmitError(f"{what}: {_api_message(e)}") from None
        if kind in JOB_RESOURCES and resource.group == JOB_RESOURCES[kind].group:
            jobs.append(Job(JOB_RESOURCES[kind], namespace or "default", created["metadata"]["name"]))
    return jobs


def _resource_for(client: Client, api_version: str, kind: str) -> Resource:
    """The resource serving ``kind`` in ``api_version``, from discovery (as kubectl finds it)."""
    group, _, version = api_version.rpartition("/")
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    try:
        listing = client.request("GET", path)
    except ApiError:
        listing = None
    for entry in (listing or {}).get("resources") or []:
        if entry.get("kind") == kind and "/" not in entry.get("name", ""):
            return Resource(group, version, entry["name"], namespaced=bool(entry.get("namespaced")), kind=kind)
    raise SubmitError(f'no matches for kind "{kind}" in version "{api_version}": the local cluster serves no such '
                      "resource")


def _api_message(e: KubeError) -> str:
    status = getattr(e, "status", None) or {}
    message = status.get("message") if isinstance(status, dict) else None
    return message or str(e)


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
             out: TextIO, interrupt: threading.Event) -> Outcome:
    """Follow ``jobs`` until they all succeed, one fails, the timeout passes or ``interrupt`` is set."""
    start = time.monotonic()
    lock = threading.Lock()
    drawn = [0]   # lines of the progress block on screen (interactive)

    def write(line: str) -> None:
        """A line below the progress block, which stays as last drawn."""
        with lock:
            drawn[0] = 0
            out.write(line + "\n")
            out.flush()

    stop_logs = threading.Event()
    kubelet = cluster.kubelet
    streams = _LogStreams(kubelet.logs, write, stop_logs) if options.logs and kubelet is not None else None
    shown: dict[str, str] = {}
    try:
        while True:
            states = {job.key: _job_state(client, job) for job in jobs}
            waiting = _waiting_pods(client, {job.namespace for job in jobs})
            _add_queue(states, waiting)
            _fail_what_never_fits(states, waiting, kubelet.allocatable if kubelet is not None else None)
            _fail_what_pod_security_refuses(client, states, jobs)
            elapsed = time.monotonic() - start
            lines = {key: f"{key}  {state['summary']}" for key, state in states.items()}
            if options.interactive:
                with lock:
                    if drawn[0]:
                        out.write(f"\x1b[{drawn[0]}F\x1b[J")
                    block = [f"[{elapsed:6.1f}s] {line}" for line in lines.values()]
                    out.write("\n".join(block) + "\n")
                    out.flush()
                    drawn[0] = len(block)
            else:
                for key, line in lines.items():
                    if shown.get(key) != line:
                        write(f"[{elapsed:6.1f}s] {line}")
            shown = lines
            failed = [(key, s) for key, s in states.items() if s["state"] == "Failed"]
            if failed:
                key, state = failed[0]
                _report_failure(cluster, write, key, state)
                return Outcome(FAILED, state["message"], {k: s["state"] for k, s in states.items()})
            if all(s["state"] == "Succeeded" for s in states.values()):
                if streams is not None:
                    streams.join(_DRAIN)  # every container has ended: its follower ends once it has read the rest
                write(f"all {len(states)} job(s) succeeded in {elapsed:.1f}s")
                return Outcome(SUCCEEDED, "", {k: s["state"] for k, s in states.items()})
            if options.timeout is not None and elapsed >= options.timeout:
                pending = ", ".join(f"{k} ({s['state']})" for k, s in states.items() if s["state"] != "Succeeded")
                message = f"timed out after {options.timeout:g}s: not finished: {pending}"
                write(message)
                return Outcome(TIMED_OUT, message, {k: s["state"] for k, s in states.items()})
            if interrupt.wait(_POLL):
                write("interrupted: stopping the local cluster")
                return Outcome(INTERRUPTED, "interrupted", {k: s["state"] for k, s in states.items()})
    finally:
        stop_logs.set()
        if streams is not None:
            streams.join(1.0)


def queue_positions(waiting: Sequence[dict[str, Any]]) -> dict[str, tuple[int, int, str]]:
    """Owner uid → (position, pods waiting, the scheduler's reason) for each job with pods marked unschedulable,
    ordered as the scheduler orders them: its most urgent waiting pod's priority (highest first), then age."""
    by_owner: dict[str, list[tuple[int, str, str]]] = {}
    for pod in waiting:
        meta = pod.get("metadata") or {}
        owner = controller_uid(pod)
        reason = next((c.get("message") or "" for c in (pod.get("status") or {}).get("conditions") or []
                       if c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"), None)
        if owner and reason is not None:
            priority = (pod.get("spec") or {}).get("priority") or 0
            by_owner.setdefault(owner, []).append((-priority, meta.get("creationTimestamp") or "", reason))
    ordered = sorted(by_owner, key=lambda uid: min(by_owner[uid])[:2])
    return {uid: (i + 1, len(by_owner[uid]), min(by_owner[uid])[2]) for i, uid in enumerate(ordered)}


def never_fits(pod: dict[str, Any], allocatable: dict[str, str]) -> str:
    """Why ``pod`` cannot fit the node even when nothing else runs on it ('' when it can): each short resource with
    what the pod asks for and what the node has."""
    wanted, offered = pod_requests(pod.get("spec") or {}), amounts(allocatable)
    short = [reason.removeprefix("Insufficient ") for reason in shortfalls(wanted, offered, {})
             if reason.startswith("Insufficient ")]
    return ", ".join(f"{name} {_figure(wanted[name])} (the node has {allocatable.get(name, '0')})" for name in short)


def _figure(amount: Any) -> str:
    return str(int(amount)) if amount == int(amount) else f"{float(amount):g}"


def _fail_what_never_fits(states: dict[str, dict[str, str]], waiting: Sequence[dict[str, Any]],
                          allocatable: dict[str, str] | None) -> None:
    """Mark Failed the jobs with a waiting pod that no amount of waiting can place (see the module)."""
    if allocatable is None:
        return
    by_uid = {state.get("uid"): state for state in states.values() if state["state"] not in ("Succeeded", "Failed")}
    for pod in waiting:
        meta = pod.get("metadata") or {}
        owner = controller_uid(pod)
        state = by_uid.get(owner)
        if state is None or not (why := never_fits(pod, allocatable)):
            continue
        state["state"], state["summary"] = "Failed", f"{'Failed':<10} pod {meta.get('name')} can never fit this node"
        state["message"] = (f"pod {meta.get('name')} can never be scheduled on this machine: it asks for {why}; "
                            "`local run --capacity` declares a larger node")


def _fail_what_pod_security_refuses(client: Client, states: dict[str, dict[str, str]], jobs: Sequence[Job]) -> None:
    """Mark Failed the jobs whose pod create PodSecurity refused (their ``FailedCreatePod`` event says so): no retry
    can succeed while the namespace's policy stands."""
    for job in jobs:
        state = states.get(job.key)
        if state is None or state["state"] in ("Succeeded", "Failed") or not state.get("uid"):
            continue
        try:
            events = client.list_all(EVENTS, job.namespace,
                                     field_selector=f"involvedObject.uid={state['uid']},reason=FailedCreatePod")
        except KubeError:
            continue   # asked again next turn
        refused = next((str(e.get("message") or "") for e in events.get("items") or []
                        if "violates PodSecurity" in str(e.get("message") or "")), None)
        if refused is not None:
            state["state"], state["summary"] = "Failed", f"{'Failed':<10} a pod refused by PodSecurity"
            state["message"] = (f"{refused.removeprefix('Error creating: ')} (the namespace's "
                                "pod-security.kubernetes.io labels or `local run --pod-security` set the level)")


def _waiting_pods(client: Client, namespaces: set[str]) -> list[dict[str, Any]]:
    """The unbound, unfinished pods of ``namespaces`` (a read that fails shows no queue this turn)."""
    pods: list[dict[str, Any]] = []
    for namespace in sorted(namespaces):
        try:
            listed = client.list_all(PODS, namespace, field_selector="spec.nodeName=,status.phase=Pending")
        except KubeError:
            continue
        pods.extend(listed.get("items") or [])
    return pods


def _add_queue(states: dict[str, dict[str, str]], waiting: Sequence[dict[str, Any]]) -> None:
    positions = queue_positions(waiting)
    for state in states.values():
        place = positions.get(state.get("uid") or "")
        if place is not None and state["state"] not in ("Succeeded", "Failed"):
            position, count, reason = place
            state["summary"] += f" · queued #{position}: {count} pod(s) waiting ({reason})"


def _job_state(client: Client, submitted: Job) -> dict[str, str]:
    try:
        job = client.get(submitted.resource, submitted.name, submitted.namespace)
    except KubeError as e:  # a job that vanished has failed; a read that failed is asked again next turn
        return {"state": "Failed" if getattr(e, "code", 0) == 404 else "Unknown",
                "summary": f"cannot be read: {_api_message(e)}",
                "message": f"{submitted.resource.kind} {submitted.name}: {_api_message(e)}"}
    uid = (job.get("metadata") or {}).get("uid") or ""
    status = job.get("status") or {}
    conditions = {c.get("type"): c for c in status.get("conditions") or [] if c.get("status") == "True"}
    if status.get("phase"):   # GenericJob's model: a phase, and replicas counted per phase
        state = status["phase"]
        replicas = " · ".join(f"{n} {what}" for what, n in (status.get("aggregate") or {}).items() if n)
        message = (conditions.get("Failed") or conditions.get("Completed") or {}).get("message") or ""
        return {"state": state, "summary": f"{state:<10} {replicas or 'no pods yet'}", "message": message, "uid": uid}
    state = next((t for t in ("Failed", "Succeeded", "Suspended", "Restarting", "Running", "Created")
                  if t in conditions), "Pending")
    counts = status.get("replicaStatuses") or {}
    replicas = " · ".join(f"{rtype} " + (" ".join(f"{n} {what}" for what in ("active", "succeeded", "failed")
                                                  if (n := (counts.get(rtype) or {}).get(what))) or "pending")
                          for rtype in counts) or "no pods yet"
    message = (conditions.get(state) or {}).get("message") or ""
    return {"state": state, "summary": f"{state:<10} {replicas}", "message": message, "uid": uid}


def _report_failure(cluster: LocalCluster, write: Callable[[str], None], key: str, state: dict[str, str]) -> None:
    """The job's failure message, then the last lines of each of its containers that failed (the module says why
    the kubelet's records are complete by now)."""
    write(f"{key} failed: {state['message']}")
    kubelet = cluster.kubelet
    if kubelet is None or not state.get("uid"):
        return
    for instance, end in kubelet.logs.failed(state["uid"]):
        ended = end.terminated
        write(f"--- pod {instance.pod} container {instance.container} exited with {ended['exitCode']} "
              f"({ended.get('reason', '')}); its last lines:")
        for line in tail_lines(instance.path, _TAIL) or ["(no output)"]:
            write(f"[{instance.pod}] {line}")
