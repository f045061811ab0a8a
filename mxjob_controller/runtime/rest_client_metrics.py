"""``rest_client_request_retries_total{code, host, verb}``, client-go's name: the retries the server asked for (429,
or a 5xx, with ``Retry-After``), read from the clients' tallies (``runtime/client/retries.py``) when scraped."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from mxjob_controller.runtime.client.retries import RetryTally
from mxjob_controller.runtime.registry import families_for


class RetryMetrics(Collector):
    """``rest_client_request_retries_total`` of one registry, summed over the tallies added to it."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._tallies: list[RetryTally] = []
        self._lock = threading.Lock()
        registry.register(self)

    def add(self, tally: RetryTally) -> None:
        with self._lock:
            if all(t is not tally for t in self._tallies):
                self._tallies.append(tally)

    def collect(self) -> Iterator[Any]:
        family = CounterMetricFamily("rest_client_request_retries",
                                     "Number of request retries, partitioned by status code, verb, and host.",
                                     labels=["code", "host", "verb"])
        totals: Counter[tuple[str, str, str]] = Counter()
        with self._lock:
            tallies = list(self._tallies)
        for tally in tallies:
            for (code, verb), n in tally.snapshot().items():
                totals[(str(code), tally.host, verb)] += n
        for labels, n in sorted(totals.items()):
            family.add_metric(list(labels), n)
        yield family

    def describe(self) -> Iterator[Any]:
        yield CounterMetricFamily("rest_client_request_retries", "", labels=["code", "host", "verb"])


def register_retry_metrics(registry: CollectorRegistry, *tallies: RetryTally) -> None:
    """Show these tallies on ``registry`` (its one :class:`RetryMetrics`)."""
    metrics = families_for(RetryMetrics, registry)
    for tally in tallies:
        metrics.add(tally)
