"""The real kubectl on the built-in kinds served since issue 47: ``api-resources`` lists every one, and the
commands that needed them work as against kind: ``apply --prune -l`` with its default allowlist (which names
Endpoints, PVCs, RCs, DaemonSets, StatefulSets, Jobs, CronJobs, Ingresses...), ``scale`` (the ``scale``
subresource of Deployments, ReplicaSets, StatefulSets, RCs and CRDs that declare it), ``create cronjob``,
``create job --from=cronjob/...`` and ``rollout history`` (ControllerRevisions of a DaemonSet)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import yaml

from mxjob_controller.local.apiserver import builtin
from tests.crds import widget, widget_crd
from tests.support import Kube, Kubectl

#: What ``kubectl api-resources`` shows for each kind the issue lists (NAME, SHORTNAMES, APIVERSION, NAMESPACED,
#: KIND), as kube-apiserver 1.32 shows them.
ISSUE_KINDS = [
    ("jobs", "", "batch/v1", "true", "Job"), ("cronjobs", "cj", "batch/v1", "true", "CronJob"),
    ("daemonsets", "ds", "apps/v1", "true", "DaemonSet"), ("replicasets", "rs", "apps/v1", "true", "ReplicaSet"),
    ("statefulsets", "sts", "apps/v1", "true", "StatefulSet"),
    ("controllerrevisions", "", "apps/v1", "true", "ControllerRevision"),
    ("replicationcontrollers", "rc", "v1", "true", "ReplicationController"),
    ("endpoints", "ep", "v1", "true", "Endpoints"),
    ("persistentvolumeclaims", "pvc", "v1", "true", "PersistentVolumeClaim"),
    ("persistentvolumes", "pv", "v1", "false", "PersistentVolume"),
    ("podtemplates", "", "v1", "true", "PodTemplate"), ("limitranges", "limits", "v1", "true", "LimitRange"),
    ("resourcequotas", "quota", "v1", "true", "ResourceQuota"),
    ("endpointslices", "", "discovery.k8s.io/v1", "true", "EndpointSlice"),
    ("events", "ev", "events.k8s.io/v1", "true", "Event"),
    ("ingresses", "ing", "networking.k8s.io/v1", "true", "Ingress"),
    ("networkpolicies", "netpol", "networking.k8s.io/v1", "true", "NetworkPolicy"),
    ("ingressclasses", "", "networking.k8s.io/v1", "false", "IngressClass"),
    ("storageclasses", "sc", "storage.k8s.io/v1", "false", "StorageClass"),
    ("volumeattachments", "", "storage.k8s.io/v1", "false", "VolumeAttachment"),
    ("csidrivers", "", "storage.k8s.io/v1", "false", "CSIDriver"),
    ("csinodes", "", "storage.k8s.io/v1", "false", "CSINode"),
    ("csistoragecapacities", "", "storage.k8s.io/v1", "true", "CSIStorageCapacity"),
    ("horizontalpodautoscalers", "hpa", "autoscaling/v2", "true", "HorizontalPodAutoscaler"),
    ("flowschemas", "", "flowcontrol.apiserver.k8s.io/v1", "false", "FlowSchema"),
    ("prioritylevelconfigurations", "", "flowcontrol.apiserver.k8s.io/v1", "false", "PriorityLevelConfiguration"),
    ("mutatingwebhookconfigurations", "", "admissionregistration.k8s.io/v1", "false",
     "MutatingWebhookConfiguration"),
    ("apiservices", "", "apiregistration.k8s.io/v1", "false", "APIService"),
    ("certificatesigningrequests", "csr", "certificates.k8s.io/v1", "false", "CertificateSigningRequest"),
]


def _rows(text: str) -> list[list[str]]:
    """``kubectl api-resources``' table, each row's columns (an empty SHORTNAMES column as "")."""
    lines = text.splitlines()
    header = lines[0]
    starts = [header.index(h) for h in ("NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND")]
    rows = []
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        rows.append(cells)
    return rows


def test_api_resources_lists_every_kind(kubectl: Kubectl) -> None:
    rows = _rows(kubectl.ok("api-resources"))
    for expected in ISSUE_KINDS:
        assert list(expected) in rows, expected
    # and nothing the server serves is missing from kubectl's view (every preferred version's kinds)
    names = {(r[0], r[2]) for r in rows}
    for rt in builtin.BUILTIN_TYPES:
        if rt.api_version == "autoscaling/v1":   # autoscaling/v2 is preferred: kubectl lists that one
            continue
        assert (rt.plural, rt.api_version) in names, rt


def test_api_resources_categories_and_verbs(kubectl: Kubectl) -> None:
    wide = kubectl.ok("api-resources", "-o", "wide", "--api-group=apps").splitlines()
    assert wide[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"]
    every_verb = "create,delete,deletecollection,get,list,patch,update,watch"
    assert [line.split() for line in wide[1:]] == [
        ["controllerrevisions", "apps/v1", "true", "ControllerRevision", every_verb],
        ["daemonsets", "ds", "apps/v1", "true", "DaemonSet", every_verb, "all"],
        ["deployments", "deploy", "apps/v1", "true", "Deployment", every_verb, "all"],
        ["replicasets", "rs", "apps/v1", "true", "ReplicaSet", every_verb, "all"],
        ["statefulsets", "sts", "apps/v1", "true", "StatefulSet", every_verb, "all"]]
    namespaces = next(line for line in kubectl.ok("api-resources", "-o", "wide").splitlines()
                      if line.startswith("namespaces "))
    assert namespaces.split()[5] == "create,delete,get,list,patch,update,watch"   # no deletecollection, as kube
    everything = kubectl.ok("api-resources", "--categories=all", "-o", "name").split()
    assert set(everything) >= {"pods", "services", "replicationcontrollers", "daemonsets.apps", "deployments.apps",
                               "replicasets.apps", "statefulsets.apps", "horizontalpodautoscalers.autoscaling",
                               "cronjobs.batch", "jobs.batch"}


def test_apply_prune_with_the_default_allowlist(kubectl: Kubectl, tmp_path: Path) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    (folder / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, labels: {app: x}}\n"
                                    "data: {mode: fast}\n")
    (folder / "web.yaml").write_text(yaml.safe_dump({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "labels": {"app": "x"}},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": {
            "metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}))
    first = kubectl.run("apply", "--prune", "-l", "app=x", "-f", f"{folder}/")
    assert first.returncode == 0, first.stderr
    assert sorted(first.stdout.splitlines()) == ["configmap/settings created", "deployment.apps/web created"]
    (folder / "cm.yaml").unlink()
    second = kubectl.run("apply", "--prune", "-l", "app=x", "-f", f"{folder}/")
    assert second.returncode == 0, second.stderr
    assert sorted(second.stdout.splitlines()) == ["configmap/settings pruned", "deployment.apps/web unchanged"]
    assert kubectl.run("get", "configmap", "settings").returncode == 1


def test_scale_deployment_replicaset_statefulset_and_rc(kubectl: Kubectl, kube: Kube) -> None:
    kubectl.ok("create", "deployment", "web", "--image=nginx")
    assert kubectl.ok("scale", "deployment/web", "--replicas=3").strip() == "deployment.apps/web scaled"
    assert kubectl.json("get", "deployment", "web")["spec"]["replicas"] == 3
    scale = kube.get("/apis/apps/v1/namespaces/default/deployments/web/scale").body
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert (scale["spec"], scale["status"]) == ({"replicas": 3}, {"replicas": 0, "selector": "app=web"})
    template = {"metadata": {"labels": {"app": "s"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    for kind, plural, extra in (("ReplicaSet", "replicasets", {}), ("StatefulSet", "statefulsets",
                                                                    {"serviceName": "s"})):
        kube.post(f"/apis/apps/v1/namespaces/default/{plural}", {
            "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "s"},
            "spec": {"selector": {"matchLabels": {"app": "s"}}, "template": template, **extra}})
        assert kubectl.ok("scale", f"{plural}/s", "--replicas=2").strip() == f"{kind.lower()}.apps/s scaled"
        assert kubectl.json("get", plural, "s")["spec"]["replicas"] == 2
    kube.post("/api/v1/namespaces/default/replicationcontrollers", {
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
        "spec": {"selector": {"app": "s"}, "template": template}})
    assert kubectl.ok("scale", "rc/rc", "--replicas=4").strip() == "replicationcontroller/rc scaled"
    assert kube.get("/api/v1/namespaces/default/replicationcontrollers/rc/scale").body["status"] == {
        "replicas": 0, "selector": "app=s"}
    # --current-replicas is a precondition kubectl checks against the Scale
    stale = kubectl.run("scale", "rc/rc", "--current-replicas=1", "--replicas=5")
    assert stale.returncode == 1 and "Expected replicas to be 1, was 4" in stale.stderr, stale.stderr


def test_scale_a_custom_resource_that_declares_it(kubectl: Kubectl, kube: Kube, tmp_path: Path) -> None:
    crd = widget_crd()
    version = crd["spec"]["versions"][0]
    version["subresources"]["scale"] = {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size",
                                        "labelSelectorPath": ".status.selector"}
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(crd))
    kubectl.ok("create", "-f", str(tmp_path / "crd.yaml"))
    kubectl.ok("wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=10s")
    kube.post("/apis/example.com/v1/namespaces/default/widgets", widget("w1", size=1))
    kube.put("/apis/example.com/v1/namespaces/default/widgets/w1/status", {
        **widget("w1", size=1), "metadata": {"name": "w1", "resourceVersion": kubectl.json(
            "get", "widget", "w1")["metadata"]["resourceVersion"]}, "status": {"size": 1, "selector": "app=w"}})
    assert kubectl.ok("scale", "widget/w1", "--replicas=5").strip() == "widget.example.com/w1 scaled"
    assert kubectl.json("get", "widget", "w1")["spec"]["size"] == 5
    scale = kube.get("/apis/example.com/v1/namespaces/default/widgets/w1/scale").body
    assert (scale["spec"], scale["status"]) == ({"replicas": 5}, {"replicas": 1, "selector": "app=w"})
    without = copy.deepcopy(crd)   # a CRD without subresources.scale has no scale: kubectl says so
    del without["spec"]["versions"][0]["subresources"]["scale"]
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(without))
    kubectl.ok("apply", "-f", str(tmp_path / "crd.yaml"))
    refused = kubectl.run("scale", "widget/w1", "--replicas=2")
    assert refused.returncode == 1, refused.stdout


def test_create_cronjob_then_a_job_from_it(kubectl: Kubectl) -> None:
    out = kubectl.ok("create", "cronjob", "nightly", "--image=busybox", "--schedule=0 3 * * *", "--", "echo", "hi")
    assert out.strip() == "cronjob.batch/nightly created"
    cron = kubectl.json("get", "cronjob", "nightly")
    assert (cron["spec"]["concurrencyPolicy"], cron["spec"]["successfulJobsHistoryLimit"],
            cron["spec"]["failedJobsHistoryLimit"], cron["spec"]["suspend"]) == ("Allow", 3, 1, False)
    assert kubectl.ok("create", "job", "run-now", "--from=cronjob/nightly").strip() == "job.batch/run-now created"
    job = kubectl.json("get", "job", "run-now")
    assert job["metadata"]["annotations"] == {"cronjob.kubernetes.io/instantiate": "manual"}
    [owner] = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("CronJob", "nightly", cron["metadata"]["uid"])
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    lines = kubectl.ok("get", "jobs").splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert lines[1].split()[:3] == ["run-now", "Running", "0/1"]
    cron_lines = kubectl.ok("get", "cronjobs").splitlines()
    assert cron_lines[0].split() == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    # deleting the CronJob takes its Job with it: garbage collection by ownerReferences
    kubectl.ok("delete", "cronjob", "nightly")
    kubectl.ok("wait", "--for=delete", "job/run-now", "--timeout=20s")


def test_rollout_history(kubectl: Kubectl, kube: Kube) -> None:
    kubectl.ok("create", "deployment", "web", "--image=nginx")
    assert kubectl.run("rollout", "history", "deployment/web").returncode == 0
    ds = kube.post("/apis/apps/v1/namespaces/default/daemonsets", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
            "metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}}})
    assert ds.status == 201, ds.body
    uid = ds.body["metadata"]["uid"]
    for revision, image in ((1, "agent:1"), (2, "agent:2")):   # what the DaemonSet controller would record
        reply = kube.post("/apis/apps/v1/namespaces/default/controllerrevisions", {
            "apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": f"agent-{revision}", "labels": {"app": "agent"}, "annotations": {
                "kubernetes.io/change-cause": f"set image {image}"}, "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": uid, "controller": True}]},
            "revision": revision,
            "data": {"spec": {"template": {"$patch": "replace", "metadata": {"labels": {"app": "agent"}},
                                           "spec": {"containers": [{"name": "a", "image": image}]}}}}})
        assert reply.status == 201, reply.body
    history = kubectl.ok("rollout", "history", "daemonset/agent").splitlines()
    assert history[0] == "daemonset.apps/agent "
    assert [line.split(maxsplit=1) for line in history[2:4]] == [["1", "set image agent:1"],
                                                                  ["2", "set image agent:2"]]
    assert kubectl.ok("get", "controllerrevisions").splitlines()[1].split()[:3] == [
        "agent-1", "daemonset.apps/agent", "1"]


def _spec_template() -> dict:
    return {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


#: (collection URL, one object, kubectl's resource name, the header kubectl prints: kube 1.32's printers)
PRINTED = [
    ("/api/v1/persistentvolumes", {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
                                   "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                            "hostPath": {"path": "/tmp/pv1"}}},
     "pv", ["NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"], ["pv1", "1Gi", "RWO", "Retain", "Pending", "", "", "<unset>"]),
    ("/api/v1/namespaces/default/endpoints", {"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "e"},
                                              "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                                                           "ports": [{"port": 80}]}]},
     "endpoints", ["NAME", "ENDPOINTS", "AGE"], ["e", "10.0.0.1:80,10.0.0.2:80"]),
    ("/api/v1/namespaces/default/podtemplates", {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
                                                 "template": _spec_template()},
     "podtemplates", ["NAME", "CONTAINERS", "IMAGES", "POD LABELS"], ["t", "c", "nginx", "app=a"]),
    ("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "s"},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]},
     "endpointslices", ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"], ["s", "IPv4", "80", "10.0.0.1"]),
    ("/apis/networking.k8s.io/v1/namespaces/default/ingresses", {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example.com"}]}},
     "ingresses", ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"], ["i", "nginx", "a.example.com", "", "80"]),
    ("/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", {
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "n"},
        "spec": {"podSelector": {"matchLabels": {"app": "a"}}}},
     "networkpolicies", ["NAME", "POD-SELECTOR", "AGE"], ["n", "app=a"]),
    ("/apis/networking.k8s.io/v1/ingressclasses", {
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "nginx"},
        "spec": {"controller": "k8s.io/ingress-nginx"}},
     "ingressclasses", ["NAME", "CONTROLLER", "PARAMETERS", "AGE"], ["nginx", "k8s.io/ingress-nginx", "<none>"]),
    ("/apis/storage.k8s.io/v1/volumeattachments", {
        "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "va"},
        "spec": {"attacher": "csi.example.com", "nodeName": "local", "source": {"persistentVolumeName": "pv1"}}},
     "volumeattachments", ["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"],
     ["va", "csi.example.com", "pv1", "local", "false"]),
    ("/apis/storage.k8s.io/v1/csinodes", {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                                         "metadata": {"name": "local"}, "spec": {"drivers": []}},
     "csinodes", ["NAME", "DRIVERS", "AGE"], ["local", "0"]),
    ("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "m"}, "webhooks": []},
     "mutatingwebhookconfigurations", ["NAME", "WEBHOOKS", "AGE"], ["m", "0"]),
    ("/apis/apiregistration.k8s.io/v1/apiservices", {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "v1.example.com"},
        "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10,
                 "service": {"namespace": "ex", "name": "api"}}},
     "apiservices", ["NAME", "SERVICE", "AVAILABLE", "AGE"], ["v1.example.com", "ex/api", "Unknown"]),
    ("/apis/apps/v1/namespaces/default/daemonsets", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": _spec_template()}},
     "daemonsets", ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE SELECTOR", "AGE"],
     ["d", "0", "0", "0", "0", "0", "<none>"]),
    ("/apis/apps/v1/namespaces/default/statefulsets", {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "serviceName": "s", "template": _spec_template()}},
     "statefulsets", ["NAME", "READY", "AGE"], ["s", "0/1"]),
    ("/api/v1/namespaces/default/replicationcontrollers", {
        "apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "r"},
        "spec": {"replicas": 2, "template": _spec_template()}},
     "replicationcontrollers", ["NAME", "DESIRED", "CURRENT", "READY", "AGE"], ["r", "2", "0", "0"]),
    ("/apis/events.k8s.io/v1/namespaces/default/events", {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ev"},
        "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "me/ctl", "reportingInstance": "me-1",
        "action": "Sync", "reason": "Synced", "note": "all good", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}},
     "events.v1.events.k8s.io", ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
     [None, "Normal", "Synced", "pod/p", "all good"]),
]


def test_kubectl_get_prints_kubes_columns_for_each_kind(kube: Kube, kubectl: Kubectl) -> None:
    for url, body, resource, header, cells in PRINTED:
        reply = kube.post(url, body)
        assert reply.status == 201, (resource, reply.body)
        lines = kubectl.ok("get", resource).splitlines()
        starts = [m.start() for m in re.finditer(r"(?<!\S)\S+(?: \S+)*(?=\s{2,}|$)", lines[0])]
        assert re.split(r"\s{2,}", lines[0].strip()) == header, resource
        row = [lines[1][a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        assert [c for c, want in zip(row, cells, strict=False) if want is not None] == \
            [want for want in cells if want is not None], (resource, row)
