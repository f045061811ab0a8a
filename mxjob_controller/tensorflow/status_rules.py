"""When a TFJob runs, succeeds or fails, from its replicas' states: training-operator 1.9's rules. Pure.

- With a Chief or Master spec, it decides: the job runs while one runs and succeeds when every Chief/Master
  replica has succeeded; the workers' outcome does not matter for success.
- Without: the Workers decide. The job succeeds when worker 0 has completed (pod Succeeded, its ``tensorflow``
  container exited 0), or, with ``successPolicy: AllWorkers``, only when every worker has succeeded; it runs while
  a worker runs.
- Any failure the core counts against the job (a replica failed for good: ``Never``, or a permanent ``ExitCode``;
  restarting replicas are not failures) fails it, whatever its type, PS and Evaluator included; but with
  ``enableDynamicWorker`` a failed Worker does not (workers come and go).
- Success is judged first: when one pass sees the chief done and a worker failed, the job has succeeded (1.9 set
  both conditions; the first terminal state wins here, so a job never ends both Succeeded and Failed).
- An Evaluator never holds success back (the reference does not wait for it; ``cleanPodPolicy`` reaps it).
"""

from __future__ import annotations

from collections.abc import Mapping

from mxjob_controller.core.framework import Verdict
from mxjob_controller.core.pods import ReplicaState
from mxjob_controller.kubeflow_api.constants import SUCCESS_ALL_WORKERS
from mxjob_controller.tensorflow.api import CHIEF_TYPES, WORKER, TFJobView


def deciding_types(job: TFJobView) -> tuple[str, ...]:
    """The types whose replicas decide: the Chief/Master when the job has one, else the Workers."""
    chiefs = tuple(t for t in job.replicas if t in CHIEF_TYPES)
    return chiefs or ((WORKER,) if WORKER in job.replicas else ())


def _all_succeeded(job: TFJobView, states: Mapping[str, ReplicaState], rtype: str) -> bool:
    state = states.get(rtype)
    wanted = job.replicas[rtype].replicas
    return wanted > 0 and state is not None and state.counts.succeeded >= wanted


def succeeded(job: TFJobView, states: Mapping[str, ReplicaState]) -> bool:
    types = deciding_types(job)
    if not types:
        return False
    if all(_all_succeeded(job, states, t) for t in types):
        return True
    worker = states.get(WORKER)
    return types == (WORKER,) and job.success_policy != SUCCESS_ALL_WORKERS and worker is not None \
        and 0 in worker.completed


def decide(job: TFJobView, states: Mapping[str, ReplicaState]) -> Verdict:
    if succeeded(job, states):
        return Verdict(succeeded=True)
    failures = tuple(f for rtype, state in states.items()
                     if not (job.enable_dynamic_worker and rtype == WORKER) for f in state.failures)
    if failures:
        return Verdict(failures=failures)
    running = any((state := states.get(t)) is not None and state.counts.active > 0 for t in deciding_types(job))
    return Verdict(running=running)
