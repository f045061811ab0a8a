"""Bad input never crashes the server or corrupts its store; each gets the Status kube-apiserver sends."""

import socket

import pytest

from mxjob_controller.local.apiserver.server import ServerOptions
from tests.support import configmap

CMS = "/api/v1/namespaces/default/configmaps"


def test_malformed_json_is_400(kube):
    reply = kube.request("POST", CMS, raw_body=b'{"metadata": {"name": "x"', content_type="application/json")
    assert reply.status == 400
    assert reply.body["kind"] == "Status" and reply.body["reason"] == "BadRequest"
    assert reply.body["message"].startswith("the object provided is unrecognized (must be of type ConfigMap)")
    reply = kube.request("POST", CMS, raw_body=b"[1, 2]", content_type="application/json")
    assert reply.status == 400


def test_patch_without_a_patch_media_type_is_415(kube):
    kube.post(CMS, configmap("c"))
    reply = kube.patch(f"{CMS}/c", {"data": {"a": "b"}}, content_type="application/json")
    assert reply.status == 415
    assert reply.body["reason"] == "UnsupportedMediaType"
    reply = kube.request("POST", CMS, raw_body=b"<xml/>", content_type="application/xml")
    assert reply.status == 415


def test_body_over_the_cap_is_413(kube):
    huge = configmap("big", {"blob": "x" * (3 * 1024 * 1024 + 10)})
    reply = kube.post(CMS, huge)
    assert reply.status == 413
    assert reply.body["reason"] == "RequestEntityTooLarge"
    assert kube.get(f"{CMS}/big").status == 404
    assert kube.post(CMS, configmap("small")).status == 201  # the server is fine afterwards


@pytest.mark.parametrize(("path", "status"), [
    # outside every served group-version: Go's http.NotFound, plain text, as kube-apiserver (issue 47)
    ("/nope", False), ("/api/v2/pods", False), ("/apis/no.such.group/v1/things", False),
    ("/openapi/v3/apis/none/v1", False),
    # inside a served one: go-restful's 404, a Status
    ("/api/v1/namespaces/default/widgets", True), ("/api/v1/namespaces/default/pods/p/bogus", True)])
def test_unknown_paths_are_404_status(kube, path, status):
    reply = kube.get(path)
    assert reply.status == 404
    if status:
        assert reply.body["kind"] == "Status" and reply.body["reason"] == "NotFound"
    else:
        assert reply.body == "404 page not found\n"


@pytest.mark.parametrize(("name", "field"), [
    ("Upper", "metadata.name"),
    ("has_underscore", "metadata.name"),
    ("-leading-dash", "metadata.name"),
    ("a" * 254, "metadata.name"),
    ("dots..twice", "metadata.name"),
])
def test_invalid_names_are_422(kube, name, field):
    reply = kube.post(CMS, configmap(name))
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"].startswith(f'ConfigMap "{name}" is invalid: {field}: Invalid value: ')
    assert reply.body["details"]["kind"] == "ConfigMap"
    assert {c["field"] for c in reply.body["details"]["causes"]} == {field}


def test_service_names_are_dns1035_labels(kube):
    svc = {"metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}}
    reply = kube.post("/api/v1/namespaces/default/services", svc)
    assert reply.status == 422
    assert "a DNS-1035 label must consist of lower case alphanumeric characters" in reply.body["message"]


def test_missing_name_is_422(kube):
    reply = kube.post(CMS, {"metadata": {}, "data": {}})
    assert reply.status == 422
    assert reply.body["details"]["causes"][0] == {
        "reason": "FieldValueRequired", "message": "Required value: name or generateName is required",
        "field": "metadata.name"}


def test_invalid_labels_are_422_and_all_reported(kube):
    reply = kube.post(CMS, configmap("c", labels={"bad key": "v", "ok": "bad value!"}))
    assert reply.status == 422
    assert len(reply.body["details"]["causes"]) == 2
    assert reply.body["message"].startswith('ConfigMap "c" is invalid: [metadata.labels: Invalid value: "bad key"')


def test_method_not_allowed(kube):
    assert kube.request("POST", f"{CMS}/named", body=configmap("named")).status == 405
    assert kube.request("PUT", CMS, body=configmap("x")).status == 405
    assert kube.request("POST", "/version", body={}).status == 405


def test_garbage_on_the_socket_does_not_hurt_the_server(apiserver, kube):
    with socket.create_connection((apiserver.host, apiserver.port), timeout=5) as s:
        s.sendall(b"\x00\x01garbage\r\n\r\n")
        s.recv(1024)
    with socket.create_connection((apiserver.host, apiserver.port), timeout=5) as s:
        s.sendall(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        s.shutdown(socket.SHUT_WR)  # body cut short
        s.recv(1024)
    assert kube.post(CMS, configmap("after-garbage")).status == 201
    assert [i["metadata"]["name"] for i in kube.get(CMS).body["items"]] == ["after-garbage"]


def test_wrong_types_in_metadata_are_rejected_not_crashing(kube):
    reply = kube.post(CMS, {"metadata": "not-an-object"})
    assert reply.status == 400
    reply = kube.post(CMS, {"metadata": {"name": "c", "labels": ["a"]}})  # Go cannot decode them: kube's 400
    assert reply.status == 400
    reply = kube.post(CMS, {"metadata": {"name": 5}})
    assert reply.status == 400
    assert kube.get(CMS).body["items"] == []


def test_bad_query_parameters(kube):
    assert kube.get(CMS, limit="ten").status == 400
    assert kube.get(CMS, watch="true", resourceVersion="abc").status == 400


# --- YAML bodies: values kube keeps as strings, and values JSON cannot carry ---------------------------------

GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"


def _gadget_crd() -> dict:
    """A CRD whose spec keeps whatever it is given (x-kubernetes-preserve-unknown-fields)."""
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}]}}


