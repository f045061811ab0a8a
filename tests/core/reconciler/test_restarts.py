"""Restarts end to end, a helper playing the kubelet: ``ExitCode`` retries 130/137/138/143 and evictions (new pod,
same name, ``Restarting`` until it runs) and fails on 1/2/126/127/128/139; restarts of one index back off 0 s,
10 s, 20 s, across a controller restart too; ``backoffLimit`` counts container restarts (OnFailure) and the
controller's restarts (#2045), with ``cleanPodPolicy`` applied (#3419); a pod ``Unknown`` for 5 minutes is replaced
(#956); under ``Never`` a running pod deleted by a user fails the job (mxnet-operator #12), a pending one is
recreated."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from mxjob_controller.core import reconciler
from mxjob_controller.core.failure_policy import evaluate
from mxjob_controller.core.reconciler import JobReconciler
from mxjob_controller.kube.timefmt import rfc3339
from tests.reconciler_support import DEADLINE, Harness, metric, mxjob, wait_metric
from tests.reconciler_time import FakeTime
from tests.support import wait_for

NS = "default"



def uid_of(h: Harness, name: str) -> str | None:
    for pod in h.pods(NS, name.rsplit("-", 2)[0]):
        if pod["metadata"]["name"] == name:
            return pod["metadata"]["uid"]
    return None


def wait_replaced(h: Harness, name: str, old_uid: str) -> str:
    """Wait until pod ``name`` exists again with another UID; the new UID."""
    return wait_for(lambda: (uid := uid_of(h, name)) not in (None, old_uid) and uid, timeout=DEADLINE,
                    what=f"{name} recreated")


def history(h: Harness, job: str) -> dict[str, Any]:
    return h.job(NS, job)["status"].get("replicaHistory") or {}


def true_conditions(h: Harness, job: str) -> list[str]:
    return [t for t, c in h.conditions(NS, job).items() if c["status"] == "True"]


# --- one decision per pass -------------------------------------------------------------------------------

def test_each_pass_evaluates_the_failure_policy_once_and_acts_on_it_after_its_write(
        h: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """As kube's syncJob computes once and writes once: the restart the status records is carried out, and the
    deadline requeued, from the pass's own evaluation, not from a second one on the stored status."""
    evaluations, passes = [], []

    def counted(*args: Any, **kwargs: Any) -> Any:
        evaluations.append(1)
        return evaluate(*args, **kwargs)

    def sync(self: JobReconciler, *args: Any, **kwargs: Any) -> Any:
        passes.append(1)
        return real_sync(self, *args, **kwargs)

    real_sync = JobReconciler._sync
    monkeypatch.setattr(reconciler, "evaluate", counted)
    monkeypatch.setattr(JobReconciler, "_sync", sync)
    controller = h.start()
    h.create_job(mxjob("j", scheduler=0, server=0, worker=2, restart_policy="ExitCode",
                       runPolicy={"activeDeadlineSeconds": 3600}))
    h.wait_children(NS, "j", 2)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    old = uid_of(h, "j-worker-1")
    h.kubelet.fail(NS, "j-worker-1", exit_code=137, reason="OOMKilled")
    wait_replaced(h, "j-worker-1", old)   # deleted by the pass that recorded the restart, then recreated
    h.kubelet.run(NS, "j-worker-1")
    h.wait_condition(NS, "j", "Running")
    assert h.job(NS, "j")["status"]["restartCount"] == 1
    h.settle(controller, f"{NS}/j")
    assert passes and len(evaluations) == len(passes), "one evaluation per pass"


# --- ExitCode --------------------------------------------------------------------------------------------

