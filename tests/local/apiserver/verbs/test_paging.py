"""verbs/paging.py: a page cut from its snapshot (pure), the snapshots' bounds, kube's continue tokens; and on a
server, the pages of a list whose snapshot was forgotten, rebuilt from the history, equal to the remembered ones."""

from __future__ import annotations

import pytest

from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.storage.watch import Entry
from mxjob_controller.local.apiserver.verbs import paging
from mxjob_controller.local.apiserver.verbs.paging import Snapshots, decode_continue, encode_continue, page_of
from tests.support import configmap

CMS = "/api/v1/namespaces/default/configmaps"


def snapshot(*names: str, labels: dict[str, dict[str, str]] | None = None) -> list:
    items = []
    for rv, name in enumerate(sorted(names), start=1):
        obj = {"metadata": {"namespace": "ns", "name": name, "labels": (labels or {}).get(name, {})}}
        items.append((("ns", name), Entry(obj, rv)))
    return items


def every(_obj: dict) -> bool:
    return True


def labelled(obj: dict) -> bool:
    return obj["metadata"]["labels"].get("keep") == "yes"


def names(page: paging.Page) -> list[str]:
    return [key[1] for key, _ in page.items]


def test_a_page_starts_after_the_token_s_key_and_counts_what_is_left():
    items = snapshot("a", "b", "c", "d", "e")
    first = page_of(items, None, 2, every, count_remaining=True)
    assert (names(first), first.more, first.remaining) == (["a", "b"], True, 3)
    second = page_of(items, ("ns", "b"), 2, every, count_remaining=True)
    assert (names(second), second.more, second.remaining) == (["c", "d"], True, 1)
    last = page_of(items, ("ns", "d"), 2, every, count_remaining=True)
    assert (names(last), last.more) == (["e"], False)


def test_a_key_that_is_gone_from_the_snapshot_still_places_the_next_page():
    # the token's key need not be in the snapshot (it is the last key served, compared as etcd compares keys)
    assert names(page_of(snapshot("a", "c", "e"), ("ns", "b"), 5, every, True)) == ["c", "e"]
    assert names(page_of(snapshot("a", "c"), ("ns", "z"), 5, every, True)) == []


def test_no_limit_is_the_whole_rest_and_a_negative_one_too():
    items = snapshot("a", "b", "c")
    for limit in (0, -1):
        page = page_of(items, ("ns", "a"), limit, every, True)
        assert (names(page), page.more) == (["b", "c"], False)


def test_with_a_selector_more_means_another_match_follows_and_nothing_is_counted():
    keep = {"keep": "yes"}
    items = snapshot("a", "b", "c", "d", labels={"a": keep, "c": keep})
    full = page_of(items, None, 1, labelled, count_remaining=False)
    assert (names(full), full.more, full.remaining) == (["a"], True, None)
    # "c" fills the page; only non-matching "d" follows: no continue token for an empty last page
    end = page_of(items, ("ns", "a"), 1, labelled, count_remaining=False)
    assert (names(end), end.more) == (["c"], False)


def test_snapshots_are_kept_by_key_namespace_and_version_until_their_time_is_up():
    now = [0.0]
    kept = Snapshots(ttl=60, max_items=100, clock=lambda: now[0])
    items = snapshot("a", "b")
    kept.remember("/configmaps", "ns", 7, items)
    assert kept.recall("/configmaps", "ns", 7) is items
    assert kept.recall("/configmaps", None, 7) is None and kept.recall("/configmaps", "ns", 8) is None
    now[0] = 59.0
    kept.remember("/configmaps", "ns", 7, items)   # another page: another TTL from now
    now[0] = 100.0
    assert kept.recall("/configmaps", "ns", 7) is items
    now[0] = 120.0
    assert kept.recall("/configmaps", "ns", 7) is None


def test_snapshots_hold_at_most_their_bound_of_items():
    kept = Snapshots(ttl=60, max_items=5)
    kept.remember("/pods", None, 1, snapshot("a", "b", "c"))
    kept.remember("/pods", None, 2, snapshot("d", "e", "f"))   # 6 > 5: the older goes
    assert kept.recall("/pods", None, 1) is None and kept.recall("/pods", None, 2) is not None
    kept.remember("/pods", None, 3, snapshot(*"ghijkl"))       # larger than the whole bound: not kept
    assert kept.recall("/pods", None, 3) is None and kept.recall("/pods", None, 2) is not None


def test_continue_tokens_are_kube_s_and_a_bad_one_is_its_400():
    token = encode_continue(42, ("team", "c1"))
    assert "=" not in token
    assert decode_continue(token) == (42, ("team", "c1"))
    assert decode_continue(token + "=" * (-len(token) % 4)) == (42, ("team", "c1"))  # padded, as older servers sent
    with pytest.raises(StatusError, match="illegal base64 data at input byte 4"):
        decode_continue("abcd!")
    with pytest.raises(StatusError, match="server does not recognize this encoded version"):
        decode_continue(encode_continue(1, ("a", "b")).replace("bWV0YS", "bWV1YS"))


@pytest.mark.integration
def test_pages_rebuilt_from_the_history_equal_the_remembered_ones(apiserver, kube):
    for i in range(7):
        kube.post(CMS, configmap(f"c{i}"))
    first = kube.get(CMS, limit=3).body
    kube.delete(f"{CMS}/c4")
    kube.patch(f"{CMS}/c5", {"data": {"changed": "yes"}})
    remembered = kube.get(CMS, limit=3, **{"continue": first["metadata"]["continue"]}).body
    apiserver.rest.snapshots = Snapshots()        # the snapshot forgotten (its time up, or pushed out)
    rebuilt = kube.get(CMS, limit=3, **{"continue": first["metadata"]["continue"]}).body
    assert rebuilt == remembered
    assert [i["metadata"]["name"] for i in rebuilt["items"]] == ["c3", "c4", "c5"]
    assert rebuilt["metadata"]["remainingItemCount"] == 1
