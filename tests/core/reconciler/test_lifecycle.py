"""The controller over a job's life and its own: restarted mid-job (no duplicate pod, no lost condition, no second
``jobs_created_total``), sixteen jobs on four threads ending exactly as on one (and no job on two threads at once),
one event per pod created and none on resync, namespace scoping, and a clean stop."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.mxnet.controller import CacheSyncTimeoutError, ControllerOptions, MXJobController
from mxjob_controller.runtime.client import Client, ClientConfig
from mxjob_controller.runtime.clock import FakeClock
from mxjob_controller.runtime.expectations import pods_key
from mxjob_controller.runtime.reconcile_trace import concurrent_runs, read_trace
from tests.reconciler_support import DEADLINE, Harness, metric, mxjob, wait_metric
from tests.support import wait_for

NS = "default"



def create_namespace(h: Harness, name: str) -> None:
    reply = h.kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert reply.status == 201, reply.body


@pytest.mark.as_service_account
def test_a_restarted_controller_picks_up_where_the_last_one_stopped(h: Harness) -> None:
    first_registry, second_registry = CollectorRegistry(), CollectorRegistry()
    first = h.start(registry=first_registry)
    h.create_job(mxjob("j", scheduler=1, server=2, worker=2))
    pods = h.wait_children(NS, "j", 5)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    wait_for(lambda: h.job(NS, "j")["status"]["replicaStatuses"]["Worker"] == {"active": 2}, timeout=DEADLINE,
             what="the counts written")
    before = h.job(NS, "j")["status"]
    h.stop(first)
    restarted_at = time.time()
    second = h.start(registry=second_registry)
    h.settle(second, f"{NS}/j")
    assert h.job(NS, "j")["status"] == before   # nothing lost, nothing rewritten
    assert [p["metadata"]["uid"] for p in h.pods(NS, "j")] == [p["metadata"]["uid"] for p in pods]
    assert not h.writes("create", "pods", since=restarted_at) and not h.writes("create", "services",
                                                                                 since=restarted_at)
    h.kubelet.succeed(NS, "j-scheduler-0")
    h.wait_condition(NS, "j", "Succeeded")
    wait_metric(second_registry, "successful")
    assert metric(first_registry, "created") == 1 and metric(second_registry, "created") == 0
    assert metric(second_registry, "successful") == 1


# --- many jobs, many threads -----------------------------------------------------------------------------

SHAPES = [  # (scheduler, server, worker, extra spec, how the job ends)
    (1, 1, 1, {}, "scheduler succeeds"),
    (1, 2, 2, {}, "worker-1 is OOMKilled"),
    (0, 0, 2, {}, "workers succeed"),
    (1, 1, 2, {"successPolicy": "AllWorkers"}, "scheduler then workers succeed"),
]


def run_sixteen_jobs(h: Harness, namespace: str, threadiness: int) -> tuple[dict[str, Any], MXJobController]:
    create_namespace(h, namespace)
    controller = h.start(threadiness=threadiness, namespaces=(namespace,))
    for i in range(16):
        scheduler, server, worker, extra, _ = SHAPES[i % 4]
        h.create_job(mxjob(f"job-{i}", namespace, scheduler=scheduler, server=server, worker=worker,
                           cleanPodPolicy="None", **extra))   # the pods stay, to be compared
    for i in range(16):
        scheduler, server, worker, _, _ = SHAPES[i % 4]
        h.wait_children(namespace, f"job-{i}", scheduler + server + worker)
        h.run_all(namespace, f"job-{i}")
    for i in range(16):
        h.wait_condition(namespace, f"job-{i}", "Running")
        wait_for(lambda i=i: not any(p["status"].get("phase") != "Running" for p in h.pods(namespace, f"job-{i}"))
                 and sum((h.job(namespace, f"job-{i}")["status"]["replicaStatuses"].get(t) or {}).get("active", 0)
                         for t in ("Scheduler", "Server", "Worker")) == sum(SHAPES[i % 4][:3]),
                 timeout=DEADLINE, what="every replica active")
    for i in range(16):
        name, ending = f"job-{i}", SHAPES[i % 4][4]
        if ending == "worker-1 is OOMKilled":
            h.kubelet.fail(namespace, f"{name}-worker-1", exit_code=137, reason="OOMKilled")
            continue
        if ending.startswith("scheduler"):
            h.kubelet.succeed(namespace, f"{name}-scheduler-0")
        if ending.endswith("workers succeed"):
            for w in range(2):
                h.kubelet.succeed(namespace, f"{name}-worker-{w}")
    outcome: dict[str, Any] = {}
    for i in range(16):
        name = f"job-{i}"
        wait_for(lambda name=name: {"Succeeded", "Failed"} & {
            t for t, c in h.conditions(namespace, name).items() if c["status"] == "True"},
            timeout=DEADLINE, what=f"{name} finished")
        status = h.job(namespace, name)["status"]
        outcome[name] = {
            "conditions": [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]],
            "replicaStatuses": status["replicaStatuses"], "mxReplicaStatuses": status["mxReplicaStatuses"],
            "pods": sorted(p["metadata"]["name"] for p in h.pods(namespace, name)),
            "services": sorted(s["metadata"]["name"] for s in h.services(namespace, name)),
            "times": sorted(k for k in status if k.endswith("Time"))}
    # Each end is counted and announced after the status write seen above.
    wait_for(lambda: metric(controller.registry, "successful", namespace) + metric(controller.registry, "failed",
                                                                                  namespace) >= 16,
             timeout=DEADLINE, what="16 ends counted")
    wait_for(lambda: len([e for e in h.events(namespace) if e["reason"] in ("MXJobSucceeded", "MXJobFailed")]) >= 16,
             timeout=DEADLINE, what="16 ends announced")
    assert controller.recorder.flush(DEADLINE)
    outcome["events"] = sorted(Counter(
        (e["involvedObject"]["name"], e["reason"], e["message"].replace(f"{namespace}.", "<ns>."), e["count"])
        for e in h.events(namespace)).items())
    outcome["creates"] = (len(h.writes("create", "pods", namespace=namespace)),
                          len(h.writes("create", "services", namespace=namespace)))
    outcome["metrics"] = {what: metric(controller.registry, what, namespace)
                          for what in ("created", "successful", "failed", "restarted", "deleted")}
    return outcome, controller


def test_sixteen_jobs_on_four_threads_end_as_on_one(h: Harness) -> None:
    started = time.monotonic()
    serial, _ = run_sixteen_jobs(h, "one", 1)
    parallel, controller = run_sixteen_jobs(h, "four", 4)
    elapsed = time.monotonic() - started
    assert parallel == serial
    assert serial["metrics"] == {"created": 16, "successful": 12, "failed": 4, "restarted": 0, "deleted": 0}
    assert serial["creates"] == (56, 56)
    assert serial["job-1"]["conditions"][-1] == (
        "Failed", "True", "MXJobFailed",
        "MXJob job-1 has failed because 1 Worker replica(s) failed: job-1-worker-1 exited with code 137 (OOMKilled).")
    records = read_trace(controller.options.trace_path)
    assert len({r["thread"] for r in records}) > 1          # the four workers did share the work
    assert concurrent_runs(records) == []                     # and never on one job at once
    print(f"two runs of 16 jobs (112 pods, 112 services): {elapsed:.1f}s")


# --- events ----------------------------------------------------------------------------------------------

def test_one_event_per_pod_created_and_none_again_on_resync(h: Harness) -> None:
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=2, worker=4))
    pods = h.wait_children(NS, "j", 7)
    h.wait_condition(NS, "j", "Created")
    uid = h.job(NS, "j")["metadata"]["uid"]
    for reason in ("SuccessfulCreatePod", "SuccessfulCreateService"):   # recorded once each create has returned
        h.wait_events(NS, uid, reason, 7)
    assert controller.recorder.flush(DEADLINE)

    def snapshot() -> list[tuple[str, str, str, int]]:
        return sorted((e["metadata"]["name"], e["reason"], e["message"], e["count"]) for e in h.events(NS, uid))

    first = snapshot()
    created = [e for e in first if e[1] == "SuccessfulCreatePod"]
    assert sorted(e[2] for e in created) == sorted(f"Created pod: {p['metadata']['name']}" for p in pods)
    assert len({e[0] for e in created}) == 7 and all(e[3] == 1 for e in created)
    assert len([e for e in first if e[1] == "SuccessfulCreateService"]) == 7
    for e in h.events(NS, uid):
        assert e["source"] == {"component": "mxjob-controller"} and e["reportingComponent"] == "mxjob-controller"
        assert e["involvedObject"]["kind"] == "MXJob" and e["involvedObject"]["apiVersion"] == "kubeflow.org/v1"
    for _ in range(3):
        h.settle(controller, f"{NS}/j")
    assert controller.recorder.flush(DEADLINE)
    assert snapshot() == first


# --- scope and shutdown ----------------------------------------------------------------------------------

def test_a_namespaced_controller_leaves_other_namespaces_alone(h: Harness) -> None:
    create_namespace(h, "mine")
    create_namespace(h, "theirs")
    controller = h.start(namespaces=("mine",))
    h.create_job(mxjob("j", "theirs", scheduler=0, server=0, worker=1))
    h.create_job(mxjob("j", "mine", scheduler=0, server=0, worker=1))
    h.wait_children("mine", "j", 1)
    h.settle(controller, "mine/j")
    assert not h.pods("theirs", "j") and not (h.job("theirs", "j").get("status"))
    assert not h.apiserver.audit.records(namespace="theirs", user_agent="mxjob-controller/", verb="create")


def test_stop_ends_every_thread_of_the_controller(h: Harness) -> None:
    ours = ("mxjob-controller", "informer-", "events-")
    before = {t for t in threading.enumerate() if t.name.startswith(ours)}
    controller = h.start(threadiness=3)
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    h.wait_children(NS, "j", 3)
    # by thread, not name: a previous test's threads of the same names may still be stopping under load
    started = {t.name for t in threading.enumerate() if t.name.startswith(ours) and t not in before}
    assert {"mxjob-controller-worker-0", "mxjob-controller-worker-2", "events-mxjob-controller-0"} <= started
    assert sum(name.startswith("events-mxjob-controller-") for name in started) == controller.options.event_writers
    assert any(name.startswith("mxjob-controller-writes-") for name in started)
    stopped_at = time.monotonic()
    h.stop(controller)
    assert time.monotonic() - stopped_at < 10
    left = [t.name for t in threading.enumerate() if t.name.startswith(ours) and t not in before and t.is_alive()]
    assert left == []


def test_a_lost_event_delays_a_job_only_until_its_expectations_expire(h: Harness) -> None:
    clock = FakeClock()
    controller = h.start(clock=clock)
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1))
    [pod] = h.wait_children(NS, "j", 1)
    # as if a creation's watch event had been lost: the job waits for an event that will never come
    controller.expectations.raise_expectations(pods_key(f"{NS}/j", "Worker"), adds=1)
    assert h.kube.delete(f"/api/v1/namespaces/{NS}/pods/j-worker-0").ok
    h.settle(controller, f"{NS}/j")
    assert not h.pods(NS, "j")   # waiting, not recreating
    assert read_trace(controller.options.trace_path)[-1]["result"] == "requeue_after"
    clock.step(controller.expectations.ttl)
    [again] = h.wait_children(NS, "j", 1)
    assert again["metadata"]["uid"] != pod["metadata"]["uid"]


def test_start_fails_cleanly_when_the_caches_cannot_sync(apiserver: APIServer) -> None:
    """No MXJob CRD: the job informer cannot list, start() says so and leaves no thread behind."""
    client = Client(ClientConfig(host=apiserver.url, qps=-1), component="mxjob-controller",
                    program="mxjob-controller")
    others = set(threading.enumerate())   # a previous test's threads may still be stopping under load
    controller = MXJobController(client, ControllerOptions(cache_sync_timeout=1.0, registry=CollectorRegistry()))
    try:
        with pytest.raises(CacheSyncTimeoutError):
            controller.start()
    finally:
        client.close()
    ours = ("mxjob-controller", "informer-", "events-")
    wait_for(lambda: not [t for t in threading.enumerate()
                          if t not in others and t.name.startswith(ours) and t.is_alive()],
             timeout=DEADLINE, what="every controller thread gone")