@pytest.mark.as_service_account
def test_retryable_exits_and_an_eviction_restart_the_pod_under_its_name(h: Harness) -> None:
    controller = h.start()
    h.create_job(mxjob("j", scheduler=0, server=0, worker=5, restart_policy="ExitCode"))
    pods = h.wait_children(NS, "j", 5)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    old = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    for index, code in enumerate((130, 137, 138, 143)):
        h.kubelet.fail(NS, f"j-worker-{index}", exit_code=code, reason="OOMKilled" if code == 137 else "Error")
    h.kubelet.evict(NS, "j-worker-4")
    new = {name: wait_replaced(h, name, uid) for name, uid in old.items()}
    restarting = h.wait_condition(NS, "j", "Restarting")
    assert restarting["reason"] == "MXJobRestarting" and restarting["message"].startswith("MXJob j is restarting")
    assert "Running" not in h.conditions(NS, "j")                   # Restarting replaced it
    for name in list(new)[:4]:
        h.kubelet.run(NS, name)
    h.settle(controller, f"{NS}/j")
    assert true_conditions(h, "j") == ["Created", "Restarting"]       # until every recreated pod runs
    h.kubelet.run(NS, "j-worker-4")
    h.wait_condition(NS, "j", "Running")
    assert "Restarting" not in h.conditions(NS, "j")
    status = h.job(NS, "j")["status"]
    assert status["restartCount"] == 5 and status["replicaStatuses"]["Worker"] == {"active": 5}
    assert all(r == {"podUID": new[f"j-worker-{i}"], "started": True, "restarts": 1}
               for i, r in ((int(k.split("-")[1]), r) for k, r in status["replicaHistory"].items()))
    assert controller.recorder.flush(DEADLINE)
    uid = h.job(NS, "j")["metadata"]["uid"]
    [event] = h.events(NS, uid, "MXJobRestarting")
    assert (event["type"], event["count"]) == ("Warning", 1)
    assert metric(controller.registry, "restarted") == 1 and metric(controller.registry, "failed") == 0


def test_permanent_exits_fail_the_job_naming_pod_and_code(h: Harness) -> None:
    controller = h.start()
    codes = (1, 2, 126, 127, 128, 139)
    for code in codes:
        h.create_job(mxjob(f"code-{code}", scheduler=0, server=0, worker=1, restart_policy="ExitCode"))
    for code in codes:
        h.wait_children(NS, f"code-{code}", 1)
        h.kubelet.run(NS, f"code-{code}-worker-0")
        h.kubelet.fail(NS, f"code-{code}-worker-0", exit_code=code, reason="Error")
    for code in codes:
        failed = h.wait_condition(NS, f"code-{code}", "Failed")
        assert failed["message"] == (f"MXJob code-{code} has failed because 1 Worker replica(s) failed: "
                                     f"code-{code}-worker-0 exited with code {code} (Error).")
    wait_metric(controller.registry, "failed", len(codes))
    assert metric(controller.registry, "restarted") == 0 and metric(controller.registry, "failed") == len(codes)
    assert len(h.writes("create", "pods")) == len(codes)   # not one restart


def test_restarts_of_one_index_back_off_0_10_20_seconds_across_a_controller_restart(h: Harness) -> None:
    ft = FakeTime()
    controller = h.start(**ft.options())
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1, restart_policy="ExitCode"))
    [pod] = h.wait_children(NS, "j", 1)
    uid = pod["metadata"]["uid"]

    def fail_and_wait_decision(uid: str, restarts: int) -> dict[str, Any]:
        h.kubelet.run(NS, "j-worker-0")
        h.wait_condition(NS, "j", "Running")
        h.kubelet.fail(NS, "j-worker-0", exit_code=137, reason="OOMKilled")
        record = wait_for(lambda: (r := history(h, "j").get("worker-0") or {}).get("restarts") == restarts and r,
                          timeout=DEADLINE, what=f"restart {restarts} decided")
        assert record["restarting"] is True
        return record

    # first restart: at once, no time passes
    fail_and_wait_decision(uid, 1)
    uid = wait_replaced(h, "j-worker-0", uid)
    # second: 10 s later, not before
    record = fail_and_wait_decision(uid, 2)
    assert (record["podUID"], record["nextRestartTime"]) == (uid, rfc3339(ft.wall() + 10))
    h.settle(controller, f"{NS}/j")
    ft.step(9)
    h.settle(controller, f"{NS}/j")
    assert uid_of(h, "j-worker-0") == uid
    ft.step(1)
    uid = wait_replaced(h, "j-worker-0", uid)
    # third: 20 s, and the due time in status is honoured by a new controller
    record = fail_and_wait_decision(uid, 3)
    assert (record["podUID"], record["nextRestartTime"]) == (uid, rfc3339(ft.wall() + 20))
    h.stop(controller)
    second = h.start(**ft.options())
    h.settle(second, f"{NS}/j")
    ft.step(19)
    h.settle(second, f"{NS}/j")
    assert uid_of(h, "j-worker-0") == uid
    ft.step(1)
    wait_replaced(h, "j-worker-0", uid)
    assert h.job(NS, "j")["status"]["restartCount"] == 3
    assert "Failed" not in h.conditions(NS, "j")


