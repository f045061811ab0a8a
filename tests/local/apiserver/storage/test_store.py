"""The store's own guarantees, under concurrent writers over HTTP: hooks see commits in order, and nothing JSON
cannot encode is ever stored."""

from __future__ import annotations

import datetime
import itertools
import threading
import time

import pytest

from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.local.apiserver.storage.store import Unserialisable
from tests.support import Kube, configmap

CMS = "/api/v1/namespaces/default/configmaps"


def test_commit_hooks_see_writes_in_commit_order(apiserver):
    """A hook that takes a moment (as one preempted by the scheduler does) still sees every write, in order."""
    seen: list[int] = []

    def slow_hook(key: str, ev) -> None:
        if key == "/configmaps":
            time.sleep(0.0002)
            seen.append(ev.rv)

    apiserver.store.add_commit_hook(slow_hook)

    def writer(i: int) -> None:
        client = Kube(apiserver.url)
        try:
            for j in range(40):
                assert client.post(CMS, configmap(f"c-{i}-{j}")).status == 201
        finally:
            client.close()

    threads = [threading.Thread(target=writer, args=(i,), name=f"test-writer-{i}") for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(seen) == 240
    inversions = sum(1 for a, b in itertools.pairwise(seen) if a > b)
    assert inversions == 0, f"{inversions} hook calls out of commit order"


def test_the_store_never_keeps_what_it_cannot_serve(apiserver, kube):
    """Whatever its caller hands it, an object JSON cannot encode is refused whole: no version, no event."""
    kube.post(CMS, configmap("kept"))
    rv = apiserver.store.resource_version
    bad = configmap("bad")
    bad["data"] = {"when": datetime.date(2020, 1, 1)}
    with pytest.raises(Unserialisable):
        apiserver.store.create("/configmaps", bad)
    kept = apiserver.store.get("/configmaps", ("default", "kept"))
    changed = deep_copy(kept.obj)
    changed["data"] = {"nan": float("nan")}
    with pytest.raises(Unserialisable):
        apiserver.store.update("/configmaps", changed, expect_rv=kept.rv)
    assert apiserver.store.resource_version == rv
    listed = kube.get(CMS)
    assert listed.status == 200 and [i["metadata"]["name"] for i in listed.body["items"]] == ["kept"]
    assert kube.get(f"{CMS}/kept").body["metadata"]["resourceVersion"] == str(kept.rv)
