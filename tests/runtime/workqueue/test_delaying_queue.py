"""The delaying queue (runtime/workqueue/delaying_queue.py), on a fake clock: delayed adds in time order and never
early, the earliest time kept, a timer thread started with the first delayed add only and stopped within its
deadline."""

from __future__ import annotations

import threading
import time

import pytest

from mxjob_controller.runtime.clock import FakeClock
from mxjob_controller.runtime.controller import Controller
from mxjob_controller.runtime.workqueue import (
    DelayingQueue,
    QueueShutDownError,
)
from mxjob_controller.runtime.workqueue.delaying_queue import MAX_WAIT
from tests.runtime.workqueue.support import T0, drain, settled
from tests.support import wait_for

# -- delays ------------------------------------------------------------------------------------------------------

def test_add_after_adds_in_time_order_and_never_early(clock):
    q = DelayingQueue(clock=clock)
    try:
        q.add_after("a", 3)
        q.add_after("b", 1)
        q.add_after("c", 2)
        q.add_after("now", 0)
        assert drain(q) == ["now"]
        settled(clock, T0 + 1)
        clock.step(0.75)
        settled(clock, T0 + 1)
        assert len(q) == 0
        clock.step(0.25)
        settled(clock, T0 + 2)
        assert drain(q) == ["b"]
        clock.step(5)  # both "c" and "a" are due: they arrive in their time order
        settled(clock, T0 + 6 + MAX_WAIT)
        assert drain(q) == ["c", "a"]
    finally:
        q.shutdown()


def test_add_after_keeps_the_earliest_time_and_adds_once(clock):
    q = DelayingQueue(clock=clock)
    try:
        q.add_after("x", 60)
        q.add_after("x", 5)  # earlier: wins
        q.add_after("x", 30)  # later: ignored
        settled(clock, T0 + 5)
        clock.step(5)
        settled(clock, T0 + 5 + MAX_WAIT)
        assert drain(q) == ["x"]
        clock.step(100)  # past 30 and 60: nothing more comes
        settled(clock, T0 + 105 + MAX_WAIT)
        assert len(q) == 0
    finally:
        q.shutdown()


def test_a_due_item_already_queued_is_coalesced(clock):
    q = DelayingQueue(clock=clock)
    try:
        q.add("x")
        q.add_after("x", 1)
        clock.step(1)
        settled(clock, T0 + 1 + MAX_WAIT)
        assert drain(q) == ["x"]
    finally:
        q.shutdown()


def test_shutdown_stops_the_timer_thread_and_drops_waiting_items(clock):
    q = DelayingQueue("stopper", clock=clock)
    q.add_after("x", 1)
    timers = [t for t in threading.enumerate() if t.name == "workqueue-delay:stopper"]
    assert len(timers) == 1
    q.shutdown()
    assert not timers[0].is_alive()
    clock.step(2)
    q.add_after("y", 0)
    with pytest.raises(QueueShutDownError):
        q.get(timeout=1)


def test_the_timer_thread_starts_with_the_first_delayed_add_only():
    """A queue (or a controller) created and never used for delays leaves no thread behind."""
    q = DelayingQueue("lazy")
    q.add("now")
    q.add_after("now-too", 0)
    assert not [t for t in threading.enumerate() if t.name == "workqueue-delay:lazy"]
    Controller("never-started", lambda key: None)  # builds its rate-limited queue
    assert not [t for t in threading.enumerate() if t.name.startswith("workqueue-delay:never-started")]
    q.add_after("later", 60)
    assert [t for t in threading.enumerate() if t.name == "workqueue-delay:lazy"]
    assert q.shutdown(timeout=5)
    assert not [t for t in threading.enumerate() if t.name == "workqueue-delay:lazy"]
    assert DelayingQueue("unused").shutdown(timeout=0)  # nothing to stop


class StallingClock(FakeClock):
    """A fake clock that stalls the timer thread (and only it) inside ``now()`` until released: a timer thread
    stuck where the queue cannot interrupt it."""

    def __init__(self) -> None:
        super().__init__(T0)
        self.stall = threading.Event()
        self.stalled = threading.Event()
        self.release = threading.Event()

    def now(self) -> float:
        if self.stall.is_set() and threading.current_thread().name.startswith("workqueue-delay:"):
            self.stalled.set()
            self.release.wait(30)
        return super().now()


@pytest.mark.parametrize("how", ["shutdown", "shutdown_with_drain"])
def test_shutdown_waits_for_a_stuck_timer_thread_no_longer_than_its_deadline(how):
    clock = StallingClock()
    q = DelayingQueue(f"stuck-{how}", clock=clock)
    q.add_after("x", 5)
    settled(clock, T0 + 5)
    clock.stall.set()
    clock.step(1)  # wakes the timer, which stalls reading the time
    assert clock.stalled.wait(10)
    started = time.monotonic()
    assert getattr(q, how)(timeout=0.3) is False
    assert time.monotonic() - started < 1.5  # not a fixed 5 s
    clock.release.set()
    wait_for(lambda: not [t for t in threading.enumerate() if t.name == f"workqueue-delay:stuck-{how}"],
             what="the timer thread ends once released")
