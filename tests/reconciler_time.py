"""Time for the reconciler's timing tests: one fake clock drives both the controller's work queue (its delayed
requeues) and the wall clock it writes into status and compares deadlines with, so a test moves time by hand and
every delay (crash-loop back-off, deadline, TTL, Unknown timeout) fires exactly when the test says, never by
sleeping."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from mxjob_controller.runtime.clock import FakeClock

_CLOCK_START = 1000.0


@dataclass
class FakeTime:
    clock: FakeClock = field(default_factory=lambda: FakeClock(start=_CLOCK_START))
    epoch: float = field(default_factory=lambda: float(int(time.time())))   # near the real time: pods' timestamps

    def wall(self) -> float:
        return self.epoch + self.clock.now() - _CLOCK_START

    def step(self, seconds: float) -> None:
        self.clock.step(seconds)

    def options(self) -> dict[str, Any]:
        """The controller options that put it on this time."""
        return {"clock": self.clock, "wall": self.wall}
