"""A GenericJob's status (pure): :func:`next_status` pass after pass, as the reconciler calls it (judged unless
finished, paused or in debug mode). Phases Pending → Running → Succeeded/Failed and Paused → Resuming → Running;
the conditions with T9k's exact type/status/reason/message; ``tasks`` in spec order; ``aggregate`` adding up to the
replicas; a finished job's phase and conditions frozen while ``tasks``/``aggregate`` follow the pods; the status of
an invalid spec."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from mxjob_controller.generic.api import GenericJobView
from mxjob_controller.generic.status import (
    aggregate_of,
    first_error,
    invalid_message,
    invalid_status,
    is_invalid,
    is_terminal,
    next_status,
    replica_phase,
    restart_counts_of,
    restarting_of,
    set_condition,
    without_invalid,
)
from mxjob_controller.generic.status_rules import Judgement, judge
from mxjob_controller.kube import field_errors as fe
from tests.generic_support import genericjob, replica, view

R, S, F, P, U = "Running", "Succeeded", "Failed", "Pending", "Unknown"
C = "Creating"   # a Pending pod no kubelet has started (no startTime)
SUCCESS = "The job has finished successfully."
NORMAL = "All pods are running normally."
INITIALIZED = "The job has been initialized successfully."

Pods = dict[str, dict[int, dict[str, Any]]]


def pod(name: str, phase: str | None = R, uid: str | None = None, code: int | None = None) -> dict[str, Any]:
    """A replica pod. ``Creating``: Pending without startTime; ``None``: no status at all."""
    meta = {"name": name, "uid": uid or f"uid-{name}"}
    if phase is None:
        return {"metadata": meta}
    status: dict[str, Any] = {"phase": P if phase == C else phase}
    if phase != C:
        status["startTime"] = "2024-01-01T00:00:00Z"
    if phase in (S, F):
        exit_code = code if code is not None else (0 if phase == S else 1)
        status["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": exit_code}}}]
    elif phase == R:
        status["containerStatuses"] = [{"name": "main", "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}}]
    return {"metadata": meta, "status": status}


def pods(job: GenericJobView, **phases: list[str | None]) -> Pods:
    """type → rank → pod from each type's phases by rank ("-": no pod)."""
    return {rtype: {rank: pod(f"{job.name}-{rtype}-{rank}", p) for rank, p in enumerate(ps) if p != "-"}
            for rtype, ps in phases.items()}


def step(old: Mapping[str, Any] | None, job: GenericJobView, state: Pods, now: str, *,
         services_ready: bool = True) -> dict[str, Any]:
    """One pass, as the reconciler makes it."""
    old = dict(old or {})
    restarting = restarting_of(old)
    judgement = None
    if not (is_terminal(old) or job.paused or job.debug):
        judgement = judge(job, state, restart_counts_of(old), restarting)
        restarting |= {r.pod["metadata"]["uid"] for r in judgement.restarts}
    return next_status(old, job, state, judgement=judgement, restarting=restarting, services_ready=services_ready,
                       now=now)


