"""When a TFJob runs, succeeds or fails, table-tested (pure): training-operator 1.9's ``status_test.go`` cases, and
ours where we decided otherwise (success judged first; an evaluator never holds success back)."""

from __future__ import annotations

import pytest

from mxjob_controller.core.job_vocabulary import ReplicaCounts
from mxjob_controller.core.pods import PodFailure, ReplicaState
from mxjob_controller.tensorflow.status_rules import decide, deciding_types
from tests.tensorflow_support import tfjob, view


def st(active: int = 0, succeeded: int = 0, failed: int = 0, completed: tuple[int, ...] = ()) -> ReplicaState:
    """A type's state; each failed replica is a failure that counts against the job (restartPolicy Never)."""
    failures = tuple(PodFailure(f"j-x-{i}", "?", i, 1, "Error") for i in range(failed))
    return ReplicaState(ReplicaCounts(active, succeeded, failed), failures, frozenset(completed))


def failing(rtype: str, n: int = 1, active: int = 0) -> ReplicaState:
    failures = tuple(PodFailure(f"j-{rtype.lower()}-{i}", rtype, i, 1, "Error") for i in range(n))
    return ReplicaState(ReplicaCounts(active, 0, n), failures)


def restarting(rtype: str) -> ReplicaState:
    """A failed pod the core restarts (ExitCode with a retryable code): counted, but no failure of the job."""
    return ReplicaState(ReplicaCounts(0, 0, 1), ())


CHIEF_1_0 = tfjob(chief=1, worker=1)           # tftestutil.NewTFJobWithChief(1, 0)
CHIEF_4_2 = tfjob(chief=1, worker=4, ps=2)     # NewTFJobWithChief(4, 2)
WORKERS_1 = tfjob(worker=1)                    # NewTFJob(1, 0)
WORKERS_4_2 = tfjob(worker=4, ps=2)            # NewTFJob(4, 2)
ALL_WORKERS_4 = tfjob(worker=4, successPolicy="AllWorkers")


# (description, job, states, expected: Running / Succeeded / Failed / "" for none of them)
UPSTREAM = [
    ("Chief worker is succeeded", CHIEF_1_0, {"Chief": st(succeeded=1), "Worker": st(succeeded=1)}, "Succeeded"),
    ("Chief worker is running", CHIEF_1_0, {"Chief": st(active=1), "Worker": st()}, "Running"),
    ("Chief worker is failed", CHIEF_1_0, {"Chief": failing("Chief"), "Worker": st()}, "Failed"),
    ("(No chief worker) Worker is failed", WORKERS_1, {"Worker": failing("Worker")}, "Failed"),
    ("(No chief worker) Worker is succeeded", WORKERS_1, {"Worker": st(succeeded=1)}, "Succeeded"),
    ("(No chief worker) Worker is running", WORKERS_1, {"Worker": st(active=1)}, "Running"),
    ("(No chief worker) 2 workers are succeeded, 2 workers are active", WORKERS_4_2,
     {"PS": st(active=2), "Worker": st(active=2, succeeded=2, completed=(1, 2))}, "Running"),
    ("(No chief worker) 2 workers are running, 2 workers are failed", WORKERS_4_2,
     {"PS": st(active=2), "Worker": failing("Worker", 2, active=2)}, "Failed"),
    ("(No chief worker) 2 workers are succeeded, 2 workers are failed", WORKERS_4_2,
     {"PS": st(active=2), "Worker": ReplicaState(ReplicaCounts(0, 2, 2), failing("Worker", 2).failures,
                                                 frozenset({2, 3}))}, "Failed"),
    ("(No chief worker) worker-0 are succeeded, 3 workers are active", WORKERS_4_2,
     {"PS": st(active=2), "Worker": st(active=3, succeeded=1, completed=(0,))}, "Succeeded"),
    ("(No chief worker, successPolicy: AllWorkers) worker-0 are succeeded, 3 workers are active", ALL_WORKERS_4,
     {"Worker": st(active=3, succeeded=1, completed=(0,))}, "Running"),
    ("(No chief worker, successPolicy: AllWorkers) 4 workers are succeeded", ALL_WORKERS_4,
     {"Worker": st(succeeded=4, completed=(0, 1, 2, 3))}, "Succeeded"),
    ("(No chief worker, successPolicy: AllWorkers) worker-0 is succeeded, 2 workers are running, 1 worker is "
     "failed", ALL_WORKERS_4,
     {"Worker": ReplicaState(ReplicaCounts(2, 1, 1), failing("Worker").failures, frozenset({0}))}, "Failed"),
    # 1.9 leaves Running and Failed both True here (its test looks for Running only): a crash under Never fails it
    ("Chief is running, workers are failed", CHIEF_4_2,
     {"Chief": st(active=1), "PS": st(active=2), "Worker": failing("Worker", 4)}, "Failed"),
    ("Chief is running, workers are succeeded", CHIEF_4_2,
     {"Chief": st(active=1), "PS": st(active=2), "Worker": st(succeeded=4, completed=(0, 1, 2, 3))}, "Running"),
    ("Chief is running, a PS is failed", CHIEF_4_2,
     {"Chief": st(active=1), "PS": failing("PS", 1, active=1), "Worker": st(active=4)}, "Failed"),
    ("Chief is failed, workers are succeeded", CHIEF_4_2,
     {"Chief": failing("Chief"), "PS": st(active=2), "Worker": st(succeeded=4)}, "Failed"),
    # 1.9 sets Succeeded, then Failed too: the first terminal state wins here, and success is judged first
    ("Chief is succeeded, workers are failed", CHIEF_4_2,
     {"Chief": st(succeeded=1), "PS": st(active=2), "Worker": failing("Worker", 4)}, "Succeeded"),
    # ExitCode with a retryable code: the core restarts the chief, the rules see no failure
    ("Chief is failed and restarting", CHIEF_4_2,
     {"Chief": restarting("Chief"), "PS": st(active=2), "Worker": st(active=4)}, ""),
]


