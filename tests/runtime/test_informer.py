"""Shared informers against the embedded API server over HTTP: the cache converges to the server's exact state
and handlers see every change, across dropped watches, compactions (410), injected 5xx/429s and shortened
streams; missed deletions arrive as tombstones; selectors and namespaces are honoured by the server; resyncs,
late handlers, failing handlers, transforms, indexes, the factory, and clean stops. (The store's own indexes:
test_cache_store.py; controller references: test_cache_keys.py; the back-off: test_backoff.py.)"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.request import MERGE_PATCH, Request
from mxjob_controller.runtime import cache_reflector
from mxjob_controller.runtime.backoff import BackoffPolicy
from mxjob_controller.runtime.cache_keys import (
    CONTROLLER_UID_INDEX,
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    controller_uid_index,
    label_index,
    object_key,
)
from mxjob_controller.runtime.client import CONFIGMAPS, NAMESPACES, PODS, Client, ClientConfig, Resource
from mxjob_controller.runtime.informer import SharedInformer, drop_managed_fields
from mxjob_controller.runtime.informer_factory import SharedInformerFactory
from tests.support import configmap, pod, wait_for

FAST = BackoffPolicy(initial=0.05, cap=0.2)
DEADLINE = 20.0


# --- helpers ----------------------------------------------------------------------------------------------

def rv(obj: dict) -> int:
    return int(obj["metadata"]["resourceVersion"])


class Recorder:
    """A handler that records every notification, and the view a controller would build from them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.notes: list[tuple[str, str, Any]] = []
        self.view: dict[str, int] = {}
        self.versions: dict[str, list[int]] = defaultdict(list)   # add/update RVs per key, in delivery order
        self.threads: set[str] = set()

    def on_add(self, obj: dict) -> None:
        self._record("add", object_key(obj), obj)

    def on_update(self, old: dict, new: dict) -> None:
        self._record("resync" if old is new else "update", object_key(new), (old, new))

    def on_delete(self, obj: Any) -> None:
        key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else object_key(obj)
        self._record("tombstone" if isinstance(obj, DeletedFinalStateUnknown) else "delete", key, obj)

    def _record(self, kind: str, key: str, payload: Any) -> None:
        with self.lock:
            self.threads.add(threading.current_thread().name)
            self.notes.append((kind, key, payload))
            if kind in ("add", "update"):
                new = payload if kind == "add" else payload[1]
                self.view[key] = rv(new)
                self.versions[key].append(rv(new))
            elif kind in ("delete", "tombstone"):
                self.view.pop(key, None)

    def register(self, informer: SharedInformer, **kwargs: Any) -> Any:
        return informer.add_handler(self.on_add, self.on_update, self.on_delete, **kwargs)

    def kinds(self, key: str) -> list[str]:
        with self.lock:
            return [k for k, nk, _ in self.notes if nk == key]

    def of_kind(self, kind: str) -> list[tuple[str, Any]]:
        with self.lock:
            return [(key, payload) for k, key, payload in self.notes if k == kind]


class RequestLog:
    """Every resource request the server receives, with its query and wall-clock arrival time (comparable with
    the audit log's), recorded by a Router interceptor."""

    def __init__(self, apiserver: Any) -> None:
        self.apiserver = apiserver
        self.lock = threading.Lock()
        self.requests: list[tuple[float, str, str, str, dict]] = []

    def __call__(self, ex: Any) -> None:
        with self.lock:
            self.requests.append((time.time(), ex.info.verb, ex.info.resource, ex.info.namespace,
                                  dict(ex.query)))

    def of(self, verb: str, resource: str) -> list[tuple[float, str, str, str, dict]]:
        with self.lock:
            return [r for r in self.requests if r[1] == verb and r[2] == resource]


@pytest.fixture
def client(apiserver) -> Iterator[Client]:
    # max_retries=0: the reflector itself must cope with 429s and 5xx (and honour Retry-After)
    c = Client(ClientConfig(host=apiserver.url, qps=-1), component="informer-tests", max_retries=0)
    yield c
    c.close()


