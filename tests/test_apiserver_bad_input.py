"""Bad input never crashes the server or corrupts its store; each gets the Status kube-apiserver sends."""

import socket

import pytest

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


@pytest.mark.parametrize("path", ["/nope", "/api/v2/pods", "/apis/no.such.group/v1/things",
                                  "/api/v1/namespaces/default/widgets", "/api/v1/namespaces/default/pods/p/bogus",
                                  "/openapi/v3/apis/none/v1"])
def test_unknown_paths_are_404_status(kube, path):
    reply = kube.get(path)
    assert reply.status == 404
    assert reply.body["kind"] == "Status" and reply.body["reason"] == "NotFound"


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
    reply = kube.post(CMS, {"metadata": {"name": "c", "labels": ["a"]}})
    assert reply.status == 422
    reply = kube.post(CMS, {"metadata": {"name": 5}})
    assert reply.status == 422
    assert kube.get(CMS).body["items"] == []


def test_bad_query_parameters(kube):
    assert kube.get(CMS, limit="ten").status == 400
    assert kube.get(CMS, watch="true", resourceVersion="abc").status == 400
