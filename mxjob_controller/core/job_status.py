"""The job status the controller writes: computed from the status it read and what the replicas show (pure), the
events its transitions are announced with, the conditional write itself (I/O, below), and the ``ExitedWithCode``
events that report what the replicas' pods did.

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

An invalid job is ``Failed`` with reason ``<Kind>FailedValidation`` and a message listing every field error (as
Kubernetes aggregates errors: one bare, several in brackets), with ``completionTime``: the user sees at once what to
fix, and the controller neither creates pods nor retries (training-operator returned the validation error and so
re-validated the job in a hot loop). It is the one failure that is not final: validation runs on every reconcile,
so a new generation with other errors gets a new message, and a fixed spec removes the failure (and its completion
time), after which the job is reconciled like a new one.

The Events a job's condition transitions are announced with are made in one place, so that the reconcile that writes a
transition and a controller that finds a job already finished after a restart write the very same Event: type by
condition, reason and message those of the condition as stored.

A job's ``Succeeded``, ``Failed`` and ``Restarting`` events are *important* (``EventRecorder.event(important=True)``):
they end a chapter of the job, users and tools wait for them, and they are few; the recorder never drops them to
make room for ordinary events nor spam-filters them.

After a restart: a finished job whose condition turned True less than :data:`ANNOUNCE_WINDOW` seconds ago gets its
terminal event recorded with ``event_once`` (written unless this process or the API already has one). Older ones
get nothing: kube-apiserver deletes Events an hour after their last write (``--event-ttl``), so theirs may be gone
on purpose, and announcing a days-old end as news would mislead.

The status is written as a JSON merge patch on ``/status`` carrying ``metadata.resourceVersion``, sent only when
the status changed.

The resourceVersion makes the write conditional: if the job changed since it was read, the server answers 409, the
writer re-reads the job from the API (not the cache, which may still be behind) and recomputes the status from
that fresh object, so no condition written by someone else in between is lost and no transition is decided twice.

Guarantee: the returned :class:`StatusWrite` pairs the status a write was computed from with the status the server
stored, so callers decide events and metrics from exactly the transition that was recorded.

Read your own writes: the informer cache shows a status write only when its watch event arrives, often after the
events of the pods created in the same reconcile have queued the job again. Computing from that stale job would
send a second PATCH that the server refuses (409) and a retry; :meth:`StatusWriter.freshest` hands the reconciler
the object the last write stored while the cache still shows an older resourceVersion of it (client-go's
``MutationCache`` idea). Any other resourceVersion in the cache (our write, or a later change by anyone) wins.

``ExitedWithCode`` is one Normal event on the job per termination of a pod's framework container, as upstream
names it ("Pod: <namespace>.<name> exited with code <code>").

Recorded by the reconcile, from the pods the cache shows it (data flows informer → queue → reconcile → writes), once
per termination: a pod is remembered by UID with the termination last reported (exit code and ``finishedAt``,
``pods.termination``), so a resync or another change of the same pod reports nothing, and a container that
restarted and exited again is reported again.

The first look at a job in this process (after a start or a leader change) records what it sees without a word:
those exits happened before this controller watched, and were reported by the one that did (training-operator
re-emitted them on every reconcile). Memory is bounded by the job cache: one entry per cached job (its cached
pods' terminations), dropped once the job is gone; a job still cached is never forgotten, so its next exit is
never lost.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core import job_vocabulary as cond
from mxjob_controller.core.framework import Verdict
from mxjob_controller.core.job_vocabulary import ReplicaCounts
from mxjob_controller.core.pods import PodFailure, termination
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kube.patch.merge import create_merge_patch
from mxjob_controller.kube.timefmt import parse_time
from mxjob_controller.runtime.cache_keys import object_key
from mxjob_controller.runtime.client import Client, Conflict, NotFound, Resource, ServerError
from mxjob_controller.runtime.events import NORMAL, WARNING, EventRecorder, ObjectReference

# --- validation failure -------------------------------------------------------------------------------------------

REASON_SUFFIX = "FailedValidation"


def validation_reason(kind: str) -> str:
    return f"{kind}{REASON_SUFFIX}"


def aggregate(errors: Sequence[FieldError]) -> str:
    """Errors as apimachinery's ``utilerrors.Aggregate`` prints them: ``a`` or ``[a, b]``."""
    texts = [str(e) for e in errors]
    return texts[0] if len(texts) == 1 else f"[{', '.join(texts)}]"


def validation_message(kind: str, name: str, errors: Sequence[FieldError]) -> str:
    return f"{kind} {name} failed validation because {aggregate(errors)}"


def failed_validation(status: Mapping[str, Any] | None, kind: str) -> bool:
    """Whether the job's ``Failed`` condition is a validation failure (the one that a fixed spec undoes)."""
    failed = cond.find((status or {}).get("conditions"), cond.FAILED)
    return failed is not None and failed.get("status") == cond.TRUE and failed.get("reason") == validation_reason(kind)


