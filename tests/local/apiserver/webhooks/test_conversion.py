"""CRD conversion webhooks in the embedded API server, as kube-apiserver 1.32 calls them: the CRD's conversion stanza
(defaults, kube's validation messages), a ConversionReview on every path that serves or stores a custom resource at
another version than the one it is stored at (get, list, watch, create, update, patch, status, delete), the checks
kube makes of the answer with its messages, and kubectl reading through a conversion.

The test resource is ``Gadget`` (tests/webhook_support.py): ``v1`` (stored) has ``spec.items``, a list of strings;
``v2`` has ``spec.itemsCsv``, the same list comma-separated. The webhook is a real HTTPS server with a CA of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.local.apiserver.server import APIServer
from tests.support import Kube, Kubectl, free_port, wait_for
from tests.webhook_support import (
    GADGETS,
    Answer,
    Certificates,
    WebhookServer,
    allow,
    converter,
    gadget,
    gadget_crd,
    validating_configuration,
)

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
V1 = "/apis/example.com/v1/namespaces/default/gadgets"
V2 = "/apis/example.com/v2/namespaces/default/gadgets"
GVK_V1 = "example.com/v1, Kind=Gadget"


@pytest.fixture
def hooks() -> Iterator[WebhookServer]:
    with WebhookServer() as server:
        server.answer("/convert", converter())
        yield server


@pytest.fixture
def gadgets(kube: Kube, hooks: WebhookServer) -> WebhookServer:
    """The Gadget CRD served, converted by ``hooks`` at ``/convert``."""
    reply = kube.post(CRDS, gadget_crd(hooks.url("/convert"), hooks.ca_bundle))
    assert reply.status == 201, reply.body
    wait_for(lambda: kube.get(V2).status == 200, what="gadgets served")
    hooks.clear()
    return hooks


def create_v1(kube: Kube, name: str, items: tuple[str, ...] = ("a", "b"), **meta: Any) -> dict:
    """A gadget created at the storage version (no conversion)."""
    reply = kube.post(V1, gadget(name, "v1", items, **meta))
    assert reply.status == 201, reply.body
    return reply.body


def reviews(hooks: WebhookServer) -> list[dict]:
    return [r.body["request"] for r in hooks.received("/convert")]


def failure(message: str) -> dict:
    """What kube answers for a failed conversion: its storage returns a plain error, a 500 without a reason."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "code": 500}



# --- the CRD's conversion stanza ------------------------------------------------------------------------------

def causes(reply: Any) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in reply.body["details"]["causes"]]


def test_a_webhook_strategy_needs_its_stanza(kube: Kube) -> None:
    crd = gadget_crd(None, None)
    del crd["spec"]["conversion"]["webhook"]
    reply = kube.post(CRDS, crd)
    assert reply.status == 422
    assert reply.body["message"] == (
        f'CustomResourceDefinition.apiextensions.k8s.io "{GADGETS}" is invalid: [spec.conversion.webhookClientConfig: '
        "Required value: required when strategy is set to Webhook, spec.conversion.conversionReviewVersions: "
        "Required value]")


@pytest.mark.parametrize(("edit", "expected"), [
    (lambda c: c["webhook"].update(conversionReviewVersions=["v2"]),
     ['spec.conversion.conversionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, '
      "v1beta1"]),
    (lambda c: c["webhook"].pop("conversionReviewVersions"), ["spec.conversion.conversionReviewVersions: Required "
                                                              "value"]),
    (lambda c: c["webhook"]["clientConfig"].update(url="http://127.0.0.1/convert"),
     ["spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; "
      "desired format: https://host[/path]"]),
    (lambda c: c["webhook"]["clientConfig"].update(service={"namespace": "hooks"}),
     ["spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"]),
    (lambda c: c["webhook"]["clientConfig"].update(url=None, service={"namespace": "hooks"}),
     ["spec.conversion.webhookClientConfig.service.name: Required value: service name is required"]),
    (lambda c: c.update(strategy="None"),
     ["spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
      "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"]),
    (lambda c: c.update(strategy="Magic"),
     ['spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook"',
      "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
      "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"]),
], ids=["unknown-review-version", "no-review-versions", "http", "url-and-service", "service-name", "none-with-webhook",
        "unknown-strategy"])
