"""Invalid objects, sent over HTTP with the official client: 422 ``Invalid`` with the field paths (and, where
the wording matters, the messages) kube-apiserver gives.

Built-in kinds are checked against Kubernetes' schema and the rules of its Go validation; custom resources
against their CRD's ``openAPIV3Schema``, with apiextensions-apiserver's wording.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support import wait_for

PODS = "/api/v1/namespaces/default/pods"
SERVICES = "/api/v1/namespaces/default/services"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
GADGETS = "/apis/example.com/v1/namespaces/default/gadgets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

GADGET_SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "spec": {"type": "object", "required": ["owner"], "properties": {
        "owner": {"type": "string"},
        "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
        "mode": {"type": "string", "enum": ["Fast", "Slow"]},
        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
        "port": {"x-kubernetes-int-or-string": True},
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "minLength": 2}},
        "workers": {"type": "array", "items": {"type": "object", "properties": {"cpu": {"type": "integer"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "shards": {"type": "integer", "format": "int32", "multipleOf": 2},
        "since": {"type": "string", "format": "date-time"},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True},
    }},
}}


def gadget_crd(schema: dict[str, Any] = GADGET_SCHEMA) -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": copy.deepcopy(schema)}}]}}


# --- valid bases, each case breaks one thing -------------------------------------------------------------

def base_pod() -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "x"}},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36",
                                     "ports": [{"name": "http", "containerPort": 8080}],
                                     "env": [{"name": "MODE", "value": "fast"}],
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                                     "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                                   "requests": {"cpu": "500m"}}}],
                     "volumes": [{"name": "data", "emptyDir": {}}]}}


def base_service() -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
            "spec": {"selector": {"app": "x"}, "ports": [{"port": 80, "targetPort": 8080}]}}


def base_deployment() -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}}}


def base_gadget() -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
            "spec": {"owner": "me", "replicas": 2}}


@dataclass
class Case:
    id: str
    url: str
    base: Callable[[], dict]
    change: Callable[[dict], Any]
    fields: set[str]
    messages: dict[str, str] = field(default_factory=dict)  # field → its exact message

    def body(self) -> dict:
        obj = self.base()
        self.change(obj)
        return obj


def c0(obj: dict) -> dict:
    return obj["spec"]["containers"][0]


def gspec(obj: dict) -> dict:
    return obj["spec"]


CASES = [
    # --- pods: containers -----------------------------------------------------------------------------
    Case("container-name-uppercase", PODS, base_pod, lambda o: c0(o).update(name="Main"),
         {"spec.containers[0].name"},
         {"spec.containers[0].name": 'Invalid value: "Main": a lowercase RFC 1123 label must consist of lower '
          "case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
          "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"}),
    Case("container-image-missing", PODS, base_pod, lambda o: c0(o).pop("image"),
         {"spec.containers[0].image"}, {"spec.containers[0].image": "Required value"}),
    Case("containers-empty", PODS, base_pod, lambda o: o["spec"].update(containers=[]),
         {"spec.containers"}, {"spec.containers": "Required value"}),
    Case("container-names-duplicate", PODS, base_pod,
         lambda o: o["spec"]["containers"].append({"name": "main", "image": "busybox"}),
         {"spec.containers[1].name"}, {"spec.containers[1].name": 'Duplicate value: "main"'}),
    Case("init-container-name-clashes", PODS, base_pod,
         lambda o: o["spec"].update(initContainers=[{"name": "main", "image": "busybox"}]),
         {"spec.initContainers[0].name"}),
    Case("container-name-missing", PODS, base_pod, lambda o: c0(o).pop("name"),
         {"spec.containers[0].name"}, {"spec.containers[0].name": "Required value"}),
    # --- pods: ports ------------------------------------------------------------------------------------
    Case("port-name-too-long", PODS, base_pod, lambda o: c0(o)["ports"][0].update(name="a-very-long-port-name"),
         {"spec.containers[0].ports[0].name"},
         {"spec.containers[0].ports[0].name":
          'Invalid value: "a-very-long-port-name": must be no more than 15 characters'}),
    Case("port-name-not-iana", PODS, base_pod, lambda o: c0(o)["ports"][0].update(name="http--2"),
         {"spec.containers[0].ports[0].name"},
         {"spec.containers[0].ports[0].name": 'Invalid value: "http--2": must not contain consecutive hyphens'}),
    Case("port-names-duplicate", PODS, base_pod,
         lambda o: c0(o)["ports"].append({"name": "http", "containerPort": 9090}),
         {"spec.containers[0].ports[1].name"}),
    Case("container-port-out-of-range", PODS, base_pod, lambda o: c0(o)["ports"][0].update(containerPort=70000),
         {"spec.containers[0].ports[0].containerPort"},
         {"spec.containers[0].ports[0].containerPort":
          "Invalid value: 70000: must be between 1 and 65535, inclusive"}),
    Case("container-port-zero", PODS, base_pod, lambda o: c0(o)["ports"][0].update(containerPort=0),
         {"spec.containers[0].ports[0].containerPort"}),
    Case("host-port-out-of-range", PODS, base_pod, lambda o: c0(o)["ports"][0].update(hostPort=-5),
         {"spec.containers[0].ports[0].hostPort"}),
    Case("port-protocol-lowercase", PODS, base_pod, lambda o: c0(o)["ports"][0].update(protocol="tcp"),
         {"spec.containers[0].ports[0].protocol"},
         {"spec.containers[0].ports[0].protocol": 'Unsupported value: "tcp": supported values: "SCTP", "TCP", '
          '"UDP"'}),
    # --- pods: env, pull policy, resources, probes ----------------------------------------------------------
    Case("env-name-starts-with-digit", PODS, base_pod, lambda o: c0(o)["env"][0].update(name="1MODE"),
         {"spec.containers[0].env[0].name"}),
    Case("env-value-and-value-from", PODS, base_pod,
         lambda o: c0(o)["env"][0].update(valueFrom={"fieldRef": {"fieldPath": "metadata.name"}}),
         {"spec.containers[0].env[0].valueFrom"},
         {"spec.containers[0].env[0].valueFrom":
          'Invalid value: "": may not be specified when `value` is not empty'}),
    Case("env-field-ref-unsupported", PODS, base_pod,
         lambda o: c0(o)["env"].append({"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.foo"}}}),
         {"spec.containers[0].env[1].valueFrom.fieldRef.fieldPath"}),
    Case("image-pull-policy", PODS, base_pod, lambda o: c0(o).update(imagePullPolicy="Sometimes"),
         {"spec.containers[0].imagePullPolicy"},
         {"spec.containers[0].imagePullPolicy": 'Unsupported value: "Sometimes": supported values: "Always", '
          '"IfNotPresent", "Never"'}),
    Case("requests-above-limits", PODS, base_pod,
         lambda o: c0(o)["resources"]["requests"].update(cpu="2"),
         {"spec.containers[0].resources.requests"},
         {"spec.containers[0].resources.requests": 'Invalid value: "2": must be less than or equal to cpu '
          "limit of 1"}),
    Case("resource-name-not-standard", PODS, base_pod,
         lambda o: c0(o)["resources"]["limits"].update(gpus="1"),
         {"spec.containers[0].resources.limits[gpus]"}),
    Case("probe-without-handler", PODS, base_pod, lambda o: c0(o).update(livenessProbe={"periodSeconds": 5}),
         {"spec.containers[0].livenessProbe"},
         {"spec.containers[0].livenessProbe": "Required value: must specify a handler type"}),
    Case("probe-negative-period", PODS, base_pod,
         lambda o: c0(o).update(readinessProbe={"tcpSocket": {"port": 8080}, "periodSeconds": -1}),
         {"spec.containers[0].readinessProbe.periodSeconds"}),
    # --- pods: spec-wide ----------------------------------------------------------------------------------
    Case("restart-policy", PODS, base_pod, lambda o: o["spec"].update(restartPolicy="Sometimes"),
         {"spec.restartPolicy"},
         {"spec.restartPolicy": 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", '
          '"Never"'}),
    Case("dns-policy", PODS, base_pod, lambda o: o["spec"].update(dnsPolicy="Google"), {"spec.dnsPolicy"}),
    Case("volume-without-source", PODS, base_pod, lambda o: o["spec"]["volumes"].append({"name": "empty"}),
         {"spec.volumes[1]"}, {"spec.volumes[1]": "Required value: must specify a volume type"}),
    Case("volume-names-duplicate", PODS, base_pod,
         lambda o: o["spec"]["volumes"].append({"name": "data", "emptyDir": {}}), {"spec.volumes[1].name"}),
    Case("volume-mount-of-no-volume", PODS, base_pod,
         lambda o: c0(o)["volumeMounts"][0].update(name="nope"),
         {"spec.containers[0].volumeMounts[0].name"},
         {"spec.containers[0].volumeMounts[0].name": 'Not found: "nope"'}),
    Case("node-selector-value", PODS, base_pod, lambda o: o["spec"].update(nodeSelector={"zone": "a b"}),
         {"spec.nodeSelector"}),
    Case("active-deadline-zero", PODS, base_pod, lambda o: o["spec"].update(activeDeadlineSeconds=0),
         {"spec.activeDeadlineSeconds"}),
    Case("toleration-operator", PODS, base_pod,
         lambda o: o["spec"].update(tolerations=[{"key": "k", "operator": "Maybe"}]),
         {"spec.tolerations[0].operator"}),
    Case("pod-name-uppercase", PODS, base_pod, lambda o: o["metadata"].update(name="Pod"), {"metadata.name"}),
    Case("label-key-invalid", PODS, base_pod, lambda o: o["metadata"]["labels"].update({"bad key": "x"}),
         {"metadata.labels"}),
    # --- services ---------------------------------------------------------------------------------------
    Case("service-name-dns1035", SERVICES, base_service, lambda o: o["metadata"].update(name="1svc"),
         {"metadata.name"}),
    Case("service-without-ports", SERVICES, base_service, lambda o: o["spec"].pop("ports"),
         {"spec.ports"}, {"spec.ports": "Required value"}),
    Case("service-ports-need-names", SERVICES, base_service,
         lambda o: o["spec"]["ports"].append({"port": 81}), {"spec.ports[0].name", "spec.ports[1].name"}),
    Case("service-port-zero", SERVICES, base_service, lambda o: o["spec"]["ports"][0].update(port=0),
         {"spec.ports[0].port"},
         {"spec.ports[0].port": "Invalid value: 0: must be between 1 and 65535, inclusive"}),
    Case("service-type", SERVICES, base_service, lambda o: o["spec"].update(type="Public"), {"spec.type"},
         {"spec.type": 'Unsupported value: "Public": supported values: "ClusterIP", "ExternalName", '
          '"LoadBalancer", "NodePort"'}),
    Case("service-selector", SERVICES, base_service, lambda o: o["spec"]["selector"].update(app="-x"),
         {"spec.selector"}),
    Case("service-target-port-name", SERVICES, base_service,
         lambda o: o["spec"]["ports"][0].update(targetPort="HTTP"), {"spec.ports[0].targetPort"}),
    Case("external-name-missing", SERVICES, base_service,
         lambda o: o["spec"].update(type="ExternalName", ports=[]), {"spec.externalName"}),
    # --- configmaps and secrets -----------------------------------------------------------------------------
    Case("configmap-key", CONFIGMAPS,
         lambda: {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {}},
         lambda o: o["data"].update({"bad key": "v"}), {"data[bad key]"}),
    Case("secret-key", SECRETS,
         lambda: {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {}},
         lambda o: o["stringData"].update({"a/b": "v"}), {"data[a/b]"}),
    Case("secret-data-not-base64", SECRETS,
         lambda: {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {}},
         lambda o: o["data"].update({"token": "not base64!"}), {"data.token"}),
    # --- deployments ------------------------------------------------------------------------------------
    Case("deployment-selector-mismatch", DEPLOYMENTS, base_deployment,
         lambda o: o["spec"]["template"]["metadata"]["labels"].update(app="api"),
         {"spec.template.metadata.labels"},
         {"spec.template.metadata.labels": 'Invalid value: {"app":"api"}: `selector` does not match template '
          "`labels`"}),
    Case("deployment-selector-missing", DEPLOYMENTS, base_deployment, lambda o: o["spec"].pop("selector"),
         {"spec.selector"}, {"spec.selector": "Required value"}),
    Case("deployment-restart-policy", DEPLOYMENTS, base_deployment,
         lambda o: o["spec"]["template"]["spec"].update(restartPolicy="Never"),
         {"spec.template.spec.restartPolicy"}),
    Case("deployment-replicas-negative", DEPLOYMENTS, base_deployment, lambda o: o["spec"].update(replicas=-1),
         {"spec.replicas"}, {"spec.replicas": "Invalid value: -1: must be greater than or equal to 0"}),
    Case("deployment-template-container", DEPLOYMENTS, base_deployment,
         lambda o: o["spec"]["template"]["spec"]["containers"][0].update(name="web_1"),
         {"spec.template.spec.containers[0].name"}),
    # --- custom resources ---------------------------------------------------------------------------------
    Case("cr-type", GADGETS, base_gadget, lambda o: gspec(o).update(replicas="two"), {"spec.replicas"},
         {"spec.replicas": 'Invalid value: "string": spec.replicas in body must be of type integer: "string"'}),
    Case("cr-minimum", GADGETS, base_gadget, lambda o: gspec(o).update(replicas=-1), {"spec.replicas"},
         {"spec.replicas": "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"}),
    Case("cr-maximum", GADGETS, base_gadget, lambda o: gspec(o).update(replicas=11), {"spec.replicas"},
         {"spec.replicas": "Invalid value: 11: spec.replicas in body should be less than or equal to 10"}),
    Case("cr-enum", GADGETS, base_gadget, lambda o: gspec(o).update(mode="Medium"), {"spec.mode"},
         {"spec.mode": 'Unsupported value: "Medium": supported values: "Fast", "Slow"'}),
    Case("cr-pattern", GADGETS, base_gadget, lambda o: gspec(o).update(name="Abc"), {"spec.name"},
         {"spec.name": "Invalid value: \"Abc\": spec.name in body should match '^[a-z]+$'"}),
    Case("cr-max-length", GADGETS, base_gadget, lambda o: gspec(o).update(name="abcdefghij"), {"spec.name"},
         {"spec.name": "Too long: may not be more than 8 bytes"}),
    Case("cr-required", GADGETS, base_gadget, lambda o: gspec(o).pop("owner"), {"spec.owner"},
         {"spec.owner": "Required value"}),
    Case("cr-max-items", GADGETS, base_gadget, lambda o: gspec(o).update(tags=["aa", "bb", "cc"]), {"spec.tags"},
         {"spec.tags": "Too many: 3: must have at most 2 items"}),
    Case("cr-items-min-length", GADGETS, base_gadget, lambda o: gspec(o).update(tags=["aa", "b"]),
         {"spec.tags[1]"}, {"spec.tags[1]": 'Invalid value: "b": spec.tags[1] in body should be at least 2 chars '
                            "long"}),
    Case("cr-nested-array-item", GADGETS, base_gadget, lambda o: gspec(o).update(workers=[{"cpu": 1}, {"cpu": 1.5}]),
         {"spec.workers[1].cpu"}),
    Case("cr-map-value", GADGETS, base_gadget, lambda o: gspec(o).update(labels={"a": "x", "b": 2}),
         {"spec.labels.b"}),
    Case("cr-int-or-string", GADGETS, base_gadget, lambda o: gspec(o).update(port=True), {"spec.port"},
         {"spec.port": 'Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean"'}),
    Case("cr-exclusive-minimum", GADGETS, base_gadget, lambda o: gspec(o).update(ratio=0), {"spec.ratio"},
         {"spec.ratio": "Invalid value: 0: spec.ratio in body should be greater than 0"}),
    Case("cr-multiple-of", GADGETS, base_gadget, lambda o: gspec(o).update(shards=3), {"spec.shards"},
         {"spec.shards": "Invalid value: 3: spec.shards in body should be a multiple of 2"}),
    # Issue 33: kube-apiserver reports a format's range at no field ("<nil>: Invalid value: \"\""); named here.
    Case("cr-int32-overflow", GADGETS, base_gadget, lambda o: gspec(o).update(shards=2**31), {"spec.shards"},
         {"spec.shards": "Invalid value: 2147483648: Checked value must be of type integer with format int32 in "
                         "spec.shards"}),
    Case("cr-date-time", GADGETS, base_gadget, lambda o: gspec(o).update(since="yesterday"), {"spec.since"},
         {"spec.since": 'Invalid value: "yesterday": spec.since in body must be of type date-time: "yesterday"'}),
    Case("cr-embedded-resource-kind", GADGETS, base_gadget,
         lambda o: gspec(o).update(template={"apiVersion": "v1", "spec": {}}), {"spec.template.kind"}),
    Case("cr-name", GADGETS, base_gadget, lambda o: o["metadata"].update(name="G_1"), {"metadata.name"}),
    Case("cr-spec-not-object", GADGETS, base_gadget, lambda o: o.update(spec=[1]), {"spec"}),
]


def test_at_least_forty_cases():
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.fixture
def gadgets(kube):
    """The embedded server with the Gadget CRD served."""
    assert kube.post(CRDS, gadget_crd()).status == 201
    wait_for(lambda: kube.get(GADGETS).status == 200, what="gadgets served")
    return kube


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_invalid_object_is_422_with_kube_field_paths(gadgets, case: Case):
    valid = case.base()
    valid["metadata"]["name"] = "valid"
    assert gadgets.post(case.url, valid).status == 201, "the unbroken object must be valid"
    body = case.body()
    reply = gadgets.post(case.url, body)
    assert reply.status == 422, reply.body
    assert reply.body["reason"] == "Invalid"
    causes = reply.body["details"]["causes"]
    assert {c["field"] for c in causes} == case.fields, causes
    got = {c["field"]: c["message"] for c in causes}
    for path, message in case.messages.items():
        assert got[path] == message
    kind = body["kind"]
    group = body["apiVersion"].rpartition("/")[0]
    qualified = f"{kind}.{group}" if group else kind  # apimachinery's GroupKind: Deployment.apps, Pod
    assert reply.body["message"].startswith(f'{qualified} "{body["metadata"]["name"]}" is invalid: ')
    assert reply.body["details"]["kind"] == kind


def test_many_problems_are_reported_together(kube):
    pod = base_pod()
    c = pod["spec"]["containers"][0]
    c.update(name="Main", imagePullPolicy="Often")
    c["ports"][0].update(protocol="HTTP")
    c["env"][0].update(name="1X")
    reply = kube.post(PODS, pod)
    assert reply.status == 422
    assert [x["field"] for x in reply.body["details"]["causes"]] == [
        "spec.containers[0].name", "spec.containers[0].ports[0].protocol", "spec.containers[0].env[0].name",
        "spec.containers[0].imagePullPolicy"]
    assert reply.body["message"].startswith('Pod "p" is invalid: [spec.containers[0].name: Invalid value: "Main"')


def test_update_is_validated_too(gadgets):
    created = gadgets.post(GADGETS, base_gadget()).body
    created["spec"]["mode"] = "Warp"
    reply = gadgets.put(f"{GADGETS}/g", created)
    assert reply.status == 422
    assert [x["field"] for x in reply.body["details"]["causes"]] == ["spec.mode"]
    patched = gadgets.patch(f"{GADGETS}/g", {"spec": {"replicas": 99}})
    assert patched.status == 422
    assert patched.body["details"]["causes"][0]["message"] == (
        "Invalid value: 99: spec.replicas in body should be less than or equal to 10")
    assert gadgets.get(f"{GADGETS}/g").body["spec"]["replicas"] == 2
