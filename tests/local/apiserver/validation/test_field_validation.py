"""Unknown and duplicate fields (``fieldValidation`` Strict / Warn / Ignore), schema defaults and pruning of
custom resources, and schemas following their CRD: through the official client and through kubectl."""

from __future__ import annotations

import copy
import json

import pytest

from mxjob_controller.kube.schema import validate_definition
from tests.local.apiserver.validation.test_validation import (
    CRDS,
    DEPLOYMENTS,
    GADGET_SCHEMA,
    GADGETS,
    PODS,
    base_pod,
    gadget_crd,
)
from tests.support import wait_for

POD_WITH_UNKNOWN = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: main
    image: busybox:1.36
    imagePolicy: Always
  restart: Never
"""
UNKNOWN_POD_FIELDS = 'unknown field "spec.containers[0].imagePolicy", unknown field "spec.restart"'


def warnings(reply) -> list[str]:
    """The texts of a reply's ``Warning: 299 - "..."`` headers (comma-joined by the client)."""
    header = reply.headers.get("warning", "")
    return json.loads("[" + header.replace('299 - "', '"') + "]") if header else []


def pod_with_unknown(name: str = "p") -> dict:
    pod = base_pod()
    pod["metadata"]["name"] = name
    pod["spec"]["containers"][0]["imagePolicy"] = "Always"
    pod["spec"]["restart"] = "Never"
    pod["metadata"]["tag"] = "x"
    return pod


@pytest.fixture
def gadgets(kube):
    assert kube.post(CRDS, gadget_crd(DEFAULTING_SCHEMA)).status == 201
    wait_for(lambda: kube.get(GADGETS).status == 200, what="gadgets served")
    return kube


DEFAULTING_SCHEMA = copy.deepcopy(GADGET_SCHEMA)
DEFAULTING_SCHEMA["properties"]["spec"]["properties"].update({
    "mode": {"type": "string", "enum": ["Fast", "Slow"], "default": "Fast"},
    "policy": {"type": "object", "default": {}, "properties": {
        "retries": {"type": "integer", "default": 3},
        "backoff": {"type": "object", "default": {"base": 1}, "properties": {
            "base": {"type": "integer"}, "max": {"type": "integer", "default": 60}}}}},
    "workers": {"type": "array", "items": {"type": "object", "properties": {
        "cpu": {"type": "integer", "default": 2}, "gpu": {"type": "integer"}}}},
    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    "note": {"type": "string", "nullable": True},
    "size": {"type": "string"},
})
DEFAULTING_SCHEMA["properties"]["status"] = {"type": "object", "properties": {"phase": {"type": "string"}}}


# --- fieldValidation on built-in kinds --------------------------------------------------------------------

def test_strict_rejects_unknown_fields_with_kube_message(kube):
    reply = kube.post(PODS, pod_with_unknown(), fieldValidation="Strict")
    assert reply.status == 400
    assert reply.body["reason"] == "BadRequest"
    assert reply.body["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "metadata.tag", unknown field "spec.containers[0].imagePolicy", unknown field "spec.restart"')
    assert kube.get(f"{PODS}/p").status == 404


def test_warn_is_the_default_and_drops_unknown_fields(kube):
    reply = kube.post(PODS, pod_with_unknown())
    assert reply.status == 201, reply.body
    assert warnings(reply) == ['unknown field "metadata.tag"', 'unknown field "spec.containers[0].imagePolicy"',
                               'unknown field "spec.restart"']
    stored = kube.get(f"{PODS}/p").body
    assert "restart" not in stored["spec"] and "tag" not in stored["metadata"]
    assert "imagePolicy" not in stored["spec"]["containers"][0]
    assert stored["spec"]["restartPolicy"] == "Always"  # defaulting still ran


def test_ignore_drops_unknown_fields_silently(kube):
    reply = kube.post(PODS, pod_with_unknown(), fieldValidation="Ignore")
    assert reply.status == 201
    assert "warning" not in reply.headers
    assert "restart" not in kube.get(f"{PODS}/p").body["spec"]


def test_unknown_field_validation_mode_is_a_bad_request(kube):
    reply = kube.post(PODS, base_pod(), fieldValidation="Loose")
    assert reply.status == 400
    assert reply.body["message"] == ('fieldValidation parameter unsupported: "Loose". Must be one of "Ignore", '
                                     '"Warn", "Strict"')


def test_update_applies_field_validation(kube):
    created = kube.post(PODS, base_pod()).body
    created["spec"]["containers"][0]["sidecar"] = True
    strict = kube.put(f"{PODS}/p", created, fieldValidation="Strict")
    assert strict.status == 400
    assert strict.body["message"].endswith('strict decoding error: unknown field "spec.containers[0].sidecar"')
    warned = kube.put(f"{PODS}/p", created)
    assert warned.status == 200
    assert warnings(warned) == ['unknown field "spec.containers[0].sidecar"']
    assert "sidecar" not in warned.body["spec"]["containers"][0]


def test_patch_adding_unknown_fields_strict_is_422_on_patch(kube):
    kube.post(PODS, base_pod())
    reply = kube.patch(f"{PODS}/p", {"metadata": {"labels": {"b": "c"}}, "spec": {"priorityClass": "high"}},
                       fieldValidation="Strict")
    assert reply.status == 422
    (cause,) = reply.body["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith('strict decoding error: unknown field "spec.priorityClass"')
    assert reply.body["message"].startswith(' "" is invalid: patch: Invalid value: "{')
    warned = kube.patch(f"{PODS}/p", {"spec": {"priorityClass": "high"}})
    assert warned.status == 200 and warnings(warned) == ['unknown field "spec.priorityClass"']
    assert "priorityClass" not in kube.get(f"{PODS}/p").body["spec"]


# --- duplicate fields ----------------------------------------------------------------------------------

DUPLICATE_BODY = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","labels":{"a":"1","a":"2"}},'
                  b'"data":{"k":"first","k":"last"},"bogus":1}')


def test_duplicate_fields_strict_fails_with_unknown_ones(kube):
    reply = kube.request("POST", "/api/v1/namespaces/default/configmaps", raw_body=DUPLICATE_BODY,
                         query={"fieldValidation": "Strict"})
    assert reply.status == 400
    assert reply.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'duplicate field "metadata.labels.a", duplicate field "data.k", unknown field "bogus"')