def test_the_conversion_stanza_is_validated_as_kube_validates_it(kube: Kube, edit: Any, expected: list[str]) -> None:
    crd = gadget_crd("https://127.0.0.1:1/convert", None)
    edit(crd["spec"]["conversion"])
    client = crd["spec"]["conversion"]["webhook"]["clientConfig"]
    if client.get("url") is None:
        client.pop("url", None)
    reply = kube.post(CRDS, crd)
    assert reply.status == 422, reply.body
    assert causes(reply) == expected


def test_a_service_reference_gets_port_443(kube: Kube) -> None:
    crd = gadget_crd(None, None, service={"namespace": "hooks", "name": "convert", "path": "/convert"})
    created = kube.post(CRDS, crd).body
    assert created["spec"]["conversion"]["webhook"]["clientConfig"]["service"] == {
        "namespace": "hooks", "name": "convert", "path": "/convert", "port": 443}


# --- reading -----------------------------------------------------------------------------------------------------

def test_a_read_at_the_storage_version_calls_no_webhook(kube: Kube, gadgets: WebhookServer) -> None:
    create_v1(kube, "g1")
    assert kube.get(f"{V1}/g1").body["spec"] == {"items": ["a", "b"], "size": 1}
    assert kube.get(V1).status == 200
    assert reviews(gadgets) == []


def test_a_get_at_another_version_sends_one_review(kube: Kube, gadgets: WebhookServer) -> None:
    stored = create_v1(kube, "g1", labels={"team": "a"})
    got = kube.get(f"{V2}/g1").body
    assert got == {**stored, "apiVersion": "example.com/v2", "spec": {"itemsCsv": "a,b", "size": 1}}
    [received] = gadgets.received("/convert")
    assert received.query == {"timeout": "30s"}
    review = received.body
    assert review == {"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1",
                      "request": {"uid": review["request"]["uid"], "desiredAPIVersion": "example.com/v2",
                                  "objects": [stored]},
                      "response": {"uid": "", "convertedObjects": None, "result": {"metadata": {}}}}


def test_a_list_page_is_one_review(kube: Kube, gadgets: WebhookServer) -> None:
    for name in ("g1", "g2", "g3"):
        create_v1(kube, name, (name,))
    listed = kube.get(V2).body
    assert (listed["kind"], listed["apiVersion"]) == ("GadgetList", "example.com/v2")
    assert [i["spec"]["itemsCsv"] for i in listed["items"]] == ["g1", "g2", "g3"]
    assert [len(r["objects"]) for r in reviews(gadgets)] == [3]
    gadgets.clear()
    first = kube.get(V2, limit=2).body
    rest = kube.get(V2, limit=2, **{"continue": first["metadata"]["continue"]}).body
    assert [i["metadata"]["name"] for i in first["items"] + rest["items"]] == ["g1", "g2", "g3"]
    assert [[o["metadata"]["name"] for o in r["objects"]] for r in reviews(gadgets)] == [["g1", "g2"], ["g3"]]


def test_watch_events_are_converted(kube: Kube, gadgets: WebhookServer) -> None:
    create_v1(kube, "g1", ("x",))
    events: list[dict] = []
    stream = kube.watch(V2, timeout=10, timeoutSeconds=3)
    events.append(next(stream))
    assert kube.patch(f"{V1}/g1", {"spec": {"items": ["x", "y"]}}).status == 200
    assert kube.delete(f"{V1}/g1").status == 200
    for event in stream:
        events.append(event)
        if event["type"] == "DELETED":
            break
    assert [(e["type"], e["object"]["apiVersion"], e["object"]["spec"]["itemsCsv"]) for e in events] == [
        ("ADDED", "example.com/v2", "x"), ("MODIFIED", "example.com/v2", "x,y"),
        ("DELETED", "example.com/v2", "x,y")]


