"""The built-in kinds served since issue 47, each answer as kube-apiserver 1.32 gives it (kube's source named where a
rule comes from): discovery, defaults (``SetDefaults_*``), validation from Kubernetes' schema, the status and
scale subresources, printing (``pkg/printers/internalversion``), protobuf, server-side apply's list types, garbage
collection, and the kinds stored under another version or group (HPA v1/v2, events.k8s.io)."""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.kube.timefmt import parse_time
from mxjob_controller.local.apiserver.encoding import kubeproto
from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.runtime.client.budget import FLOW_SCHEMA_HEADER
from tests.support import Kube, wait_for

NS = "/namespaces/default"
PROTOBUF = "application/vnd.kubernetes.protobuf"
TEMPLATE = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}
SELECTOR = {"matchLabels": {"app": "a"}}


def obj(api_version: str, kind: str, name: str = "x", **fields: Any) -> dict:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **fields}


class _AnyTime:
    """Equal to any RFC 3339 time (a field kube sets to now)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and parse_time(other) is not None

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "<any RFC 3339 time>"


ANY_TIME = _AnyTime()


def path(api_version: str, plural: str, namespaced: bool = True) -> str:
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    return base + (NS if namespaced else "") + f"/{plural}"


# --- discovery ---------------------------------------------------------------------------------------------------

def test_discovery_of_apps_as_kube_lists_it(kube: Kube) -> None:
    """``APIResourceList`` of apps/v1: resources and subresources sorted by name (go-restful's installer sorts the
    paths), ``scale`` in autoscaling/v1, the ``all`` category on the workloads."""
    resources = {r["name"]: r for r in kube.get("/apis/apps/v1").body["resources"]}
    assert list(resources) == sorted(resources)
    assert resources["statefulsets"] == {"name": "statefulsets", "singularName": "statefulset", "namespaced": True,
                                         "kind": "StatefulSet", "verbs": ["create", "delete", "deletecollection",
                                                                          "get", "list", "patch", "update", "watch"],
                                         "shortNames": ["sts"], "categories": ["all"]}
    assert resources["statefulsets/scale"] == {"name": "statefulsets/scale", "singularName": "", "namespaced": True,
                                               "group": "autoscaling", "version": "v1", "kind": "Scale",
                                               "verbs": ["get", "patch", "update"]}
    assert resources["daemonsets/status"]["verbs"] == ["get", "patch", "update"]
    assert "daemonsets/scale" not in resources and "controllerrevisions/status" not in resources
    core = {r["name"]: r for r in kube.get("/api/v1").body["resources"]}
    assert core["replicationcontrollers/scale"]["kind"] == "Scale"
    assert core["namespaces"]["verbs"] == ["create", "delete", "get", "list", "patch", "update", "watch"]
    certificates = {r["name"]: r for r in kube.get("/apis/certificates.k8s.io/v1").body["resources"]}
    assert certificates["certificatesigningrequests/approval"]["verbs"] == ["get", "patch", "update"]
    groups = {g["name"]: g for g in kube.get("/apis").body["groups"]}
    assert groups["autoscaling"]["preferredVersion"]["version"] == "v2"
    assert [v["version"] for v in groups["autoscaling"]["versions"]] == ["v2", "v1"]


# --- defaults ------------------------------------------------------------------------------------------------------

DEFAULTS = [
    # (what is created, where, what kube's defaults make of the fields checked: path -> value)
    (obj("apps/v1", "DaemonSet", spec={"selector": SELECTOR, "template": TEMPLATE}), "daemonsets",
     {"spec.updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
      "spec.revisionHistoryLimit": 10, "spec.template.spec.restartPolicy": "Always",
      "status": {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                 "numberReady": 0}}),
    (obj("apps/v1", "StatefulSet", spec={"selector": SELECTOR, "template": TEMPLATE, "serviceName": "s",
                                         "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                                             "accessModes": ["ReadWriteOnce"],
                                             "resources": {"requests": {"storage": "1Gi"}}}}]}),
     "statefulsets",
     {"spec.replicas": 1, "spec.podManagementPolicy": "OrderedReady", "spec.revisionHistoryLimit": 10,
      "spec.updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
      "spec.persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
      "spec.volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                     "metadata": {"name": "data"},
                                     "spec": {"accessModes": ["ReadWriteOnce"],
                                              "resources": {"requests": {"storage": "1Gi"}},
                                              "volumeMode": "Filesystem"},
                                     "status": {"phase": "Pending"}}],
      "status": {"replicas": 0, "availableReplicas": 0}}),
    (obj("apps/v1", "ReplicaSet", spec={"selector": SELECTOR, "template": TEMPLATE}), "replicasets",
     {"spec.replicas": 1, "status": {"replicas": 0}, "metadata.generation": 1}),
    (obj("v1", "ReplicationController", spec={"template": TEMPLATE}), "replicationcontrollers",
     {"spec.replicas": 1, "spec.selector": {"app": "a"}, "metadata.labels": {"app": "a"}}),
    (obj("batch/v1", "CronJob", spec={"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "OnFailure"}}}}}), "cronjobs",
     {"spec.concurrencyPolicy": "Allow", "spec.suspend": False, "spec.successfulJobsHistoryLimit": 3,
      "spec.failedJobsHistoryLimit": 1, "spec.jobTemplate.spec.template.spec.dnsPolicy": "ClusterFirst",
      "status": {}}),
    (obj("v1", "PersistentVolumeClaim", spec={"accessModes": ["ReadWriteOnce"],
                                             "resources": {"requests": {"storage": "1Gi"}}}),
     "persistentvolumeclaims", {"spec.volumeMode": "Filesystem", "status": {"phase": "Pending"}}),
    (obj("v1", "Endpoints", subsets=[{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]), "endpoints",
     {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80, "protocol": "TCP"}]}]}),
    (obj("discovery.k8s.io/v1", "EndpointSlice", addressType="IPv4", endpoints=[{"addresses": ["10.0.0.1"]}],
         ports=[{"port": 80}]), "endpointslices", {"ports": [{"name": "", "protocol": "TCP", "port": 80}]}),
    (obj("networking.k8s.io/v1", "NetworkPolicy", spec={"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}),
     "networkpolicies", {"spec.policyTypes": ["Ingress", "Egress"],
                         "spec.egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}], "metadata.generation": 1}),
    (obj("autoscaling/v2", "HorizontalPodAutoscaler", spec={
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3}),
     "horizontalpodautoscalers",
     {"spec.minReplicas": 1, "spec.metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
         "type": "Utilization", "averageUtilization": 80}}}],
      "status": {"desiredReplicas": 0, "currentMetrics": None}}),   # v2's currentMetrics: no omitempty
    (obj("networking.k8s.io/v1", "Ingress", spec={"defaultBackend": {"service": {"name": "s", "port": {
        "number": 80}}}}), "ingresses", {"status": {"loadBalancer": {}}}),
]


def assert_fields(got: dict, expected: dict[str, Any]) -> None:
    """Each dotted path of ``expected`` holds its value in ``got``."""
    for dotted, value in expected.items():
        node: Any = got
        for key in dotted.split("."):
            node = node[key]
        assert node == value, dotted


@pytest.mark.parametrize(("body", "plural", "expected"), DEFAULTS, ids=[d[0]["kind"] for d in DEFAULTS])
def test_defaults_are_kubes(kube: Kube, body: dict, plural: str, expected: dict) -> None:
    created = kube.post(path(body["apiVersion"], plural), body)
    assert created.status == 201, created.body
    assert_fields(created.body, expected)
    assert kube.get(f"{path(body['apiVersion'], plural)}/x").body == created.body


@pytest.mark.parametrize(("body", "plural", "expected"), [
    (obj("storage.k8s.io/v1", "StorageClass", provisioner="example.com/disk"), "storageclasses",
     {"reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
    (obj("v1", "PersistentVolume", spec={"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                         "hostPath": {"path": "/tmp/pv"}}), "persistentvolumes",
     {"spec.persistentVolumeReclaimPolicy": "Retain", "spec.volumeMode": "Filesystem", "status.phase": "Pending",
      "status.lastPhaseTransitionTime": ANY_TIME}),
    (obj("storage.k8s.io/v1", "CSIDriver", spec={}), "csidrivers",
     {"spec": {"attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
               "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False, "seLinuxMount": False,
               "volumeLifecycleModes": ["Persistent"]}}),
    (obj("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", spec={
        "type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}),
     "prioritylevelconfigurations",
     {"spec.limited": {"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
         "type": "Queue", "queuing": {"queues": 64, "handSize": 8, "queueLengthLimit": 50}}}}),
])
def test_defaults_of_cluster_scoped_kinds(kube: Kube, body: dict, plural: str, expected: dict) -> None:
    created = kube.post(path(body["apiVersion"], plural, namespaced=False), body)
    assert created.status == 201, created.body
    assert_fields(created.body, expected)


def test_a_job_gets_kubes_generated_selector_and_defaults(kube: Kube) -> None:
    """``jobStrategy``: with no ``manualSelector`` the selector is generated from the uid (``generateSelector``) and
    ``SetDefaults_Job`` fills completions, parallelism, backoffLimit, completionMode, suspend and
    podReplacementPolicy; the selector is immutable (``ValidateJobSpecUpdate``)."""
    job = obj("batch/v1", "Job", "pi", spec={"template": {"spec": {
        "containers": [{"name": "pi", "image": "perl"}], "restartPolicy": "Never"}}})
    created = kube.post(path("batch/v1", "jobs"), job)
    assert created.status == 201, created.body
    spec, uid = created.body["spec"], created.body["metadata"]["uid"]
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {"batch.kubernetes.io/controller-uid": uid,
                                                      "batch.kubernetes.io/job-name": "pi",
                                                      "controller-uid": uid, "job-name": "pi"}
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend",
                                 "podReplacementPolicy")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed"}
    assert created.body["status"] == {} and created.body["metadata"]["generation"] == 1
    changed = kube.patch(f"{path('batch/v1', 'jobs')}/pi", {"spec": {"selector": {"matchLabels": {"a": "b"}}}})
    assert changed.status == 422
    assert changed.body["details"]["causes"][0]["field"] == "spec.selector"
    assert changed.body["details"]["causes"][0]["message"].endswith("field is immutable")


# --- validation --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "plural", "field", "message"), [
    # Kubernetes' schema (``required``) and kube's Go rules (ValidatePodTemplateSpecForReplicaSet) as for the
    # kinds served before
    (obj("apps/v1", "DaemonSet", spec={"template": TEMPLATE}), "daemonsets", "spec.selector", "Required value"),
    (obj("batch/v1", "Job", spec={"template": {"spec": {}}}), "jobs", "spec.template.spec.containers",
     "Required value"),
    (obj("v1", "PersistentVolumeClaim", spec={"accessModes": ["ReadWriteOnce"], "volumeMode": "Block2",
                                             "resources": {"requests": {"storage": "1Gi"}}}),
     "persistentvolumeclaims", "spec.volumeMode",
     'Unsupported value: "Block2": supported values: "Block", "Filesystem"'),
    (obj("apps/v1", "ControllerRevision"), "controllerrevisions", "revision", "Required value"),
])
def test_validation_names_kubes_fields(kube: Kube, body: dict, plural: str, field: str, message: str) -> None:
    reply = kube.post(path(body["apiVersion"], plural), body)
    assert (reply.status, reply.body["reason"]) == (422, "Invalid"), reply.body
    causes = {c["field"]: c["message"] for c in reply.body["details"]["causes"]}
    assert causes.get(field) == message, causes


# --- the status subresource ---------------------------------------------------------------------------------------

def test_status_is_its_own_subresource(kube: Kube) -> None:
    base = path("apps/v1", "statefulsets")
    created = kube.post(base, obj("apps/v1", "StatefulSet", "s", spec={"selector": SELECTOR, "template": TEMPLATE,
                                                                       "serviceName": "s"},
                                  status={"replicas": 9}))
    assert created.body["status"] == {"replicas": 0, "availableReplicas": 0}   # PrepareForCreate resets it
    body = {**created.body, "status": {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1}}
    written = kube.put(f"{base}/s/status", body)
    assert written.status == 200 and written.body["status"]["readyReplicas"] == 1
    assert written.body["metadata"]["generation"] == 1
    again = kube.put(f"{base}/s", {**written.body, "status": {"replicas": 7}, "spec": {
        **written.body["spec"], "replicas": 3}})
    assert again.body["status"]["replicas"] == 2 and again.body["metadata"]["generation"] == 2


# --- scale ----------------------------------------------------------------------------------------------------------

def test_scale_answers_as_kube(kube: Kube) -> None:
    """``ScaleREST``: the Scale of the parent, a precondition on its resourceVersion, ``ValidateScale``'s 422."""
    base = path("apps/v1", "deployments")
    kube.post(base, obj("apps/v1", "Deployment", "web", spec={"selector": {
        "matchLabels": {"app": "a"}, "matchExpressions": [{"key": "tier", "operator": "In",
                                                          "values": ["b", "a"]}]},
        "template": {**TEMPLATE, "metadata": {"labels": {"app": "a", "tier": "a"}}}}))
    scale = kube.get(f"{base}/web/scale").body
    assert scale["status"]["selector"] == "app=a,tier in (a,b)"
    assert set(scale["metadata"]) == {"name", "namespace", "uid", "resourceVersion", "creationTimestamp"}
    stale = kube.put(f"{base}/web/scale", {**scale, "metadata": {**scale["metadata"], "resourceVersion": "1"},
                                           "spec": {"replicas": 2}})
    assert (stale.status, stale.body["reason"]) == (409, "Conflict")
    assert stale.body["message"] == ('Operation cannot be fulfilled on deployments.apps "web": the object has been '
                                     "modified; please apply your changes to the latest version and try again")
    negative = kube.patch(f"{base}/web/scale", {"spec": {"replicas": -1}})
    assert (negative.status, negative.body["message"]) == (
        422, 'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal '
             'to 0')
    patched = kube.request("PATCH", f"{base}/web/scale", body=[{"op": "replace", "path": "/spec/replicas",
                                                                 "value": 4}],
                           content_type="application/json-patch+json")
    assert patched.status == 200 and patched.body["spec"] == {"replicas": 4}
    deployment = kube.get(f"{base}/web").body
    assert (deployment["spec"]["replicas"], deployment["metadata"]["generation"]) == (4, 2)
    assert [m["subresource"] for m in deployment["metadata"]["managedFields"] if m.get("subresource")] == ["scale"]
    assert kube.get(f"{path('apps/v1', 'daemonsets')}/x/scale").status == 404   # DaemonSets have no scale