def test_duplicate_fields_warn_keeps_the_last_value(kube):
    reply = kube.request("POST", "/api/v1/namespaces/default/configmaps", raw_body=DUPLICATE_BODY)
    assert reply.status == 201, reply.body
    assert warnings(reply) == ['duplicate field "metadata.labels.a"', 'duplicate field "data.k"',
                               'unknown field "bogus"']
    stored = kube.get("/api/v1/namespaces/default/configmaps/cm").body
    assert stored["data"] == {"k": "last"} and stored["metadata"]["labels"] == {"a": "2"}


def test_duplicate_fields_ignore(kube):
    reply = kube.request("POST", "/api/v1/namespaces/default/configmaps", raw_body=DUPLICATE_BODY,
                         query={"fieldValidation": "Ignore"})
    assert reply.status == 201 and "warning" not in reply.headers


# --- kubectl ----------------------------------------------------------------------------------------------

def test_kubectl_create_validate_strict_fails_with_kube_message(kubectl):
    for flags in (["--validate=strict"], []):  # kubectl 1.32 asks for Strict by default too
        proc = kubectl.run("create", "-f", "-", *flags, input=POD_WITH_UNKNOWN.format(name="p"))
        assert proc.returncode == 1
        assert proc.stderr.strip() == (
            'Error from server (BadRequest): error when creating "STDIN": Pod in version "v1" cannot be handled '
            f"as a Pod: strict decoding error: {UNKNOWN_POD_FIELDS}")