@pytest.fixture
def requests_seen(apiserver) -> Iterator[RequestLog]:
    log = RequestLog(apiserver)
    apiserver.router.interceptors.insert(0, log)
    yield log
    apiserver.router.interceptors.remove(log)


@pytest.fixture
def informers() -> Iterator[list[SharedInformer]]:
    started: list[SharedInformer] = []
    yield started
    for informer in started:
        assert informer.stop(5.0), f"informer {informer.name} did not stop"


def start(informers: list, informer: SharedInformer) -> SharedInformer:
    informers.append(informer)
    informer.start()
    assert informer.wait_for_cache_sync(DEADLINE)
    return informer


def server_state(client: Client, resource: Resource, namespace: str | None = "default",
                 label_selector: str | None = None) -> dict[str, int]:
    return {object_key(o): rv(o) for o in client.list_all(resource, namespace, label_selector=label_selector)["items"]}


def store_state(informer: SharedInformer) -> dict[str, int]:
    return {key: rv(obj) for key, obj in informer.store.items()}


def converged(client: Client, informer: SharedInformer, recorder: Recorder, **scope: Any) -> bool:
    want = server_state(client, informer.resource, informer.namespace, informer.label_selector, **scope)
    with recorder.lock:
        view = dict(recorder.view)
    return store_state(informer) == want and view == want


def wait_converged(client: Client, informer: SharedInformer, recorder: Recorder) -> None:
    wait_for(lambda: converged(client, informer, recorder), timeout=DEADLINE,
             what=f"informer {informer.name} to match the server")


class Writer:
    """Writes to configmaps and remembers the resourceVersion every create and update produced, per key."""

    def __init__(self, client: Client, namespace: str = "default") -> None:
        self.client = client
        self.namespace = namespace
        self.versions: dict[str, list[int]] = defaultdict(list)
        self.deletes: dict[str, int] = defaultdict(int)
        self.live: set[str] = set()
        self.rng = random.Random(7)

    def step(self) -> None:
        name = f"k{self.rng.randrange(6)}"
        key = f"{self.namespace}/{name}"
        if name not in self.live:
            self.versions[key].append(rv(self.client.create(CONFIGMAPS, configmap(name, namespace=self.namespace))))
            self.live.add(name)
        elif self.rng.random() < 0.2:
            self.client.delete(CONFIGMAPS, name, self.namespace)
            self.deletes[key] += 1
            self.live.discard(name)
        else:
            patch = {"data": {"n": str(self.rng.random())}}
            self.versions[key].append(rv(self.client.patch(CONFIGMAPS, name, patch, self.namespace)))


def assert_saw_every_change(recorder: Recorder, writer: Writer) -> None:
    with recorder.lock:
        seen = {k: list(v) for k, v in recorder.versions.items() if k in writer.versions}
        deletes = defaultdict(int)
        for kind, key, _ in recorder.notes:
            if kind == "delete":
                deletes[key] += 1
    assert seen == dict(writer.versions)
    assert dict(deletes) == {k: n for k, n in writer.deletes.items() if n}


# --- the initial list ---------------------------------------------------------------------------------------

def test_initial_list_is_paginated_and_delivered_before_sync(apiserver, client, informers, requests_seen):
    for i in range(12):
        client.create(CONFIGMAPS, configmap(f"c{i:02d}"))
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", page_size=5, backoff_policy=FAST)
    recorder = Recorder()
    registration = recorder.register(informer)
    start(informers, informer)
    assert registration.wait_for_sync(DEADLINE)
    assert sorted(key for key, _ in recorder.of_kind("add")) == [f"default/c{i:02d}" for i in range(12)]
    lists = requests_seen.of("list", "configmaps")
    assert store_state(informer) == server_state(client, CONFIGMAPS)
    assert [r[4].get("limit") for r in lists] == ["5", "5", "5"]
    assert [bool(r[4].get("continue")) for r in lists] == [False, True, True]
    watches = wait_for(lambda: requests_seen.of("watch", "configmaps"), what="the watch")
    query = watches[0][4]
    assert query["resourceVersion"] == str(apiserver.store.resource_version)  # the list's: nothing written since
    assert query["allowWatchBookmarks"] == "true" and 300 <= int(query["timeoutSeconds"]) <= 600
    assert recorder.threads and all(t.startswith("informer-configmaps@default-h") for t in recorder.threads)


