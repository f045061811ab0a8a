"""When a GenericJob has succeeded or failed, and which replicas restart: T9k's finish rules and restart policy as
one pure function, :func:`judge`, of the job, its pods and the restarts already counted.

Each replica (type, rank) is, in this pass, one of:

- ``succeeded``: its pod is Succeeded (and is not being replaced by a restart);
- ``restarting``: its pod is being replaced by a restart already counted (``tasks[].restarting``), or the restart
  decided now;
- ``failed``: its pod is Failed and no restart remains for it: policy ``Never``, or its type's restarts
  (``tasks[].restartCount``, summed over the type's replicas) have reached ``restartPolicy.limit``;
- ``active``: anything else (pending, running, unknown; no pod, or one being deleted by someone else: it is about
  to be created again, and that is not counted as a restart).

Then, in this order:

1. a success rule all of whose replicas have succeeded: the job has **succeeded** (before any restart: a replica
   that completes a rule is never restarted, even under ``Always``);
2. restarts, in spec order, then rank order, while the type's budget lasts: a Failed pod under ``OnFailure`` or
   ``Always``, a Succeeded pod under ``Always``; each restart counts 1 against its type;
3. a failure rule all of whose replicas have failed: the job has **failed**, "The job is failed with rule:
   {"worker":["1"]}" (the rule as T9k prints it; ranks as strings);
4. every success rule holding a failed replica: the job has **failed**, "The job is failed: no success rule can be
   fulfilled" (restarts are exhausted, nothing can succeed any more).

No ``successRules``: one rule of every replica of every type. No ``failureRules``: one rule per replica, so any
replica that has failed for good fails the job. Once the job has finished nothing restarts (the caller stops
judging). In debug mode nothing is judged and nothing restarts (``generic/status.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.core.pods import FAILED, SUCCEEDED, is_deleting, phase
from mxjob_controller.generic.api import ALWAYS, NEVER, ON_FAILURE, GenericJobView, Rule, rule_json

SUCCEEDED_OUTCOME, FAILED_OUTCOME, RESTARTING, ACTIVE = "succeeded", "failed", "restarting", "active"
NO_SUCCESS_POSSIBLE = "The job is failed: no success rule can be fulfilled"
SUCCESS_MESSAGE = "The job has finished successfully."


def failure_message(rule: Rule) -> str:
    return f"The job is failed with rule: {rule_json(rule)}"


@dataclass(frozen=True, slots=True)
class Restart:
    """A restart decided in this pass: the pod to replace."""

    replica_type: str
    rank: int
    pod: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Judgement:
    succeeded: bool = False
    failure: str = ""                                   # the failure message; "" while not failed
    restarts: tuple[Restart, ...] = ()                  # decided now (counted in restart_counts)
    # type → restarts, those decided now included; a finished job's restarts decided now are not carried out, so
    # they are not counted either
    restart_counts: Mapping[str, int] = field(default_factory=dict)
    outcomes: Mapping[tuple[str, int], str] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.succeeded or bool(self.failure)


def _uid(pod: Mapping[str, Any]) -> str:
    return (pod.get("metadata") or {}).get("uid") or ""


def _restarts_on(policy: str, pod_phase: str) -> bool:
    return (pod_phase == FAILED and policy in (ON_FAILURE, ALWAYS)) or (pod_phase == SUCCEEDED and policy == ALWAYS)


def implicit_success_rules(job: GenericJobView) -> tuple[Rule, ...]:
    return job.success_rules or (tuple((t, tuple(range(r.replicas))) for t, r in job.replicas.items()),)


def implicit_failure_rules(job: GenericJobView) -> tuple[Rule, ...]:
    return job.failure_rules or tuple(((t, (rank,)),) for t, r in job.replicas.items() for rank in range(r.replicas))


def _holds(rule: Rule, outcomes: Mapping[tuple[str, int], str], outcome: str) -> bool:
    return all(outcomes.get((t, rank)) == outcome for t, ranks in rule for rank in ranks)


def _any_member(rule: Rule, outcomes: Mapping[tuple[str, int], str], outcome: str) -> bool:
    return any(outcomes.get((t, rank)) == outcome for t, ranks in rule for rank in ranks)


def judge(job: GenericJobView, pods: Mapping[str, Mapping[int, dict[str, Any]]], restart_counts: Mapping[str, int],
          restarting: Iterable[str] = ()) -> Judgement:
    """The job's state from its pods (type → rank → the pod standing for that replica), the restarts counted so
    far (type → count) and the UIDs of pods whose counted restart is under way."""
    replacing = set(restarting)
    outcomes: dict[tuple[str, int], str] = {}
    for rtype, replica in job.replicas.items():
        for rank in range(replica.replicas):
            pod = pods.get(rtype, {}).get(rank)
            if pod is None:
                outcomes[(rtype, rank)] = ACTIVE
            elif _uid(pod) in replacing:
                outcomes[(rtype, rank)] = RESTARTING
            elif is_deleting(pod):
                outcomes[(rtype, rank)] = ACTIVE   # deleted by someone else: it will be created again
            elif phase(pod) == SUCCEEDED:
                outcomes[(rtype, rank)] = SUCCEEDED_OUTCOME
            elif phase(pod) == FAILED:
                outcomes[(rtype, rank)] = FAILED_OUTCOME   # unless a restart is decided below
            else:
                outcomes[(rtype, rank)] = ACTIVE
    counted = {rtype: restart_counts.get(rtype, 0) for rtype in job.replicas}
    counts = dict(counted)
    if any(_holds(rule, outcomes, SUCCEEDED_OUTCOME) for rule in implicit_success_rules(job)):
        return Judgement(succeeded=True, restart_counts=counted, outcomes=outcomes)
    restarts: list[Restart] = []
    for rtype, replica in job.replicas.items():
        if replica.policy == NEVER:
            continue
        for rank in range(replica.replicas):
            pod = pods.get(rtype, {}).get(rank)
            if pod is None or outcomes[(rtype, rank)] == RESTARTING or is_deleting(pod) \
                    or not _restarts_on(replica.policy, phase(pod)):
                continue
            if counts[rtype] >= replica.limit:
                continue   # out of budget: a Failed pod stays failed, a Succeeded one succeeded
            counts[rtype] += 1
            outcomes[(rtype, rank)] = RESTARTING
            restarts.append(Restart(rtype, rank, pod))
    for rule in implicit_failure_rules(job):
        if _holds(rule, outcomes, FAILED_OUTCOME):
            return Judgement(failure=failure_message(rule), restart_counts=counted, outcomes=outcomes)
    if all(_any_member(rule, outcomes, FAILED_OUTCOME) for rule in implicit_success_rules(job)):
        return Judgement(failure=NO_SUCCESS_POSSIBLE, restart_counts=counted, outcomes=outcomes)
    return Judgement(restarts=tuple(restarts), restart_counts=counts, outcomes=outcomes)
