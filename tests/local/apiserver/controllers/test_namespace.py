"""Namespace termination: Terminating phase, no new content (403), content deleted, conditions while something
remains, the finalize subresource, and kubectl delete ns on a namespace with objects in it."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.support import configmap, pod, wait_for

NAMESPACES = "/api/v1/namespaces"
HOLD = "example.com/hold"


def make_namespace(kube, name: str) -> dict:
    reply = kube.post(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert reply.status == 201, reply.body
    return reply.body


def fill(kube, ns: str) -> None:
    for i in range(3):
        assert kube.post(f"{NAMESPACES}/{ns}/configmaps", configmap(f"c{i}", namespace=ns)).status == 201
    assert kube.post(f"{NAMESPACES}/{ns}/pods", pod("p", namespace=ns)).status == 201
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": ns}}
    assert kube.post(f"{NAMESPACES}/{ns}/secrets", secret).status == 201


def conditions(kube, ns: str) -> dict[str, dict]:
    body = kube.get(f"{NAMESPACES}/{ns}").body
    return {c["type"]: c for c in (body.get("status") or {}).get("conditions") or []}


def test_deleting_a_namespace_terminates_it_then_removes_it_with_its_content(kube):
    make_namespace(kube, "team")
    fill(kube, "team")
    reply = kube.delete(f"{NAMESPACES}/team")
    assert reply.status == 200
    assert reply.body["kind"] == "Namespace"
    assert reply.body["status"]["phase"] == "Terminating"
    assert reply.body["metadata"]["deletionTimestamp"]
    assert reply.body["spec"]["finalizers"] == ["kubernetes"]
    wait_for(lambda: kube.get(f"{NAMESPACES}/team").status == 404, timeout=20, what="the namespace removed")
    for kind in ("configmaps", "pods", "secrets"):
        assert kube.get(f"{NAMESPACES}/team/{kind}").body["items"] == []


def test_no_new_content_in_a_terminating_namespace(kube, apiserver):
    make_namespace(kube, "team")
    held = configmap("held", namespace="team")
    held["metadata"]["finalizers"] = [HOLD]
    kube.post(f"{NAMESPACES}/team/configmaps", held)
    kube.delete(f"{NAMESPACES}/team")

    api = client.CoreV1Api(kube.api)
    with pytest.raises(client.ApiException) as e:
        api.create_namespaced_config_map("team", configmap("late", namespace="team"))
    assert e.value.status == 403
    reply = kube.post(f"{NAMESPACES}/team/configmaps", configmap("late", namespace="team"))
    assert reply.body["reason"] == "Forbidden"
    assert reply.body["message"] == ('configmaps "late" is forbidden: unable to create new content in namespace team '
                                     "because it is being terminated")
    assert reply.body["details"]["causes"] == [{"reason": "NamespaceTerminating", "field": "metadata.namespace",
                                                "message": "namespace team is being terminated"}]
    generated = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-"}}
    assert kube.post(f"{NAMESPACES}/team/configmaps", generated).body["message"] == (
        "configmaps is forbidden: unable to create new content in namespace team because it is being terminated")
    assert kube.patch(f"{NAMESPACES}/team/configmaps/held", {"data": {"k": "v"}}).status == 200, \
        "updates are still allowed"


def test_conditions_report_what_remains_and_finalizers_hold_the_namespace(kube, apiserver):
    make_namespace(kube, "team")
    fill(kube, "team")
    held = configmap("held", namespace="team")
    held["metadata"]["finalizers"] = [HOLD]
    kube.post(f"{NAMESPACES}/team/configmaps", held)
    kube.delete(f"{NAMESPACES}/team")

    wait_for(lambda: kube.get("/api/v1/namespaces/team/configmaps").body["items"][0]["metadata"]["name"] == "held"
             and len(kube.get("/api/v1/namespaces/team/configmaps").body["items"]) == 1, timeout=20)
    assert apiserver.wait_idle(20)
    conds = conditions(kube, "team")
    assert conds["NamespaceContentRemaining"]["status"] == "True"
    assert conds["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
    assert conds["NamespaceContentRemaining"]["message"] == \
        "Some resources are remaining: configmaps. has 1 resource instances"
    assert conds["NamespaceFinalizersRemaining"]["message"] == \
        "Some finalizers are remaining: example.com/hold in 1 resource instances"
    assert conds["NamespaceDeletionContentFailure"]["status"] == "False"
    assert conds["NamespaceDeletionContentFailure"]["reason"] == "ContentDeleted"
    assert kube.get(f"{NAMESPACES}/team").body["status"]["phase"] == "Terminating"
    assert kube.get(f"{NAMESPACES}/team").body["spec"]["finalizers"] == ["kubernetes"]

    again = kube.delete(f"{NAMESPACES}/team")
    assert again.status == 200 and again.body["status"]["phase"] == "Terminating"

    kube.patch(f"{NAMESPACES}/team/configmaps/held", {"metadata": {"finalizers": None}})
    wait_for(lambda: kube.get(f"{NAMESPACES}/team").status == 404, timeout=20,
             what="the namespace, once its last object is gone")


def test_spec_finalizers_change_only_through_the_finalize_subresource(kube):
    ns = make_namespace(kube, "team")
    ns["spec"]["finalizers"] = ["kubernetes", "example.com/custom"]
    updated = kube.put(f"{NAMESPACES}/team", ns)
    assert updated.status == 200 and updated.body["spec"]["finalizers"] == ["kubernetes"], "a plain update keeps them"

    ns = kube.get(f"{NAMESPACES}/team").body
    ns["spec"]["finalizers"] = ["kubernetes", "example.com/custom"]
    finalized = kube.put(f"{NAMESPACES}/team/finalize", ns)
    assert finalized.status == 200
    assert finalized.body["spec"]["finalizers"] == ["kubernetes", "example.com/custom"]
    assert kube.patch(f"{NAMESPACES}/team/finalize", {"spec": {}}).status in (404, 405)

    kube.delete(f"{NAMESPACES}/team")
    wait_for(lambda: kube.get(f"{NAMESPACES}/team").body["spec"]["finalizers"] == ["example.com/custom"],
             timeout=20, what="the namespace controller's own finalizer removed")
    ns = kube.get(f"{NAMESPACES}/team").body
    assert ns["status"]["phase"] == "Terminating"
    ns["spec"]["finalizers"] = []
    assert kube.put(f"{NAMESPACES}/team/finalize", ns).status == 200
    assert kube.get(f"{NAMESPACES}/team").status == 404


def test_immortal_namespaces_cannot_be_deleted(kube):
    reply = kube.delete(f"{NAMESPACES}/default")
    assert reply.status == 403
    assert reply.body["message"] == 'namespaces "default" is forbidden: this namespace may not be deleted'
    assert kube.get(f"{NAMESPACES}/default").body["status"]["phase"] == "Active"


def test_namespace_uid_precondition(kube):
    make_namespace(kube, "team")
    reply = kube.delete(f"{NAMESPACES}/team", body={"preconditions": {"uid": "other"}})
    assert reply.status == 409
    assert reply.body["message"].startswith('Operation cannot be fulfilled on namespaces "team": Precondition '
                                            "failed: UID in precondition: other, UID in object meta: ")


def test_kubectl_delete_namespace_with_objects_in_it(kubectl, kube):
    # (kubectl's imperative "create namespace" speaks protobuf, which this server does not: use manifests)
    kubectl.ok("create", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n")
    fill(kube, "team")
    kubectl.ok("create", "-n", "team", "-f", "-",
               input="apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-kubectl\ndata:\n  a: b\n")
    out = kubectl.ok("delete", "namespace", "team", timeout=60)
    assert out.strip() == 'namespace "team" deleted'
    assert kube.get(f"{NAMESPACES}/team").status == 404, "kubectl waited until the namespace was gone"
    assert kubectl.run("get", "namespace", "team").returncode != 0