def conds(status: Mapping[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in status.get("conditions") or ()}


def times(status: Mapping[str, Any]) -> dict[str, str]:
    return {c["type"]: c["lastTransitionTime"] for c in status.get("conditions") or ()}


def running(job: GenericJobView, now: str = "T1") -> dict[str, Any]:
    """The status of ``job`` with every pod running."""
    state = {t: {i: pod(f"{job.name}-{t}-{i}", R) for i in range(r.replicas)} for t, r in job.replicas.items()}
    status = step(None, job, state, now)
    assert status["phase"] == "Running"
    return status


PS_WORKERS = view(genericjob("g", "default", replica("ps"), replica("worker", 4)))


# --- Pending → Running ----------------------------------------------------------------------------------------

def test_pending_until_every_pod_exists_then_running() -> None:
    """Checklist 21."""
    job = PS_WORKERS
    first = step(None, job, pods(job, ps=[C], worker=[C, "-", "-", "-"]), "T1")
    assert first["phase"] == "Pending"
    assert conds(first) == {
        "Initialized": ("False", "Initializing", "Waiting for the replicas to be created: 2 of 5 pods exist.")}
    second = step(first, job, pods(job, ps=[C], worker=[C, C, P, "-"]), "T2")
    assert second["phase"] == "Pending"
    assert conds(second)["Initialized"] == (
        "False", "Initializing", "Waiting for the replicas to be created: 4 of 5 pods exist.")
    assert times(second) == {"Initialized": "T1"}, "the status did not change: neither does the time"
    third = step(second, job, pods(job, ps=[C], worker=[C, C, P, C]), "T3")
    assert third["phase"] == "Running"
    assert third["conditions"] == [
        {"type": "Initialized", "status": "True", "reason": "-", "message": INITIALIZED, "lastTransitionTime": "T3"},
        {"type": "ReplicaFailure", "status": "False", "reason": "-", "message": NORMAL, "lastTransitionTime": "T3"},
        {"type": "Running", "status": "True", "reason": "-", "message": NORMAL, "lastTransitionTime": "T3"},
    ]


def test_without_the_services_the_job_stays_pending() -> None:
    job = view(genericjob("g", "default", replica("worker", 2), service={"ports": [{"name": "http", "port": 2222}]}))
    state = pods(job, worker=[R, R])
    status = step(None, job, state, "T1", services_ready=False)
    assert status["phase"] == "Pending"
    assert conds(status) == {
        "Initialized": ("False", "Initializing", "Waiting for the replicas to be created: 2 of 2 pods exist.")}
    status = step(status, job, state, "T2", services_ready=True)
    assert status["phase"] == "Running"
    assert conds(status)["Initialized"] == ("True", "-", INITIALIZED)


def test_running_stays_running_when_a_pod_goes_missing() -> None:
    job = PS_WORKERS
    status = step(running(job), job, pods(job, ps=[R], worker=[R, "-", R, R]), "T2")
    assert status["phase"] == "Running"
    assert conds(status)["Initialized"] == ("True", "-", INITIALIZED)
    assert conds(status)["Running"] == ("True", "-", NORMAL)
    assert times(status) == {"Initialized": "T1", "ReplicaFailure": "T1", "Running": "T1"}
    assert status["tasks"][1]["replicas"][1] == {"name": "g-worker-1", "phase": "Creating"}, "it is recreated"
    assert (status["aggregate"]["creating"], status["aggregate"]["deleted"]) == (1, 0)


# --- Succeeded / Failed -------------------------------------------------------------------------------------

def test_success_conditions() -> None:
    """Checklist 11: successRules {worker:[0]}; worker-0 Succeeded while 3 others run."""
    job = view(genericjob("g", "default", replica("worker", 4), successRules=[{"worker": [0]}],
                          failureRules=[{"worker": [i]} for i in range(4)]))
    status = step(running(job), job, pods(job, worker=[S, R, R, R]), "T2")
    assert status["phase"] == "Succeeded"
    assert status["conditions"] == [
        {"type": "Initialized", "status": "True", "reason": "-", "message": INITIALIZED, "lastTransitionTime": "T1"},
        {"type": "ReplicaFailure", "status": "False", "reason": "-", "message": NORMAL, "lastTransitionTime": "T1"},
        {"type": "Running", "status": "False", "reason": "Succeeded", "message": SUCCESS, "lastTransitionTime": "T2"},
        {"type": "Completed", "status": "True", "reason": "Succeeded", "message": SUCCESS, "lastTransitionTime": "T2"},
        {"type": "Failed", "status": "False", "reason": "Succeeded", "message": SUCCESS, "lastTransitionTime": "T2"},
    ]
    assert status["aggregate"] == {"creating": 0, "pending": 0, "running": 3, "succeeded": 1, "failed": 0,
                                   "unknown": 0, "deleted": 0}


def test_failure_conditions() -> None:
    """Checklist 13: failureRules {worker:[1]} with Never; worker-1 exits 127."""
    job = view(genericjob("g", "default", replica("worker", 4, policy="Never"), successRules=[{"worker": [0]}],
                          failureRules=[{"worker": [1]}]))
    state = pods(job, worker=[R, R, R, R])
    state["worker"][1] = pod("g-worker-1", F, code=127)
    status = step(running(job), job, state, "T2")
    message = 'The job is failed with rule: {"worker":["1"]}'
    assert status["phase"] == "Failed"
    got = conds(status)
    assert got["Failed"] == ("True", "Failed", message)
    assert got["Completed"] == ("True", "Failed", message)
    assert got["Running"] == ("False", "Failed", message)
    assert got["Initialized"] == ("True", "-", INITIALIZED)
    assert times(status)["Failed"] == "T2" and times(status)["Initialized"] == "T1"


def test_a_job_finishing_in_its_first_pass() -> None:
    job = view(genericjob("g", "default", replica("worker", policy="Never")))
    status = step(None, job, pods(job, worker=[S]), "T1")
    assert status["phase"] == "Succeeded"
    assert conds(status) == {"Initialized": ("True", "-", INITIALIZED), "ReplicaFailure": ("False", "-", NORMAL),
                             "Running": ("False", "Succeeded", SUCCESS), "Completed": ("True", "Succeeded", SUCCESS),
                             "Failed": ("False", "Succeeded", SUCCESS)}


def test_no_success_possible_fails_the_job() -> None:
    job = view(genericjob("g", "default", replica("worker", 3, policy="OnFailure", limit=1),
                          successRules=[{"worker": [0]}], failureRules=[{"worker": [0, 1, 2]}]))
    old = running(job)
    old["tasks"][0]["restartCount"] = 1
    status = step(old, job, pods(job, worker=[F, R, R]), "T2")
    message = "The job is failed: no success rule can be fulfilled"
    assert status["phase"] == "Failed"
    assert conds(status)["Failed"] == ("True", "Failed", message)
    assert status["tasks"][0]["restartCount"] == 1


# --- ReplicaFailure -------------------------------------------------------------------------------------------

def test_replica_failure_while_a_restart_is_under_way() -> None:
    """Checklist 20: a worker exits 127 with restarts left; the job runs on and the restart is recorded."""
    job = view(genericjob("g", "default", replica("ps"), replica("worker", 2, policy="OnFailure", limit=3)))
    old = running(job)
    state = pods(job, ps=[R], worker=[R, R])
    state["worker"][1] = pod("g-worker-1", F, code=127)
    status = step(old, job, state, "T2")
    assert status["phase"] == "Running"
    assert conds(status)["ReplicaFailure"] == ("True", "ErrorInPod", "Pod[g-worker-1] exited with error code 127")
    assert times(status)["ReplicaFailure"] == "T2"
    worker = status["tasks"][1]
    assert (worker["restartCount"], worker["restarting"]) == (1, ["uid-g-worker-1"])
    # the pod is being replaced: no second restart is counted, the condition holds
    again = step(status, job, state, "T3")
    assert (again["tasks"][1]["restartCount"], again["tasks"][1]["restarting"]) == (1, ["uid-g-worker-1"])
    assert times(again)["ReplicaFailure"] == "T2"
    # the replacement runs: the condition clears, the UID leaves the status, the count stays
    state["worker"][1] = pod("g-worker-1", R, uid="uid-new")
    cleared = step(again, job, state, "T4")
    assert conds(cleared)["ReplicaFailure"] == ("False", "-", NORMAL)
    assert cleared["tasks"][1] == {"type": "worker", "restartCount": 1, "replicas": [
        {"name": "g-worker-0", "phase": "Running", "uid": "uid-g-worker-0",
         "containers": [{"name": "main", "state": "Running"}]},
        {"name": "g-worker-1", "phase": "Running", "uid": "uid-new",
         "containers": [{"name": "main", "state": "Running"}]}]}


def test_replica_failure_names_the_first_error_in_spec_order() -> None:
    tasks = [
        {"type": "ps", "replicas": [{"name": "g-ps-0", "containers": [{"name": "a", "exitCode": 0}]}]},
        {"type": "worker", "replicas": [
            {"name": "g-worker-0", "containers": [{"name": "a", "state": "Running"}]},
            {"name": "g-worker-1", "containers": [{"name": "a", "exitCode": 0}, {"name": "b", "exitCode": 137}]},
            {"name": "g-worker-2", "containers": [{"name": "a", "exitCode": 1}]}]},
    ]
    assert first_error(tasks) == ("g-worker-1", 137)
    assert first_error(tasks[:1]) is None
    assert first_error([]) is None


def test_replica_failure_is_recorded_when_the_failure_fails_the_job() -> None:
    """Checklist 13 + 20: worker-1 exits 127 under Never: the job fails, and its conditions say which pod did."""
    job = view(genericjob("g", "default", replica("worker", 4, policy="Never"), successRules=[{"worker": [0]}],
                          failureRules=[{"worker": [1]}]))
    state = pods(job, worker=[R, R, R, R])
    state["worker"][1] = pod("g-worker-1", F, code=127)
    status = step(running(job), job, state, "T2")
    assert status["phase"] == "Failed"
    assert conds(status)["ReplicaFailure"] == ("True", "ErrorInPod", "Pod[g-worker-1] exited with error code 127")


# --- tasks and aggregate ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(("phase", "expected"), [
    (C, "Creating"), (None, "Creating"), (P, "Pending"), (R, "Running"), (S, "Succeeded"), (F, "Failed"),
    (U, "Unknown"),
])
def test_replica_phase(phase: str | None, expected: str) -> None:
    assert replica_phase(pod("p", phase)) == expected


