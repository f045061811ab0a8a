"""A read at a resourceVersion the server has not reached, as kube-apiserver's watch cache answers it: a list (or
get) waits up to ``blockTimeout`` (3 s) for the store to get there, then answers; past the wait, 504 "Too large
resource version". A watch with ``sendInitialEvents`` waits too (an ERROR event past it); a plain watch starts at
once and gets only what comes after its version. Over HTTPS, as the administrator."""

from __future__ import annotations

import threading
import time

import pytest

from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from mxjob_controller.local.apiserver.storage.store import BLOCK_TIMEOUT, StoreOptions
from tests.support import Kube, Reply, configmap, wait_for

CMS = "/api/v1/namespaces/default/configmaps"
MINE = "t=rv"   # the label of this module's ConfigMaps: the server's own (kube-root-ca.crt) are not listed
SHORT_WAIT = 0.5   # the wait of the servers that test its end: kube's 3 s would only lengthen the run


@pytest.fixture
def server_options() -> ServerOptions:
    return ServerOptions(tls=True)


def settled(apiserver: APIServer, kube: Kube) -> int:
    """The store's resourceVersion once the server's start-up writes (each bootstrap namespace's ServiceAccount and
    kube-root-ca.crt, the last in kube-node-lease) are in: nothing else writes until the test does."""
    wait_for(lambda: kube.get("/api/v1/namespaces/kube-node-lease/configmaps/kube-root-ca.crt").ok,
             what="the server's start-up writes")
    return apiserver.store.resource_version


