"""The job status end to end: Created / Running / Succeeded / Failed with upstream's reasons and our messages,
times that persist (#1643), success of worker-only jobs (#32), no Running after Succeeded (#1650), writes only on
change (an idle resync writes nothing), conflicts re-read and recomputed, and invalid or deleted jobs."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from mxjob_controller.core.job_status import EXITED_WITH_CODE, ExitReports, StatusWriter
from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.mxnet.controller import MXJobController
from mxjob_controller.mxnet.framework import MXJOBS
from mxjob_controller.runtime.client import Client, ClientConfig
from mxjob_controller.runtime.events import EventRecorder, ObjectReference
from tests.reconciler_support import DEADLINE, Harness, jobs_path, metric, mxjob, wait_metric
from tests.support import wait_for

NS = "default"



def status_writes(h: Harness, since: float | None = None) -> list:
    return h.writes("patch", "mxjobs", since=since, subresource="status")


@pytest.mark.as_service_account
def test_running_then_succeeded_with_times_and_counts_in_the_same_write(h: Harness) -> None:
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=2, worker=4, cleanPodPolicy="None"))   # pods kept to finish them
    h.wait_children(NS, "j", 7)
    created = h.wait_condition(NS, "j", "Created")
    assert (created["reason"], created["message"]) == ("MXJobCreated", "MXJob j is created.")
    start_time = h.job(NS, "j")["status"]["startTime"]
    h.run_all(NS, "j")
    running = h.wait_condition(NS, "j", "Running")
    assert (running["reason"], running["message"]) == ("MXJobRunning", "MXJob j is running.")
    wait_for(lambda: h.job(NS, "j")["status"]["replicaStatuses"] == {
        "Scheduler": {"active": 1}, "Server": {"active": 2}, "Worker": {"active": 4}}, timeout=DEADLINE,
        what="every replica active")
    for pod in h.pods(NS, "j"):
        h.kubelet.succeed(NS, pod["metadata"]["name"])
    succeeded = h.wait_condition(NS, "j", "Succeeded")
    job = h.job(NS, "j")
    status = job["status"]
    assert (succeeded["reason"], succeeded["message"]) == ("MXJobSucceeded", "MXJob j is successfully completed.")
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("Created", "True"), ("Running", "False"), ("Succeeded", "True")]
    assert status["startTime"] == start_time   # #1643: persisted, and never moved
    assert status["completionTime"] == succeeded["lastTransitionTime"]
    assert status["replicaStatuses"] == status["mxReplicaStatuses"] == {
        "Scheduler": {"succeeded": 1}, "Server": {"succeeded": 2}, "Worker": {"succeeded": 4}}
    uid = job["metadata"]["uid"]
    h.wait_events(NS, uid, "MXJobSucceeded")
    wait_metric(controller.registry, "successful")
    assert controller.recorder.flush(DEADLINE)
    assert [(e["type"], e["message"], e["count"]) for e in h.events(NS, uid, "MXJobRunning")] == [
        ("Normal", "MXJob j is running.", 1)]
    assert [(e["type"], e["count"]) for e in h.events(NS, uid, "MXJobSucceeded")] == [("Normal", 1)]
    assert metric(controller.registry, "created") == 1 and metric(controller.registry, "successful") == 1


def test_the_scheduler_succeeding_finishes_the_job_and_active_counts_move_to_succeeded(h: Harness) -> None:
    h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=2))
    h.wait_children(NS, "j", 4)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    h.kubelet.succeed(NS, "j-scheduler-0")
    h.wait_condition(NS, "j", "Succeeded")
    assert h.job(NS, "j")["status"]["replicaStatuses"] == {
        "Scheduler": {"succeeded": 1}, "Server": {"succeeded": 1}, "Worker": {"succeeded": 2}}


def test_a_scheduler_first_seen_succeeded_leaves_an_all_workers_job_running(h: Harness) -> None:
    """Issue 47 (9): a Scheduler already Succeeded when the controller first sees it (a fast scheduler; a controller
    restarted mid-job) left the job at Created while its Workers ran. mxnet-operator v1beta1's status rules: under
    ``successPolicy: AllWorkers`` a succeeded Scheduler is Running, until every Worker has succeeded."""
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=2, successPolicy="AllWorkers", cleanPodPolicy="None"))
    h.wait_children(NS, "j", 4)
    h.wait_condition(NS, "j", "Created")
    h.kubelet.succeed(NS, "j-scheduler-0")   # straight from Pending: never seen running
    for name in ("j-server-0", "j-worker-0", "j-worker-1"):
        h.kubelet.run(NS, name)
    running = h.wait_condition(NS, "j", "Running")
    assert (running["reason"], running["message"]) == ("MXJobRunning", "MXJob j is running.")
    h.settle(controller, f"{NS}/j")
    assert "Succeeded" not in h.conditions(NS, "j")
    for name in ("j-worker-0", "j-worker-1"):
        h.kubelet.succeed(NS, name)
    h.wait_condition(NS, "j", "Succeeded")


def test_a_worker_only_job_succeeds_only_when_every_worker_has(h: Harness) -> None:
    """mxnet-operator #32: a single-worker job was Succeeded at creation."""
    controller = h.start()
    h.create_job(mxjob("j", scheduler=0, server=0, worker=2))
    h.wait_children(NS, "j", 2)
    h.wait_condition(NS, "j", "Created")
    h.settle(controller, f"{NS}/j")
    assert "Succeeded" not in h.conditions(NS, "j")
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    h.kubelet.succeed(NS, "j-worker-0")
    wait_for(lambda: h.job(NS, "j")["status"]["replicaStatuses"]["Worker"] == {"active": 1, "succeeded": 1},
             timeout=DEADLINE, what="one worker done")
    assert "Succeeded" not in h.conditions(NS, "j")
    h.kubelet.succeed(NS, "j-worker-1")
    h.wait_condition(NS, "j", "Succeeded")


