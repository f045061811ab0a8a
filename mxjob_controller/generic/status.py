"""A GenericJob's status, as T9k's API and real status dumps show it: ``phase``, ``conditions``, ``tasks`` and
``aggregate``. Pure: :func:`next_status` computes the whole status from the old one, the job, its pods and the
judgement of ``generic/status_rules.py``.

``tasks``: one entry per replica type, in spec order: ``{type, restartCount, replicas: [{name, uid, phase,
containers: [{name, state, exitCode}]}]}``, and ``restarting`` (ours): the UIDs of pods being replaced by a restart
already counted in ``restartCount``, so that a restart is counted once even if the controller stops between
counting it and deleting the pod. A replica's phase is its pod's, except ``Creating`` (no pod yet, or a Pending pod
no kubelet has started: no ``startTime``) and ``Deleted`` (no pod, and none coming: paused, or cleaned up after the
job finished).
``aggregate`` counts replicas per phase, so its numbers add up to the job's replicas.

Phases: ``Pending`` until every replica's pod (and Service) exists, then ``Running``; ``Succeeded`` / ``Failed``
for good; ``Paused`` while ``runMode.pause.enabled``; then ``Resuming`` until every pod exists again, then
``Running``.

Conditions (type / status / reason / message):

================  =========================================================================================
Initialized       False / Initializing / "Waiting for the replicas to be created: 2 of 5 pods exist." then,
                  once they all exist, True / - / "The job has been initialized successfully."
Running           True / - / "All pods are running normally." (in debug mode: True / Debug / …); False /
                  Succeeded or Failed / the finish message; False / Paused / "The job is paused."
ReplicaFailure    True / ErrorInPod / "Pod[<pod>] exited with error code <n>" (the first pod in spec order with
                  a container that exited non-zero), else False / - / "All pods are running normally."
Completed         True / Succeeded or Failed / the finish message (True on failure too, as T9k writes it)
Failed            True / Failed / the failure message, or False / Succeeded / "The job has finished successfully."
Paused            True / Paused / "The job is paused: all its pods are deleted." once no pod is left, False /
                  Pausing / "Deleting the job's pods: <n> left." before; False / Resumed / "The job is resumed."
================  =========================================================================================

An invalid spec gives phase ``Failed`` with ``Failed`` and ``Completed`` True / InvalidSpec / every field error
(:func:`invalid_status`); a fixed spec is reconciled afresh. Once ``Succeeded`` or ``Failed`` (for a valid spec),
the phase and the conditions never change again; ``tasks`` and ``aggregate`` still follow the pods (a clean-up
shows as ``deleted``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mxjob_controller.core.pods import PENDING, is_deleting, phase
from mxjob_controller.generic.api import GenericJobView
from mxjob_controller.generic.status_rules import SUCCESS_MESSAGE, Judgement
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.vocabulary import FALSE, TRUE

# Phases of the job.
PHASE_PENDING, PHASE_RUNNING, PHASE_PAUSED, PHASE_RESUMING = "Pending", "Running", "Paused", "Resuming"
PHASE_SUCCEEDED, PHASE_FAILED = "Succeeded", "Failed"
TERMINAL_PHASES = frozenset({PHASE_SUCCEEDED, PHASE_FAILED})

# Phases of one replica, beside the pod phases.
CREATING, DELETED = "Creating", "Deleted"
AGGREGATE_KEYS = ("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted")

INITIALIZED, RUNNING, REPLICA_FAILURE, COMPLETED, FAILED, PAUSED = (
    "Initialized", "Running", "ReplicaFailure", "Completed", "Failed", "Paused")
NO_REASON = "-"
INVALID_SPEC = "InvalidSpec"
INITIALIZED_MESSAGE = "The job has been initialized successfully."
NORMAL_MESSAGE = "All pods are running normally."
DEBUG_MESSAGE = "The job runs in debug mode: its replicas' commands are replaced and no rule is evaluated."
PAUSED_MESSAGE = "The job is paused."
ALL_DELETED_MESSAGE = "The job is paused: all its pods are deleted."
RESUMED_MESSAGE = "The job is resumed."

Pods = Mapping[str, Mapping[int, dict[str, Any]]]   # type → rank → the pod standing for that replica


def is_terminal(status: Mapping[str, Any] | None) -> bool:
    return (status or {}).get("phase") in TERMINAL_PHASES


def is_invalid(status: Mapping[str, Any] | None) -> bool:
    """Failed for an invalid spec (which a fixed spec undoes)."""
    failed = find((status or {}).get("conditions"), FAILED)
    return failed is not None and failed.get("reason") == INVALID_SPEC


# --- conditions ------------------------------------------------------------------------------------------

def find(conditions: Iterable[Mapping[str, Any]] | None, ctype: str) -> dict[str, Any] | None:
    for c in conditions or ():
        if c.get("type") == ctype:
            return dict(c)
    return None


def set_condition(conditions: Sequence[Mapping[str, Any]], ctype: str, status: str, reason: str, message: str,
                  now: str) -> list[dict[str, Any]]:
    """``conditions`` with ``ctype`` set (in its place, or appended); its ``lastTransitionTime`` moves only when
    its status changes."""
    new = {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": now}
    out: list[dict[str, Any]] = []
    placed = False
    for c in conditions:
        if c.get("type") == ctype:
            if c.get("status") == status:
                new["lastTransitionTime"] = c.get("lastTransitionTime") or now
            out.append(new)
            placed = True
        else:
            out.append(dict(c))
    return out if placed else [*out, new]


# --- replicas --------------------------------------------------------------------------------------------

def replica_phase(pod: Mapping[str, Any] | None, missing: str = CREATING) -> str:
    """The phase of a replica whose pod is ``pod``; ``missing``: what a replica without one is."""
    if pod is None:
        return missing
    pod_phase = phase(dict(pod))
    if pod_phase == PENDING and not (pod.get("status") or {}).get("startTime"):
        return CREATING
    return pod_phase


def _containers(pod: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        if not isinstance(cs, dict):
            continue
        state = cs.get("state") or {}
        entry: dict[str, Any] = {"name": cs.get("name") or ""}
        for key in ("terminated", "running", "waiting"):
            if isinstance(state.get(key), dict):
                entry["state"] = key.capitalize()
                if key == "terminated" and state[key].get("exitCode") is not None:
                    entry["exitCode"] = state[key]["exitCode"]
                break
        out.append(entry)
    return out


def replica_status(name: str, pod: Mapping[str, Any] | None, missing: str = CREATING) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "phase": replica_phase(pod, missing)}
    if pod is not None:
        entry["uid"] = (pod.get("metadata") or {}).get("uid") or ""
        containers = _containers(pod)
        if containers:
            entry["containers"] = containers
    return entry


def tasks_of(job: GenericJobView, pods: Pods, restart_counts: Mapping[str, int], restarting: Iterable[str],
             missing: str = CREATING) -> list[dict[str, Any]]:
    """``missing``: the phase of replicas without a pod (``Creating`` while the controller makes them)."""
    replacing = set(restarting)
    tasks = []
    for rtype, replica in job.replicas.items():
        by_rank = pods.get(rtype, {})
        replicas = [replica_status(f"{job.name}-{rtype}-{rank}", by_rank.get(rank), missing)
                    for rank in range(replica.replicas)]
        task: dict[str, Any] = {"type": rtype, "restartCount": restart_counts.get(rtype, 0), "replicas": replicas}
        uids = sorted(r["uid"] for r in replicas if r.get("uid") in replacing)
        if uids:
            task["restarting"] = uids
        tasks.append(task)
    return tasks


def aggregate_of(tasks: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(AGGREGATE_KEYS, 0)
    for task in tasks:
        for replica in task["replicas"]:
            key = str(replica["phase"]).lower()
            counts[key if key in counts else "unknown"] += 1
    return counts


def restart_counts_of(status: Mapping[str, Any] | None) -> dict[str, int]:
    """Type → restarts, as a status records them."""
    out: dict[str, int] = {}
    for task in (status or {}).get("tasks") or ():
        if isinstance(task, dict) and isinstance(task.get("type"), str):
            count = task.get("restartCount")
            out[task["type"]] = count if isinstance(count, int) and not isinstance(count, bool) else 0
    return out


def restarting_of(status: Mapping[str, Any] | None) -> set[str]:
    """UIDs of the pods a status records as being replaced by a counted restart."""
    return {uid for task in (status or {}).get("tasks") or () if isinstance(task, dict)
            for uid in task.get("restarting") or () if isinstance(uid, str)}


def first_error(tasks: Sequence[Mapping[str, Any]]) -> tuple[str, int] | None:
    """(pod, exit code) of the first replica, in spec order, with a container that exited non-zero."""
    for task in tasks:
        for replica in task["replicas"]:
            for container in replica.get("containers") or ():
                if container.get("exitCode") not in (None, 0):
                    return replica["name"], container["exitCode"]
    return None


# --- the whole status ------------------------------------------------------------------------------------

def next_status(old: Mapping[str, Any] | None, job: GenericJobView, pods: Pods, *, judgement: Judgement | None,
                restarting: Iterable[str], services_ready: bool, now: str) -> dict[str, Any]:
    """The status ``job`` should have now. ``judgement``: the rules' verdict (None in debug mode, while paused,
    and for a finished job); ``restarting``: UIDs of pods being replaced by a counted restart."""
    old = dict(old or {})
    counts = dict(judgement.restart_counts) if judgement is not None else restart_counts_of(old)
    missing = DELETED if job.paused or is_terminal(old) else CREATING
    tasks = tasks_of(job, pods, counts, restarting, missing)
    status: dict[str, Any] = {**old, "tasks": tasks, "aggregate": aggregate_of(tasks)}
    if is_terminal(old):
        return status
    conditions: list[dict[str, Any]] = [dict(c) for c in old.get("conditions") or ()]
    old_phase = old.get("phase") or PHASE_PENDING
    total = job.total_replicas
    # Pods on their way out do not count: a resumed job whose old pods still terminate is not running yet.
    existing = sum(1 for by_rank in pods.values() for pod in by_rank.values() if not is_deleting(dict(pod)))

    if job.paused:
        if find(conditions, RUNNING) is not None:
            conditions = set_condition(conditions, RUNNING, FALSE, PHASE_PAUSED, PAUSED_MESSAGE, now)
        pods_left = sum(len(by_rank) for by_rank in pods.values())
        conditions = set_condition(conditions, PAUSED, TRUE, PHASE_PAUSED, ALL_DELETED_MESSAGE, now) if not pods_left \
            else set_condition(conditions, PAUSED, FALSE, "Pausing", f"Deleting the job's pods: {pods_left} left.", now)
        return {**status, "phase": PHASE_PAUSED, "conditions": conditions}

    all_created = existing == total and services_ready
    initialized = all_created or (find(conditions, INITIALIZED) or {}).get("status") == TRUE
    if initialized:
        conditions = set_condition(conditions, INITIALIZED, TRUE, NO_REASON, INITIALIZED_MESSAGE, now)
    else:
        conditions = set_condition(conditions, INITIALIZED, FALSE, "Initializing",
                                   f"Waiting for the replicas to be created: {existing} of {total} pods exist.", now)
    resuming = old_phase in (PHASE_PAUSED, PHASE_RESUMING)
    if resuming:
        conditions = set_condition(conditions, PAUSED, FALSE, "Resumed", RESUMED_MESSAGE, now)
    error = first_error(tasks)
    if error is not None:
        conditions = set_condition(conditions, REPLICA_FAILURE, TRUE, "ErrorInPod",
                                   f"Pod[{error[0]}] exited with error code {error[1]}", now)
    elif initialized:
        conditions = set_condition(conditions, REPLICA_FAILURE, FALSE, NO_REASON, NORMAL_MESSAGE, now)
    if judgement is not None and judgement.finished:
        return {**status, **_finished(conditions, judgement, now)}
    if resuming:
        new_phase = PHASE_RUNNING if all_created else PHASE_RESUMING
    else:
        new_phase = PHASE_RUNNING if old_phase == PHASE_RUNNING or all_created else PHASE_PENDING
    if new_phase == PHASE_RUNNING:
        conditions = set_condition(conditions, RUNNING, TRUE, "Debug", DEBUG_MESSAGE, now) if job.debug \
            else set_condition(conditions, RUNNING, TRUE, NO_REASON, NORMAL_MESSAGE, now)
    return {**status, "phase": new_phase, "conditions": conditions}


def _finished(conditions: list[dict[str, Any]], judgement: Judgement, now: str) -> dict[str, Any]:
    if judgement.succeeded:
        reason, message = PHASE_SUCCEEDED, SUCCESS_MESSAGE
        conditions = set_condition(conditions, RUNNING, FALSE, reason, message, now)
        conditions = set_condition(conditions, COMPLETED, TRUE, reason, message, now)
        conditions = set_condition(conditions, FAILED, FALSE, reason, message, now)
        return {"phase": PHASE_SUCCEEDED, "conditions": conditions}
    reason, message = PHASE_FAILED, judgement.failure
    conditions = set_condition(conditions, RUNNING, FALSE, reason, message, now)
    conditions = set_condition(conditions, COMPLETED, TRUE, reason, message, now)
    conditions = set_condition(conditions, FAILED, TRUE, reason, message, now)
    return {"phase": PHASE_FAILED, "conditions": conditions}


def invalid_message(errors: Sequence[FieldError]) -> str:
    return "The job's spec is invalid: " + "; ".join(str(e) for e in errors)


def invalid_status(old: Mapping[str, Any] | None, errors: Sequence[FieldError], now: str) -> dict[str, Any]:
    """The status of a job whose spec is invalid: Failed, every field error in the message; nothing else kept but
    what ``old`` already had."""
    conditions = [dict(c) for c in (old or {}).get("conditions") or ()]
    message = invalid_message(errors)
    for ctype in (COMPLETED, FAILED):
        conditions = set_condition(conditions, ctype, TRUE, INVALID_SPEC, message, now)
    return {**dict(old or {}), "phase": PHASE_FAILED, "conditions": conditions}


def without_invalid(status: Mapping[str, Any] | None) -> dict[str, Any]:
    """The status to reconcile from: empty if it records an invalid spec (fixed since), else as it is."""
    return {} if is_invalid(status) else dict(status or {})