def test_replica_phase_of_no_pod() -> None:
    assert replica_phase(None) == "Creating"
    assert replica_phase(None, "Deleted") == "Deleted"


def test_aggregate_counts_every_replica_once() -> None:
    """Checklist 22: one replica in each phase; the counts add up to the job's replicas."""
    job = view(genericjob("g", "default", replica("ps", 2), replica("worker", 6)))
    state = pods(job, ps=[C, None], worker=[P, R, S, F, U, "-"])
    status = step(None, job, state, "T1")
    assert status["aggregate"] == {"creating": 3, "pending": 1, "running": 1, "succeeded": 1, "failed": 1,
                                   "unknown": 1, "deleted": 0}, "a missing pod is about to be created"
    assert sum(status["aggregate"].values()) == job.total_replicas == 8
    paused = step(status, dataclasses.replace(job, paused=True), state, "T2")
    assert paused["aggregate"] == {"creating": 2, "pending": 1, "running": 1, "succeeded": 1, "failed": 1,
                                   "unknown": 1, "deleted": 1}, "paused: a missing pod is not coming back"


@pytest.mark.parametrize(("paused", "phases", "expected"), [
    (False, {"ps": ["-"], "worker": ["-", "-", "-", "-"]}, {"creating": 5}),
    (True, {"ps": ["-"], "worker": ["-", "-", "-", "-"]}, {"deleted": 5}),
    (False, {"ps": [C], "worker": [C, C, C, C]}, {"creating": 5}),
    (False, {"ps": [R], "worker": [R, S, S, "-"]}, {"running": 2, "succeeded": 2, "creating": 1}),
    (True, {"ps": [R], "worker": [R, S, S, "-"]}, {"running": 2, "succeeded": 2, "deleted": 1}),
    (False, {"ps": [U], "worker": [F, F, P, P]}, {"unknown": 1, "failed": 2, "pending": 2}),
])
def test_aggregate_sums_to_total(paused: bool, phases: dict[str, list[str | None]], expected: dict[str, int]) -> None:
    job = view(genericjob("g", "default", replica("ps", policy="Never"), replica("worker", 4, policy="Never"),
                          successRules=[{"ps": [0]}], failureRules=[{"ps": [0]}]))
    status = step(None, dataclasses.replace(job, paused=paused), pods(job, **phases), "T1")
    zero = dict.fromkeys(("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted"), 0)
    assert status["aggregate"] == {**zero, **expected}
    assert sum(status["aggregate"].values()) == 5


