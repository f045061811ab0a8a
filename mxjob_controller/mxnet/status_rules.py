"""When an MXJob runs, succeeds or fails, from its replicas' states. Pure.

- The *deciding* type: the Tuner for an ``MXTune`` job; else the Scheduler when the job has one; else the Workers
  (a worker-only job, e.g. BytePS or single-process training); else the Tuner.
- Running: some replica of the deciding type is running.
- Succeeded: every replica of the deciding type succeeded (never with zero replicas: a worker-only job with no pods
  yet is not a finished one, mxnet-operator #32).
- A job with a Scheduler follows mxnet-operator v1beta1's ``updateStatusSingle`` over every replica type: a running
  Scheduler makes the job Running; a Scheduler that succeeded makes it Succeeded, unless ``successPolicy:
  AllWorkers``, where it makes it Running (whether or not a Scheduler pod was ever seen running: a fast Scheduler,
  or a controller restarted mid-job, must not leave the job at Created while its Workers run) and the Workers
  decide success: every Worker succeeded.
- Failed: any replica failure the core counts against the job (it comes first: a job with a failed replica has
  failed, whatever else finished).
"""

from __future__ import annotations

from collections.abc import Mapping

from mxjob_controller.core.framework import Verdict
from mxjob_controller.core.pods import ReplicaState
from mxjob_controller.kubeflow_api.constants import SUCCESS_ALL_WORKERS
from mxjob_controller.mxnet.api import MODE_TUNE, SCHEDULER, TUNER, WORKER, JobView


def deciding_type(job: JobView) -> str:
    if job.job_mode == MODE_TUNE:
        return TUNER
    for rtype in (SCHEDULER, WORKER):
        if rtype in job.replicas:
            return rtype
    return TUNER


def _all_succeeded(job: JobView, states: Mapping[str, ReplicaState], rtype: str) -> bool:
    wanted = job.replicas[rtype].replicas if rtype in job.replicas else 0
    state = states.get(rtype)
    return wanted > 0 and state is not None and state.counts.succeeded >= wanted


def _active(states: Mapping[str, ReplicaState], rtype: str) -> bool:
    state = states.get(rtype)
    return state is not None and state.counts.active > 0


def decide(job: JobView, states: Mapping[str, ReplicaState]) -> Verdict:
    failures = tuple(f for state in states.values() for f in state.failures)
    if failures:
        return Verdict(failures=failures)
    rtype = deciding_type(job)
    if rtype == SCHEDULER and job.success_policy == SUCCESS_ALL_WORKERS and WORKER in job.replicas:
        succeeded = _all_succeeded(job, states, WORKER)
        running = _active(states, SCHEDULER) or _all_succeeded(job, states, SCHEDULER)
        return Verdict(running=running and not succeeded, succeeded=succeeded)
    return Verdict(running=_active(states, rtype), succeeded=_all_succeeded(job, states, rtype))
