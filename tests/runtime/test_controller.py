"""The controller worker loop (runtime/controller): retries with growing delays on a fake clock, results counted
with controller-runtime's metrics, no key on two threads at once (proved from the reconcile trace), graceful
shutdown, and keys fed end to end by an informer watching the embedded API server."""

from __future__ import annotations

import itertools
import logging
import os
import random
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from mxjob_controller.runtime.cache_keys import deletion_key, object_key
from mxjob_controller.runtime.client import CONFIGMAPS, Client, ClientConfig
from mxjob_controller.runtime.clock import FakeClock
from mxjob_controller.runtime.controller import DONE, REQUEUE_RATE_LIMITED, Controller, Result
from mxjob_controller.runtime.informer_factory import SharedInformerFactory
from mxjob_controller.runtime.reconcile_trace import concurrent_runs, read_trace
from mxjob_controller.runtime.workqueue import ItemExponentialFailureRateLimiter, RateLimitingQueue
from tests.support import Kube, configmap, wait_for


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def results(registry: CollectorRegistry, controller: str) -> dict[str, float | None]:
    return {result: sample(registry, "controller_runtime_reconcile_total", controller=controller, result=result)
            for result in ("success", "error", "requeue", "requeue_after")}


@pytest.fixture
def stop_after() -> list[Controller]:
    """Controllers to shut down at the end of the test, whatever happened."""
    started: list[Controller] = []
    yield started
    for controller in started:
        controller.shutdown_with_drain(5)


def test_a_failing_reconcile_is_retried_with_growing_delays_and_its_worker_survives(stop_after, caplog):
    clock = FakeClock(1000.0)
    registry = CollectorRegistry()
    attempts: list[tuple[str, str, float]] = []  # (key, thread, fake time)

    def reconcile(key):
        attempts.append((key, threading.current_thread().name, clock.now()))
        if key == "ns/flaky" and sum(1 for k, _, _ in attempts if k == key) <= 5:
            raise RuntimeError("the API server said no")
        return DONE

    controller = Controller("retry", reconcile, workers=1, registry=registry, clock=clock)
    stop_after.append(controller.start())
    caplog.set_level(logging.ERROR, logger="mxjob_controller.runtime.controller")
    controller.queue.add("ns/flaky")
    for failures, delay in enumerate([0.005, 0.01, 0.02, 0.04, 0.08], start=1):
        wait_for(lambda n=failures: len(attempts) == n, what=f"attempt {failures}")
        now = clock.now()
        # The retry waits in the delay timer until exactly now + delay (the per-item exponential back-off)...
        wait_for(lambda d=delay, t=now: clock.sleepers() == [t + d], what=f"retry queued {delay}s ahead")
        assert controller.queue.num_requeues("ns/flaky") == failures
        clock.step(delay / 2)
        wait_for(lambda d=delay, t=now: clock.sleepers() == [t + d], what="timer asleep again")
        assert len(attempts) == failures  # ... and never comes early
        clock.step(delay / 2 + 1e-9)  # (a hair more: two float halves may sum to just under the delay)
    wait_for(lambda: len(attempts) == 6, what="the sixth attempt, which succeeds")
    wait_for(lambda: results(registry, "retry")["success"] == 1.0, what="success counted")
    # The same worker thread ran every attempt: no exception killed it.
    assert {thread for _, thread, _ in attempts} == {"retry-worker-0"}
    assert [t - attempts[i - 1][2] for i, (_, _, t) in enumerate(attempts) if i] == pytest.approx(
        [0.005, 0.01, 0.02, 0.04, 0.08])
    assert controller.queue.num_requeues("ns/flaky") == 0  # success forgot the back-off
    assert results(registry, "retry") == {"success": 1.0, "error": 5.0, "requeue": 0.0, "requeue_after": 0.0}
    assert sample(registry, "controller_runtime_reconcile_errors_total", controller="retry") == 5.0
    assert sample(registry, "controller_runtime_reconcile_time_seconds_count", controller="retry") == 6.0
    # Each failure is logged with the key and the traceback.
    failures_logged = [r for r in caplog.records if "ns/flaky" in r.getMessage()]
    assert len(failures_logged) == 5
    assert all(r.exc_info and "the API server said no" in str(r.exc_info[1]) for r in failures_logged)
    # The worker still serves other keys.
    controller.queue.add("ns/other")
    wait_for(lambda: attempts[-1][0] == "ns/other", what="another key reconciled")


