"""Protobuf bodies (``application/vnd.kubernetes.protobuf``) for the built-in kinds, as kube-apiserver 1.32 speaks
them: kubectl's typed clients send protobuf and ask for it first; custom resources stay JSON-only (415)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.local.apiserver.encoding import kubeproto
from tests.crds import widget_crd
from tests.support import Kube, configmap, pod

PROTOBUF = kubeproto.MEDIA_TYPE
KUBECTL_ACCEPT = "application/vnd.kubernetes.protobuf,application/json"
ROOT = Path(__file__).resolve().parents[4]

# kubectl command, what it prints, the object's URL, and its collection (for the same create in JSON).
COMMANDS = [
    (("create", "namespace", "x"), "namespace/x created", "/api/v1/namespaces/x", "/api/v1/namespaces"),
    (("create", "configmap", "x", "--from-literal", "a=b"), "configmap/x created",
     "/api/v1/namespaces/default/configmaps/x", "/api/v1/namespaces/default/configmaps"),
    (("create", "secret", "generic", "x", "--from-literal", "k=v"), "secret/x created",
     "/api/v1/namespaces/default/secrets/x", "/api/v1/namespaces/default/secrets"),
    (("create", "serviceaccount", "x"), "serviceaccount/x created",
     "/api/v1/namespaces/default/serviceaccounts/x", "/api/v1/namespaces/default/serviceaccounts"),
    (("create", "deployment", "x", "--image", "nginx"), "deployment.apps/x created",
     "/apis/apps/v1/namespaces/default/deployments/x", "/apis/apps/v1/namespaces/default/deployments"),
]
_VOLATILE = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "name")


def _raw(kube: Kube, method: str, path: str, body: bytes | None = None, *, content_type: str = PROTOBUF,
         accept: str = KUBECTL_ACCEPT, query: str = "") -> tuple[int, str, bytes]:
    headers = {"Accept": accept, **kube._auth}
    if body is not None:
        headers["Content-Type"] = content_type
    url = kube.api.configuration.host + path + (f"?{query}" if query else "")
    r = kube.api.rest_client.pool_manager.request(method, url, body=body, headers=headers, preload_content=True)
    return r.status, r.headers.get("Content-Type", ""), r.data


def _stable(obj: dict) -> dict:
    """An object without what differs between two creates of it (identity, times, its name)."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in _VOLATILE}
    return {**obj, "metadata": meta}


@pytest.mark.parametrize(("args", "printed", "url", "collection"), COMMANDS, ids=[c[0][1] for c in COMMANDS])
def test_kubectl_create_speaks_protobuf(kubectl, kube, args, printed, url, collection):
    dry = kubectl.run(*args, "--dry-run=server")
    assert (dry.returncode, dry.stdout.strip(), dry.stderr) == (0, printed + " (server dry run)", "")
    assert kube.get(url).status == 404
    done = kubectl.run(*args)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, printed, "")
    stored = kube.get(url)
    assert stored.status == 200

    # The same object kubectl would send as JSON, created under another name, is stored the same.
    sent = json.loads(kubectl.ok(*args, "--dry-run=client", "-o", "json"))
    sent["metadata"]["name"] = "x-json"
    created = kube.post(collection, sent)
    assert created.status == 201, created.body
    renamed = json.loads(json.dumps(kube.get(url + "-json").body).replace('"x-json"', '"x"'))
    assert _stable(stored.body) == _stable(renamed)
    if args[1] == "namespace":
        assert stored.body["spec"] == {"finalizers": ["kubernetes"]}


@pytest.mark.parametrize(("args", "printed", "url", "collection"), COMMANDS, ids=[c[0][1] for c in COMMANDS])
def test_protobuf_answers_decode_to_the_json_answers(kubectl, kube, args, printed, url, collection):
    kubectl.ok(*args)
    code, ctype, body = _raw(kube, "GET", url)
    assert (code, ctype) == (200, PROTOBUF)
    assert body.startswith(b"k8s\x00")
    assert kubeproto.decode_object(body) == kube.get(url).body
    code, ctype, body = _raw(kube, "GET", collection)
    assert (code, ctype) == (200, PROTOBUF)
    listed = kubeproto.decode_object(body)
    as_json = kube.get(collection).body   # kube's protobuf list items carry no apiVersion and kind
    assert listed == {**as_json, "items": [{k: v for k, v in item.items() if k not in ("apiVersion", "kind")}
                                           for item in as_json["items"]]}
    assert url.rsplit("/", 1)[1] in [item["metadata"]["name"] for item in listed["items"]]


