"""Events that keep up (issue 35), against the embedded API server over HTTP, read back with the official client:

- many similar events about one object (one reason, different messages) become one Event with a count and kube's
  "(combined from similar events): " message, as client-go's aggregator makes them;
- several writers share the objects: each object's events keep their order, and a job's terminal event goes before
  the backlog of its writer, and after at most a few writes of the others;
- the ordinary queue's bound is exact: a burst that fits is written whole, none dropped; one event more is dropped
  and counted.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.runtime.client import Client, ClientConfig
from mxjob_controller.runtime.events import NORMAL, EventRecorder, ObjectReference, shard_of
from tests.support import Kube, wait_for

NS = "default"
DEADLINE = 30.0
AGENT = "events-writers-test/"


@pytest.fixture
def client(apiserver: APIServer) -> Iterator[Client]:
    c = Client(ClientConfig(host=apiserver.url, qps=-1), component="events-writers-test",
               program="events-writers-test", max_retries=0)
    yield c
    c.close()


def job(i: int) -> ObjectReference:
    return ObjectReference("kubeflow.org/v1", "MXJob", NS, f"job-{i}", f"uid-{i}", "1")


def events(kube: Kube) -> list[dict[str, Any]]:
    reply = kube.get(f"/api/v1/namespaces/{NS}/events")
    assert reply.ok, reply.body
    return sorted(reply.body["items"], key=lambda e: int(e["metadata"]["resourceVersion"]))


def test_many_similar_events_on_one_object_become_one_event_with_a_count(client: Client, kube: Kube) -> None:
    """client-go's aggregator: the tenth distinct message of one reason about one object (within 10 minutes) and
    every later one are written as one Event, "(combined from similar events): <latest message>", whose count
    says how many it stands for."""
    recorder = EventRecorder(client, "mxjob-controller", writers=3).start()
    try:
        for i in range(15):
            assert recorder.event(job(0), NORMAL, "SuccessfulCreatePod", f"Created pod: job-0-worker-{i}")
        assert recorder.flush(DEADLINE)
    finally:
        recorder.stop(5.0)
    written = events(kube)
    assert [(e["message"], e["count"]) for e in written] == [
        *((f"Created pod: job-0-worker-{i}", 1) for i in range(9)),
        ("(combined from similar events): Created pod: job-0-worker-14", 6)]
    combined = written[-1]
    assert (combined["reason"], combined["type"], combined["involvedObject"]["uid"]) == (
        "SuccessfulCreatePod", NORMAL, "uid-0")
    assert combined["firstTimestamp"] <= combined["lastTimestamp"]


def test_each_object_keeps_its_order_and_the_objects_are_shared_by_the_writers(client: Client, kube: Kube) -> None:
    writers = 4
    recorder = EventRecorder(client, "mxjob-controller", writers=writers)   # not started: the burst queues whole
    for step in range(3):
        for i in range(40):
            recorder.event(job(i), NORMAL, f"Step{step}", f"step {step} of job-{i}")
    assert {shard_of(job(i).to_dict(), writers) for i in range(40)} == set(range(writers))
    others = set(threading.enumerate())   # another test's recorder in this process may still be stopping
    recorder.start()
    mine = [t for t in threading.enumerate() if t not in others and t.name.startswith("events-mxjob-controller-")]
    assert len(mine) == writers
    assert recorder.stop(DEADLINE)
    written = events(kube)
    assert len(written) == 120
    for i in range(40):
        assert [e["reason"] for e in written if e["involvedObject"]["name"] == f"job-{i}"] == [
            "Step0", "Step1", "Step2"]
    assert not any(t.is_alive() for t in mine)


def test_a_terminal_event_goes_before_the_backlog_of_its_writer(apiserver: APIServer, client: Client,
                                                               kube: Kube) -> None:
    writers = 4
    recorder = EventRecorder(client, "mxjob-controller", writers=writers)   # not started: a backlog
    for i in range(200):
        recorder.event(job(i), NORMAL, "SuccessfulCreatePod", f"Created pod: job-{i}-worker-0")
    done = job(7)
    assert recorder.event(done, NORMAL, "MXJobSucceeded", "MXJob job-7 is successfully completed.", important=True)
    recorder.start()
    assert recorder.stop(DEADLINE)
    assert len(apiserver.audit.records(verb="create", resource="events", user_agent=AGENT)) == 201
    written = events(kube)
    terminal = next(e for e in written if e["reason"] == "MXJobSucceeded")
    shard = shard_of(terminal["involvedObject"], writers)
    same_writer = [e for e in written if shard_of(e["involvedObject"], writers) == shard]
    assert same_writer[0] is terminal, "first of its writer's events, ahead of the 50-odd queued before it"


def test_a_terminal_event_recorded_during_a_backlog_waits_a_few_writes_only(client: Client, kube: Kube) -> None:
    """A slow events budget (20 writes/s) and a backlog of 200 events being written: a job's terminal event is
    written after the writes in flight and a few more of the other writers (tokens), not after the backlog (10 s)."""
    writers = 4
    slow = client.sibling("events-writers-test", qps=20, burst=1)
    recorder = EventRecorder(slow, "mxjob-controller", writers=writers).start()
    try:
        for i in range(200):
            recorder.event(job(i), NORMAL, "SuccessfulCreatePod", f"Created pod: job-{i}-worker-0")
        wait_for(lambda: len(events(kube)) >= 10, timeout=DEADLINE, what="the backlog being written")
        recorder.event(job(500), NORMAL, "MXJobSucceeded", "MXJob job-500 is successfully completed.",
                       important=True)
        before = len(events(kube))
        wait_for(lambda: any(e["reason"] == "MXJobSucceeded" for e in events(kube)), timeout=DEADLINE,
                 what="the terminal event")
        written = events(kube)
        ahead = [e["reason"] for e in written].index("MXJobSucceeded") - before
        assert ahead <= 3 * writers, f"{ahead} backlog events were written before the terminal one"
        assert len(written) < 150, "the backlog was still being written"
    finally:
        recorder.stop(0.5)
        slow.close()


def test_a_burst_that_fits_the_bound_is_written_whole_and_one_more_is_dropped(client: Client, kube: Kube) -> None:
    """The bound is by the events' bytes: measured on a burst of 240 events (60 jobs' creations), a queue of
    exactly that size takes the whole burst, drops nothing, and writes it all; the one event past it is dropped
    and counted."""
    def burst(recorder: EventRecorder) -> list[bool]:
        return [recorder.event(job(i), NORMAL, f"SuccessfulCreate{kind}", f"Created {kind.lower()}: job-{i}-{n}")
                for i in range(60) for kind in ("Pod", "Service") for n in range(2)]

    probe = EventRecorder(client, "mxjob-controller")   # never started: measures the burst's bytes
    assert all(burst(probe))
    size = probe.queued_bytes()
    recorder = EventRecorder(client, "mxjob-controller", queue_bytes=size)   # not started: nothing drains it
    assert all(burst(recorder)) and recorder.dropped == 0 and recorder.queued_bytes() == size
    assert not recorder.event(job(0), NORMAL, "SuccessfulCreatePod", "Created pod: one past the bound")
    assert recorder.dropped == 1
    recorder.start()
    assert recorder.stop(DEADLINE)
    written = events(kube)
    assert len(written) == 240 and all(e["count"] == 1 for e in written)
    assert "Created pod: one past the bound" not in {e["message"] for e in written}
