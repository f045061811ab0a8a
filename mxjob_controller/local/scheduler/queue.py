"""The local scheduler's queue of pods to place, pure: kube-scheduler's scheduling queue
(``pkg/scheduler/internal/queue/scheduling_queue.go``), so that a backlog of pods that cannot fit costs nothing while
nothing changes.

Why: the scheduler used to try every waiting pod in a pass each second; with a sweep's backlog (390 pods waiting on a
node of 110) that kept the API server's process busy for nothing. kube-scheduler tries a pod that failed again only
when something happened that could make it fit, or after a long while; this queue does the same.

A pod is in one of three places, as in kube:

- **active** (``activeQ``): to be tried at the next pass: a new pod, a pod whose spec changed, a pod moved here by a
  cluster event once its backoff is over;
- **backoff** (``podBackoffQ``): moved by an event while still backing off; it turns active when its backoff ends
  (``1 s`` after its first failure, doubling per attempt up to ``10 s``: ``podInitialBackoffSeconds``,
  ``podMaxBackoffSeconds``), or at once when no pod is active (kube 1.33's ``SchedulerPopFromBackoffQ``, on by
  default: a scheduler with nothing else to do does not sit out a backoff) unless it got there by an error (kube's
  ``podErrorBackoffQ``: a failing write is not retried in a loop);
- **unschedulable** (``unschedulablePods``): tried and did not fit; it stays until a cluster event that could make
  it fit (:meth:`SchedulingQueue.move_all`: a bound pod deleted or finished, the node changed, its PodGroup changed)
  or until it has been there :data:`MAX_IN_UNSCHEDULABLE` (``podMaxInUnschedulablePodsDuration``, 5 minutes).

A pass takes every pod that is ready (:meth:`SchedulingQueue.pop`); a gang is taken whole (every member the queue
holds), since its pods bind together or not at all. Each pod taken is then :meth:`~SchedulingQueue.done` (bound,
forgotten), :meth:`~SchedulingQueue.unschedulable` (did not fit) or :meth:`~SchedulingQueue.error` (a write failed:
back off and retry). A move request that arrives while a pod is being tried sends it to backoff rather than
unschedulable when it fails (kube's ``moveRequestCycle``): the pass may have read the cluster before the change.

Guarantees: no pod is tried again without an event, a flush or its own error; :meth:`SchedulingQueue.next_due`
is the earliest time at which one would be without an event (None: never), so the scheduler sleeps until then.
Thread-safe (informer handlers move pods while the scheduler's thread pops them); time comes from the injected
``now`` (tests use a fake clock).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from mxjob_controller.runtime.backoff import exponential_delay

INITIAL_BACKOFF = 1.0           # podInitialBackoffSeconds
MAX_BACKOFF = 10.0              # podMaxBackoffSeconds
MAX_IN_UNSCHEDULABLE = 300.0    # podMaxInUnschedulablePodsDuration
UNSCHEDULABLE_FLUSH = 30.0      # how often kube looks for pods left in unschedulablePods that long

ACTIVE, BACKOFF, UNSCHEDULABLE, IN_FLIGHT = "active", "backoff", "unschedulable", "in-flight"


@dataclass(slots=True)
class _Entry:
    key: str
    group: str | None
    where: str = ACTIVE
    attempts: int = 0           # failed attempts so far (the backoff doubles with each)
    failed_at: float = 0.0      # when the last attempt failed (kube's QueuedPodInfo.Timestamp)
    since: float = 0.0          # when it entered unschedulable
    moved: bool = False         # a move request came while it was being tried
    errored: bool = False       # in backoff for an error: never taken before its backoff ends


@dataclass(frozen=True, slots=True)
class QueueStats:
    active: int = 0
    backoff: int = 0
    unschedulable: int = 0
    in_flight: int = 0
    attempts: int = 0           # failed attempts since the queue was made (every pod)
    moves: dict[str, int] = field(default_factory=dict)   # move requests by event


class SchedulingQueue:
    def __init__(self, now: Callable[[], float], *, initial_backoff: float = INITIAL_BACKOFF,
                 max_backoff: float = MAX_BACKOFF, max_in_unschedulable: float = MAX_IN_UNSCHEDULABLE,
                 pop_from_backoff: bool = True) -> None:
        self._now = now
        self.initial_backoff, self.max_backoff = initial_backoff, max_backoff
        self.max_in_unschedulable = max_in_unschedulable
        self.pop_from_backoff = pop_from_backoff
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._attempts = 0
        self._moves: dict[str, int] = {}
        self._next_leftover_flush = now() + UNSCHEDULABLE_FLUSH

    # --- what the pods are ------------------------------------------------------------------------------------

    def add(self, key: str, group: str | None = None) -> None:
        """A pod to place (new, or changed in a way that may make it fit): active now, its attempts kept (kube's
        ``Update`` of an unschedulable pod). A pod being tried is only marked moved."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self._entries[key] = _Entry(key, group)
                return
            entry.group = group
            if entry.where == IN_FLIGHT:
                entry.moved = True
            else:
                entry.where, entry.errored = ACTIVE, False

    def delete(self, key: str) -> None:
        """The pod is gone, bound by another, or no longer this scheduler's to place."""
        with self._lock:
            self._entries.pop(key, None)

    def sync(self, waiting: Mapping[str, str | None]) -> None:
        """Make the queue hold exactly ``waiting`` (pod key → its PodGroup): pods it does not know are added
        (active), pods it holds that no longer wait are dropped. A pass calls this with what the cache shows, so a
        missed or reordered informer event can never strand a pod."""
        with self._lock:
            for key in [k for k in self._entries if k not in waiting]:
                del self._entries[key]
            for key, group in waiting.items():
                entry = self._entries.get(key)
                if entry is None:
                    self._entries[key] = _Entry(key, group)
                else:
                    entry.group = group

    # --- a pass -----------------------------------------------------------------------------------------------

    def pop(self) -> list[str]:
        """Every pod to try now, each gang whole; they are in flight until done, unschedulable or error."""
        with self._lock:
            self._flush_locked()
            ready = [e for e in self._entries.values() if e.where == ACTIVE]
            if not ready and self.pop_from_backoff:
                ready = [e for e in self._entries.values() if e.where == BACKOFF and not e.errored]
            chosen = {id(e) for e in ready}
            groups = {e.group for e in ready if e.group is not None}
            taken = [e for e in self._entries.values()
                     if id(e) in chosen or (e.group is not None and e.group in groups and e.where != IN_FLIGHT)]
            for entry in taken:
                entry.where, entry.moved = IN_FLIGHT, False
            return [e.key for e in taken]

    def done(self, key: str) -> None:
        """The pod was bound: forgotten."""
        self.delete(key)

    def unschedulable(self, key: str) -> None:
        """The pod was tried and does not fit: unschedulable, or backoff if a move request came meanwhile."""
        self._failed(key, to_backoff=False)

    def error(self, key: str) -> None:
        """Trying the pod failed on an error (a bind or a status write): backoff, retried when it ends."""
        self._failed(key, to_backoff=True)

    def _failed(self, key: str, to_backoff: bool) -> None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return
            now = self._now()
            entry.attempts += 1
            entry.failed_at = now
            self._attempts += 1
            if to_backoff or entry.moved:
                entry.where = BACKOFF
            else:
                entry.where, entry.since = UNSCHEDULABLE, now
            entry.moved, entry.errored = False, to_backoff

    # --- cluster events ---------------------------------------------------------------------------------------

    def move_all(self, event: str, groups: Iterable[str] | None = None) -> int:
        """A cluster event that could make waiting pods fit (``AssignedPodDelete``, ``NodeUpdate``,
        ``PodGroupUpdate``...): the unschedulable pods (only those of ``groups``, when given) go to backoff while
        still backing off, else active; pods being tried are marked moved. The number of pods moved."""
        only = set(groups) if groups is not None else None
        with self._lock:
            self._moves[event] = self._moves.get(event, 0) + 1
            return self._move_locked(lambda e: only is None or e.group in only)

    def _move_locked(self, which: Callable[[_Entry], bool]) -> int:
        now, moved = self._now(), 0
        for entry in self._entries.values():
            if not which(entry):
                continue
            if entry.where == IN_FLIGHT:
                entry.moved = True
            elif entry.where == UNSCHEDULABLE:
                entry.where = BACKOFF if now < self._backoff_end(entry) else ACTIVE
                moved += 1
        return moved

    def backoff(self, attempts: int) -> float:
        """The backoff after ``attempts`` failed attempts: 1 s, 2 s, 4 s, 8 s, then 10 s (kube's
        ``calculateBackoffDuration``)."""
        if attempts <= 0:
            return 0.0
        return exponential_delay(self.initial_backoff, attempts - 1, self.max_backoff)

    def _backoff_end(self, entry: _Entry) -> float:
        return entry.failed_at + self.backoff(entry.attempts)

    def _flush_locked(self) -> None:
        """Backoffs that ended turn active (kube's ``flushBackoffQCompleted``, every second); pods unschedulable for
        :data:`MAX_IN_UNSCHEDULABLE` are moved as by an event (``flushUnschedulablePodsLeftover``, every 30 s)."""
        now = self._now()
        for entry in self._entries.values():
            if entry.where == BACKOFF and now >= self._backoff_end(entry):
                entry.where, entry.errored = ACTIVE, False
        if now >= self._next_leftover_flush:
            self._next_leftover_flush = now + UNSCHEDULABLE_FLUSH
            limit = self.max_in_unschedulable
            if self._move_locked(lambda e: e.where == UNSCHEDULABLE and now - e.since >= limit):
                self._moves["UnschedulableTimeout"] = self._moves.get("UnschedulableTimeout", 0) + 1

    # --- when -------------------------------------------------------------------------------------------------

    def ready(self) -> bool:
        """Whether :meth:`pop` would return a pod now."""
        with self._lock:
            self._flush_locked()
            return any(e.where == ACTIVE or (self._early(e) and e.where == BACKOFF) for e in self._entries.values())

    def _early(self, entry: _Entry) -> bool:
        """Whether a pod in backoff may be taken before its backoff ends (when no pod is active)."""
        return self.pop_from_backoff and not entry.errored

    def next_due(self) -> float | None:
        """The earliest time a pod turns ready without an event: a backoff ending, or the next look for pods left
        unschedulable too long (only while some are); None when no pod ever would."""
        with self._lock:
            due: float | None = None
            for entry in self._entries.values():
                if entry.where in (ACTIVE, BACKOFF):
                    at = self._now() if entry.where == ACTIVE or self._early(entry) else self._backoff_end(entry)
                elif entry.where == UNSCHEDULABLE:
                    at = max(entry.since + self.max_in_unschedulable, self._next_leftover_flush)
                else:
                    continue
                due = at if due is None else min(due, at)
            return due

    def stats(self) -> QueueStats:
        with self._lock:
            where = [e.where for e in self._entries.values()]
            return QueueStats(active=where.count(ACTIVE), backoff=where.count(BACKOFF),
                              unschedulable=where.count(UNSCHEDULABLE), in_flight=where.count(IN_FLIGHT),
                              attempts=self._attempts, moves=dict(self._moves))

    def attempts_of(self, key: str) -> int:
        with self._lock:
            entry = self._entries.get(key)
            return entry.attempts if entry is not None else 0

    def where(self, key: str) -> str | None:
        with self._lock:
            entry = self._entries.get(key)
            return entry.where if entry is not None else None
