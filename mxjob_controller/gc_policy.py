"""The garbage collector's policy for the long-running processes: the controller and the local cluster.

Both keep large caches of plain JSON (an informer's pods, the API server's store): dicts, lists and strings that
never form reference cycles and are freed by reference counting alone. CPython's cyclic collector still walks each
of them in every collection of the generations it reaches, up to the full collections that walk every cached object:
a tax proportional to the cache on every object added (with 3,000 pods stored, 0.3 ms of the API server's CPU per
pod create, in single pauses of ~300 ms). So what survives a collection of the middle generation (two collections
in all: long-lived) is frozen (``gc.freeze``), and later collections walk only what came after it (the API server's
collector time per pod create: 0.09 ms when freezing after full collections only, 0.035 ms now).

Frozen objects are still freed by reference counting; what a freeze costs is that a reference cycle alive at that
moment and dropped later is not collected while it stays frozen (an exception kept with its traceback, say). So
every :data:`THAW_SECONDS` everything is thawed instead, and nothing is frozen again until a full collection has
walked it all once, collecting such cycles. The memory a freeze can hold back is therefore what died within one
period; the cost, one full walk per period.

Under load a request's objects live through two collections and are frozen too, and the cycles among them (a
connection's handler and its deadline, an exception and the frames of its traceback, which hold the decoded bodies)
die frozen: in a chaos run the API server held 1.4 million such objects after four minutes, hundreds of megabytes.
So a period also ends early once the resident memory has grown by :data:`THAW_GROWTH_BYTES` since the last full
walk: a walk per that much growth, and none while the process stays its size.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from typing import Any

THAW_SECONDS = 300.0
THAW_GROWTH_BYTES = 128 << 20  # resident memory grown since the last full walk that ends a period early

_lock = threading.Lock()
_installed = False
_thawed_at = time.monotonic()
_thawed = False   # everything was thawed and no full collection has walked it since
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """This process's resident memory (0 where ``/proc`` does not say)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


_walked_rss = resident_bytes()   # resident bytes when a full collection last walked everything (or at start)


def freeze_long_lived() -> None:
    """Freeze the survivors of the collections from now on (once per process; later calls do nothing)."""
    global _installed
    with _lock:
        if not _installed:
            gc.callbacks.append(_after_collection)
            _installed = True


def _after_collection(phase: str, info: dict[str, Any]) -> None:
    # The collection is over and the generations are consistent: freezing or thawing only moves objects between
    # the generations and the permanent one.
    global _thawed_at, _thawed, _walked_rss
    generation = info.get("generation", 0)
    if phase != "stop" or generation < 1:
        return
    if _thawed:
        # (CPython 3.11-3.13, which the image runs: 3.14's incremental collector never runs a generation-2
        # collection by itself, so there the objects would stay thawed, costing time, not memory.)
        if generation == 2:   # the full walk the thaw was for is done
            _thawed = False
            _walked_rss = resident_bytes()
            gc.freeze()
        return
    now = time.monotonic()
    if now - _thawed_at >= THAW_SECONDS or resident_bytes() - _walked_rss >= THAW_GROWTH_BYTES:
        _thawed_at = now
        _thawed = True
        gc.unfreeze()
    else:
        gc.freeze()
