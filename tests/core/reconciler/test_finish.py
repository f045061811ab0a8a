"""How jobs end, end to end: ``activeDeadlineSeconds`` fires on time through a delayed requeue with no other event
(#3358), after a controller restart too; ``cleanPodPolicy`` after success (upstream's 7/7/0/0 table) and no API
write or event on a resync of a finished job (#997); ``ttlSecondsAfterFinished`` unset / 0 / 2 s, a removed
``completionTime`` (kubeflow/common #170) and one in the future (clock skew); an invalid job fails once with every
field error, creates nothing, is not retried, and is validated afresh when its spec changes."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from mxjob_controller.kube.timefmt import parse_time, rfc3339
from mxjob_controller.mxnet.controller import MXJobController
from mxjob_controller.runtime.reconcile_trace import read_trace
from tests.reconciler_support import (
    CONTROLLER_AGENT,
    DEADLINE,
    Harness,
    jobs_path,
    metric,
    mxjob,
    wait_metric,
    wait_settled,
)
from tests.reconciler_time import FakeTime
from tests.support import wait_for

NS = "default"
DEADLINE_FAILURE = "Job {} has failed because it was active longer than specified deadline"



def api_writes(h: Harness, since: float) -> list[Any]:
    return [r for r in h.apiserver.audit.records(user_agent=CONTROLLER_AGENT, since=since)
            if r.verb not in ("get", "list", "watch")]


def wait_requeued(controller: MXJobController, key: str, since: float) -> None:
    """Wait until a reconcile of ``key`` that started after ``since`` ended asking for a delayed requeue."""
    def done() -> bool:
        return any(r["key"] == key and r["start"] > since and r["result"] == "requeue_after"
                   for r in read_trace(controller.options.trace_path))
    wait_for(done, timeout=DEADLINE, what=f"a delayed requeue of {key}")


# --- activeDeadlineSeconds -------------------------------------------------------------------------------

def test_active_deadline_fires_on_time_with_no_other_event(h: Harness) -> None:
    """training-operator #3358: the delayed requeue went to a queue nobody read. Real time, no fake clock."""
    controller = h.start()
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1, activeDeadlineSeconds=2))
    h.wait_children(NS, "j", 1)
    start = parse_time(h.wait_condition(NS, "j", "Created") and h.job(NS, "j")["status"]["startTime"])
    assert start is not None
    failed = h.wait_condition(NS, "j", "Failed", timeout=10)
    seen = time.time()
    assert failed["message"] == DEADLINE_FAILURE.format("j")
    assert (failed["reason"], h.job(NS, "j")["status"]["completionTime"]) == ("MXJobFailed",
                                                                              failed["lastTransitionTime"])
    assert 2 <= parse_time(failed["lastTransitionTime"]) - start <= 3    # whole seconds: 2 s + ε
    assert seen - start < 2 + 1 + 1.5                                     # … and seen within ε of it
    wait_for(lambda: not h.pods(NS, "j"), timeout=DEADLINE, what="the cleanup after the deadline")
    assert controller.recorder.flush(DEADLINE)
    events = h.events(NS, h.job(NS, "j")["metadata"]["uid"], "MXJobFailed")
    assert [(e["type"], e["message"]) for e in events] == [("Warning", DEADLINE_FAILURE.format("j"))]
    print(f"deadline 2 s: Failed {parse_time(failed['lastTransitionTime']) - start:.0f} s after startTime, "
          f"seen by the test {seen - start:.2f} s after it")


def test_active_deadline_survives_a_controller_restart(h: Harness) -> None:
    ft = FakeTime()
    first = h.start(**ft.options())
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1, activeDeadlineSeconds=2))
    h.wait_children(NS, "j", 1)
    h.wait_condition(NS, "j", "Created")
    ft.step(1)
    h.stop(first)
    since = time.monotonic()
    second = h.start(**ft.options())
    wait_requeued(second, f"{NS}/j", since)        # the new controller computed the remaining second
    assert "Failed" not in h.conditions(NS, "j")
    ft.step(1)
    failed = h.wait_condition(NS, "j", "Failed")
    assert failed["message"] == DEADLINE_FAILURE.format("j")
    assert failed["lastTransitionTime"] == rfc3339(ft.wall())


