"""Watch semantics: resume from a resourceVersion, 410 for forgotten history, bookmarks, filtered watches,
and that a dropped watch loses nothing on resume."""

import threading

import pytest

from mxjob_controller.local.apiserver.server import ServerOptions
from tests.support import configmap, wait_for

CMS = "/api/v1/namespaces/default/configmaps"


class Collector:
    """Runs one watch in a background thread and records its events."""

    def __init__(self, kube, path, **query):
        self.events: list[dict] = []
        self.ended = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(kube, path, query), name="test-watch", daemon=True)
        self._thread.start()

    def _run(self, kube, path, query):
        try:
            for ev in kube.watch(path, timeout=30, **query):
                self.events.append(ev)
        except Exception as e:  # the stream was cut: that is an end too
            self.events.append({"type": "CLIENT-ERROR", "error": repr(e)})
        finally:
            self.ended.set()

    def typed(self, *types):
        return [(e["type"], e["object"]["metadata"].get("name")) for e in self.events if e["type"] in types]

    def wait(self, n, what="events"):
        return wait_for(lambda: len([e for e in self.events if e["type"] != "BOOKMARK"]) >= n, what=what)


def rv_of(obj):
    return obj["metadata"]["resourceVersion"]


def test_resume_sees_exactly_the_missed_events_in_order(kube):
    kube.post(CMS, configmap("a"))
    start = kube.get(CMS).body["metadata"]["resourceVersion"]
    kube.post(CMS, configmap("b"))
    kube.patch(f"{CMS}/a", {"data": {"x": "1"}})
    kube.delete(f"{CMS}/b")
    kube.post("/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}})  # another kind: not seen
    events = []
    for ev in kube.watch(CMS, timeout=10, resourceVersion=start, timeoutSeconds=1):
        events.append(ev)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    rvs = [int(rv_of(e["object"])) for e in events]
    assert rvs == sorted(rvs) and all(rv > int(start) for rv in rvs)
    assert events[1]["object"]["data"] == {"x": "1"}


def test_watch_without_resource_version_starts_with_current_state(kube):
    kube.post(CMS, configmap("a"))
    kube.post(CMS, configmap("b"))
    c = Collector(kube, CMS, timeoutSeconds=5)
    c.wait(2)
    kube.post(CMS, configmap("c"))
    c.wait(3)
    assert c.typed("ADDED")[:3] == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]


@pytest.fixture
def server_options():
    return ServerOptions(bookmark_interval=0.2, history_events=5)


def test_too_old_resource_version_gets_410_expired(kube):
    start = kube.get(CMS).body["metadata"]["resourceVersion"]
    for i in range(8):  # the fixture keeps 5 events of history per kind
        kube.post(CMS, configmap(f"c{i}"))
    events = list(kube.watch(CMS, timeout=10, resourceVersion=start))
    assert len(events) == 1
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {start} (")


def test_compaction_makes_a_resume_fail_with_410(apiserver, kube):
    kube.post(CMS, configmap("a"))
    start = kube.get(CMS).body["metadata"]["resourceVersion"]
    kube.post(CMS, configmap("b"))
    apiserver.store.compact()
    events = list(kube.watch(CMS, timeout=10, resourceVersion=start))
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410


def test_bookmarks_arrive_only_when_asked_for(kube):
    start = kube.get(CMS).body["metadata"]["resourceVersion"]
    with_bm = Collector(kube, CMS, resourceVersion=start, allowWatchBookmarks="true", timeoutSeconds=3)
    without = Collector(kube, CMS, resourceVersion=start, timeoutSeconds=1)
    bookmark = wait_for(lambda: next((e for e in with_bm.events if e["type"] == "BOOKMARK"), None),
                        what="a bookmark")
    assert bookmark["object"]["kind"] == "ConfigMap"
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(start)
    assert set(bookmark["object"]["metadata"]) == {"resourceVersion"}
    after = int(rv_of(kube.post(CMS, configmap("after")).body))
    # A bookmark promises every event up to its resourceVersion was sent: the ADDED must come first.
    wait_for(lambda: any(e["type"] == "BOOKMARK" and int(rv_of(e["object"])) >= after for e in with_bm.events),
             what="a bookmark past the new object")
    kinds = [e["type"] for e in with_bm.events]
    first_late_bookmark = next(i for i, e in enumerate(with_bm.events)
                               if e["type"] == "BOOKMARK" and int(rv_of(e["object"])) >= after)
    assert "ADDED" in kinds[:first_late_bookmark]
    assert without.ended.wait(10)
    assert not [e for e in without.events if e["type"] == "BOOKMARK"]


def test_a_dropped_watch_loses_nothing_on_resume(apiserver, kube):
    start = kube.get(CMS).body["metadata"]["resourceVersion"]
    first = Collector(kube, CMS, resourceVersion=start)
    kube.post(CMS, configmap("a"))
    kube.post(CMS, configmap("b"))
    first.wait(2)
    apiserver.store.close_watchers("test: drop every watch")
    assert first.ended.wait(10), "the watch stream should end when the server drops it"
    last_seen = rv_of(first.events[-1]["object"])
    # Changes while no watch is open.
    kube.patch(f"{CMS}/a", {"data": {"k": "v"}})
    kube.delete(f"{CMS}/b")
    kube.post(CMS, configmap("c"))
    second = list(kube.watch(CMS, timeout=10, resourceVersion=last_seen, timeoutSeconds=1))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in second] == [
        ("MODIFIED", "a"), ("DELETED", "b"), ("ADDED", "c")]


