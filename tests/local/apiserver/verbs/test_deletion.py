"""DELETE as kube-apiserver answers it: options from body or query, preconditions, finalizers, graceful pod
deletion, deletecollection with selectors. Everything through the official client, over HTTP."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from mxjob_controller.kube.timefmt import parse_time, plus_go_seconds
from tests.support import configmap, pod

NS = "default"
CMS = f"/api/v1/namespaces/{NS}/configmaps"
PODS = f"/api/v1/namespaces/{NS}/pods"
HOLD = "example.com/hold"


def held_configmap(name: str, **labels: str) -> dict:
    body = configmap(name, {"k": "v"}, labels=labels)
    body["metadata"]["finalizers"] = [HOLD]
    return body


def core(kube) -> client.CoreV1Api:
    return client.CoreV1Api(kube.api)


# --- plain deletes and their answers ---------------------------------------------------------------------

def test_a_configmap_goes_at_once_and_the_answer_is_a_success_status(kube):
    created = kube.post(CMS, configmap("c")).body
    reply = kube.delete(f"{CMS}/c")
    assert reply.status == 200
    assert reply.body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                          "details": {"name": "c", "kind": "configmaps", "uid": created["metadata"]["uid"]}}
    assert kube.get(f"{CMS}/c").status == 404
    assert kube.delete(f"{CMS}/c").body["message"] == 'configmaps "c" not found'


def test_invalid_delete_options_are_422_on_delete_options(kube):
    kube.post(CMS, configmap("c"))
    reply = kube.delete(f"{CMS}/c", propagationPolicy="Sometimes")
    assert reply.status == 422
    assert reply.body["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported '
                                     'value: "Sometimes": supported values: "Foreground", "Background", "Orphan", '
                                     '"nil"')
    assert reply.body["details"]["causes"][0]["reason"] == "FieldValueNotSupported"
    both = {"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": True, "propagationPolicy": "Orphan"}
    reply = kube.delete(f"{CMS}/c", body=both)
    assert reply.status == 422
    assert reply.body["message"] == ('DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Invalid value: '
                                     '"Orphan": orphanDependents and deletionPropagation cannot be both set')
    assert kube.delete(f"{CMS}/c", dryRun="Some").status == 422
    reply = kube.delete(f"{CMS}/c", body={"gracePeriodSeconds": "soon"})
    assert reply.status == 400
    assert reply.body["message"] == ("json: cannot unmarshal string into Go struct field "
                                     "DeleteOptions.gracePeriodSeconds of type int64")
    assert kube.get(f"{CMS}/c").status == 200, "nothing was deleted by a rejected request"


def test_options_come_from_the_body_when_there_is_one_else_from_the_query(kube):
    kube.post(CMS, held_configmap("c"))
    body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan"}
    reply = kube.delete(f"{CMS}/c", body=body, propagationPolicy="Foreground")
    assert reply.status == 200
    assert reply.body["metadata"]["finalizers"] == [HOLD, "orphan"], "the body wins; the query is ignored"
    kube.post(CMS, held_configmap("d"))
    reply = kube.delete(f"{CMS}/d", propagationPolicy="Foreground")
    assert reply.body["metadata"]["finalizers"] == [HOLD, "foregroundDeletion"]


def test_preconditions_uid_and_resource_version(kube):
    api = core(kube)
    c = kube.post(CMS, configmap("c")).body
    uid, rv = c["metadata"]["uid"], c["metadata"]["resourceVersion"]
    with pytest.raises(client.ApiException) as e:
        api.delete_namespaced_config_map("c", NS, body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid="not-the-uid")))
    assert e.value.status == 409
    status = json.loads(e.value.body)
    assert status["reason"] == "Conflict"
    assert status["message"] == (f'Operation cannot be fulfilled on ConfigMap "c": the UID in the precondition '
                                 f"(not-the-uid) does not match the UID in record ({uid}). The object might have "
                                 "been deleted and then recreated")
    reply = kube.delete(f"{CMS}/c", body={"preconditions": {"resourceVersion": "1"}})
    assert reply.status == 409
    assert reply.body["message"] == (f'Operation cannot be fulfilled on ConfigMap "c": the ResourceVersion in the '
                                     f"precondition (1) does not match the ResourceVersion in record ({rv}). The "
                                     "object might have been modified")
    api.delete_namespaced_config_map("c", NS, body=client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=uid, resource_version=rv)))
    assert kube.get(f"{CMS}/c").status == 404


# --- finalizers -------------------------------------------------------------------------------------------

def test_finalizers_keep_the_object_until_the_last_one_goes(kube):
    kube.post(CMS, held_configmap("c"))
    events = kube.watch(CMS, timeout=20, resourceVersion=kube.get(CMS).body["metadata"]["resourceVersion"])
    reply = kube.delete(f"{CMS}/c")
    assert reply.status == 200
    deleting = reply.body
    assert deleting["kind"] == "ConfigMap", "an object that stays is answered with the object, not a Status"
    assert deleting["metadata"]["deletionTimestamp"]
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 0
    assert kube.get(f"{CMS}/c").body["metadata"]["deletionTimestamp"] == deleting["metadata"]["deletionTimestamp"]
    again = kube.delete(f"{CMS}/c")
    assert again.status == 200
    assert again.body["metadata"]["resourceVersion"] == deleting["metadata"]["resourceVersion"], "no new write"
    recreate = kube.post(CMS, configmap("c"))
    assert recreate.status == 409 and recreate.body["reason"] == "AlreadyExists"
    assert kube.patch(f"{CMS}/c", {"metadata": {"finalizers": None}}).status == 200
    assert kube.get(f"{CMS}/c").status == 404
    assert [e["type"] for e in _take(events, 2)] == ["MODIFIED", "DELETED"]
    assert kube.post(CMS, configmap("c")).status == 201, "the name is free once the object is gone"


def test_orphan_dependents_false_is_answered_202_while_the_object_stays(kube):
    kube.post(CMS, held_configmap("c"))
    reply = kube.delete(f"{CMS}/c", body={"orphanDependents": False})
    assert reply.status == 202
    assert reply.body["metadata"]["deletionTimestamp"]
    kube.post(CMS, configmap("d"))
    assert kube.delete(f"{CMS}/d", orphanDependents="false").status == 200, "gone at once: 200"


def test_update_that_removes_finalizers_of_a_live_object_keeps_it(kube):
    kube.post(CMS, held_configmap("c"))
    assert kube.patch(f"{CMS}/c", {"metadata": {"finalizers": None}}).status == 200
    assert kube.get(f"{CMS}/c").status == 200


# --- graceful pod deletion ---------------------------------------------------------------------------------

def bound_pod(name: str, grace: int | None = None) -> dict:
    body = pod(name, nodeName="node-1")
    if grace is not None:
        body["spec"]["terminationGracePeriodSeconds"] = grace
    return body


def test_a_bound_pod_is_deleted_gracefully_and_its_name_is_taken_until_confirmed(kube):
    api = core(kube)
    kube.post(PODS, bound_pod("p"))
    before = time.time()
    deleting = api.delete_namespaced_pod("p", NS, _preload_content=False)
    body = _json(deleting)
    assert deleting.status == 200 and body["kind"] == "Pod"
    meta = body["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30, "spec.terminationGracePeriodSeconds (defaulted to 30)"
    assert before + 29 <= parse_time(meta["deletionTimestamp"]) <= time.time() + 31
    assert kube.get(f"{PODS}/p").body["metadata"]["deletionTimestamp"] == meta["deletionTimestamp"]

    with pytest.raises(client.ApiException) as e:
        api.create_namespaced_pod(NS, pod("p"))
    assert e.value.status == 409 and json.loads(e.value.body)["reason"] == "AlreadyExists"

    again = kube.delete(f"{PODS}/p")
    assert again.status == 200
    assert again.body["metadata"]["resourceVersion"] == meta["resourceVersion"], "a pending deletion is not redone"
    longer = kube.delete(f"{PODS}/p", gracePeriodSeconds=60)
    assert longer.body["metadata"]["deletionGracePeriodSeconds"] == 30, "a grace period can only be shortened"

    shorter = kube.delete(f"{PODS}/p", gracePeriodSeconds=10).body
    assert shorter["metadata"]["deletionGracePeriodSeconds"] == 10
    moved = parse_time(meta["deletionTimestamp"]) - parse_time(shorter["metadata"]["deletionTimestamp"])
    assert 19 <= moved <= 21, "the deletion timestamp moves back by the 20 seconds taken off"
    assert kube.get(f"{PODS}/p").status == 200

    api.delete_namespaced_pod("p", NS, grace_period_seconds=0)  # the node confirms
    assert kube.get(f"{PODS}/p").status == 404
    assert api.create_namespaced_pod(NS, pod("p")).metadata.name == "p"


def test_the_request_grace_period_wins_over_the_pods_own(kube):
    kube.post(PODS, bound_pod("p", grace=5))
    assert kube.delete(f"{PODS}/p").body["metadata"]["deletionGracePeriodSeconds"] == 5
    kube.post(PODS, bound_pod("q", grace=5))
    assert kube.delete(f"{PODS}/q", body={"gracePeriodSeconds": 2}).body["metadata"][
        "deletionGracePeriodSeconds"] == 2
    kube.post(PODS, bound_pod("r"))
    assert kube.delete(f"{PODS}/r", gracePeriodSeconds=-5).body["metadata"]["deletionGracePeriodSeconds"] == 1


INT64_MAX = 9223372036854775807


@pytest.mark.parametrize(("seconds", "moved"), [
    (10, 10.0), (9223372036, 9223372036.0), (INT64_MAX, -1.0), (9223372037, -9223372036.709551616),
    (-INT64_MAX - 1, 0.0), (-10, -10.0)])
def test_grace_seconds_wrap_as_go_durations_do(seconds, moved):
    assert plus_go_seconds(1000.0, seconds) == pytest.approx(1000.0 + moved)


@pytest.mark.parametrize("how", ["pod", "query", "body", "kubectl"])
def test_any_int64_grace_period_is_stored_and_timed_as_kube_does(kube, kubectl, how):
    """kube-apiserver computes ``now + time.Second * time.Duration(grace)`` in Go: the product wraps at int64
    nanoseconds, so the int64 maximum gives a deletion timestamp one second in the past, never a 500."""
    kube.post(PODS, bound_pod("p", grace=INT64_MAX if how == "pod" else 30))
    assert kube.get(f"{PODS}/p").body["spec"]["terminationGracePeriodSeconds"] == (INT64_MAX if how == "pod" else 30)
    before = time.time()
    if how == "kubectl":
        kubectl.ok("delete", "pod", "p", f"--grace-period={INT64_MAX}", "--wait=false")
        reply = kube.get(f"{PODS}/p")
    else:
        reply = kube.delete(f"{PODS}/p", **({"gracePeriodSeconds": INT64_MAX} if how == "query" else {}),
                            body={"gracePeriodSeconds": INT64_MAX} if how == "body" else None)
    assert reply.status == 200, reply.body
    meta = reply.body["metadata"]
    assert meta["deletionGracePeriodSeconds"] == INT64_MAX
    assert before - 2 <= parse_time(meta["deletionTimestamp"]) <= time.time(), "now minus the wrapped 1 s"
    shorter = kube.delete(f"{PODS}/p", gracePeriodSeconds=10).body["metadata"]
    assert shorter["deletionGracePeriodSeconds"] == 10
    assert before + 9 <= parse_time(shorter["deletionTimestamp"]) <= time.time() + 11, "the same Go arithmetic back"
    assert kube.delete(f"{PODS}/p", gracePeriodSeconds=0).status == 200
    assert kube.get(f"{PODS}/p").status == 404


def test_grace_periods_beyond_int64_are_400_as_go_parses_them(kube):
    kube.post(PODS, bound_pod("p"))
    too_big = INT64_MAX + 1
    for query, message in [(str(too_big), f'strconv.ParseInt: parsing "{too_big}": value out of range'),
                           (str(-too_big - 1), f'strconv.ParseInt: parsing "{-too_big - 1}": value out of range'),
                           ("1_0", 'strconv.ParseInt: parsing "1_0": invalid syntax'),
                           (" 5", 'strconv.ParseInt: parsing " 5": invalid syntax')]:
        reply = kube.delete(f"{PODS}/p", gracePeriodSeconds=query)
        assert (reply.status, reply.body["message"]) == (400, message)
    reply = kube.delete(f"{PODS}/p", body={"gracePeriodSeconds": too_big})
    assert (reply.status, reply.body["message"]) == (400, f"json: cannot unmarshal number {too_big} into Go struct "
                                                          "field DeleteOptions.gracePeriodSeconds of type int64")
    reply = kube.post(PODS, bound_pod("q", grace=too_big))
    assert reply.status == 422 and "spec.terminationGracePeriodSeconds" in reply.body["message"]
    assert kube.delete(f"{PODS}/p", gracePeriodSeconds="+3").body["metadata"]["deletionGracePeriodSeconds"] == 3


def test_unbound_and_finished_pods_go_at_once(kube):
    kube.post(PODS, pod("unbound"))
    events = kube.watch(PODS, timeout=20, resourceVersion=kube.get(PODS).body["metadata"]["resourceVersion"])
    reply = kube.delete(f"{PODS}/unbound")
    assert reply.status == 200 and reply.body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert kube.get(f"{PODS}/unbound").status == 404
    seen = _take(events, 2)
    assert [e["type"] for e in seen] == ["MODIFIED", "DELETED"], "kube writes the deletion mark, then removes"
    assert seen[0]["object"]["metadata"]["deletionTimestamp"]

    kube.post(PODS, bound_pod("done"))
    kube.patch(f"{PODS}/done/status", {"status": {"phase": "Succeeded"}})
    assert kube.delete(f"{PODS}/done").status == 200
    assert kube.get(f"{PODS}/done").status == 404


def test_a_graceful_pod_with_finalizers_waits_for_both(kube):
    body = bound_pod("p")
    body["metadata"]["finalizers"] = [HOLD]
    kube.post(PODS, body)
    kube.delete(f"{PODS}/p")
    assert kube.patch(f"{PODS}/p", {"metadata": {"finalizers": None}}).status == 200
    assert kube.get(f"{PODS}/p").status == 200, "finalizers gone, but the grace period is still running"
    kube.patch(f"{PODS}/p", {"metadata": {"finalizers": [HOLD]}})
    confirmed = kube.delete(f"{PODS}/p", gracePeriodSeconds=0)
    assert confirmed.status == 200 and confirmed.body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert kube.get(f"{PODS}/p").status == 200, "grace 0, but a finalizer remains"
    kube.patch(f"{PODS}/p", {"metadata": {"finalizers": None}})
    assert kube.get(f"{PODS}/p").status == 404


def test_dry_run_delete_changes_nothing(kube):
    kube.post(PODS, bound_pod("p"))
    reply = kube.delete(f"{PODS}/p", dryRun="All")
    assert reply.status == 200 and reply.body["metadata"]["deletionTimestamp"]
    assert "deletionTimestamp" not in kube.get(f"{PODS}/p").body["metadata"]
    kube.post(CMS, configmap("c"))
    assert kube.delete(f"{CMS}/c", body={"dryRun": ["All"]}).body["status"] == "Success"
    assert kube.get(f"{CMS}/c").status == 200


# --- deletecollection --------------------------------------------------------------------------------------

def test_deletecollection_with_label_and_field_selectors(kube):
    for name, app in (("a1", "a"), ("a2", "a"), ("b1", "b")):
        kube.post(CMS, configmap(name, labels={"app": app}))
    kube.post(CMS, held_configmap("a3", app="a"))
    reply = kube.delete(CMS, labelSelector="app=a")
    assert reply.status == 200
    assert reply.body["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in reply.body["items"]] == ["a1", "a2", "a3"]
    left = {i["metadata"]["name"]: i["metadata"] for i in kube.get(CMS).body["items"]}
    assert set(left) == {"a3", "b1"}
    assert left["a3"]["deletionTimestamp"] and "deletionTimestamp" not in left["b1"]
    core(kube).delete_collection_namespaced_config_map(NS, field_selector="metadata.name=b1")
    assert set(i["metadata"]["name"] for i in kube.get(CMS).body["items"]) == {"a3"}


def test_deletecollection_of_pods_is_graceful_for_bound_ones(kube):
    kube.post(PODS, bound_pod("bound"))
    kube.post(PODS, pod("unbound"))
    assert kube.delete(PODS, gracePeriodSeconds=7).status == 200
    items = kube.get(PODS).body["items"]
    assert [(i["metadata"]["name"], i["metadata"]["deletionGracePeriodSeconds"]) for i in items] == [("bound", 7)]


# ---------------------------------------------------------------------------------------------------------

def _take(events, n: int) -> list[dict]:
    out = []
    for ev in events:
        if ev["type"] != "BOOKMARK":
            out.append(ev)
        if len(out) == n:
            break
    return out


def _json(resp) -> dict:
    return json.loads(resp.data)