def test_an_odd_pod_phase_counts_as_unknown() -> None:
    assert aggregate_of([{"replicas": [{"phase": "Weird"}, {"phase": "Running"}]}])["unknown"] == 1


def test_tasks_in_spec_order() -> None:
    """Checklist 23."""
    job = view(genericjob("g", "default", replica("worker", 2), replica("ps"), replica("chief", 0)))
    state = pods(job, worker=[R, "-"], ps=[C])
    state["worker"][0]["status"]["containerStatuses"] = [
        {"name": "main", "state": {"running": {"startedAt": "2024-01-01T00:00:00Z"}}},
        {"name": "sidecar", "state": {"waiting": {"reason": "ContainerCreating"}}},
        {"name": "init-done", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "blank", "state": {}},
    ]
    status = step(None, job, state, "T1")
    assert status["tasks"] == [
        {"type": "worker", "restartCount": 0, "replicas": [
            {"name": "g-worker-0", "phase": "Running", "uid": "uid-g-worker-0", "containers": [
                {"name": "main", "state": "Running"}, {"name": "sidecar", "state": "Waiting"},
                {"name": "init-done", "state": "Terminated", "exitCode": 0}, {"name": "blank"}]},
            {"name": "g-worker-1", "phase": "Creating"}]},
        {"type": "ps", "restartCount": 0, "replicas": [{"name": "g-ps-0", "phase": "Creating", "uid": "uid-g-ps-0"}]},
        {"type": "chief", "restartCount": 0, "replicas": []},
    ]