# --- cleanPodPolicy --------------------------------------------------------------------------------------

def succeed_by_hand(h: Harness, name: str) -> None:
    """Write the Succeeded condition as a controller does (here while every pod still runs: upstream's table)."""
    status = h.job(NS, name)["status"]
    now = rfc3339(time.time())
    conditions = [c for c in status["conditions"] if c["type"] != "Running"] + [
        {"type": "Succeeded", "status": "True", "reason": "MXJobSucceeded", "message": f"MXJob {name} is done.",
         "lastUpdateTime": now, "lastTransitionTime": now}]
    reply = h.kube.patch(jobs_path(NS, name) + "/status", {"status": {"conditions": conditions,
                                                                      "completionTime": now}})
    assert reply.ok, reply.body


CLEANUP_TABLE = [  # (job, cleanPodPolicy, the pods' phase at success, pods (and services) deleted)
    ("all-running", "All", "Running", 7),
    ("running-running", "Running", "Running", 7),
    ("running-succeeded", "Running", "Succeeded", 0),
    ("none-succeeded", "None", "Succeeded", 0),
]


@pytest.mark.as_service_account
def test_clean_pod_policy_after_success_deletes_7_7_0_0_and_a_resync_writes_nothing(h: Harness) -> None:
    controller = h.start()
    for name, policy, _, _ in CLEANUP_TABLE:
        h.create_job(mxjob(name, scheduler=1, server=2, worker=4, cleanPodPolicy=policy))
    for name, _, phase, _ in CLEANUP_TABLE:
        h.wait_children(NS, name, 7)
        h.run_all(NS, name)
        h.wait_condition(NS, name, "Running")
        if phase == "Running":
            succeed_by_hand(h, name)
        else:
            for pod in sorted(h.pods(NS, name), key=lambda p: "scheduler" in p["metadata"]["name"]):
                h.kubelet.succeed(NS, pod["metadata"]["name"])   # the scheduler last: every pod has succeeded
        h.wait_condition(NS, name, "Succeeded")
    for name, _, _, deleted in CLEANUP_TABLE:
        wait_for(lambda name=name, deleted=deleted: len(h.pods(NS, name)) == len(h.services(NS, name)) == 7 - deleted,
                 timeout=DEADLINE, what=f"{name} cleaned")
        wait_for(lambda name=name, deleted=deleted: all(
            len([r for r in h.writes("delete", resource) if r.name.startswith(f"{name}-")]) >= deleted
            for resource in ("pods", "services")), timeout=DEADLINE, what=f"{name}'s deletes audited")
    assert controller.recorder.flush(DEADLINE)
    # Deletions are counted in the audit log, not in events: client-go's spam filter (25 events per object, then
    # one per 5 minutes) drops some of the 29+ events about a 1/4/2 job, as on a real cluster.
    for name, _, _, deleted in CLEANUP_TABLE:
        for resource in ("pods", "services"):
            calls = [r for r in h.writes("delete", resource) if r.name.startswith(f"{name}-")]
            assert (len(calls), {r.code for r in calls} - {200}) == (deleted, set())
        uid = h.job(NS, name)["metadata"]["uid"]
        assert not h.events(NS, uid, "FailedDeletePod") and not h.events(NS, uid, "FailedDeleteService")
    events_before = sorted((e["metadata"]["name"], e["count"]) for e in h.events(NS))
    since = time.time()
    for name, *_ in CLEANUP_TABLE:
        h.settle(controller, f"{NS}/{name}")
        h.settle(controller, f"{NS}/{name}")
    assert controller.recorder.flush(DEADLINE)
    assert api_writes(h, since) == []
    assert sorted((e["metadata"]["name"], e["count"]) for e in h.events(NS)) == events_before
    assert len(h.writes("delete", "pods")) == len(h.writes("delete", "services")) == 14