@pytest.mark.as_service_account
def test_a_failed_replica_fails_the_job_naming_pod_code_and_reason(h: Harness) -> None:
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=2))
    h.wait_children(NS, "j", 4)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    h.kubelet.fail(NS, "j-worker-1", exit_code=137, reason="OOMKilled")
    failed = h.wait_condition(NS, "j", "Failed")
    assert failed["reason"] == "MXJobFailed"
    assert failed["message"] == ("MXJob j has failed because 1 Worker replica(s) failed: j-worker-1 exited with "
                                 "code 137 (OOMKilled).")
    status = h.job(NS, "j")["status"]
    assert status["completionTime"] == failed["lastTransitionTime"]
    assert status["replicaStatuses"]["Worker"] == {"active": 1, "failed": 1}
    uid = h.job(NS, "j")["metadata"]["uid"]
    h.wait_events(NS, uid, "MXJobFailed")
    wait_metric(controller.registry, "failed")
    assert controller.recorder.flush(DEADLINE)
    assert [(e["type"], e["message"]) for e in h.events(NS, uid, "MXJobFailed")] == [("Warning", failed["message"])]
    assert [(e["message"], e["count"]) for e in h.events(NS, uid, "ExitedWithCode")] == [
        ("Pod: default.j-worker-1 exited with code 137", 1)]
    assert metric(controller.registry, "failed") == 1 and metric(controller.registry, "successful") == 0


def test_exited_with_code_once_per_termination_by_the_reconcile(h: Harness) -> None:
    """Written by a reconcile worker (informer → queue → reconcile → writes), once per pod termination: not again on
    a resync, nor after a controller restart; a replacement pod's exit is another termination."""
    controller = h.start()
    threads: list[str] = []

    def watch_recorder(c: MXJobController) -> None:
        record = c.recorder.event

        def event(ref: Any, event_type: str, reason: str, message: str, **options: Any) -> bool:
            if reason == "ExitedWithCode":
                threads.append(threading.current_thread().name)
            return record(ref, event_type, reason, message, **options)
        c.recorder.event = event   # type: ignore[method-assign]

    watch_recorder(controller)
    key = f"{NS}/j"
    h.create_job(mxjob("j", scheduler=0, server=0, worker=2, restart_policy="ExitCode"))
    pods = h.wait_children(NS, "j", 2)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    uid = h.job(NS, "j")["metadata"]["uid"]

    def exits(c: MXJobController) -> list[tuple[str, int]]:
        assert c.recorder.flush(DEADLINE)
        return sorted((e["message"], e["count"]) for e in h.events(NS, uid, "ExitedWithCode"))

    done = ("Pod: default.j-worker-1 exited with code 0", 1)
    h.kubelet.succeed(NS, "j-worker-1")                       # the job runs on
    wait_for(lambda: exits(controller) == [done], timeout=DEADLINE, what="the exit recorded")
    for _ in range(3):
        h.settle(controller, key)
    assert exits(controller) == [done]
    h.stop(controller)
    controller = h.start()                                    # its first look reports nothing it did not see happen
    watch_recorder(controller)
    for _ in range(2):
        h.settle(controller, key)
    assert exits(controller) == [done]
    old = next(p["metadata"]["uid"] for p in pods if p["metadata"]["name"] == "j-worker-0")
    h.kubelet.fail(NS, "j-worker-0", exit_code=137, reason="OOMKilled")   # retryable: replaced at once
    wait_for(lambda: any(p["metadata"]["name"] == "j-worker-0" and p["metadata"]["uid"] != old
                         for p in h.pods(NS, "j")), timeout=DEADLINE, what="j-worker-0 replaced")
    wait_for(lambda: exits(controller) == [("Pod: default.j-worker-0 exited with code 137", 1), done],
             timeout=DEADLINE, what="the second exit recorded")
    assert threads and all(name.startswith("mxjob-controller-worker-") for name in threads), threads


