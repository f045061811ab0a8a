"""Shared informers for a whole process (client-go's ``SharedInformerFactory``).

    factory = SharedInformerFactory(client, namespace=args.namespace, transform=drop_managed_fields)
    pods = factory.informer(PODS, label_selector="app.kubernetes.io/managed-by=my-operator")
    pods.add_handler(on_add=..., on_delete=...)
    factory.start()
    if not factory.wait_for_cache_sync(timeout=60): ...
    ...
    factory.stop()

Guarantees:
- One list+watch per (resource, namespace, label selector, field selector): asking twice returns the same
  informer, so every controller of the process shares one cache and one watch per resource.
- ``namespace`` (the ``--namespace`` flag) scopes every namespaced resource's informer unless a call names
  another; cluster-scoped resources ignore it.
- Informers asked for after :meth:`start` are started at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping

from mxjob_controller.kube.selectors import parse_field_selector, parse_label_selector
from mxjob_controller.runtime.backoff import BackoffPolicy
from mxjob_controller.runtime.cache_keys import IndexFunc
from mxjob_controller.runtime.client import Client, Resource
from mxjob_controller.runtime.informer import SharedInformer, Transform

log = logging.getLogger(__name__)

_ALL = object()  # "use the factory's namespace"
InformerKey = tuple[Resource, str | None, str, str]


class SharedInformerFactory:
    def __init__(self, client: Client, *, namespace: str | None = None, default_resync: float = 0.0,
                 transform: Transform | None = None, backoff_policy: BackoffPolicy | None = None,
                 page_size: int = 500, watch_timeout: tuple[int, int] = (300, 600)) -> None:
        self.client = client
        self.namespace = namespace or None
        self.default_resync = default_resync
        self.transform = transform
        self.backoff_policy = backoff_policy
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self._lock = threading.Lock()
        self._informers: dict[InformerKey, SharedInformer] = {}
        self._started = False
        self._stopped = False

    def informer(self, resource: Resource, *, namespace: str | object | None = _ALL,
                 label_selector: str | None = None, field_selector: str | None = None,
                 resync_period: float | None = None, indexers: Mapping[str, IndexFunc] | None = None,
                 transform: Transform | None = None) -> SharedInformer:
        """The shared informer for this resource and scope, created on first request.

        ``namespace``: omitted = the factory's; None = all namespaces. ``indexers`` are added to the shared
        store. A ``transform`` other than the informer's (or the factory's) is refused: the cache is shared.
        """
        ns = self.namespace if namespace is _ALL else namespace
        ns = ns if resource.namespaced else None
        labels = str(parse_label_selector(label_selector))   # validates, and normalizes the sharing key
        parse_field_selector(field_selector)                # validates
        fields = ",".join(part.strip() for part in (field_selector or "").split(",") if part.strip())
        key: InformerKey = (resource, ns if isinstance(ns, str) else None, labels, fields)
        wanted = transform or self.transform
        with self._lock:
            if self._stopped:
                raise RuntimeError("the informer factory was stopped")
            informer = self._informers.get(key)
            if informer is None:
                informer = SharedInformer(
                    self.client, resource, namespace=key[1], label_selector=labels or None,
                    field_selector=fields or None,
                    resync_period=self.default_resync if resync_period is None else resync_period,
                    transform=wanted, indexers=indexers, backoff_policy=self.backoff_policy,
                    page_size=self.page_size, watch_timeout=self.watch_timeout)
                self._informers[key] = informer
                if self._started:
                    informer.start()
                return informer
        if transform is not None and transform is not informer.transform:
            raise ValueError(f"informer {informer.name} already caches with another transform")
        if indexers:
            informer.store.add_indexers(indexers)
        return informer

    def informers(self) -> list[SharedInformer]:
        with self._lock:
            return list(self._informers.values())

    def start(self) -> None:
        """Start every informer not yet started (idempotent)."""
        with self._lock:
            if self._stopped:
                raise RuntimeError("the informer factory was stopped")
            self._started = True
            informers = list(self._informers.values())
        for informer in informers:
            informer.start()

    def has_synced(self) -> bool:
        """Whether every started informer has filled its cache once (non-blocking: for readiness probes)."""
        return all(i.started and i.has_synced() for i in self.informers())

    def wait_for_cache_sync(self, timeout: float) -> bool:
        """Wait until every started informer has its initial list; False (naming the laggards in the log) if
        ``timeout`` passes first."""
        deadline = time.monotonic() + timeout
        pending = [i for i in self.informers() if i.started]
        for informer in pending:
            informer.wait_for_cache_sync(max(0.0, deadline - time.monotonic()))
        unsynced = [i.name for i in pending if not i.has_synced()]
        if unsynced:
            log.warning("caches not synced after %.1fs: %s", timeout, ", ".join(unsynced))
        return not unsynced

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop every informer; False if some thread outlived ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._stopped = True
            informers = list(self._informers.values())
        for informer in informers:
            informer.reflector.stop()  # end every watch at once, then join each
        clean = True
        for informer in informers:
            clean = informer.stop(max(0.0, deadline - time.monotonic())) and clean
        return clean
