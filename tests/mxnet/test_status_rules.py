"""When an MXJob runs, succeeds or fails, table-tested (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.core.pods import PodFailure, ReplicaState
from mxjob_controller.kubeflow_api.status import ReplicaCounts
from mxjob_controller.mxnet.api import JobView, parse_job
from mxjob_controller.mxnet.status_rules import decide, deciding_type


def job(counts: dict[str, int], **spec: Any) -> JobView:
    specs = {t: {"replicas": n, "template": {"spec": {"containers": [{"name": "mxnet", "image": "i"}]}}}
             for t, n in counts.items()}
    view, errors = parse_job({"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "j"},
                              "spec": {"mxReplicaSpecs": specs, **spec}})
    assert view is not None, errors
    return view


def st(active: int = 0, succeeded: int = 0, failed: int = 0, failures: tuple = ()) -> ReplicaState:
    return ReplicaState(ReplicaCounts(active, succeeded, failed), failures)


TRAIN = {"Scheduler": 1, "Server": 1, "Worker": 2}
TUNE = {"TunerTracker": 1, "TunerServer": 1, "Tuner": 1}


@pytest.mark.parametrize(("counts", "spec", "expected"), [
    (TRAIN, {}, "Scheduler"), (TRAIN, {"jobMode": "MXTrain"}, "Scheduler"), ({"Worker": 3}, {}, "Worker"),
    ({"Server": 1, "Worker": 1}, {}, "Worker"), (TUNE, {"jobMode": "MXTune"}, "Tuner"), (TUNE, {}, "Tuner"),
])
def test_deciding_type(counts: dict, spec: dict, expected: str) -> None:
    assert deciding_type(job(counts, **spec)) == expected


@pytest.mark.parametrize(("counts", "spec", "states", "running", "succeeded"), [
    # everything pending: nothing yet
    (TRAIN, {}, {}, False, False),
    (TRAIN, {}, {"Scheduler": st(), "Server": st(), "Worker": st()}, False, False),
    # the deciding type decides
    (TRAIN, {}, {"Scheduler": st(active=1), "Worker": st()}, True, False),
    (TRAIN, {}, {"Scheduler": st(), "Worker": st(active=2)}, False, False),
    (TRAIN, {}, {"Scheduler": st(succeeded=1), "Worker": st(active=2)}, False, True),
    # AllWorkers (mxnet-operator v1beta1's updateStatusSingle): a succeeded Scheduler leaves the job Running, even one
    # first seen Succeeded (issue 47: it was left at Created while its Workers ran); the Workers decide success
    (TRAIN, {"successPolicy": "AllWorkers"}, {"Scheduler": st(succeeded=1), "Worker": st(active=1, succeeded=1)},
     True, False),
    (TRAIN, {"successPolicy": "AllWorkers"}, {"Scheduler": st(succeeded=1), "Worker": st(active=2)}, True, False),
    (TRAIN, {"successPolicy": "AllWorkers"}, {"Scheduler": st(succeeded=1), "Worker": st()}, True, False),
    (TRAIN, {"successPolicy": "AllWorkers"}, {"Scheduler": st(active=1), "Worker": st(active=2)}, True, False),
    (TRAIN, {"successPolicy": "AllWorkers"}, {"Scheduler": st(), "Worker": st(active=2)}, False, False),
    (TRAIN, {"successPolicy": "AllWorkers"}, {"Scheduler": st(succeeded=1), "Worker": st(succeeded=2)}, False, True),
    (TRAIN, {"successPolicy": "AllWorkers"}, {"Scheduler": st(active=1), "Worker": st(succeeded=2)}, False, True),
    # otherwise a Scheduler first seen Succeeded ends the job at once (v1beta1: Succeeded, never left at Created)
    (TRAIN, {"jobMode": "MXTrain"}, {"Scheduler": st(succeeded=1), "Worker": st(active=2)}, False, True),
    # AllWorkers without Workers: the Scheduler decides, as without the policy
    ({"Scheduler": 1, "Tuner": 1}, {"successPolicy": "AllWorkers"}, {"Scheduler": st(succeeded=1)}, False, True),
    # worker-only: all workers (#32: never with zero pods)
    ({"Worker": 1}, {}, {"Worker": st()}, False, False),
    ({"Worker": 1}, {}, {}, False, False),
    ({"Worker": 2}, {}, {"Worker": st(active=1, succeeded=1)}, True, False),
    ({"Worker": 2}, {}, {"Worker": st(succeeded=2)}, False, True),
    # MXTune: the Tuner
    (TUNE, {"jobMode": "MXTune"}, {"TunerTracker": st(active=1), "Tuner": st(active=1)}, True, False),
    (TUNE, {"jobMode": "MXTune"}, {"TunerTracker": st(succeeded=1), "Tuner": st()}, False, False),
    (TUNE, {"jobMode": "MXTune"}, {"TunerTracker": st(active=1), "Tuner": st(succeeded=1)}, False, True),
])
def test_running_and_succeeded(counts: dict, spec: dict, states: dict, running: bool, succeeded: bool) -> None:
    verdict = decide(job(counts, **spec), states)
    assert (verdict.running, verdict.succeeded, verdict.failed) == (running, succeeded, False)


def test_any_failure_fails_the_job_even_when_the_scheduler_succeeded() -> None:
    failure = PodFailure("j-worker-1", "Worker", 1, 137, "OOMKilled")
    verdict = decide(job(TRAIN), {"Scheduler": st(succeeded=1), "Worker": st(active=1, failed=1,
                                                                              failures=(failure,))})
    assert verdict.failed and verdict.failures == (failure,) and not verdict.succeeded


def test_failed_counts_without_failures_do_not_fail_the_job() -> None:
    # e.g. a Failed pod of an OnFailure replica: whether it is restarted is the core's call, not a failure here
    assert not decide(job(TRAIN), {"Scheduler": st(active=1), "Worker": st(failed=1)}).failed
