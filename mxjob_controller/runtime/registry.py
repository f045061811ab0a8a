"""The process's metrics registry, and one set of metric families per registry.

Why a dedicated registry rather than prometheus_client's global one: ``/metrics`` must show exactly what this
process registered (training-operator's omitted counters it had put on another registry), and tests run many
controllers in one interpreter without name clashes. The caller creates the registry once
(:func:`new_registry`) and hands it to every component (work queues, controllers, the leader elector, the
``/metrics`` endpoint).

Guarantee of :func:`families_for`: a component class that registers metric families gets exactly one instance
per registry, however many controllers or queues share it, so families are registered once and each user takes
its own labelled children.
"""

from __future__ import annotations

import threading
import weakref
from typing import TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

F = TypeVar("F")

_instances: weakref.WeakKeyDictionary[CollectorRegistry, dict[type, object]] = weakref.WeakKeyDictionary()
_instances_lock = threading.Lock()


def new_registry() -> CollectorRegistry:
    """A registry with the process (``process_*``: CPU, memory, open fds, start time), platform
    (``python_info``) and garbage-collector (``python_gc_*``) collectors, as controller-runtime's registry holds
    the process and Go runtime collectors."""
    registry = CollectorRegistry(auto_describe=True)
    # Fresh instances: prometheus_client's module-level ones belong to its global registry.
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def families_for(cls: type[F], registry: CollectorRegistry) -> F:
    """The one ``cls`` instance of ``registry``, created as ``cls(registry)`` (registering its families) on first
    use."""
    with _instances_lock:
        per_registry = _instances.setdefault(registry, {})
        found = per_registry.get(cls)
        if found is None:
            found = per_registry[cls] = cls(registry)  # type: ignore[call-arg]
        return found  # type: ignore[return-value]
