"""Computing the job status to write (core/job_status.py), table-tested: conditions, counts and times from the
framework's verdict, the failure policy's fields and messages, and the status of an invalid job."""

from __future__ import annotations

import copy
from typing import Any

from mxjob_controller.core.framework import Verdict
from mxjob_controller.core.job_status import (
    aggregate,
    failed_validation,
    failure_message,
    invalid_status,
    next_status,
    without_validation_failure,
)
from mxjob_controller.core.pods import PodFailure
from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.timefmt import parse_time, rfc3339
from mxjob_controller.kubeflow_api.status import ReplicaCounts
from mxjob_controller.mxnet.api import with_mxjob_replica_counts

NOW, LATER = "2024-01-01T00:00:00Z", "2024-01-01T01:00:00Z"
T0 = 1_704_067_200.0   # NOW as Unix time


# --- the status ------------------------------------------------------------------------------------------

COUNTS = {"Scheduler": ReplicaCounts(active=1), "Worker": ReplicaCounts(active=2, failed=0)}


IDLE = Verdict()


def status(old: dict | None, verdict: Verdict = IDLE, counts: dict | None = None, now: str = NOW,
           blocked: tuple[str, ...] = ()) -> dict[str, Any]:
    return next_status(old, kind="MXJob", name="j", counts=COUNTS if counts is None else counts, verdict=verdict,
                       now=now, render_counts=with_mxjob_replica_counts, blocked=blocked)


def test_the_first_status_is_created_with_start_time_and_counts() -> None:
    first = status(None)
    assert first["conditions"] == [{"type": "Created", "status": "True", "reason": "MXJobCreated",
                                    "message": "MXJob j is created.", "lastUpdateTime": NOW,
                                    "lastTransitionTime": NOW}]
    assert first["startTime"] == NOW and first["lastReconcileTime"] == NOW and "completionTime" not in first
    assert first["replicaStatuses"] == first["mxReplicaStatuses"] == {"Scheduler": {"active": 1},
                                                                      "Worker": {"active": 2}}


def test_an_idle_recompute_changes_nothing_not_even_the_reconcile_time() -> None:
    first = status(None, Verdict(running=True))
    assert status(first, Verdict(running=True), now=LATER) == first


def test_a_count_change_is_written_with_the_reconcile_time() -> None:
    first = status(None)
    second = status(first, counts={"Scheduler": ReplicaCounts(active=1), "Worker": ReplicaCounts(active=1)},
                    now=LATER)
    assert second["replicaStatuses"]["Worker"] == {"active": 1} and second["lastReconcileTime"] == LATER
    assert second["startTime"] == NOW


