"""The client's retries (runtime/client/retries.py), pure: the wait after a refusal is the server's
``Retry-After`` plus at most a fifth, spread, and never past the request's deadline. (A 429 retried end to end:
test_budget.py.)"""

from __future__ import annotations

import pytest

from mxjob_controller.runtime.client.retries import jittered_wait


def test_a_retry_waits_the_servers_time_plus_at_most_a_fifth_never_past_the_deadline():
    assert jittered_wait(1.0, 10.0, draw=lambda: 0.0) == 1.0
    assert jittered_wait(1.0, 10.0, draw=lambda: 0.999) == pytest.approx(1.2, abs=0.001)
    assert jittered_wait(2.0, 2.1, draw=lambda: 0.999) == 2.1       # cut at the deadline, never below the server's
    assert jittered_wait(2.0, 1.9) is None                          # the server's own wait does not fit: give up
    waits = {round(jittered_wait(1.0, 10.0), 3) for _ in range(50)}
    assert len(waits) > 10 and all(1.0 <= w <= 1.2 for w in waits)   # spread, so refused clients do not come back
    # together