def invalid_status(old: Mapping[str, Any] | None, *, kind: str, name: str, errors: Sequence[FieldError],
                   now: str) -> dict[str, Any] | None:
    """The status of an invalid job (``old`` is not modified); None when the job had finished before its spec
    became invalid (a finished job stays as it finished)."""
    status = deep_copy(dict(old or {}))
    conditions = status.get("conditions") or []
    if cond.is_finished(conditions) and not failed_validation(status, kind):
        return None
    message = validation_message(kind, name, errors)
    current = cond.find(conditions, cond.FAILED)
    if current is not None and failed_validation(status, kind):
        if current.get("message") == message:
            return status
        conditions = [dict(c, message=message, lastUpdateTime=now) if c.get("type") == cond.FAILED else dict(c)
                      for c in conditions]
    else:
        conditions = cond.set_condition(conditions, cond.FAILED, cond.TRUE, validation_reason(kind), message, now)
    status["conditions"] = conditions
    status.setdefault("completionTime", now)
    status["lastReconcileTime"] = now
    return status


def without_validation_failure(old: Mapping[str, Any] | None, kind: str) -> dict[str, Any]:
    """``old`` with its validation failure (and the completion time it set) removed, for a spec now valid."""
    status = deep_copy(dict(old or {}))
    if not failed_validation(status, kind):
        return status
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != cond.FAILED]
    status.pop("completionTime", None)
    return status


# --- job status --------------------------------------------------------------------------------------------------

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


# --- transition events -------------------------------------------------------------------------------------------

EVENT_TYPES = {cond.RUNNING: NORMAL, cond.SUCCEEDED: NORMAL, cond.FAILED: WARNING, cond.RESTARTING: WARNING}
IMPORTANT = frozenset({cond.SUCCEEDED, cond.FAILED, cond.RESTARTING})
ANNOUNCE_WINDOW = 3600.0   # kube-apiserver's default --event-ttl


@dataclass(frozen=True, slots=True)
class TransitionEvent:
    event_type: str
    reason: str
    message: str
    important: bool
    at: float | None       # the condition's lastTransitionTime (Unix), when it has one


def transition_event(kind: str, ctype: str, conditions: cond.Conditions | None) -> TransitionEvent | None:
    """The Event announcing that ``ctype`` turned True, from the condition in ``conditions``; None for a type
    that is not announced this way."""
    event_type = EVENT_TYPES.get(ctype)
    if event_type is None:
        return None
    found: dict[str, Any] = cond.find(conditions, ctype) or {}
    return TransitionEvent(event_type, found.get("reason") or f"{kind}{ctype}", found.get("message") or "",
                           ctype in IMPORTANT, parse_time(found.get("lastTransitionTime")))


def terminal_event(kind: str, conditions: cond.Conditions | None) -> TransitionEvent | None:
    """The Event announcing how a finished job ended (its True ``Succeeded`` or ``Failed``); None if unfinished."""
    for ctype in (cond.SUCCEEDED, cond.FAILED):
        if cond.is_true(conditions, ctype):
            return transition_event(kind, ctype, conditions)
    return None


# --- status writer -----------------------------------------------------------------------------------------------

log = logging.getLogger(__name__)

DEFAULT_ATTEMPTS = 5
SERVER_ERROR_PAUSE = 0.1   # seconds before resending a status PATCH the server failed (5xx), times the attempt

Desired = Callable[[dict[str, Any]], "dict[str, Any] | None"]


@dataclass(frozen=True, slots=True)
class StatusWrite:
    before: dict[str, Any]   # the status the new one was computed from
    after: dict[str, Any]    # the status the server now holds (== before when nothing was written)
    job: dict[str, Any]      # the job object after the write (or as read)
    written: bool