def test_every_result_is_counted_and_the_series_exist_from_the_start(stop_after):
    clock = FakeClock(1000.0)
    registry = CollectorRegistry()
    calls: dict[str, int] = defaultdict(int)
    release = threading.Event()

    def reconcile(key: str):
        calls[key] += 1
        first = calls[key] == 1
        if key == "a/none":
            return None
        if key == "a/later":
            return Result.after(30)
        if key == "a/requeue":
            return REQUEUE_RATE_LIMITED if first else DONE
        if key == "a/blocked":
            release.wait(10)
        if key == "a/bad-return" and first:
            return "not a Result"  # a programming error: counted and retried like an exception
        return DONE

    controller = Controller("results", reconcile, workers=3, registry=registry, clock=clock)
    assert results(registry, "results") == {"success": 0.0, "error": 0.0, "requeue": 0.0, "requeue_after": 0.0}
    assert sample(registry, "controller_runtime_reconcile_errors_total", controller="results") == 0.0
    assert sample(registry, "controller_runtime_max_concurrent_reconciles", controller="results") == 3.0
    assert sample(registry, "controller_runtime_active_workers", controller="results") == 0.0
    assert sample(registry, "controller_runtime_reconcile_time_seconds_count", controller="results") == 0.0

    stop_after.append(controller.start())
    for key in ("a/done", "a/none", "a/later", "a/requeue", "a/blocked", "a/bad-return"):
        controller.queue.add(key)
    wait_for(lambda: results(registry, "results") == {"success": 2.0, "error": 1.0, "requeue": 1.0,
                                                      "requeue_after": 1.0}, what="the first round counted")
    assert sample(registry, "controller_runtime_active_workers", controller="results") == 1.0  # a/blocked
    release.set()
    wait_for(lambda: results(registry, "results")["success"] == 3.0, what="a/blocked done")
    assert sample(registry, "controller_runtime_active_workers", controller="results") == 0.0
    assert sample(registry, "controller_runtime_reconcile_errors_total", controller="results") == 1.0
    # requeue and the error wait their rate-limited 5 ms; requeue_after reset the back-off and waits 30 s.
    assert controller.queue.num_requeues("a/requeue") == 1
    assert controller.queue.num_requeues("a/bad-return") == 1
    assert controller.queue.num_requeues("a/later") == 0
    wait_for(lambda: clock.sleepers() == [1000.005], what="the timer waiting for the 5 ms retries")
    clock.step(0.005)
    wait_for(lambda: results(registry, "results")["success"] == 5.0, what="both retries done")
    assert calls["a/later"] == 1
    clock.step(30)
    wait_for(lambda: calls["a/later"] == 2, what="a/later again after 30 s")
    wait_for(lambda: results(registry, "results") == {"success": 5.0, "error": 1.0, "requeue": 1.0,
                                                      "requeue_after": 2.0}, what="final counts")
    assert sample(registry, "controller_runtime_reconcile_time_seconds_count", controller="results") == 9.0
    assert sample(registry, "controller_runtime_reconcile_time_seconds_bucket", controller="results",
                  le="60.0") == 9.0


