"""The client's token bucket (runtime/token_bucket.py), on a fake clock: a burst, then ``qps``; a wait past the
caller's bound refused without taking a token; a long pause saves at most ``burst``; a token given back serves the
next caller."""

from __future__ import annotations

import pytest

from mxjob_controller.runtime.token_bucket import TokenBucket


def test_token_bucket_arithmetic():
    now = [0.0]
    bucket = TokenBucket(qps=10, burst=2, now=lambda: now[0])
    assert [bucket.reserve() for _ in range(4)] == pytest.approx([0.0, 0.0, 0.1, 0.2])
    assert bucket.reserve(max_wait=0.25) is None   # would need 0.3 s: refused, and nothing taken
    now[0] = 0.3
    assert bucket.reserve() == pytest.approx(0.0)
    now[0] = 100.0                         # a long pause saves at most `burst` tokens
    assert [bucket.reserve() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.1])
    bucket.give_back()                     # the last caller gave up: its token serves the next one
    assert bucket.reserve() == pytest.approx(0.1)