def test_success_moves_active_counts_and_sets_completion_time_in_the_same_write() -> None:
    running = status(None, Verdict(running=True))
    done = status(running, Verdict(running=True, succeeded=True), now=LATER,
                  counts={"Scheduler": ReplicaCounts(succeeded=1), "Worker": ReplicaCounts(active=2)})
    assert [(c["type"], c["status"]) for c in done["conditions"]] == [
        ("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    assert done["replicaStatuses"] == {"Scheduler": {"succeeded": 1}, "Worker": {"succeeded": 2}}
    assert done["completionTime"] == LATER and done["startTime"] == NOW


def test_failure_names_pods_codes_and_reasons() -> None:
    failures = (PodFailure("j-worker-0", "Worker", 0, 137, "OOMKilled"),
                PodFailure("j-worker-1", "Worker", 1, None, "Evicted", "low memory"),
                PodFailure("j-server-0", "Server", 0, 2, "Error"))
    failed = status(status(None), Verdict(failures=failures), now=LATER)
    cond = failed["conditions"][-1]
    assert (cond["type"], cond["reason"]) == ("Failed", "MXJobFailed")
    assert cond["message"] == failure_message("MXJob", "j", failures) == (
        "MXJob j has failed because 2 Worker, 1 Server replica(s) failed: j-worker-0 exited with code 137 "
        "(OOMKilled); j-worker-1 failed (Evicted: low memory); j-server-0 exited with code 2 (Error).")
    assert failed["completionTime"] == LATER


def test_a_finished_status_is_returned_unchanged() -> None:
    done = status(status(None), Verdict(succeeded=True))
    snapshot = copy.deepcopy(done)
    assert status(done, Verdict(running=True), counts={"Worker": ReplicaCounts(active=5)}, now=LATER) == snapshot
    assert done == snapshot


def test_blocked_names_are_told_in_the_created_message_and_cleared_after() -> None:
    blocked = status(None, blocked=('pod "j-worker-0"',))
    message = blocked["conditions"][0]["message"]
    assert message.startswith("MXJob j is created. Cannot create pod \"j-worker-0\": the name is held by an object")
    cleared = status(blocked, now=LATER)
    assert cleared["conditions"][0]["message"] == "MXJob j is created."
    assert cleared["conditions"][0]["lastTransitionTime"] == NOW


def test_the_old_status_is_not_modified() -> None:
    old = status(None)
    snapshot = copy.deepcopy(old)
    status(old, Verdict(succeeded=True), now=LATER)
    assert old == snapshot


# --- invalid jobs ----------------------------------------------------------------------------------------

ERRORS = [fe.required("spec.mxReplicaSpecs.Worker.template.spec.containers[0].image"),
          fe.invalid("spec.mxReplicaSpecs.Scheduler.replicas", 2, "must be 1")]


def test_errors_are_aggregated_as_kubernetes_prints_them() -> None:
    assert aggregate(ERRORS[:1]) == "spec.mxReplicaSpecs.Worker.template.spec.containers[0].image: Required value"
    assert aggregate(ERRORS) == ("[spec.mxReplicaSpecs.Worker.template.spec.containers[0].image: Required value, "
                                 "spec.mxReplicaSpecs.Scheduler.replicas: Invalid value: 2: must be 1]")


def test_an_invalid_job_fails_once_its_message_follows_the_errors_and_a_fix_undoes_it() -> None:
    first = invalid_status(None, kind="MXJob", name="j", errors=ERRORS, now=NOW)
    assert first is not None and failed_validation(first, "MXJob")
    [failed] = first["conditions"]
    assert (failed["type"], failed["reason"]) == ("Failed", "MXJobFailedValidation")
    assert failed["message"] == f"MXJob j failed validation because {aggregate(ERRORS)}"
    assert first["completionTime"] == NOW
    later = rfc3339(T0 + 60)
    assert invalid_status(first, kind="MXJob", name="j", errors=ERRORS, now=later) == first   # no rewrite
    other = invalid_status(first, kind="MXJob", name="j", errors=ERRORS[:1], now=later)
    assert other is not None and other["conditions"][0]["lastUpdateTime"] == later
    assert other["conditions"][0]["lastTransitionTime"] == NOW and other["completionTime"] == NOW
    assert without_validation_failure(other, "MXJob") == {"conditions": [], "lastReconcileTime": later}
    succeeded = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "MXJobSucceeded"}]}
    assert invalid_status(succeeded, kind="MXJob", name="j", errors=ERRORS, now=NOW) is None
    assert without_validation_failure(succeeded, "MXJob") == succeeded
    assert parse_time(first["completionTime"]) == T0


# --- the status the policy writes ------------------------------------------------------------------------

def test_restarting_holds_running_off_and_a_job_failure_finishes_the_job() -> None:
    def status(old: dict, **policy: Any) -> dict[str, Any]:
        running = policy.pop("running", True)
        return next_status(old, kind="MXJob", name="j", counts={"Worker": ReplicaCounts(active=1)},
                           verdict=Verdict(running=running), now=NOW, render_counts=with_mxjob_replica_counts, **policy)

    running = status({})
    assert [c["type"] for c in running["conditions"]] == ["Created", "Running"]
    restarting = status(running, restarting="MXJob j is restarting.", fields={"restartCount": 1})
    assert [(c["type"], c["reason"]) for c in restarting["conditions"]] == [("Created", "MXJobCreated"),
                                                                             ("Restarting", "MXJobRestarting")]
    assert restarting["restartCount"] == 1
    back = status(restarting, fields={"restartCount": 1, "replicaHistory": None})
    assert [c["type"] for c in back["conditions"]] == ["Created", "Running"] and "replicaHistory" not in back
    failed = status(back, job_failure="Job j has failed because it has reached the specified backoff limit")
    assert [(c["type"], c["status"]) for c in failed["conditions"]] == [
        ("Created", "True"), ("Running", "False"), ("Failed", "True")]
    assert failed["completionTime"] == NOW
    assert status(failed, restarting="again") == failed   # finished: frozen
