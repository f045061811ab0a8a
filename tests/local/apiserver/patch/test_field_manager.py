"""Server-side apply and ``metadata.managedFields``, through the real kubectl and the official client.

What kube-apiserver 1.32 answers: ``kubectl apply --server-side`` twice leaves the object untouched the second time;
two field managers conflict with a 409 naming the other manager and each field, and ``--force-conflicts`` moves the
fields; every create, update, patch and status write records its manager; client-side apply keeps working and can
be followed by a server-side one (kubectl migrates its fields).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mxjob_controller.kube.timefmt import now_rfc3339
from tests.crds import WIDGETS, widget, widget_crd
from tests.support import Kube, Kubectl, wait_for

CM = "/api/v1/namespaces/default/configmaps"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
ROOT = Path(__file__).resolve().parents[4]
MXJOB_CRD = ROOT / "manifests" / "crd" / "kubeflow.org_mxjobs.yaml"
MXJOB = ROOT / "examples" / "mxjob-single-worker.yaml"
APPLY = "application/apply-patch+yaml"

SETTINGS = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: demo}
data:
  mode: fast
  level: "3"
"""


def owners(obj: dict) -> list[tuple[str, str, str]]:
    return [(e["manager"], e["operation"], e.get("subresource", "")) for e in obj["metadata"].get("managedFields", [])]


def fields_of(obj: dict, manager: str, operation: str = "Apply") -> dict:
    return next(e["fieldsV1"] for e in obj["metadata"]["managedFields"]
                if e["manager"] == manager and e["operation"] == operation)


