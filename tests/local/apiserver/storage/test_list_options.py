"""List: label and field selectors, consistent pagination, cluster-wide lists."""

import pytest

from tests.support import configmap, pod

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def names(reply):
    return [i["metadata"]["name"] for i in reply.body["items"]]


@pytest.fixture
def labelled(kube):
    for name, labels in [("a", {"app": "web", "tier": "front"}), ("b", {"app": "web", "tier": "back"}),
                         ("c", {"app": "db"}), ("d", {})]:
        assert kube.post(CMS, configmap(name, labels=labels)).status == 201
    return kube


@pytest.mark.parametrize(("selector", "expected"), [
    ("app=web", ["a", "b"]),
    ("app==web", ["a", "b"]),
    ("app!=web", ["c", "d"]),
    ("app in (web,db)", ["a", "b", "c"]),
    ("app notin (web)", ["c", "d"]),
    ("tier", ["a", "b"]),
    ("!tier", ["c", "d"]),
    ("app=web,tier=back", ["b"]),
])
def test_label_selectors(labelled, selector, expected):
    assert names(labelled.get(CMS, labelSelector=selector)) == expected


def test_bad_label_selector_is_400(kube):
    reply = kube.get(CMS, labelSelector="app in web")
    assert reply.status == 400
    assert reply.body["reason"] == "BadRequest"


def test_field_selectors(kube):
    for i, (phase, node) in enumerate([("Running", "n1"), ("Pending", ""), ("Running", "n2")]):
        p = kube.post(PODS, pod(f"p{i}", **({"nodeName": node} if node else {}))).body
        p["status"]["phase"] = phase
        kube.put(f"{PODS}/p{i}/status", p)
    # A pod's spec is immutable apart from a few fields: nodeName is set at creation (or by a binding).
    assert kube.patch(f"{PODS}/p1", {"spec": {"nodeName": "n9"}}).status == 422
    assert names(kube.get(PODS, fieldSelector="status.phase=Running")) == ["p0", "p2"]
    assert names(kube.get(PODS, fieldSelector="status.phase!=Running")) == ["p1"]
    assert names(kube.get(PODS, fieldSelector="spec.nodeName=n2")) == ["p2"]
    assert names(kube.get(PODS, fieldSelector="spec.nodeName=")) == ["p1"]
    assert names(kube.get(PODS, fieldSelector="metadata.name=p1")) == ["p1"]
    assert names(kube.get("/api/v1/pods", fieldSelector="metadata.namespace=default,status.phase=Running")) == [
        "p0", "p2"]
    reply = kube.get(PODS, fieldSelector="spec.bogus=x")
    assert reply.status == 400


def test_event_field_selectors(kube):
    for i, (kind, name, reason) in enumerate([("Pod", "p", "Started"), ("MXJob", "j", "Created"),
                                             ("Pod", "q", "Started")]):
        kube.post("/api/v1/namespaces/default/events", {
            "metadata": {"name": f"e{i}"}, "reason": reason, "type": "Normal", "message": "m",
            "involvedObject": {"kind": kind, "name": name, "namespace": "default", "uid": f"uid-{name}"}})
    sel = "involvedObject.kind=Pod,involvedObject.name=q,involvedObject.namespace=default"
    assert names(kube.get("/api/v1/namespaces/default/events", fieldSelector=sel)) == ["e2"]
    assert names(kube.get("/api/v1/events", fieldSelector="reason=Started")) == ["e0", "e2"]
    assert names(kube.get("/api/v1/events", fieldSelector="involvedObject.uid=uid-j,type=Normal")) == ["e1"]


def test_cluster_wide_list(kube):
    kube.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    kube.post(CMS, configmap("x"))
    kube.post("/api/v1/namespaces/other/configmaps", configmap("y", namespace="other"))
    items = kube.get("/api/v1/configmaps").body["items"]
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in items] == [("default", "x"),
                                                                                    ("other", "y")]


def test_pagination_is_consistent_and_complete(kube):
    for i in range(7):
        kube.post(CMS, configmap(f"c{i}"))
    page = kube.get(CMS, limit=3).body
    assert names_of(page) == ["c0", "c1", "c2"]
    assert page["metadata"]["remainingItemCount"] == 4
    token, rv = page["metadata"]["continue"], page["metadata"]["resourceVersion"]
    # Changes after the first page do not leak into later pages: they are served as of the first page's RV.
    kube.delete(f"{CMS}/c4")
    kube.post(CMS, configmap("c35"))
    kube.patch(f"{CMS}/c5", {"data": {"changed": "yes"}})
    page2 = kube.get(CMS, limit=3, **{"continue": token}).body
    assert names_of(page2) == ["c3", "c4", "c5"]
    assert page2["items"][2].get("data") == {}
    assert page2["metadata"]["resourceVersion"] == rv
    page3 = kube.get(CMS, limit=3, **{"continue": page2["metadata"]["continue"]}).body
    assert names_of(page3) == ["c6"]
    assert "continue" not in page3["metadata"]


def test_pagination_with_a_selector(kube):
    for i in range(5):
        kube.post(CMS, configmap(f"c{i}", labels={"odd": str(i % 2)}))
    seen, token = [], None
    while True:
        q = {"limit": 1, "labelSelector": "odd=1"}
        if token:
            q["continue"] = token
        page = kube.get(CMS, **q).body
        seen += names_of(page)
        token = page["metadata"].get("continue")
        if not token:
            break
    assert seen == ["c1", "c3"]


def test_expired_continue_token_is_410(apiserver, kube):
    for i in range(3):
        kube.post(CMS, configmap(f"c{i}"))
    token = kube.get(CMS, limit=1).body["metadata"]["continue"]
    kube.post(CMS, configmap("later"))
    apiserver.store.compact()
    reply = kube.get(CMS, limit=1, **{"continue": token})
    assert reply.status == 410
    assert reply.body["reason"] == "Expired"
    assert kube.get(CMS, **{"continue": "garbage!"}).status == 400


def names_of(page):
    return [i["metadata"]["name"] for i in page["items"]]
