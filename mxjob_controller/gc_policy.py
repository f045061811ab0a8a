"""The garbage collector's policy for the long-running processes: the controller and the local cluster.

Both keep large caches of plain JSON (an informer's pods, the API server's store): dicts, lists and strings that
never form reference cycles and are freed by reference counting alone. CPython's cyclic collector still walks every
one of them in each full collection, and it runs one whenever the long-lived objects have grown by a quarter: a tax
proportional to the cache on every object added (with 3,000 pods stored, 0.3 ms of the API server's CPU per pod
create, in single pauses of ~300 ms). So what survives a full collection is frozen (``gc.freeze``) and later
collections walk only what came after it. Frozen objects are still freed by reference counting; what a freeze
costs is that a reference cycle alive at that moment and dropped later is not collected while it stays frozen
(an exception kept with its traceback, say). So every :data:`THAW_SECONDS` the frozen objects are thawed instead:
the next full collection walks everything once, collecting such cycles, and its survivors are frozen again. The
memory a freeze can hold back is therefore what died within one period; the cost, one full walk per period.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

THAW_SECONDS = 300.0

_lock = threading.Lock()
_installed = False
_thawed_at = time.monotonic()


def freeze_survivors_of_full_collections() -> None:
    """Freeze what survives every full collection from now on (once per process; later calls do nothing)."""
    global _installed
    with _lock:
        if not _installed:
            gc.callbacks.append(_after_collection)
            _installed = True


def _after_collection(phase: str, info: dict[str, Any]) -> None:
    # The collection is over and the generations are consistent: freezing or thawing only moves them between the
    # oldest generation and the permanent one.
    global _thawed_at
    if phase != "stop" or info.get("generation") != 2:
        return
    now = time.monotonic()
    if now - _thawed_at >= THAW_SECONDS:
        _thawed_at = now
        gc.unfreeze()   # the next full collection walks everything once
    else:
        gc.freeze()
