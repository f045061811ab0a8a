"""The scheduling queue on a hand-moved clock: where a pod goes after each attempt and event, its backoff (1 s
doubling to 10 s), the 5-minute flush of unschedulable pods, gangs taken whole, and when the scheduler must wake."""

from __future__ import annotations

import pytest

from mxjob_controller.local.scheduler.queue import (
    ACTIVE,
    BACKOFF,
    IN_FLIGHT,
    MAX_IN_UNSCHEDULABLE,
    UNSCHEDULABLE,
    SchedulingQueue,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


def failed_once(queue: SchedulingQueue, key: str = "default/a") -> None:
    queue.add(key)
    assert queue.pop() == [key]
    queue.unschedulable(key)


def test_a_new_pod_is_active_and_a_pod_that_does_not_fit_is_not_tried_again_without_an_event(clock):
    queue = SchedulingQueue(clock)
    queue.add("default/a")
    assert queue.ready() and queue.next_due() == clock.now
    assert queue.pop() == ["default/a"] and queue.where("default/a") == IN_FLIGHT
    assert queue.pop() == []                                   # in flight: not taken twice
    queue.unschedulable("default/a")
    assert queue.where("default/a") == UNSCHEDULABLE and queue.attempts_of("default/a") == 1
    for _ in range(10):                                        # its backoff long over: still nothing to do
        clock.step(MAX_IN_UNSCHEDULABLE / 20)
        assert not queue.ready() and queue.pop() == []
    assert queue.next_due() is not None and queue.next_due() >= 1000.0 + MAX_IN_UNSCHEDULABLE


def test_an_event_moves_a_pod_past_its_backoff_to_active(clock):
    queue = SchedulingQueue(clock)
    failed_once(queue)
    clock.step(1.0)
    assert queue.move_all("AssignedPodDelete") == 1
    assert queue.where("default/a") == ACTIVE
    assert queue.pop() == ["default/a"]


def test_an_event_during_the_backoff_waits_for_it_when_other_pods_are_active(clock):
    queue = SchedulingQueue(clock)
    failed_once(queue)
    queue.move_all("NodeUpdate")
    assert queue.where("default/a") == BACKOFF
    queue.add("default/new")
    assert queue.pop() == ["default/new"]                      # the active pod first; the backed-off one waits
    queue.unschedulable("default/new")
    # now nothing is active: the pod in backoff is taken at once (SchedulerPopFromBackoffQ)
    assert queue.ready() and queue.pop() == ["default/a"]


def test_without_pop_from_backoff_a_pod_waits_out_its_backoff(clock):
    queue = SchedulingQueue(clock, pop_from_backoff=False)
    failed_once(queue)
    queue.move_all("NodeUpdate")
    assert not queue.ready() and queue.next_due() == 1001.0
    clock.step(0.999)
    assert queue.pop() == []
    clock.step(0.001)
    assert queue.pop() == ["default/a"]


def test_the_backoff_doubles_from_1_s_to_at_most_10_s(clock):
    queue = SchedulingQueue(clock, pop_from_backoff=False)
    assert [queue.backoff(n) for n in range(7)] == [0.0, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]
    assert queue.backoff(10_000) == 10.0
    queue.add("default/a")
    for expected in (1.0, 2.0, 4.0, 8.0, 10.0, 10.0):
        assert queue.pop() == ["default/a"]
        queue.unschedulable("default/a")
        queue.move_all("AssignedPodDelete")
        assert queue.next_due() == clock.now + expected
        clock.step(expected)


def test_a_move_request_while_a_pod_is_tried_sends_it_to_backoff_not_unschedulable(clock):
    queue = SchedulingQueue(clock)
    queue.add("default/a")
    assert queue.pop() == ["default/a"]
    queue.move_all("AssignedPodDelete")      # the pass may have read the cluster before this
    queue.unschedulable("default/a")
    assert queue.where("default/a") == BACKOFF
    assert queue.pop() == ["default/a"]      # tried again, as nothing else is active
    queue.unschedulable("default/a")
    assert queue.where("default/a") == UNSCHEDULABLE


def test_a_pod_left_unschedulable_for_5_minutes_is_tried_again(clock):
    queue = SchedulingQueue(clock)
    failed_once(queue)
    clock.step(MAX_IN_UNSCHEDULABLE - 1)
    assert not queue.ready()
    due = queue.next_due()
    assert due is not None and due >= 1000.0 + MAX_IN_UNSCHEDULABLE
    clock.now = due                          # the look for such pods (every 30 s) comes due
    assert queue.ready() and queue.pop() == ["default/a"]
    assert queue.stats().moves.get("UnschedulableTimeout") == 1


def test_an_error_backs_off_and_is_never_taken_early(clock):
    queue = SchedulingQueue(clock)
    queue.add("default/a")
    queue.pop()
    queue.error("default/a")
    assert queue.where("default/a") == BACKOFF
    assert not queue.ready() and queue.next_due() == clock.now + 1.0   # no retry loop on a failing server
    clock.step(1.0)
    assert queue.pop() == ["default/a"]


def test_a_gang_is_taken_whole_and_moved_by_its_podgroup(clock):
    queue = SchedulingQueue(clock)
    for key in ("default/g-0", "default/g-1", "default/solo"):
        queue.add(key, "default/g" if key.startswith("default/g") else None)
    for key in queue.pop():
        queue.unschedulable(key)
    clock.step(20)
    assert queue.move_all("PodGroupUpdate", ["default/g"]) == 2
    assert queue.where("default/solo") == UNSCHEDULABLE
    assert sorted(queue.pop()) == ["default/g-0", "default/g-1"]
    queue.unschedulable("default/g-0")
    queue.unschedulable("default/g-1")
    queue.add("default/g-0", "default/g")    # one member changed: the whole gang is tried
    assert sorted(queue.pop()) == ["default/g-0", "default/g-1"]


def test_sync_adds_what_waits_and_drops_what_no_longer_does(clock):
    queue = SchedulingQueue(clock)
    failed_once(queue, "default/a")
    queue.add("default/b")
    queue.sync({"default/a": None, "default/c": None})
    assert queue.where("default/b") is None
    assert queue.where("default/a") == UNSCHEDULABLE          # what it knew keeps its place and attempts
    assert queue.pop() == ["default/c"]
    queue.done("default/c")
    assert queue.where("default/c") is None
    stats = queue.stats()
    assert (stats.active, stats.backoff, stats.unschedulable, stats.in_flight, stats.attempts) == (0, 0, 1, 0, 1)


def test_a_changed_pod_is_active_again_keeping_its_attempts(clock):
    queue = SchedulingQueue(clock)
    failed_once(queue)
    queue.add("default/a")
    assert queue.where("default/a") == ACTIVE and queue.attempts_of("default/a") == 1
