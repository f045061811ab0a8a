"""Discovery and OpenAPI v3 documents, as kubectl and client-go read them, updated live with CRDs."""

from tests.crds import widget_crd
from tests.support import wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def test_version(kube):
    v = kube.get("/version").body
    assert v["major"] == "1"
    assert v["gitVersion"].startswith(f"v1.{v['minor']}.")


def test_core_group_lists_resources_with_verbs_short_names_and_subresources(kube):
    assert kube.get("/api").body["versions"] == ["v1"]
    res = {r["name"]: r for r in kube.get("/api/v1").body["resources"]}
    assert res["pods"]["kind"] == "Pod"
    assert res["pods"]["namespaced"] is True
    assert res["pods"]["shortNames"] == ["po"]
    assert "all" in res["pods"]["categories"]
    assert set(res["pods"]["verbs"]) == {"create", "delete", "deletecollection", "get", "list", "patch",
                                         "update", "watch"}
    assert res["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert res["pods/log"]["verbs"] == ["get"]
    assert res["namespaces"]["namespaced"] is False
    assert res["services"]["shortNames"] == ["svc"]
    for name in ("events", "configmaps", "secrets", "serviceaccounts", "nodes"):
        assert name in res


def test_groups(kube):
    groups = {g["name"]: g for g in kube.get("/apis").body["groups"]}
    for name in ("apiextensions.k8s.io", "coordination.k8s.io", "apps", "rbac.authorization.k8s.io", "policy"):
        assert groups[name]["preferredVersion"]["version"] == "v1"
    leases = kube.get("/apis/coordination.k8s.io/v1").body
    assert leases["groupVersion"] == "coordination.k8s.io/v1"
    assert [r["name"] for r in leases["resources"]] == ["leases"]
    assert kube.get("/apis/coordination.k8s.io").body["kind"] == "APIGroup"


def test_crd_discovery_is_live(kube):
    assert kube.get("/apis/example.com/v1").status == 404
    assert kube.post(CRDS, widget_crd(versions=("v1", "v1beta1"))).status == 201
    groups = {g["name"]: g for g in kube.get("/apis").body["groups"]}
    assert [v["version"] for v in groups["example.com"]["versions"]] == ["v1", "v1beta1"]
    for version in ("v1", "v1beta1"):
        res = {r["name"]: r for r in kube.get(f"/apis/example.com/{version}").body["resources"]}
        assert res["widgets"]["kind"] == "Widget"
        assert res["widgets"]["shortNames"] == ["wg"]
        assert res["widgets"]["categories"] == ["all"]
        assert "widgets/status" in res
    assert kube.delete(f"{CRDS}/widgets.example.com").ok
    assert kube.get("/apis/example.com/v1").status == 404
    assert "example.com" not in {g["name"] for g in kube.get("/apis").body["groups"]}


def test_crd_conditions_established(kube):
    kube.post(CRDS, widget_crd())

    def established():
        crd = kube.get(f"{CRDS}/widgets.example.com").body
        conds = {c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])}
        return conds.get("Established") == "True" and conds.get("NamesAccepted") == "True" and crd

    crd = wait_for(established, what="CRD established")
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["storedVersions"] == ["v1"]


def test_openapi_v3_index_and_patch_operations(kube):
    index = kube.get("/openapi/v3").body["paths"]
    assert "api/v1" in index and "apis/apps/v1" in index
    url = index["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    path, _, query = url.partition("?")
    doc = kube.get(path, hash=query.split("=", 1)[1]).body
    assert doc["openapi"].startswith("3.")
    pod_item = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert pod_item["patch"]["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}
    params = {p["name"] for p in pod_item["patch"]["parameters"]}
    assert {"fieldValidation", "fieldManager", "dryRun"} <= params
    containers = doc["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert kube.get("/openapi/v2").status == 200   # tests/local/apiserver/encoding/test_openapi_v2.py


def test_openapi_v3_follows_crds(kube):
    kube.post(CRDS, widget_crd())
    index = kube.get("/openapi/v3").body["paths"]
    url = index["apis/example.com/v1"]["serverRelativeURL"]
    doc = kube.get(url.partition("?")[0]).body
    schema = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert schema["properties"]["spec"]["properties"]["size"]["type"] == "integer"
    patch = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "Widget"
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    kube.delete(f"{CRDS}/widgets.example.com")
    assert "apis/example.com/v1" not in kube.get("/openapi/v3").body["paths"]


def test_health_endpoints(kube):
    for path in ("/healthz", "/livez", "/readyz"):
        reply = kube.request("GET", path, accept="*/*")
        assert reply.status == 200
        assert reply.body == "ok"