def test_a_watch_ends_with_an_error_when_conversion_fails(kube: Kube, gadgets: WebhookServer) -> None:
    create_v1(kube, "g1")
    gadgets.answer("/convert", converter(status="Failure", message="converter broken"))
    events = list(kube.watch(V2, timeout=10, timeoutSeconds=5))
    message = f"conversion webhook for {GVK_V1} failed: converter broken"
    assert events == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"Internal error occurred: {message}", "reason": "InternalError", "code": 500,
        "details": {"causes": [{"message": message}]}}}]


# --- writing -----------------------------------------------------------------------------------------------------

def test_a_create_at_another_version_is_stored_at_the_storage_version(apiserver: APIServer, kube: Kube,
                                                                      gadgets: WebhookServer) -> None:
    reply = kube.post(V2, gadget("g1", "v2", ("p", "q")))
    assert reply.status == 201
    assert reply.body["apiVersion"] == "example.com/v2"
    assert reply.body["spec"] == {"itemsCsv": "p,q", "size": 2}  # v2's default, applied to the request
    stored = apiserver.get("example.com/v1", "Gadget", "g1", "default")
    assert stored is not None and stored["spec"] == {"items": ["p", "q"], "size": 2}
    to_storage, back = reviews(gadgets)
    assert to_storage["desiredAPIVersion"] == "example.com/v1"
    [sent] = to_storage["objects"]
    assert sent["apiVersion"] == "example.com/v2" and sent["metadata"]["uid"] == stored["metadata"]["uid"]
    assert "resourceVersion" not in sent["metadata"]
    assert back["desiredAPIVersion"] == "example.com/v2"


def test_updates_and_patches_work_in_the_requested_version(apiserver: APIServer, kube: Kube,
                                                           gadgets: WebhookServer) -> None:
    create_v1(kube, "g1", ("a",))
    current = kube.get(f"{V2}/g1").body
    current["spec"]["itemsCsv"] = "a,b"
    updated = kube.put(f"{V2}/g1", current).body
    assert (updated["spec"]["itemsCsv"], updated["metadata"]["generation"]) == ("a,b", 2)
    patched = kube.patch(f"{V2}/g1", {"spec": {"itemsCsv": "c"}}).body  # a v2 field: the patch applies at v2
    assert patched["spec"] == {"itemsCsv": "c", "size": 1}
    json_patched = kube.patch(f"{V2}/g1", [{"op": "replace", "path": "/spec/itemsCsv", "value": "d,e"}],
                              content_type="application/json-patch+json").body
    assert json_patched["spec"]["itemsCsv"] == "d,e"
    assert apiserver.get("example.com/v1", "Gadget", "g1", "default")["spec"]["items"] == ["d", "e"]
    stale = {**current, "spec": {"itemsCsv": "z"}}
    assert kube.put(f"{V2}/g1", stale).status == 409


def test_status_writes_convert_too(apiserver: APIServer, kube: Kube, gadgets: WebhookServer) -> None:
    create_v1(kube, "g1")
    current = kube.get(f"{V2}/g1").body
    reply = kube.put(f"{V2}/g1/status", {**current, "status": {"phase": "Ready"}, "spec": {"itemsCsv": "ignored"}})
    assert reply.status == 200
    assert (reply.body["status"], reply.body["spec"]["itemsCsv"]) == ({"phase": "Ready"}, "a,b")
    assert kube.patch(f"{V2}/g1/status", {"status": {"phase": "Done"}}).body["status"] == {"phase": "Done"}
    stored = apiserver.get("example.com/v1", "Gadget", "g1", "default")
    assert stored["status"] == {"phase": "Done"} and stored["spec"]["items"] == ["a", "b"]


