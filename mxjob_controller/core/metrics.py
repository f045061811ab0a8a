"""Job counters, with training-operator's names and labels, so its dashboards keep working:
``training_operator_jobs_{created,deleted,successful,failed,restarted}_total{job_namespace, framework}``.

Counted from transitions, never from reconciles: a job is counted when the status write that records its
``Created`` / ``Succeeded`` / ``Failed`` / ``Restarting`` condition has succeeded, judged against the status that
write was computed from. A job already ``Created`` in the API is therefore never counted again, by a restarted
controller or a new leader (training-operator counted on every informer ADD, so every restart re-counted every job:
#2408). ``deleted`` is counted by whoever deletes a job, after the delete succeeded.

Several frameworks in one process share one registry: the families are registered once per registry
(``families_for``), and each framework's :class:`JobMetrics` counts into them under its own ``framework`` label, as
training-operator's one process counts every job kind.

Beside the counters, two gauges computed from the job cache at scrape time (nothing is kept up to date between
scrapes, so an idle controller pays nothing): ``mxjob_controller_jobs{framework, job_namespace, state}``, the jobs by
their current state, and ``mxjob_controller_oldest_waiting_job_seconds{framework}``, how long the oldest job that is
neither running, suspended nor finished has existed — what an alert on jobs stuck unscheduled needs, and what the
counters cannot tell.
"""

from __future__ import annotations

import threading
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from mxjob_controller.core.job_vocabulary import (
    CREATED,
    FAILED,
    RESTARTING,
    RUNNING,
    SUCCEEDED,
    SUSPENDED,
    is_true,
)
from mxjob_controller.kube.timefmt import parse_time
from mxjob_controller.runtime.registry import families_for

LABELS = ("job_namespace", "framework")


class JobMetricFamilies:
    """The five counter families of one registry (get it with :func:`families_for`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(what: str) -> Counter:
            return Counter(f"training_operator_jobs_{what}_total", f"Counts number of jobs {what}", LABELS,
                           registry=registry)

        self.created = counter("created")
        self.deleted = counter("deleted")
        self.successful = counter("successful")
        self.failed = counter("failed")
        self.restarted = counter("restarted")


class JobMetrics:
    """One framework's job counters on a registry."""

    def __init__(self, registry: CollectorRegistry, framework: str) -> None:
        self.framework = framework
        self._families = families_for(JobMetricFamilies, registry)
        self._by_condition = {CREATED: self._families.created, SUCCEEDED: self._families.successful,
                              FAILED: self._families.failed, RESTARTING: self._families.restarted}

    def transitions(self, namespace: str, became_true: Iterable[str]) -> None:
        """Count what a successful status write recorded (condition types that turned True)."""
        for ctype in became_true:
            family = self._by_condition.get(ctype)
            if family is not None:
                family.labels(namespace, self.framework).inc()

    def deleted(self, namespace: str) -> None:
        self._families.deleted.labels(namespace, self.framework).inc()


# --- jobs by state, at scrape time ---------------------------------------------------------------------------------

#: The order decides a job whose conditions say several things: finished beats suspended beats restarting/running.
STATES = (FAILED, SUCCEEDED, SUSPENDED, RESTARTING, RUNNING)


def job_state(job: Mapping[str, Any]) -> str:
    """The one state a job is counted under; a job with no condition yet (not acknowledged) counts as Created."""
    conditions = (job.get("status") or {}).get("conditions")
    return next((state for state in STATES if is_true(conditions, state)), CREATED)


def summarise(jobs: Iterable[Mapping[str, Any]], now: float) -> tuple[Tally[tuple[str, str]], float]:
    """Jobs counted by (namespace, state), and the age in seconds of the oldest job still waiting to run (0: none)."""
    counts: Tally[tuple[str, str]] = Tally()
    oldest = 0.0
    for job in jobs:
        state = job_state(job)
        metadata = job.get("metadata") or {}
        counts[metadata.get("namespace") or "", state] += 1
        if state == CREATED:
            created = parse_time(metadata.get("creationTimestamp"))
            if created is not None:
                oldest = max(oldest, now - created)
    return counts, oldest


JobLister = Callable[[], Iterable[Mapping[str, Any]]]


class JobStateCollector(Collector):
    """The state gauges of one registry (get it with :func:`families_for`); each framework adds its job cache."""

    def __init__(self, registry: CollectorRegistry, wall: Callable[[], float] = time.time) -> None:
        self._wall = wall
        self._listers: dict[str, JobLister] = {}
        self._lock = threading.Lock()
        registry.register(self)

    def add(self, framework: str, jobs: JobLister) -> None:
        with self._lock:
            self._listers[framework] = jobs

    def describe(self) -> list[GaugeMetricFamily]:
        return list(self._families())

    def collect(self) -> Iterator[GaugeMetricFamily]:
        with self._lock:
            listers = dict(self._listers)
        by_state, waiting = self._families()
        for framework, jobs in sorted(listers.items()):
            counts, oldest = summarise(jobs(), self._wall())
            for (namespace, state), count in sorted(counts.items()):
                by_state.add_metric([framework, namespace, state], count)
            waiting.add_metric([framework], oldest)
        yield by_state
        yield waiting

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (GaugeMetricFamily("mxjob_controller_jobs", "Jobs in the controller's cache by their current state",
                                  labels=("framework", "job_namespace", "state")),
                GaugeMetricFamily("mxjob_controller_oldest_waiting_job_seconds",
                                  "Age of the oldest job that is not yet running, suspended or finished (0: none)",
                                  labels=("framework",)))
