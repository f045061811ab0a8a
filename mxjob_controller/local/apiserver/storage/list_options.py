"""A list's ``resourceVersion`` and ``resourceVersionMatch``, as kube-apiserver reads them.

- ``resourceVersionMatch`` is checked as apimachinery's ``ValidateListOptions`` does (a 422 on ListOptions).
- ``resourceVersionMatch=Exact&resourceVersion=N``: the list as it was at N, from the store's history (kube's
  storage answers it from etcd's); N older than that history is etcd's compaction: 410 ``Expired``, "The
  resourceVersion for the provided list is too old."; N newer than the store is the watch cache's "Too large
  resource version" (504 at once, cause ``ResourceVersionTooLarge``: etcd has no wait).
- ``NotOlderThan`` (or a ``resourceVersion`` alone, which kube reads the same way) with N other than "0": the
  current list, never older than N; N must be a version (400 otherwise, as for ``Exact``). An N the store has not
  reached is waited for, as kube's watch cache does (``waitUntilFreshAndBlock``): up to ``block_timeout`` (kube's
  ``blockTimeout``, 3 s) for a write to bring the store there, then the list; past the wait, kube's "Too large
  resource version" (504 ``Timeout``, cause ``ResourceVersionTooLarge``, ``retryAfterSeconds: 1``). The wait holds
  no lock (``Store.wait_until``). Unset, or "0" (``Any``): the current list, at once. A get at such an N waits
  the same way (``cacher.Get``).
- A watch's options as ``validateWatchOptions`` checks them (WatchList, beta and on in 1.32): ``sendInitialEvents``
  needs ``resourceVersionMatch=NotOlderThan``, which a watch takes with ``sendInitialEvents`` only; a list takes no
  ``sendInitialEvents``. A watch at an N not reached is kube's too: with ``sendInitialEvents=true`` it waits as a
  list does and, past the wait, is a stream of one ``ERROR`` event (that 504 Status); without, it starts at N at
  once and gets only the events after N (the cacher: "clients can wait for events without unnecessary blocking").
"""

from __future__ import annotations

from collections.abc import Mapping

from mxjob_controller.kube import field_errors
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.storage.store import ObjKey, Store, TooOld
from mxjob_controller.local.apiserver.storage.watch import Entry

EXACT, NOT_OLDER_THAN = "Exact", "NotOlderThan"
TOO_OLD = "The resourceVersion for the provided list is too old."
RETRY_AFTER_SECONDS = 1   # the watch cache's resourceVersionTooHighRetrySeconds


def send_initial_events(query: Mapping[str, str]) -> bool | None:
    """The ``sendInitialEvents`` option: None when not given."""
    value = query.get("sendInitialEvents")
    if value is None:
        return None
    return value.lower() in ("true", "1")


def validate_watch(query: Mapping[str, str]) -> None:
    """``validateWatchOptions``: a 422 on ListOptions, with kube's words."""
    match = query.get("resourceVersionMatch", "")
    initial = send_initial_events(query)
    causes = []
    path = "resourceVersionMatch"
    if initial is not None and match != NOT_OLDER_THAN:
        causes.append(field_errors.forbidden(path, f"sendInitialEvents requires setting resourceVersionMatch to "
                                                   f"{NOT_OLDER_THAN}"))
    if match:
        if initial is None:
            causes.append(field_errors.forbidden(path, "resourceVersionMatch is forbidden for watch unless "
                                                       "sendInitialEvents is provided"))
        if match != NOT_OLDER_THAN:
            causes.append(field_errors.not_supported(path, match, [NOT_OLDER_THAN]))
        if query.get("continue", ""):
            causes.append(field_errors.forbidden(path, "resourceVersionMatch is forbidden when continue is provided"))
    if causes:
        raise errors.invalid_options("ListOptions", causes)