def test_a_delete_returns_the_object_at_the_requested_version(kube: Kube, gadgets: WebhookServer) -> None:
    create_v1(kube, "g1", ("k",), finalizers=["example.com/hold"])   # a pending delete answers with the object
    reply = kube.delete(f"{V2}/g1")
    assert (reply.status, reply.body["apiVersion"], reply.body["spec"]["itemsCsv"]) == (200, "example.com/v2", "k")
    gone = kube.patch(f"{V2}/g1", {"metadata": {"finalizers": None}})
    assert gone.status == 200 and kube.get(f"{V2}/g1").status == 404
    create_v1(kube, "g0")
    done = kube.delete(f"{V2}/g0").body   # an immediate delete answers with a Status naming it, as kube's CR store
    assert (done["kind"], done["status"], done["details"]["name"], done["details"]["kind"]) == (
        "Status", "Success", "g0", "gadgets")
    create_v1(kube, "g2")
    create_v1(kube, "g3")
    gadgets.clear()
    collection = kube.delete(V2).body
    assert [i["spec"]["itemsCsv"] for i in collection["items"]] == ["a,b", "a,b"]
    assert [len(r["objects"]) for r in reviews(gadgets)] == [2]


def test_no_strategy_only_rewrites_the_api_version(kube: Kube, hooks: WebhookServer) -> None:
    assert kube.post(CRDS, gadget_crd(None, None, strategy="None")).status == 201
    wait_for(lambda: kube.get(V2).status == 200)
    create_v1(kube, "g1")
    got = kube.get(f"{V2}/g1").body
    assert (got["apiVersion"], got["spec"]) == ("example.com/v2", {"items": ["a", "b"], "size": 1})
    assert hooks.received() == []


# --- what kube checks in the answer -------------------------------------------------------------------------

def _rename(response: dict, review: dict) -> dict:
    response["response"]["convertedObjects"][0]["metadata"]["name"] = "other"
    return response


def _wrong_version(response: dict, review: dict) -> dict:
    response["response"]["convertedObjects"][0]["apiVersion"] = "example.com/v1"
    return response


def _wrong_kind(response: dict, review: dict) -> dict:
    response["response"]["convertedObjects"][0]["kind"] = "Widget"
    return response


def _no_objects(response: dict, review: dict) -> dict:
    response["response"]["convertedObjects"] = []
    return response


def _wrong_uid(response: dict, review: dict) -> dict:
    response["response"]["uid"] = "someone-else"
    return response


def _no_metadata(response: dict, review: dict) -> dict:
    del response["response"]["convertedObjects"][0]["metadata"]
    return response


def _label_number(response: dict, review: dict) -> dict:
    response["response"]["convertedObjects"][0]["metadata"]["labels"] = {"b": 2}
    return response


def _bad_label(response: dict, review: dict) -> dict:
    response["response"]["convertedObjects"][0]["metadata"]["labels"] = {"bad key!": "x"}
    return response