def test_a_restart_never_comes_before_its_back_off_on_a_clock_with_sub_seconds(h: Harness) -> None:
    """The failure policy judges with the exact time, not the whole seconds the status stores: a restart decided at
    x.6 s with a 10 s back-off is due at x+11 s (status times are whole seconds, never earlier than the back-off),
    and does not happen 10 s later (x+10.6 s)."""
    ft = FakeTime(epoch=float(int(time.time())) + 0.6)
    controller = h.start(**ft.options())
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1, restart_policy="ExitCode"))
    [pod] = h.wait_children(NS, "j", 1)
    uid = pod["metadata"]["uid"]
    for restarts in (1, 2):
        h.kubelet.run(NS, "j-worker-0")
        h.wait_condition(NS, "j", "Running")
        h.kubelet.fail(NS, "j-worker-0", exit_code=137, reason="OOMKilled")
        record = wait_for(lambda n=restarts: (r := history(h, "j").get("worker-0") or {}).get("restarts") == n and r,
                          timeout=DEADLINE, what=f"restart {restarts} decided")
        if restarts == 1:
            uid = wait_replaced(h, "j-worker-0", uid)     # the first restart: at once
    assert record["nextRestartTime"] == rfc3339(math.ceil(ft.wall() + 10))
    ft.step(10)
    h.settle(controller, f"{NS}/j")
    assert uid_of(h, "j-worker-0") == uid                 # 10 s passed, but the stored due time has not
    ft.step(0.5)
    wait_replaced(h, "j-worker-0", uid)


# --- backoffLimit ----------------------------------------------------------------------------------------

def test_backoff_limit_4_counts_container_restarts_and_cleanup_deletes_6_pods_and_6_services(h: Harness) -> None:
    controller = h.start()
    h.create_job(mxjob("j", scheduler=0, server=2, worker=4, restart_policy="OnFailure", backoffLimit=4))
    h.wait_children(NS, "j", 6)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    since = time.time()
    for index in range(4):
        h.kubelet.run(NS, f"j-worker-{index}", restart_count=1)
    failed = h.wait_condition(NS, "j", "Failed")
    assert (failed["reason"], failed["message"]) == (
        "MXJobFailed", "Job j has failed because it has reached the specified backoff limit")
    assert h.job(NS, "j")["status"]["restartCount"] == 4
    wait_for(lambda: not h.pods(NS, "j") and not h.services(NS, "j"), timeout=DEADLINE, what="the cleanup")
    wait_for(lambda: len(h.writes("delete", "pods", since=since)) >= 6 and len(h.writes("delete", "services",
                                                                                         since=since)) >= 6,
             timeout=DEADLINE, what="the deletes audited")
    assert len(h.writes("delete", "pods", since=since)) == 6 and len(h.writes("delete", "services", since=since)) == 6
    assert controller.recorder.flush(DEADLINE)
    uid = h.job(NS, "j")["metadata"]["uid"]
    assert [(e["type"], e["message"]) for e in h.events(NS, uid, "MXJobFailed")] == [("Warning", failed["message"])]
    assert not h.events(NS, uid, "FailedDeletePod") and not h.events(NS, uid, "FailedDeleteService")
    assert metric(controller.registry, "failed") == 1