# --- dropped watches, compactions, injected faults ------------------------------------------------------------

def test_dropped_watches_lose_no_change(apiserver, client, informers):
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", backoff_policy=FAST)
    recorder = Recorder()
    recorder.register(informer)
    start(informers, informer)
    writer = Writer(client)
    for _round in range(6):
        before = informer.reflector.watches
        apiserver.store.close_watchers()          # every watch stream ends now
        for _ in range(8):                        # some writes land before the reflector is back, some after
            writer.step()
        wait_for(lambda b=before: informer.reflector.watches > b, timeout=DEADLINE, what="a new watch")
    wait_converged(client, informer, recorder)
    assert_saw_every_change(recorder, writer)
    assert informer.reflector.lists == 1, "resuming from the last resourceVersion needs no relist"
    assert recorder.of_kind("tombstone") == []


def _in_process(apiserver: Any, verb: str, name: str, body: dict | None = None) -> None:
    rt = apiserver.resource_for({"apiVersion": "v1", "kind": "ConfigMap"})
    req = Request(verb, rt, namespace="default", name=name, body=json.dumps(body).encode() if body else b"",
                  content_type=MERGE_PATCH if verb == "patch" else "")
    apiserver.rest.handle(req)


def test_compaction_relists_and_missed_deletion_arrives_as_tombstone(apiserver, client, informers):
    for name in ("a", "b", "c", "d"):
        client.create(CONFIGMAPS, configmap(name))
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", backoff_policy=FAST)
    recorder = Recorder()
    registration = recorder.register(informer)
    start(informers, informer)
    assert registration.wait_for_sync(DEADLINE)
    last_a = informer.store.get("default/a")
    assert last_a is not None
    notes_before = len(recorder.notes)

    # A gap the watch cannot bridge: with the store locked (writers and watch registrations wait), end the
    # watches, change things, and forget the history of those changes.
    with apiserver.store.lock:
        apiserver.store.close_watchers()
        _in_process(apiserver, "delete", "a")
        _in_process(apiserver, "patch", "b", {"data": {"x": "1"}})
        apiserver.create(configmap("e"))
        apiserver.store.compact()

    wait_converged(client, informer, recorder)
    assert informer.reflector.lists == 2, "the 410 must have caused exactly one relist"
    after = [(kind, key) for kind, key, _ in recorder.notes[notes_before:]]
    assert sorted(after) == [("add", "default/e"), ("tombstone", "default/a"), ("update", "default/b")]
    (_, tombstone), = recorder.of_kind("tombstone")
    assert tombstone == DeletedFinalStateUnknown("default/a", last_a)
    (_, (old_b, new_b)), = recorder.of_kind("update")
    assert rv(new_b) > rv(old_b)


