"""The queue controllers use: a delaying queue whose retries wait as a rate limiter says (client-go's
``rateLimitingType``).

The worker's contract: after processing a key, call :meth:`RateLimitingQueue.forget` on success (resetting its
back-off) or :meth:`RateLimitingQueue.add_rate_limited` on failure, then :meth:`WorkQueue.done` either way. A key
that is never forgotten keeps its failure count, and its back-off keeps growing.
"""

from __future__ import annotations

from collections.abc import Hashable

from prometheus_client import CollectorRegistry

from mxjob_controller.runtime.clock import Clock
from mxjob_controller.runtime.workqueue.delaying_queue import DelayingQueue
from mxjob_controller.runtime.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter


class RateLimitingQueue(DelayingQueue):
    """A :class:`DelayingQueue` with :meth:`add_rate_limited`; the rate limiter defaults to the controller one,
    sharing the queue's clock."""

    def __init__(self, name: str = "", *, rate_limiter: RateLimiter | None = None,
                 registry: CollectorRegistry | None = None, controller: str | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(name, registry=registry, controller=controller, clock=clock)
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter(self.clock)

    def add_rate_limited(self, item: Hashable) -> None:
        """Add ``item`` once the rate limiter allows it (one more failure of it)."""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: Hashable) -> None:
        """Reset ``item``'s back-off. It does not mark it done: call :meth:`done` as well."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return self.rate_limiter.num_requeues(item)
