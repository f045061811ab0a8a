"""The work queue (runtime/workqueue): client-go's guarantees, checked under threads, with a fake clock for every
timing, and end to end with keys fed by a watch of the embedded API server."""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from mxjob_controller.runtime.clock import FakeClock
from mxjob_controller.runtime.controller import Controller
from mxjob_controller.runtime.workqueue import (
    BucketRateLimiter,
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    QueueShutDownError,
    RateLimitingQueue,
    WorkQueue,
    default_controller_rate_limiter,
)
from mxjob_controller.runtime.workqueue.delaying_queue import MAX_WAIT
from tests.support import Kube, pod, wait_for

T0 = 1000.0  # FakeClock's start


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def drain(q: WorkQueue) -> list:
    """Everything queued now, in order, each marked done."""
    items = []
    while len(q):
        item = q.get(timeout=1)
        items.append(item)
        q.done(item)
    return items


def settled(clock: FakeClock, *deadlines: float) -> None:
    """Wait until the timer thread has seen the clock's current time and sleeps until ``deadlines``."""
    wait_for(lambda: clock.sleepers() == list(deadlines), timeout=10, what=f"timer asleep until {deadlines}")


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


# -- delays ------------------------------------------------------------------------------------------------------

def test_add_after_adds_in_time_order_and_never_early(clock):
    q = DelayingQueue(clock=clock)
    try:
        q.add_after("a", 3)
        q.add_after("b", 1)
        q.add_after("c", 2)
        q.add_after("now", 0)
        assert drain(q) == ["now"]
        settled(clock, T0 + 1)
        clock.step(0.75)
        settled(clock, T0 + 1)
        assert len(q) == 0
        clock.step(0.25)
        settled(clock, T0 + 2)
        assert drain(q) == ["b"]
        clock.step(5)  # both "c" and "a" are due: they arrive in their time order
        settled(clock, T0 + 6 + MAX_WAIT)
        assert drain(q) == ["c", "a"]
    finally:
        q.shutdown()


def test_add_after_keeps_the_earliest_time_and_adds_once(clock):
    q = DelayingQueue(clock=clock)
    try:
        q.add_after("x", 60)
        q.add_after("x", 5)  # earlier: wins
        q.add_after("x", 30)  # later: ignored
        settled(clock, T0 + 5)
        clock.step(5)
        settled(clock, T0 + 5 + MAX_WAIT)
        assert drain(q) == ["x"]
        clock.step(100)  # past 30 and 60: nothing more comes
        settled(clock, T0 + 105 + MAX_WAIT)
        assert len(q) == 0
    finally:
        q.shutdown()


def test_a_due_item_already_queued_is_coalesced(clock):
    q = DelayingQueue(clock=clock)
    try:
        q.add("x")
        q.add_after("x", 1)
        clock.step(1)
        settled(clock, T0 + 1 + MAX_WAIT)
        assert drain(q) == ["x"]
    finally:
        q.shutdown()


def test_shutdown_stops_the_timer_thread_and_drops_waiting_items(clock):
    q = DelayingQueue("stopper", clock=clock)
    q.add_after("x", 1)
    timers = [t for t in threading.enumerate() if t.name == "workqueue-delay:stopper"]
    assert len(timers) == 1
    q.shutdown()
    assert not timers[0].is_alive()
    clock.step(2)
    q.add_after("y", 0)
    with pytest.raises(QueueShutDownError):
        q.get(timeout=1)


def test_the_timer_thread_starts_with_the_first_delayed_add_only():
    """A queue (or a controller) created and never used for delays leaves no thread behind."""
    q = DelayingQueue("lazy")
    q.add("now")
    q.add_after("now-too", 0)
    assert not [t for t in threading.enumerate() if t.name == "workqueue-delay:lazy"]
    Controller("never-started", lambda key: None)  # builds its rate-limited queue
    assert not [t for t in threading.enumerate() if t.name.startswith("workqueue-delay:never-started")]
    q.add_after("later", 60)
    assert [t for t in threading.enumerate() if t.name == "workqueue-delay:lazy"]
    assert q.shutdown(timeout=5)
    assert not [t for t in threading.enumerate() if t.name == "workqueue-delay:lazy"]
    assert DelayingQueue("unused").shutdown(timeout=0)  # nothing to stop