def too_large(rv: int, current: int) -> dict:
    """kube's body: ``storage.NewTooLargeResourceVersionError(rv, current, 1)``, written by ``ErrorNegotiated``."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"Timeout: Too large resource version: {rv}, current: {current}", "reason": "Timeout",
            "details": {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                        "retryAfterSeconds": 1},
            "code": 504}


def mine(cm: str) -> dict:
    body = configmap(cm)
    body["metadata"]["labels"] = {"t": "rv"}
    return body


def test_the_wait_is_kubes_three_seconds_by_default():
    assert BLOCK_TIMEOUT == 3.0
    assert ServerOptions().block_timeout == StoreOptions().block_timeout == BLOCK_TIMEOUT


@pytest.mark.parametrize("match", ["NotOlderThan", None])
def test_a_list_ahead_of_the_store_is_answered_when_a_write_gets_there(apiserver: APIServer, kube: Kube,
                                                                       match: str | None):
    """The list waits (holding no lock: other requests and the write itself are answered meanwhile), then answers
    with the write in it, at the write's version."""
    current = settled(apiserver, kube)
    extra = {"resourceVersionMatch": match} if match else {}
    answers: list[Reply] = []
    waiter = Kube.of(apiserver)
    thread = threading.Thread(target=lambda: answers.append(waiter.get(CMS, resourceVersion=current + 1,
                                                                       labelSelector=MINE, **extra)),
                              name="test-list-ahead", daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        wait_for(lambda: apiserver.store.waiting() == 1, timeout=BLOCK_TIMEOUT - 0.5, what="the list to wait")
        assert not answers
        asked = time.monotonic()
        assert kube.get("/api/v1/namespaces").ok and time.monotonic() - asked < 1.0   # others are served meanwhile
        assert kube.post(CMS, mine("a")).status == 201
        thread.join(BLOCK_TIMEOUT)
    finally:
        waiter.close()
    assert not thread.is_alive() and time.monotonic() - started < BLOCK_TIMEOUT
    [reply] = answers
    assert reply.status == 200, reply.body
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["a"]
    assert reply.body["metadata"]["resourceVersion"] == str(current + 1)
    assert apiserver.store.waiting() == 0


@pytest.mark.parametrize("server_options", [ServerOptions(tls=True, block_timeout=SHORT_WAIT)])
@pytest.mark.parametrize("query", [{}, {"resourceVersionMatch": "NotOlderThan"}])
def test_a_list_or_get_far_ahead_is_kubes_504_after_the_wait(apiserver: APIServer, kube: Kube, query: dict):
    current = settled(apiserver, kube)
    assert kube.post(CMS, mine("a")).status == 201
    current += 1
    for path in (CMS, f"{CMS}/a"):
        if path != CMS and query:
            continue   # a get takes no resourceVersionMatch
        started = time.monotonic()
        reply = kube.get(path, resourceVersion=current + 1000, **query)
        waited = time.monotonic() - started
        assert reply.status == 504, reply.body
        assert reply.body == too_large(current + 1000, current)
        assert reply.headers["retry-after"] == "1"
        assert SHORT_WAIT <= waited < SHORT_WAIT + 2.0, waited
    assert kube.get(CMS, resourceVersion=current, **query).status == 200   # a version reached: at once
    assert apiserver.store.waiting() == 0


def test_a_wait_ends_when_the_server_stops(apiserver: APIServer, kube: Kube):
    """A stop does not wait for a read's 3 s: the waiting list answers (the 504) as the server stops."""
    current = settled(apiserver, kube)
    answers: list[Reply] = []
    waiter = Kube.of(apiserver)
    thread = threading.Thread(target=lambda: answers.append(waiter.get(CMS, resourceVersion=current + 1000)),
                              name="test-list-at-stop", daemon=True)
    thread.start()
    try:
        wait_for(lambda: apiserver.store.waiting() == 1, timeout=BLOCK_TIMEOUT - 0.5, what="the list to wait")
        started = time.monotonic()
        assert apiserver.stop(5.0)
        assert time.monotonic() - started < BLOCK_TIMEOUT - 1.0
        thread.join(5.0)
    finally:
        waiter.close()
    assert not thread.is_alive()
    [reply] = answers
    assert (reply.status, reply.body) == (504, too_large(current + 1000, current))


@pytest.mark.parametrize("server_options", [ServerOptions(tls=True, block_timeout=SHORT_WAIT)])
def test_an_exact_list_ahead_is_the_504_at_once(apiserver: APIServer, kube: Kube):
    """``Exact`` goes to etcd in kube, which does not wait for a future revision."""
    current = settled(apiserver, kube)
    started = time.monotonic()
    reply = kube.get(CMS, resourceVersion=current + 5, resourceVersionMatch="Exact")
    assert time.monotonic() - started < SHORT_WAIT
    assert (reply.status, reply.body) == (504, too_large(current + 5, current))


@pytest.mark.parametrize("server_options", [ServerOptions(tls=True, block_timeout=SHORT_WAIT)])
def test_a_watch_list_far_ahead_is_one_error_event_after_the_wait(apiserver: APIServer, kube: Kube):
    """The cacher's errWatcher: 200, then one ERROR event carrying the 504 Status."""
    current = settled(apiserver, kube)
    started = time.monotonic()
    events = list(kube.watch(CMS, timeout=10, sendInitialEvents="true", resourceVersionMatch="NotOlderThan",
                             resourceVersion=current + 1000, allowWatchBookmarks="true"))
    assert time.monotonic() - started >= SHORT_WAIT
    assert events == [{"type": "ERROR", "object": too_large(current + 1000, current)}]


def test_a_watch_from_a_version_not_reached_gets_only_what_comes_after_it(apiserver: APIServer, kube: Kube):
    """kube's cacher lets such a watch start at once ("clients can wait for events without unnecessary blocking")
    and sends only events after its version: the writes at current+1 and +2 are not sent, the one at +3 is."""
    current = settled(apiserver, kube)
    events: list[dict] = []
    done = threading.Event()

    def run() -> None:
        try:
            for ev in kube.watch(CMS, timeout=15, resourceVersion=current + 2, labelSelector=MINE):
                events.append(ev)
                if ev["type"] != "BOOKMARK":
                    return
        finally:
            done.set()

    before = len(apiserver.store.watchers())
    thread = threading.Thread(target=run, name="test-watch-ahead", daemon=True)
    thread.start()
    wait_for(lambda: len(apiserver.store.watchers()) > before, what="the watch to be registered")
    for cm in ("a", "b", "c"):
        assert kube.post(CMS, mine(cm)).status == 201
    assert done.wait(10)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "c")]
    assert events[0]["object"]["metadata"]["resourceVersion"] == str(current + 3)