def _exited(name: str, uid: str, finished_at: str, code: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": uid},
            "status": {"containerStatuses": [{"name": "mxnet", "state": {"terminated": {
                "exitCode": code, "finishedAt": finished_at}}}]}}


def test_a_running_job_keeps_its_exit_memory_however_many_jobs_pass_and_a_gone_job_leaves_none(
        apiserver: APIServer, kube: Any) -> None:
    """Issue 35: the exit memory kept 4,096 jobs (an LRU): a running job looked at again after more jobs than that
    had its entry evicted, and its pod's next exit was taken for one seen at start, never reported. Now it is bound
    by the job cache: every job still there keeps its entry, and a job gone (its key forgotten) leaves nothing."""
    client = Client(ClientConfig(host=apiserver.url, qps=-1), component="exits-test", program="exits-test")
    recorder = EventRecorder(client, "mxjob-controller").start()
    try:
        exits = ExitReports(recorder, "mxnet")
        running = ObjectReference("kubeflow.org/v1", "MXJob", NS, "long", "long-uid", "1")
        worker = {"metadata": {"name": "long-worker-0", "namespace": NS, "uid": "w0"}, "status": {}}
        assert exits.report(f"{NS}/long", running, [worker]) == 0              # the first look
        for i in range(5000):                                                   # more jobs than the old bound
            other = ObjectReference("kubeflow.org/v1", "MXJob", NS, f"j{i}", f"uid-{i}", "1")
            exits.report(f"{NS}/j{i}", other, [_exited(f"j{i}-worker-0", f"p{i}", "2026-11-28T00:00:00Z")])
        assert exits.report(f"{NS}/long", running, [_exited("long-worker-0", "w0", "2026-11-28T01:00:00Z", 3)]) == 1
        assert recorder.flush(DEADLINE)
        [event] = [e for e in kube.get(f"/api/v1/namespaces/{NS}/events").body["items"]
                   if e["reason"] == EXITED_WITH_CODE]
        assert (event["involvedObject"]["name"], event["message"]) == (
            "long", f"Pod: {NS}.long-worker-0 exited with code 3")
        for i in range(5000):
            exits.forget(f"{NS}/j{i}")                                          # deleted: reconciled as gone
        assert len(exits) == 1
    finally:
        recorder.stop(5.0)
        client.close()


def test_an_evicted_pod_is_named_with_its_reason(h: Harness) -> None:
    h.start()
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1))
    h.wait_children(NS, "j", 1)
    h.kubelet.evict(NS, "j-worker-0")
    failed = h.wait_condition(NS, "j", "Failed")
    assert "j-worker-0 failed (Evicted: The node was low on resource: memory.)" in failed["message"]


def test_running_never_comes_back_after_succeeded(h: Harness) -> None:
    """training-operator #1650."""
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1, cleanPodPolicy="None"))
    h.wait_children(NS, "j", 3)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    h.kubelet.succeed(NS, "j-scheduler-0")
    h.wait_condition(NS, "j", "Succeeded")
    finished = h.job(NS, "j")["status"]
    since = time.time()
    h.kubelet.run(NS, "j-server-0", restart_count=1)   # children keep changing after the job finished
    h.settle(controller, f"{NS}/j")
    h.settle(controller, f"{NS}/j")
    assert h.job(NS, "j")["status"] == finished
    assert not status_writes(h, since)


def test_an_idle_resync_writes_nothing(h: Harness) -> None:
    controller = h.start(resync_period=0.1)
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    h.wait_children(NS, "j", 3)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    wait_for(lambda: h.job(NS, "j")["status"]["replicaStatuses"]["Worker"] == {"active": 1}, timeout=DEADLINE,
             what="the counts written")
    # The reconcile that wrote the counts queued its events before returning: once a later reconcile of the job has
    # finished (one key is never reconciled twice at once), flushing the recorder writes them all.
    mark = time.monotonic()
    wait_for(lambda: h.reconciles(controller, f"{NS}/j", mark) >= 1, timeout=DEADLINE, what="a later resync")
    assert controller.recorder.flush(DEADLINE)
    since_mono, since = time.monotonic(), time.time()
    wait_for(lambda: h.reconciles(controller, f"{NS}/j", since_mono) >= 5, timeout=DEADLINE, what="five resyncs")
    assert not status_writes(h, since)
    writes = [r for r in h.apiserver.audit.records(user_agent="mxjob-controller/", since=since)
              if r.verb not in ("get", "list", "watch")]
    assert writes == []


