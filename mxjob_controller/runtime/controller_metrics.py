"""Prometheus metrics of controllers, with controller-runtime's names, labels, help texts and buckets.

Dashboards and alerts written for controller-runtime operators (``controller_runtime_reconcile_total`` by
``result``, the reconcile time histogram, active workers against the maximum) work unchanged on this one.

Guarantee, as controller-runtime's ``initMetrics``: once a controller has its :class:`ControllerMetrics`, every
series it can ever report exists, at 0, so ``rate()`` and ``absent()`` behave from the first scrape.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from mxjob_controller.runtime.registry import families_for

SUCCESS = "success"
ERROR = "error"
REQUEUE = "requeue"
REQUEUE_AFTER = "requeue_after"
RESULTS = (SUCCESS, ERROR, REQUEUE, REQUEUE_AFTER)

RECONCILE_TIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
                          0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
                          40, 50, 60)


class ControllerMetricFamilies:
    """The five ``controller_runtime_*`` families of one registry (get it with :func:`families_for`)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.reconcile_total = Counter("controller_runtime_reconcile_total",
                                       "Total number of reconciliations per controller", ("controller", "result"),
                                       registry=registry)
        self.reconcile_errors = Counter("controller_runtime_reconcile_errors_total",
                                        "Total number of reconciliation errors per controller", ("controller",),
                                        registry=registry)
        self.reconcile_time = Histogram("controller_runtime_reconcile_time_seconds",
                                        "Length of time per reconciliation per controller", ("controller",),
                                        buckets=RECONCILE_TIME_BUCKETS, registry=registry)
        self.max_concurrent = Gauge("controller_runtime_max_concurrent_reconciles",
                                    "Maximum number of concurrent reconciles per controller", ("controller",),
                                    registry=registry)
        self.active_workers = Gauge("controller_runtime_active_workers",
                                    "Number of currently used workers per controller", ("controller",),
                                    registry=registry)


class ControllerMetrics:
    """One controller's labelled children, every series created at once."""

    def __init__(self, registry: CollectorRegistry, controller: str, workers: int) -> None:
        families = families_for(ControllerMetricFamilies, registry)
        self._results = {result: families.reconcile_total.labels(controller, result) for result in RESULTS}
        self._errors = families.reconcile_errors.labels(controller)
        self._time = families.reconcile_time.labels(controller)
        self._active = families.active_workers.labels(controller)
        families.max_concurrent.labels(controller).set(workers)
        self._active.set(0)

    def started(self) -> None:
        self._active.inc()

    def finished(self, result: str, seconds: float) -> None:
        """One reconcile ended with ``result`` (one of :data:`RESULTS`) after ``seconds``."""
        self._active.dec()
        self._time.observe(seconds)
        self._results[result].inc()
        if result == ERROR:
            self._errors.inc()


class NoControllerMetrics:
    """What a controller without a registry records: nothing."""

    def started(self) -> None:
        pass

    def finished(self, result: str, seconds: float) -> None:
        pass
