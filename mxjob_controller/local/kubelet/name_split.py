"""A value split into its text and the host names in it (``container_env.rewrite_service_hosts``), the split of a
long value made from the last one of a value that differs from it in one place.

Why: every pod of a 1,000-replica MXJob carries an ``MX_CONFIG`` of 65 KB that names all its peers and differs from
its siblings' only in the pod's own ``task``; the regular expression's split of it took about 2 ms of CPU per start
(15-30 ns a character), for each of the 1,000 starts (issue 48). A split is the same whatever the value's parts
around it are, at every character that cannot be in a name (a name lies in a run of ``[A-Za-z0-9.-]`` and the
expression looks one character either side of it): so the split of a value that shares a long beginning and end
with a kept one is the kept one's parts around the difference and the expression's split of the difference alone.

Guarantees: :func:`split_names` answers exactly as ``SPLIT.split(value)`` (a list: text, name, text, ..., text);
only values of at least :data:`REUSE_FROM` characters are kept, the last :data:`KEPT` of them; thread-safe.
"""

from __future__ import annotations

import bisect
import itertools
import re
import threading
from typing import NamedTuple

NAME = re.compile(r"(?<![A-Za-z0-9.-])[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?![A-Za-z0-9-])")
SPLIT = re.compile(f"({NAME.pattern})")   # re.split keeps the names between the rest
REUSE_FROM = 4096    # characters: shorter values are split by the expression (it is then cheaper than a look)
KEPT = 8             # values kept (a pod's few long values, a job or two starting at once)
_RUN = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-")   # characters of a name's run
_NOT_RUN = re.compile(r"[^A-Za-z0-9.-]")
_LOOK_BACK = 512     # characters looked back from the difference for one outside every name


class _Split(NamedTuple):
    value: str
    parts: list[str]
    ends: list[int]    # where each part ends in the value


_lock = threading.Lock()
_kept: list[_Split] = []


def split_names(value: str) -> list[str]:
    """``SPLIT.split(value)``, a new list the caller may change."""
    if len(value) < REUSE_FROM:
        return SPLIT.split(value)
    with _lock:
        kept = list(_kept)
    parts = None
    for near in kept:
        parts = _from(near, value)
        if parts is not None:
            break
    if parts is None:
        parts = SPLIT.split(value)
    entry = _Split(value, parts, list(itertools.accumulate(map(len, parts))))
    with _lock:
        _kept[:] = [entry, *(k for k in _kept if k.value != value)][:KEPT]
    return list(parts)


def _from(near: _Split, value: str) -> list[str] | None:
    """The split of ``value`` from that of ``near``, or None when they do not share most of their text."""
    old = near.value
    same_start = _common_start(old, value)
    if same_start == len(old) == len(value):
        return near.parts
    same_end = _common_end(old, value, min(len(old), len(value)) - same_start)
    if same_start + same_end < len(value) * 3 // 4:
        return None
    # A cut before the difference and one after it, each at a character outside every run of a name's characters.
    cut = next((i for i in range(same_start - 1, max(-1, same_start - 1 - _LOOK_BACK), -1) if value[i] not in _RUN),
               None)
    found = _NOT_RUN.search(value, len(value) - same_end)
    if cut is None or found is None:
        return None
    end = found.start()
    shift = len(old) - len(value)
    first = bisect.bisect_right(near.ends, cut)              # the text part of ``old`` holding the first cut
    last = bisect.bisect_right(near.ends, end + shift)       # ... and the one holding the second
    first_at = cut - (near.ends[first] - len(near.parts[first]))
    last_at = end + shift - (near.ends[last] - len(near.parts[last]))
    middle = SPLIT.split(value[cut:end])
    head = near.parts[first][:first_at] + middle[0]
    tail = middle[-1] + near.parts[last][last_at:]
    if len(middle) == 1:
        return [*near.parts[:first], head + near.parts[last][last_at:], *near.parts[last + 1:]]
    return [*near.parts[:first], head, *middle[1:-1], tail, *near.parts[last + 1:]]


def _common_start(a: str, b: str) -> int:
    """How many first characters ``a`` and ``b`` share (a bisection of slice comparisons: in C, not per character)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def _common_end(a: str, b: str, most: int) -> int:
    """How many last characters ``a`` and ``b`` share, at most ``most``."""
    low, high = 0, most
    while low < high:
        mid = (low + high + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            low = mid
        else:
            high = mid - 1
    return low
