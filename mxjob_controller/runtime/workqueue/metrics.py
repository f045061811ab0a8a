"""Prometheus metrics of work queues, with the names, labels, help and buckets Kubernetes controllers export.

Users already graph ``workqueue_*{name, controller}`` from kube-controller-manager and controller-runtime, so the
families, label names and histogram buckets here are theirs (component-base's ``ExponentialBuckets(10e-9, 10, 10)``,
computed the same way so the ``le`` labels read identically).

Metrics go on a registry the caller passes in, never on prometheus_client's global one: tests and several queues
in one process must not collide. One :class:`WorkQueueMetrics` exists per registry (:meth:`for_registry`); each
queue takes labelled children from it.

The two unfinished-work gauges are computed when the registry is scraped (a custom collector), not by a periodic
thread as in client-go: a scrape then sees the exact in-flight time, and a queue costs no extra thread.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mxjob_controller.runtime.clock import Clock

LABELS = ("name", "controller")


def _exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Upper bounds start, start*factor, ... multiplied step by step as Go does, so float rounding matches."""
    buckets = []
    for _ in range(count):
        buckets.append(start)
        start *= factor
    return buckets


DURATION_BUCKETS = _exponential_buckets(10e-9, 10, 10)

DEPTH_HELP = "Current depth of workqueue"
ADDS_HELP = "Total number of adds handled by workqueue"
QUEUE_DURATION_HELP = "How long in seconds an item stays in workqueue before being requested."
WORK_DURATION_HELP = "How long in seconds processing an item from workqueue takes."
UNFINISHED_HELP = ("How many seconds of work has done that is in progress and hasn't been observed by work_duration. "
                   "Large values indicate stuck threads. One can deduce the number of stuck threads by observing the "
                   "rate at which this increases.")
LONGEST_HELP = "How many seconds has the longest running processor for workqueue been running."
RETRIES_HELP = "Total number of retries handled by workqueue"


class QueueMetrics:
    """One queue's view of the metrics. ``add``/``get``/``done`` are called under the queue's lock, in that order
    for an item, exactly as client-go's queueMetrics."""

    def __init__(self, family: WorkQueueMetrics, labels: tuple[str, str], clock: Clock) -> None:
        self._family = family
        self.labels = labels
        self._clock = clock
        self._depth = family.depth.labels(*labels)
        self._adds = family.adds.labels(*labels)
        self._queue_duration = family.queue_duration.labels(*labels)
        self._work_duration = family.work_duration.labels(*labels)
        self._retries = family.retries.labels(*labels)
        self._lock = threading.Lock()  # guards the two dicts against a concurrent scrape
        self._added_at: dict[Hashable, float] = {}
        self._started_at: dict[Hashable, float] = {}

    def add(self, item: Hashable) -> None:
        self._adds.inc()
        self._depth.inc()
        with self._lock:
            self._added_at.setdefault(item, self._clock.now())

    def get(self, item: Hashable) -> None:
        self._depth.dec()
        now = self._clock.now()
        with self._lock:
            self._started_at[item] = now
            added = self._added_at.pop(item, None)
        if added is not None:
            self._queue_duration.observe(now - added)

    def done(self, item: Hashable) -> None:
        with self._lock:
            started = self._started_at.pop(item, None)
        if started is not None:
            self._work_duration.observe(self._clock.now() - started)

    def retry(self) -> None:
        self._retries.inc()

    def unfinished_work(self) -> tuple[float, float]:
        """(seconds of work in progress summed over items, seconds of the longest one), as of now."""
        now = self._clock.now()
        with self._lock:
            ages = [now - started for started in self._started_at.values()]
        return sum(ages), max(ages, default=0.0)

    def close(self) -> None:
        """Stop reporting unfinished work (the queue shut down); counters and histograms keep their values."""
        self._family.forget_queue(self)


class NoMetrics:
    """What a queue without a registry records: nothing."""

    def add(self, item: Hashable) -> None:
        pass

    def get(self, item: Hashable) -> None:
        pass

    def done(self, item: Hashable) -> None:
        pass

    def retry(self) -> None:
        pass

    def close(self) -> None:
        pass


class _UnfinishedWorkCollector(Collector):
    """Computes both unfinished-work gauges of every live queue at scrape time."""

    def __init__(self, family: WorkQueueMetrics) -> None:
        self._family = family

    def describe(self) -> list[GaugeMetricFamily]:
        # Declared so the registry rejects anything else registering these names.
        return [GaugeMetricFamily("workqueue_unfinished_work_seconds", UNFINISHED_HELP, labels=LABELS),
                GaugeMetricFamily("workqueue_longest_running_processor_seconds", LONGEST_HELP, labels=LABELS)]

    def collect(self) -> Iterator[GaugeMetricFamily]:
        unfinished, longest = self.describe()
        for queue in self._family.live_queues():
            total, oldest = queue.unfinished_work()
            unfinished.add_metric(queue.labels, total)
            longest.add_metric(queue.labels, oldest)
        yield unfinished
        yield longest


class WorkQueueMetrics:
    """The seven ``workqueue_*`` families on one registry, shared by every queue that reports there."""

    _by_registry: weakref.WeakKeyDictionary[CollectorRegistry, WorkQueueMetrics] = weakref.WeakKeyDictionary()
    _by_registry_lock = threading.Lock()

    @classmethod
    def for_registry(cls, registry: CollectorRegistry) -> WorkQueueMetrics:
        """The registry's instance, created (and its families registered) on first use."""
        with cls._by_registry_lock:
            found = cls._by_registry.get(registry)
            if found is None:
                found = cls._by_registry[registry] = cls(registry)
            return found

    def __init__(self, registry: CollectorRegistry) -> None:
        self.depth = Gauge("workqueue_depth", DEPTH_HELP, LABELS, registry=registry)
        self.adds = Counter("workqueue_adds_total", ADDS_HELP, LABELS, registry=registry)
        self.queue_duration = Histogram("workqueue_queue_duration_seconds", QUEUE_DURATION_HELP, LABELS,
                                        registry=registry, buckets=DURATION_BUCKETS)
        self.work_duration = Histogram("workqueue_work_duration_seconds", WORK_DURATION_HELP, LABELS,
                                       registry=registry, buckets=DURATION_BUCKETS)
        self.retries = Counter("workqueue_retries_total", RETRIES_HELP, LABELS, registry=registry)
        self._lock = threading.Lock()
        self._live: dict[tuple[str, str], QueueMetrics] = {}
        registry.register(_UnfinishedWorkCollector(self))

    def for_queue(self, name: str, controller: str, clock: Clock) -> QueueMetrics:
        """A queue's metrics; two live queues may not share labels (their unfinished work would clash)."""
        labels = (name, controller)
        with self._lock:
            if labels in self._live:
                raise ValueError(f"a work queue named {name!r} (controller {controller!r}) already reports "
                                 "on this registry")
            queue = self._live[labels] = QueueMetrics(self, labels, clock)
            return queue

    def forget_queue(self, queue: QueueMetrics) -> None:
        with self._lock:
            if self._live.get(queue.labels) is queue:
                del self._live[queue.labels]

    def live_queues(self) -> list[QueueMetrics]:
        with self._lock:
            return list(self._live.values())
