"""The rate limiters (runtime/workqueue/rate_limiters.py): client-go's per-item exponential back-off, its token
bucket, and the default controller limiter as the max of both."""

from __future__ import annotations

import pytest

from mxjob_controller.runtime.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    default_controller_rate_limiter,
)

# -- rate limiting -----------------------------------------------------------------------------------------------

def test_exponential_backoff_is_5ms_doubling_to_1000s_and_forget_resets_it():
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("k") for _ in range(22)]
    expected = [0.005 * 2 ** i for i in range(18)] + [1000.0] * 4
    assert delays == expected
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[17] == 655.36
    assert limiter.num_requeues("k") == 22
    assert limiter.when("other") == 0.005  # per item
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0
    assert [limiter.when("k") for _ in range(3)] == [0.005, 0.01, 0.02]
    for _ in range(5000):  # no overflow however often it fails
        assert limiter.when("k") <= 1000.0


def test_token_bucket_allows_a_burst_of_100_then_10_per_second(clock):
    bucket = BucketRateLimiter(10, 100, clock)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    assert bucket.when("x") == 0.1
    assert bucket.when("y") == 0.2  # each caller reserves its own token
    clock.step(0.25)  # 2.5 tokens back: the debt of 2 is paid, half a token left
    assert bucket.when("z") == pytest.approx(0.05)
    clock.step(1000)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100  # refilled to the burst, no more
    assert bucket.when("x") == 0.1
    assert bucket.num_requeues("x") == 0


def test_default_rate_limiter_is_the_max_of_both(clock):
    limiter = default_controller_rate_limiter(clock)
    assert [limiter.when("k") for _ in range(3)] == [0.005, 0.01, 0.02]
    for i in range(97):
        limiter.when(f"other-{i}")  # the bucket's burst is used up by now
    assert limiter.when("fresh") == 0.1  # the bucket's delay beats the item's 5 ms
    assert limiter.num_requeues("k") == 3
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0
