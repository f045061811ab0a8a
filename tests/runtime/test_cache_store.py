"""The informer's store (runtime/cache_store.py): indexes kept consistent through updates, deletions and a replace;
an index function that fails or clashes is refused without touching the others."""

from __future__ import annotations

import pytest

from mxjob_controller.runtime.cache_keys import label_index
from mxjob_controller.runtime.cache_store import Indexer


def test_indexer_keeps_indexes_consistent():
    store = Indexer(indexers={"job": label_index("job")})
    a = {"metadata": {"name": "a", "namespace": "n", "labels": {"job": "x"}}}
    store.upsert(a)
    store.upsert({"metadata": {"name": "b", "namespace": "n", "labels": {"job": "x"}}})
    assert sorted(store.index_keys("job", "x")) == ["n/a", "n/b"]
    store.upsert({"metadata": {"name": "a", "namespace": "n", "labels": {"job": "y"}}})
    assert store.index_keys("job", "x") == ["n/b"] and store.index_keys("job", "y") == ["n/a"]
    assert store.delete("n/b") is not None and store.index_keys("job", "x") == []

    def broken(obj: dict) -> list[str]:
        raise ValueError("bad index function")

    with pytest.raises(ValueError, match="bad index function"):
        store.add_indexers({"bad": broken})
    assert "bad" not in store.indexers() and store.index_keys("job", "y") == ["n/a"]
    store.add_indexers({"ok": label_index("job")})
    with pytest.raises(ValueError, match="another function"):
        store.add_indexers({"ok": label_index("other")})
    store.replace([a])
    assert store.keys() == ["n/a"] and store.by_index("ok", "x") == [a]


def test_index_buckets_of_any_size_follow_updates_and_deletions():
    store = Indexer(indexers={"job": label_index("job")})

    def obj(i: int, job: str) -> dict:
        return {"metadata": {"name": f"o{i}", "namespace": "n", "labels": {"job": job}}}

    for i in range(20):   # a bucket grows past the small ones' size
        store.upsert(obj(i, "big" if i % 2 else f"small-{i % 4}"))
    assert sorted(store.index_keys("job", "big")) == sorted(f"n/o{i}" for i in range(1, 20, 2))
    assert sorted(store.index_keys("job", "small-2")) == sorted(f"n/o{i}" for i in range(2, 20, 4))
    for i in range(1, 20, 2):
        store.upsert(obj(i, "small-2"))   # every object of the big bucket moves to a small one
    assert store.index_keys("job", "big") == [] and len(store.index_keys("job", "small-2")) == 15
    store.upsert(obj(2, "small-2"))       # the same values again: nothing doubles
    assert len(store.index_keys("job", "small-2")) == 15
    for i in range(20):
        store.delete(f"n/o{i}")
    assert store.index_keys("job", "small-0") == store.index_keys("job", "small-2") == [] and len(store) == 0
    assert store.list() == []
