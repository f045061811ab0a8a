"""Garbage collection through ownerReferences, as kube-controller-manager does it: background, foreground and
orphan propagation, dangling owners (served kind: deleted; unserved kind: kept), and kubectl's cascade."""

from __future__ import annotations

import uuid

from tests.support import configmap, pod, wait_for

NS = "default"
CMS = f"/api/v1/namespaces/{NS}/configmaps"
PODS = f"/api/v1/namespaces/{NS}/pods"
SECRETS = f"/api/v1/namespaces/{NS}/secrets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
HOLD = "example.com/hold"


def owned_by(body: dict, *owners: dict, block: bool = False) -> dict:
    body["metadata"]["ownerReferences"] = [
        {"apiVersion": o["apiVersion"], "kind": o["kind"], "name": o["metadata"]["name"],
         "uid": o["metadata"]["uid"], **({"blockOwnerDeletion": True} if block else {})} for o in owners]
    return body


def ref(api_version: str, kind: str, name: str, uid: str | None = None) -> dict:
    """A stand-in owner (for references to objects that do not exist)."""
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "uid": uid or str(uuid.uuid4())}}


def gone(kube, path: str) -> bool:
    return kube.get(path).status == 404


def names(kube, path: str) -> set[str]:
    return {i["metadata"]["name"] for i in kube.get(path).body["items"]}


def test_background_deletion_removes_dependents_and_theirs(kube, apiserver):
    owner = kube.post(CMS, configmap("owner")).body
    child = kube.post(CMS, owned_by(configmap("child"), owner)).body
    kube.post(CMS, owned_by(configmap("grandchild"), child))
    kube.post(PODS, owned_by(pod("worker"), owner))
    kube.post(SECRETS, owned_by({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}, owner))
    kube.post(CMS, configmap("bystander"))
    assert {d.name for d in apiserver.gc.dependents(owner["metadata"]["uid"])} == {"child", "worker", "s"}

    reply = kube.delete(f"{CMS}/owner")  # Background is the default
    assert reply.status == 200 and reply.body["status"] == "Success", "the owner itself goes at once"
    wait_for(lambda: names(kube, CMS) == {"bystander"}, timeout=20, what="child and grandchild collected")
    wait_for(lambda: gone(kube, f"{PODS}/worker") and gone(kube, f"{SECRETS}/s"), timeout=20)


def test_foreground_deletion_waits_for_blocking_dependents(kube, apiserver):
    owner = kube.post(CMS, configmap("owner")).body
    blocker = owned_by(configmap("blocker"), owner, block=True)
    blocker["metadata"]["finalizers"] = [HOLD]
    kube.post(CMS, blocker)
    kube.post(CMS, owned_by(configmap("follower"), owner))

    reply = kube.delete(f"{CMS}/owner", propagationPolicy="Foreground")
    assert reply.status == 200
    assert reply.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert reply.body["metadata"]["deletionTimestamp"]

    wait_for(lambda: gone(kube, f"{CMS}/follower"), timeout=20, what="the non-blocking dependent deleted")
    wait_for(lambda: kube.get(f"{CMS}/blocker").body["metadata"].get("deletionTimestamp"), timeout=20,
             what="the blocking dependent being deleted")
    assert apiserver.wait_idle(20)
    assert kube.get(f"{CMS}/owner").status == 200, "a blocking dependent still exists"

    kube.patch(f"{CMS}/blocker", {"metadata": {"finalizers": None}})
    wait_for(lambda: gone(kube, f"{CMS}/owner"), timeout=20, what="the owner, once its blocker is gone")


def test_foreground_deletion_without_blocking_dependents_ends_at_once(kube):
    owner = kube.post(CMS, configmap("owner")).body
    kube.post(CMS, owned_by(configmap("dep"), owner))
    kube.delete(f"{CMS}/owner", body={"propagationPolicy": "Foreground"})
    wait_for(lambda: gone(kube, f"{CMS}/owner") and gone(kube, f"{CMS}/dep"), timeout=20)


def test_orphan_strips_the_owner_reference_and_keeps_dependents(kube, apiserver):
    owner = kube.post(CMS, configmap("owner")).body
    other = kube.post(CMS, configmap("other-owner")).body
    kube.post(CMS, owned_by(configmap("shared"), owner, other))
    kube.post(CMS, owned_by(configmap("only"), owner))

    reply = kube.delete(f"{CMS}/owner", propagationPolicy="Orphan")
    assert reply.body["metadata"]["finalizers"] == ["orphan"]
    wait_for(lambda: gone(kube, f"{CMS}/owner"), timeout=20, what="the owner, once its dependents are orphaned")
    assert apiserver.wait_idle(20)
    shared = kube.get(f"{CMS}/shared").body
    assert [r["name"] for r in shared["metadata"]["ownerReferences"]] == ["other-owner"]
    assert "ownerReferences" not in kube.get(f"{CMS}/only").body["metadata"]


def test_orphan_dependents_true_is_orphan_propagation(kube):
    owner = kube.post(CMS, configmap("owner")).body
    kube.post(CMS, owned_by(configmap("dep"), owner))
    assert kube.delete(f"{CMS}/owner", orphanDependents="true").body["metadata"]["finalizers"] == ["orphan"]
    wait_for(lambda: gone(kube, f"{CMS}/owner"), timeout=20)
    assert "ownerReferences" not in kube.get(f"{CMS}/dep").body["metadata"]


