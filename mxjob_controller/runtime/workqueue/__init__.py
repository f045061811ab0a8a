"""Work queues with client-go's semantics: fair, stingy, never concurrent per item, delayed and rate-limited adds,
Prometheus metrics. One concept per module, as client-go's ``util/workqueue``."""

from mxjob_controller.runtime.workqueue.delaying_queue import DelayingQueue
from mxjob_controller.runtime.workqueue.queue import QueueShutDownError, WorkQueue
from mxjob_controller.runtime.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from mxjob_controller.runtime.workqueue.rate_limiting_queue import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "QueueShutDownError",
    "RateLimiter",
    "RateLimitingQueue",
    "WorkQueue",
    "default_controller_rate_limiter",
]
