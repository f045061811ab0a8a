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
