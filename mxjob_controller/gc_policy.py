"""The garbage collector's policy for the long-running processes: the controller and the local cluster.

Both keep large caches of plain JSON (an informer's pods, the API server's store): dicts, lists and strings that
never form reference cycles and are freed by reference counting alone. CPython's cyclic collector still walks every
one of them in each full collection, and it runs one whenever the long-lived objects have grown by a quarter: a tax
proportional to the cache on every object added (with 3,000 pods stored, 0.3 ms of the API server's CPU per pod
create, as much as the create's own validation). So what survives a full collection is frozen (``gc.freeze``) and
later collections walk only what came after it. Frozen objects are still freed by reference counting; the price is
that a reference cycle that is alive at a freeze and dropped later is never collected. In these processes such
cycles are rare (an exception kept with its traceback), so the memory that can be lost is small and bounded by what
was alive at the freezes.
"""

from __future__ import annotations

import gc
import threading
from typing import Any

_lock = threading.Lock()
_installed = False


def freeze_survivors_of_full_collections() -> None:
    """Freeze what survives every full collection from now on (once per process; later calls do nothing)."""
    global _installed
    with _lock:
        if not _installed:
            gc.callbacks.append(_after_collection)
            _installed = True


def _after_collection(phase: str, info: dict[str, Any]) -> None:
    # The collection is over and the generations are consistent: freezing only moves them to the permanent one.
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()