def test_a_failed_pod_reports_its_exit_code() -> None:
    job = view(genericjob("g", "default", replica("worker", 2, policy="Never"), successRules=[{"worker": [0]}],
                          failureRules=[{"worker": [0]}]))
    state = pods(job, worker=[R, R])
    state["worker"][1] = pod("g-worker-1", F, code=3)
    status = step(None, job, state, "T1")
    assert status["tasks"][0]["replicas"][1] == {"name": "g-worker-1", "phase": "Failed", "uid": "uid-g-worker-1",
                                                  "containers": [{"name": "main", "state": "Terminated",
                                                                  "exitCode": 3}]}


def test_restart_counts_come_from_the_judgement_or_the_old_status() -> None:
    job = view(genericjob("g", "default", replica("ps"), replica("worker", 2)))
    state = pods(job, ps=[R], worker=[R, R])
    judged = next_status(None, job, state, judgement=Judgement(restart_counts={"ps": 2, "worker": 5}), restarting=(),
                         services_ready=True, now="T1")
    assert [t["restartCount"] for t in judged["tasks"]] == [2, 5]
    kept = next_status(judged, job, state, judgement=None, restarting=(), services_ready=True, now="T2")
    assert [t["restartCount"] for t in kept["tasks"]] == [2, 5]
    assert restart_counts_of(kept) == {"ps": 2, "worker": 5}


def test_restarting_lists_only_pods_still_there() -> None:
    job = view(genericjob("g", "default", replica("worker", 3)))
    state = pods(job, worker=[R, F, F])
    status = next_status(None, job, state, judgement=None, services_ready=True, now="T1",
                         restarting={"uid-g-worker-2", "uid-g-worker-1", "uid-gone"})
    assert status["tasks"][0]["restarting"] == ["uid-g-worker-1", "uid-g-worker-2"]
    assert restarting_of(status) == {"uid-g-worker-1", "uid-g-worker-2"}
    assert "restarting" not in next_status(status, job, pods(job, worker=[R, R, R]), judgement=None, restarting=(),
                                           services_ready=True, now="T2")["tasks"][0]


# --- finished for good ----------------------------------------------------------------------------------------

