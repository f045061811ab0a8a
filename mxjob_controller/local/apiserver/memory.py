"""Handing freed memory back to the system.

CPython returns large blocks (a stored object's JSON, a big ConfigMap's value) to the C allocator when they are
freed, but glibc's malloc keeps most of what it gets back in its arenas for later: after a burst of large writes
and their deletion the process stays as large as at the peak. ``malloc_trim(0)`` releases the arenas' free pages
(and the top of the heap) to the system. Elsewhere (musl, macOS) there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):   # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def release_free_memory() -> bool:
    """Give the C allocator's free pages back to the system; False where the allocator cannot be asked to."""
    if _TRIM is None:
        return False
    _TRIM(0)
    log.debug("free memory handed back to the system")
    return True
