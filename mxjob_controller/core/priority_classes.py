"""PriorityClass values, read from an informer's cache (``scheduling.k8s.io/v1``), never from the API per reconcile.

Gang scheduling orders a job's replica types by the value of their pods' priority class to choose which pods
``minResources`` counts. training-operator read them through a lister whose informer it never started, so every
class looked missing (every value 0); here the informer is one of the controller's caches, synced before the
first reconcile.
"""

from __future__ import annotations

import logging

from mxjob_controller.runtime.client import Resource
from mxjob_controller.runtime.informer import SharedInformer

log = logging.getLogger(__name__)

PRIORITY_CLASSES = Resource("scheduling.k8s.io", "v1", "priorityclasses", namespaced=False, kind="PriorityClass")


class PriorityClasses:
    def __init__(self, informer: SharedInformer) -> None:
        self.informer = informer

    def value(self, name: str) -> int:
        """The class's ``value``; 0 for no class, or one that does not exist (as upstream, with a log line)."""
        if not name:
            return 0
        obj = self.informer.store.get(name)
        value = obj.get("value") if obj is not None else None
        if not isinstance(value, int) or isinstance(value, bool):
            log.info("priority class %s not found: its pods count with priority 0", name)
            return 0
        return value