def test_a_finished_job_keeps_its_phase_and_conditions_while_tasks_and_aggregate_follow_the_pods() -> None:
    """Checklist 19: after success the pods are cleaned up (or deleted by hand, or even fail)."""
    job = view(genericjob("g", "default", replica("worker", 3), successRules=[{"worker": [0]}]))
    done = step(running(job), job, pods(job, worker=[S, R, R]), "T2")
    assert done["phase"] == "Succeeded"
    for when, phases, aggregate in (
        ("T3", [S, F, R], {"succeeded": 1, "failed": 1, "running": 1}),
        ("T4", [S, "-", "-"], {"succeeded": 1, "deleted": 2}),
        ("T5", ["-", "-", "-"], {"deleted": 3}),
    ):
        later = step(done, job, pods(job, worker=phases), when)
        assert later["phase"] == "Succeeded"
        assert later["conditions"] == done["conditions"]
        zero = dict.fromkeys(("creating", "pending", "running", "succeeded", "failed", "unknown", "deleted"), 0)
        assert later["aggregate"] == {**zero, **aggregate}
        assert [r["phase"] for r in later["tasks"][0]["replicas"]] == [
            {"-": "Deleted"}.get(p, p) for p in phases]
        done = later


def test_a_failed_job_is_frozen_even_if_a_judgement_is_passed() -> None:
    job = view(genericjob("g", "default", replica("worker", 2, policy="Never")))
    failed = step(running(job), job, pods(job, worker=[F, R]), "T2")
    assert failed["phase"] == "Failed"
    for judgement in (Judgement(succeeded=True), Judgement(failure="other"), Judgement()):
        later = next_status(failed, job, pods(job, worker=[F, S]), judgement=judgement, restarting=(),
                            services_ready=True, now="T3")
        assert (later["phase"], later["conditions"]) == (failed["phase"], failed["conditions"])
    paused = dataclasses.replace(job, paused=True)
    later = next_status(failed, paused, {}, judgement=None, restarting=(), services_ready=True, now="T3")
    assert (later["phase"], later["conditions"]) == ("Failed", failed["conditions"])
    assert later["aggregate"]["deleted"] == 2


# --- debug -----------------------------------------------------------------------------------------------------

def test_debug_mode_runs_without_judging() -> None:
    """Checklist 26: the phase stays Running; no rule is evaluated (the reconciler passes no judgement)."""
    job = view(genericjob("g", "default", replica("worker", 2, policy="Never"),
                          runMode={"debug": {"enabled": True}}))
    status = step(None, job, pods(job, worker=[R, R]), "T1")
    assert status["phase"] == "Running"
    assert conds(status)["Running"] == (
        "True", "Debug", "The job runs in debug mode: its replicas' commands are replaced and no rule is evaluated.")
    for phases in ([S, S], [F, R], [F, F]):
        later = step(status, job, pods(job, worker=phases), "T2")
        assert later["phase"] == "Running"
        assert set(conds(later)) == {"Initialized", "ReplicaFailure", "Running"}


# --- pause and resume -----------------------------------------------------------------------------------------

def test_pause_deletes_then_reports_paused() -> None:
    """Checklist 28."""
    job = PS_WORKERS
    before = running(job)
    paused = dataclasses.replace(job, paused=True)
    deleting = step(before, paused, pods(job, ps=[R], worker=["-", R, "-", "-"]), "T2")
    assert deleting["phase"] == "Paused"
    assert conds(deleting) == {
        "Initialized": ("True", "-", INITIALIZED),
        "ReplicaFailure": ("False", "-", NORMAL),
        "Running": ("False", "Paused", "The job is paused."),
        "Paused": ("False", "Pausing", "Deleting the job's pods: 2 left."),
    }
    gone = step(deleting, paused, {}, "T3")
    assert gone["phase"] == "Paused"
    assert conds(gone)["Paused"] == ("True", "Paused", "The job is paused: all its pods are deleted.")
    assert times(gone) == {"Initialized": "T1", "ReplicaFailure": "T1", "Running": "T2", "Paused": "T3"}
    assert gone["aggregate"]["deleted"] == job.total_replicas == 5
    assert sum(gone["aggregate"].values()) == 5


