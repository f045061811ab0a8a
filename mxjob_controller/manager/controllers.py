"""Which controllers ``run`` runs: one factory function, the only place the manager learns about job kinds.

The manager needs from a controller exactly what ``core.job_controller.JobController`` offers: ``start(cancel)``
(returns once its caches have their initial lists and its workers run; raises if they cannot sync, and
:class:`StartCancelledError` as soon as ``cancel`` is set meanwhile), ``stop(deadline) -> bool`` (stop taking work,
let in-flight reconciles finish, stop every thread, within ``deadline`` seconds; also after a failed start), and
``factory.has_synced()`` for ``/readyz``. Several frameworks (``--frameworks mxnet,tensorflow``) run as one
:class:`Controllers` of that same shape. The errors a start can end with that the manager reports in its own words
are re-exported here. Tests hand the manager another factory through the same signature.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from mxjob_controller.core.child_writes import batch_cap_for_budget
from mxjob_controller.core.job_controller import (
    CacheSyncTimeoutError,
    ControllerOptions,
    JobController,
    StartCancelledError,
)
from mxjob_controller.core.podgroups import PodGroupAPIMissingError
from mxjob_controller.frameworks import DEFAULT_FRAMEWORKS, FRAMEWORKS
from mxjob_controller.manager.settings import RunSettings
from mxjob_controller.runtime.client import Client

__all__ = ["CacheSyncTimeoutError", "ControllerFactory", "Controllers", "ManagedController", "PodGroupAPIMissingError",
           "StartCancelledError", "build_controllers", "new_controller"]


class CacheFactory(Protocol):
    def has_synced(self) -> bool: ...


class ManagedController(Protocol):
    """What the manager runs (``JobController`` and :class:`Controllers` have this shape)."""

    factory: CacheFactory

    def start(self, cancel: threading.Event | None = None) -> Any: ...

    def stop(self, deadline: float = ...) -> bool: ...


class ControllerFactory(Protocol):
    def __call__(self, client: Client, settings: RunSettings, registry: CollectorRegistry) -> ManagedController: ...


class _AllSynced:
    def __init__(self, controllers: Sequence[JobController]) -> None:
        self._controllers = controllers

    def has_synced(self) -> bool:
        return all(c.factory.has_synced() for c in self._controllers)


class Controllers:
    """Several frameworks' controllers as one: started in order (a failed or cancelled start raises, and the
    manager's stop then stops those already started), stopped in reverse order within one deadline, ready when
    all are."""

    def __init__(self, controllers: Sequence[JobController]) -> None:
        self.controllers = list(controllers)
        self.factory = _AllSynced(self.controllers)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.controllers]

    def start(self, cancel: threading.Event | None = None) -> Controllers:
        for controller in self.controllers:
            controller.start(cancel)
        return self

    def stop(self, deadline: float = 30.0) -> bool:
        end = time.monotonic() + deadline
        clean = True
        for controller in reversed(self.controllers):
            clean = controller.stop(max(0.0, end - time.monotonic())) and clean
        return clean


def new_controller(client: Client, settings: RunSettings, registry: CollectorRegistry) -> ManagedController:
    """The controller of each framework in ``settings.frameworks`` (default: every default framework), scoped and
    sized by the flags, all reporting on the process's registry: one :class:`JobController` alone, or several as
    :class:`Controllers`."""
    # Batches sized to the budget in force: the flags', or, at the defaults, the one the server called for.
    qps = settings.client_budget()[0] if settings.explicit_client_budget else client.budget.current().qps
    options = ControllerOptions(namespaces=settings.namespaces or None, threadiness=settings.threadiness,
                                resync_period=settings.resync_period, registry=registry,
                                cache_sync_timeout=settings.cache_sync_timeout,
                                gang_scheduler_name=settings.gang_scheduler_name or None,
                                event_qps=settings.event_qps, event_burst=settings.event_burst,
                                slice_batch=batch_cap_for_budget(qps))
    return build_controllers(client, options, settings.frameworks or DEFAULT_FRAMEWORKS)


def build_controllers(client: Client, options: ControllerOptions, names: Sequence[str]) -> ManagedController:
    """One controller per framework named, with the same options and client: alone, or several as
    :class:`Controllers`."""
    built = [JobController(client, options, FRAMEWORKS[name].framework()) for name in names]
    return built[0] if len(built) == 1 else Controllers(built)
