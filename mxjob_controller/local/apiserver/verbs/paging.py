"""A paginated list as kube-apiserver serves one: ``limit``, ``continue`` and ``remainingItemCount``
(apimachinery's ``storage.EncodeContinue``/``DecodeContinue``, etcd3's ``GetList``).

- Every page of one list comes from the snapshot of its first page: the token carries that resourceVersion and the
  last key served, and the next page starts after that key. Whether the snapshot may still be read is the store's
  answer (``Store.list_at``, ``Store.require_history``: 410 once its history is gone), never this module's.
- A page costs what an etcd range read costs: O(log N + L) for L items out of N once its snapshot is remembered
  (:class:`Snapshots`), where rebuilding and sorting the snapshot for every page made a 10,000-object list read 500
  at a time cost the server 20 times one unpaginated list (quadratic in the list's length). A snapshot is a list of
  references to stored entries (never mutated), kept :data:`SNAPSHOT_TTL` seconds after its last page and at most
  :data:`SNAPSHOT_ITEMS` references in all; a pager whose snapshot is gone gets the same items rebuilt from the
  history, only slower.
- A page is full at ``limit`` matching items; ``continue`` is given only when another matching item follows, and
  ``remainingItemCount`` (kube gives it only for a list without selectors) counts them exactly.
- Tokens are kube's: base64url without padding of ``{"v": "meta.k8s.io/v1", "rv": N, "start": "ns/name\\x00"}``; a
  token kube refuses is kube's 400 with etcd3 storage's words.
"""

from __future__ import annotations

import base64
import bisect
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter

from cachetools import TTLCache

from mxjob_controller.kube.vocabulary import META_V1
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.storage.store import ObjKey
from mxjob_controller.local.apiserver.storage.watch import Entry
from mxjob_controller.local.apiserver.validation import strict_json

Item = tuple[ObjKey, Entry]

CONTINUE_VERSION = META_V1   # a continue token's "v"
SNAPSHOT_TTL = 60.0          # seconds a snapshot is kept after its last page was served
SNAPSHOT_ITEMS = 250_000     # item references all snapshots together keep (about 16 MB)
_BASE64URL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_key = itemgetter(0)


# --- continue tokens ----------------------------------------------------------------------------------------

def encode_continue(rv: int, last: ObjKey) -> str:
    """kube's continue token: base64url without padding of ``{"v", "rv", "start"}``."""
    token = {"v": CONTINUE_VERSION, "rv": rv, "start": "/".join(last) + "\x00"}
    return base64.urlsafe_b64encode(json.dumps(token, separators=(",", ":")).encode()).decode().rstrip("=")


def _invalid_continue(detail: str) -> StatusError:
    """etcd3 storage's answer to a token ``storage.DecodeContinue`` refuses."""
    return errors.bad_request(f"invalid continue token: continue key is not valid{detail}")


def decode_continue(token: str) -> tuple[int, ObjKey]:
    """(resourceVersion, the last key listed) of a continue token, or kube's 400 (``storage.DecodeContinue``'s
    errors: Go's base64 and JSON ones, then the token's version, resourceVersion and start key)."""
    text = token.rstrip("=") if len(token) % 4 == 0 else token   # padded tokens (of older servers) decode too
    bad = next((i for i, ch in enumerate(text) if ch not in _BASE64URL), None)
    if bad is None and len(text) % 4 == 1:
        bad = len(text) - 1
    if bad is not None:
        raise _invalid_continue(f": illegal base64 data at input byte {bad}")
    try:
        data = strict_json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except ValueError as e:
        raise _invalid_continue(f": {e}") from None
    if not isinstance(data, dict):
        raise _invalid_continue(": json: cannot unmarshal value into Go value of type storage.continueToken")
    if data.get("v") != CONTINUE_VERSION:
        raise _invalid_continue(f": server does not recognize this encoded version {data.get('v') or ''}")
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or isinstance(rv, bool) or rv == 0:
        raise _invalid_continue(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start:
        raise _invalid_continue(": encoded start key empty (version meta.k8s.io/v1)")
    ns, _, name = start.rstrip("\x00").partition("/")
    return rv, (ns, name)


# --- pages ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Page:
    items: list[Item]
    more: bool                  # another matching item follows: the page gets a continue token
    remaining: int | None       # how many follow (counted only when asked: every item matches)


def page_of(snapshot: Sequence[Item], after: ObjKey | None, limit: int, match: Callable[[dict], bool],
            count_remaining: bool) -> Page:
    """The page of ``snapshot`` (sorted by key) that starts after the key ``after`` (None: at its start): up to
    ``limit`` items ``match`` keeps (``limit`` ≤ 0: all of them). It reads no further than the first matching item
    past a full page. ``count_remaining``: every item matches (no selector), so what is left is counted, not read."""
    begin = 0 if after is None else bisect.bisect_right(snapshot, after, key=_key)
    selected: list[Item] = []
    for i in range(begin, len(snapshot)):
        item = snapshot[i]
        if match(item[1].obj):
            if 0 < limit <= len(selected):
                return Page(selected, True, len(snapshot) - i if count_remaining else None)
            selected.append(item)
    return Page(selected, False, 0)


class Snapshots:
    """The snapshots of paged lists still being read, by (storage key, namespace, resourceVersion): what a
    ``continue`` page is cut from. Thread-safe; bounded by time and by item references (see the module's text)."""

    def __init__(self, ttl: float = SNAPSHOT_TTL, max_items: int = SNAPSHOT_ITEMS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._max_items = max_items
        self._cache: TTLCache[tuple[str, str | None, int], Sequence[Item]] = TTLCache(
            maxsize=max_items, ttl=ttl, timer=clock, getsizeof=len)

    def remember(self, key: str, namespace: str | None, rv: int, snapshot: Sequence[Item]) -> None:
        """Keep ``snapshot`` (sorted by key, as the store lists) for the pages that follow; one larger than the
        bound is not kept (its pages are rebuilt from the history)."""
        if len(snapshot) > self._max_items:
            return
        with self._lock:
            self._cache[(key, namespace, rv)] = snapshot   # a later page keeps it another TTL

    def recall(self, key: str, namespace: str | None, rv: int) -> Sequence[Item] | None:
        with self._lock:
            return self._cache.get((key, namespace, rv))

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache)