def test_kubectl_server_side_apply_of_a_configmap_twice_changes_nothing_the_second_time(kubectl: Kubectl,
                                                                                         kube: Kube) -> None:
    assert kubectl.ok("apply", "--server-side", "-f", "-", input=SETTINGS) == "configmap/settings serverside-applied\n"
    first = kube.get(f"{CM}/settings").body
    assert owners(first) == [("kubectl", "Apply", "")]
    assert first["metadata"]["managedFields"][0]["fieldsV1"] == {
        "f:data": {"f:level": {}, "f:mode": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    assert kubectl.ok("apply", "--server-side", "-f", "-", input=SETTINGS) == "configmap/settings serverside-applied\n"
    assert kube.get(f"{CM}/settings").body == first   # same resourceVersion, same times


def test_kubectl_server_side_apply_of_an_mxjob_twice(kubectl: Kubectl, kube: Kube) -> None:
    kubectl.ok("apply", "--server-side", "-f", str(MXJOB_CRD))   # the CRD itself, a deep recursive schema
    kubectl.ok("wait", "--for", "condition=established", "crd/mxjobs.kubeflow.org", "--timeout=10s")
    applied = kubectl.ok("apply", "--server-side", "-f", str(MXJOB))
    assert applied == "mxjob.kubeflow.org/mxnet-single serverside-applied\n"
    path = "/apis/kubeflow.org/v1/namespaces/default/mxjobs/mxnet-single"
    first = kube.get(path).body
    assert owners(first) == [("kubectl", "Apply", "")]
    worker = fields_of(first, "kubectl")["f:spec"]["f:mxReplicaSpecs"]["f:Worker"]
    assert "f:containers" in worker["f:template"]["f:spec"]
    assert "f:replicas" not in worker   # a default the server filled in: nobody applied it
    kubectl.ok("apply", "--server-side", "-f", str(MXJOB))
    assert kube.get(path).body == first
    # editing the manifest changes the object, and only the applier's time moves
    edited = yaml.safe_load(MXJOB.read_text())
    edited["spec"]["runPolicy"] = {"backoffLimit": 2}
    kubectl.ok("apply", "--server-side", "-f", "-", input=json.dumps(edited))
    after = kube.get(path).body
    assert after["spec"]["runPolicy"]["backoffLimit"] == 2
    assert int(after["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    assert "f:runPolicy" in fields_of(after, "kubectl")["f:spec"]


def test_two_field_managers_conflict_until_one_forces(kubectl: Kubectl, kube: Kube) -> None:
    kubectl.ok("apply", "--server-side", "-f", "-", input=SETTINGS)
    theirs = SETTINGS.replace("mode: fast", "mode: safe")
    proc = kubectl.run("apply", "--server-side", "--field-manager", "ops", "-f", "-", input=theirs)
    assert proc.returncode == 1
    assert proc.stderr.startswith('error: Apply failed with 1 conflict: conflict with "kubectl": .data.mode\n'
                                  "Please review the fields above--they currently have other managers.")
    assert "--force-conflicts" in proc.stderr
    # the API's answer: a 409 with one cause per field
    body = yaml.safe_load(theirs)
    reply = kube.patch(f"{CM}/settings", body, APPLY, fieldManager="ops")
    assert (reply.status, reply.body["reason"]) == (409, "Conflict")
    assert reply.body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "kubectl"', "field": ".data.mode"}]
    # forced: the field moves to ops, the rest stays with kubectl
    kubectl.ok("apply", "--server-side", "--field-manager", "ops", "--force-conflicts", "-f", "-", input=theirs)
    cm = kube.get(f"{CM}/settings").body
    assert cm["data"]["mode"] == "safe"
    assert fields_of(cm, "kubectl") == {"f:data": {"f:level": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    assert fields_of(cm, "ops") == {"f:data": {"f:level": {}, "f:mode": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    # now kubectl's old value conflicts with ops; an Update manager is named with its apiVersion
    proc = kubectl.run("apply", "--server-side", "-f", "-", input=SETTINGS)
    assert 'conflict with "ops": .data.mode' in proc.stderr
    kubectl.ok("patch", "configmap", "settings", "-p", '{"data":{"level":"4"}}')
    reply = kube.patch(f"{CM}/settings", yaml.safe_load(SETTINGS), APPLY, fieldManager="kubectl")
    assert reply.body["message"] == ('Apply failed with 2 conflicts: conflicts with "kubectl-patch" using v1:\n'
                                     '- .data.level\nconflicts with "ops":\n- .data.mode')


def test_apply_removes_what_its_manager_stopped_applying(kubectl: Kubectl, kube: Kube) -> None:
    kubectl.ok("apply", "--server-side", "-f", "-", input=SETTINGS)
    kubectl.ok("patch", "configmap", "settings", "-p", '{"data":{"extra":"kept"}}')
    kubectl.ok("apply", "--server-side", "-f", "-", input=SETTINGS.replace('  level: "3"\n', ""))
    cm = kube.get(f"{CM}/settings").body
    assert cm["data"] == {"mode": "fast", "extra": "kept"}   # level pruned; extra belongs to kubectl-patch


def test_client_side_apply_then_server_side_apply(kubectl: Kubectl, kube: Kube) -> None:
    assert kubectl.ok("apply", "-f", "-", input=SETTINGS) == "configmap/settings created\n"
    cm = kube.get(f"{CM}/settings").body
    assert owners(cm) == [("kubectl-client-side-apply", "Update", "")]
    assert kubectl.ok("apply", "-f", "-", input=SETTINGS) == "configmap/settings unchanged\n"
    # kubectl moves the client-side fields to its server-side manager first, so there is no conflict
    kubectl.ok("apply", "--server-side", "-f", "-", input=SETTINGS.replace("mode: fast", "mode: safe"))
    cm = kube.get(f"{CM}/settings").body
    assert cm["data"]["mode"] == "safe"
    assert ("kubectl", "Apply", "") in owners(cm)


def test_every_write_records_its_manager(kube: Kube) -> None:
    assert kube.post(CRDS, widget_crd()).status == 201
    wait_for(lambda: kube.get(WIDGETS).status == 200, what="widgets served")
    assert kube.post(WIDGETS, widget("w1")).status == 201
    w = kube.get(f"{WIDGETS}/w1").body
    assert owners(w) == [("mxjob-tests", "Update", "")]   # the User-Agent up to its first "/"
    assert w["metadata"]["managedFields"][0]["fieldsV1"] == {"f:spec": {".": {}, "f:size": {}}}
    w["spec"]["color"] = "red"
    assert kube.put(f"{WIDGETS}/w1", w, fieldManager="painter").status == 200
    assert kube.put(f"{WIDGETS}/w1/status", {**kube.get(f"{WIDGETS}/w1").body, "status": {"ready": True}},
                    fieldManager="reporter").status == 200
    assert kube.patch(f"{WIDGETS}/w1", {"spec": {"size": 3}}, fieldManager="resizer").status == 200
    w = kube.get(f"{WIDGETS}/w1").body
    assert owners(w) == [("mxjob-tests", "Update", ""), ("painter", "Update", ""), ("reporter", "Update", "status"),
                         ("resizer", "Update", "")]
    by = {e["manager"]: e["fieldsV1"] for e in w["metadata"]["managedFields"]}
    assert by["mxjob-tests"] == {"f:spec": {}}   # size went to the resizer
    assert by["painter"] == {"f:spec": {"f:color": {}}}
    assert by["reporter"] == {"f:status": {".": {}, "f:ready": {}}}
    assert by["resizer"] == {"f:spec": {"f:size": {}}}


def test_managed_fields_can_be_cleared_and_come_back_with_an_apply(kube: Kube) -> None:
    assert kube.post(CM, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                          "data": {"a": "1"}}).status == 201
    cleared = kube.patch(f"{CM}/c", {"metadata": {"managedFields": [{}]}}).body
    assert "managedFields" not in cleared["metadata"]
    # an untracked object stays untracked through updates...
    assert "managedFields" not in kube.patch(f"{CM}/c", {"data": {"a": "2"}}).body["metadata"]
    # ...until an apply: what it held so far goes to before-first-apply
    applied = kube.patch(f"{CM}/c", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                     "data": {"b": "x"}}, APPLY, fieldManager="tool").body
    assert applied["data"] == {"a": "2", "b": "x"}
    assert owners(applied) == [("tool", "Apply", ""), ("before-first-apply", "Update", "")]


@pytest.mark.parametrize("body, query, code, message", [
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, {}, 422,
     'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, {"fieldManager": "x" * 129}, 422,
     'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes'),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "managedFields": []}},
     {"fieldManager": "m"}, 400, "metadata.managedFields must be nil"),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}, {"fieldManager": "m"}, 400,
     "invalid object type: /v1, Kind=Secret"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dataa": {}}, {"fieldManager": "m"}, 500,
     "failed to create typed patch object (/c; /v1, Kind=ConfigMap): .dataa: field not declared in schema"),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}, {"fieldManager": "m"}, 400,
     "the name of the object (other) does not match the name on the URL (c)"),
])
def test_refused_applies_say_what_kube_says(kube: Kube, body: dict, query: dict, code: int, message: str) -> None:
    reply = kube.patch(f"{CM}/c", body, APPLY, **query)
    assert (reply.status, reply.body["message"]) == (code, message)
    assert kube.get(f"{CM}/c").status == 404


