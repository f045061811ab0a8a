"""A list's ``resourceVersion`` and ``resourceVersionMatch``, as kube-apiserver reads them.

- ``resourceVersionMatch`` is checked as apimachinery's ``ValidateListOptions`` does (a 422 on ListOptions).
- ``resourceVersionMatch=Exact&resourceVersion=N``: the list as it was at N, from the store's history (kube's
  storage answers it from etcd's); N older than that history is etcd's compaction: 410 ``Expired``, "The
  resourceVersion for the provided list is too old."; N newer than the store is the watch cache's "Too large
  resource version" (504, cause ``ResourceVersionTooLarge``).
- ``NotOlderThan`` (or a ``resourceVersion`` alone, which kube reads the same way) with N other than "0": the
  current list, never older than any version the server handed out; N must be a version (400 otherwise, as for
  ``Exact``). One deviation, kept because this server promises never to answer a list with a 5xx: for an N the
  store never reached, kube's watch cache waits 3 s and answers "Too large resource version" (504); here the
  current list (the store is never behind itself: no client was handed such an N). Unset, or "0" (``Any``): the
  current list.
- A watch's options as ``validateWatchOptions`` checks them (WatchList, beta and on in 1.32): ``sendInitialEvents``
  needs ``resourceVersionMatch=NotOlderThan``, which a watch takes with ``sendInitialEvents`` only; a list takes no
  ``sendInitialEvents``.
"""

from __future__ import annotations

from collections.abc import Mapping

from mxjob_controller.kube import field_errors
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.storage.store import ObjKey, Store, TooOld
from mxjob_controller.local.apiserver.storage.watch import Entry

EXACT, NOT_OLDER_THAN = "Exact", "NotOlderThan"
TOO_OLD = "The resourceVersion for the provided list is too old."


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
    """(items, rv) of an ``Exact`` list; None when the list is not one (then :func:`check_not_older_than`)."""
    if query.get("resourceVersionMatch", "") != EXACT:
        check_not_older_than(query)
        return None
    rv = _parse(query.get("resourceVersion", ""))
    _check_reached(store, rv)
    try:
        return store.list_at(key, rv, namespace), rv
    except TooOld as e:
        raise errors.expired(TOO_OLD) from e


def check_not_older_than(query: Mapping[str, str]) -> None:
    """A ``NotOlderThan`` list (explicit, or a ``resourceVersion`` alone): its version must be one."""
    text = query.get("resourceVersion", "")
    if text not in ("", "0") and query.get("resourceVersionMatch", "") in ("", NOT_OLDER_THAN):
        _parse(text)


def _parse(text: str) -> int:
    try:
        rv = int(text)
        if rv < 0:
            raise ValueError(text)
    except ValueError as e:
        raise errors.bad_request(f'invalid resource version "{text}"') from e
    return rv


def _check_reached(store: Store, rv: int) -> None:
    """An ``Exact`` list's version must be one the store reached (the watch cache's "Too large resource version")."""
    current = store.resource_version
    if rv > current:
        raise errors.StatusError(504, "Timeout", f"Too large resource version: {rv}, current: {current}", {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1})