class StatusWriter:
    def __init__(self, client: Client, resource: Resource, attempts: int = DEFAULT_ATTEMPTS) -> None:
        self.client = client
        self.resource = resource
        self.attempts = max(1, attempts)
        # job key → (uid, resourceVersions our writes replaced, the job the last write stored)
        self._written: dict[str, tuple[str, frozenset[str], dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def freshest(self, key: str, job: dict[str, Any]) -> dict[str, Any]:
        """``job`` as cached, or the object our last status write stored if the cache has not shown it yet."""
        meta = job.get("metadata") or {}
        with self._lock:
            entry = self._written.get(key)
            if entry is None:
                return job
            uid, replaced, stored = entry
            if uid == meta.get("uid") and meta.get("resourceVersion") in replaced:
                return stored
            del self._written[key]   # the cache caught up (or the job changed): it is the freshest again
            return job

    def forget(self, key: str) -> None:
        """The job is gone: drop what was remembered of its writes."""
        with self._lock:
            self._written.pop(key, None)

    def _remember(self, key: str, written_from: dict[str, Any], stored: dict[str, Any]) -> None:
        meta = written_from.get("metadata") or {}
        rv, uid = meta.get("resourceVersion") or "", meta.get("uid") or ""
        with self._lock:
            old = self._written.get(key)
            chain = old[1] if old is not None and old[0] == uid and \
                (old[2].get("metadata") or {}).get("resourceVersion") == rv else frozenset()
            self._written[key] = (uid, chain | {rv}, stored)

    def update(self, job: dict[str, Any], desired: Desired, extra: dict[str, Any] | None = None) -> StatusWrite | None:
        """Write ``desired(job)`` if it differs from ``job``'s status; on a conflict re-read and recompute.

        ``desired`` returns None when the (fresh) job must not be written any more (finished meanwhile, replaced by
        a job with another UID...): then nothing is written and None is returned, as when the job is gone.
        """
        uid = (job.get("metadata") or {}).get("uid")
        for attempt in range(1, self.attempts + 1):
            before = job.get("status") or {}
            after = desired(job)
            if after is None:
                return None
            if after == before:
                return StatusWrite(before, before, job, written=False)
            meta = job.get("metadata") or {}
            patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")},
                     "status": create_merge_patch(before, after)}
            try:
                stored = self.client.patch(self.resource, meta["name"], patch, meta.get("namespace"),
                                           subresource="status")
            except NotFound:
                log.info("job vanished before its status could be written", extra=extra)
                return None
            except ServerError as e:
                # The PATCH is conditional on the resourceVersion it was computed from, so sending it again cannot
                # write over anything; retried here, a 5xx costs a short pause instead of a failed reconcile that
                # goes to the back of the queue (a new job would wait that long for its first status).
                if attempt == self.attempts:
                    raise
                log.info("status write failed (%s; attempt %d of %d): retrying", e, attempt, self.attempts,
                         extra=extra)
                time.sleep(min(SERVER_ERROR_PAUSE * attempt, 1.0))
                continue
            except Conflict:
                if attempt == self.attempts:
                    raise
                log.info("status write conflicted (attempt %d of %d): re-reading the job", attempt, self.attempts,
                         extra=extra)
                try:
                    job = self.client.get(self.resource, meta["name"], meta.get("namespace"))
                except NotFound:
                    return None
                if (job.get("metadata") or {}).get("uid") != uid:
                    log.info("job was replaced by another with the same name: not writing", extra=extra)
                    return None
                continue
            stored.get("metadata", {}).pop("managedFields", None)   # as the informer keeps it
            self._remember(object_key(job), job, stored)   # the key the work queue and freshest() use
            return StatusWrite(before, stored.get("status") or {}, stored, written=True)
        raise AssertionError("unreachable")  # the loop returns or raises on its last attempt


# --- exit reports -------------------------------------------------------------------------------------------------

EXITED_WITH_CODE = "ExitedWithCode"


def exit_message(pod: dict[str, Any], code: int) -> str:
    meta = pod.get("metadata") or {}
    return f"Pod: {meta.get('namespace')}.{meta.get('name')} exited with code {code}"


class ExitReports:
    """One ``ExitedWithCode`` event per container termination of a job's pods, recorded by the reconcile that first
    sees it. The first look at a job in a process records nothing: its terminations happened before (a restarted
    controller must not repeat them).

    What it remembers is bounded by the job cache, not by a count: per job key, the job's UID and the terminations
    of its cached pods, replaced by each look and dropped by :meth:`forget` once the job is gone. So no job still
    cached (a running one above all) loses its entry, and its pods' next exit is always reported; a fixed-size LRU
    forgot a job once more others than its size were reconciled in between, and took its next exit for one seen at
    start. Thread-safe: reconciles of different jobs call it at once (one job is never on two threads)."""

    def __init__(self, recorder: EventRecorder, container: str) -> None:
        self.recorder = recorder
        self.container = container
        # job key → (job UID, pod UID → its termination already reported)
        self._jobs: dict[str, tuple[str, dict[str, tuple[int, str]]]] = {}
        self._lock = threading.Lock()

    def report(self, key: str, job: ObjectReference, pods: Sequence[dict[str, Any]]) -> int:
        """Record an event for every termination among ``pods`` (the job's, from the cache) not reported yet; how
        many were recorded."""
        fresh: list[tuple[dict[str, Any], int]] = []
        with self._lock:
            seen = self._jobs.get(key)
            first_look = seen is None or seen[0] != job.uid   # a new job of the same name is a first look too
            reported = {} if first_look or seen is None else seen[1]
            now: dict[str, tuple[int, str]] = {}
            for pod in pods:
                exited = termination(pod, self.container)
                uid = (pod.get("metadata") or {}).get("uid") or ""
                if exited is None or not uid:
                    continue
                now[uid] = exited
                if not first_look and reported.get(uid) != exited:
                    fresh.append((pod, exited[0]))
            self._jobs[key] = (job.uid, now)   # only cached pods: a deleted pod's entry goes with it
        for pod, code in fresh:
            self.recorder.event(job, NORMAL, EXITED_WITH_CODE, exit_message(pod, code))
        return len(fresh)

    def forget(self, key: str) -> None:
        """The job ``key`` is gone: drop what was remembered of it."""
        with self._lock:
            self._jobs.pop(key, None)

    def __len__(self) -> int:
        return len(self._jobs)
