"""Leader election on a Lease (runtime/leaderelection) against the embedded API server: one leader at any sampled
moment, handover when the leader's renewals fail (fault injection) and at once on a graceful release, and
clock-skew safety (validity judged by local observation, on a fake clock)."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.runtime.backoff import Backoff, BackoffPolicy
from mxjob_controller.runtime.client import ClientConfig
from mxjob_controller.runtime.clock import FakeClock
from mxjob_controller.runtime.leaderelection import (
    JITTER_FACTOR,
    LeaderElectionConfig,
    LeaderElector,
    default_identity,
    leader_election_client,
)
from mxjob_controller.runtime.lease_watch import LeaseWatch
from tests.support import Kube, wait_for

LEASE = "/apis/coordination.k8s.io/v1/namespaces/default/leases/mxjob-controller"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 2.0, 1.2, 0.2


class Candidate:
    """An elector as one replica would run it: its own client (own user agent), registry and callback log."""

    def __init__(self, url: str, name: str, clock: FakeClock | None = None, lease_duration: float = LEASE_DURATION,
                 renew_deadline: float = RENEW_DEADLINE, retry_period: float = RETRY_PERIOD,
                 on_started_leading=None) -> None:
        self.client = leader_election_client(ClientConfig(host=url), f"elector-{name}", renew_deadline)
        self.registry = CollectorRegistry()
        self.events: list[tuple[str, str, float]] = []  # (what, identity, monotonic time)
        config = LeaderElectionConfig("mxjob-controller", "default", identity=f"{name}_{default_identity()}",
                                      lease_duration=lease_duration, renew_deadline=renew_deadline,
                                      retry_period=retry_period)
        self.elector = LeaderElector(
            self.client, config, registry=self.registry, clock=clock,
            on_started_leading=lambda ended: self._started(ended, on_started_leading),
            on_stopped_leading=lambda: self._note("stopped"),
            on_new_leader=lambda identity: self._note("new_leader", identity))

    def _started(self, ended: threading.Event, then) -> None:
        self._note("started")
        if then is not None:
            then(ended)

    def _note(self, what: str, identity: str = "") -> None:
        self.events.append((what, identity, time.monotonic()))

    @property
    def identity(self) -> str:
        return self.elector.identity

    def status(self) -> float | None:
        return self.registry.get_sample_value("leader_election_master_status", {"name": "mxjob-controller"})


@pytest.fixture
def candidates(apiserver) -> Iterator[list[Candidate]]:
    made: list[Candidate] = []
    yield made
    for c in made:
        c.elector.stop(10)
        c.client.close()


def new_candidate(apiserver, candidates: list[Candidate], name: str, **kwargs) -> Candidate:
    c = Candidate(apiserver.url, name, **kwargs)
    candidates.append(c)
    return c


class Sampler:
    """Samples two electors continuously. An overlap is proved only by a sandwich: x at t1, y at t2, x at t3 with
    t1 < t2 < t3 all True (an elector leads over one interval, so x led throughout [t1, t3], y at t2)."""

    def __init__(self, x: LeaderElector, y: LeaderElector) -> None:
        self.x, self.y = x, y
        self.overlaps: list[str] = []
        self.samples: list[tuple[float, bool, bool]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="leader-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(0.002)
        self._sample()  # the final state, even if a busy machine starved this thread at the end

    def _sample(self) -> None:
        for first, second, names in ((self.x, self.y, "x y x"), (self.y, self.x, "y x y")):
            if first.is_leader() and second.is_leader() and first.is_leader():
                self.overlaps.append(names)
        self.samples.append((time.monotonic(), self.x.is_leader(), self.y.is_leader()))

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def test_one_leader_at_a_time_and_a_leader_whose_renewals_fail_is_replaced_in_time(apiserver, candidates,
                                                                                    kube: Kube):
    a = new_candidate(apiserver, candidates, "a")
    b = new_candidate(apiserver, candidates, "b")
    with Sampler(a.elector, b.elector) as sampler:
        a.elector.start()
        b.elector.start()
        wait_for(lambda: a.elector.is_leader() or b.elector.is_leader(), what="a leader")
        leader, standby = (a, b) if a.elector.is_leader() else (b, a)
        wait_for(lambda: standby.elector.leader == leader.identity, what="the standby sees the leader")
        # Several renewals go by; leadership does not move while renewals succeed.
        renewed = kube.get(LEASE).body["spec"]["renewTime"]
        wait_for(lambda: kube.get(LEASE).body["spec"]["renewTime"] != renewed, what="a renewal")
        assert leader.elector.is_leader() and not standby.elector.is_leader()
        assert leader.status() == 1.0 and standby.status() == 0.0

        rule = apiserver.faults.add(FaultRule(user_agent=leader.client.user_agent, resource="leases", code=500))
        assert leader.elector.is_leader()
        leading_at = time.monotonic()  # the leader led here, so its last successful renewal is < RENEW_DEADLINE old
        wait_for(standby.elector.is_leader, timeout=15, what="the standby takes over")
        took_over = time.monotonic()
        assert rule.fired > 0
        wait_for(lambda: not leader.elector.running, what="the old leader's elector ends")

    assert sampler.overlaps == []
    # Sampled states, runs collapsed: before the election, the leader, the handover gap, the new leader.
    first = "x" if leader is a else "y"
    states = [("x" if x else "") + ("y" if y else "") or "-" for _, x, y in sampler.samples]
    runs = [state for i, state in enumerate(states) if i == 0 or states[i - 1] != state]
    assert runs in (["-", first, "-", "xy".replace(first, "")], [first, "-", "xy".replace(first, "")])
    # Not before its last renewal had a full lease duration to expire; within a lease duration and a (jittered)
    # retry period of the failure, plus slack for a busy machine.
    assert took_over - leading_at > LEASE_DURATION - RENEW_DEADLINE
    assert took_over - leading_at < LEASE_DURATION + RETRY_PERIOD * (1 + JITTER_FACTOR) + 1.5
    assert leader.elector.lost and leader.elector.leadership_ended.is_set()
    # Callbacks run on the electors' own threads, a moment after the state they report.
    wait_for(lambda: len(leader.events) >= 3 and len(standby.events) >= 3, what="every callback")
    assert [e[0] for e in leader.events] == ["new_leader", "started", "stopped"]
    assert [(e[0], e[1]) for e in standby.events] == [("new_leader", leader.identity),
                                                      ("new_leader", standby.identity), ("started", "")]
    assert leader.status() == 0.0 and standby.status() == 1.0
    spec = kube.get(LEASE).body["spec"]
    assert spec["holderIdentity"] == standby.identity
    assert spec["leaseDurationSeconds"] == int(LEASE_DURATION)
    assert spec["leaseTransitions"] == 1
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", spec["renewTime"])  # MicroTime


def test_a_graceful_stop_releases_the_lease_and_a_standby_takes_over_within_2s(apiserver, candidates, kube: Kube):
    returned_at: list[float] = []

    def lead_until_ended(ended: threading.Event) -> None:  # as a manager running controllers until told to stop
        ended.wait(30)
        returned_at.append(time.monotonic())

    # Production timings (15 s, 10 s, 2 s): b's next poll is at least 2 s after its first, which has just
    # happened when a stops; only the release, seen by b's watch of the Lease, can let b in sooner.
    a = new_candidate(apiserver, candidates, "a", lease_duration=15, renew_deadline=10, retry_period=2,
                      on_started_leading=lead_until_ended)
    b = new_candidate(apiserver, candidates, "b", lease_duration=15, renew_deadline=10, retry_period=2)
    a.elector.start()
    assert a.elector.wait_for_leadership(10)
    b.elector.start()
    wait_for(lambda: b.elector.leader == a.identity, what="b's first poll sees a leading")
    with Sampler(a.elector, b.elector) as sampler:
        stopping = time.monotonic()
        assert a.elector.stop(10)
        wait_for(b.elector.is_leader, timeout=5, what="b takes over")
        took_over = time.monotonic()
    assert took_over - stopping < 2.0
    assert sampler.overlaps == []
    assert not a.elector.lost and not a.elector.running
    assert returned_at and returned_at[0] < took_over  # a's leading work ended before the lease was let go
    assert [e[0] for e in a.events] == ["new_leader", "started", "stopped"]
    # b's gauge is set on its own thread a moment after the lease it reports (as client-go's leaderOn follows the
    # acquire): wait for it, not for is_leader() beside it (a flake on a busy machine).
    wait_for(lambda: b.status() == 1.0, what="b's leader gauge")
    assert a.status() == 0.0 and b.status() == 1.0
    spec = kube.get(LEASE).body["spec"]
    assert spec["holderIdentity"] == b.identity
    assert spec["leaseTransitions"] == 1


def test_the_released_lease_is_empty_with_a_one_second_duration(apiserver, candidates, kube: Kube):
    a = new_candidate(apiserver, candidates, "a")
    a.elector.start()
    assert a.elector.wait_for_leadership(10)
    held = kube.get(LEASE).body["spec"]
    assert held["holderIdentity"] == a.identity and held["leaseTransitions"] == 0
    assert a.elector.stop(10)
    spec = kube.get(LEASE).body["spec"]
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"] > held["renewTime"]
    assert not a.elector.is_leader() and a.status() == 0.0
    assert [e[0] for e in a.events] == ["new_leader", "started", "stopped"]


@pytest.mark.parametrize("renew_time", ["2999-01-01T00:00:00.000000Z", "2001-01-01T00:00:00.000000Z"],
                         ids=["far-future", "far-past"])
def test_validity_is_judged_by_local_observation_whatever_the_lease_times_say(apiserver, candidates, kube: Kube,
                                                                             renew_time: str):
    ghost = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "mxjob-controller", "namespace": "default"},
             "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 10, "acquireTime": renew_time,
                      "renewTime": renew_time, "leaseTransitions": 4}}
    assert kube.post("/apis/coordination.k8s.io/v1/namespaces/default/leases", ghost).ok
    clock = FakeClock(1000.0)
    c = new_candidate(apiserver, candidates, "c", clock=clock, lease_duration=15, renew_deadline=10,
                      retry_period=1.0)
    c.elector.start()

    def advance_to_next_wakeup() -> None:
        """Step the fake clock to the elector's wake-up; return once it has polled and sleeps again (or leads)."""
        deadline = wait_for(clock.sleepers, what="the elector asleep")[0]
        clock.step(max(0.0, deadline - clock.now()))
        wait_for(lambda: clock.sleepers() or c.elector.is_leader(), what="the elector polled")

    wait_for(clock.sleepers, what="the first poll")  # it saw the ghost's record at t=1000
    put_at = seen_at = None
    while not c.elector.is_leader():
        assert seen_at is None or clock.now() < seen_at + 10, "kept waiting after the lease expired"
        assert kube.get(LEASE).body["spec"]["holderIdentity"] == "ghost"
        if put_at is None and clock.now() >= 1006.0:
            # The ghost renews (to another far-off time): the 10 s count restarts from when that change is seen.
            lease = kube.get(LEASE).body
            lease["spec"]["renewTime"] = renew_time.replace("-01-01T", "-06-06T")
            assert kube.put(LEASE, lease).ok
            put_at = clock.now()
            advance_to_next_wakeup()
            seen_at = clock.now()  # the poll that saw the change
            continue
        advance_to_next_wakeup()
    assert put_at is not None and seen_at is not None and put_at < 1010.0
    # It took over exactly when the change it saw last was 10 s old by its own clock (it wakes for that moment).
    assert clock.now() == pytest.approx(seen_at + 10)
    spec = kube.get(LEASE).body["spec"]
    assert spec["holderIdentity"] == c.identity
    assert spec["leaseTransitions"] == 5
    assert spec["leaseDurationSeconds"] == 15