def test_kubectl_create_with_warn_succeeds_and_prints_warnings(kubectl, kube):
    proc = kubectl.run("create", "-f", "-", "--validate=warn", input=POD_WITH_UNKNOWN.format(name="p"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "pod/p created"
    assert proc.stderr.splitlines() == ['Warning: unknown field "spec.containers[0].imagePolicy"',
                                        'Warning: unknown field "spec.restart"']
    assert "restart" not in kube.get(f"{PODS}/p").body["spec"]
    quiet = kubectl.run("create", "-f", "-", "--validate=false", input=POD_WITH_UNKNOWN.format(name="q"))
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_kubectl_reports_invalid_objects_like_kube(kubectl):
    proc = kubectl.run("create", "-f", "-", input=POD_WITH_UNKNOWN.format(name="p")
                       .replace("    imagePolicy: Always\n", "    ports:\n    - containerPort: 70000\n")
                       .replace("  restart: Never\n", ""))
    assert proc.returncode == 1
    assert proc.stderr.strip() == ('The Pod "p" is invalid: spec.containers[0].ports[0].containerPort: Invalid '
                                   "value: 70000: must be between 1 and 65535, inclusive")


# --- custom resources: defaults and pruning -------------------------------------------------------------

def test_custom_resource_defaults_and_pruning(gadgets):
    body = {"apiVersion": "example.com/v1", "kind": "Gadget",
            "metadata": {"name": "g", "shoeSize": 42},
            "spec": {"owner": "me", "color": "red", "replicas": None, "note": None, "size": None,
                     "policy": {"backoff": {"jitter": True}},
                     "workers": [{"gpu": 1, "fpga": 2}, {"cpu": 8}],
                     "extra": {"anything": {"goes": [1, {"deep": True}]}},
                     "port": 8080}}
    reply = gadgets.post(GADGETS, body)
    assert reply.status == 201, reply.body
    assert warnings(reply) == ['unknown field "metadata.shoeSize"', 'unknown field "spec.color"',
                               'unknown field "spec.policy.backoff.jitter"', 'unknown field "spec.workers[0].fpga"']
    spec = gadgets.get(f"{GADGETS}/g").body["spec"]
    assert spec == {
        "owner": "me",
        "replicas": 1,            # null, not nullable, has a default: defaulted
        "note": None,             # nullable: kept
        # "size": null, not nullable, no default: pruned
        "mode": "Fast",
        "policy": {"retries": 3, "backoff": {"max": 60}},  # nested defaults inside a given object
        "workers": [{"gpu": 1, "cpu": 2}, {"cpu": 8}],      # defaults in array items, unknown pruned
        "extra": {"anything": {"goes": [1, {"deep": True}]}},  # preserve-unknown-fields
        "port": 8080,
    }
    assert "shoeSize" not in gadgets.get(f"{GADGETS}/g").body["metadata"]


def test_defaults_fill_absent_objects_and_int_or_string_takes_both(gadgets):
    reply = gadgets.post(GADGETS, {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "a"},
                                   "spec": {"owner": "me", "port": "http"}})
    assert reply.status == 201 and warnings(reply) == []
    assert reply.body["spec"]["policy"] == {"retries": 3, "backoff": {"base": 1, "max": 60}}
    assert reply.body["spec"]["port"] == "http"


def test_custom_resource_strict_and_embedded_resources(gadgets):
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "s"},
            "spec": {"owner": "me", "zeta": 1, "alpha": 2,
                     "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t", "junk": 1},
                                  "spec": {"free": "form"}}}}
    reply = gadgets.post(GADGETS, body, fieldValidation="Strict")
    assert reply.status == 400
    assert reply.body["message"] == (
        'Gadget in version "v1" cannot be handled as a Gadget: strict decoding error: unknown field '
        '"spec.alpha", unknown field "spec.template.metadata.junk", unknown field "spec.zeta"')
    ok = gadgets.post(GADGETS, body)
    assert ok.status == 201
    assert ok.body["spec"]["template"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"},
                                           "spec": {"free": "form"}}


def test_schema_follows_crd_updates_and_deletion(gadgets):
    crd = gadgets.get(f"{CRDS}/gadgets.example.com").body
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["owner"] = {
        "type": "string", "maxLength": 3}
    assert gadgets.put(f"{CRDS}/gadgets.example.com", crd).status == 200
    body = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"owner": "someone"}}
    reply = wait_for(lambda: (r := gadgets.post(GADGETS, body)).status == 422 and r, what="the new schema applies")
    assert reply.body["details"]["causes"][0] == {"reason": "FieldValueTooLong", "field": "spec.owner",
                                                  "message": "Too long: may not be more than 3 bytes"}
    assert gadgets.delete(f"{CRDS}/gadgets.example.com").status == 200
    wait_for(lambda: gadgets.get(GADGETS).status == 404, what="gadgets no longer served")


def test_status_subresource_validates_only_status(kube):
    crd = gadget_crd(DEFAULTING_SCHEMA)
    crd["spec"]["versions"][0]["subresources"] = {"status": {}}
    assert kube.post(CRDS, crd).status == 201
    wait_for(lambda: kube.get(GADGETS).status == 200, what="gadgets served")
    created = kube.post(GADGETS, {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
                                  "spec": {"owner": "me"}, "status": {"phase": 7}})
    assert created.status == 201, created.body  # status is dropped on create, so its type does not matter
    obj = created.body
    obj["status"] = {"phase": 7}
    bad = kube.put(f"{GADGETS}/g/status", obj)
    assert bad.status == 422
    assert [c["field"] for c in bad.body["details"]["causes"]] == ["status.phase"]
    obj["status"] = {"phase": "Running"}
    assert kube.put(f"{GADGETS}/g/status", obj).status == 200


# --- one implementation for the server and the MXJob API ------------------------------------------------

def test_validate_definition_matches_what_the_server_says(kube):
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "Main", "image": "nginx",
                                         "ports": [{"name": "http-metrics-port", "containerPort": 80}],
                                         "env": [{"name": "1X", "value": "y"}]}]}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": copy.deepcopy(template)}}
    reply = kube.post(DEPLOYMENTS, deployment)
    assert reply.status == 422
    server = [(c["field"], c["message"]) for c in reply.body["details"]["causes"]]
    local = [(e.field, e.message) for e in validate_definition("io.k8s.api.core.v1.PodTemplateSpec", template,
                                                               "spec.template")]
    assert local == server
    assert [f for f, _ in local] == ["spec.template.spec.containers[0].name",
                                     "spec.template.spec.containers[0].ports[0].name",
                                     "spec.template.spec.containers[0].env[0].name"]
