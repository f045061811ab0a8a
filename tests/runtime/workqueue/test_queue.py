"""The plain work queue (runtime/workqueue/queue.py): fair, stingy, never concurrent per item, under threads;
shutdown (with and without drain); and end to end with keys fed by a watch of the embedded API server."""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict

import pytest

from mxjob_controller.runtime.workqueue import (
    QueueShutDownError,
    RateLimitingQueue,
    WorkQueue,
)
from tests.runtime.workqueue.support import drain
from tests.support import Kube, pod, wait_for

# -- the plain queue ---------------------------------------------------------------------------------------------

def test_fifo_and_an_item_queued_twice_is_handed_out_once():
    q = WorkQueue()
    for item in ["a", "b", "a", "c", "b", "a"]:
        q.add(item)
    assert len(q) == 3
    assert drain(q) == ["a", "b", "c"]
    with pytest.raises(TimeoutError):
        q.get(timeout=0.05)


def test_add_first_goes_ahead_once_and_keeps_the_other_guarantees():
    q = WorkQueue()
    for item in ["a", "b"]:
        q.add(item)
    q.add_first("new")
    q.add_first("b")   # already queued: stays where it is, handed out once
    assert drain(q) == ["new", "a", "b"]
    q.add("x")
    held = q.get(timeout=1)
    q.add_first("x")   # held by a worker: after done(), not concurrently
    q.add("y")
    q.done(held)
    assert drain(q) == ["y", "x"]


def test_an_item_added_while_processing_waits_for_done_then_goes_to_the_back():
    q = WorkQueue()
    q.add("a")
    q.add("b")
    assert q.get(timeout=1) == "a"
    q.add("a")  # dirty again while a worker holds it
    q.add("c")
    assert len(q) == 2  # not handed out a second time meanwhile
    assert q.get(timeout=1) == "b"
    assert q.get(timeout=1) == "c"
    with pytest.raises(TimeoutError):
        q.get(timeout=0.05)  # "a" is still being processed
    q.done("b")
    q.done("c")
    q.done("a")
    assert q.get(timeout=1) == "a"
    q.done("a")
    q.done("a")  # done twice, or for an item nobody holds: nothing happens
    assert len(q) == 0


def test_many_threads_never_process_a_key_concurrently_and_lose_no_add():
    """8 workers, 4 producers, 16 keys: per key the processing intervals never overlap, and every add is followed
    by a processing that started after it (nothing lost to coalescing)."""
    q = WorkQueue()
    keys = [f"ns/job-{i}" for i in range(16)]
    ticket = itertools.count()  # a global order of events (next() is atomic under the GIL)
    lock = threading.Lock()
    intervals: dict[str, list[tuple[int, int]]] = defaultdict(list)
    last_add: dict[str, int] = {}
    in_flight: set[str] = set()
    max_in_flight = 0
    stop = threading.Event()

    def worker() -> None:
        nonlocal max_in_flight
        while True:
            try:
                key = q.get(timeout=0.2)
            except TimeoutError:
                if stop.is_set():
                    return
                continue
            start = next(ticket)
            with lock:
                in_flight.add(key)
                max_in_flight = max(max_in_flight, len(in_flight))
            time.sleep(0.0005)  # "work", so that workers overlap
            with lock:
                in_flight.discard(key)
                intervals[key].append((start, next(ticket)))
            q.done(key)

    def producer(seed: int) -> None:
        for i in range(1000):
            key = keys[(i * 7 + seed * 3) % len(keys)]
            before = next(ticket)
            with lock:
                last_add[key] = max(last_add.get(key, -1), before)
            q.add(key)

    workers = [threading.Thread(target=worker, name=f"test-worker-{i}") for i in range(8)]
    producers = [threading.Thread(target=producer, args=(s,), name=f"test-producer-{s}") for s in range(4)]
    for t in workers + producers:
        t.start()
    for t in producers:
        t.join(30)
    wait_for(lambda: all(intervals[k] and intervals[k][-1][0] > last_add[k] for k in last_add), timeout=30,
             what="every key processed after its last add")
    stop.set()
    for t in workers:
        t.join(10)
    assert not any(t.is_alive() for t in workers + producers)

    for key, spans in intervals.items():
        spans.sort()
        for (_, end), (start, _) in itertools.pairwise(spans):
            assert start > end, f"{key} was processed by two workers at once"
    assert max_in_flight >= 2, "the workers never overlapped: the test proved nothing"
    assert sum(len(s) for s in intervals.values()) <= 4000


def test_shutdown_wakes_every_waiting_worker():
    q = WorkQueue()
    outcomes: list[str] = []
    started = threading.Barrier(5)

    def worker() -> None:
        started.wait(5)
        try:
            q.get(timeout=30)
            outcomes.append("item")
        except QueueShutDownError:
            outcomes.append("shutdown")

    threads = [threading.Thread(target=worker, name=f"test-getter-{i}") for i in range(4)]
    for t in threads:
        t.start()
    started.wait(5)
    time.sleep(0.1)  # let them block in get(); if they have not yet, they still must see the shutdown
    began = time.monotonic()
    q.shutdown()
    for t in threads:
        t.join(5)
    assert outcomes == ["shutdown"] * 4
    assert time.monotonic() - began < 5  # woken, not timed out (their get() waits up to 30 s)
    assert q.shutting_down


