"""The collector policy of the long-running processes (``mxjob_controller/gc_policy.py``): what survives a collection
of the middle generation is frozen, and once a period everything is thawed and left unfrozen until a full collection
has walked it, so that a cycle that died frozen is collected.

The policy may already be installed in this process (the CLI's tests run its group), so the first test drives the
callback against a stand-in for ``gc`` and the second takes the callback out while it uses the real collector."""

from __future__ import annotations

import gc
import time
import weakref

import pytest

from mxjob_controller import gc_policy


class _Collector:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def freeze(self) -> None:
        self.calls.append("freeze")

    def unfreeze(self) -> None:
        self.calls.append("unfreeze")


@pytest.fixture
def collector(monkeypatch: pytest.MonkeyPatch) -> _Collector:
    """The policy at the start of a period, its collector replaced by one that records the calls."""
    recorder = _Collector()
    monkeypatch.setattr(gc_policy, "gc", recorder)
    monkeypatch.setattr(gc_policy, "_thawed", False)
    monkeypatch.setattr(gc_policy, "_thawed_at", time.monotonic())
    monkeypatch.setattr(gc_policy, "_walked_rss", gc_policy.resident_bytes())
    return recorder


def test_survivors_are_frozen_and_thawed_once_a_period(collector: _Collector, monkeypatch: pytest.MonkeyPatch) -> None:
    gc_policy._after_collection("stop", {"generation": 0})
    gc_policy._after_collection("start", {"generation": 1})
    gc_policy._after_collection("start", {"generation": 2})
    assert collector.calls == []   # the youngest generation's survivors stay young, and only a stop counts
    gc_policy._after_collection("stop", {"generation": 1})
    gc_policy._after_collection("stop", {"generation": 2})
    assert collector.calls == ["freeze", "freeze"]
    monkeypatch.setattr(gc_policy, "_thawed_at", time.monotonic() - gc_policy.THAW_SECONDS - 1)
    gc_policy._after_collection("stop", {"generation": 1})
    assert collector.calls == ["freeze", "freeze", "unfreeze"]   # the period is over: all thawed ...
    gc_policy._after_collection("stop", {"generation": 1})
    assert collector.calls[-1] == "unfreeze"                     # ... and left so until a full collection ...
    gc_policy._after_collection("stop", {"generation": 2})
    gc_policy._after_collection("stop", {"generation": 1})
    assert collector.calls == ["freeze", "freeze", "unfreeze", "freeze", "freeze"]   # ... has walked it all


def test_a_period_ends_early_once_resident_memory_has_grown(collector: _Collector,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    gc_policy._after_collection("stop", {"generation": 1})
    assert collector.calls == ["freeze"]   # the same size as at the last walk: frozen, as within any period
    monkeypatch.setattr(gc_policy, "_walked_rss", gc_policy.resident_bytes() - gc_policy.THAW_GROWTH_BYTES)
    gc_policy._after_collection("stop", {"generation": 1})
    assert collector.calls == ["freeze", "unfreeze"]   # grown by the bound since: thawed before the period ends
    gc_policy._after_collection("stop", {"generation": 2})
    assert collector.calls == ["freeze", "unfreeze", "freeze"]
    assert abs(gc_policy._walked_rss - gc_policy.resident_bytes()) < gc_policy.THAW_GROWTH_BYTES // 2  # new base
    gc_policy._after_collection("stop", {"generation": 1})
    assert collector.calls[-1] == "freeze"


def test_a_cycle_frozen_while_alive_is_collected_after_the_thaw(monkeypatch: pytest.MonkeyPatch) -> None:
    class Node:
        pass

    installed = gc_policy._after_collection in gc.callbacks
    if installed:
        gc.callbacks.remove(gc_policy._after_collection)
    try:
        node = Node()
        node.self = node
        ref = weakref.ref(node)
        monkeypatch.setattr(gc_policy, "_thawed", False)
        monkeypatch.setattr(gc_policy, "_thawed_at", time.monotonic())
        # neither thaw reason holds: not the time, nor the growth (this process may have grown by then)
        monkeypatch.setattr(gc_policy, "_walked_rss", gc_policy.resident_bytes())
        gc_policy._after_collection("stop", {"generation": 1})   # frozen while alive
        del node
        gc.collect()
        assert ref() is not None                                 # frozen: not collected
        monkeypatch.setattr(gc_policy, "_thawed_at", time.monotonic() - gc_policy.THAW_SECONDS - 1)
        gc_policy._after_collection("stop", {"generation": 1})   # the thaw
        gc_policy._after_collection("stop", {"generation": 1})   # not frozen again before a full collection
        gc.collect()
        assert ref() is None
    finally:
        gc.unfreeze()
        if installed:
            gc.callbacks.append(gc_policy._after_collection)
