"""The work queues' metrics (runtime/workqueue/metrics.py): client-go's series after known operations, on a registry
queues share but never the global one."""

from __future__ import annotations

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from mxjob_controller.runtime.workqueue import (
    DelayingQueue,
    WorkQueue,
)

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