def test_after_shutdown_queued_items_are_still_handed_out_and_new_adds_ignored():
    q = WorkQueue()
    q.add("a")
    q.add("b")
    q.shutdown()
    q.add("c")
    assert q.get(timeout=1) == "a"
    assert q.get(timeout=1) == "b"
    with pytest.raises(QueueShutDownError):
        q.get(timeout=1)


def test_shutdown_with_drain_waits_for_in_flight_items():
    q = WorkQueue()
    q.add("a")
    item = q.get(timeout=1)
    result: list[bool] = []
    drainer = threading.Thread(target=lambda: result.append(q.shutdown_with_drain(10)), name="test-drainer")
    drainer.start()
    drainer.join(0.1)
    assert drainer.is_alive() and not result  # "a" is still being processed
    q.add("b")
    assert len(q) == 0  # shutting down: ignored
    q.done(item)
    drainer.join(5)
    assert result == [True]
    with pytest.raises(QueueShutDownError):
        q.get(timeout=1)


def test_shutdown_with_drain_gives_up_at_its_deadline_or_on_shutdown():
    q = WorkQueue()
    q.add("a")
    q.get(timeout=1)  # never done
    began = time.monotonic()
    assert q.shutdown_with_drain(0.1) is False
    assert time.monotonic() - began < 5

    q2 = WorkQueue()
    q2.add("a")
    q2.get(timeout=1)
    result: list[bool] = []
    drainer = threading.Thread(target=lambda: result.append(q2.shutdown_with_drain(30)), name="test-drainer")
    drainer.start()
    wait_for(lambda: q2.shutting_down, what="drain started")
    q2.shutdown()  # as client-go: a plain shutdown stops a drain from waiting
    drainer.join(5)
    assert result == [False]


# -- end to end: keys from a watch of the embedded API server ----------------------------------------------------

PODS = "/api/v1/namespaces/default/pods"


class WatchFeeder:
    """Adds ``namespace/name`` to a queue for every event of a pod watch, like an informer's handlers."""

    def __init__(self, url: str, q: WorkQueue, resource_version: str) -> None:
        self.events = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._kube = Kube(url, user_agent="test-feeder")
        self._thread = threading.Thread(target=self._run, args=(q, resource_version), name="test-watch-feeder")
        self._thread.start()

    def _run(self, q: WorkQueue, resource_version: str) -> None:
        try:
            for ev in self._kube.watch(PODS, timeout=30, resourceVersion=resource_version,
                                       allowWatchBookmarks="true", timeoutSeconds=60):
                if self._stop.is_set():
                    return
                if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    meta = ev["object"]["metadata"]
                    self.events += 1
                    q.add(f"{meta['namespace']}/{meta['name']}")
        except Exception as e:  # kept for stop() to report
            self.error = e

    def stop(self) -> None:
        self._stop.set()  # seen at the next event at the latest: bookmarks come every 0.2 s
        self._thread.join(10)
        self._kube.close()
        assert not self._thread.is_alive(), "the watch did not stop"
        assert self.error is None, f"the watch failed: {self.error!r}"


def test_keys_fed_by_a_watch_are_processed_one_at_a_time_and_end_on_the_final_state(apiserver, kube):
    names = [f"p{i}" for i in range(5)]
    for name in names:
        assert kube.post(PODS, pod(name)).status == 201
    start = kube.get(PODS).body["metadata"]["resourceVersion"]
    q = RateLimitingQueue("pods")
    feeder = WatchFeeder(apiserver.url, q, start)
    ticket = itertools.count()
    lock = threading.Lock()
    seen: dict[str, list[tuple[int, int, str]]] = defaultdict(list)  # key -> (start, end, resourceVersion)

    def worker(i: int) -> None:
        reader = Kube(apiserver.url, user_agent=f"test-worker-{i}")
        try:
            while True:
                try:
                    key = q.get(timeout=1)
                except TimeoutError:
                    continue
                except QueueShutDownError:
                    return
                begin = next(ticket)
                namespace, name = key.split("/")
                got = reader.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
                end = next(ticket)
                with lock:
                    seen[key].append((begin, end, got.body["metadata"]["resourceVersion"]))
                q.forget(key)
                q.done(key)
        finally:
            reader.close()

    workers = [threading.Thread(target=worker, args=(i,), name=f"test-worker-{i}") for i in range(4)]
    for t in workers:
        t.start()
    final: dict[str, str] = {}

    def patcher(batch: list[str]) -> None:
        for gen in range(15):
            for name in batch:
                reply = kube.patch(f"{PODS}/{name}", {"metadata": {"labels": {"gen": str(gen)}}})
                assert reply.status == 200, reply.body
                final[f"default/{name}"] = reply.body["metadata"]["resourceVersion"]

    patchers = [threading.Thread(target=patcher, args=(names[i::2],), name=f"test-patcher-{i}") for i in range(2)]
    for t in patchers:
        t.start()
    for t in patchers:
        t.join(60)
    wait_for(lambda: feeder.error or all(seen[k] and seen[k][-1][2] == rv for k, rv in final.items()),
             timeout=30, what="every pod's final state processed")
    feeder.stop()
    assert q.shutdown_with_drain(10)
    for t in workers:
        t.join(10)
    assert feeder.events == 75
    for key, spans in seen.items():
        for (_, end, _), (begin, _, _) in itertools.pairwise(sorted(spans)):
            assert begin > end, f"{key} was processed by two workers at once"
