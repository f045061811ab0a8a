"""The job metrics (core/metrics.py): the counters of two frameworks on one registry, the state a job is counted
under, the oldest waiting job, and the state gauges read from each framework's cache at scrape time."""

from __future__ import annotations

from typing import Any

import pytest


def test_two_frameworks_count_their_jobs_on_one_registry() -> None:
    from prometheus_client import CollectorRegistry

    from mxjob_controller.core.metrics import JobMetrics

    registry = CollectorRegistry()
    mx, tf = JobMetrics(registry, "mxnet"), JobMetrics(registry, "tensorflow")   # no duplicate-series error
    mx.transitions("ns", ["Created"])
    tf.transitions("ns", ["Created", "Succeeded"])
    tf.deleted("ns")

    def value(what: str, framework: str) -> float | None:
        return registry.get_sample_value(f"training_operator_jobs_{what}_total",
                                         {"job_namespace": "ns", "framework": framework})
    assert (value("created", "mxnet"), value("created", "tensorflow")) == (1.0, 1.0)
    assert (value("successful", "tensorflow"), value("successful", "mxnet"), value("deleted", "tensorflow")) == (
        1.0, None, 1.0)


def _job(namespace: str, created: str, *true_conditions: str) -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "creationTimestamp": created},
            "status": {"conditions": [{"type": c, "status": "True"} for c in true_conditions]}}


@pytest.mark.parametrize(("conditions", "state"), [
    ((), "Created"), (("Created",), "Created"), (("Created", "Running"), "Running"),
    (("Created", "Restarting"), "Restarting"), (("Created", "Suspended"), "Suspended"),
    (("Created", "Running", "Succeeded"), "Succeeded"), (("Created", "Suspended", "Failed"), "Failed"),
])
def test_a_job_is_counted_under_one_state(conditions: tuple[str, ...], state: str) -> None:
    from mxjob_controller.core.metrics import job_state
    assert job_state(_job("a", "2026-01-01T00:00:00Z", *conditions)) == state


def test_the_oldest_waiting_job_is_the_oldest_neither_running_suspended_nor_finished() -> None:
    from mxjob_controller.core.metrics import summarise
    from mxjob_controller.kube.timefmt import parse_time

    now = parse_time("2026-01-01T01:00:00Z")
    jobs = [_job("a", "2026-01-01T00:00:00Z", "Created", "Running"),      # older, but running
            _job("a", "2026-01-01T00:10:00Z", "Created", "Suspended"),    # older, but suspended
            _job("b", "2026-01-01T00:30:00Z", "Created"),                 # the oldest waiting: 30 min
            _job("b", "2026-01-01T00:50:00Z")]                            # not acknowledged yet: waiting too
    counts, oldest = summarise(jobs, now)
    assert counts == {("a", "Running"): 1, ("a", "Suspended"): 1, ("b", "Created"): 2}
    assert oldest == 1800.0
    assert summarise([], now) == ({}, 0.0)


def test_the_state_gauges_are_read_from_each_frameworks_cache_at_scrape_time() -> None:
    from mxjob_controller.core.metrics import JobStateCollector
    from mxjob_controller.runtime.registry import families_for, new_registry

    registry, cache = new_registry(), [_job("a", "2026-01-01T00:00:00Z", "Created")]
    collector = families_for(JobStateCollector, registry)
    assert families_for(JobStateCollector, registry) is collector      # one per registry: no duplicate series
    collector.add("mxnet", lambda: cache)
    collector.add("tensorflow", list)
    labels = {"framework": "mxnet", "job_namespace": "a", "state": "Created"}
    assert registry.get_sample_value("mxjob_controller_jobs", labels) == 1.0
    cache.append(_job("a", "2026-01-01T00:00:00Z", "Created", "Running"))     # seen at the next scrape
    assert registry.get_sample_value("mxjob_controller_jobs", {**labels, "state": "Running"}) == 1.0
    assert registry.get_sample_value("mxjob_controller_oldest_waiting_job_seconds", {"framework": "tensorflow"}) == 0
