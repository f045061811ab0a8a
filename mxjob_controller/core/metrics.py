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
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter

from mxjob_controller.core.job_vocabulary import CREATED, FAILED, RESTARTING, SUCCEEDED
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