def test_no_key_is_reconciled_on_two_threads_at_once_with_8_workers_and_hot_keys(tmp_path: Path, stop_after):
    trace = tmp_path / "trace.jsonl"
    registry = CollectorRegistry()
    hot = [f"ns/hot-{i}" for i in range(4)]
    cold = [f"ns/cold-{i}" for i in range(40)]
    rng = random.Random(7)
    rng_lock = threading.Lock()
    running: dict[str, int] = defaultdict(int)  # live count per key, checked while it runs as well
    running_lock = threading.Lock()
    violations: list[str] = []

    def reconcile(key: str):
        with running_lock:
            running[key] += 1
            if running[key] > 1:
                violations.append(key)
        try:
            with rng_lock:
                roll = rng.random()
            time.sleep(0.0005 + roll * 0.002)  # long enough for other workers to get the same key if they could
            if roll < 0.1:
                raise ValueError("transient")
            return REQUEUE_RATE_LIMITED if roll < 0.15 else DONE
        finally:
            with running_lock:
                running[key] -= 1

    queue = RateLimitingQueue("hot", registry=registry,
                              rate_limiter=ItemExponentialFailureRateLimiter(0.001, 0.01))
    controller = Controller("hot", reconcile, workers=8, queue=queue, registry=registry, trace_path=trace)
    stop_after.append(controller.start())
    last_add: dict[str, float] = {}
    last_add_lock = threading.Lock()

    def produce(seed: int) -> None:
        r = random.Random(seed)
        for _ in range(400):
            key = r.choice(hot) if r.random() < 0.8 else r.choice(cold)
            with last_add_lock:
                last_add[key] = time.monotonic()
            controller.queue.add(key)
            if r.random() < 0.3:
                time.sleep(0.0002)

    producers = [threading.Thread(target=produce, args=(seed,), name=f"producer-{seed}") for seed in range(4)]
    for p in producers:
        p.start()
    for p in producers:
        p.join(30)

    def settled() -> bool:
        records = read_trace(trace)
        latest = defaultdict(float)
        for r in records:
            if r["result"] in ("success",):
                latest[r["key"]] = max(latest[r["key"]], r["start"])
        return all(latest[k] >= t for k, t in last_add.items())

    wait_for(settled, timeout=30, what="every key reconciled successfully after its last add")
    assert controller.shutdown_with_drain(10)
    records = read_trace(trace)
    assert not violations
    assert concurrent_runs(records) == []
    assert set(r["key"] for r in records) == set(last_add)
    assert {r["thread"] for r in records} <= {f"hot-worker-{i}" for i in range(8)}
    # The test had teeth: hot keys went through several threads, and runs of different keys overlapped.
    for key in hot:
        assert len({r["thread"] for r in records if r["key"] == key}) >= 2
    by_start = sorted(records, key=lambda r: r["start"])
    parallel = sum(1 for a, b in itertools.pairwise(by_start) if b["start"] < a["end"])
    assert parallel > 10
    assert {r["result"] for r in records} == {"success", "error", "requeue"}


def test_shutdown_with_drain_finishes_in_flight_reconciles_and_starts_no_more(tmp_path: Path):
    trace = tmp_path / "trace.jsonl"
    entered = threading.Event()
    release = threading.Event()
    seen: list[str] = []

    def reconcile(key):
        seen.append(key)
        if key == "ns/slow":
            entered.set()
            release.wait(10)
        return DONE

    controller = Controller("drain", reconcile, workers=1, trace_path=trace).start()
    controller.queue.add("ns/slow")
    assert entered.wait(10)
    for i in range(5):
        controller.queue.add(f"ns/queued-{i}")
    outcome: list[bool] = []
    stopper = threading.Thread(target=lambda: outcome.append(controller.shutdown_with_drain(10)), name="stopper")
    stopper.start()
    wait_for(lambda: controller.stopping, what="shutdown begun")
    assert stopper.is_alive()  # it waits for the in-flight reconcile
    controller.queue.add("ns/after-shutdown")  # ignored
    release.set()
    stopper.join(15)
    assert outcome == [True]
    assert seen == ["ns/slow"]  # the queued keys were not started
    assert [(r["key"], r["result"]) for r in read_trace(trace)] == [("ns/slow", "success")]
    assert not [t for t in threading.enumerate() if t.name.startswith("drain-worker-")]


