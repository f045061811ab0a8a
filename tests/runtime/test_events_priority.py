"""Events that arrive, against the embedded API server over HTTP (issue 16, "Fair API use"):

- events have a client budget of their own: they are written promptly while the controller's main client is
  starved by its own pod and service creations;
- a job's important events (``Succeeded``, ``Failed``, ``Restarting``) are never the ones dropped: not by a full
  queue (an ordinary one goes instead), not by the per-object spam filter; their own queue is bounded all the same;
- after a restart, the terminal event of a job that finished while no controller ran (or whose event died queued
  with its controller) is written once, and one that exists is not written again.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from mxjob_controller.kube.timefmt import rfc3339
from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.manager import controllers
from mxjob_controller.manager.settings import RunSettings
from mxjob_controller.mxnet.controller import ControllerOptions, MXJobController
from mxjob_controller.runtime.client import Client, ClientConfig
from mxjob_controller.runtime.events import NORMAL, WARNING, EventRecorder, ObjectReference
from tests.reconciler_support import CONTROLLER_AGENT, DEADLINE, Harness, jobs_path, mxjob
from tests.support import Kube, wait_for

NS = "default"
JOB = ObjectReference("kubeflow.org/v1", "MXJob", NS, "my-job", "1234-uid", "7")
SUCCEEDED_MESSAGE = "MXJob {} is successfully completed."



@pytest.fixture
def client(apiserver: APIServer) -> Iterator[Client]:
    c = Client(ClientConfig(host=apiserver.url, qps=-1), component="events-test", program="events-test",
               max_retries=0)
    yield c
    c.close()


def events(kube: Kube, reason: str | None = None, namespace: str = NS) -> list[dict[str, Any]]:
    reply = kube.get(f"/api/v1/namespaces/{namespace}/events")
    assert reply.ok, reply.body
    return [e for e in reply.body["items"] if reason is None or e["reason"] == reason]


# --- the events client's own budget --------------------------------------------------------------------------

def start_starved(h: Harness, qps: float) -> MXJobController:
    """A controller whose main client may send ``qps`` requests a second, in bursts of one."""
    client = Client(ClientConfig(host=h.apiserver.url, qps=qps, burst=1), component="mxjob-controller",
                    program="mxjob-controller")
    h.clients.append(client)
    controller = MXJobController(client, ControllerOptions(threadiness=2, registry=CollectorRegistry()))
    h.controllers.append(controller)
    return controller.start()


def test_events_are_prompt_while_the_main_client_budget_is_used_up(h: Harness) -> None:
    """Eight creations at 1 request/s on the main client: before, each event queued behind them for that same
    budget (seconds late, the backlog written after the last pod); now every event is written within a second
    of the creation it reports."""
    controller = start_starved(h, qps=1.0)
    assert controller.event_client is not controller.client
    assert controller.event_client.rate_limiter is not controller.client.rate_limiter
    h.create_job(mxjob("j", scheduler=0, server=1, worker=3))
    uid = wait_for(lambda: h.job(NS, "j")["metadata"].get("uid"), timeout=DEADLINE, what="the job")

    def reported(reason: str) -> int:   # repeats are folded into counts (and combined after ten)
        return sum(e["count"] for e in h.events(NS, uid, reason))

    lag = 0
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        pods, services = len(h.pods(NS, "j")), len(h.services(NS, "j"))
        lag = max(lag, pods - reported("SuccessfulCreatePod"), services - reported("SuccessfulCreateService"))
        if pods == services == 4:
            break
        time.sleep(0.05)
    assert len(h.pods(NS, "j")) == 4 and len(h.services(NS, "j")) == 4
    started = time.monotonic()
    wait_for(lambda: reported("SuccessfulCreatePod") == 4 and reported("SuccessfulCreateService") == 4,
             timeout=DEADLINE, what="an event for every creation")
    behind = time.monotonic() - started
    print(f"main client 1 request/s: events at most {lag} behind the creations, the last one {behind:.2f}s after")
    assert behind < 1.5, f"the events came {behind:.2f}s after the last creation"   # before: 3 s
    assert lag <= 2, f"events fell {lag} creations behind"


@pytest.mark.parametrize(("kube_api_qps", "batch"), [(20.0, 32), (-1.0, 128)])
def test_the_run_flags_size_the_events_client_and_the_batches(apiserver: APIServer, kube_api_qps: float,
                                                              batch: int) -> None:
    """Each framework's controller (all three by default) gets an events client of its own, sized by the flags, a
    client of its own for its informers, sized as the main one, and slow-start batches sized by the client budget
    (core/slow_start.batch_cap_for_budget)."""
    client = Client(ClientConfig(host=apiserver.url, qps=20, burst=30), component="controller")
    built = controllers.new_controller(client, RunSettings(event_qps=7.5, event_burst=9, kube_api_qps=kube_api_qps),
                                       CollectorRegistry())
    assert isinstance(built, controllers.Controllers)
    try:
        assert [c.framework.framework_name for c in built.controllers] == ["mxnet", "tensorflow", "generic"]
        assert built.names == ["mxjob-controller", "tfjob-controller", "genericjob-controller"]
        for controller in built.controllers:
            bucket, main = controller.event_client.rate_limiter, client.rate_limiter
            assert bucket is not None and main is not None and bucket is not main
            assert (bucket.qps, bucket.burst, main.qps, main.burst) == (7.5, 9, 20.0, 30)
            assert controller.event_client.user_agent.endswith(" events")
            # The informers' lists and watches: a bucket of their own, the main one's size, the same User-Agent.
            caches = controller.cache_client.rate_limiter
            assert caches is not None and caches is not main and caches is not bucket
            assert (caches.qps, caches.burst) == (20.0, 30)
            assert controller.cache_client.user_agent == client.user_agent
            assert all(informer.reflector.client is controller.cache_client
                       for informer in controller.factory.informers())
            assert controller.options.slice_batch == batch
    finally:
        assert built.stop(5.0)
        assert all(controller.event_client.closed and controller.cache_client.closed
                   for controller in built.controllers)
        client.close()


# --- important events are never the ones dropped ---------------------------------------------------------------

def test_a_full_queue_drops_ordinary_events_never_important_ones(client: Client, kube: Kube) -> None:
    recorder = EventRecorder(client, "mxjob-controller", queue_size=2)   # not started: nothing drains the queue
    accepted = [recorder.event(JOB, NORMAL, "SuccessfulCreatePod", f"Created pod: my-job-worker-{i}")
                for i in range(3)]
    accepted.append(recorder.event(JOB, NORMAL, "MXJobSucceeded", "MXJob my-job is successfully completed.",
                                   important=True))
    accepted.append(recorder.event(JOB, WARNING, "MXJobRestarting", "MXJob my-job is restarting.", important=True))
    assert accepted == [True, True, False, True, True]
    assert (recorder.dropped, recorder.dropped_important) == (1, 0)
    recorder.start()
    assert recorder.stop(DEADLINE)
    written = sorted(events(kube), key=lambda e: int(e["metadata"]["resourceVersion"]))
    assert [e["reason"] for e in written] == ["MXJobSucceeded", "MXJobRestarting", "SuccessfulCreatePod",
                                              "SuccessfulCreatePod"], "important events first, then the rest"


def test_the_spam_filter_never_drops_an_important_event(client: Client, kube: Kube) -> None:
    """client-go's filter allows 25 events per object, then one per 5 minutes: a job that used them up on pod
    creations would lose its final event there. Ordinary ones are still filtered."""
    recorder = EventRecorder(client, "mxjob-controller").start()
    try:
        for i in range(25):
            recorder.event(JOB, NORMAL, f"Reason{i}", "uses up the object's burst")
        recorder.event(JOB, NORMAL, "Ordinary", "filtered")
        recorder.event(JOB, WARNING, "MXJobFailed", "MXJob my-job has failed.", important=True)
        assert recorder.flush(DEADLINE)
    finally:
        recorder.stop(5.0)
    reasons = {e["reason"] for e in events(kube)}
    assert "MXJobFailed" in reasons and "Ordinary" not in reasons and len(reasons) == 26


def test_the_important_queue_is_bounded_too_and_a_dropped_event_can_be_recorded_again(client: Client,
                                                                                       kube: Kube) -> None:
    recorder = EventRecorder(client, "mxjob-controller", important_queue_size=1)
    other = ObjectReference("kubeflow.org/v1", "MXJob", NS, "other", "5678-uid")
    assert recorder.event(JOB, NORMAL, "MXJobSucceeded", "MXJob my-job is successfully completed.", important=True)
    assert not recorder.event(other, NORMAL, "MXJobSucceeded", "MXJob other is successfully completed.",
                              important=True)
    assert recorder.dropped_important == 1
    recorder.start()
    assert recorder.flush(DEADLINE)
    # Forgotten when dropped: recorded once more (after a look-up), unlike the one that was written.
    assert recorder.event_once(other, NORMAL, "MXJobSucceeded", "MXJob other is successfully completed.")
    assert not recorder.event_once(JOB, NORMAL, "MXJobSucceeded", "MXJob my-job is successfully completed.")
    assert recorder.stop(DEADLINE)
    assert sorted(e["involvedObject"]["name"] for e in events(kube, "MXJobSucceeded")) == ["my-job", "other"]


def test_event_once_writes_nothing_when_the_api_has_the_event(apiserver: APIServer, client: Client,
                                                             kube: Kube) -> None:
    first = EventRecorder(client, "mxjob-controller").start()
    first.event(JOB, NORMAL, "MXJobSucceeded", "MXJob my-job is successfully completed.", important=True)
    assert first.stop(DEADLINE)
    second = EventRecorder(client, "mxjob-controller").start()   # another process: it remembers nothing
    try:
        assert second.event_once(JOB, NORMAL, "MXJobSucceeded", "MXJob my-job is successfully completed.")
        assert second.flush(DEADLINE)
    finally:
        second.stop(5.0)
    assert [e["count"] for e in events(kube, "MXJobSucceeded")] == [1]
    [lookup] = apiserver.audit.records(verb="list", resource="events", user_agent="events-test/")
    assert lookup.field_selector == "involvedObject.uid=1234-uid,reason=MXJobSucceeded"


# --- the terminal event after a restart ------------------------------------------------------------------------

def finish_without_controller(h: Harness, name: str, *, ago: float = 0.0) -> dict[str, Any]:
    """A job that succeeded ``ago`` seconds ago while no controller ran (its status written through the API)."""
    uid = h.create_job(mxjob(name, scheduler=0, server=0, worker=1))["metadata"]["uid"]
    at = rfc3339(time.time() - ago)
    status = {"conditions": [
        {"type": "Created", "status": "True", "reason": "MXJobCreated", "message": f"MXJob {name} is created.",
         "lastUpdateTime": at, "lastTransitionTime": at},
        {"type": "Succeeded", "status": "True", "reason": "MXJobSucceeded",
         "message": SUCCEEDED_MESSAGE.format(name), "lastUpdateTime": at, "lastTransitionTime": at}],
        "startTime": at, "completionTime": at}
    reply = h.kube.patch(jobs_path(NS, name) + "/status", {"status": status})
    assert reply.ok, reply.body
    return {"uid": uid, "at": at}


def lookups(h: Harness, uid: str) -> list[Any]:
    return [r for r in h.writes("list", "events") if f"involvedObject.uid={uid}" in r.field_selector]


def test_a_job_finished_while_no_controller_ran_gets_its_terminal_event_once(h: Harness) -> None:
    job = finish_without_controller(h, "j")
    controller = h.start()
    found = wait_for(lambda: h.events(NS, job["uid"], "MXJobSucceeded"), timeout=DEADLINE,
                     what="the terminal event")
    assert [(e["type"], e["message"], e["count"], e["firstTimestamp"]) for e in found] == [
        ("Normal", SUCCEEDED_MESSAGE.format("j"), 1, job["at"])], "as the live path writes it, dated the end"
    assert len(lookups(h, job["uid"])) == 1
    h.settle(controller, f"{NS}/j")                       # a later pass of this process: no look-up, no event
    assert controller.recorder.flush(DEADLINE)
    assert len(lookups(h, job["uid"])) == 1
    h.stop(controller)
    since = time.time()
    controller = h.start()                                # a restart: it looks once, and finds it
    h.settle(controller, f"{NS}/j")
    assert controller.recorder.flush(DEADLINE)
    assert [e["count"] for e in h.events(NS, job["uid"], "MXJobSucceeded")] == [1]
    assert len(lookups(h, job["uid"])) == 2
    assert h.writes("create", "events", since=since) == [] and h.writes("patch", "events", since=since) == []


def test_a_job_whose_event_died_queued_with_its_controller_gets_it_from_the_next(h: Harness) -> None:
    """The first controller finishes the job but cannot write events (the API refuses them), then dies with its
    event queued; the next one writes it, once."""
    refuse = h.apiserver.faults.add(FaultRule(verb="create", resource="events", code=500,
                                              user_agent=CONTROLLER_AGENT))
    first = h.start()
    queued: list[str] = []
    record = first.recorder.event

    def event(ref: Any, event_type: str, reason: str, message: str, **options: Any) -> bool:
        accepted = record(ref, event_type, reason, message, **options)
        if accepted and options.get("important"):
            queued.append(reason)
        return accepted
    first.recorder.event = event   # type: ignore[method-assign]
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1))
    [pod] = h.wait_children(NS, "j", 1)
    h.kubelet.run(NS, pod["metadata"]["name"])
    h.kubelet.succeed(NS, pod["metadata"]["name"])
    h.wait_condition(NS, "j", "Succeeded")
    uid = h.job(NS, "j")["metadata"]["uid"]
    wait_for(lambda: "MXJobSucceeded" in queued and refuse.fired > 0, timeout=DEADLINE,
             what="the terminal event queued, event writes refused")
    first.stop(0.5)                                        # killed: its queued events are never written
    h.controllers.remove(first)
    assert not h.events(NS, uid, "MXJobSucceeded")
    h.apiserver.faults.remove(refuse)
    second = h.start()
    found = wait_for(lambda: h.events(NS, uid, "MXJobSucceeded"), timeout=DEADLINE, what="the terminal event")
    condition = h.conditions(NS, "j")["Succeeded"]
    assert [(e["type"], e["reason"], e["message"]) for e in found] == [
        ("Normal", condition["reason"], condition["message"])]
    h.settle(second, f"{NS}/j")
    assert second.recorder.flush(DEADLINE)
    assert [e["count"] for e in h.events(NS, uid, "MXJobSucceeded")] == [1]


def test_a_terminal_event_written_before_a_restart_is_not_written_again(h: Harness) -> None:
    first = h.start()
    h.create_job(mxjob("j", scheduler=0, server=0, worker=1))
    [pod] = h.wait_children(NS, "j", 1)
    h.kubelet.run(NS, pod["metadata"]["name"])
    h.kubelet.fail(NS, pod["metadata"]["name"], exit_code=1)
    h.wait_condition(NS, "j", "Failed")
    uid = h.job(NS, "j")["metadata"]["uid"]
    h.wait_events(NS, uid, "MXJobFailed")   # recorded after the status write
    assert first.recorder.flush(DEADLINE)
    [written] = h.events(NS, uid, "MXJobFailed")
    assert lookups(h, uid) == [], "the process that wrote it never looks it up"
    h.stop(first)
    since = time.time()
    second = h.start()
    h.settle(second, f"{NS}/j")
    assert second.recorder.flush(DEADLINE)
    assert h.events(NS, uid, "MXJobFailed") == [written]
    assert len(lookups(h, uid)) == 1
    assert h.writes("create", "events", since=since) == []


def test_a_job_that_ended_long_ago_is_not_announced_again(h: Harness) -> None:
    """Past kube-apiserver's event TTL (an hour) its event may be gone on purpose: no look-up, no event."""
    job = finish_without_controller(h, "old", ago=2 * 3600)
    controller = h.start()
    h.settle(controller, f"{NS}/old")
    assert controller.recorder.flush(DEADLINE)
    assert h.events(NS, job["uid"], "MXJobSucceeded") == [] and lookups(h, job["uid"]) == []