def test_force_is_only_for_apply_and_an_apply_creates(kube: Kube) -> None:
    reply = kube.patch(f"{CM}/c", {"data": {}}, force="true")
    assert (reply.status, reply.body["message"]) == (
        422, 'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch')
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    dry = kube.patch(f"{CM}/c", config, APPLY, fieldManager="m", dryRun="All")
    assert dry.status == 201 and kube.get(f"{CM}/c").status == 404
    created = kube.patch(f"{CM}/c", config, APPLY, fieldManager="m")
    assert created.status == 201 and owners(created.body) == [("m", "Apply", "")]
    assert kube.patch(f"{CM}/c", config, APPLY, fieldManager="m").status == 200


def test_an_applied_pod_owns_only_what_it_sent(kube: Kube) -> None:
    config = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
              "spec": {"containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]}]}}
    pod = kube.patch("/api/v1/namespaces/default/pods/p", config, APPLY, fieldManager="m").body
    assert pod["spec"]["containers"][0]["terminationMessagePath"] == "/dev/termination-log"   # defaulted
    assert fields_of(pod, "m") == {"f:spec": {"f:containers": {'k:{"name":"c"}': {
        ".": {}, "f:image": {}, "f:name": {},
        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}}}}}}


def test_an_apply_whose_only_news_is_a_reset_field_writes_nothing(kube: Kube) -> None:
    assert kube.post(CRDS, widget_crd()).status == 201
    wait_for(lambda: kube.get(WIDGETS).status == 200, what="widgets served")
    config = {**widget("w1"), "status": {"ready": True}}   # status goes through /status: the main resource resets it
    first = kube.patch(f"{WIDGETS}/w1", config, APPLY, fieldManager="m").body
    assert "status" not in first and fields_of(first, "m") == {"f:spec": {"f:size": {}}}
    config["status"] = {"ready": False}
    stamped = first["metadata"]["managedFields"][0]["time"]
    wait_for(lambda: now_rfc3339() != stamped, what="the next second")   # so a new time would show
    again = kube.patch(f"{WIDGETS}/w1", config, APPLY, fieldManager="m").body
    assert again == first   # same resourceVersion, same times