def test_protobuf_create_stores_what_json_create_stores(kube):
    obj = pod("p", labels={"app": "p"})
    obj["spec"]["containers"][0].update(ports=[{"containerPort": 80, "protocol": "TCP"}],
                                        resources={"limits": {"cpu": "500m", "memory": "1Gi"}})
    body = kubeproto.encode_object({"apiVersion": "v1", "kind": "Pod", **obj})
    code, ctype, answer = _raw(kube, "POST", "/api/v1/namespaces/default/pods", body)
    assert (code, ctype) == (201, PROTOBUF), answer
    via_protobuf = kubeproto.decode_object(answer)
    assert via_protobuf == kube.get("/api/v1/namespaces/default/pods/p").body
    via_json = kube.post("/api/v1/namespaces/default/pods", {**obj, "metadata": {**obj["metadata"], "name": "q"}})
    assert via_json.status == 201
    assert _stable(via_protobuf) == _stable(via_json.body)
    assert via_protobuf["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m", "memory": "1Gi"},
                                                                  "requests": {"cpu": "500m", "memory": "1Gi"}}


def test_already_exists_is_a_protobuf_status(kubectl, kube):
    kubectl.ok("create", "namespace", "x")
    again = kubectl.run("create", "namespace", "x")
    assert (again.returncode, again.stderr.strip()) == (1, 'Error from server (AlreadyExists): namespaces "x" '
                                                           "already exists")
    body = kubeproto.encode_object({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
    code, ctype, answer = _raw(kube, "POST", "/api/v1/namespaces", body)
    assert (code, ctype) == (409, PROTOBUF)
    assert kubeproto.decode_object(answer) == {
        "apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure",
        "message": 'namespaces "x" already exists', "reason": "AlreadyExists",
        "details": {"name": "x", "kind": "namespaces"}, "code": 409}
    missing = kubectl.run("create", "configmap", "c", "-n", "nowhere", "--from-literal", "a=b")
    assert missing.returncode == 1
    assert missing.stderr.strip() == 'error: failed to create configmap: namespaces "nowhere" not found'


def test_json_stays_the_default(kube):
    kube.post("/api/v1/namespaces/default/configmaps", configmap("c", {"a": "b"}))
    for accept in ("application/json", "*/*", "application/json,application/vnd.kubernetes.protobuf",
                   "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json"):
        code, ctype, body = _raw(kube, "GET", "/api/v1/namespaces/default/configmaps/c", accept=accept)
        assert (code, ctype) == (200, "application/json"), accept
        assert json.loads(body)["kind"] in ("ConfigMap", "Table")


def test_custom_resources_refuse_protobuf(kubectl, kube, tmp_path):
    (tmp_path / "crd.yaml").write_text(yaml.safe_dump(widget_crd()))
    kubectl.ok("create", "-f", str(tmp_path / "crd.yaml"))
    kubectl.ok("wait", "--for", "condition=established", "crd/widgets.example.com", "--timeout=10s")
    path = "/apis/example.com/v1/namespaces/default/widgets"
    body = b"k8s\x00" + b"\x0a\x17\x0a\x0eexample.com/v1\x12\x06Widget"
    code, ctype, answer = _raw(kube, "POST", path, body)
    assert (code, ctype) == (415, "application/json")
    assert json.loads(answer) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the body of the request was in an unknown format - accepted media types include: "
                   "application/json, application/yaml", "reason": "UnsupportedMediaType", "code": 415}
    created = kube.post(path, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                               "spec": {"size": 1}})
    assert created.status == 201
    code, ctype, answer = _raw(kube, "GET", path + "/w")   # Accept prefers protobuf: JSON, as kube answers
    assert (code, ctype, json.loads(answer)["metadata"]["name"]) == (200, "application/json", "w")


@pytest.mark.parametrize(("body", "message"), [
    (b"not protobuf at all", "the object provided is unrecognized (must be of type ConfigMap): provided data does "
     "not appear to be a protobuf message, expected prefix [107 56 115 0] (6e6f742070726f746f62756620617420616c6c)"),
    (b"k8s\x00\x0a\xff", "the object provided is unrecognized (must be of type ConfigMap): unexpected EOF "
     "(6b3873000aff)"),
    (b"k8s\x00\x0a\x0a\x0a\x02v1\x12\x04Nope", 'Nope in version "v1" cannot be handled as a ConfigMap: no kind '
     '"Nope" is registered for version "v1" in scheme "pkg/api/legacyscheme/scheme.go:30"'),
])
def test_undecodable_protobuf_is_400(kube, body, message):
    code, ctype, answer = _raw(kube, "POST", "/api/v1/namespaces/default/configmaps", body)
    assert (code, ctype) == (400, PROTOBUF)
    status = kubeproto.decode_object(answer)
    assert (status["reason"], status["message"]) == ("BadRequest", message)


def test_watch_in_protobuf_is_length_prefixed_watch_events(kube):
    kube.post("/api/v1/namespaces/default/configmaps", configmap("w", {"a": "1"}, labels={"l": "v"}))
    url = kube.api.configuration.host + "/api/v1/namespaces/default/configmaps"
    r = kube.api.rest_client.pool_manager.request(
        "GET", url + "?watch=true&resourceVersion=0&timeoutSeconds=1",
        headers={"Accept": KUBECTL_ACCEPT, **kube._auth}, preload_content=True, timeout=10)
    assert (r.status, r.headers["Content-Type"]) == (200, kubeproto.WATCH_MEDIA_TYPE)
    events = kubeproto.read_watch_frames(r.data)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "w")]
    assert events[0]["object"] == kube.get("/api/v1/namespaces/default/configmaps/w").body


