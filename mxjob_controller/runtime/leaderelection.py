"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's protocol (``tools/leaderelection``).

    elector = LeaderElector(leader_election_client(config, "leader-election", program="my-operator"),
                            LeaderElectionConfig("my-operator", namespace="operators"),
                            on_started_leading=start_controllers, on_stopped_leading=exit_non_zero,
                            registry=registry).start()
    ...
    elector.stop()   # graceful: releases the lease, so a standby takes over at once

The protocol, as client-go's (so our replicas interoperate with Go ones on the same Lease):

- A candidate reads the Lease. Absent: it creates it (409 AlreadyExists: someone else won). Held by another
  identity whose record it saw change less than ``leaseDurationSeconds`` ago (by *its own* monotonic clock, from
  the moment it saw the change): it waits. Otherwise (expired, or released: empty holder) it updates the Lease
  with the resourceVersion it read (409 Conflict: it lost the race).
- The leader renews every ``retry_period``. The timestamps written in the Lease are never compared with the local
  clock; only their *change* matters, so any clock skew between hosts is harmless (a drift in clock *rate* is
  absorbed by ``lease_duration - renew_deadline``).
- A graceful :meth:`LeaderElector.stop` releases the Lease (empty holder, ``leaseDurationSeconds: 1``, as
  client-go's ReleaseOnCancel). A standby watches the Lease while it waits and retries the moment it sees the
  release, so it takes over within a round trip rather than at its next retry (up to 4.4 s with the defaults).

Guarantees:

- :meth:`LeaderElector.is_leader` is True only while less than ``renew_deadline`` has passed since the start of
  our last successful write of the Lease. A standby cannot take over before ``lease_duration`` has passed since it
  saw that write (which happened after its start), and ``renew_deadline < lease_duration``: so two electors of one
  process, or of two hosts with clocks running at the same rate, never both answer True at the same moment, however
  late any thread is scheduled. Leadership is one interval: once False, never True again for this elector.
- Losing the lease (no successful renew within ``renew_deadline``) ends leadership for good: the thread sets the
  event given to ``on_started_leading``, sets ``leader_election_master_status`` to 0, calls
  ``on_stopped_leading`` and exits. The process is expected to exit non-zero so its Deployment restarts it (the
  elector does not do that itself).

Differences from client-go, each on the side of safety or speed:

- the renew deadline is counted from the start of the last successful renew (client-go: from the start of the
  current round of retries, up to one retry period later);
- a record counts as changed when any field differs at full (microsecond) precision (client-go compares a
  second-precision copy, which misses sub-second renewals);
- a standby also wakes exactly when the lease it waits for expires, and when its watch sees the Lease released,
  not only on its jittered retry;
- a release re-checks that the Lease is still ours, and happens only on a graceful stop, after
  ``on_started_leading`` returned (or a renew deadline passed); never after a loss, when our reconciles may still
  be running;
- ``on_stopped_leading`` is called only after ``on_started_leading`` was.
"""

from __future__ import annotations

import logging
import math
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry, Gauge

from mxjob_controller.kube.timefmt import now_micro
from mxjob_controller.runtime.client import (
    LEASES,
    AlreadyExists,
    Client,
    ClientConfig,
    Conflict,
    KubeError,
    NotFound,
)
from mxjob_controller.runtime.client.errors import refused
from mxjob_controller.runtime.clock import Clock, RealClock
from mxjob_controller.runtime.lease_watch import LeaseWatch
from mxjob_controller.runtime.registry import families_for

log = logging.getLogger(__name__)

DEFAULT_LEASE_DURATION = 15.0
DEFAULT_RENEW_DEADLINE = 10.0
DEFAULT_RETRY_PERIOD = 2.0
JITTER_FACTOR = 1.2             # client-go's: a candidate retries after retry_period * [1, 2.2)
RELEASED_LEASE_SECONDS = 1      # what a released Lease says, as client-go writes it
_MIN_REQUEST_TIMEOUT = 0.05     # seconds; below this a request is not worth sending

MASTER_STATUS_HELP = ("Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
                      "1 indicates master. 'name' is the string used to identify the lease. Please make sure to "
                      "group by name.")


def default_identity() -> str:
    """``<hostname>_<uuid4>``: unique per process even when pods share a hostname (as client-go callers build it)."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True)
class LeaderElectionConfig:
    """Which Lease, who we are, and the timings (seconds). ``name`` labels the metric (default: the Lease name).
    ``watch_releases``: while waiting, watch the Lease to retry the moment it is released (see ``lease_watch``)."""

    lease_name: str
    namespace: str
    identity: str = field(default_factory=default_identity)
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD
    release_on_cancel: bool = True
    watch_releases: bool = True
    name: str = ""

    def __post_init__(self) -> None:
        if not self.lease_name or not self.namespace:
            raise ValueError("leader election needs a lease name and a namespace")
        if not self.identity:
            raise ValueError("leader election needs a non-empty identity")
        if self.lease_duration < 1 or self.lease_duration != int(self.lease_duration):
            # The Lease stores whole seconds: a fraction would be truncated and standbys would take over early.
            raise ValueError("lease_duration must be a whole number of seconds, at least 1")
        if self.retry_period <= 0 or self.renew_deadline <= 0:
            raise ValueError("renew_deadline and retry_period must be greater than zero")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            raise ValueError(f"renew_deadline must be greater than retry_period*{JITTER_FACTOR}")

    @property
    def metric_name(self) -> str:
        return self.name or self.lease_name

    @property
    def lease_seconds(self) -> int:
        return int(self.lease_duration)


def leader_election_client(config: ClientConfig, component: str, renew_deadline: float = DEFAULT_RENEW_DEADLINE,
                           *, program: str | None = None, version: str | None = None,
                           budget_of: Client | None = None) -> Client:
    """A client for the elector alone: no retries on Retry-After (a renewal must fail fast, not sleep past its
    deadline), a connect timeout within the renew deadline, and its own token bucket, so a busy controller
    sharing the process cannot starve the renewals. ``program``/``version`` name the caller (see ``user_agent``);
    ``budget_of``: the process's main client, whose budget decision (the server's flow control) it shares."""
    return Client(config.with_overrides(connect_timeout=min(config.connect_timeout, renew_deadline)),
                  component=component, program=program, version=version, max_retries=0, budget_of=budget_of)


def _level(error: BaseException) -> int:
    """A Lease the API server refuses us (RBAC, 403) is an error: nobody leads until someone fixes it."""
    return logging.ERROR if refused(error) else logging.WARNING


class LeaseRecord(NamedTuple):
    """The election record a Lease's spec holds (client-go's LeaderElectionRecord), times as written."""

    holder: str = ""
    lease_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    transitions: int = 0

    @classmethod
    def of(cls, lease: dict[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(spec.get("holderIdentity") or "", int(spec.get("leaseDurationSeconds") or 0),
                   spec.get("acquireTime") or "", spec.get("renewTime") or "", int(spec.get("leaseTransitions") or 0))

    def spec(self) -> dict[str, Any]:
        return {"holderIdentity": self.holder, "leaseDurationSeconds": self.lease_seconds,
                "acquireTime": self.acquire_time, "renewTime": self.renew_time, "leaseTransitions": self.transitions}


class LeaderElectionMetrics:
    """``leader_election_master_status{name}`` on one registry (one instance per registry)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.master_status = Gauge("leader_election_master_status", MASTER_STATUS_HELP, ("name",), registry=registry)


OnStartedLeading = Callable[[threading.Event], None]


class LeaderElector:
    """Campaigns for the Lease on a thread named ``leader-election-<name>``; see the module docstring.

    Callbacks: ``on_started_leading(ended)`` runs on its own thread (``...-leading``) once we lead, with an event
    set the moment leadership ends; ``on_stopped_leading()`` runs on the elector thread when leadership ends (lost,
    or released by :meth:`stop`); ``on_new_leader(identity)`` runs on the elector thread whenever another holder
    is observed (keep it quick). An exception in a callback is logged and otherwise ignored.
    """

    def __init__(self, client: Client, config: LeaderElectionConfig, *,
                 on_started_leading: OnStartedLeading | None = None,
                 on_stopped_leading: Callable[[], None] | None = None,
                 on_new_leader: Callable[[str], None] | None = None,
                 registry: CollectorRegistry | None = None, clock: Clock | None = None,
                 rng: random.Random | None = None) -> None:
        self.client = client
        self.config = config
        self._on_started_leading = on_started_leading
        self._on_stopped_leading = on_stopped_leading
        self._on_new_leader = on_new_leader
        self._clock: Clock = clock or RealClock()
        self._rng = rng or random.Random()
        self._status = (families_for(LeaderElectionMetrics, registry).master_status.labels(config.metric_name)
                        if registry is not None else None)
        self._set_status(0)
        self._cond = threading.Condition(threading.Lock())  # guards everything below; the thread sleeps on it
        self._stop_requested = False
        self._lease: dict[str, Any] | None = None       # the Lease as last read or written (its resourceVersion)
        self._observed = LeaseRecord()
        self._observed_at = -math.inf                     # local time we last saw the record change
        self._leading = False
        self._valid_until = -math.inf                     # is_leader() is False from this local time on
        self._lost = False
        self._poked = False                               # the Lease watch saw it released: retry now
        self._reported_leader = ""
        self.leadership_ended = threading.Event()
        self._acquired_or_done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"leader-election-{config.metric_name}", daemon=True)
        self._leading_thread: threading.Thread | None = None

    # --- the public view ------------------------------------------------------------------------------

    @property
    def identity(self) -> str:
        return self.config.identity

    def is_leader(self) -> bool:
        """True while we hold the Lease with a renewal less than ``renew_deadline`` old (see the guarantees)."""
        with self._cond:
            return self._leading and self._clock.now() < self._valid_until

    @property
    def leader(self) -> str:
        """The holder identity we last observed ("" for none): informational."""
        with self._cond:
            return self._observed.holder

    @property
    def lost(self) -> bool:
        """True once leadership ended without :meth:`stop` being asked for it."""
        with self._cond:
            return self._lost

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def wait_for_leadership(self, timeout: float) -> bool:
        """Block until we lead (True), or until the elector ended or ``timeout`` real seconds passed (False)."""
        self._acquired_or_done.wait(timeout)
        return self.is_leader()

    # --- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> LeaderElector:
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> bool:
        """Stop campaigning; if leading, end leadership and release the Lease. Joins the elector thread (and the
        ``on_started_leading`` thread) within ``timeout`` (default: three renew deadlines + 5 s, enough for an
        in-flight request, the callback to return, and the release); False if one is still running then."""
        with self._cond:
            self._stop_requested = True
            self._cond.notify_all()
        if timeout is None:
            timeout = 3 * self.config.renew_deadline + 5.0
        deadline = time.monotonic() + timeout
        if self._thread.ident is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        leading_thread = self._leading_thread
        if leading_thread is not None and leading_thread is not threading.current_thread():
            leading_thread.join(max(0.0, deadline - time.monotonic()))
        return not self._thread.is_alive() and not (leading_thread is not None and leading_thread.is_alive())

    # --- the elector thread ---------------------------------------------------------------------------

    def _run(self) -> None:
        desc = f"{self.config.namespace}/{self.config.lease_name}"
        led = False
        try:
            log.info("leader election %s: %s attempting to acquire the lease", desc, self.identity)
            if not self._acquire():
                return
            led = True
            log.info("leader election %s: %s acquired the lease", desc, self.identity)
            self._start_leading()
            lost = self._renew()
            self._end_leadership(lost)
            if lost:
                # No release: our controllers may still be winding down; the lease expires on its own.
                log.error("leader election %s: %s lost the lease (no renewal within %gs)", desc, self.identity,
                          self.config.renew_deadline)
            elif self.config.release_on_cancel:
                self._join_leading_thread(self.config.renew_deadline)
                if self._release():
                    log.info("leader election %s: %s released the lease", desc, self.identity)
        except Exception:
            log.exception("leader election %s: the elector failed", desc)
            self._end_leadership(lost=True)
        finally:
            if led:
                self._call("on_stopped_leading", self._on_stopped_leading)
            self._acquired_or_done.set()

    def _acquire(self) -> bool:
        """Try until we hold the Lease (True) or stop is requested (False)."""
        watch = None
        if self.config.watch_releases:
            watch = LeaseWatch(self.client, self.config.namespace, self.config.lease_name, self._poke,
                               thread_name=self._thread.name).start()
        try:
            while True:
                acquired = self._try_acquire_or_renew(self._clock.now() + self.config.renew_deadline)
                self._report_new_leader()
                if acquired:
                    return True
                now = self._clock.now()
                wake = now + self.config.retry_period * (1 + self._rng.random() * JITTER_FACTOR)
                with self._cond:
                    expiry = self._observed_at + self._observed.lease_seconds
                    if self._observed.holder and self._observed.holder != self.identity and expiry > now:
                        wake = min(wake, expiry)  # the holder's lease runs out before our retry: be there
                if self._sleep_until(wake, wake_on_release=True):
                    return False
        finally:
            if watch is not None:
                watch.stop()

    def _renew(self) -> bool:
        """Renew every retry period until stop (returns False) or the renew deadline passes (returns True: lost)."""
        while True:
            if self._sleep_until(self._clock.now() + self.config.retry_period):
                return False
            while True:
                with self._cond:
                    deadline = self._valid_until
                now = self._clock.now()
                if now >= deadline:
                    return True
                renewed = self._try_acquire_or_renew(deadline)
                self._report_new_leader()
                if renewed:
                    break
                if self._sleep_until(min(self._clock.now() + self.config.retry_period, deadline)):
                    return False

    def _try_acquire_or_renew(self, deadline: float) -> bool:
        """One attempt (client-go's tryAcquireOrRenew); requests get read timeouts ending by ``deadline``."""
        wall = now_micro()
        desired = LeaseRecord(self.identity, self.config.lease_seconds, wall, wall, 0)
        with self._cond:
            observed, lease = self._observed, self._lease
            fast = (observed.holder == self.identity and lease is not None
                    and self._observed_at + observed.lease_seconds > self._clock.now())
        if fast and lease is not None:  # 1. optimistic renew with the resourceVersion we hold
            renewal = desired._replace(acquire_time=observed.acquire_time, transitions=observed.transitions)
            if self._write(lease, renewal, deadline):
                return True
        try:  # 2. read (or create) the Lease
            lease = self.client.get(LEASES, self.config.lease_name, self.config.namespace,
                                    timeout=self._timeout(deadline))
        except NotFound:
            return self._create(desired, deadline)
        except KubeError as e:
            log.log(_level(e), "leader election: reading lease %s/%s failed: %s", self.config.namespace,
                        self.config.lease_name, e)
            return False
        record = LeaseRecord.of(lease)
        with self._cond:  # 3. note a change, by our clock
            self._lease = lease
            if record != self._observed:
                self._observed, self._observed_at = record, self._clock.now()
            valid = self._observed_at + record.lease_seconds > self._clock.now()
        if record.holder and record.holder != self.identity and valid:
            return False
        if record.holder == self.identity:  # 4. take it (or renew by the slow path)
            desired = desired._replace(acquire_time=record.acquire_time, transitions=record.transitions)
        else:
            desired = desired._replace(transitions=record.transitions + 1)
        return self._write(lease, desired, deadline)

    def _create(self, desired: LeaseRecord, deadline: float) -> bool:
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": self.config.lease_name, "namespace": self.config.namespace},
                "spec": desired.spec()}
        started = self._clock.now()
        try:
            created = self.client.create(LEASES, body, timeout=self._timeout(deadline))
        except AlreadyExists:
            return False  # another candidate created it first
        except KubeError as e:
            log.log(_level(e), "leader election: creating lease %s/%s failed: %s", self.config.namespace,
                        self.config.lease_name, e)
            return False
        return self._hold(created, desired, started)

    def _write(self, lease: dict[str, Any], record: LeaseRecord, deadline: float) -> bool:
        """PUT ``record`` into ``lease`` (conditional on its resourceVersion); True if we now hold it."""
        started = self._clock.now()
        try:
            updated = self.client.update(LEASES, {**lease, "spec": record.spec()}, timeout=self._timeout(deadline))
        except Conflict:
            return False  # someone wrote it since we read it
        except KubeError as e:
            log.log(_level(e), "leader election: updating lease %s/%s failed: %s", self.config.namespace,
                        self.config.lease_name, e)
            return False
        return self._hold(updated, record, started)

    def _hold(self, lease: dict[str, Any], record: LeaseRecord, started: float) -> bool:
        """Record a successful write started at ``started``; leadership extends only if it has not lapsed."""
        with self._cond:
            self._lease = lease
            self._observed, self._observed_at = record, self._clock.now()
            if self._leading and self._clock.now() >= self._valid_until:
                return False  # it lapsed while the request was in flight: is_leader() already said False
            self._valid_until = started + self.config.renew_deadline
            self._leading = True
        self._acquired_or_done.set()
        return True

    def _release(self) -> bool:
        """Empty the holder if the Lease is still ours (client-go's tryRelease, re-checking the holder)."""
        deadline = self._clock.now() + self.config.renew_deadline
        while self._clock.now() < deadline:
            try:
                lease = self.client.get(LEASES, self.config.lease_name, self.config.namespace,
                                        timeout=self._timeout(deadline))
            except KubeError as e:
                log.warning("leader election: reading lease %s/%s to release it failed: %s",
                            self.config.namespace, self.config.lease_name, e)
                return False
            record = LeaseRecord.of(lease)
            if record.holder != self.identity:
                return False  # not ours (any more): nothing to release
            wall = now_micro()
            released = LeaseRecord("", RELEASED_LEASE_SECONDS, wall, wall, record.transitions)
            try:
                self.client.update(LEASES, {**lease, "spec": released.spec()}, timeout=self._timeout(deadline))
            except Conflict:
                continue  # a renewal raced with us: read again
            except KubeError as e:
                log.warning("leader election: releasing lease %s/%s failed: %s", self.config.namespace,
                            self.config.lease_name, e)
                return False
            with self._cond:
                self._observed, self._observed_at = released, self._clock.now()
            return True
        return False

    def _start_leading(self) -> None:
        self._set_status(1)
        callback = self._on_started_leading
        if callback is not None:
            self._leading_thread = threading.Thread(
                target=self._call, args=("on_started_leading", callback, self.leadership_ended),
                name=f"{self._thread.name}-leading", daemon=True)
            self._leading_thread.start()

    def _join_leading_thread(self, timeout: float) -> None:
        """Give ``on_started_leading`` up to ``timeout`` to return after leadership ended, before releasing."""
        thread = self._leading_thread
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                log.warning("leader election: on_started_leading still running %gs after leadership ended; "
                            "releasing the lease anyway", timeout)

    def _end_leadership(self, lost: bool) -> None:
        with self._cond:
            was_leading = self._leading
            self._leading = False
            self._valid_until = -math.inf
            self._lost = self._lost or (lost and was_leading)
            self._cond.notify_all()
        self._set_status(0)
        self.leadership_ended.set()

    def _report_new_leader(self) -> None:
        with self._cond:
            holder = self._observed.holder
            if not holder or holder == self._reported_leader:
                return
            self._reported_leader = holder
        log.info("leader election %s/%s: new leader %s", self.config.namespace, self.config.lease_name, holder)
        self._call("on_new_leader", self._on_new_leader, holder)

    # --- small helpers --------------------------------------------------------------------------------

    def _sleep_until(self, deadline: float, wake_on_release: bool = False) -> bool:
        """Sleep until ``deadline`` on our clock (or a release seen by the watch, if asked); True if stop was
        requested (at once or meanwhile)."""
        with self._cond:
            while not self._stop_requested and self._clock.now() < deadline:
                if wake_on_release and self._poked:
                    break
                self._clock.wait_until(self._cond, deadline)
            self._poked = False
            return self._stop_requested

    def _poke(self) -> None:
        with self._cond:
            self._poked = True
            self._cond.notify_all()

    def _timeout(self, deadline: float) -> float:
        return max(_MIN_REQUEST_TIMEOUT, deadline - self._clock.now())

    def _set_status(self, value: int) -> None:
        if self._status is not None:
            self._status.set(value)

    @staticmethod
    def _call(what: str, callback: Callable[..., None] | None, *args: Any) -> None:
        if callback is None:
            return
        try:
            callback(*args)
        except Exception:
            log.exception("leader election: %s callback failed", what)
