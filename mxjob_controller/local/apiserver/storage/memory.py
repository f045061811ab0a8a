"""Handing freed memory back to the system, and keeping the C allocator from hoarding it.

CPython returns large blocks (a stored object's JSON, a big ConfigMap's value, a list's answer) to the C allocator
when they are freed, but glibc's malloc keeps most of what it gets back in its arenas for later: after a burst of
large writes and their deletion the process stays as large as at the peak. ``malloc_trim(0)`` releases the arenas'
free pages (and the top of the heap) to the system.

Two of glibc's defaults make a server with a thread per connection hoard far more than it uses: an arena per
thread up to eight per core, each keeping its own free memory (in a chaos run, 490 MB of arenas held less than
60 MB of live Python objects), and a threshold for serving a block from its own mapping that climbs with every large
block freed (to 32 MiB), after which multi-megabyte answers are carved out of the arenas, fragmenting them, instead
of being mapped and unmapped. :func:`limit_allocator` fixes both (``mallopt``), as ``MALLOC_ARENA_MAX`` and
``MALLOC_MMAP_THRESHOLD_`` would from the environment; under the GIL more arenas buy no parallelism anyway.
Elsewhere (musl, macOS) there is nothing to call and nothing is done.
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
_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameters (malloc.h)
_M_ARENA_MAX = -8
ARENA_MAX = 2  # the main arena and one for every other thread
MMAP_THRESHOLD = 256 << 10  # a block this large or larger gets a mapping of its own, unmapped when freed


def _mallopt() -> Callable[[int, int], int] | None:
    if _TRIM is None:   # not glibc
        return None
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError, TypeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt


_MALLOPT = _mallopt()


def limit_allocator(arena_max: int = ARENA_MAX, mmap_threshold: int = MMAP_THRESHOLD) -> bool:
    """Few arenas, and large blocks always mapped on their own (see the module's docstring), for the whole process:
    call it before the threads that allocate start. False where the allocator cannot be told."""
    if _MALLOPT is None:
        return False
    done = _MALLOPT(_M_ARENA_MAX, arena_max) == 1 and _MALLOPT(_M_MMAP_THRESHOLD, mmap_threshold) == 1
    log.debug("allocator limited to %d arenas, blocks from %d bytes mapped: %s", arena_max, mmap_threshold, done)
    return done


def release_free_memory() -> bool:
    """Give the C allocator's free pages back to the system; False where the allocator cannot be asked to."""
    if _TRIM is None:
        return False
    _TRIM(0)
    log.debug("free memory handed back to the system")
    return True
