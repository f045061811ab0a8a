"""local/kubelet/runtime.py's pure parts: what a reading of /proc may say of a process group being stopped (the
groups themselves, started and stopped, are tests/local/kubelet/test_runtime_groups.py's)."""

from __future__ import annotations

import time

from mxjob_controller.local.kubelet import runtime


def test_one_reading_of_proc_serves_every_stopping_group_and_none_from_before_its_signal(monkeypatch):
    # A reading taken now says group 4242 has a live process and 4343 none; it serves every caller for a while.
    now = time.monotonic()
    monkeypatch.setattr(runtime, "_last_scan", (now, frozenset({4242})))
    assert runtime._live_member(4242, signalled=now - 1)
    assert not runtime._live_member(4343, signalled=now - 1)
    # signalled after that reading: it cannot say the group is gone yet (the next reading will)
    assert runtime._live_member(4343, signalled=now + 0.001)
    # where /proc could not be read, a group counts as alive
    monkeypatch.setattr(runtime, "_last_scan", (now, None))
    assert runtime._live_member(4343, signalled=0.0)
