"""The collector policy of the long-running processes (``mxjob_controller/gc_policy.py``): what survives a full
collection is frozen, and once a period everything is thawed so that a cycle that died frozen is collected."""

from __future__ import annotations

import gc
import time
import weakref

from mxjob_controller import gc_policy


def test_survivors_are_frozen_and_thawed_once_a_period(monkeypatch):
    try:
        monkeypatch.setattr(gc_policy, "_thawed_at", time.monotonic())
        gc_policy._after_collection("stop", {"generation": 1})
        gc_policy._after_collection("start", {"generation": 2})
        assert gc.get_freeze_count() == 0                        # only the end of a full collection freezes
        gc_policy._after_collection("stop", {"generation": 2})
        assert gc.get_freeze_count() > 0
        monkeypatch.setattr(gc_policy, "_thawed_at", time.monotonic() - gc_policy.THAW_SECONDS - 1)
        gc_policy._after_collection("stop", {"generation": 2})
        assert gc.get_freeze_count() == 0                        # the period is over: all thawed ...
        assert time.monotonic() - gc_policy._thawed_at < 60      # ... and the next period starts now
    finally:
        gc.unfreeze()


def test_a_cycle_frozen_while_alive_is_collected_after_the_thaw(monkeypatch):
    class Node:
        pass

    collected = []
    try:
        node = Node()
        node.self = node
        ref = weakref.ref(node, lambda _r: collected.append(True))
        monkeypatch.setattr(gc_policy, "_thawed_at", time.monotonic())
        gc_policy._after_collection("stop", {"generation": 2})   # frozen while alive
        del node
        gc.collect()
        assert ref() is not None                                 # frozen: not collected
        monkeypatch.setattr(gc_policy, "_thawed_at", time.monotonic() - gc_policy.THAW_SECONDS - 1)
        gc_policy._after_collection("stop", {"generation": 2})   # the thaw
        gc.collect()
        assert ref() is None and collected
    finally:
        gc.unfreeze()
