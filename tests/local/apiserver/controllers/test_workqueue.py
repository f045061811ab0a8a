"""The built-in controllers' queue (local/apiserver/controllers/workqueue.py): the runtime's work queue
semantics, plus parking and wait_idle, under a real worker thread."""

from __future__ import annotations

import itertools
import threading
import time

from mxjob_controller.local.apiserver.controllers.workqueue import ControllerQueue, Park
from tests.support import wait_for


def _queue(handle, name: str = "test-controller-queue") -> ControllerQueue:
    q: ControllerQueue = ControllerQueue(name, handle)
    q.start()
    return q


def test_a_key_added_while_handled_is_handled_again_and_duplicates_once():
    handled: list[str] = []
    inside, release = threading.Event(), threading.Event()

    def handle(key: str) -> None:
        handled.append(key)
        if key == "slow" and handled.count("slow") == 1:
            inside.set()
            release.wait(10)

    q = _queue(handle)
    try:
        q.add("slow")
        assert inside.wait(10)
        for _ in range(3):
            q.add("slow")  # while it is handled: once more afterwards, not three times
        assert not q.idle()
        release.set()
        assert q.wait_idle(10)
        assert handled == ["slow", "slow"]
        threads = [t.name for t in threading.enumerate()]
        assert "test-controller-queue" in threads
    finally:
        assert q.stop(5)


def test_a_failing_key_is_retried_with_backoff_and_counts_as_busy():
    attempts: list[float] = []

    def handle(key: str) -> None:
        attempts.append(time.monotonic())
        if len(attempts) < 5:
            raise RuntimeError("not yet")

    q = _queue(handle)
    try:
        q.add("k")
        assert q.wait_idle(20), "idle only once the key succeeded"
        assert len(attempts) == 5
        gaps = [b - a for a, b in itertools.pairwise(attempts)]
        assert gaps[-1] >= 0.035, f"backoff doubles from 5 ms: {gaps}"  # 5, 10, 20, 40 ms
    finally:
        q.stop(5)


def test_a_parked_key_waits_for_unpark_and_does_not_count_as_busy():
    ready = threading.Event()
    handled: list[str] = []

    def handle(key: str) -> None:
        handled.append(key)
        if not ready.is_set():
            raise Park

    q = _queue(handle)
    try:
        q.add("owner-of-unserved-kind")
        wait_for(lambda: q.parked() == ["owner-of-unserved-kind"], what="the key to park")
        assert q.wait_idle(1)
        assert handled == ["owner-of-unserved-kind"], "no retry, no backoff while parked"
        ready.set()
        q.unpark()
        assert q.wait_idle(10)
        assert handled == ["owner-of-unserved-kind"] * 2 and q.parked() == []
    finally:
        q.stop(5)


def test_stop_is_bounded_by_its_timeout_when_a_handler_is_stuck():
    inside, release = threading.Event(), threading.Event()

    def handle(key: str) -> None:
        inside.set()
        release.wait(30)

    q = _queue(handle, "test-stuck-queue")
    q.add("k")
    assert inside.wait(10)
    started = time.monotonic()
    assert q.stop(0.3) is False
    assert time.monotonic() - started < 2
    release.set()
    wait_for(lambda: "test-stuck-queue" not in [t.name for t in threading.enumerate()], what="the worker to end")
