"""The event recorder against the embedded API server over HTTP: client-go's Event shape and names, repeats as
PATCHes of one Event, re-creation of an Event deleted meanwhile, retries of server errors, a bounded queue that
drops instead of blocking, and a stop that writes what is queued."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import pytest

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.runtime.client import Client, ClientConfig
from mxjob_controller.runtime.events import DEFAULT_QUEUE_BYTES, NORMAL, WARNING, EventRecorder, ObjectReference
from tests.support import Kube

JOB = ObjectReference("kubeflow.org/v1", "MXJob", "default", "my-job", "1234-uid", "7")
DEADLINE = 20.0


@pytest.fixture
def client(apiserver: APIServer) -> Iterator[Client]:
    c = Client(ClientConfig(host=apiserver.url, qps=-1), component="events-test", program="events-test",
               max_retries=0)
    yield c
    c.close()


@pytest.fixture
def recorder(client: Client) -> Iterator[EventRecorder]:
    r = EventRecorder(client, "mxjob-controller", retry_delay=0.05).start()
    yield r
    r.stop(5.0)


def events(kube: Kube, reason: str | None = None) -> list[dict]:
    reply = kube.get("/api/v1/namespaces/default/events")
    assert reply.ok, reply.body
    return [e for e in reply.body["items"] if reason is None or e["reason"] == reason]


def test_an_event_has_client_go_shape(kube: Kube, recorder: EventRecorder) -> None:
    before = time.time()
    assert recorder.event(JOB, NORMAL, "SuccessfulCreatePod", "Created pod: my-job-worker-0")
    assert recorder.flush(DEADLINE)
    [event] = events(kube)
    assert re.fullmatch(r"my-job\.[0-9a-f]+", event["metadata"]["name"])
    assert int(event["metadata"]["name"].split(".")[1], 16) / 1e9 >= before - 1
    assert event["metadata"]["namespace"] == "default"
    assert event["involvedObject"] == {"kind": "MXJob", "namespace": "default", "name": "my-job", "uid": "1234-uid",
                                       "apiVersion": "kubeflow.org/v1", "resourceVersion": "7"}
    assert (event["reason"], event["message"], event["type"], event["count"]) == (
        "SuccessfulCreatePod", "Created pod: my-job-worker-0", "Normal", 1)
    assert event["source"] == {"component": "mxjob-controller"}
    assert event["reportingComponent"] == "mxjob-controller"
    assert event["firstTimestamp"] == event["lastTimestamp"]


def test_repeats_bump_the_count_of_one_event(apiserver: APIServer, kube: Kube, recorder: EventRecorder) -> None:
    for _ in range(3):
        recorder.event(JOB, WARNING, "FailedCreatePod", "Error creating: quota exceeded")
    recorder.event(JOB, WARNING, "FailedCreatePod", "Error creating: another message")
    assert recorder.flush(DEADLINE)
    found = sorted(events(kube, "FailedCreatePod"), key=lambda e: e["message"])
    assert [(e["message"], e["count"]) for e in found] == [
        ("Error creating: another message", 1), ("Error creating: quota exceeded", 3)]
    patches = apiserver.audit.records(verb="patch", resource="events", user_agent="events-test/")
    assert len(patches) == 2


def test_a_repeat_of_a_deleted_event_creates_it_again(kube: Kube, recorder: EventRecorder) -> None:
    recorder.event(JOB, NORMAL, "MXJobRunning", "MXJob my-job is running.")
    assert recorder.flush(DEADLINE)
    [first] = events(kube)
    assert kube.delete(f"/api/v1/namespaces/default/events/{first['metadata']['name']}").ok
    recorder.event(JOB, NORMAL, "MXJobRunning", "MXJob my-job is running.")
    assert recorder.flush(DEADLINE)
    [again] = events(kube)
    assert again["metadata"]["name"] == first["metadata"]["name"] and again["count"] == 2


def test_server_errors_are_retried(apiserver: APIServer, kube: Kube, recorder: EventRecorder) -> None:
    rule = apiserver.faults.add(FaultRule(verb="create", resource="events", code=500, count=2))
    recorder.event(JOB, NORMAL, "ExitedWithCode", "Pod: default.my-job-worker-0 exited with code 0")
    assert recorder.flush(DEADLINE)
    assert rule.fired == 2
    assert [e["reason"] for e in events(kube)] == ["ExitedWithCode"]


def test_a_rejected_event_is_dropped_and_the_next_is_written(apiserver: APIServer, kube: Kube,
                                                             recorder: EventRecorder) -> None:
    rule = apiserver.faults.add(FaultRule(verb="create", resource="events", code=422, count=1))
    recorder.event(JOB, NORMAL, "First", "refused by the server")
    recorder.event(JOB, NORMAL, "Second", "written")
    assert recorder.flush(DEADLINE)
    assert rule.fired == 1
    assert [e["reason"] for e in events(kube)] == ["Second"]


def test_a_full_queue_drops_without_blocking(client: Client, kube: Kube) -> None:
    recorder = EventRecorder(client, "mxjob-controller", queue_size=2)  # not started: nothing drains the queue
    started = time.monotonic()
    accepted = [recorder.event(JOB, NORMAL, "Reason", f"message {i}") for i in range(4)]
    assert time.monotonic() - started < 1.0
    assert accepted == [True, True, False, False] and recorder.dropped == 2
    recorder.start()
    assert recorder.stop(DEADLINE)
    assert sorted(e["message"] for e in events(kube)) == ["message 0", "message 1"]


def test_the_default_queue_holds_a_burst_past_client_gos_thousand(client: Client) -> None:
    """A 300-job burst records thousands of ordinary events at once; client-go's bound of 1,000 dropped most of
    them. The default bound is by memory (16 MiB), and a burst this size is far from it."""
    recorder = EventRecorder(client, "mxjob-controller")  # not started: every event stays queued
    refs = [ObjectReference("kubeflow.org/v1", "MXJob", "default", f"job-{i}", f"uid-{i}", "1") for i in range(300)]
    accepted = [recorder.event(ref, NORMAL, "SuccessfulCreatePod", f"Created pod: {ref.name}-worker-{n}")
                for n in range(10) for ref in refs]
    assert all(accepted) and recorder.dropped == 0
    assert 3000 * 1280 <= recorder.queued_bytes() <= DEFAULT_QUEUE_BYTES


def test_past_its_bytes_the_ordinary_queue_drops_and_counts(client: Client, kube: Kube) -> None:
    recorder = EventRecorder(client, "mxjob-controller", queue_bytes=8 * 1024)  # not started
    accepted = [recorder.event(JOB, NORMAL, f"Reason{i}", f"message {i}") for i in range(20)]
    kept = accepted.count(True)
    assert 3 <= kept < 8 and accepted == [True] * kept + [False] * (20 - kept)
    assert recorder.dropped == 20 - kept and recorder.queued_bytes() <= 8 * 1024
    assert recorder.event(JOB, WARNING, "Failed", "an important event is not bound by the ordinary bytes",
                          important=True)
    recorder.start()
    assert recorder.stop(DEADLINE)
    assert recorder.queued_bytes() == 0
    assert len(events(kube)) == kept + 1


def test_stop_writes_what_is_queued_then_refuses_more(client: Client, kube: Kube) -> None:
    others = set(threading.enumerate())   # a previous test's recorder may still be stopping under load
    recorder = EventRecorder(client, "mxjob-controller").start()
    for i in range(20):
        recorder.event(JOB, NORMAL, f"Reason{i}", "queued before stop")
    assert recorder.stop(DEADLINE)
    assert len(events(kube)) == 20
    assert not recorder.event(JOB, NORMAL, "Late", "after stop")
    assert not any(t.name.startswith("events-mxjob-controller-") and t.is_alive() and t not in others
                   for t in threading.enumerate())


def test_a_stop_ends_writes_waiting_for_the_event_budget_with_one_line(client: Client, kube: Kube,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    """On a client with a small budget (the kubelet's ``--event-qps``) the backlog left at the stop's deadline is
    neither waited out nor logged event by event: the writes waiting for a token end, and one line counts them."""
    budget = client.sibling(None, qps=0.5, burst=1)   # one event now, then one each 2 s
    recorder = EventRecorder(budget, "kubelet", writers=2).start()
    try:
        for i in range(12):
            recorder.event(JOB, NORMAL, f"Reason{i}", "queued before stop")
        started = time.monotonic()
        assert not recorder.stop(1.0)   # not all written
        took = time.monotonic() - started
    finally:
        budget.close()
    assert took < 3.0, f"the stop waited {took:.1f}s for tokens"
    assert 1 <= len(events(kube)) < 12
    unable = [r for r in caplog.records if "unable to write event" in r.getMessage()]
    assert not unable, [r.getMessage() for r in unable]
    assert any("not written before the deadline" in r.getMessage() for r in caplog.records)


def test_unknown_event_types_are_refused(recorder: EventRecorder) -> None:
    assert not recorder.event(JOB, "Info", "Reason", "not a Kubernetes event type")