def test_injected_errors_and_short_streams_converge_and_honour_retry_after(apiserver, client, informers,
                                                                             requests_seen):
    # The first two lists fail: the informer must back off and retry until it has a list.
    list_errors = apiserver.faults.add(FaultRule(verb="list", resource="configmaps", code=500, count=2))
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", backoff_policy=FAST)
    recorder = Recorder()
    recorder.register(informer)
    start(informers, informer)
    assert list_errors.fired == 2
    writer = Writer(client)

    steps = [
        FaultRule(verb="watch", resource="configmaps", code=500, count=1),
        FaultRule(verb="watch", resource="configmaps", code=503, retry_after=1, count=1),
        FaultRule(verb="watch", resource="configmaps", code=429, retry_after=1, count=1),
        FaultRule(verb="watch", resource="configmaps", watch_events=2, count=3),
        FaultRule(verb="watch", resource="configmaps", latency=0.3, count=1),
    ]
    for rule in steps:
        before = informer.reflector.watches
        apiserver.faults.add(rule)
        apiserver.store.close_watchers()          # the next watch request meets the rule
        for _ in range(6):
            writer.step()
        wait_for(lambda r=rule: r.fired == r.count, timeout=DEADLINE, what=f"fault {rule} to fire")
        wait_for(lambda b=before: informer.reflector.watches > b, timeout=DEADLINE, what="the watch to resume")
        wait_converged(client, informer, recorder)
    assert_saw_every_change(recorder, writer)
    assert informer.reflector.lists == 1, "5xx, 429 and short streams resume the watch without a relist"

    # Retry-After: after each throttled watch, the next one came no sooner than the server asked (1 s), although
    # the backoff alone (FAST: at most 0.4 s) would have allowed it sooner.
    arrivals = [t for t, *_ in requests_seen.of("watch", "configmaps")]
    throttled = [r.time for r in apiserver.audit.records(verb="watch", resource="configmaps")
                 if r.code in (429, 503)]
    assert len(throttled) == 2
    for t in throttled:
        following = min(a for a in arrivals if a > t + 0.01)
        assert following - t >= 0.9, f"the watch after a throttled one came {following - t:.3f}s later"

    # A 410 ERROR event on the watch makes the informer relist; nothing is lost or invented.
    apiserver.faults.add(FaultRule(verb="watch", resource="configmaps", code=410, count=1))
    apiserver.store.close_watchers()
    wait_for(lambda: informer.reflector.lists == 2, timeout=DEADLINE, what="a relist after the 410")
    for _ in range(6):
        writer.step()
    wait_converged(client, informer, recorder)
    assert_saw_every_change(recorder, writer)
    assert recorder.of_kind("tombstone") == []


def test_repeated_410s_are_backed_off_not_looped(apiserver, client, informers, requests_seen):
    client.create(CONFIGMAPS, configmap("a"))
    rule = apiserver.faults.add(FaultRule(verb="watch", resource="configmaps", code=410, count=3))
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", backoff_policy=FAST)
    recorder = Recorder()
    recorder.register(informer)
    start(informers, informer)
    wait_for(lambda: rule.fired == 3 and informer.reflector.lists == 4, timeout=DEADLINE, what="four lists")
    lists = [t for t, *_ in requests_seen.of("list", "configmaps")]
    assert lists[2] - lists[1] >= FAST.initial and lists[3] - lists[2] >= FAST.initial * FAST.factor
    client.create(CONFIGMAPS, configmap("b"))
    wait_converged(client, informer, recorder)
    assert recorder.kinds("default/a") == ["add"]


def test_a_served_quiet_watch_resets_the_backoff(apiserver, client, informers, requests_seen, monkeypatch):
    """A quiet informer (no events) relists after each compaction; a run of failed lists earlier must not make one
    later failure cost the escalated delay: the watch that stayed open proved list and watch work."""
    monkeypatch.setattr(cache_reflector, "SHORT_WATCH", 0.0)   # any watch that opened was served: no wait needed
    monkeypatch.setattr(apiserver._http, "bookmark_interval", 60.0)   # no bookmark either: truly no event
    policy = BackoffPolicy(initial=0.02, cap=10.0)   # six failures in a row: the seventh delay is 1.28-2.56 s
    startup = apiserver.faults.add(FaultRule(verb="list", resource="configmaps", code=500, count=6))
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", backoff_policy=policy)
    start(informers, informer)
    assert startup.fired == 6
    wait_for(lambda: informer.reflector.watches == 1, timeout=DEADLINE, what="the first watch")
    late = apiserver.faults.add(FaultRule(verb="list", resource="configmaps", code=500, count=1))
    client.create(PODS, pod("elsewhere"))   # history moves on, but not this informer's: still no event for it
    apiserver.store.compact()
    apiserver.store.close_watchers()   # resumed from before the compaction: 410, relist, and that list fails
    wait_for(lambda: late.fired == 1 and informer.reflector.lists == 2, timeout=DEADLINE, what="the relist")
    failed, retried = [t for t, *_ in requests_seen.of("list", "configmaps")][-2:]
    assert retried - failed < 0.6, f"one failed list after a served watch cost {retried - failed:.2f}s"