def test_pausing_a_pending_job_adds_no_running_condition() -> None:
    job = dataclasses.replace(PS_WORKERS, paused=True)
    status = step(None, job, {}, "T1")
    assert status["phase"] == "Paused"
    assert conds(status) == {"Paused": ("True", "Paused", "The job is paused: all its pods are deleted.")}


def test_resume_goes_through_resuming_to_running() -> None:
    """Checklist 29."""
    job = view(genericjob("g", "default", replica("worker", 2, policy="OnFailure", limit=3)))
    old = running(job)
    old["tasks"][0]["restartCount"] = 2
    paused = step(step(old, dataclasses.replace(job, paused=True), {}, "T2"), dataclasses.replace(job, paused=True),
                  {}, "T3")
    assert paused["phase"] == "Paused" and paused["tasks"][0]["restartCount"] == 2
    resumed = dataclasses.replace(job, resumed=True)
    first = step(paused, resumed, {}, "T4")
    assert first["phase"] == "Resuming"
    assert conds(first)["Paused"] == ("False", "Resumed", "The job is resumed.")
    assert conds(first)["Running"] == ("False", "Paused", "The job is paused.")
    assert (first["aggregate"]["creating"], first["aggregate"]["deleted"]) == (2, 0)
    second = step(first, resumed, pods(job, worker=[C, "-"]), "T5")
    assert second["phase"] == "Resuming"
    third = step(second, resumed, pods(job, worker=[C, R]), "T6")
    assert third["phase"] == "Running"
    assert conds(third)["Running"] == ("True", "-", NORMAL)
    assert conds(third)["Paused"] == ("False", "Resumed", "The job is resumed.")
    assert times(third)["Paused"] == "T4" and times(third)["Running"] == "T6"
    assert third["tasks"][0]["restartCount"] == 2, "restart counters survive a pause"


