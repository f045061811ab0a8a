"""Expectations (runtime/expectations): the gate that keeps a lagging cache from causing duplicate pods. Unit rules
with an injected clock, then end to end: creations and deletions observed through watches of the embedded API
server, tombstones for deletions a watch missed, and 1,000 job create/delete cycles leaving no record behind."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass

import pytest

from mxjob_controller.runtime.clock import FakeClock
from mxjob_controller.runtime.expectations import (
    EXPECTATIONS_TTL,
    ControllerExpectations,
    ExpectationKey,
    last_known_state,
    pods_key,
    services_key,
)
from tests.support import Kube, configmap, pod, wait_for

JOB = "default/mnist"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def exp(clock) -> ControllerExpectations:
    return ControllerExpectations(clock=clock)


# -- rules -------------------------------------------------------------------------------------------------------

def test_gate_stays_closed_until_every_creation_is_observed(exp):
    key = pods_key(JOB, "Worker")
    assert key == ExpectationKey(JOB, "pods", "worker") and str(key) == "default/mnist/worker/pods"
    assert exp.satisfied(key) and exp.job_satisfied(JOB)  # no record: nothing to wait for
    exp.raise_expectations(key, adds=2)
    assert not exp.satisfied(key) and not exp.job_satisfied(JOB)
    exp.creation_observed(key)
    assert exp.pending(key) == (1, 0)
    assert not exp.job_satisfied(JOB)
    exp.creation_observed(key)
    assert exp.satisfied(key) and exp.job_satisfied(JOB)


def test_gate_opens_when_the_record_expires_after_5_minutes(exp, clock):
    key = pods_key(JOB, "worker")
    exp.raise_expectations(key, adds=1)
    clock.step(EXPECTATIONS_TTL - 0.5)
    assert not exp.job_satisfied(JOB)
    clock.step(0.5)
    assert exp.satisfied(key) and exp.job_satisfied(JOB)
    assert exp.pending(key) is None
    assert exp.record_count() == 0  # and the job went with its record


def test_time_left_is_until_the_last_unfulfilled_record_expires(exp, clock):
    assert exp.time_left(JOB) == 0.0
    exp.raise_expectations(pods_key(JOB, "Worker"), adds=1)
    clock.step(100)
    exp.raise_expectations(services_key(JOB, "Worker"), adds=1)
    clock.step(50)
    assert exp.time_left(JOB) == pytest.approx(EXPECTATIONS_TTL - 50)
    exp.creation_observed(services_key(JOB, "Worker"))
    assert exp.time_left(JOB) == pytest.approx(EXPECTATIONS_TTL - 150)
    exp.creation_observed(pods_key(JOB, "Worker"))
    assert exp.time_left(JOB) == 0.0


def test_gate_is_the_and_of_every_key_of_the_job(exp):
    keys = [pods_key(JOB, "worker"), services_key(JOB, "worker"), pods_key(JOB, "server"),
            services_key(JOB, "server"), pods_key(JOB, "scheduler")]
    for key in keys:
        exp.raise_expectations(key, adds=1)
    for key in keys[:-1]:
        exp.creation_observed(key)
        # training-operator OR-ed these: any one satisfied key opened the gate
        assert not exp.job_satisfied(JOB), f"open with {keys[-1]} still pending"
    exp.raise_expectations(pods_key("default/other", "worker"), adds=5)  # another job's records do not count
    exp.creation_observed(keys[-1])
    assert exp.job_satisfied(JOB)
    assert not exp.job_satisfied("default/other")


def test_deletions_and_raise_lower(exp):
    key = pods_key(JOB, "worker")
    exp.raise_expectations(key, dels=2)
    exp.raise_expectations(key, adds=1)
    assert exp.pending(key) == (1, 2)
    exp.deletion_observed(key)
    exp.lower_expectations(key, adds=1)  # e.g. the create call failed: it will never be observed
    assert exp.pending(key) == (0, 1) and not exp.satisfied(key)
    exp.deletion_observed(key)
    assert exp.satisfied(key)


def test_observations_beyond_expectations_are_no_credit(exp):
    key = pods_key(JOB, "worker")
    exp.raise_expectations(key, adds=1)
    exp.creation_observed(key)
    exp.creation_observed(key)  # a stray event: must not pre-pay the next creation
    exp.raise_expectations(key, adds=1)
    assert not exp.satisfied(key)
    exp.creation_observed(pods_key("default/unknown", "worker"))  # no record: nothing happens
    assert exp.pending(pods_key("default/unknown", "worker")) is None


def test_raise_on_a_stale_record_starts_a_fresh_one(exp, clock):
    key = pods_key(JOB, "worker")
    exp.raise_expectations(key, adds=3)
    clock.step(EXPECTATIONS_TTL)
    assert exp.satisfied(key)
    exp.raise_expectations(key, adds=1)  # client-go ignored this, leaving the new creation unguarded
    assert exp.pending(key) == (1, 0)
    clock.step(EXPECTATIONS_TTL - 1)
    assert not exp.satisfied(key)
    clock.step(1)
    assert exp.satisfied(key)


def test_raise_keeps_a_live_records_expiry(exp, clock):
    key = pods_key(JOB, "worker")
    exp.raise_expectations(key, adds=1)
    clock.step(200)
    exp.raise_expectations(key, adds=1)
    clock.step(100)
    assert exp.satisfied(key)  # expired 300 s after it was set, as in client-go


def test_delete_expectations_removes_every_record_of_the_job_only(exp):
    for rtype in ("worker", "server", "scheduler"):
        exp.raise_expectations(pods_key(JOB, rtype), adds=1)
        exp.raise_expectations(services_key(JOB, rtype), adds=1)
    exp.raise_expectations(pods_key("default/other", "worker"), adds=1)
    assert exp.record_count() == 7
    exp.delete_expectations(JOB)
    assert exp.record_count() == 1
    assert exp.job_satisfied(JOB)
    assert not exp.job_satisfied("default/other")


def test_jobs_never_deleted_still_leave_after_the_expiry(exp, clock):
    for i in range(100):
        exp.raise_expectations(pods_key(f"default/job-{i}", "worker"), adds=1)
    clock.step(EXPECTATIONS_TTL)
    assert exp.record_count() == 0


def test_thread_safe_under_concurrent_raise_and_observe(exp):
    keys = [pods_key(JOB, f"type-{i}") for i in range(4)]
    for key in keys:
        exp.raise_expectations(key)

    def churn(key: ExpectationKey) -> None:
        for _ in range(2000):
            exp.raise_expectations(key, adds=1)
            exp.creation_observed(key)

    threads = [threading.Thread(target=churn, args=(keys[i % 4],), name=f"test-churn-{i}") for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert [exp.pending(k) for k in keys] == [(0, 0)] * 4
    assert exp.job_satisfied(JOB)


def test_last_known_state_reads_objects_and_tombstones():
    obj = {"metadata": {"name": "p"}}
    assert last_known_state(obj) is obj
    assert last_known_state(Tombstone("default/p", obj)) is obj
    with pytest.raises(TypeError):
        last_known_state("default/p")


# -- end to end against the embedded API server ------------------------------------------------------------------

JOB_LABEL = "training.kubeflow.org/job-name"
RTYPE_LABEL = "training.kubeflow.org/replica-type"
PODS = "/api/v1/namespaces/default/pods"
SERVICES = "/api/v1/namespaces/default/services"
JOBS = "/api/v1/namespaces/default/configmaps"  # stand-ins for MXJobs: only their lifecycle matters here


@dataclass
class Tombstone:
    """What an informer delivers for a deletion its watch missed: the key and the last state it knew."""

    key: str
    obj: dict


def key_of(resource: str, obj: dict) -> ExpectationKey:
    labels = obj["metadata"]["labels"]
    return ExpectationKey(f"default/{labels[JOB_LABEL]}", resource, labels[RTYPE_LABEL].lower())


def owned_pod(job: str, rtype: str, index: int) -> dict:
    return pod(f"{job}-{rtype}-{index}", labels={JOB_LABEL: job, RTYPE_LABEL: rtype})


def owned_service(job: str, rtype: str, index: int) -> dict:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"{job}-{rtype}-{index}", "labels": {JOB_LABEL: job, RTYPE_LABEL: rtype}},
            "spec": {"clusterIP": "None", "selector": {JOB_LABEL: job}, "ports": [{"name": "mx", "port": 9091}]}}


class Observer:
    """A watch in a thread calling a controller's handlers: added -> creation observed, deleted -> deletion
    observed, a job deleted -> its expectations deleted. Counts the events it handled by type, so tests wait on
    facts; an error that ends the watch early is kept and fails the test at :meth:`stop`."""

    def __init__(self, url: str, path: str, exp: ControllerExpectations, resource: str, since: str | None) -> None:
        self.handled: Counter[str] = Counter()
        self.last_known: dict[str, dict] = {}
        self.error: BaseException | None = None
        self._exp = exp
        self._resource = resource
        self._stop = threading.Event()
        self._kube = Kube(url, user_agent=f"test-observer-{resource}")
        self._thread = threading.Thread(target=self._run, args=(path, since), name=f"test-observer-{resource}")
        self._thread.start()

    def _run(self, path: str, since: str | None) -> None:
        resume = {} if since is None else {"resourceVersion": since}  # none: start with ADDED for what exists
        try:
            for ev in self._kube.watch(path, timeout=60, allowWatchBookmarks="true", timeoutSeconds=120, **resume):
                if self._stop.is_set():
                    return
                self._handle(ev)
        except Exception as e:  # kept for stop() to report
            self.error = e

    def _handle(self, ev: dict) -> None:
        if ev["type"] == "BOOKMARK":
            return
        obj = ev["object"]
        name = obj["metadata"]["name"]
        if ev["type"] == "DELETED":
            self.last_known.pop(name, None)
            self.on_delete(obj)
        else:
            self.last_known[name] = obj  # what an informer's store holds
            if ev["type"] == "ADDED":
                self.on_add(obj)
        self.handled[ev["type"]] += 1

    def on_add(self, obj: dict) -> None:
        if self._resource != "jobs":
            self._exp.creation_observed(key_of(self._resource, obj))

    def on_delete(self, obj_or_tombstone: object) -> None:
        obj = last_known_state(obj_or_tombstone)
        if self._resource == "jobs":
            self._exp.delete_expectations(f"default/{obj['metadata']['name']}")
        else:
            self._exp.deletion_observed(key_of(self._resource, obj))

    def wait_handled(self, event_type: str, n: int, timeout: float = 10) -> None:
        wait_for(lambda: self.handled[event_type] >= n or self.error, timeout=timeout,
                 what=f"{n} {event_type} {self._resource} events handled")
        assert self.error is None, f"the {self._resource} watch failed: {self.error!r}"

    def stop(self) -> None:
        self._stop.set()  # seen at the next event at the latest: bookmarks come every 0.2 s
        self._thread.join(10)
        self._kube.close()
        assert not self._thread.is_alive(), f"the {self._resource} watch did not stop"
        assert self.error is None, f"the {self._resource} watch failed: {self.error!r}"


def current_rv(kube: Kube) -> str:
    return kube.get("/api/v1/namespaces/default/pods").body["metadata"]["resourceVersion"]


def test_gate_follows_creations_seen_by_watches_across_pods_and_services(apiserver, kube, clock):
    exp = ControllerExpectations(clock=clock)
    since = current_rv(kube)
    pods = Observer(apiserver.url, PODS, exp, "pods", since)
    services = Observer(apiserver.url, SERVICES, exp, "services", since)
    try:
        plan = [(PODS, owned_pod, "worker", 2), (SERVICES, owned_service, "worker", 2),
                (PODS, owned_pod, "server", 1), (SERVICES, owned_service, "server", 1)]
        for path, _, rtype, n in plan:
            key = pods_key(JOB, rtype) if path == PODS else services_key(JOB, rtype)
            exp.raise_expectations(key, adds=n)
        created = {PODS: 0, SERVICES: 0}
        for path, make, rtype, n in plan:
            for i in range(n):
                assert not exp.job_satisfied(JOB)
                reply = kube.post(path, make("mnist", rtype, i))
                assert reply.status == 201, reply.body
                created[path] += 1
                (pods if path == PODS else services).wait_handled("ADDED", created[path])
        assert exp.job_satisfied(JOB)

        # A creation the cache never reports: the gate reopens only when the record expires.
        exp.raise_expectations(pods_key(JOB, "worker"), adds=1)
        assert not exp.job_satisfied(JOB)
        clock.step(EXPECTATIONS_TTL)
        assert exp.job_satisfied(JOB)
    finally:
        pods.stop()
        services.stop()


def test_a_deletion_missed_by_the_watch_counts_when_it_arrives_as_a_tombstone(apiserver, kube, clock):
    exp = ControllerExpectations(clock=clock)
    for i in range(2):
        assert kube.post(PODS, owned_pod("mnist", "worker", i)).status == 201
    key = pods_key(JOB, "worker")
    observer = Observer(apiserver.url, PODS, exp, "pods", None)
    observer.wait_handled("ADDED", 2)
    exp.raise_expectations(key, dels=2)
    assert kube.delete(f"{PODS}/mnist-worker-0", gracePeriodSeconds=0).status == 200
    observer.wait_handled("DELETED", 1)
    assert exp.pending(key) == (0, 1)
    observer.stop()  # the watch drops...
    assert kube.delete(f"{PODS}/mnist-worker-1", gracePeriodSeconds=0).status == 200  # ...and misses this deletion
    assert not exp.job_satisfied(JOB)

    # The relist an informer does on reconnect: what it knew and the server no longer has become tombstones.
    listed = {p["metadata"]["name"] for p in kube.get(PODS).body["items"]}
    vanished = [Tombstone(f"default/{name}", obj) for name, obj in observer.last_known.items() if name not in listed]
    assert [t.key for t in vanished] == ["default/mnist-worker-1"]
    observer.on_delete(vanished[0])
    assert exp.job_satisfied(JOB)


def test_no_record_remains_after_1000_job_create_delete_cycles(apiserver, kube):
    exp = ControllerExpectations()
    since = current_rv(kube)
    jobs = Observer(apiserver.url, JOBS, exp, "jobs", since)
    pods = Observer(apiserver.url, PODS, exp, "pods", since)
    try:
        for i in range(1000):
            name = f"job-{i}"
            assert kube.post(JOBS, configmap(name)).status == 201
            # What the controller does on reconcile: expect, then create (its ADDED event arrives later).
            exp.raise_expectations(pods_key(f"default/{name}", "worker"), adds=1)
            exp.raise_expectations(services_key(f"default/{name}", "worker"), adds=1)  # a service never created
            assert kube.post(PODS, owned_pod(name, "worker", 0)).status == 201
            assert kube.delete(f"{JOBS}/{name}").status == 200
            assert kube.delete(f"{PODS}/{name}-worker-0", gracePeriodSeconds=0).status == 200  # as GC would
        jobs.wait_handled("DELETED", 1000, timeout=60)
        pods.wait_handled("DELETED", 1000, timeout=60)
        assert jobs.handled["ADDED"] == pods.handled["ADDED"] == 1000
        assert exp.record_count() == 0
        assert exp.job_satisfied("default/job-999")
    finally:
        jobs.stop()
        pods.stop()