@pytest.mark.parametrize("fault", [dict(code=410), dict(watch_seconds=0.001)], ids=["expired", "ends-at-once"])
def test_the_lease_watch_backs_off_instead_of_reconnecting_in_a_loop(apiserver, fault):
    """A watch refused with 410 again and again, or one the server ends at once, is reopened after the reflector's
    back-off (here a fixed 10 s), not in a tight loop; the first 410 restarts at once, as a reflector relists."""
    rule = apiserver.faults.add(FaultRule(verb="watch", resource="leases", **fault))
    client = leader_election_client(ClientConfig(host=apiserver.url), "watch-test")
    releases: list[float] = []
    watch = LeaseWatch(client, "default", "mxjob-controller", lambda: releases.append(time.monotonic()),
                       thread_name="test-lease", backoff=Backoff(BackoffPolicy(initial=10, cap=10, jitter=0)))
    try:
        watch.start()
        opened_at_once = 2 if fault.get("code") == 410 else 1
        wait_for(lambda: rule.matched >= opened_at_once, what="the watch opened")
        time.sleep(0.3)
        assert rule.matched == opened_at_once, f"{rule.matched} watches in 0.3 s"
        assert [t.name for t in threading.enumerate() if t.name == "test-lease-watch"]
    finally:
        started = time.monotonic()
        assert watch.stop(5)
        assert time.monotonic() - started < 1  # the back-off wait ends with the stop
        client.close()
    assert releases == []