def test_a_resync_of_a_finished_job_reconciles_nothing_and_a_change_of_it_does(h: Harness) -> None:
    """Idle near zero (issue 35): a finished job with nothing left to do costs its resyncs one dict lookup, no
    reconcile (no parse, no cleanup plan, no status diff); a change of the job, or of its pods, is reconciled as
    ever, and the job then settles again."""
    controller = h.start(resync_period=0.2)
    for name in ("done", "busy"):
        h.create_job(mxjob(name, scheduler=0, server=0, worker=1, cleanPodPolicy="None"))
    finish_worker_job(h, "done")
    h.wait_children(NS, "busy", 1)
    h.kubelet.run(NS, "busy-worker-0")
    h.wait_condition(NS, "busy", "Running")
    done, busy = f"{NS}/done", f"{NS}/busy"
    wait_settled(h, controller, done, busy, confirm=5)
    h.settle(controller, done)                       # its own change: reconciled
    since = time.monotonic()
    h.kubelet.run(NS, "done-worker-0", restart_count=1)   # a change of its pod: reconciled
    wait_for(lambda: h.reconciles(controller, done, since) >= 1, timeout=DEADLINE, what="the pod's change seen")
    wait_settled(h, controller, done, busy)  # and settled again
    assert "Succeeded" in h.conditions(NS, "done")


# --- ttlSecondsAfterFinished -----------------------------------------------------------------------------

def finish_worker_job(h: Harness, name: str, wait: bool = True) -> None:
    h.wait_children(NS, name, 1)
    h.kubelet.run(NS, f"{name}-worker-0")
    h.kubelet.succeed(NS, f"{name}-worker-0")
    if wait:
        h.wait_condition(NS, name, "Succeeded")


def job_exists(h: Harness, name: str) -> bool:
    return h.kube.get(jobs_path(NS, name)).ok


@pytest.mark.as_service_account
def test_ttl_unset_keeps_the_job_0_deletes_it_at_once_and_2s_after_two_seconds(h: Harness) -> None:
    ft = FakeTime()
    controller = h.start(**ft.options())
    h.create_job(mxjob("keep", scheduler=0, server=0, worker=1))
    h.create_job(mxjob("now", scheduler=0, server=0, worker=1, ttlSecondsAfterFinished=0))
    h.create_job(mxjob("later", scheduler=0, server=0, worker=1, runPolicy={"ttlSecondsAfterFinished": 2}))
    uids = {name: h.job(NS, name)["metadata"]["uid"] for name in ("keep", "now", "later")}
    for name in ("keep", "now", "later"):
        finish_worker_job(h, name, wait=name != "now")
    wait_for(lambda: not job_exists(h, "now"), timeout=DEADLINE, what="the job with TTL 0 deleted")
    since = time.monotonic()
    h.settle(controller, f"{NS}/later")
    wait_requeued(controller, f"{NS}/later", since)
    ft.step(1)
    h.settle(controller, f"{NS}/later")
    assert job_exists(h, "later")
    ft.step(1)
    wait_for(lambda: not job_exists(h, "later"), timeout=DEADLINE, what="the job with TTL 2 s deleted")
    ft.step(10_000)
    h.settle(controller, f"{NS}/keep")
    assert job_exists(h, "keep")
    for name in ("now", "later"):   # recorded and counted once the delete has returned, after the test saw it gone
        h.wait_events(NS, uids[name], "SuccessfulDeleteJob")
    wait_metric(controller.registry, "deleted", 2)
    assert controller.recorder.flush(DEADLINE)
    for name in ("now", "later"):
        assert [(e["type"], e["message"]) for e in h.events(NS, uids[name], "SuccessfulDeleteJob")] == [
            ("Normal", f"Deleted job: {name}")]
    assert not h.events(NS, uids["keep"], "SuccessfulDeleteJob")
    assert metric(controller.registry, "deleted") == 2