def test_shutdown_with_drain_gives_up_at_its_deadline():
    release = threading.Event()
    entered = threading.Event()

    def reconcile(key):
        entered.set()
        release.wait(10)

    controller = Controller("stuck", reconcile, workers=2).start()
    controller.queue.add("ns/stuck")
    assert entered.wait(10)
    started = time.monotonic()
    assert controller.shutdown_with_drain(0.2) is False
    assert time.monotonic() - started < 2
    release.set()
    wait_for(lambda: not [t for t in threading.enumerate() if t.name.startswith("stuck-worker-")],
             what="the stuck worker exits once its reconcile returns")


def open_paths() -> set[str]:
    """What this process has open, as the kernel sees it."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass  # closed meanwhile
    return found


def test_the_trace_file_is_closed_even_when_a_reconcile_outlives_the_shutdown(tmp_path: Path):
    trace = tmp_path / "trace.jsonl"
    release = threading.Event()
    entered = threading.Event()

    def reconcile(key):
        if key == "ns/stuck":
            entered.set()
            release.wait(10)
        return DONE

    controller = Controller("traced", reconcile, workers=1, trace_path=trace).start()
    controller.queue.add("ns/quick")
    wait_for(lambda: trace.exists() and read_trace(trace), what="the quick key traced")
    controller.queue.add("ns/stuck")
    assert entered.wait(10)
    assert str(trace) in open_paths()
    assert controller.shutdown_with_drain(0.2) is False
    assert str(trace) not in open_paths(), "the trace file is still open"
    release.set()
    wait_for(lambda: not [t for t in threading.enumerate() if t.name.startswith("traced-worker-")],
             what="the stuck worker exits once its reconcile returns")
    assert [r["key"] for r in read_trace(trace)] == ["ns/quick"]  # the late reconcile is not recorded


def test_worker_threads_are_named_and_a_controller_starts_once():
    controller = Controller("named", lambda key: DONE, workers=3).start()
    try:
        names = {t.name for t in threading.enumerate() if t.name.startswith("named-worker-")}
        assert names == {"named-worker-0", "named-worker-1", "named-worker-2"}
        with pytest.raises(RuntimeError):
            controller.start()
    finally:
        assert controller.shutdown_with_drain(5)
    with pytest.raises(ValueError):
        Controller("", lambda key: DONE)
    with pytest.raises(ValueError):
        Controller("zero", lambda key: DONE, workers=0)


def test_keys_from_an_informer_watching_the_api_server_are_each_reconciled(apiserver, kube: Kube, stop_after):
    client = Client(ClientConfig(host=apiserver.url), component="controller-test")
    factory = SharedInformerFactory(client, namespace="default")
    informer = factory.informer(CONFIGMAPS, label_selector="app=ctl")
    reconciled: dict[str, list[str]] = defaultdict(list)

    def reconcile(key: str):
        obj = informer.store.get(key)
        reconciled[key].append(obj["data"]["v"] if obj else "<gone>")
        return DONE

    controller = Controller("configmaps", reconcile, workers=4, registry=CollectorRegistry())
    stop_after.append(controller)
    informer.add_handler(on_add=lambda obj: controller.queue.add(object_key(obj)),
                         on_update=lambda old, new: controller.queue.add(object_key(new)),
                         on_delete=lambda obj: controller.queue.add(deletion_key(obj)))
    factory.start()
    try:
        assert factory.wait_for_cache_sync(10)
        controller.start()
        for i in range(10):
            assert kube.post("/api/v1/namespaces/default/configmaps",
                             configmap(f"cm-{i}", {"v": "1"}, labels={"app": "ctl"})).ok
        assert kube.post("/api/v1/namespaces/default/configmaps", configmap("other", {"v": "1"})).ok
        assert kube.patch("/api/v1/namespaces/default/configmaps/cm-3", {"data": {"v": "2"}}).ok
        assert kube.delete("/api/v1/namespaces/default/configmaps/cm-4").ok
        wait_for(lambda: len(reconciled) == 10 and reconciled["default/cm-3"][-1] == "2"
                 and reconciled["default/cm-4"][-1] == "<gone>", timeout=15, what="every change reconciled")
        assert "default/other" not in reconciled
    finally:
        controller.shutdown_with_drain(5)
        factory.stop(5)
        client.close()
