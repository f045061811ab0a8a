"""The audit log: one record per HTTP request the server answered, to prove afterwards what a client did.

Each record has the request's time, verb (kube's: get list watch create update patch delete deletecollection;
the lower-case method for non-resource paths), group, resource, subresource, namespace, name, user agent, the
user the server authenticated (empty when it authenticates nobody, or refused the credentials) and, when the request
impersonated another user (``kubectl --as``), that user (kube's ``impersonatedUser``), the response
code, the server time spent (for a watch: how long the stream was open) and, when admission had something to say,
its ``annotations`` (kube's audit annotations: ``pod-security.kubernetes.io/audit-violations`` and the like).
Never a credential. Records are kept in
memory, the newest ``capacity`` of them, and queried with :meth:`AuditLog.records`; with a path they are also
appended to a file as JSON lines, one object per request, flushed as written. The file is its owner's only (0600,
as kube-apiserver writes its audit log): it names every user and what they did.

The HTTP layer calls :meth:`AuditLog.observe` after every exchange (``APIHTTPServer.observers``); requests the
server makes to itself (garbage collector, namespace controller) are not HTTP and are not recorded.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mxjob_controller.local.apiserver.request import Exchange

DEFAULT_CAPACITY = 100_000
_VERBS_WITH_SELECTORS = ("list", "watch", "deletecollection")


@dataclass(frozen=True, slots=True)
class AuditRecord:
    time: float           # when the request arrived (Unix seconds)
    method: str
    path: str
    verb: str
    group: str
    version: str
    resource: str
    subresource: str
    namespace: str
    name: str
    user_agent: str
    code: int
    elapsed: float        # seconds the server spent on it
    # Selectors of list, watch and deletecollection (kube's RequestInfo keeps them for authorization: a list or watch
    # with fieldSelector metadata.name=<n> is authorized as a request for the object <n>).
    label_selector: str = ""
    field_selector: str = ""
    user: str = ""        # the authenticated user's name
    impersonated_user: str = ""   # the user the request acted as (Impersonate-User), when it impersonated one
    annotations: dict[str, str] = field(default_factory=dict)   # admission's audit annotations

    def to_json(self) -> dict[str, Any]:
        # Built field by field: ``dataclasses.asdict`` deep-copies through a generic walk, most of the cost of
        # writing a record (the benchmarks write one per request).
        return {"time": self.time, "method": self.method, "path": self.path, "verb": self.verb, "group": self.group,
                "version": self.version, "resource": self.resource, "subresource": self.subresource,
                "namespace": self.namespace, "name": self.name, "code": self.code, "elapsed": self.elapsed,
                "user": self.user, "userAgent": self.user_agent, "labelSelector": self.label_selector,
                "fieldSelector": self.field_selector, "impersonatedUser": self.impersonated_user,
                "annotations": self.annotations}


class AuditLog:
    def __init__(self, capacity: int = DEFAULT_CAPACITY, path: str | Path | None = None) -> None:
        self._lock = threading.Lock()
        self._records: deque[tuple] = deque(maxlen=capacity)  # AuditRecord fields, in order
        self.path = Path(path) if path else None
        self._file: IO[str] | None = None  # opened on the first record, closed by close()

    def observe(self, ex: Exchange, elapsed: float) -> None:
        """An ``APIHTTPServer`` observer: record one finished exchange. Kept as a tuple of the record's fields, in
        their order, and made an :class:`AuditRecord` when asked for (a frozen record of 18 fields costs every
        request a few microseconds to build, and most are never read)."""
        info = ex.info
        user, impersonated = (ex.impersonator, ex.user) if ex.impersonator is not None else (ex.user, None)
        selectors = info.verb in _VERBS_WITH_SELECTORS
        values = (time.time() - elapsed, info.method, info.path, info.verb, info.group, info.version, info.resource,
                  info.subresource, info.namespace, info.name, info.user_agent, ex.code, elapsed,
                  ex.query.get("labelSelector", "") if selectors else "",
                  ex.query.get("fieldSelector", "") if selectors else "",
                  getattr(user, "name", "") or "", getattr(impersonated, "name", "") or "", dict(ex.audit_annotations))
        with self._lock:
            self._records.append(values)
            if self.path is not None:
                if self._file is None:
                    self._file = _open_private(self.path)
                self._file.write(json.dumps(AuditRecord(*values).to_json(), separators=(",", ":")) + "\n")
                self._file.flush()

    def records(self, *, verb: str | None = None, resource: str | None = None, subresource: str | None = None,
                namespace: str | None = None, name: str | None = None, user_agent: str | None = None,
                code: int | None = None, group: str | None = None, since: float | None = None,
                user: str | None = None, impersonated_user: str | None = None) -> list[AuditRecord]:
        """Records, oldest first, matching every filter given (``user_agent`` is a prefix; ``since`` a time)."""
        with self._lock:
            snapshot = list(self._records)
        records = (AuditRecord(*values) for values in snapshot)
        return [r for r in records
                if (verb is None or r.verb == verb) and (resource is None or r.resource == resource)
                and (subresource is None or r.subresource == subresource)
                and (namespace is None or r.namespace == namespace) and (name is None or r.name == name)
                and (user_agent is None or r.user_agent.startswith(user_agent))
                and (code is None or r.code == code) and (group is None or r.group == group)
                and (since is None or r.time >= since) and (user is None or r.user == user)
                and (impersonated_user is None or r.impersonated_user == impersonated_user)]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def _open_private(path: Path) -> IO[str]:
    """``path`` opened for appending, readable and writable by its owner only: created 0600, and one that exists
    already (an older run's, made 0644) made 0600 too."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        return os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise
