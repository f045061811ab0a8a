"""The fake clock every timing of the work-queue tests runs on."""

from __future__ import annotations

import pytest

from mxjob_controller.runtime.clock import FakeClock
from tests.runtime.workqueue.support import T0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)