def test_the_lease_watch_reports_a_release_and_a_deletion(apiserver, kube: Kube):
    client = leader_election_client(ClientConfig(host=apiserver.url), "watch-test")
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "mxjob-controller", "namespace": "default"},
             "spec": {"holderIdentity": "someone", "leaseDurationSeconds": 15}}
    assert kube.post("/apis/coordination.k8s.io/v1/namespaces/default/leases", lease).ok
    releases: list[float] = []
    watch = LeaseWatch(client, "default", "mxjob-controller", lambda: releases.append(time.monotonic()),
                       thread_name="test-lease").start()
    try:
        wait_for(lambda: watch.events >= 1, what="the Lease's ADDED event")
        assert releases == []
        held = kube.get(LEASE).body
        held["spec"]["holderIdentity"] = ""
        written = time.monotonic()
        assert kube.put(LEASE, held).ok
        wait_for(lambda: len(releases) == 1, what="the release seen")
        assert releases[0] - written < 0.5
        assert kube.delete(LEASE).ok
        wait_for(lambda: len(releases) == 2, what="the deletion seen")
    finally:
        assert watch.stop(5)
        client.close()


def test_config_is_checked_as_client_go_checks_it():
    assert re.fullmatch(re.escape(socket.gethostname()) + r"_[0-9a-f-]{36}", default_identity())
    LeaderElectionConfig("l", "ns")  # the defaults: 15 s, 10 s, 2 s
    for bad in [dict(lease_duration=1.5, renew_deadline=1, retry_period=0.2),   # the Lease holds whole seconds
                dict(lease_duration=10, renew_deadline=10, retry_period=1),
                dict(lease_duration=10, renew_deadline=2.4, retry_period=2),       # renew <= 1.2 * retry
                dict(lease_duration=10, renew_deadline=5, retry_period=0),
                dict(identity="")]:
        with pytest.raises(ValueError):
            LeaderElectionConfig("l", "ns", **bad)
