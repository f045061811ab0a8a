"""Which controller ``run`` runs: one factory function, the only place the manager learns about MXJobs.

The manager needs from a controller exactly what ``mxnet.controller.MXJobController`` offers: ``start(cancel)``
(returns once its caches have their initial lists and its workers run; raises if they cannot sync, and
:class:`StartCancelledError` as soon as ``cancel`` is set meanwhile), ``stop(deadline) -> bool`` (stop taking work,
let in-flight reconciles finish, stop every thread, within ``deadline`` seconds; also after a failed start), and
``factory.has_synced()`` for ``/readyz``. The errors a start can end with that the manager reports in its own words
are re-exported here. Tests hand the manager another factory through the same signature.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from mxjob_controller.manager.settings import RunSettings
from mxjob_controller.mxnet.controller import (
    CONTROLLER_NAME,
    ControllerOptions,
    MXJobController,
    PodGroupAPIMissingError,
    StartCancelledError,
)
from mxjob_controller.runtime.client import Client

__all__ = ["CONTROLLER_NAME", "ControllerFactory", "ManagedController", "PodGroupAPIMissingError",
           "StartCancelledError", "new_controller"]


class CacheFactory(Protocol):
    def has_synced(self) -> bool: ...


class ManagedController(Protocol):
    """What the manager runs (``mxnet.controller.MXJobController`` has this shape)."""

    factory: CacheFactory

    def start(self, cancel: threading.Event | None = None) -> Any: ...

    def stop(self, deadline: float = ...) -> bool: ...


ControllerFactory = Callable[[Client, RunSettings, CollectorRegistry], ManagedController]


def new_controller(client: Client, settings: RunSettings, registry: CollectorRegistry) -> ManagedController:
    """The MXJob controller, scoped and sized by the flags, reporting on the process's registry."""
    options = ControllerOptions(namespaces=settings.namespaces or None, threadiness=settings.threadiness,
                                resync_period=settings.resync_period, registry=registry,
                                gang_scheduler_name=settings.gang_scheduler_name or None,
                                event_qps=settings.event_qps, event_burst=settings.event_burst)
    return MXJobController(client, options)