# --- printing ----------------------------------------------------------------------------------------------------

def _table(kube: Kube, url: str) -> dict:
    return kube.request("GET", url, accept="application/json;as=Table;v=v1;g=meta.k8s.io").body


def test_tables_are_kubes_printers(kube: Kube) -> None:
    kube.post(path("batch/v1", "jobs"), obj("batch/v1", "Job", "j", spec={"completions": 3, "parallelism": 2,
                                                                           "template": {"spec": {
                                                                               "containers": [{"name": "c",
                                                                                               "image": "busybox"}],
                                                                               "restartPolicy": "Never"}}}))
    table = _table(kube, path("batch/v1", "jobs"))
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Status", "Completions", "Duration", "Age",
                                                               "Containers", "Images", "Selector"]
    assert table["rows"][0]["cells"][:4] == ["j", "Running", "0/3", ""]
    kube.post(path("v1", "persistentvolumeclaims"), obj("v1", "PersistentVolumeClaim", "data", spec={
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "fast"}))
    table = _table(kube, path("v1", "persistentvolumeclaims"))
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Status", "Volume", "Capacity",
                                                               "Access Modes", "StorageClass",
                                                               "VolumeAttributesClass", "Age", "VolumeMode"]
    cells = table["rows"][0]["cells"]
    assert cells[:7] == ["data", "Pending", "", "", "", "fast", "<unset>"] and cells[8] == "Filesystem"
    kube.post(path("storage.k8s.io/v1", "storageclasses", False), obj(
        "storage.k8s.io/v1", "StorageClass", "standard", provisioner="rancher.io/local-path",
        metadata={"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}))
    cells = _table(kube, path("storage.k8s.io/v1", "storageclasses", False))["rows"][0]["cells"]
    assert cells[:5] == ["standard (default)", "rancher.io/local-path", "Delete", "Immediate", False]


# --- protobuf, SSA, GC --------------------------------------------------------------------------------------------

def test_protobuf_of_the_new_kinds(apiserver: APIServer, kube: Kube) -> None:
    """The generated tables cover k8s.io/api 1.32 (and kube-aggregator's APIService): every kind reads back the
    same in protobuf as in JSON."""
    kube.post(path("batch/v1", "cronjobs"), obj("batch/v1", "CronJob", "c", spec={
        "schedule": "@hourly", "jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "OnFailure"}}}}}))
    kube.post("/apis/apiregistration.k8s.io/v1/apiservices", obj(
        "apiregistration.k8s.io/v1", "APIService", "v1.example.com",
        spec={"group": "example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10}))
    for url in (f"{path('batch/v1', 'cronjobs')}/c", "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com",
                "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt"):
        as_json = kube.get(url).body
        raw = kube.api.rest_client.pool_manager.request(
            "GET", kube.api.configuration.host + url, headers={"Accept": PROTOBUF, **kube._auth})
        assert (raw.status, raw.headers["Content-Type"]) == (200, PROTOBUF)
        assert kubeproto.decode_object(raw.data) == as_json


def test_server_side_apply_knows_the_list_types(kube: Kube) -> None:
    """A CronJob's containers merge by name, as kube's schema says (``x-kubernetes-list-map-keys``)."""
    url = f"{path('batch/v1', 'cronjobs')}/c"
    config = obj("batch/v1", "CronJob", "c", spec={"schedule": "@hourly", "jobTemplate": {"spec": {"template": {
        "spec": {"containers": [{"name": "a", "image": "busybox"}], "restartPolicy": "OnFailure"}}}}})
    assert kube.patch(url, config, content_type="application/apply-patch+yaml", fieldManager="one").status == 201
    second = obj("batch/v1", "CronJob", "c", spec={"jobTemplate": {"spec": {"template": {"spec": {
        "containers": [{"name": "b", "image": "busybox"}]}}}}})
    merged = kube.patch(url, second, content_type="application/apply-patch+yaml", fieldManager="two")
    assert merged.status == 200, merged.body
    containers = merged.body["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["a", "b"]
    clash = kube.patch(url, obj("batch/v1", "CronJob", "c", spec={"schedule": "@daily"}),
                       content_type="application/apply-patch+yaml", fieldManager="two")
    assert clash.status == 409
    assert clash.body["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "one"',
                                                "field": ".spec.schedule"}]


def test_garbage_collection_follows_owner_references(apiserver: APIServer, kube: Kube) -> None:
    rs = kube.post(path("apps/v1", "replicasets"), obj("apps/v1", "ReplicaSet", "r", spec={
        "selector": SELECTOR, "template": TEMPLATE})).body
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": rs["metadata"]["uid"]}
    kube.post(path("v1", "pods"), {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "r-1", "ownerReferences": [owner]}, "spec": TEMPLATE["spec"]})
    kube.delete(f"{path('apps/v1', 'replicasets')}/r")
    assert wait_for(lambda: kube.get(f"{path('v1', 'pods')}/r-1").status == 404, what="the pod collected")


# --- kinds with two faces -----------------------------------------------------------------------------------------

def test_hpa_v1_and_v2_are_one_object(kube: Kube) -> None:
    """kube stores autoscaling/v2; v1's targetCPUUtilizationPercentage is v2's CPU Utilization metric."""
    v1 = kube.post(path("autoscaling/v1", "horizontalpodautoscalers"), obj(
        "autoscaling/v1", "HorizontalPodAutoscaler", "h", spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 60}))
    assert v1.status == 201 and v1.body["spec"]["minReplicas"] == 1
    v2 = kube.get(f"{path('autoscaling/v2', 'horizontalpodautoscalers')}/h").body
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": 60}}}]
    memory = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                            "averageValue": "1Gi"}}}
    kube.patch(f"{path('autoscaling/v2', 'horizontalpodautoscalers')}/h",
               {"spec": {"metrics": [*v2["spec"]["metrics"], memory]}})
    back = kube.get(f"{path('autoscaling/v1', 'horizontalpodautoscalers')}/h").body
    assert back["spec"]["targetCPUUtilizationPercentage"] == 60 and "metrics" not in back["spec"]
    again = kube.put(f"{path('autoscaling/v1', 'horizontalpodautoscalers')}/h", {
        **back, "spec": {**back["spec"], "maxReplicas": 6}})   # a v1 read-modify-write keeps the memory metric
    assert again.status == 200, again.body
    v2 = kube.get(f"{path('autoscaling/v2', 'horizontalpodautoscalers')}/h").body
    assert v2["spec"]["maxReplicas"] == 6 and v2["spec"]["metrics"][1] == memory
    assert "annotations" not in v2["metadata"]


def test_events_k8s_io_events_are_core_events(kube: Kube) -> None:
    """``pkg/apis/events/v1``'s conversion: ``note`` is ``message``, ``regarding`` is ``involvedObject``."""
    created = kube.post(path("events.k8s.io/v1", "events"), obj(
        "events.k8s.io/v1", "Event", "e", eventTime="2024-01-01T00:00:00.000000Z", reportingController="me/ctl",
        reportingInstance="me-1", action="Sync", reason="Synced", note="done", type="Normal",
        regarding={"kind": "Pod", "name": "p", "namespace": "default"}))
    assert created.status == 201, created.body
    core = kube.get(f"{path('v1', 'events')}/e").body
    assert (core["message"], core["involvedObject"]["name"], core["reportingComponent"]) == ("done", "p", "me/ctl")
    listed = kube.get(path("events.k8s.io/v1", "events")).body["items"]
    assert [(e["note"], e["regarding"]["kind"]) for e in listed] == [("done", "Pod")]


def test_a_csr_records_who_asked(apiserver: APIServer, kube: Kube) -> None:
    """``csrStrategy.PrepareForCreate``: the requester's name and groups, whatever the request says; approval is its
    own subresource."""
    url = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
    created = kube.post(url, obj("certificates.k8s.io/v1", "CertificateSigningRequest", "c", spec={
        "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K", "signerName": "example.com/signer",
        "usages": ["client auth"], "username": "someone-else"}))
    assert created.status == 201, created.body
    assert created.body["spec"]["username"] != "someone-else"
    approved = kube.put(f"{url}/c/approval", {**created.body, "status": {"conditions": [{
        "type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]}, "spec": {
        **created.body["spec"], "signerName": "other.com/x"}})
    assert approved.status == 200, approved.body
    assert approved.body["status"]["conditions"][0]["type"] == "Approved"
    assert approved.body["spec"]["signerName"] == "example.com/signer"   # only the conditions change


def test_flowschemas_are_what_flow_control_runs(kube: Kube) -> None:
    """The FlowSchema an answer's ``X-Kubernetes-PF-FlowSchema-UID`` names is served, with that UID."""
    reply = kube.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")
    uid = reply.headers.get(FLOW_SCHEMA_HEADER.lower())
    by_uid = {fs["metadata"]["uid"]: fs for fs in reply.body["items"]}
    assert uid in by_uid
    assert by_uid[uid]["metadata"]["name"] in ("exempt", "global-default")
    catch_all = kube.get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/catch-all").body
    assert catch_all["spec"]["matchingPrecedence"] == 10000
    assert catch_all["spec"]["priorityLevelConfiguration"] == {"name": "catch-all"}


def test_a_creators_managed_fields_follow_gos_zero_object(kube: Kube) -> None:
    """kube compares a create with the Go zero object: a value struct (a DaemonSet's ``updateStrategy``) is in it,
    so its creator owns no ``.`` of it; a pointer (``rollingUpdate``) is not, so it does."""
    created = kube.post(path("apps/v1", "daemonsets"), obj("apps/v1", "DaemonSet", "d", spec={
        "selector": SELECTOR, "template": TEMPLATE, "updateStrategy": {"type": "RollingUpdate"}})).body
    [entry] = created["metadata"]["managedFields"]
    strategy = entry["fieldsV1"]["f:spec"]["f:updateStrategy"]
    assert "." not in strategy and "." in strategy["f:rollingUpdate"]
    assert set(strategy) == {"f:type", "f:rollingUpdate"}


@pytest.mark.parametrize(("body", "plural", "causes"), [
    # ValidateJobSpec: a Job's pods end (the template's defaulted Always is refused, in kube's words)
    (obj("batch/v1", "Job", spec={"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}),
     "jobs", {"spec.template.spec.restartPolicy": 'Required value: valid values: "OnFailure", "Never"'}),
    (obj("batch/v1", "Job", spec={"parallelism": -1, "template": {"spec": {
        "containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}),
     "jobs", {"spec.parallelism": "Invalid value: -1: must be greater than or equal to 0"}),
    # ValidateReplicaSetSpec / ValidateStatefulSetSpec: the selector matches the template, pods always restart
    (obj("apps/v1", "ReplicaSet", spec={"selector": {"matchLabels": {"app": "b"}}, "template": TEMPLATE}),
     "replicasets", {"spec.template.metadata.labels":   # (a map shown as JSON, as for Deployments: kube's is %#v)
                     'Invalid value: {"app":"a"}: `selector` does not match template `labels`'}),
    (obj("apps/v1", "StatefulSet", spec={"selector": SELECTOR, "serviceName": "s", "template": {
        **TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}}),
     "statefulsets", {"spec.template.spec.restartPolicy": 'Unsupported value: "Never": supported values: "Always"'}),
])
def test_workload_rules_are_kubes(kube: Kube, body: dict, plural: str, causes: dict) -> None:
    reply = kube.post(path(body["apiVersion"], plural), body)
    assert reply.status == 422, reply.body
    assert {c["field"]: c["message"] for c in reply.body["details"]["causes"]} == causes