class StallingClock(FakeClock):
    """A fake clock that stalls the timer thread (and only it) inside ``now()`` until released: a timer thread
    stuck where the queue cannot interrupt it."""

    def __init__(self) -> None:
        super().__init__(T0)
        self.stall = threading.Event()
        self.stalled = threading.Event()
        self.release = threading.Event()

    def now(self) -> float:
        if self.stall.is_set() and threading.current_thread().name.startswith("workqueue-delay:"):
            self.stalled.set()
            self.release.wait(30)
        return super().now()


@pytest.mark.parametrize("how", ["shutdown", "shutdown_with_drain"])
def test_shutdown_waits_for_a_stuck_timer_thread_no_longer_than_its_deadline(how):
    clock = StallingClock()
    q = DelayingQueue(f"stuck-{how}", clock=clock)
    q.add_after("x", 5)
    settled(clock, T0 + 5)
    clock.stall.set()
    clock.step(1)  # wakes the timer, which stalls reading the time
    assert clock.stalled.wait(10)
    started = time.monotonic()
    assert getattr(q, how)(timeout=0.3) is False
    assert time.monotonic() - started < 1.5  # not a fixed 5 s
    clock.release.set()
    wait_for(lambda: not [t for t in threading.enumerate() if t.name == f"workqueue-delay:stuck-{how}"],
             what="the timer thread ends once released")


# -- rate limiting -----------------------------------------------------------------------------------------------

def test_exponential_backoff_is_5ms_doubling_to_1000s_and_forget_resets_it():
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("k") for _ in range(22)]
    expected = [0.005 * 2 ** i for i in range(18)] + [1000.0] * 4
    assert delays == expected
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[17] == 655.36
    assert limiter.num_requeues("k") == 22
    assert limiter.when("other") == 0.005  # per item
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0
    assert [limiter.when("k") for _ in range(3)] == [0.005, 0.01, 0.02]
    for _ in range(5000):  # no overflow however often it fails
        assert limiter.when("k") <= 1000.0


def test_token_bucket_allows_a_burst_of_100_then_10_per_second(clock):
    bucket = BucketRateLimiter(10, 100, clock)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    assert bucket.when("x") == 0.1
    assert bucket.when("y") == 0.2  # each caller reserves its own token
    clock.step(0.25)  # 2.5 tokens back: the debt of 2 is paid, half a token left
    assert bucket.when("z") == pytest.approx(0.05)
    clock.step(1000)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100  # refilled to the burst, no more
    assert bucket.when("x") == 0.1
    assert bucket.num_requeues("x") == 0


def test_default_rate_limiter_is_the_max_of_both(clock):
    limiter = default_controller_rate_limiter(clock)
    assert [limiter.when("k") for _ in range(3)] == [0.005, 0.01, 0.02]
    for i in range(97):
        limiter.when(f"other-{i}")  # the bucket's burst is used up by now
    assert limiter.when("fresh") == 0.1  # the bucket's delay beats the item's 5 ms
    assert limiter.num_requeues("k") == 3
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0


def test_rate_limited_requeues_wait_5_10_20_ms_until_forgotten(clock):
    registry = CollectorRegistry()
    q = RateLimitingQueue("retrying", registry=registry, clock=clock)
    try:
        for delay in [0.005, 0.01, 0.02]:
            began = clock.now()
            q.add_rate_limited("k")
            settled(clock, began + delay)
            assert len(q) == 0
            clock.step(delay)
            settled(clock, began + delay + MAX_WAIT)
            assert drain(q) == ["k"]
        assert q.num_requeues("k") == 3
        q.forget("k")
        assert q.num_requeues("k") == 0
        began = clock.now()
        q.add_rate_limited("k")
        settled(clock, began + 0.005)
        labels = {"name": "retrying", "controller": "retrying"}
        assert registry.get_sample_value("workqueue_retries_total", labels) == 4
    finally:
        q.shutdown()


