"""Smoke: the fixture's server answers the official client and kubectl."""

from tests.support import pod


def test_official_client_round_trip(kube):
    created = kube.post("/api/v1/namespaces/default/pods", pod("p1"))
    assert created.status == 201, created.body
    got = kube.get("/api/v1/namespaces/default/pods/p1")
    assert got.status == 200
    assert got.body["metadata"]["uid"] == created.body["metadata"]["uid"]
    assert got.body["status"]["phase"] == "Pending"


def test_kubectl_lists_namespaces(kubectl):
    out = kubectl.ok("get", "namespaces", "-o", "name")
    assert "namespace/default" in out.split()
    assert "namespace/kube-system" in out.split()