@pytest.mark.as_service_account
def test_a_status_conflict_rereads_the_job_and_counts_it_once(apiserver: APIServer, h: Harness) -> None:
    rule = apiserver.faults.add(FaultRule(verb="patch", resource="mxjobs", subresource="status", code=409, count=1))
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    h.wait_condition(NS, "j", "Created")
    assert rule.fired == 1

    def after_the_conflict() -> list[tuple[str, int]]:
        calls = [r for r in h.apiserver.audit.records(resource="mxjobs", name="j", user_agent="mxjob-controller/")]
        conflict = next(i for i, r in enumerate(calls) if r.code == 409)
        return [(r.verb, r.code) for r in calls[conflict:conflict + 3]]

    # the conflict is followed by a re-read from the API (not the cache), then the write that succeeds (its audit
    # record is appended after the answer is sent: the job may show Created a moment before it)
    wait_for(lambda: len(after_the_conflict()) == 3, timeout=DEADLINE, what="the write after the conflict audited")
    assert after_the_conflict() == [("patch", 409), ("get", 200), ("patch", 200)]
    wait_metric(controller.registry, "created")
    assert metric(controller.registry, "created") == 1


def test_a_status_written_by_someone_else_meanwhile_is_kept(h: Harness) -> None:
    """A conflict is resolved from the fresh object: a condition added in between is not lost."""
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    h.wait_condition(NS, "j", "Created")
    job = h.job(NS, "j")
    extra = {"type": "Suspended", "status": "False", "reason": "Other", "message": "set by someone else",
             "lastUpdateTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z"}
    reply = h.kube.patch(jobs_path(NS, "j") + "/status",
                         {"status": {"conditions": [*job["status"]["conditions"], extra]}})
    assert reply.ok, reply.body
    h.wait_children(NS, "j", 3)   # all of them, then run them all (Created comes before the last pods)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    assert h.conditions(NS, "j")["Suspended"]["message"] == "set by someone else"
    assert metric(controller.registry, "created") == 1


def test_an_invalid_job_is_left_alone_and_logged_once(h: Harness, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mxjob_controller.core.reconciler")
    controller = h.start()
    bad = mxjob("j", scheduler=2, server=1, worker=1)   # two Schedulers: valid for the CRD, not for the API
    h.create_job(bad)
    for _ in range(3):
        h.settle(controller, f"{NS}/j")
    assert not h.pods(NS, "j") and not h.services(NS, "j")
    failed = h.conditions(NS, "j")["Failed"]   # the validation failure (tests/core/reconciler/test_finish.py)
    assert failed["reason"] == "MXJobFailedValidation" and list(h.conditions(NS, "j")) == ["Failed"]
    invalid = [r for r in caplog.records if "job is invalid" in r.getMessage()]
    assert len(invalid) == 1 and "spec.mxReplicaSpecs.Scheduler.replicas" in invalid[0].getMessage()
    assert (invalid[0].job_namespace, invalid[0].job_name) == (NS, "j")  # type: ignore[attr-defined]


def test_a_deleted_job_forgets_its_expectations(h: Harness) -> None:
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    h.wait_children(NS, "j", 3)
    assert h.kube.delete(jobs_path(NS, "j")).ok
    wait_for(lambda: controller.expectations.record_count() == 0, timeout=DEADLINE, what="expectations dropped")
    wait_for(lambda: not h.pods(NS, "j"), timeout=DEADLINE, what="the garbage collector")


def test_the_status_writer_refuses_to_write_over_a_newer_job(h: Harness) -> None:
    """The write carries the resourceVersion it was computed from: a stale object is re-read, never overwritten."""
    job = h.create_job(mxjob("j", scheduler=0, server=0, worker=1))
    h.patch_job(NS, "j", {"metadata": {"labels": {"changed": "after-the-read"}}})
    seen: list[str] = []

    def desired(obj: dict) -> dict:
        seen.append(obj["metadata"]["resourceVersion"])
        return {**(obj.get("status") or {}), "startTime": "2024-01-01T00:00:00Z"}

    client = Client(ClientConfig(host=h.apiserver.url, qps=-1), component="mxjob-controller",
                    program="mxjob-controller")
    try:
        write = StatusWriter(client, MXJOBS).update(job, desired)
    finally:
        client.close()
    assert write is not None and write.written
    assert seen[0] == job["metadata"]["resourceVersion"] and len(seen) == 2 and seen[1] != seen[0]
    assert write.job["metadata"]["labels"] == {"changed": "after-the-read"}
    assert h.job(NS, "j")["status"] == {"startTime": "2024-01-01T00:00:00Z"}
