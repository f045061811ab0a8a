"""The rate-limiting queue (runtime/workqueue/rate_limiting_queue.py), on a fake clock: requeues wait 5, 10, 20 ms
until forgotten, and are counted."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from mxjob_controller.runtime.workqueue import (
    RateLimitingQueue,
)
from mxjob_controller.runtime.workqueue.delaying_queue import MAX_WAIT
from tests.runtime.workqueue.support import drain, settled


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