def test_a_dependent_of_a_missing_owner_of_a_served_kind_is_deleted(kube, apiserver):
    kube.post(CMS, owned_by(configmap("orphaned"), ref("v1", "ConfigMap", "ghost")))
    existing = kube.post(CMS, configmap("real")).body
    kube.post(CMS, owned_by(configmap("stale-uid"), ref("v1", "ConfigMap", "real")))  # right name, wrong uid
    kube.post(CMS, owned_by(configmap("half"), existing, ref("v1", "ConfigMap", "ghost")))
    wait_for(lambda: gone(kube, f"{CMS}/orphaned") and gone(kube, f"{CMS}/stale-uid"), timeout=20)
    assert apiserver.wait_idle(20)
    half = kube.get(f"{CMS}/half").body
    assert [r["name"] for r in half["metadata"]["ownerReferences"]] == ["real"], "only the dangling ref goes"


def test_references_to_unserved_kinds_are_left_alone_until_the_kind_is_served(kube, apiserver):
    kube.post(CMS, owned_by(configmap("w-dep"), ref("example.com/v1", "Widget", "w1")))
    assert apiserver.wait_idle(20)
    assert kube.get(f"{CMS}/w-dep").status == 200, "the owner's kind is unknown: never collect on its account"

    assert kube.post(CRDS, widget_crd()).status == 201
    wait_for(lambda: gone(kube, f"{CMS}/w-dep"), timeout=20, what="collection once Widgets are served")


def test_dependents_of_custom_resources_go_with_their_crd(kube, apiserver):
    assert kube.post(CRDS, widget_crd()).status == 201
    widgets = f"/apis/example.com/v1/namespaces/{NS}/widgets"
    w = wait_for(lambda: _created(kube, widgets, {"apiVersion": "example.com/v1", "kind": "Widget",
                                                   "metadata": {"name": "w1"}}), timeout=20)
    kube.post(CMS, owned_by(configmap("w-dep"), w))
    assert kube.delete(f"{CRDS}/widgets.example.com").status == 200
    wait_for(lambda: gone(kube, f"{CMS}/w-dep"), timeout=20,
             what="the dependent of a custom resource deleted with its CRD")


def test_kubectl_delete_cascades(kubectl, kube):
    owner = kube.post(CMS, configmap("owner")).body
    kube.post(CMS, owned_by(configmap("dep"), owner))
    assert kubectl.ok("delete", "configmap", "owner").strip() == 'configmap "owner" deleted'
    wait_for(lambda: gone(kube, f"{CMS}/dep"), timeout=20, what="kubectl's background cascade")

    owner = kube.post(CMS, configmap("owner2")).body
    kube.post(CMS, owned_by(configmap("dep2"), owner))
    kubectl.ok("delete", "configmap", "owner2", "--cascade=foreground")
    assert gone(kube, f"{CMS}/owner2") and gone(kube, f"{CMS}/dep2"), "kubectl waited for the foreground deletion"

    owner = kube.post(CMS, configmap("owner3")).body
    kube.post(CMS, owned_by(configmap("dep3"), owner))
    kubectl.ok("delete", "configmap", "owner3", "--cascade=orphan")
    wait_for(lambda: "ownerReferences" not in kube.get(f"{CMS}/dep3").body["metadata"], timeout=20)


def _created(kube, path: str, body: dict) -> dict | None:
    reply = kube.post(path, body)
    return reply.body if reply.status == 201 else None


def widget_crd() -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def test_the_dependency_index_follows_concurrent_writers_exactly(kube, apiserver):
    """Commit hooks run in commit order: however writers interleave, the collector's index of owner → dependents
    ends equal to what the store holds (no phantom entry from a hook that ran after a later write's)."""
    import random
    import sys
    import threading

    from tests.support import Kube

    owners = [kube.post(CMS, configmap(f"owner-{i}")).body for i in range(2)]
    dependents = [f"dep-{i}" for i in range(2)]
    for name in dependents:
        kube.post(CMS, configmap(name))
    choices = [[], [owners[0]], [owners[1]], owners]
    errors: list[str] = []

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        client = Kube(apiserver.url)
        try:
            for _ in range(80):
                refs = owned_by(configmap("x"), *rng.choice(choices))["metadata"].get("ownerReferences") or None
                reply = client.patch(f"{CMS}/{rng.choice(dependents)}", {"metadata": {"ownerReferences": refs}})
                if reply.status != 200:
                    errors.append(f"{reply.status}: {reply.body}")
        finally:
            client.close()

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: interleavings the test would rarely see
    try:
        threads = [threading.Thread(target=writer, args=(seed,), name=f"test-writer-{seed}") for seed in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(switch)
    assert not errors, errors[:3]
    assert apiserver.wait_idle(20)
    for owner in owners:
        uid = owner["metadata"]["uid"]
        stored = {name for name in dependents
                  if uid in {r["uid"] for r in kube.get(f"{CMS}/{name}").body["metadata"].get("ownerReferences", [])}}
        indexed = {d.name for d in apiserver.gc.dependents(uid)}
        assert indexed == stored, f"owner {owner['metadata']['name']}: index {indexed}, store {stored}"
