"""Create, get, update, merge patch and delete with kube-apiserver's semantics, through the official client."""

import json

from tests.crds import WIDGETS, widget, widget_crd
from tests.support import configmap, pod

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _rv(obj):
    return int(obj["metadata"]["resourceVersion"])


def test_create_sets_server_fields(kube):
    reply = kube.post(CMS, configmap("c1", {"k": "v"}))
    assert reply.status == 201
    meta = reply.body["metadata"]
    assert len(meta["uid"]) == 36
    assert meta["creationTimestamp"].endswith("Z")
    assert _rv(reply.body) > 0
    assert "generation" not in meta  # configmaps have no generation, as in kube
    assert reply.body["apiVersion"] == "v1" and reply.body["kind"] == "ConfigMap"


def test_resource_version_is_global_and_strictly_increasing(kube):
    kube.post(CRDS, widget_crd())
    rvs = [_rv(kube.post(CMS, configmap("a")).body), _rv(kube.post(PODS, pod("p")).body),
           _rv(kube.post(WIDGETS, widget("w")).body), _rv(kube.post(CMS, configmap("b")).body)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 4
    listed = kube.get(CMS).body
    assert _rv(listed) >= rvs[-1]


def test_generate_name(kube):
    reply = kube.post(CMS, {"metadata": {"generateName": "job-"}, "data": {}})
    assert reply.status == 201
    name = reply.body["metadata"]["name"]
    assert name.startswith("job-") and len(name) == len("job-") + 5


def test_already_exists(kube):
    kube.post(CMS, configmap("dup"))
    reply = kube.post(CMS, configmap("dup"))
    assert reply.status == 409
    assert reply.body["reason"] == "AlreadyExists"
    assert reply.body["message"] == 'configmaps "dup" already exists'
    assert reply.body["details"] == {"name": "dup", "kind": "configmaps"}


def test_create_in_missing_namespace_is_not_found(kube):
    reply = kube.post("/api/v1/namespaces/nope/configmaps", configmap("c", namespace="nope"))
    assert reply.status == 404
    assert reply.body["message"] == 'namespaces "nope" not found'


def test_not_found_names_the_group_qualified_resource(kube):
    kube.post(CRDS, widget_crd())
    reply = kube.get(f"{WIDGETS}/missing")
    assert reply.status == 404
    assert reply.body["message"] == 'widgets.example.com "missing" not found'
    assert reply.body["details"] == {"name": "missing", "group": "example.com", "kind": "widgets"}


def test_body_without_api_version_and_kind_is_defaulted_from_the_url(kube):
    reply = kube.post(CMS, {"metadata": {"name": "bare"}, "data": {"a": "b"}})
    assert reply.status == 201
    assert (reply.body["apiVersion"], reply.body["kind"]) == ("v1", "ConfigMap")


def test_kind_mismatch_is_bad_request(kube):
    body = configmap("x")
    body["kind"] = "Secret"
    reply = kube.post(CMS, body)
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    body = configmap("x")
    body["apiVersion"] = "v2"
    assert kube.post(CMS, body).status == 400


def test_namespace_and_name_must_match_the_url(kube):
    reply = kube.post(CMS, configmap("x", namespace="other"))
    assert reply.status == 400
    assert "does not match the namespace" in reply.body["message"]
    kube.post(CMS, configmap("x"))
    reply = kube.put(f"{CMS}/x", configmap("y"))
    assert reply.status == 400
    assert reply.body["message"] == "the name of the object (y) does not match the name on the URL (x)"


def test_post_without_content_type_is_json(kube):
    pool = kube.api.rest_client.pool_manager
    resp = pool.request("POST", kube.api.configuration.host + CMS, body=json.dumps(configmap("noct")).encode(),
                        headers={"Accept": "application/json"})
    assert resp.status == 201, resp.data


def test_update_conflict_on_stale_resource_version(kube):
    created = kube.post(CMS, configmap("c", {"a": "1"})).body
    first = dict(created, data={"a": "2"})
    assert kube.put(f"{CMS}/c", first).status == 200
    stale = dict(created, data={"a": "3"})
    reply = kube.put(f"{CMS}/c", stale)
    assert reply.status == 409
    assert reply.body["reason"] == "Conflict"
    assert reply.body["message"] == ('Operation cannot be fulfilled on configmaps "c": the object has been modified; '
                                     "please apply your changes to the latest version and try again")
    assert kube.get(f"{CMS}/c").body["data"] == {"a": "2"}


def test_update_without_resource_version_is_unconditional(kube):
    kube.post(CMS, configmap("c", {"a": "1"}))
    reply = kube.put(f"{CMS}/c", configmap("c", {"a": "9"}))
    assert reply.status == 200
    assert reply.body["data"] == {"a": "9"}


def test_update_keeps_uid_and_creation_timestamp(kube):
    created = kube.post(CMS, configmap("c")).body
    body = configmap("c", {"x": "y"})
    body["metadata"]["creationTimestamp"] = "2000-01-01T00:00:00Z"
    updated = kube.put(f"{CMS}/c", body).body
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]
    assert updated["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]
    body["metadata"]["uid"] = "11111111-1111-1111-1111-111111111111"
    reply = kube.put(f"{CMS}/c", body)
    assert reply.status == 422
    assert reply.body["details"]["causes"][0]["field"] == "metadata.uid"


def test_noop_update_keeps_the_resource_version(kube):
    created = kube.post(CMS, configmap("c", {"a": "1"})).body
    again = kube.put(f"{CMS}/c", created).body
    assert _rv(again) == _rv(created)


def test_generation_bumps_only_on_spec_changes(kube):
    kube.post(CRDS, widget_crd())
    w = kube.post(WIDGETS, widget("w", size=1)).body
    assert w["metadata"]["generation"] == 1
    w = kube.patch(f"{WIDGETS}/w", {"metadata": {"labels": {"a": "b"}}}).body
    assert w["metadata"]["generation"] == 1
    w = kube.patch(f"{WIDGETS}/w/status", {"status": {"phase": "x"}}).body
    assert w["metadata"]["generation"] == 1
    w = kube.patch(f"{WIDGETS}/w", {"spec": {"size": 2}}).body
    assert w["metadata"]["generation"] == 2


def test_status_subresource_splits_writes(kube):
    kube.post(CRDS, widget_crd())
    body = widget("w", size=1)
    body["status"] = {"phase": "ignored-on-create"}
    w = kube.post(WIDGETS, body).body
    assert "status" not in w
    # PUT on the object ignores status...
    w["status"] = {"phase": "from-main"}
    w["spec"]["size"] = 2
    w = kube.put(f"{WIDGETS}/w", w).body
    assert w["spec"]["size"] == 2 and "status" not in w
    # ...and PUT on /status ignores everything but status.
    w["status"] = {"phase": "Running"}
    w["spec"]["size"] = 99
    w["metadata"]["labels"] = {"sneaky": "yes"}
    w = kube.put(f"{WIDGETS}/w/status", w).body
    assert w["status"] == {"phase": "Running"}
    assert w["spec"]["size"] == 2
    assert "labels" not in w["metadata"]
    # merge patch on /status likewise.
    w = kube.patch(f"{WIDGETS}/w/status", {"status": {"ready": True}, "spec": {"size": 7}}).body
    assert w["status"] == {"phase": "Running", "ready": True}
    assert w["spec"]["size"] == 2
    assert kube.get(f"{WIDGETS}/w/status").body["status"]["ready"] is True


def test_a_status_merge_patch_leaves_the_version_it_patched_as_stored(apiserver, kube):
    """A merge patch shares the stored object's managed fields instead of copying them, and a status write copies the
    stored object but its status and managed fields: the version patched stays what it was, object and bytes, and
    the new one keeps everything but status, in the stored order, with the status writer's fields."""
    kube.post(CRDS, widget_crd())
    kube.post(WIDGETS, widget("w", size=1, labels={"a": "b"}))
    kube.patch(f"{WIDGETS}/w/status", {"status": {"phase": "Pending", "ready": False}})
    rt = next(rt for rt in apiserver.registry.all() if rt.kind == "Widget")
    before = apiserver.store.get(rt.storage_key, ("default", "w"))
    as_read = json.loads(before.raw)
    assert before.obj == as_read
    rv = as_read["metadata"]["resourceVersion"]
    patched = kube.patch(f"{WIDGETS}/w/status", {"metadata": {"resourceVersion": rv},
                                                 "status": {"phase": "Running", "ready": None}})
    assert patched.status == 200, patched.body
    assert before.obj == as_read and json.loads(before.raw) == as_read   # the version patched, untouched
    w = patched.body
    assert w["status"] == {"phase": "Running"}
    assert list(w) == list(as_read) and list(w["metadata"]) == list(as_read["metadata"])
    assert {k: v for k, v in w.items() if k not in ("metadata", "status")} == \
        {k: v for k, v in as_read.items() if k not in ("metadata", "status")}
    assert w["metadata"]["labels"] == {"a": "b"}
    status_entries = [e for e in w["metadata"]["managedFields"] if e.get("subresource") == "status"]
    assert [e["fieldsV1"] for e in status_entries] == [{"f:status": {".": {}, "f:phase": {}}}]
    stored = apiserver.store.get(rt.storage_key, ("default", "w"))
    assert stored.obj == json.loads(stored.raw) == w


def test_status_subresource_absent_is_404(kube):
    kube.post(CRDS, widget_crd(status=False))
    kube.post(WIDGETS, widget("w"))
    assert kube.patch(f"{WIDGETS}/w/status", {"status": {}}).status == 404
    reply = kube.patch(f"{WIDGETS}/w", {"status": {"phase": "x"}})
    assert reply.body["status"] == {"phase": "x"}  # without /status, status is an ordinary field


def test_pod_create_sets_pending_status_and_defaults(kube):
    p = kube.post(PODS, pod("p")).body
    assert p["status"]["phase"] == "Pending"
    assert p["status"]["qosClass"] == "BestEffort"
    spec = p["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["terminationGracePeriodSeconds"] == 30
    c = spec["containers"][0]
    assert c["terminationMessagePolicy"] == "File"
    assert c["imagePullPolicy"] == "IfNotPresent"
    # A pod status write through the subresource is kept; through the object it is ignored.
    p["status"]["phase"] = "Running"
    assert kube.put(f"{PODS}/p", p).body["status"]["phase"] == "Pending"
    assert kube.put(f"{PODS}/p/status", p).body["status"]["phase"] == "Running"


def test_service_gets_a_cluster_ip_unless_headless(kube):
    svc = {"metadata": {"name": "s"}, "spec": {"selector": {"a": "b"}, "ports": [{"port": 80}]}}
    s = kube.post("/api/v1/namespaces/default/services", svc).body
    assert s["spec"]["clusterIP"].startswith("10.")
    assert s["spec"]["ports"][0] == {"port": 80, "protocol": "TCP", "targetPort": 80}
    headless = {"metadata": {"name": "h"}, "spec": {"clusterIP": "None", "ports": [{"port": 9091}]}}
    h = kube.post("/api/v1/namespaces/default/services", headless).body
    assert h["spec"]["clusterIP"] == "None" and h["spec"]["clusterIPs"] == ["None"]


def test_merge_patch(kube):
    kube.post(CMS, configmap("c", {"a": "1", "b": "2"}))
    reply = kube.patch(f"{CMS}/c", {"data": {"a": None, "c": "3"}, "metadata": {"labels": {"x": "y"}}})
    assert reply.status == 200
    assert reply.body["data"] == {"b": "2", "c": "3"}
    assert reply.body["metadata"]["labels"] == {"x": "y"}


def test_merge_patch_with_stale_resource_version_conflicts(kube):
    created = kube.post(CMS, configmap("c")).body
    kube.patch(f"{CMS}/c", {"data": {"a": "1"}})
    reply = kube.patch(f"{CMS}/c", {"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                                    "data": {"a": "2"}})
    assert reply.status == 409


def test_patch_of_missing_object_is_not_found(kube):
    reply = kube.patch(f"{CMS}/ghost", {"data": {}})
    assert reply.status == 404
    assert reply.body["message"] == 'configmaps "ghost" not found'


def test_delete_with_options_in_body_or_query(kube):
    c = kube.post(CMS, configmap("c")).body
    wrong = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-the-uid"}}
    reply = kube.delete(f"{CMS}/c", body=wrong)
    assert reply.status == 409
    assert reply.body["message"] == (
        'Operation cannot be fulfilled on ConfigMap "c": the UID in the precondition (not-the-uid) does not match '
        f'the UID in record ({c["metadata"]["uid"]}). The object might have been deleted and then recreated')
    right = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": c["metadata"]["uid"]}}
    reply = kube.delete(f"{CMS}/c", body=right)
    assert reply.status == 200
    assert reply.body["status"] == "Success"
    assert reply.body["details"]["uid"] == c["metadata"]["uid"]
    assert kube.get(f"{CMS}/c").status == 404
    kube.post(CMS, configmap("d"))
    assert kube.delete(f"{CMS}/d", propagationPolicy="Background").status == 200
    assert kube.delete(f"{CMS}/d").status == 404
    assert kube.delete(f"{CMS}/x", propagationPolicy="Sometimes").status in (404, 422)


def test_delete_returns_the_pod(kube):
    kube.post(PODS, pod("p"))
    reply = kube.delete(f"{PODS}/p")
    assert reply.status == 200
    assert reply.body["kind"] == "Pod" and reply.body["metadata"]["name"] == "p"


def test_dry_run_stores_nothing(kube):
    reply = kube.post(CMS, configmap("dry"), dryRun="All")
    assert reply.status == 201
    assert kube.get(f"{CMS}/dry").status == 404
    kube.post(CMS, configmap("c", {"a": "1"}))
    assert kube.put(f"{CMS}/c", configmap("c", {"a": "2"}), dryRun="All").body["data"] == {"a": "2"}
    assert kube.patch(f"{CMS}/c", {"data": {"a": "3"}}, dryRun="All").body["data"] == {"a": "3"}
    assert kube.delete(f"{CMS}/c", dryRun="All").status == 200
    assert kube.get(f"{CMS}/c").body["data"] == {"a": "1"}
    reply = kube.post(CMS, configmap("bad"), dryRun="Some")
    assert reply.status == 422
    assert reply.body["message"] == ('CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                     '["Some"]: supported values: "All"')


def test_pretty_output(kube):
    kube.post(CMS, configmap("c"))
    reply = kube.request("GET", f"{CMS}/c", query={"pretty": "true"})
    assert reply.status == 200 and reply.body["metadata"]["name"] == "c"
    raw = kube.api.rest_client.pool_manager.request("GET", kube.api.configuration.host + f"{CMS}/c?pretty=true")
    assert b'\n  "metadata": {' in raw.data


def test_cluster_scoped_objects(kube):
    reply = kube.post("/api/v1/namespaces", {"metadata": {"name": "team-a"}})
    assert reply.status == 201
    assert reply.body["status"]["phase"] == "Active"
    assert reply.body["metadata"]["labels"]["kubernetes.io/metadata.name"] == "team-a"
    assert kube.post("/api/v1/namespaces/team-a/configmaps", configmap("c", namespace="team-a")).status == 201
    for query in ({}, {"dryRun": "All"}):   # a generated name is labelled too (after it is generated)
        generated = kube.post("/api/v1/namespaces", {"metadata": {"generateName": "gen-"}}, **query).body
        assert generated["metadata"]["labels"] == {"kubernetes.io/metadata.name": generated["metadata"]["name"]}


def test_multi_version_crd_serves_the_same_objects(kube):
    kube.post(CRDS, widget_crd(versions=("v1", "v1beta1")))
    kube.post(WIDGETS, widget("w", size=3))
    beta = kube.get("/apis/example.com/v1beta1/namespaces/default/widgets/w").body
    assert beta["apiVersion"] == "example.com/v1beta1"
    assert beta["spec"]["size"] == 3
    kube.patch("/apis/example.com/v1beta1/namespaces/default/widgets/w", {"spec": {"size": 4}})
    assert kube.get(f"{WIDGETS}/w").body["spec"]["size"] == 4
    items = kube.get("/apis/example.com/v1beta1/widgets").body
    assert items["kind"] == "WidgetList" and items["apiVersion"] == "example.com/v1beta1"
    assert [i["apiVersion"] for i in items["items"]] == ["example.com/v1beta1"]


def test_deleting_a_crd_removes_its_objects(kube):
    kube.post(CRDS, widget_crd())
    kube.post(WIDGETS, widget("w"))
    assert kube.delete(f"{CRDS}/widgets.example.com").ok
    assert kube.get(WIDGETS).status == 404
    kube.post(CRDS, widget_crd())
    assert kube.get(WIDGETS).body["items"] == []


def _always_overtaken(apiserver, name: str, limit: int = 500):
    """Make every write of configmap ``name`` lose its compare-and-swap: between the request's read and its write
    (while the schema is checked) another writer commits. It stops after ``limit`` so a broken server still ends."""
    check = apiserver.rest.schema_validator
    overtaken = [0]

    def racing_check(rt, obj, ctx):
        if rt.plural == "configmaps" and (obj.get("metadata") or {}).get("name") == name and overtaken[0] < limit:
            overtaken[0] += 1
            current = apiserver.store.get(rt.storage_key, ("default", name))
            other = json.loads(current.raw)
            other["data"] = {"overtaken": str(overtaken[0])}
            apiserver.store.update(rt.storage_key, other, expect_rv=current.rv)
        return check(rt, obj, ctx)

    apiserver.rest.schema_validator = racing_check
    return overtaken


def test_update_without_resource_version_gives_up_as_kube_does(apiserver, kube):
    """An unconditional update retries lost compare-and-swaps, but not forever: kube's storage retries until the
    request deadline, then answers 504 Timeout."""
    kube.post(CMS, configmap("c"))
    overtaken = _always_overtaken(apiserver, "c")
    reply = kube.put(f"{CMS}/c", configmap("c", {"mine": "yes"}))
    assert reply.status == 504, reply.body
    assert reply.body["reason"] == "Timeout"
    assert reply.body["message"] == ("Timeout: request did not complete within requested timeout - "
                                     "context deadline exceeded")
    assert overtaken[0] == 64
    reply = kube.patch(f"{CMS}/c", {"data": {"mine": "yes"}})
    assert reply.status == 504 and reply.body["reason"] == "Timeout"
    assert overtaken[0] == 128
    assert "mine" not in kube.get(f"{CMS}/c").body["data"]


def test_a_status_write_that_keeps_losing_is_logged(apiserver, caplog):
    """The server's own status writes (namespaces, CRDs) give up after 16 lost races, and say so."""
    created = apiserver.create(configmap("s"))
    rt = apiserver.resource_for(created)
    real_get = apiserver.store.get

    def overtaken_get(key, okey):
        current = real_get(key, okey)
        if key == rt.storage_key and okey == ("default", "s") and current is not None:
            other = json.loads(current.raw)
            other["data"] = {"n": other["metadata"]["resourceVersion"]}
            apiserver.store.update(key, other, expect_rv=current.rv)  # another writer wins the race
        return current

    apiserver.store.get = overtaken_get
    try:
        with caplog.at_level("WARNING", logger="mxjob_controller.local.apiserver.rest"):
            assert apiserver.rest.update_status(rt, ("default", "s"), {"phase": "x"}, "m") is False
    finally:
        del apiserver.store.get
    assert any("gave up writing the status of configmaps default/s after 16" in r.getMessage()
               for r in caplog.records), caplog.text