def test_label_filtered_watch_mirrors_the_filtered_list(kube):
    start = kube.get(CMS).body["metadata"]["resourceVersion"]
    c = Collector(kube, CMS, resourceVersion=start, labelSelector="app=web", timeoutSeconds=5)
    kube.post(CMS, configmap("x", labels={"app": "db"}))           # never matches: nothing
    kube.post(CMS, configmap("y", labels={"app": "web"}))          # ADDED
    kube.patch(f"{CMS}/x", {"metadata": {"labels": {"app": "web"}}})  # starts matching: ADDED
    kube.patch(f"{CMS}/y", {"metadata": {"labels": {"app": "db"}}})   # stops matching: DELETED
    kube.patch(f"{CMS}/x", {"data": {"a": "1"}})                      # still matching: MODIFIED
    c.wait(4)
    assert c.typed("ADDED", "MODIFIED", "DELETED") == [
        ("ADDED", "y"), ("ADDED", "x"), ("DELETED", "y"), ("MODIFIED", "x")]


def test_a_filtered_watcher_is_offered_only_what_concerns_it(apiserver, kube):
    """Other objects' changes never reach a filtered watcher's queue (nor wake its HTTP thread); one that stops
    matching still does, to be sent as DELETED."""
    watcher = apiserver.store.watch("/configmaps", lambda obj: (obj["metadata"].get("labels") or {}).get("app")
                                    == "web", since=apiserver.store.resource_version)
    try:
        kube.post(CMS, configmap("other", labels={"app": "db"}))
        kube.patch(f"{CMS}/other", {"data": {"a": "1"}})
        assert not watcher.pending()
        kube.post(CMS, configmap("mine", labels={"app": "web"}))
        kube.patch(f"{CMS}/mine", {"metadata": {"labels": {"app": "db"}}})
        kube.patch(f"{CMS}/mine", {"data": {"a": "2"}})             # no longer its business
        offered = [watcher.next(1.0), watcher.next(1.0)]
        assert [watcher.translate(ev)[0] for ev in offered] == ["ADDED", "DELETED"]
        assert not watcher.pending()
    finally:
        apiserver.store.stop_watch(watcher)


def test_watch_one_object_by_name_and_namespace_scope(kube):
    kube.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    start = kube.get(CMS).body["metadata"]["resourceVersion"]
    c = Collector(kube, CMS, resourceVersion=start, fieldSelector="metadata.name=target", timeoutSeconds=5)
    kube.post(CMS, configmap("noise"))
    kube.post("/api/v1/namespaces/other/configmaps", configmap("target", namespace="other"))
    kube.post(CMS, configmap("target"))
    c.wait(1)
    assert c.typed("ADDED") == [("ADDED", "target")]
    assert c.events[0]["object"]["metadata"]["namespace"] == "default"


def test_timeout_seconds_ends_the_stream(kube):
    c = Collector(kube, CMS, timeoutSeconds=1)
    assert c.ended.wait(10)
    assert not [e for e in c.events if e["type"] == "CLIENT-ERROR"]


def test_cluster_wide_watch_sees_every_namespace(kube):
    kube.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    start = kube.get("/api/v1/configmaps").body["metadata"]["resourceVersion"]
    c = Collector(kube, "/api/v1/configmaps", resourceVersion=start, timeoutSeconds=5)
    kube.post(CMS, configmap("one"))
    kube.post("/api/v1/namespaces/other/configmaps", configmap("two", namespace="other"))
    c.wait(2)
    assert c.typed("ADDED") == [("ADDED", "one"), ("ADDED", "two")]