# --- scope: selectors and namespaces --------------------------------------------------------------------

def test_label_filtered_informer_never_receives_other_objects(apiserver, client, informers, requests_seen):
    client.create(CONFIGMAPS, configmap("mine-0", labels={"app": "mine"}))
    client.create(CONFIGMAPS, configmap("other-0", labels={"app": "other"}))
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", label_selector="app=mine",
                              backoff_policy=FAST)
    recorder = Recorder()
    recorder.register(informer)
    start(informers, informer)
    client.create(CONFIGMAPS, configmap("mine-1", labels={"app": "mine"}))
    client.create(CONFIGMAPS, configmap("plain"))
    client.patch(CONFIGMAPS, "other-0", {"data": {"x": "1"}}, "default")
    client.patch(CONFIGMAPS, "other-0", {"metadata": {"labels": {"app": "mine"}}}, "default")   # starts matching
    client.patch(CONFIGMAPS, "mine-0", {"metadata": {"labels": {"app": "gone"}}}, "default")    # stops matching
    client.delete(CONFIGMAPS, "plain", "default")

    wait_for(lambda: converged(client, informer, recorder), timeout=DEADLINE, what="the filtered cache")
    assert store_state(informer) == server_state(client, CONFIGMAPS, label_selector="app=mine")
    assert sorted(informer.store.keys()) == ["default/mine-1", "default/other-0"]
    for kind, key, payload in recorder.notes:
        if kind == "add":
            assert payload["metadata"]["labels"]["app"] == "mine", key
        elif kind == "update":
            assert payload[1]["metadata"]["labels"]["app"] == "mine", key
    assert "default/plain" not in {key for _, key, _ in recorder.notes}
    assert recorder.kinds("default/mine-0") == ["add", "delete"]
    assert recorder.kinds("default/other-0") == ["add"]
    for _, verb, _, _, query in requests_seen.of("list", "configmaps") + requests_seen.of("watch", "configmaps"):
        assert query.get("labelSelector") == "app=mine", f"{verb} sent without the selector"


def test_namespace_scoped_informer(apiserver, client, informers, requests_seen):
    client.create(NAMESPACES, {"metadata": {"name": "team-a"}})
    client.create(CONFIGMAPS, configmap("x", namespace="team-a"))
    client.create(CONFIGMAPS, configmap("y", namespace="default"))
    informer = SharedInformer(client, CONFIGMAPS, namespace="team-a", backoff_policy=FAST)
    recorder = Recorder()
    recorder.register(informer)
    start(informers, informer)
    client.create(CONFIGMAPS, configmap("z", namespace="default"))
    client.create(CONFIGMAPS, configmap("w", namespace="team-a"))
    wait_for(lambda: store_state(informer) == server_state(client, CONFIGMAPS, "team-a"), timeout=DEADLINE)
    assert sorted(informer.store.keys()) == ["team-a/w", "team-a/x"]
    # the handler hears of w after the store has it (its listener delivers on a thread of its own): wait for it
    wait_for(lambda: {key for _, key, _ in recorder.notes} == {"team-a/w", "team-a/x"}, timeout=DEADLINE,
             what=f"the handler told of team-a/w and team-a/x (told: {recorder.notes})")
    assert {ns for _, verb, _, ns, _ in requests_seen.requests if verb in ("list", "watch")} == {"team-a"}


# --- delivery ---------------------------------------------------------------------------------------------