# What kube-apiserver 1.32 records for these creates: defaulting happens while the request is decoded, before the
# field manager looks at it, so the creating manager owns the defaulted fields (imagePullPolicy, dnsPolicy, ...);
# what admission plugins add afterwards (serviceAccountName, priority, tolerations) and what the registry allocates
# (clusterIP) nobody owns.
KUBECTL_RUN_FIELDS = {
    "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
    "f:spec": {
        "f:containers": {'k:{"name":"web"}': {
            ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
            "f:ports": {".": {}, 'k:{"containerPort":80,"protocol":"TCP"}': {
                ".": {}, "f:containerPort": {}, "f:protocol": {}}},
            "f:resources": {}, "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
        "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
        "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}


def test_a_creating_manager_owns_the_defaulted_fields_as_in_kube(kubectl: Kubectl, kube: Kube) -> None:
    kubectl.ok("run", "web", "--image=nginx", "--port=80")
    pod = json.loads(kubectl.ok("get", "pod", "web", "-o", "json", "--show-managed-fields"))
    assert owners(pod) == [("kubectl-run", "Update", "")]
    assert fields_of(pod, "kubectl-run", "Update") == KUBECTL_RUN_FIELDS
    assert pod["spec"]["serviceAccountName"] == "default" and pod["spec"]["tolerations"]   # there, unowned

    kubectl.ok("create", "namespace", "team-a")
    ns = json.loads(kubectl.ok("get", "namespace", "team-a", "-o", "json", "--show-managed-fields"))
    assert fields_of(ns, "kubectl-create", "Update") == {
        "f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}

    kubectl.ok("create", "service", "clusterip", "web", "--tcp=80:8080")
    svc = json.loads(kubectl.ok("get", "service", "web", "-o", "json", "--show-managed-fields"))
    assert fields_of(svc, "kubectl-create", "Update") == {
        "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:internalTrafficPolicy": {},
                   "f:ports": {".": {}, 'k:{"port":80,"protocol":"TCP"}': {
                       ".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
                   "f:selector": {}, "f:sessionAffinity": {}, "f:type": {}}}


def test_an_update_that_leaves_a_field_to_its_default_changes_nothing_of_it(kube: Kube) -> None:
    """A PUT without the defaulted fields is defaulted before it is compared: the creator keeps them, and the
    updater owns only what it changed."""
    svc = "/api/v1/namespaces/default/services"
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "s"}, "ports": [{"port": 80}]}}
    created = kube.post(svc, body, fieldManager="maker").body
    assert fields_of(created, "maker", "Update")["f:spec"]["f:sessionAffinity"] == {}
    put = {**body, "metadata": {"name": "s", "resourceVersion": created["metadata"]["resourceVersion"],
                                "labels": {"tier": "web"}},
           "spec": {**body["spec"], "clusterIP": created["spec"]["clusterIP"]}}
    updated = kube.put(f"{svc}/s", put, fieldManager="editor").body
    assert fields_of(updated, "maker", "Update") == fields_of(created, "maker", "Update")
    assert fields_of(updated, "editor", "Update") == {"f:metadata": {"f:labels": {".": {}, "f:tier": {}}}}


def test_the_servers_own_status_writes_are_recorded_as_kube_records_them(kube: Kube) -> None:
    """A CRD's conditions and accepted names are written by kube-apiserver itself: a status Update entry."""
    assert kube.post(CRDS, widget_crd(), fieldManager="installer").status == 201
    name = widget_crd()["metadata"]["name"]
    wait_for(lambda: any(c["type"] == "Established" and c["status"] == "True"
                         for c in kube.get(f"{CRDS}/{name}").body.get("status", {}).get("conditions", [])),
             what="the CRD established")
    crd = kube.get(f"{CRDS}/{name}").body
    assert owners(crd) == [("installer", "Update", ""), ("kube-apiserver", "Update", "status")]
    condition = {".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}}
    assert fields_of(crd, "kube-apiserver", "Update") == {"f:status": {   # kube 1.32's, field for field
        "f:acceptedNames": {"f:categories": {}, "f:kind": {}, "f:listKind": {}, "f:plural": {}, "f:shortNames": {},
                            "f:singular": {}},
        "f:conditions": {'k:{"type":"Established"}': condition, 'k:{"type":"NamesAccepted"}': condition}}}
    assert crd["status"]["storedVersions"] == ["v1"]


def test_a_created_deployment_is_defaulted_and_its_creator_owns_the_defaults(kubectl: Kubectl) -> None:
    kubectl.ok("create", "deployment", "web", "--image=nginx")
    deploy = json.loads(kubectl.ok("get", "deployment", "web", "-o", "json", "--show-managed-fields"))
    spec = deploy["spec"]
    assert (spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (1, 10, 600)
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    template = spec["template"]["spec"]
    assert template["dnsPolicy"] == "ClusterFirst" and template["schedulerName"] == "default-scheduler"
    assert "enableServiceLinks" not in template   # SetDefaults_Pod's, not a template's
    assert template["containers"][0]["imagePullPolicy"] == "Always" and deploy["status"] == {}
    labels = {"f:labels": {".": {}, "f:app": {}}}
    assert fields_of(deploy, "kubectl-create", "Update") == {   # kube 1.32's, field for field
        "f:metadata": labels,
        "f:spec": {
            "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {}, "f:selector": {},
            "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
            "f:template": {"f:metadata": labels, "f:spec": {
                "f:containers": {'k:{"name":"nginx"}': {
                    ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {},
                    "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {}}}}}
