"""The child writes (core/child_writes.py): slow-start batches on the bounded write pool (doubling batch sizes,
parallel within a batch, a stop at the first failing batch, a bound on concurrency, named threads, timeouts and a
clean stop), and the pod and service bodies the core creates (pure functions, table-tested)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator

import pytest

from mxjob_controller.core import job_vocabulary as lb
from mxjob_controller.core.child_writes import (
    PoolStoppedError,
    Slice,
    WritePool,
    batch_cap_for_budget,
    build_pod,
    build_service,
    pod_restart_policy,
    slow_start,
    slow_start_lanes,
)
from mxjob_controller.core.job_vocabulary import controller_reference
from tests.core.bodies import UID, ref


@pytest.fixture
def pool() -> Iterator[WritePool]:
    p = WritePool("test-writes", 8).start()
    yield p
    assert p.stop(5.0)


def ok(value: int) -> Callable[[], int]:
    return lambda: value


def boom(message: str) -> Callable[[], int]:
    def run() -> int:
        raise RuntimeError(message)
    return run


@pytest.mark.parametrize(("count", "batches"), [(0, []), (1, [1]), (3, [1, 2]), (7, [1, 2, 4]),
                                                (10, [1, 2, 4, 3]), (20, [1, 2, 4, 8, 5])])
def test_batches_double(pool: WritePool, count: int, batches: list[int]) -> None:
    outcome = slow_start([ok(i) for i in range(count)], pool, timeout=5)
    assert outcome.batches == batches and outcome.results == list(range(count)) and outcome.error is None


def test_the_run_stops_after_the_first_failing_batch(pool: WritePool) -> None:
    ran: list[int] = []
    lock = threading.Lock()

    def task(i: int) -> Callable[[], int]:
        def run() -> int:
            with lock:
                ran.append(i)
            if i == 4:
                raise RuntimeError("quota exceeded")
            return i
        return run

    outcome = slow_start([task(i) for i in range(10)], pool, timeout=5)
    assert str(outcome.error) == "quota exceeded"
    assert outcome.attempted == 7 and sorted(ran) == list(range(7))   # batches 1, 2, 4; tasks 7-9 never ran
    assert outcome.results == [0, 1, 2, 3, 5, 6]


def test_lanes_double_on_their_own_share_rounds_and_a_failing_lane_sees_one_request(pool: WritePool) -> None:
    """A job's services and pods go in step: one round trip per doubling for both, the round bounded by the slice's
    batch and shared evenly; a pod API that refuses sees one pod, whatever the services reached."""
    lanes = [[ok(i) for i in range(7)], [ok(100 + i) for i in range(7)]]
    outcome = slow_start_lanes(lanes, pool, timeout=5, initial_batches=[1, 1])
    assert outcome.batches == [2, 4, 8] and outcome.error is None
    assert outcome.results == [0, 100, 1, 2, 101, 102, 3, 4, 5, 6, 103, 104, 105, 106]
    big = slow_start_lanes([[ok(i) for i in range(40)], [ok(i) for i in range(40)]], pool, timeout=5,
                           initial_batches=[1, 1], within=Slice(writes=1000, seconds=60, max_batch=16))
    assert big.batches == [2, 4, 8, 16, 16, 16, 16, 2] and len(big.results) == 80
    following = slow_start_lanes(lanes, pool, timeout=5, initial_batches=[1, 1], lags=[0, 1])
    assert following.batches == [1, 3, 6, 4], "pods one round behind: a pod's Service always went before it"
    assert following.results == [0, 1, 2, 100, 3, 4, 5, 6, 101, 102, 103, 104, 105, 106]
    alone = slow_start_lanes([[], [ok(i) for i in range(3)]], pool, timeout=5, initial_batches=[1, 1], lags=[0, 1])
    assert alone.batches == [1, 2], "with no Service to create, pods do not wait"
    failing = slow_start_lanes([[ok(i) for i in range(40)], [boom("exceeded quota: pods")] * 40], pool, timeout=5,
                               initial_batches=[8, 1])
    assert failing.batches == [9] and str(failing.error) == "exceeded quota: pods" and failing.results == list(range(8))


def test_a_batch_runs_in_parallel_on_named_threads(pool: WritePool) -> None:
    barrier = threading.Barrier(4, timeout=5)
    names: set[str] = set()

    def meet() -> str:
        barrier.wait()   # only returns if all four run at once
        names.add(threading.current_thread().name)
        return "met"

    outcome = slow_start([meet] * 4, pool, timeout=10, initial_batch=4)
    assert outcome.error is None and outcome.results == ["met"] * 4
    assert len(names) == 4 and all(n.startswith("test-writes-") for n in names)


def test_the_pool_bounds_concurrency() -> None:
    pool = WritePool("bounded", 2).start()
    lock = threading.Lock()
    running = peak = 0
    release = threading.Event()

    def task() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        release.wait(0.05)
        with lock:
            running -= 1

    outcome = slow_start([task] * 8, pool, timeout=10, initial_batch=8)
    assert outcome.error is None and peak == 2
    assert pool.stop(5.0)


def test_a_task_past_the_timeout_counts_as_failed(pool: WritePool) -> None:
    release = threading.Event()
    outcome = slow_start([lambda: release.wait(5)], pool, timeout=0.1)
    release.set()
    assert isinstance(outcome.error, TimeoutError)


def test_stop_fails_queued_tasks_and_refuses_new_ones() -> None:
    pool = WritePool("stopping", 1).start()
    started, release = threading.Event(), threading.Event()
    first = pool.submit(lambda: started.set() or release.wait(5))
    assert started.wait(5)
    queued = pool.submit(lambda: "never")
    stopper = threading.Thread(target=pool.stop, args=(5.0,), name="test-stopper")
    stopper.start()
    assert queued.wait(5) and isinstance(queued.error, PoolStoppedError)
    release.set()
    stopper.join(5)
    assert first.wait(5) and first.error is None
    late = pool.submit(lambda: "late")
    assert late.done and isinstance(late.error, PoolStoppedError)
    assert not any(t.name.startswith("stopping-") and t.is_alive() for t in threading.enumerate())


def test_a_slice_bounds_writes_and_time_but_always_allows_its_floor(pool: WritePool) -> None:
    tasks = [ok(i) for i in range(40)]
    by_count = slow_start(tasks, pool, timeout=5, within=Slice(writes=10, seconds=60, max_batch=4))
    assert by_count.batches == [1, 2, 4, 3] and by_count.deferred == 30 and not by_count.cancelled
    out_of_time = slow_start(tasks, pool, timeout=5, within=Slice(writes=100, seconds=0, max_batch=4, floor=6))
    assert out_of_time.batches == [1, 2, 4] and out_of_time.deferred == 33   # the floor's 6 went, then no more
    cancelled = slow_start(tasks, pool, timeout=5, within=Slice(writes=100, seconds=60, max_batch=4,
                                                                  cancelled=lambda: True))
    assert cancelled.cancelled and cancelled.attempted == 0 and cancelled.deferred == 0


def test_a_slice_yields_only_while_other_work_waits(pool: WritePool) -> None:
    """The bounds exist for fairness: with no one waiting, the run goes on past them; once someone waits, it stops
    at the next round."""
    tasks = [ok(i) for i in range(40)]
    alone = slow_start(tasks, pool, timeout=5, within=Slice(writes=10, seconds=0, max_batch=8,
                                                              contended=lambda: False))
    assert alone.batches == [1, 2, 4, 8, 8, 8, 8, 1] and alone.deferred == 0 and len(alone.results) == 40
    asked: list[int] = []

    def someone_waits_after_two_asks() -> bool:
        asked.append(1)
        return len(asked) > 2

    joined = slow_start(tasks, pool, timeout=5, within=Slice(writes=3, seconds=60, max_batch=8,
                                                               contended=someone_waits_after_two_asks))
    assert joined.batches == [1, 2] and joined.deferred == 37 and len(asked) == 3


@pytest.mark.parametrize(("qps", "cap"), [(-1, 128), (0, 32), (5, 32), (20, 32), (30, 45), (50, 75), (100, 128),
                                          (1000, 128), (float("inf"), 128), (float("nan"), 128)])
def test_the_batch_cap_is_what_the_client_budget_sends_in_a_second_and_a_half(qps, cap):
    """A batch holds its job's worker until it is answered: at 20 req/s no more than 32 (1.6 s of the budget);
    without a client limit 128, so a 1/32/256 job needs 5 steady rounds, not 18."""
    assert batch_cap_for_budget(qps) == cap


# --- bodies ----------------------------------------------------------------------------------------------

TEMPLATE = {"metadata": {"labels": {"team": "a", lb.REPLICA_TYPE: "bogus"}, "annotations": {"note": "x"},
                         "finalizers": ["example.com/keep"], "name": "ignored", "namespace": "ignored"},
            "spec": {"restartPolicy": "Always", "containers": [{"name": "mxnet", "image": "i"}]}}


@pytest.mark.parametrize(("replica_policy", "pod_policy"), [
    ("Never", "Never"), ("OnFailure", "OnFailure"), ("Always", "Always"), ("ExitCode", "Never")])
def test_pod_restart_policy(replica_policy: str, pod_policy: str) -> None:
    assert pod_restart_policy(replica_policy) == pod_policy


def test_a_pod_copies_its_template_and_controller_keys_win() -> None:
    template = copy.deepcopy(TEMPLATE)
    labels = lb.replica_labels("op", "g", "j", "Worker", 0)
    owner = controller_reference("kubeflow.org/v1", "MXJob", "j", UID)
    pod = build_pod(template, name="j-worker-0", namespace="ns", labels=labels, owner=owner,
                    restart_policy="ExitCode")
    assert pod["metadata"] == {"name": "j-worker-0", "namespace": "ns", "labels": {"team": "a", **labels},
                               "annotations": {"note": "x"}, "finalizers": ["example.com/keep"],
                               "ownerReferences": [owner]}
    assert pod["spec"]["restartPolicy"] == "Never" and pod["spec"]["containers"] == TEMPLATE["spec"]["containers"]
    assert template == TEMPLATE


def test_a_service_is_headless_and_selects_its_pod() -> None:
    selector = lb.service_selector("op", "j", "Worker", 2)
    svc = build_service(name="j-worker-2", namespace="ns", labels={"a": "b"}, selector=selector,
                        owner=ref(), ports=[{"name": "mxjob-port", "port": 9091}])
    assert svc["spec"] == {"clusterIP": "None", "selector": selector, "ports": [{"name": "mxjob-port", "port": 9091}]}
    assert svc["metadata"]["ownerReferences"] == [ref()] and svc["metadata"]["labels"] == {"a": "b"}