def validate(query: Mapping[str, str]) -> None:
    """``ValidateListOptions`` of a list (not a watch)."""
    match = query.get("resourceVersionMatch", "")
    causes = []
    if match:
        causes = _list_match_errors(query, match)
    if send_initial_events(query) is not None:
        causes.append(field_errors.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if causes:
        raise errors.invalid_options("ListOptions", causes)


def _list_match_errors(query: Mapping[str, str], match: str) -> list[field_errors.FieldError]:
    rv = query.get("resourceVersion", "")
    causes = []
    path = "resourceVersionMatch"
    if not rv:
        causes.append(field_errors.forbidden(path, "resourceVersionMatch is forbidden unless resourceVersion is "
                                                   "provided"))
    if query.get("continue", ""):
        causes.append(field_errors.forbidden(path, "resourceVersionMatch is forbidden when continue is provided"))
    if match not in (EXACT, NOT_OLDER_THAN):
        causes.append(field_errors.not_supported(path, match, [EXACT, NOT_OLDER_THAN, ""]))
    if match == EXACT and rv == "0":
        causes.append(field_errors.forbidden(path, 'resourceVersionMatch "exact" is forbidden for resourceVersion '
                                                   '"0"'))
    return causes


def exact_list(store: Store, key: str, namespace: str | None,
               query: Mapping[str, str]) -> tuple[list[tuple[ObjKey, Entry]], int] | None:
    """(items, rv) of an ``Exact`` list; None when the list is not one (having waited, for a ``NotOlderThan`` list,
    until the store reached its version: :func:`wait_not_older_than`)."""
    if query.get("resourceVersionMatch", "") != EXACT:
        wait_not_older_than(store, query)
        return None
    rv = _parse(query.get("resourceVersion", ""))
    current = store.resource_version
    if rv > current:   # kube's Exact list goes to etcd, which has no wait for a future revision
        raise too_large_resource_version(rv, current)
    try:
        return store.list_at(key, rv, namespace), rv
    except TooOld as e:
        raise errors.expired(TOO_OLD) from e


def not_older_than(query: Mapping[str, str]) -> int | None:
    """The version a ``NotOlderThan`` read (explicit, or a ``resourceVersion`` alone) must not be older than; None
    when it asks for none (unset, "0", or ``Exact``). A value that is not a version is a 400."""
    text = query.get("resourceVersion", "")
    if text in ("", "0") or query.get("resourceVersionMatch", "") not in ("", NOT_OLDER_THAN):
        return None
    return _parse(text)


def wait_not_older_than(store: Store, query: Mapping[str, str]) -> None:
    """Wait (``Store.wait_until``: at most ``block_timeout``, no lock held) until the store has reached the version a
    ``NotOlderThan`` read asks for; kube's 504 "Too large resource version" if it does not within the wait."""
    rv = not_older_than(query)
    if rv is not None and not store.wait_until(rv):
        raise too_large_resource_version(rv, store.resource_version)


def wait_for_get(store: Store, query: Mapping[str, str]) -> None:
    """A get's ``resourceVersion``: an N not reached is waited for as a list's is (``cacher.Get``:
    ``WaitUntilFreshAndGet``). A value that is not a version is left as this server always took it (ignored)."""
    text = query.get("resourceVersion", "")
    if text.isascii() and text.isdigit() and int(text) <= MAX_RV and not store.wait_until(int(text)):
        raise too_large_resource_version(int(text), store.resource_version)


def too_large_resource_version(rv: int, current: int) -> errors.StatusError:
    """``storage.NewTooLargeResourceVersionError(rv, current, 1)``: apimachinery's ``NewTimeoutError`` (504,
    "Timeout: " before the message) with one ``ResourceVersionTooLarge`` cause; ``retryAfterSeconds`` is also sent as
    ``Retry-After`` (responsewriters.ErrorNegotiated)."""
    return errors.StatusError(504, "Timeout", f"Timeout: Too large resource version: {rv}, current: {current}", {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": RETRY_AFTER_SECONDS}, {"Retry-After": str(RETRY_AFTER_SECONDS)})


MAX_RV = (1 << 64) - 1   # kube parses a resourceVersion as a uint64 (strconv.ParseUint): past it is no version


def _parse(text: str) -> int:
    try:
        rv = int(text)
        if not 0 <= rv <= MAX_RV:
            raise ValueError(text)
    except ValueError as e:
        raise errors.bad_request(f'invalid resource version "{text}"') from e
    return rv