@pytest.mark.parametrize(("answer", "message"), [
    (converter(status="Failure", message="cannot convert"), f"conversion webhook for {GVK_V1} failed: cannot convert"),
    (converter(status="Failure"), f"conversion webhook for {GVK_V1} failed: response.result.status was 'Failure', "
                                  "not 'Success'"),
    (converter(_wrong_uid), f'conversion webhook for {GVK_V1} failed: expected response.uid="{{uid}}", got '
                            '"someone-else"'),
    (converter(_no_objects), f"conversion webhook for {GVK_V1} returned 0 objects, expected 1"),
    (converter(_wrong_version), f"conversion webhook for {GVK_V1} returned invalid object at index 0: invalid "
                                "groupVersion (expected example.com/v2, received example.com/v1)"),
    (converter(_wrong_kind), f"conversion webhook for {GVK_V1} returned invalid object at index 0: invalid kind "
                             "(expected Gadget, received Widget)"),
    (converter(_rename), f"conversion webhook for {GVK_V1} returned invalid object: must have the same name: g1 != "
                         "other"),
    (converter(_no_metadata), f"conversion webhook for {GVK_V1} returned invalid object: must have the same name: "
                              "g1 != "),  # kube checks the identity before it restores the metadata
    (converter(_label_number), f"conversion webhook for {GVK_V1} returned invalid metadata: metadata.labels[b] must "
                               "be a string, but is int64 in converted object"),
    (converter(_bad_label), f'conversion webhook for {GVK_V1} returned invalid metadata: metadata.labels: Invalid '
                            "value: \"bad key!\": name part must consist of alphanumeric characters, '-', '_' or "
                            "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
                            "'my.name',  or '123-abc', regex used for validation is "
                            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
    (lambda r: Answer({"kind": "ConversionReview", "apiVersion": "apiextensions.k8s.io/v1beta1",
                       "response": {"uid": r["request"]["uid"]}}),
     f"conversion webhook for {GVK_V1} failed: expected webhook response of apiextensions.k8s.io/v1, "
     "Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"),
    (lambda r: Answer(b"<html>", 502, "text/html"),
     f'conversion webhook for {GVK_V1} failed: an error on the server ("<html>") has prevented the request from '
     "succeeding"),
], ids=["failure-message", "failure", "uid", "count", "version", "kind", "name", "metadata", "label-type", "label",
        "review-kind", "http-502"])
def test_a_bad_answer_fails_the_read(kube: Kube, gadgets: WebhookServer, answer: Any, message: str) -> None:
    create_v1(kube, "g1")
    gadgets.answer("/convert", answer)
    reply = kube.get(f"{V2}/g1")
    uid = reviews(gadgets)[0]["uid"]
    assert (reply.status, reply.body) == (500, failure(message.replace("{uid}", uid)))


def test_a_bad_object_in_a_list_is_named_by_its_index(kube: Kube, gadgets: WebhookServer) -> None:
    create_v1(kube, "g1")
    create_v1(kube, "g2")

    def rename_second(response: dict, review: dict) -> dict:
        response["response"]["convertedObjects"][1]["metadata"]["name"] = "other"
        return response

    gadgets.answer("/convert", converter(rename_second))
    reply = kube.get(V2)
    assert (reply.status, reply.body) == (500, failure(
        "conversion webhook for example.com/v2, Kind=GadgetList returned invalid converted object at index 1: must "
        "have the same name: g2 != other"))


def test_metadata_is_restored_but_labels_and_annotations_are_taken_and_unknown_fields_pruned(
        kube: Kube, gadgets: WebhookServer) -> None:
    stored = create_v1(kube, "g1", labels={"a": "1"})

    def meddle(response: dict, review: dict) -> dict:
        obj = response["response"]["convertedObjects"][0]
        obj["metadata"].update(labels={"b": "2"}, annotations={"note": "converted"}, generation=99,
                               resourceVersion="1", finalizers=["x.example.com/f"])
        obj["spec"]["unknown"] = "pruned"
        obj["extra"] = True
        return response

    gadgets.answer("/convert", converter(meddle))
    got = kube.get(f"{V2}/g1").body
    assert got["metadata"] == {**stored["metadata"], "labels": {"b": "2"}, "annotations": {"note": "converted"}}
    assert got["spec"] == {"itemsCsv": "a,b", "size": 1}
    assert "extra" not in got


def test_an_unreachable_or_slow_webhook_fails_reads_and_writes(apiserver: APIServer, kube: Kube,
                                                               hooks: WebhookServer) -> None:
    port = free_port()
    url = f"https://127.0.0.1:{port}/convert"
    assert kube.post(CRDS, gadget_crd(url, hooks.ca_bundle)).status == 201
    wait_for(lambda: kube.get(V1).status == 200)
    create_v1(kube, "g1")
    reply = kube.get(f"{V2}/g1")
    assert (reply.status, reply.body) == (500, failure(
        f'conversion webhook for {GVK_V1} failed: Post "{url}?timeout=30s": dial tcp 127.0.0.1:{port}: connect: '
        "connection refused"))
    reply = kube.post(V2, gadget("g2", "v2"))
    assert (reply.status, reply.body["message"]) == (500, (
        f'conversion webhook for example.com/v2, Kind=Gadget failed: Post "{url}?timeout=30s": dial tcp '
        f"127.0.0.1:{port}: connect: connection refused"))
    assert kube.get(f"{V1}/g2").status == 404
    crd = kube.get(f"{CRDS}/{GADGETS}").body
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = hooks.url("/convert")
    assert kube.put(f"{CRDS}/{GADGETS}", crd).status == 200
    hooks.answer("/convert", lambda review: Answer(None, delay=5))
    apiserver.conversion_timeout = 1
    reply = kube.get(f"{V2}/g1")
    assert (reply.status, reply.body) == (500, failure(
        f'conversion webhook for {GVK_V1} failed: Post "{hooks.url("/convert")}?timeout=1s": context deadline '
        "exceeded"))


def test_a_conversion_webhook_behind_a_service(apiserver: APIServer, kube: Kube) -> None:
    with WebhookServer(Certificates(dns_names=("convert.hooks.svc",))) as hooks:
        hooks.answer("/convert", converter())
        service = {"namespace": "hooks", "name": "convert", "path": "/convert"}
        assert kube.post(CRDS, gadget_crd(None, hooks.ca_bundle, service=service)).status == 201
        wait_for(lambda: kube.get(V1).status == 200)
        create_v1(kube, "g1")
        reply = kube.get(f"{V2}/g1")
        assert reply.body["message"] == (f'conversion webhook for {GVK_V1} failed: Post '
                                         '"https://convert.hooks.svc:443/convert?timeout=30s": service "convert" not '
                                         "found")
        assert kube.post("/api/v1/namespaces", {"metadata": {"name": "hooks"}}).status == 201
        assert kube.post("/api/v1/namespaces/hooks/services",
                         {"metadata": {"name": "convert"}, "spec": {"ports": [{"port": 443}]}}).status == 201
        apiserver.service_resolver = lambda namespace, name, port: hooks.address
        assert kube.get(f"{V2}/g1").body["spec"]["itemsCsv"] == "a,b"


def test_an_admission_webhook_on_another_version_sees_the_converted_object(kube: Kube,
                                                                           gadgets: WebhookServer) -> None:
    gadgets.answer("/validate", allow())
    config = validating_configuration("gadgets.example.com", gadgets.url("/validate"), gadgets.ca_bundle, rules=[
        {"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["gadgets"]}])
    assert kube.post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", config).status == 201
    assert kube.post(V2, gadget("g1", "v2", ("m", "n"))).status == 201
    [admitted] = gadgets.received("/validate")
    request = admitted.body["request"]
    assert request["kind"]["version"] == "v1" and request["requestKind"]["version"] == "v2"
    assert request["object"]["apiVersion"] == "example.com/v1"
    assert request["object"]["spec"] == {"items": ["m", "n"], "size": 2}


# --- kubectl -------------------------------------------------------------------------------------------------------

def test_kubectl_reads_through_the_conversion(kubectl: Kubectl, kube: Kube, gadgets: WebhookServer,
                                              tmp_path: Path) -> None:
    manifest = tmp_path / "g.yaml"
    manifest.write_text(yaml.safe_dump(gadget("g1", "v2", ("red", "green"))))
    assert kubectl.ok("apply", "-f", str(manifest)).strip() == "gadget.example.com/g1 created"
    lines = kubectl.ok("get", "gadgets.v2.example.com").splitlines()
    assert [line.split() for line in lines] == [["NAME", "CSV"], ["g1", "red,green"]]
    lines = kubectl.ok("get", "gadgets.v1.example.com").splitlines()
    assert [line.split() for line in lines] == [["NAME", "ITEMS"], ["g1", '["red","green"]']]
    got = json.loads(kubectl.ok("get", "gadgets.v2.example.com", "g1", "-o", "json"))
    assert (got["apiVersion"], got["spec"]["itemsCsv"]) == ("example.com/v2", "red,green")
    assert any(r["desiredAPIVersion"] == "example.com/v2" for r in reviews(gadgets))
    gadgets.answer("/convert", converter(status="Failure", message="converter down"))
    proc = kubectl.run("get", "gadgets.v2.example.com", "g1")
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"Error from server: conversion webhook for {GVK_V1} failed: converter down"