def test_resync_redelivers_with_unchanged_resource_versions(client, informers):
    for name in ("a", "b"):
        client.create(CONFIGMAPS, configmap(name))
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", backoff_policy=FAST)
    resyncing, quiet = Recorder(), Recorder()
    resyncing.register(informer, resync_period=0.2)
    quiet.register(informer)
    start(informers, informer)
    stored = store_state(informer)

    def resyncs_per_key() -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for key, (old, new) in resyncing.of_kind("resync"):
            assert old is new and rv(new) == stored[key]
            counts[key] += 1
        return counts

    wait_for(lambda: all(n >= 2 for n in resyncs_per_key().values()) and len(resyncs_per_key()) == 2,
             timeout=DEADLINE, what="two resyncs of each object")
    assert store_state(informer) == stored == server_state(client, CONFIGMAPS)
    assert quiet.of_kind("resync") == [] and quiet.of_kind("update") == []


def test_a_failing_handler_does_not_stop_delivery(client, informers):
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", backoff_policy=FAST)
    survived: list[str] = []

    def fragile(obj: dict) -> None:
        if obj["metadata"]["name"] == "boom":
            raise RuntimeError("handler bug")
        survived.append(obj["metadata"]["name"])

    informer.add_handler(on_add=fragile)
    other = Recorder()
    other.register(informer)
    start(informers, informer)
    client.create(CONFIGMAPS, configmap("boom"))
    client.create(CONFIGMAPS, configmap("fine"))
    wait_for(lambda: survived == ["fine"], timeout=DEADLINE, what="delivery after the failure")
    wait_for(lambda: {k for k, _ in other.of_kind("add")} == {"default/boom", "default/fine"}, timeout=DEADLINE)


def test_inline_handlers_see_every_change_on_the_informers_own_threads(apiserver, client, informers):
    """The controller's handlers run inline (no thread of their own): the same guarantees (every change in order,
    across dropped watches; resyncs; a failing handler does not stop delivery), on the reflector's and the resync
    thread, and the informer starts no handler thread."""
    informer = SharedInformer(client, CONFIGMAPS, namespace="default", backoff_policy=FAST)
    recorder, resyncing = Recorder(), Recorder()
    survived: list[str] = []

    def fragile(obj: dict) -> None:
        if obj["metadata"]["name"].startswith("boom"):
            raise RuntimeError("handler bug")
        survived.append(obj["metadata"]["name"])

    informer.add_handler(on_add=fragile, inline=True)
    registration = recorder.register(informer, inline=True)
    resyncing.register(informer, resync_period=0.2, inline=True)
    start(informers, informer)
    assert registration.has_synced()
    client.create(CONFIGMAPS, configmap("boom"))
    writer = Writer(client)
    for _round in range(4):
        before = informer.reflector.watches
        apiserver.store.close_watchers()
        for _ in range(8):
            writer.step()
        wait_for(lambda b=before: informer.reflector.watches > b, timeout=DEADLINE, what="a new watch")
    client.create(CONFIGMAPS, configmap("fine"))
    wait_converged(client, informer, recorder)
    assert_saw_every_change(recorder, writer)
    wait_for(lambda: "fine" in survived, timeout=DEADLINE, what="delivery after the failure")
    wait_for(lambda: resyncing.of_kind("resync"), timeout=DEADLINE, what="a resync")
    assert recorder.threads == {f"informer-{informer.name}"}
    assert resyncing.threads <= {f"informer-{informer.name}", f"informer-{informer.name}-resync"}
    assert not [t.name for t in threading.enumerate() if t.name.startswith(f"informer-{informer.name}-h")]


