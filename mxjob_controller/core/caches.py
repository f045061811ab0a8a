"""Read access to the informer caches a job controller works from: jobs by key, children by controller UID.

Jobs may be cached by several informers (one per watched namespace); children by several too (per namespace, and
per label selector: the children we made, and the legacy ones we may adopt). Reads go to the store of each, never to
the API. Objects returned belong to the caches: read-only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mxjob_controller.runtime.cache_keys import CONTROLLER_UID_INDEX
from mxjob_controller.runtime.informer import SharedInformer


class JobCaches:
    def __init__(self, jobs: Sequence[SharedInformer], pods: Sequence[SharedInformer],
                 services: Sequence[SharedInformer]) -> None:
        self.jobs = tuple(jobs)
        self.pod_informers = tuple(pods)
        self.service_informers = tuple(services)

    def job(self, key: str) -> dict[str, Any] | None:
        for informer in self.jobs:
            obj = informer.store.get(key)
            if obj is not None:
                return obj
        return None

    def pods(self, controller_uid: str) -> list[dict[str, Any]]:
        """Every cached pod whose controller reference carries ``controller_uid``."""
        return _controlled(self.pod_informers, controller_uid)

    def services(self, controller_uid: str) -> list[dict[str, Any]]:
        return _controlled(self.service_informers, controller_uid)

    def informers(self) -> tuple[SharedInformer, ...]:
        return (*self.jobs, *self.pod_informers, *self.service_informers)

    def synced(self) -> bool:
        return all(informer.has_synced() for informer in self.informers())


def _controlled(informers: Sequence[SharedInformer], uid: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for informer in informers:
        for obj in informer.store.by_index(CONTROLLER_UID_INDEX, uid):
            obj_uid = (obj.get("metadata") or {}).get("uid") or ""
            if obj_uid not in seen:
                seen.add(obj_uid)
                out.append(obj)
    return out