def _post_yaml(kube, path: str, text: str):
    return kube.request("POST", path, raw_body=text.encode(), content_type="application/yaml")


def test_yaml_dates_in_a_custom_resource_stay_strings(kube):
    assert kube.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _gadget_crd()).status == 201
    reply = _post_yaml(kube, GADGETS, "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n"
                                      "spec:\n  day: 2020-01-01\n  at: 2020-01-01T10:20:30Z\n"
                                      "  tagged: !!timestamp 2021-02-03\n")
    assert reply.status == 201, reply.body
    assert reply.body["spec"] == {"day": "2020-01-01", "at": "2020-01-01T10:20:30Z", "tagged": "2021-02-03"}
    got = kube.get(f"{GADGETS}/g")
    assert got.status == 200 and got.body["spec"]["day"] == "2020-01-01"
    listed = kube.get(GADGETS)
    assert listed.status == 200 and [i["spec"]["at"] for i in listed.body["items"]] == ["2020-01-01T10:20:30Z"]


def test_yaml_dates_in_a_configmap_stay_strings(kube):
    reply = _post_yaml(kube, CMS, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dated\n"
                                  "data:\n  since: 2020-01-01\n")
    assert reply.status == 201, reply.body
    assert kube.get(f"{CMS}/dated").body["data"] == {"since": "2020-01-01"}
    assert kube.get(CMS).status == 200


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_yaml_values_json_cannot_carry_are_400_and_nothing_is_stored(kube, value):
    assert kube.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _gadget_crd()).status == 201
    reply = _post_yaml(kube, GADGETS, f"apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n"
                                      f"spec:\n  x: {value}\n")
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    assert kube.get(GADGETS).body["items"] == []


def test_yaml_binary_set_and_non_string_keys_become_json(kube):
    assert kube.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _gadget_crd()).status == 201
    reply = _post_yaml(kube, GADGETS, "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n"
                                      "spec:\n  blob: !!binary aGVsbG8=\n  keys: !!set {a, b}\n"
                                      "  byNumber: {2: two, 2.5: half, true: yes}\n")
    assert reply.status == 201, reply.body
    assert reply.body["spec"] == {"blob": "hello", "keys": {"a": None, "b": None},
                                  "byNumber": {"2": "two", "2.5": "half", "true": True}}
    assert kube.get(f"{GADGETS}/g").body["spec"] == reply.body["spec"]


def test_json_nan_and_infinity_are_not_json(kube):
    for token in (b"NaN", b"Infinity", b"-Infinity"):
        body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n","annotations":{"a":' + token + b"}}}"
        reply = kube.request("POST", CMS, raw_body=body, content_type="application/json")
        assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    kube.post(CMS, configmap("p"))
    reply = kube.request("PATCH", f"{CMS}/p", raw_body=b'{"metadata":{"labels":{"a":NaN}}}',
                         content_type="application/merge-patch+json")
    assert reply.status == 400
    assert kube.get(CMS).status == 200


# --- framing: lengths that would make the server read forever ------------------------------------------------

def _exchange(apiserver, raw: bytes) -> bytes:
    """Send ``raw``, keep the socket open for writing, and read until the server closes (10 s at most)."""
    with socket.create_connection((apiserver.host, apiserver.port), timeout=10) as s:
        s.sendall(raw)
        chunks = []
        while True:
            data = s.recv(65536)
            if not data:
                return b"".join(chunks)
            chunks.append(data)


