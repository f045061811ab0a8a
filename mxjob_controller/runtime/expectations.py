"""Expectations: what a controller has just created or deleted and not yet seen in its informer cache.

Why: an informer's cache lags the API server. A controller that creates a pod and reconciles the job again before
the pod's ADDED event arrives would see the pod missing and create it twice. So before creating (deleting) it
*expects* the creation (deletion); event handlers mark it *observed*; and the job is reconciled only when its
expectations are satisfied. Client-go's ControllerExpectations, as kubeflow/common and training-operator used them:
keyed per job, per resource (pods, services) and per replica type.

What this fixes in those:
- **AND gate**: :meth:`ControllerExpectations.job_satisfied` holds only if *every* record of the job is satisfied.
  training-operator OR-ed its keys, so one satisfied key let a job with pods still pending reconcile (duplicates).
- **Cleanup**: :meth:`ControllerExpectations.delete_expectations` drops every record of a job, and a job whose
  records are all older than the expiry disappears by itself (a ``cachetools.TTLCache``), so memory does not grow
  with job churn. The Kubeflow operators never deleted theirs.
- **No credit**: counts never go below zero. An event observed with nothing expected (say, a pod created before the
  expectation was set) must not pre-pay a later expectation and open the gate early.
- **Raise starts afresh when stale**: raising a missing or expired record makes a new one (client-go ignored the
  raise, which left the next creation unguarded).

Guarantees: thread-safe (one lock); a record expires ``ttl`` seconds (default 5 minutes) after it was set, and a
missing or expired record counts as satisfied, so a lost watch event delays a job by at most ``ttl``.
Tombstones: a deletion seen only as a tombstone (the informer missed the delete) is an observed deletion all the
same; :func:`last_known_state` gets the object to key it by.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any, NamedTuple

from cachetools import TTLCache

from mxjob_controller.runtime.clock import Clock, RealClock

EXPECTATIONS_TTL = 300.0  # client-go's ExpectationsTimeout


class ExpectationKey(NamedTuple):
    """One record: the pods (or services) of one replica type of one job."""

    job: str  # the job's "namespace/name"
    resource: str  # "pods" or "services"
    replica_type: str  # lower-cased, as kubeflow keys it

    def __str__(self) -> str:
        # kubeflow/common's key format, for logs.
        return f"{self.job}/{self.replica_type}/{self.resource}"


def pods_key(job_key: str, replica_type: str) -> ExpectationKey:
    return ExpectationKey(job_key, "pods", replica_type.lower())


def services_key(job_key: str, replica_type: str) -> ExpectationKey:
    return ExpectationKey(job_key, "services", replica_type.lower())


def last_known_state(obj: Any) -> dict:
    """The object a delete handler got, or the last known state inside a tombstone (anything with an ``obj``
    attribute, as client-go's DeletedFinalStateUnknown ``Obj``): the deletion is keyed by it either way."""
    if isinstance(obj, dict):
        return obj
    inner = getattr(obj, "obj", None)
    if isinstance(inner, dict):
        return inner
    raise TypeError(f"neither an object nor a tombstone: {obj!r}")


@dataclass
class _Record:
    adds: int
    dels: int
    set_at: float

    def fulfilled(self) -> bool:
        return self.adds <= 0 and self.dels <= 0


class ControllerExpectations:
    """Expected creations and deletions per :class:`ExpectationKey`, grouped by job."""

    def __init__(self, ttl: float = EXPECTATIONS_TTL, clock: Clock | None = None) -> None:
        self.ttl = ttl
        self._clock = clock or RealClock()
        self._lock = threading.Lock()
        # job -> its records. The job's entry is re-set whenever one of its records is, so it outlives them all;
        # never evicted by size: an evicted record would read as satisfied and let duplicates be created.
        self._jobs: TTLCache[str, dict[ExpectationKey, _Record]] = TTLCache(math.inf, ttl, timer=self._clock.now)

    # -- setting --------------------------------------------------------------------------------------------------

    def raise_expectations(self, key: ExpectationKey, adds: int = 0, dels: int = 0) -> None:
        """Expect ``adds`` more creations and ``dels`` more deletions. A live record keeps its expiry time (as in
        client-go); a missing or expired one is replaced by a new record of just these counts."""
        with self._lock:
            record = self._live(key)
            if record is None:
                self._put(key, _Record(max(adds, 0), max(dels, 0), self._clock.now()))
            else:
                record.adds += adds
                record.dels += dels

    def lower_expectations(self, key: ExpectationKey, adds: int = 0, dels: int = 0) -> None:
        """Expect fewer (a creation failed, or was observed); never below zero, and a no-op without a record."""
        with self._lock:
            record = self._live(key)
            if record is not None:
                record.adds = max(record.adds - adds, 0)
                record.dels = max(record.dels - dels, 0)

    def creation_observed(self, key: ExpectationKey) -> None:
        self.lower_expectations(key, adds=1)

    def deletion_observed(self, key: ExpectationKey) -> None:
        """Call for every delete event, tombstones included."""
        self.lower_expectations(key, dels=1)

    def delete_expectations(self, job: str) -> None:
        """Forget every record of ``job`` (call when the job is deleted)."""
        with self._lock:
            self._jobs.pop(job, None)

    # -- reading --------------------------------------------------------------------------------------------------

    def satisfied(self, key: ExpectationKey) -> bool:
        """True if everything expected for ``key`` was observed, or its record expired, or there is none."""
        with self._lock:
            record = self._live(key)
            return record is None or record.fulfilled()

    def job_satisfied(self, job: str) -> bool:
        """True only if *every* record of ``job`` is satisfied (pods and services, every replica type)."""
        with self._lock:
            records = self._jobs.get(job)
            if records is None:
                return True
            now = self._clock.now()
            for key, record in list(records.items()):
                if self._expired(record, now):
                    del records[key]  # nothing to wait for any more; keeps the job's dict small
                elif not record.fulfilled():
                    return False
            if not records:
                self._jobs.pop(job, None)
            return True

    def time_left(self, job: str) -> float:
        """Seconds until every unfulfilled record of ``job`` has expired (0 when the job is satisfied): how long a
        controller waiting on the job may need to wait before the gate opens by expiry alone."""
        with self._lock:
            records = self._jobs.get(job)
            if not records:
                return 0.0
            now = self._clock.now()
            left = [self.ttl - (now - r.set_at) for r in records.values()
                    if not r.fulfilled() and not self._expired(r, now)]
            return max(left, default=0.0)

    def pending(self, key: ExpectationKey) -> tuple[int, int] | None:
        """(creations, deletions) still expected for ``key``; None if it has no live record. The read that shows
        what each observation lowered (the core's handler tests rest on it)."""
        with self._lock:
            record = self._live(key)
            return None if record is None else (record.adds, record.dels)

    def record_count(self) -> int:
        """Records held, expired ones excluded (jobs expire whole): how a test (or a memory gauge) sees that
        deleted and expired jobs leave nothing behind."""
        with self._lock:
            self._jobs.expire()
            return sum(len(records) for records in self._jobs.values())

    # -- internals (callers hold the lock) ------------------------------------------------------------------------

    def _expired(self, record: _Record, now: float) -> bool:
        # At exactly ttl, as the TTLCache holding the job judges it.
        return now - record.set_at >= self.ttl

    def _live(self, key: ExpectationKey) -> _Record | None:
        records = self._jobs.get(key.job)
        record = None if records is None else records.get(key)
        if record is None or self._expired(record, self._clock.now()):
            return None
        return record

    def _put(self, key: ExpectationKey, record: _Record) -> None:
        records = self._jobs.get(key.job) or {}
        records[key] = record
        self._jobs[key.job] = records  # re-setting renews the job's expiry, so it outlives this record