def test_backoff_limit_2_counts_exit_code_restarts_and_clean_pod_policy_none_keeps_every_pod(h: Harness) -> None:
    """training-operator #2045 (ExitCode restarts never counted) and #3419 (cleanPodPolicy None ignored)."""
    controller = h.start()
    h.create_job(mxjob("j", scheduler=0, server=1, worker=1, restart_policy="ExitCode", backoffLimit=2,
                       cleanPodPolicy="None"))
    [_, worker] = h.wait_children(NS, "j", 2)
    h.run_all(NS, "j")
    h.kubelet.fail(NS, "j-worker-0", exit_code=137, reason="OOMKilled")
    uid = wait_replaced(h, "j-worker-0", worker["metadata"]["uid"])
    h.kubelet.run(NS, "j-worker-0")
    h.wait_condition(NS, "j", "Running")
    since = time.time()
    h.kubelet.fail(NS, "j-worker-0", exit_code=143)
    failed = h.wait_condition(NS, "j", "Failed")
    assert failed["message"] == "Job j has failed because it has reached the specified backoff limit"
    assert h.job(NS, "j")["status"]["restartCount"] == 2
    h.settle(controller, f"{NS}/j")
    assert [p["metadata"]["name"] for p in h.pods(NS, "j")] == ["j-server-0", "j-worker-0"]
    assert uid_of(h, "j-worker-0") == uid and len(h.services(NS, "j")) == 2
    assert not h.writes("delete", "pods", since=since) and not h.writes("delete", "services", since=since)


# --- lost pods -------------------------------------------------------------------------------------------

def test_a_pod_unknown_for_five_minutes_is_replaced(h: Harness) -> None:
    ft = FakeTime()
    controller = h.start(**ft.options())
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1))   # Never: still replaced, the node is gone
    [pod] = h.wait_children(NS, "j", 1)
    h.kubelet.run(NS, "j-worker-0")
    h.wait_condition(NS, "j", "Running")
    h.kubelet.lose(NS, "j-worker-0")
    wait_for(lambda: (history(h, "j").get("worker-0") or {}).get("unknownSince"), timeout=DEADLINE,
             what="the Unknown phase noticed")
    ft.step(299)
    h.settle(controller, f"{NS}/j")
    assert uid_of(h, "j-worker-0") == pod["metadata"]["uid"]
    ft.step(1)
    wait_replaced(h, "j-worker-0", pod["metadata"]["uid"])
    restarting = h.wait_condition(NS, "j", "Restarting")
    assert "j-worker-0 failed (Unknown: the pod's phase has been Unknown for 300s)" in restarting["message"]
    h.kubelet.run(NS, "j-worker-0")
    h.wait_condition(NS, "j", "Running")
    assert h.job(NS, "j")["status"]["restartCount"] == 1 and "Failed" not in h.conditions(NS, "j")


def test_under_never_a_running_pod_deleted_by_a_user_fails_the_job_and_a_pending_one_is_recreated(
        h: Harness) -> None:
    """mxnet-operator #12: a deleted pod was silently recreated."""
    controller = h.start()
    h.create_job(mxjob("j", scheduler=0, server=0, worker=2))
    pods = h.wait_children(NS, "j", 2)
    h.kubelet.run(NS, "j-worker-0")
    wait_for(lambda: (history(h, "j").get("worker-0") or {}).get("started"), timeout=DEADLINE,
             what="worker-0 seen running")
    assert h.kube.delete(f"/api/v1/namespaces/{NS}/pods/j-worker-1").ok      # Pending: never ran
    wait_replaced(h, "j-worker-1", pods[1]["metadata"]["uid"])
    h.settle(controller, f"{NS}/j")
    assert "Failed" not in h.conditions(NS, "j")
    assert h.kube.delete(f"/api/v1/namespaces/{NS}/pods/j-worker-0").ok      # Running: lost
    failed = h.wait_condition(NS, "j", "Failed")
    assert failed["message"] == ("MXJob j has failed because 1 Worker replica(s) failed: j-worker-0 failed "
                                 "(Deleted: the pod disappeared after it had started).")
    h.settle(controller, f"{NS}/j")
    assert len(h.writes("create", "pods")) == 3   # two, and worker-1 again; worker-0 never