@pytest.mark.parametrize("length", ["-1", "-100", "+5", "1_0", " 7x"])
def test_a_bad_content_length_is_400_and_closes(apiserver, kube, length):
    answer = _exchange(apiserver, f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  f"Content-Length: {length}\r\n\r\n{{}}".encode())
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert b"Connection: close" in answer
    assert kube.post(CMS, configmap("after")).status == 201


@pytest.mark.parametrize("size", [b"-5", b"-0x5", b"zz", b"+5"])
def test_a_bad_chunk_size_is_400_and_closes(apiserver, kube, size):
    answer = _exchange(apiserver, f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  f"Transfer-Encoding: chunked\r\n\r\n".encode() + size + b"\r\n{}\r\n0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert b"Connection: close" in answer
    assert kube.get(CMS).body["items"] == []


# --- query parameters kube takes as they are -----------------------------------------------------------------

def test_a_negative_limit_lists_everything_as_kube_does(kube):
    """kube-apiserver paginates only for limit > 0 (storage's ``hasLimit``); a negative limit is no limit."""
    for name in ("a", "b", "c"):
        kube.post(CMS, configmap(name))
    for limit in ("-1", "-50", "0"):
        reply = kube.get(CMS, limit=limit)
        assert reply.status == 200, reply.body
        assert [i["metadata"]["name"] for i in reply.body["items"]] == ["a", "b", "c"]
        assert "continue" not in reply.body["metadata"]


def test_a_negative_watch_timeout_ends_the_watch_at_once(apiserver, kube):
    """kube's watch handler arms its timer with the duration given: a negative one has already fired."""
    import time

    kube.post(CMS, configmap("a"))
    started = time.monotonic()
    events = list(kube.watch(CMS, timeout=10, timeoutSeconds=-5))
    assert time.monotonic() - started < 5
    assert events == []


INT64_MAX = (1 << 63) - 1
_INT64_FIELDS = [  # every int64 (and int32 taken for one) a pod or its template can hold, where it sits
    ("spec", "terminationGracePeriodSeconds"), ("spec", "activeDeadlineSeconds"),
    ("spec", "securityContext", "runAsUser"), ("spec", "securityContext", "runAsGroup"),
    ("spec", "securityContext", "fsGroup"), ("c", "securityContext", "runAsUser"),
    ("c", "lifecycle", "preStop", "sleep", "seconds"), ("c", "livenessProbe", "terminationGracePeriodSeconds"),
]


def _with_field(body: dict, path: tuple[str, ...], value: int) -> dict:
    target = body["spec"]["containers"][0] if path[0] == "c" else body["spec"]
    for key in path[1:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
    if path[1] == "livenessProbe":
        target["exec"] = {"command": ["true"]}
    return body


@pytest.mark.parametrize("server_options", [ServerOptions(bookmark_interval=0.2, block_timeout=0.2)])
@pytest.mark.parametrize("value", [INT64_MAX, -INT64_MAX - 1, INT64_MAX + 1, -INT64_MAX - 2])
def test_int64_extremes_are_stored_or_refused_never_a_5xx(kube, value):
    """Any value an int64 field can be sent (and one past each end) is stored or refused as kube does; creating,
    deleting (the pod's own grace period, or one asked for) and listing never answer 5xx, but for the one kube
    answers too: a list at a resourceVersion not reached is its 504 "Too large resource version" once the wait
    (shortened here) has passed."""
    pods = "/api/v1/namespaces/default/pods"
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    for index, path in enumerate(_INT64_FIELDS):
        body = _with_field({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{index}"}, "spec": {
            "nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]}}, path, value)
        created = kube.post(pods, body)
        assert created.status < 500, (path, created.body)
        deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"d{index}"}, "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": _with_field({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                {"name": "c", "image": "busybox"}]}}, path, value)}}
        assert kube.post(deployments, deployment).status < 500, path
        if created.ok:
            assert kube.delete(f"{pods}/p{index}").status < 500, path
            reply = kube.delete(f"{pods}/p{index}", body={"gracePeriodSeconds": value})
            assert reply.status < 500 and kube.delete(f"{pods}/p{index}", gracePeriodSeconds=value).status < 500
    for query in ({"limit": value}, {"limit": value, "watch": "false"}):
        assert kube.get(pods, **query).status < 500, query
    listed = kube.get(pods, resourceVersion=value)
    if value > 0:
        assert (listed.status, listed.body["details"]["causes"][0]["reason"]) == (504, "ResourceVersionTooLarge")
    else:
        assert (listed.status, listed.body["message"]) == (400, f'invalid resource version "{value}"')