def test_pods_still_terminating_after_the_pause_do_not_make_a_resumed_job_running() -> None:
    job = view(genericjob("g", "default", replica("worker", 2)))
    paused = step(running(job), dataclasses.replace(job, paused=True), {}, "T2")
    terminating = pods(job, worker=[R, R])
    for p in terminating["worker"].values():
        p["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:05Z"
    resumed = step(paused, dataclasses.replace(job, resumed=True), terminating, "T3")
    assert resumed["phase"] == "Resuming", "the old pods are on their way out: nothing runs yet"


def test_pause_while_resuming_pauses_again() -> None:
    job = PS_WORKERS
    status = {"phase": "Resuming", "conditions": [
        {"type": "Paused", "status": "False", "reason": "Resumed", "message": "The job is resumed.",
         "lastTransitionTime": "T1"}]}
    again = step(status, dataclasses.replace(job, paused=True), pods(job, ps=[C]), "T2")
    assert again["phase"] == "Paused"
    assert conds(again)["Paused"] == ("False", "Pausing", "Deleting the job's pods: 1 left.")
    assert times(again)["Paused"] == "T1", "still False: the time stays"


# --- conditions --------------------------------------------------------------------------------------------

def cond(ctype: str, status: str, reason: str = "-", message: str = "m", at: str = "T1") -> dict[str, str]:
    return {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": at}


@pytest.mark.parametrize(("before", "args", "expected"), [
    ([], ("Running", "True", "-", "m"), [cond("Running", "True", at="T2")]),
    ([cond("Running", "True")], ("Running", "True", "-", "m"), [cond("Running", "True", at="T1")]),
    ([cond("Running", "True")], ("Running", "True", "Debug", "other"),
     [cond("Running", "True", "Debug", "other", at="T1")]),
    ([cond("Running", "True")], ("Running", "False", "Succeeded", "done"),
     [cond("Running", "False", "Succeeded", "done", at="T2")]),
    ([cond("Initialized", "True"), cond("Running", "True")], ("Initialized", "True", "-", "m"),
     [cond("Initialized", "True"), cond("Running", "True")]),
    ([cond("Initialized", "True"), cond("Running", "True")], ("Completed", "True", "Succeeded", "x"),
     [cond("Initialized", "True"), cond("Running", "True"), cond("Completed", "True", "Succeeded", "x", at="T2")]),
    ([cond("Initialized", "False"), cond("Running", "True")], ("Initialized", "True", "-", "m"),
     [cond("Initialized", "True", at="T2"), cond("Running", "True")]),
    ([{"type": "Running", "status": "True", "reason": "-", "message": "m"}], ("Running", "True", "-", "m"),
     [cond("Running", "True", at="T2")]),
])
def test_set_condition_moves_the_time_only_when_the_status_changes(
        before: list[dict[str, str]], args: tuple[str, str, str, str], expected: list[dict[str, str]]) -> None:
    snapshot = [dict(c) for c in before]
    assert set_condition(before, *args, now="T2") == expected
    assert before == snapshot, "the input is not modified"


# --- an invalid spec -----------------------------------------------------------------------------------------

ERRORS = [fe.invalid("spec.successRules[0].worker[1]", 3, "out of range"),
          fe.not_supported("spec.cleanUpPolicy", "X", ["None", "Unfinished", "All"])]
INVALID = ('The job\'s spec is invalid: spec.successRules[0].worker[1]: Invalid value: 3: out of range; '
           'spec.cleanUpPolicy: Unsupported value: "X": supported values: "None", "Unfinished", "All"')


def test_invalid_status() -> None:
    assert invalid_message(ERRORS) == INVALID
    status = invalid_status(None, ERRORS, "T1")
    assert status == {"phase": "Failed", "conditions": [
        {"type": "Completed", "status": "True", "reason": "InvalidSpec", "message": INVALID,
         "lastTransitionTime": "T1"},
        {"type": "Failed", "status": "True", "reason": "InvalidSpec", "message": INVALID,
         "lastTransitionTime": "T1"}]}
    assert is_invalid(status) and is_terminal(status)
    assert without_invalid(status) == {}


def test_invalid_status_keeps_what_the_old_status_had() -> None:
    old = running(PS_WORKERS)
    status = invalid_status(old, ERRORS[:1], "T2")
    assert status["phase"] == "Failed"
    assert status["tasks"] == old["tasks"] and status["aggregate"] == old["aggregate"]
    got = conds(status)
    message = "The job's spec is invalid: spec.successRules[0].worker[1]: Invalid value: 3: out of range"
    assert got["Completed"] == ("True", "InvalidSpec", message)
    assert got["Failed"] == ("True", "InvalidSpec", message)
    assert got["Running"] == ("True", "-", NORMAL)
    again = invalid_status(status, ERRORS, "T3")
    assert conds(again)["Failed"] == ("True", "InvalidSpec", INVALID)
    assert times(again)["Failed"] == "T2"


def test_a_fixed_spec_is_reconciled_afresh() -> None:
    job = PS_WORKERS
    fresh = step(without_invalid(invalid_status(None, ERRORS, "T1")), job, pods(job, ps=[C], worker=["-"] * 4), "T2")
    assert fresh["phase"] == "Pending"
    assert set(conds(fresh)) == {"Initialized"}


@pytest.mark.parametrize("status", [
    None, {}, {"phase": "Running"},
    {"phase": "Failed", "conditions": [cond("Failed", "True", "Failed", "The job is failed with rule: {}")]},
    {"phase": "Succeeded", "conditions": [cond("Failed", "False", "Succeeded", SUCCESS)]},
])
def test_without_invalid_keeps_a_valid_status(status: dict[str, Any] | None) -> None:
    assert not is_invalid(status)
    assert without_invalid(status) == dict(status or {})


@pytest.mark.parametrize(("phase", "terminal"), [
    ("Succeeded", True), ("Failed", True), ("Running", False), ("Pending", False), ("Paused", False),
    ("Resuming", False), ("Unknown", False), (None, False),
])
def test_is_terminal(phase: str | None, terminal: bool) -> None:
    assert is_terminal({"phase": phase}) is terminal