# -- metrics -----------------------------------------------------------------------------------------------------

def test_metrics_after_known_operations(clock):
    registry = CollectorRegistry()
    q = WorkQueue("jobs", registry=registry, controller="mxjob", clock=clock)
    labels = {"name": "jobs", "controller": "mxjob"}

    def value(metric: str) -> float | None:
        return registry.get_sample_value(metric, labels)

    q.add("a")
    q.add("b")
    q.add("a")  # coalesced: not an add
    assert value("workqueue_adds_total") == 2
    assert value("workqueue_depth") == 2
    clock.step(2)
    a = q.get(timeout=1)
    assert value("workqueue_depth") == 1
    assert value("workqueue_queue_duration_seconds_count") == 1
    assert value("workqueue_queue_duration_seconds_sum") == 2
    clock.step(3)
    assert value("workqueue_unfinished_work_seconds") == 3
    assert value("workqueue_longest_running_processor_seconds") == 3
    b = q.get(timeout=1)
    clock.step(1)
    assert value("workqueue_unfinished_work_seconds") == 4 + 1
    assert value("workqueue_longest_running_processor_seconds") == 4
    q.done(a)
    assert value("workqueue_work_duration_seconds_count") == 1
    assert value("workqueue_work_duration_seconds_sum") == 4
    assert value("workqueue_unfinished_work_seconds") == 1
    q.done(b)
    assert value("workqueue_unfinished_work_seconds") == 0
    assert value("workqueue_longest_running_processor_seconds") == 0
    assert value("workqueue_queue_duration_seconds_sum") == 2 + 5
    assert value("workqueue_work_duration_seconds_sum") == 4 + 1
    # client-go's buckets: 1e-8 s to 10 s by factors of ten; 2 s and 5 s both fall in (1, 10]
    assert registry.get_sample_value("workqueue_queue_duration_seconds_bucket", {**labels, "le": "1.0"}) == 0
    assert registry.get_sample_value("workqueue_queue_duration_seconds_bucket", {**labels, "le": "10.0"}) == 2
    text = generate_latest(registry).decode()
    for family in ["workqueue_depth", "workqueue_adds_total", "workqueue_queue_duration_seconds",
                   "workqueue_work_duration_seconds", "workqueue_unfinished_work_seconds",
                   "workqueue_longest_running_processor_seconds", "workqueue_retries_total"]:
        assert f"# TYPE {family.removesuffix('_total')} " in text or f"# TYPE {family} " in text, family
    assert 'le="9.999999999999999e-06"' in text  # the float bounds kube-controller-manager exposes
    assert 'workqueue_depth{controller="mxjob",name="jobs"} 0.0' in text
    q.shutdown()
    assert value("workqueue_unfinished_work_seconds") is None  # a shut-down queue stops reporting it
    assert value("workqueue_adds_total") == 2


def test_queues_share_a_registry_but_never_the_global_one(clock):
    registry = CollectorRegistry()
    first = WorkQueue("first", registry=registry, clock=clock)
    second = DelayingQueue("second", registry=registry, clock=clock)
    try:
        first.add("x")
        second.add_after("y", 0)
        assert registry.get_sample_value("workqueue_adds_total", {"name": "first", "controller": "first"}) == 1
        assert registry.get_sample_value("workqueue_adds_total", {"name": "second", "controller": "second"}) == 1
        assert registry.get_sample_value("workqueue_retries_total", {"name": "second", "controller": "second"}) == 1
        with pytest.raises(ValueError, match="already reports"):
            WorkQueue("first", registry=registry)
        assert prometheus_client.REGISTRY.get_sample_value("workqueue_adds_total",
                                                           {"name": "first", "controller": "first"}) is None
        WorkQueue("first", registry=CollectorRegistry())  # another registry: no clash
    finally:
        first.shutdown()
        second.shutdown()
    WorkQueue("first", registry=registry).shutdown()  # the name is free again once its queue shut down


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
