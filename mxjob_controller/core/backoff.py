"""How often a job may restart its replicas: the crash-loop back-off of one replica index, and ``backoffLimit``
for the whole job. Pure.

Crash-loop back-off, as a kubelet restarts a crashing container: the first restart of an index is immediate, the
next ones wait 10 s, 20 s, 40 s … doubling up to 5 minutes; a pod that ran for 10 minutes before it failed starts
the sequence again (the kubelet forgets a back-off after twice its cap). A controller that deletes and recreates
pods without it turns one bad node or one bad input into an API storm.

``backoffLimit`` counts restarts (the kubelet's container restarts of ``OnFailure``/``Always`` pods, and the
controller's own pod restarts); the job fails when the count reaches the limit. ``0`` allows no restart at all: the
first one fails the job. No limit: restarts go on for ever (each one still backs off).
"""

from __future__ import annotations

from dataclasses import dataclass

from mxjob_controller.runtime.backoff import exponential_delay

BACKOFF_LIMIT_MESSAGE = "Job {name} has failed because it has reached the specified backoff limit"


@dataclass(frozen=True, slots=True)
class CrashLoopBackoff:
    initial: float = 10.0        # the delay before the second restart
    cap: float = 300.0           # the longest delay
    reset_after: float = 600.0   # a pod that ran this long before failing starts the sequence again

    def delay(self, restarts_before: int) -> float:
        """Seconds to wait before a restart when the index was already restarted ``restarts_before`` times
        (since the last reset): 0, 10, 20, 40 … up to ``cap``."""
        if restarts_before <= 0:
            return 0.0
        return exponential_delay(self.initial, restarts_before - 1, self.cap)

    def resets(self, ran_for: float | None) -> bool:
        """Whether a pod that ran ``ran_for`` seconds before it failed (None: unknown) resets the sequence."""
        return ran_for is not None and ran_for >= self.reset_after


DEFAULT_CRASH_LOOP = CrashLoopBackoff()


def past_backoff_limit(restarts: int, limit: int | None) -> bool:
    """Whether ``restarts`` counted restarts exhaust ``backoffLimit`` (None: unlimited)."""
    if limit is None:
        return False
    return restarts > 0 and restarts >= limit


def backoff_limit_message(name: str) -> str:
    return BACKOFF_LIMIT_MESSAGE.format(name=name)
