"""The job status the controller writes, computed from the status it read and what the replicas show. Pure.

- The first write carries ``Created`` (``<Kind>Created``, "<Kind> <name> is created.") and ``startTime``.
- Replica counts are rewritten every time (the framework decides their shape on the wire).
- ``Running`` (``<Kind>Running``) when the framework says the job runs.
- Success: ``Succeeded`` (``<Kind>Succeeded``), ``Running`` turns False, every active count moves to succeeded
  and ``completionTime`` is set, all in the same write.
- Failure: ``Failed`` (``<Kind>Failed``) with a message naming each failed pod, its exit code and termination
  reason, and ``completionTime``, in the same write; or, when no replica failed, with the job-level reason given
  (backoff limit, deadline).
- ``Restarting`` (``<Kind>Restarting``) while replicas restart; ``Running`` replaces it once every recreated pod
  runs.
- ``lastReconcileTime`` moves only together with a real change, so an idle resync computes an equal status and
  writes nothing.
- A finished job's status is returned as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mxjob_controller.core import conditions as cond
from mxjob_controller.core.common_types import ReplicaCounts
from mxjob_controller.core.framework import Verdict
from mxjob_controller.core.pod_status import PodFailure
from mxjob_controller.kube.jsoncopy import deep_copy

RenderCounts = Callable[[Mapping[str, Any], Mapping[str, ReplicaCounts]], dict[str, Any]]


def created_message(kind: str, name: str) -> str:
    return f"{kind} {name} is created."


def running_message(kind: str, name: str) -> str:
    return f"{kind} {name} is running."


def succeeded_message(kind: str, name: str) -> str:
    return f"{kind} {name} is successfully completed."


def _replicas_failed(failures: Sequence[PodFailure]) -> str:
    """``1 Worker replica(s) failed: j-worker-0 exited with code 137 (OOMKilled)``"""
    per_type: dict[str, int] = {}
    for failure in failures:
        per_type[failure.replica_type] = per_type.get(failure.replica_type, 0) + 1
    counted = ", ".join(f"{n} {rtype}" for rtype, n in per_type.items())
    details = "; ".join(f.describe() for f in failures)
    return f"{counted} replica(s) failed: {details}"


def failure_message(kind: str, name: str, failures: Sequence[PodFailure]) -> str:
    """``MXJob j has failed because 1 Worker replica(s) failed: j-worker-0 exited with code 137 (OOMKilled).``"""
    return f"{kind} {name} has failed because {_replicas_failed(failures)}."


def restarting_message(kind: str, name: str, failures: Sequence[PodFailure]) -> str:
    """``MXJob j is restarting because 1 Worker replica(s) failed: j-worker-0 exited with code 137 (OOMKilled).``"""
    if not failures:
        return f"{kind} {name} is restarting."
    return f"{kind} {name} is restarting because {_replicas_failed(failures)}."


def blocked_message(kind: str, name: str, blocked: Sequence[str]) -> str:
    """The ``Created`` message while children cannot be created because their names are taken."""
    return (f"{created_message(kind, name)} Cannot create {', '.join(blocked)}: the name is held by an object "
            f"{kind} {name} does not control; delete or rename it.")


def names_blocked(status: Mapping[str, Any]) -> bool:
    """Whether the ``Created`` message of ``status`` is a :func:`blocked_message`."""
    message = (cond.find(status.get("conditions"), cond.CREATED) or {}).get("message") or ""
    return " Cannot create " in message and message.endswith("; delete or rename it.")


def next_status(old: Mapping[str, Any] | None, *, kind: str, name: str, counts: Mapping[str, ReplicaCounts],
                verdict: Verdict, now: str, render_counts: RenderCounts,
                blocked: Sequence[str] | None = (), job_failure: str = "", restarting: str = "",
                fields: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The status to write (``old`` is not modified). ``blocked``: descriptions (``pod "j-worker-0"``) of children
    whose names are taken by objects the job does not control; None keeps what the ``Created`` message says
    (a status written before the children are synced does not know yet). ``job_failure``: why the job as a whole fails
    (backoff limit, deadline), unless a replica failed or it succeeded. ``restarting``: the ``Restarting`` message
    while replicas restart (it holds ``Running`` off). ``fields``: other status fields to set (None removes one)."""
    old = dict(old or {})
    conditions = old.get("conditions") or []
    if cond.is_finished(conditions):
        return deep_copy(old)
    final_counts = dict(counts)
    status = deep_copy(old)
    conditions = cond.set_condition(conditions, cond.CREATED, cond.TRUE, f"{kind}Created",
                                    created_message(kind, name), now)
    if blocked is not None:
        conditions = cond.set_message(conditions, cond.CREATED, blocked_message(kind, name, blocked) if blocked
                                      else created_message(kind, name), now)
    status.setdefault("startTime", now)
    if verdict.failed:
        conditions = cond.set_condition(conditions, cond.FAILED, cond.TRUE, f"{kind}Failed",
                                        failure_message(kind, name, verdict.failures), now)
        status.setdefault("completionTime", now)
    elif verdict.succeeded:
        final_counts = {rtype: ReplicaCounts(0, c.succeeded + c.active, c.failed) for rtype, c in counts.items()}
        conditions = cond.set_condition(conditions, cond.SUCCEEDED, cond.TRUE, f"{kind}Succeeded",
                                        succeeded_message(kind, name), now)
        status.setdefault("completionTime", now)
    elif job_failure:
        conditions = cond.set_condition(conditions, cond.FAILED, cond.TRUE, f"{kind}Failed", job_failure, now)
        status.setdefault("completionTime", now)
    elif restarting:
        conditions = cond.set_condition(conditions, cond.RESTARTING, cond.TRUE, f"{kind}Restarting", restarting, now)
    elif verdict.running:
        conditions = cond.set_condition(conditions, cond.RUNNING, cond.TRUE, f"{kind}Running",
                                        running_message(kind, name), now)
    status["conditions"] = conditions
    for key, value in (fields or {}).items():
        if value is None:
            status.pop(key, None)
        else:
            status[key] = value
    status = render_counts(status, final_counts)
    if status != old:
        status["lastReconcileTime"] = now
    return status