def test_a_late_handler_first_gets_the_cache(client, informers):
    for name in ("a", "b", "c"):
        client.create(CONFIGMAPS, configmap(name))
    informer = start(informers, SharedInformer(client, CONFIGMAPS, namespace="default", backoff_policy=FAST))
    late = Recorder()
    registration = late.register(informer)
    assert registration.wait_for_sync(DEADLINE)
    assert sorted(k for k, _ in late.of_kind("add")) == ["default/a", "default/b", "default/c"]
    client.create(CONFIGMAPS, configmap("d"))
    wait_converged(client, informer, late)
    registration.remove()
    client.create(CONFIGMAPS, configmap("e"))
    wait_for(lambda: "default/e" in informer.store, timeout=DEADLINE)
    assert "default/e" not in {k for _, k, _ in late.notes}


def test_transform_and_indexes(client, informers):
    owner = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w1", "uid": "uid-1", "controller": True}
    for i in range(3):
        body = pod(f"p{i}", labels={"job-name": "j1" if i < 2 else "j2"})
        if i < 2:
            body["metadata"]["ownerReferences"] = [owner]
        client.create(PODS, body)

    def metadata_and_status_only(obj: dict) -> dict:
        obj.pop("spec", None)
        return drop_managed_fields(obj)

    informer = SharedInformer(client, PODS, namespace="default", transform=metadata_and_status_only,
                              indexers={CONTROLLER_UID_INDEX: controller_uid_index, "job": label_index("job-name")},
                              backoff_policy=FAST)
    recorder = Recorder()
    recorder.register(informer)
    start(informers, informer)
    assert all("spec" not in obj for obj in informer.store.list())
    assert sorted(o["metadata"]["name"] for o in informer.store.by_index(CONTROLLER_UID_INDEX, "uid-1")) == [
        "p0", "p1"]
    assert [o["metadata"]["name"] for o in informer.store.by_index("job", "j2")] == ["p2"]
    assert sorted(informer.store.index_keys(NAMESPACE_INDEX, "default")) == ["default/p0", "default/p1",
                                                                             "default/p2"]

    client.patch(PODS, "p1", {"metadata": {"labels": {"job-name": "j2"}}}, "default")
    wait_for(lambda: sorted(informer.store.index_keys("job", "j2")) == ["default/p1", "default/p2"],
             timeout=DEADLINE, what="the label index to follow the change")
    wait_for(lambda: recorder.of_kind("update"), timeout=DEADLINE)
    _, (old, new) = recorder.of_kind("update")[0]
    assert "spec" not in old and "spec" not in new


# --- the factory and stopping ---------------------------------------------------------------------------

def test_factory_shares_one_informer_per_scope_and_stops_cleanly(apiserver, client, requests_seen):
    client.create(PODS, pod("p1", labels={"app": "a"}))
    others = set(threading.enumerate())   # another test's informers in this process may still be stopping
    factory = SharedInformerFactory(client, namespace="default", backoff_policy=FAST)
    pods = factory.informer(PODS, label_selector="app=a")
    assert factory.informer(PODS, label_selector=" app = a ") is pods
    assert factory.informer(PODS, label_selector="app=b") is not pods
    every_namespace = factory.informer(PODS, namespace=None, label_selector="app=a")
    assert every_namespace is not pods and every_namespace.namespace is None and pods.namespace == "default"
    namespaces = factory.informer(NAMESPACES)
    assert namespaces.namespace is None
    with pytest.raises(ValueError, match="transform"):
        factory.informer(PODS, label_selector="app=a", transform=drop_managed_fields)

    factory.start()
    assert factory.wait_for_cache_sync(DEADLINE)
    assert list(pods.store.keys()) == ["default/p1"] and "default" in namespaces.store
    late = factory.informer(CONFIGMAPS)
    assert late.started and late.wait_for_cache_sync(DEADLINE)
    assert len(requests_seen.of("list", "pods")) == 3   # one per scope, however often it was asked for

    wait_for(lambda: len(requests_seen.of("watch", "pods")) == 3, timeout=DEADLINE, what="three pod watches")
    started = time.monotonic()
    assert factory.stop(5.0)
    assert time.monotonic() - started < 2.0
    assert [t.name for t in threading.enumerate() if t.name.startswith("informer-") and t not in others] == []


# --- pieces -----------------------------------------------------------------------------------------------