def test_review_kinds_still_decode_and_answer_in_protobuf(kubectl):
    assert kubectl.ok("auth", "can-i", "create", "pods").strip() == "yes"
    assert "Username" in kubectl.ok("auth", "whoami")


def test_codec_round_trips_the_well_known_types():
    obj: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "creationTimestamp": "2024-05-06T07:08:09Z", "generation": 3,
                     "labels": {"a": "b"}, "managedFields": [{
                         "manager": "m", "operation": "Update", "apiVersion": "apps/v1",
                         "time": "2024-05-06T07:08:09Z", "fieldsType": "FieldsV1",
                         "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"a": "b"}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                 "template": {"metadata": {"creationTimestamp": None, "labels": {"a": "b"}}, "spec": {
                     "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "100m"}},
                                     "readinessProbe": {"httpGet": {"path": "/", "port": "http"},
                                                        "periodSeconds": 5}}],
                     "volumes": [{"name": "v", "emptyDir": {}}]}}},
        "status": {},
    }
    assert kubeproto.decode_object(kubeproto.encode_object(obj)) == obj
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "involvedObject": {},
             "eventTime": "2024-05-06T07:08:09.123456Z", "reportingComponent": "", "reportingInstance": ""}
    assert kubeproto.decode_object(kubeproto.encode_object(event)) == event


@pytest.mark.skipif(not all(Path(p).is_dir() for p in ("/work/.mirror/kubernetes+api/repo",
                                                        "/work/.mirror/kubernetes+apimachinery/repo",
                                                        "/work/.mirror/kubernetes+apiextensions-apiserver/repo",
                                                        "/work/.mirror/kubernetes+kube-aggregator/repo"))
                    and "MXJOB_K8S_PROTO_SOURCES" not in os.environ,
                    reason="no git clones of kubernetes/api, apimachinery, apiextensions-apiserver and kube-aggregator "
                           "to generate from")
@pytest.mark.integration
def test_the_tables_are_what_the_generator_writes():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_protobuf", ROOT / "hack" / "gen_protobuf.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    api, machinery, extensions, aggregator = os.environ.get(
        "MXJOB_K8S_PROTO_SOURCES",
        f"{gen.DEFAULT_API_GIT}:{gen.DEFAULT_APIMACHINERY_GIT}:{gen.DEFAULT_APIEXTENSIONS_GIT}:"
        f"{gen.DEFAULT_AGGREGATOR_GIT}").split(":")
    assert gen.generate(api, machinery, extensions, aggregator) == gen.OUTPUT.read_text(), "run hack/gen_protobuf.py"


def test_a_crd_travels_in_protobuf(kube):
    """The project's MXJob CRD (defaults, enums, int-or-string, CEL rules, nested schemas) as a protobuf create
    stores what its JSON create stores, and reads back in protobuf as it reads in JSON."""
    crd = yaml.safe_load((ROOT / "manifests" / "crd" / "kubeflow.org_mxjobs.yaml").read_text())
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    via_json = kube.post(crds, crd, dryRun="All").body
    code, ctype, answer = _raw(kube, "POST", crds, kubeproto.encode_object(crd))
    assert (code, ctype) == (201, PROTOBUF), answer
    stored = kube.get(f"{crds}/mxjobs.kubeflow.org").body
    assert kubeproto.decode_object(answer)["spec"] == stored["spec"] == via_json["spec"]
    code, _, body = _raw(kube, "GET", f"{crds}/mxjobs.kubeflow.org")
    assert code == 200 and _stable(kubeproto.decode_object(body)) == _stable(kube.get(
        f"{crds}/mxjobs.kubeflow.org").body)


@pytest.mark.parametrize("message, value, wire", [
    # apiextensions' "Or" messages, worked by hand from generated.proto: allows (1, varint), schema (2, bytes)...
    (kubeproto.SCHEMA_OR_BOOL, False, b"\x08\x00"),
    (kubeproto.SCHEMA_OR_BOOL, {"type": "string"}, b"\x08\x01\x12\x08\x2a\x06string"),
    (kubeproto.SCHEMA_OR_ARRAY, [{"type": "x"}, {"type": "y"}], b"\x12\x03\x2a\x01x\x12\x03\x2a\x01y"),
    (kubeproto.SCHEMA_OR_STRINGS, ["a", "b"], b"\x12\x01a\x12\x01b"),
    (kubeproto.JSON_VALUE, {"a": [1, None]}, b'\x0a\x0e{"a":[1,null]}'),
])
def test_crd_schema_messages_on_the_wire(message, value, wire):
    assert kubeproto.encode_message(message, value) == wire
    assert kubeproto.decode_message(message, wire) == value
