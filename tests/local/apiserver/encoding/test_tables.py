"""Server-side tables: the columns ``kubectl get`` prints for custom resources (printer columns, JSONPath
incl. ``[-1:]`` and filters), pods, services and the kinds without a printer, also with ``-w``; and the
Table itself as the official client receives it (``includeObject``, list metadata, watch events)."""

from __future__ import annotations

import queue
import re
import subprocess
import threading
import time

import pytest

from mxjob_controller.local.apiserver.encoding import jsonpath, printers
from tests.crds import WIDGETS, widget, widget_crd
from tests.support import pod, wait_for

PODS = "/api/v1/namespaces/default/pods"
SVCS = "/api/v1/namespaces/default/services"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_TABLE = f"{TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

COLUMNS = [
    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
    {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
    {"name": "Last", "type": "string", "jsonPath": ".status.conditions[-1:].type",
     "description": "The latest condition"},
    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
    {"name": "Parts", "type": "string", "jsonPath": ".spec.parts"},
    {"name": "Created", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def _rows(text: str) -> list[list[str]]:
    """kubectl's table output as lists of cells (columns are separated by runs of 3+ spaces)."""
    return [re.split(r" {3,}", line.rstrip()) for line in text.strip().splitlines()]


def _widgets_served(kube, columns=None) -> None:
    crd = widget_crd()
    if columns is not None:
        crd["spec"]["versions"][0]["additionalPrinterColumns"] = columns
    assert kube.post(CRDS, crd).status == 201
    wait_for(lambda: kube.get(WIDGETS).status == 200, what="widgets served")


def test_kubectl_get_prints_a_crds_printer_columns(kubectl, kube):
    _widgets_served(kube, COLUMNS)
    w = widget("w1", size=3)
    w["spec"].update(color="blue", parts=["a", "b"])
    assert kube.post(WIDGETS, w).status == 201
    rows = _rows(kubectl.ok("get", "widgets"))
    assert rows[0] == ["NAME", "SIZE", "LAST", "READY", "PARTS", "CREATED"]  # priority 1 only with -o wide
    assert rows[1][:3] == ["w1", "3", '["a","b"]']  # no conditions yet: kubectl leaves those cells blank
    cells = kube.request("GET", f"{WIDGETS}/w1", accept=TABLE).body["rows"][0]["cells"]
    assert cells[:6] == ["w1", 3, "blue", None, None, '["a","b"]']
    status = {"conditions": [{"type": "Created", "status": "True"}, {"type": "Ready", "status": "False"},
                             {"type": "Scaled", "status": "True"}]}
    assert kube.patch(f"{WIDGETS}/w1/status", {"status": status}).status == 200
    rows = _rows(kubectl.ok("get", "widgets", "-o", "wide"))
    assert rows[0] == ["NAME", "SIZE", "COLOR", "LAST", "READY", "PARTS", "CREATED"]
    name, size, color, last, ready, parts, created = rows[1]
    assert (name, size, color, last, ready, parts) == ("w1", "3", "blue", "Scaled", "False", '["a","b"]')
    assert created.endswith("s")


def test_a_crd_without_printer_columns_shows_name_and_age(kubectl, kube):
    _widgets_served(kube, [])
    kube.post(WIDGETS, widget("w1"))
    rows = _rows(kubectl.ok("get", "widgets"))
    assert rows[0] == ["NAME", "AGE"] and rows[1][0] == "w1"
    table = kube.request("GET", WIDGETS, accept=TABLE).body
    assert table["columnDefinitions"][1]["name"] == "Age" and table["columnDefinitions"][1]["type"] == "date"


def test_custom_column_cells_by_type(kube):
    _widgets_served(kube, [
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "AsNumber", "type": "number", "jsonPath": ".spec.size"},
        {"name": "AsBool", "type": "boolean", "jsonPath": ".spec.size"},
        {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
        {"name": "OutOfRange", "type": "string", "jsonPath": ".spec.parts[5]"},
        {"name": "BadDate", "type": "date", "jsonPath": ".spec.color"},
    ])
    w = widget("w1", size=7)
    w["spec"].update(color="not-a-date", parts=["x"])
    kube.post(WIDGETS, w)
    table = kube.request("GET", f"{WIDGETS}/w1", accept=TABLE).body
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "AsNumber", "AsBool", "Missing",
                                                               "OutOfRange", "BadDate"]
    assert table["columnDefinitions"][1]["description"] == \
        "Custom resource definition column (in JSONPath format): .spec.size"
    assert table["rows"][0]["cells"] == ["w1", 7, 7.0, None, None, None, "<invalid>"]
    assert table["metadata"]["resourceVersion"] == kube.get(f"{WIDGETS}/w1").body["metadata"]["resourceVersion"]


def _set_status(kube, name: str, status: dict) -> None:
    current = kube.get(f"{PODS}/{name}").body
    current["status"] = status
    reply = kube.put(f"{PODS}/{name}/status", current)
    assert reply.status == 200, reply.body


def _ago(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds))


def test_kubectl_get_pods_computes_status_as_kubectl_does(kubectl, kube):
    for name in ("pending", "running", "crashing", "init", "done", "leaving"):
        spec = {"initContainers": [{"name": "setup", "image": "busybox:1.36"}]} if name == "init" else {}
        assert kube.post(PODS, pod(name, **spec)).status == 201
    _set_status(kube, "running", {"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}],
                                  "conditions": [{"type": "Ready", "status": "True"}],
                                  "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                                                         "image": "busybox:1.36", "imageID": "",
                                                         "state": {"running": {"startedAt": _ago(30)}}}]})
    _set_status(kube, "crashing", {"phase": "Running", "containerStatuses": [{
        "name": "main", "ready": False, "restartCount": 4, "image": "busybox:1.36", "imageID": "",
        "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        "lastState": {"terminated": {"exitCode": 1, "finishedAt": _ago(900)}}}]})
    _set_status(kube, "init", {"phase": "Pending", "initContainerStatuses": [{
        "name": "setup", "ready": False, "restartCount": 0, "image": "busybox:1.36", "imageID": "",
        "state": {"running": {}}}]})
    _set_status(kube, "done", {"phase": "Succeeded", "containerStatuses": [{
        "name": "main", "ready": False, "restartCount": 0, "image": "busybox:1.36", "imageID": "",
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]})
    kube.patch(f"{PODS}/leaving", {"metadata": {"finalizers": ["example.com/hold"]}})
    kube.delete(f"{PODS}/leaving")

    rows = {r[0]: r for r in _rows(kubectl.ok("get", "pods"))}
    assert rows["NAME"] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert rows["pending"][1:4] == ["0/1", "Pending", "0"]
    assert rows["running"][1:4] == ["1/1", "Running", "0"]
    assert rows["crashing"][1:4] == ["0/1", "CrashLoopBackOff", "4 (15m ago)"]
    assert rows["init"][1:4] == ["0/1", "Init:0/1", "0"]
    assert rows["done"][1:4] == ["0/1", "Completed", "0"]
    assert rows["leaving"][2] == "Terminating"
    wide = {r[0]: r for r in _rows(kubectl.ok("get", "pods", "-o", "wide"))}
    assert wide["NAME"][5:] == ["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]
    assert wide["running"][5:] == ["10.0.0.5", "<none>", "<none>", "<none>"]
    table = kube.request("GET", f"{PODS}/done", accept=TABLE).body
    assert table["rows"][0]["conditions"] == [{"type": "Completed", "status": "True", "reason": "Succeeded",
                                               "message": "The pod has completed successfully."}]


def test_kubectl_get_services(kubectl, kube):
    services = [
        ("plain", {"selector": {"app": "a", "tier": "b"}, "ports": [{"port": 80, "targetPort": 8080}]}),
        ("nodeport", {"type": "NodePort", "ports": [
            {"name": "web", "port": 80, "nodePort": 30080},
            {"name": "dns", "port": 53, "protocol": "UDP", "nodePort": 30053}]}),
        ("balancer", {"type": "LoadBalancer", "ports": [{"port": 443}]}),
        ("headless", {"clusterIP": "None", "ports": [{"port": 5432}]}),
        ("external", {"type": "ExternalName", "externalName": "db.example.com"}),
    ]
    for name, spec in services:
        reply = kube.post(SVCS, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
        assert reply.status == 201, reply.body
    rows = {r[0]: r for r in _rows(kubectl.ok("get", "services", "-o", "wide"))}
    assert rows["NAME"] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    plain_ip = kube.get(f"{SVCS}/plain").body["spec"]["clusterIP"]
    assert rows["plain"][1:5] == ["ClusterIP", plain_ip, "<none>", "80/TCP"]
    assert rows["plain"][6] == "app=a,tier=b"
    assert rows["nodeport"][1] == "NodePort" and rows["nodeport"][4] == "80:30080/TCP,53:30053/UDP"
    assert rows["balancer"][3] == "<pending>" and rows["balancer"][4].startswith("443:")
    assert rows["headless"][2:5] == ["None", "<none>", "5432/TCP"]
    assert rows["external"][1:5] == ["ExternalName", "<none>", "db.example.com", "<none>"]
    assert rows["external"][6] == "<none>"


def test_kinds_without_a_printer_show_name_and_creation_time(kubectl, kube):
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}
    created = kube.post("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", role).body
    rows = _rows(kubectl.ok("get", "roles"))
    assert rows == [["NAME", "CREATED AT"], ["reader", created["metadata"]["creationTimestamp"]]]
    ns_rows = {r[0]: r for r in _rows(kubectl.ok("get", "namespaces"))}
    assert ns_rows["NAME"] == ["NAME", "STATUS", "AGE"] and ns_rows["default"][1] == "Active"


def test_include_object_variants(kube):
    kube.post(PODS, pod("p1", labels={"app": "x"}))
    by_default = kube.request("GET", PODS, accept=TABLE).body
    obj = by_default["rows"][0]["object"]
    assert obj["kind"] == "PartialObjectMetadata" and obj["apiVersion"] == "meta.k8s.io/v1"
    assert obj["metadata"]["labels"] == {"app": "x"} and "spec" not in obj
    full = kube.request("GET", PODS, accept=TABLE, query={"includeObject": "Object"}).body["rows"][0]["object"]
    assert full["kind"] == "Pod" and full["spec"]["containers"][0]["name"] == "main"
    metadata = kube.request("GET", PODS, accept=TABLE, query={"includeObject": "Metadata"}).body
    assert metadata["rows"][0]["object"] == obj
    none = kube.request("GET", f"{PODS}/p1", accept=TABLE, query={"includeObject": "None"}).body
    assert none["rows"][0]["object"] is None
    bad = kube.request("GET", PODS, accept=TABLE, query={"includeObject": "Everything"})
    assert bad.status == 400
    assert bad.body["message"] == ("Unable to convert to Table as requested: includeObject: Invalid value: "
                                   "\"Everything\": must be 'Metadata', 'Object', 'None', or empty")
    plain = kube.request("GET", PODS, query={"includeObject": "Everything"})
    assert plain.status == 200 and plain.body["kind"] == "PodList"  # only Tables read the option


def test_table_list_metadata_and_column_definitions(kube):
    for i in range(3):
        kube.post(PODS, pod(f"p{i}"))
    page = kube.request("GET", PODS, accept=KUBECTL_TABLE, query={"limit": "2"}).body
    assert [r["cells"][0] for r in page["rows"]] == ["p0", "p1"]
    assert page["metadata"]["continue"] and page["metadata"]["remainingItemCount"] == 1
    rest = kube.request("GET", PODS, accept=TABLE, query={"continue": page["metadata"]["continue"]}).body
    assert [r["cells"][0] for r in rest["rows"]] == ["p2"]
    definitions = page["columnDefinitions"]
    assert definitions[0] == {"name": "Name", "type": "string", "format": "name", "priority": 0,
                              "description": printers.doc("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                                                          "name")}
    assert [(c["name"], c["priority"]) for c in definitions[4:]] == [
        ("Age", 0), ("IP", 1), ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)]
    assert definitions[0]["description"].startswith("Name must be unique within a namespace")


def test_watch_as_table_sends_column_definitions_once(kube):
    kube.post(PODS, pod("p1"))
    events: list[dict] = []
    stream = kube.watch(PODS, timeout=20, accept=TABLE, timeoutSeconds=10)
    for event in stream:
        events.append(event)
        if len(events) == 1:
            kube.patch(f"{PODS}/p1", {"metadata": {"labels": {"seen": "yes"}}})
        if len(events) >= 2:
            break
    stream.close()
    first, second = events
    assert first["type"] == "ADDED" and first["object"]["kind"] == "Table"
    assert first["object"]["columnDefinitions"][0]["name"] == "Name"
    assert second["type"] == "MODIFIED" and second["object"]["columnDefinitions"] is None
    assert second["object"]["rows"][0]["cells"][0] == "p1"
    assert second["object"]["rows"][0]["object"]["metadata"]["labels"] == {"seen": "yes"}


class _Lines:
    """Lines of a running process's stdout, read by a named thread so the test can poll with a deadline."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.thread = threading.Thread(target=self._read, name="kubectl-watch-reader", daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def has(self, predicate) -> bool:
        while not self.lines.empty():
            self.seen.append(self.lines.get_nowait())
        return any(predicate(line) for line in self.seen)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        finally:
            self.thread.join(timeout=10)


def test_kubectl_get_watch_shows_changes(kubectl, kube):
    kube.post(PODS, pod("p1"))
    lines = _Lines(kubectl.popen("get", "pods", "-w", "--output-watch-events"))
    try:
        wait_for(lambda: lines.has(lambda s: s.split()[:3] == ["ADDED", "p1", "0/1"]), timeout=30,
                 what="the initial row")
        _set_status(kube, "p1", {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                                 "containerStatuses": [{"name": "main", "ready": True, "restartCount": 1,
                                                        "image": "busybox:1.36", "imageID": "",
                                                        "state": {"running": {}}}]})
        wait_for(lambda: lines.has(lambda s: s.split()[:5] == ["MODIFIED", "p1", "1/1", "Running", "1"]),
                 timeout=30, what="the pod running")
        kube.post(PODS, pod("p2"))
        wait_for(lambda: lines.has(lambda s: s.split()[:2] == ["ADDED", "p2"]), timeout=30, what="a new pod")
        assert lines.seen[0].split() == ["EVENT", "NAME", "READY", "STATUS", "RESTARTS", "AGE"]
        assert sum(1 for s in lines.seen if s.startswith("EVENT")) == 1  # headers once
    finally:
        lines.stop()


def test_kubectl_get_watch_of_custom_resources(kubectl, kube):
    _widgets_served(kube, [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}])
    kube.post(WIDGETS, widget("w1", size=1))
    lines = _Lines(kubectl.popen("get", "widgets", "-w"))
    try:
        wait_for(lambda: lines.has(lambda s: s.split()[:2] == ["w1", "1"]), timeout=30, what="the initial row")
        kube.patch(f"{WIDGETS}/w1", {"spec": {"size": 5}})
        wait_for(lambda: lines.has(lambda s: s.split()[:2] == ["w1", "5"]), timeout=30, what="the new size")
    finally:
        lines.stop()


# --- the pieces, table-driven -----------------------------------------------------------------------------

@pytest.mark.parametrize(("seconds", "text"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (59, "59s"), (119, "119s"), (120, "2m"), (150, "2m30s"),
    (600, "10m"), (179 * 60, "179m"), (3 * 3600, "3h"), (3 * 3600 + 5 * 60, "3h5m"), (8 * 3600, "8h"),
    (47 * 3600, "47h"), (2 * 86400, "2d"), (2 * 86400 + 3600, "2d1h"), (8 * 86400, "8d"), (729 * 86400, "729d"),
    (730 * 86400, "2y"), (731 * 86400, "2y1d"), (8 * 365 * 86400, "8y"),
])
def test_human_duration(seconds, text):
    assert printers.human_duration(seconds) == text


DOC = {"metadata": {"name": "n", "labels": {"app.kubernetes.io/name": "x"}},
       "status": {"conditions": [{"type": "A", "status": "True", "n": 1}, {"type": "Ready", "status": "False",
                                                                         "n": 2}],
                  "empty": [], "flag": True}}


@pytest.mark.parametrize(("path", "found"), [
    (".metadata.name", ["n"]),
    ("{.metadata.name}", ["n"]),
    (".metadata.missing", []),
    (".metadata.labels['app.kubernetes.io/name']", ["x"]),
    (".status.conditions[0].type", ["A"]),
    (".status.conditions[-1].type", ["Ready"]),
    (".status.conditions[-1:].type", ["Ready"]),
    (".status.conditions[0:2].n", [1, 2]),
    (".status.conditions[::2].type", ["A"]),
    (".status.conditions[*].type", ["A", "Ready"]),
    ('.status.conditions[?(@.type=="Ready")].status', ["False"]),
    (".status.conditions[?(@.n > 1)].type", ["Ready"]),
    (".status.conditions[?(@.n)].type", ["A", "Ready"]),
    (".status.flag", [True]),
    (".status.empty[0:0]", []),
])
def test_jsonpath_subset(path, found):
    assert jsonpath.find(DOC, path) == found


@pytest.mark.parametrize("path", [".status.empty[-1:]", ".status.conditions[5]", ".status.conditions[::0]",
                                  '.status.conditions[?(@.n == "1")]', ".status..type", ".status.flag[0]"])
def test_jsonpath_failures_leave_the_cell_empty(path):
    with pytest.raises(jsonpath.JSONPathError):
        jsonpath.find(DOC, path)


NOW = 1_700_000_000.0


def _pod_status(**status) -> dict:
    return {"metadata": {"name": "p", "creationTimestamp": "2023-11-14T22:13:20Z"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]}, "status": status}


@pytest.mark.parametrize(("obj", "ready", "status", "restarts"), [
    (_pod_status(phase="Pending"), "0/2", "Pending", "0"),
    (_pod_status(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False",
                                               "reason": "SchedulingGated"}]), "0/2", "SchedulingGated", "0"),
    (_pod_status(phase="Failed", reason="Evicted"), "0/2", "Evicted", "0"),
    (_pod_status(phase="Running", conditions=[{"type": "Ready", "status": "True"}], containerStatuses=[
        {"name": "a", "ready": True, "state": {"running": {}}},
        {"name": "b", "ready": True, "state": {"running": {}}, "restartCount": 2,
         "lastState": {"terminated": {"finishedAt": "2023-11-14T22:10:00Z"}}}]), "2/2", "Running", "2 (3m20s ago)"),
    (_pod_status(phase="Running", containerStatuses=[
        {"name": "a", "ready": False, "state": {"terminated": {"exitCode": 137, "signal": 9}}},
        {"name": "b", "ready": True, "state": {"running": {}}}]), "1/2", "Signal:9", "0"),
    (_pod_status(phase="Running", containerStatuses=[
        {"name": "a", "ready": False, "state": {"terminated": {"exitCode": 2}}}]), "0/2", "ExitCode:2", "0"),
    (_pod_status(phase="Running", conditions=[{"type": "Ready", "status": "False"}], containerStatuses=[
        {"name": "a", "ready": False, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
        {"name": "b", "ready": True, "state": {"running": {}}}]), "1/2", "NotReady", "0"),
])
def test_pod_status_column(obj, ready, status, restarts):
    cells, _ = printers.print_pod(obj, NOW)
    assert cells[1:4] == [ready, status, restarts]
    assert cells[4] == printers.human_duration(NOW - 1_700_000_000.0)


def test_pod_status_with_init_containers_and_sidecars():
    obj = _pod_status(phase="Pending", initContainerStatuses=[
        {"name": "setup", "state": {"terminated": {"exitCode": 0}}},
        {"name": "proxy", "started": True, "ready": True, "state": {"running": {}}},
        {"name": "migrate", "state": {"waiting": {"reason": "ImagePullBackOff"}}}])
    obj["spec"]["initContainers"] = [{"name": "setup"}, {"name": "proxy", "restartPolicy": "Always"},
                                     {"name": "migrate"}]
    cells, _ = printers.print_pod(obj, NOW)
    assert cells[1:3] == ["1/3", "Init:ImagePullBackOff"]  # the sidecar counts as a container, and is ready
    obj["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:20Z"
    assert printers.print_pod(obj, NOW)[0][2] == "Terminating"


MADE = {"creationTimestamp": "2023-11-14T22:03:20Z"}  # 10m before NOW


@pytest.mark.parametrize(("group", "kind", "obj", "cells"), [
    ("", "Namespace", {"metadata": {"name": "ns", **MADE}, "status": {"phase": "Terminating"}},
     ["ns", "Terminating", "10m"]),
    ("", "ConfigMap", {"metadata": {"name": "c", **MADE}, "data": {"a": "1"}, "binaryData": {"b": "Ag=="}},
     ["c", 2, "10m"]),
    ("", "Secret", {"metadata": {"name": "s", **MADE}, "type": "Opaque", "data": {"t": "eA=="}},
     ["s", "Opaque", 1, "10m"]),
    ("", "ServiceAccount", {"metadata": {"name": "sa", **MADE}}, ["sa", 0, "10m"]),
    ("", "Event", {"metadata": {"name": "e1", **MADE}, "type": "Warning", "reason": "BackOff",
                   "message": " restarting \n", "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec"},
                   "source": {"component": "kubelet", "host": "node1"}, "count": 3,
                   "firstTimestamp": "2023-11-14T22:03:20Z", "lastTimestamp": "2023-11-14T22:12:20Z"},
     ["60s", "Warning", "BackOff", "pod/p", "spec", "kubelet, node1", "restarting", "10m", 3, "e1"]),
    ("", "Event", {"metadata": {"name": "e2", **MADE}, "reason": "Made", "involvedObject": {"kind": "MXJob"},
                   "eventTime": "2023-11-14T22:13:10.000000Z", "reportingComponent": "mxjob-controller"},
     ["10s", "", "Made", "mxjob", "", "mxjob-controller", "", "10s", 1, "e2"]),
    ("", "Node", {"metadata": {"name": "n1", "labels": {"node-role.kubernetes.io/control-plane": ""}, **MADE},
                  "spec": {"unschedulable": True},
                  "status": {"conditions": [{"type": "Ready", "status": "True"}],
                             "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                             "nodeInfo": {"kubeletVersion": "v1.32.0"}}},
     ["n1", "Ready,SchedulingDisabled", "control-plane", "10m", "v1.32.0", "10.0.0.1", "<none>", "<unknown>",
      "<unknown>", "<unknown>"]),
    ("coordination.k8s.io", "Lease", {"metadata": {"name": "l", **MADE}, "spec": {"holderIdentity": "me"}},
     ["l", "me", "10m"]),
    ("apps", "Deployment", {"metadata": {"name": "d", **MADE},
                            "spec": {"replicas": 3, "selector": {"matchLabels": {"b": "2", "a": "1"},
                                                                 "matchExpressions": [{"key": "c", "operator": "In",
                                                                                       "values": ["y", "x"]}]},
                                     "template": {"spec": {"containers": [{"name": "m", "image": "i:1"},
                                                                          {"name": "s", "image": "i:2"}]}}},
                            "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}},
     ["d", "1/3", 2, 1, "10m", "m,s", "i:1,i:2", "a=1,b=2,c in (x,y)"]),
    ("policy", "PodDisruptionBudget", {"metadata": {"name": "p", **MADE}, "spec": {"maxUnavailable": "50%"},
                                       "status": {"disruptionsAllowed": 1}}, ["p", "N/A", "50%", 1, "10m"]),
    ("rbac.authorization.k8s.io", "RoleBinding",
     {"metadata": {"name": "rb", **MADE}, "roleRef": {"kind": "ClusterRole", "name": "view"},
      "subjects": [{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"},
                   {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]},
     ["rb", "ClusterRole/view", "10m", "u", "g", "ns/sa"]),
    ("scheduling.k8s.io", "PriorityClass", {"metadata": {"name": "high", **MADE}, "value": 1000,
                                            "preemptionPolicy": "Never"}, ["high", 1000, False, "10m", "Never"]),
])
def test_builtin_printers(group, kind, obj, cells):
    printer = printers.printer_for(group, kind)
    assert printer is not None
    assert printer.cells(obj, NOW)[0] == cells
    assert len(printer.columns) == len(cells)


def test_kinds_print_as_kube_apiserver_does_over_http(kubectl, kube):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}}
    kube.post("/api/v1/namespaces/default/configmaps", cm)
    rows = _rows(kubectl.ok("get", "configmaps", "c"))
    assert rows[0] == ["NAME", "DATA", "AGE"] and rows[1][:2] == ["c", "2"]
    kube.post(CRDS, widget_crd())
    rows = _rows(kubectl.ok("get", "crd"))
    assert rows[0] == ["NAME", "CREATED AT"] and rows[1][0] == "widgets.example.com"