def outcome(verdict) -> str:
    return "Failed" if verdict.failed else "Succeeded" if verdict.succeeded else "Running" if verdict.running else ""


@pytest.mark.parametrize(("description", "body", "states", "expected"), UPSTREAM, ids=[c[0] for c in UPSTREAM])
def test_upstream_status_cases(description, body, states, expected) -> None:
    assert outcome(decide(view(body), states)) == expected, description


OURS = [
    ("nothing has started", CHIEF_4_2, {}, ""),
    ("a Master decides as a Chief does", tfjob(master=1, worker=2),
     {"Master": st(succeeded=1), "Worker": st(active=2)}, "Succeeded"),
    ("a Master running", tfjob(master=1, worker=2), {"Master": st(active=1), "Worker": st()}, "Running"),
    ("workers running do not make a chief job Running", CHIEF_4_2, {"Chief": st(), "Worker": st(active=4)}, ""),
    ("worker 0 done is no success when a chief decides", CHIEF_4_2,
     {"Chief": st(active=1), "Worker": st(active=3, succeeded=1, completed=(0,))}, "Running"),
    ("worker 1 done is not worker 0 done", WORKERS_4_2, {"Worker": st(active=3, succeeded=1, completed=(1,))},
     "Running"),
    ("a worker that succeeded with another container's code is not completed", WORKERS_4_2,
     {"Worker": st(active=3, succeeded=1)}, "Running"),
    ("an evaluator still running does not hold success back", tfjob(chief=1, worker=1, evaluator=1),
     {"Chief": st(succeeded=1), "Worker": st(active=1), "Evaluator": st(active=1)}, "Succeeded"),
    ("a failed evaluator fails the job", tfjob(chief=1, worker=1, evaluator=1),
     {"Chief": st(active=1), "Evaluator": failing("Evaluator")}, "Failed"),
    ("dynamic workers: a failed worker is no failure", tfjob(ps=1, worker=3, enableDynamicWorker=True),
     {"PS": st(active=1), "Worker": failing("Worker", 1, active=2)}, "Running"),
    ("dynamic workers: a failed PS still fails it", tfjob(ps=1, worker=3, enableDynamicWorker=True),
     {"PS": failing("PS"), "Worker": st(active=3)}, "Failed"),
]


@pytest.mark.parametrize(("description", "body", "states", "expected"), OURS, ids=[c[0] for c in OURS])
def test_our_cases(description, body, states, expected) -> None:
    assert outcome(decide(view(body), states)) == expected, description


def test_the_failure_names_every_failed_replica() -> None:
    verdict = decide(view(CHIEF_4_2), {"Chief": st(active=1), "PS": failing("PS", 1), "Worker": failing("Worker", 2)})
    assert [f.pod for f in verdict.failures] == ["j-ps-0", "j-worker-0", "j-worker-1"]


@pytest.mark.parametrize(("body", "expected"), [
    (CHIEF_4_2, ("Chief",)), (tfjob(master=1, worker=1), ("Master",)), (WORKERS_4_2, ("Worker",))])
def test_deciding_types(body, expected) -> None:
    assert deciding_types(view(body)) == expected