def test_ttl_with_the_completion_time_removed_by_hand_sets_it_and_deletes_later(h: Harness) -> None:
    """kubeflow/common #170: a nil completionTime crashed the operator."""
    ft = FakeTime()
    controller = h.start(**ft.options())
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1, ttlSecondsAfterFinished=5, cleanPodPolicy="None"))
    finish_worker_job(h, "j")
    ft.step(3)
    reply = h.kube.patch(jobs_path(NS, "j") + "/status", {"status": {"completionTime": None}})
    assert reply.ok, reply.body
    set_again = wait_for(lambda: h.job(NS, "j")["status"].get("completionTime"), timeout=DEADLINE,
                         what="completionTime set again")
    assert set_again == rfc3339(ft.wall())
    ft.step(4)
    h.settle(controller, f"{NS}/j")
    assert job_exists(h, "j")                      # 5 s from the new completion time, not the old one
    ft.step(1)
    wait_for(lambda: not job_exists(h, "j"), timeout=DEADLINE, what="the job deleted")


def test_ttl_with_a_completion_time_in_the_future_waits_for_it_with_a_warning(
        h: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mxjob_controller.core.finished_jobs")
    ft = FakeTime()
    controller = h.start(**ft.options())
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1, ttlSecondsAfterFinished=2, cleanPodPolicy="None"))
    finish_worker_job(h, "j")
    skewed = rfc3339(ft.wall() + 60)   # another clock wrote it
    assert h.kube.patch(jobs_path(NS, "j") + "/status", {"status": {"completionTime": skewed}}).ok
    wait_for(lambda: any("clocks disagree" in r.getMessage() for r in caplog.records), timeout=DEADLINE,
             what="the warning")
    ft.step(61)
    h.settle(controller, f"{NS}/j")
    assert job_exists(h, "j")
    ft.step(1)
    wait_for(lambda: not job_exists(h, "j"), timeout=DEADLINE, what="the job deleted")


# --- invalid jobs ----------------------------------------------------------------------------------------

def invalid_job(name: str) -> dict[str, Any]:
    job = mxjob(name, scheduler=2, server=1, worker=1)          # two Schedulers …
    del job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["image"]   # … and no image
    return job


def test_an_invalid_job_fails_once_with_every_error_and_a_fixed_spec_is_validated_afresh(h: Harness) -> None:
    controller = h.start()
    h.create_job(invalid_job("j"))
    failed = h.wait_condition(NS, "j", "Failed")
    assert failed["reason"] == "MXJobFailedValidation"
    assert failed["message"].startswith("MXJob j failed validation because [")
    assert "spec.mxReplicaSpecs.Scheduler.replicas" in failed["message"]
    assert "spec.mxReplicaSpecs.Worker.template.spec.containers[0].image: Required value" in failed["message"]
    for _ in range(3):
        h.settle(controller, f"{NS}/j")
    assert not h.pods(NS, "j") and not h.services(NS, "j")
    assert {r["result"] for r in read_trace(controller.options.trace_path)} == {"success"}   # no retry loop
    assert len(h.writes("patch", "mxjobs", subresource="status")) == 1
    assert controller.recorder.flush(DEADLINE)
    uid = h.job(NS, "j")["metadata"]["uid"]
    assert [(e["type"], e["message"], e["count"]) for e in h.events(NS, uid)] == [
        ("Warning", failed["message"], 1)]
    assert metric(controller.registry, "failed") == 1
    # a new generation, still invalid (one error fixed): validated afresh, one more event
    h.patch_job(NS, "j", {"spec": {"mxReplicaSpecs": {"Scheduler": {"replicas": 1}}}})
    other = wait_for(lambda: (c := h.conditions(NS, "j")["Failed"])["message"] != failed["message"] and c,
                     timeout=DEADLINE, what="the new errors")
    assert other["message"] == ("MXJob j failed validation because "
                                "spec.mxReplicaSpecs.Worker.template.spec.containers[0].image: Required value")
    # fixed: the failure is undone and the job runs
    h.patch_job(NS, "j", {"spec": {"mxReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
        {"name": "mxnet", "image": "mxjob/test:1"}]}}}}}})
    h.wait_children(NS, "j", 3)
    created = h.wait_condition(NS, "j", "Created")
    assert created["reason"] == "MXJobCreated" and "Failed" not in h.conditions(NS, "j")
    assert "completionTime" not in h.job(NS, "j")["status"]
    assert controller.recorder.flush(DEADLINE)
    assert [e["message"] for e in h.events(NS, uid, "MXJobFailedValidation")] in (
        [failed["message"], other["message"]], [other["message"], failed["message"]])
