"""The watch back-off (runtime/backoff.py): doubling with jitter up to its cap, a server's Retry-After obeyed, and a
fresh start after a quiet spell."""

from __future__ import annotations

import random

from mxjob_controller.runtime.backoff import Backoff, BackoffPolicy


def test_backoff_doubles_with_jitter_caps_and_resets():
    now = [0.0]
    backoff = Backoff(BackoffPolicy(), rng=random.Random(1), now=lambda: now[0])
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    for base in bases:
        now[0] += 1
        delay = backoff.next_delay()
        assert base <= delay <= 2 * base
    assert backoff.next_delay(retry_after=90) == 90
    now[0] += 121                                  # two quiet minutes: start over
    assert 0.8 <= backoff.next_delay() <= 1.6
