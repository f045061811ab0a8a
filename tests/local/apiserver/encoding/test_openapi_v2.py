"""``/openapi/v2``: the Swagger 2.0 document as JSON and gnostic protobuf, live with CRDs, cached by ETag, and the
kubectl flows that need it (an unknown kind's ``no matches for kind``, ``explain --output=plaintext-openapiv2``).

The protobuf is read back here with a decoder of its own, written from gnostic's ``OpenAPIv2.proto`` field numbers,
and must say what the JSON says (less what proto3 cannot carry: zero numbers, false, empty strings and lists).
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import yaml

from tests.crds import widget_crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PROTO_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PROTO_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
MXJOB_CRD = Path(__file__).resolve().parents[4] / "manifests" / "crd" / "kubeflow.org_mxjobs.yaml"


def _get(kube, accept: str = "application/json", **headers: str) -> tuple[int, dict[str, str], bytes]:
    """GET /openapi/v2 as bytes (the test client's own request would try to decode protobuf as text)."""
    r = kube.api.rest_client.pool_manager.request(
        "GET", kube.api.configuration.host + "/openapi/v2", headers={"Accept": accept, **headers, **kube._auth})
    return r.status, {k.lower(): v for k, v in r.headers.items()}, r.data


# --- an independent reader of gnostic's openapi.v2 messages ------------------------------------------------------

# message: {field number: (name, type)}; a type in brackets is repeated; "any" is gnostic's Any (YAML text).
_PB: dict[str, dict[int, tuple[str, Any]]] = {
    "Document": {1: ("swagger", "string"), 2: ("info", "Info"), 8: ("paths", "Paths"),
                 9: ("definitions", "Definitions"), 12: ("security", ["SecurityRequirement"]),
                 13: ("securityDefinitions", "SecurityDefinitions"), 16: ("x", ["NamedAny"])},
    "Info": {1: ("title", "string"), 2: ("version", "string")},
    "Paths": {1: ("x", ["NamedAny"]), 2: ("path", ["NamedPathItem"])},
    "NamedPathItem": {1: ("name", "string"), 2: ("value", "PathItem")},
    "PathItem": {2: ("get", "Operation"), 3: ("put", "Operation"), 4: ("post", "Operation"),
                 5: ("delete", "Operation"), 8: ("patch", "Operation"), 9: ("parameters", ["ParametersItem"]),
                 10: ("x", ["NamedAny"])},
    "Operation": {1: ("tags", ["string"]), 3: ("description", "string"), 5: ("operationId", "string"),
                  6: ("produces", ["string"]), 7: ("consumes", ["string"]), 8: ("parameters", ["ParametersItem"]),
                  9: ("responses", "Responses"), 10: ("schemes", ["string"]), 13: ("x", ["NamedAny"])},
    "ParametersItem": {1: ("parameter", "Parameter"), 2: ("ref", "JsonReference")},
    "JsonReference": {1: ("$ref", "string")},
    "Parameter": {1: ("body", "BodyParameter"), 2: ("nonBody", "NonBodyParameter")},
    "BodyParameter": {1: ("description", "string"), 2: ("name", "string"), 3: ("in", "string"),
                      4: ("required", "bool"), 5: ("schema", "Schema")},
    "NonBodyParameter": {3: ("query", "QueryParameterSubSchema"), 4: ("path", "PathParameterSubSchema")},
    "QueryParameterSubSchema": {1: ("required", "bool"), 2: ("in", "string"), 3: ("description", "string"),
                                4: ("name", "string"), 6: ("type", "string"), 20: ("uniqueItems", "bool")},
    "PathParameterSubSchema": {1: ("required", "bool"), 2: ("in", "string"), 3: ("description", "string"),
                               4: ("name", "string"), 5: ("type", "string"), 19: ("uniqueItems", "bool")},
    "Responses": {1: ("codes", ["NamedResponseValue"])},
    "NamedResponseValue": {1: ("name", "string"), 2: ("value", "ResponseValue")},
    "ResponseValue": {1: ("response", "Response")},
    "Response": {1: ("description", "string"), 2: ("schema", "SchemaItem")},
    "SchemaItem": {1: ("schema", "Schema")},
    "Definitions": {1: ("items", ["NamedSchema"])},
    "NamedSchema": {1: ("name", "string"), 2: ("value", "Schema")},
    "Properties": {1: ("items", ["NamedSchema"])},
    "Schema": {1: ("$ref", "string"), 2: ("format", "string"), 4: ("description", "string"), 5: ("default", "any"),
               7: ("maximum", "double"), 9: ("minimum", "double"), 11: ("maxLength", "int64"),
               12: ("minLength", "int64"), 13: ("pattern", "string"), 14: ("maxItems", "int64"),
               15: ("minItems", "int64"), 16: ("uniqueItems", "bool"), 19: ("required", ["string"]),
               20: ("enum", ["any"]), 21: ("additionalProperties", "AdditionalPropertiesItem"),
               22: ("type", "TypeItem"), 23: ("items", "ItemsItem"), 24: ("allOf", ["Schema"]),
               25: ("properties", "Properties"), 26: ("discriminator", "string"), 31: ("x", ["NamedAny"])},
    "AdditionalPropertiesItem": {1: ("schema", "Schema"), 2: ("boolean", "bool")},
    "TypeItem": {1: ("value", ["string"])},
    "ItemsItem": {1: ("schema", ["Schema"])},
    "NamedAny": {1: ("name", "string"), 2: ("value", "any")},
    "SecurityRequirement": {1: ("items", ["NamedStringArray"])},
    "NamedStringArray": {1: ("name", "string"), 2: ("value", "StringArray")},
    "StringArray": {1: ("value", ["string"])},
    "SecurityDefinitions": {1: ("items", ["NamedSecurityDefinitionsItem"])},
    "NamedSecurityDefinitionsItem": {1: ("name", "string"), 2: ("value", "SecurityDefinitionsItem")},
    "SecurityDefinitionsItem": {2: ("apiKey", "ApiKeySecurity")},
    "ApiKeySecurity": {1: ("type", "string"), 2: ("name", "string"), 3: ("in", "string"),
                       4: ("description", "string")},
}


def _read(data: bytes, message: str) -> dict[str, Any]:
    table, out, i = _PB[message], {}, 0

    def varint() -> int:
        nonlocal i
        shift = value = 0
        while True:
            b = data[i]
            i += 1
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    while i < len(data):
        key = varint()
        number, wire = key >> 3, key & 7
        if wire == 0:
            raw: Any = varint()
        elif wire == 1:
            raw, i = data[i:i + 8], i + 8
        elif wire == 2:
            n = varint()
            raw, i = data[i:i + n], i + n
        else:
            raise AssertionError(f"{message}: wire type {wire}")
        assert number in table, f"{message} has no field {number} this test knows"
        name, kind = table[number]
        repeated = isinstance(kind, list)
        kind = kind[0] if repeated else kind
        if kind == "string":
            value: Any = raw.decode()
        elif kind == "bool":
            value = bool(raw)
        elif kind == "int64":
            value = raw - (1 << 64) if raw >= 1 << 63 else raw
        elif kind == "double":
            value = struct.unpack("<d", raw)[0]
        elif kind == "any":
            value = yaml.safe_load(_read(raw, "Any")["yaml"]) if raw else None
        else:
            value = _read(raw, kind)
        if repeated:
            out.setdefault(name, []).append(value)
        else:
            out[name] = value
    return out


_PB["Any"] = {2: ("yaml", "string")}


def _ext(msg: dict[str, Any]) -> dict[str, Any]:
    return {a["name"]: a["value"] for a in msg.get("x", [])}


def _schema(m: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in m.items() if k not in ("x", "type", "items", "properties", "additionalProperties",
                                                   "allOf")}
    if "type" in m:
        types = m["type"].get("value", [])
        out["type"] = types[0] if len(types) == 1 else types
    if "items" in m:
        out["items"] = _schema(m["items"]["schema"][0])
    if "properties" in m:
        out["properties"] = {p["name"]: _schema(p.get("value", {})) for p in m["properties"].get("items", [])}
    if "additionalProperties" in m:
        ap = m["additionalProperties"]
        out["additionalProperties"] = _schema(ap["schema"]) if "schema" in ap else ap.get("boolean", False)
    if "allOf" in m:
        out["allOf"] = [_schema(s) for s in m["allOf"]]
    return out | _ext(m)


def _param(item: dict[str, Any]) -> dict[str, Any]:
    if "ref" in item:
        return item["ref"]
    p = item["parameter"]
    if "body" in p:
        body = dict(p["body"])
        if "schema" in body:
            body["schema"] = _schema(body["schema"])
        return body
    (sub,) = p["nonBody"].values()
    return sub


def _operation(m: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in m.items() if k not in ("x", "parameters", "responses")}
    if "parameters" in m:
        out["parameters"] = [_param(p) for p in m["parameters"]]
    responses = {}
    for code in m.get("responses", {}).get("codes", []):
        r = dict(code["value"]["response"])
        if "schema" in r:
            r["schema"] = _schema(r["schema"]["schema"])
        responses[code["name"]] = r
    out["responses"] = responses
    return out | _ext(m)


def _document(data: bytes) -> dict[str, Any]:
    d = _read(data, "Document")
    paths = {}
    for p in d["paths"].get("path", []):
        item = p["value"]
        paths[p["name"]] = {verb: ([_param(x) for x in v] if verb == "parameters" else _operation(v))
                            for verb, v in item.items() if verb != "x"} | _ext(item)
    return {
        "swagger": d["swagger"], "info": d["info"], "paths": paths,
        "definitions": {s["name"]: _schema(s["value"]) for s in d["definitions"]["items"]},
        "security": [{a["name"]: a["value"].get("value", []) for a in r["items"]} for r in d.get("security", [])],
        "securityDefinitions": {s["name"]: s["value"]["apiKey"] for s in d["securityDefinitions"]["items"]},
    } | _ext(d)


def _proto3(node: Any, opaque: bool = False) -> Any:
    """What survives proto3: no zero numbers, false, empty strings or lists (except inside Any values)."""
    if opaque:
        return node
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            keep_as_is = k in ("default", "example", "enum") or k.startswith("x-")
            empty = v is False or v in ("", []) or (type(v) in (int, float) and v == 0)
            if empty and not keep_as_is and k != "additionalProperties":   # (a oneof: false is sent)
                continue
            out[k] = _proto3(v, keep_as_is) if k != "properties" else {n: _proto3(s) for n, s in v.items()}
        return out
    if isinstance(node, list):
        return [_proto3(v) for v in node]
    return node


# --- the documents ---------------------------------------------------------------------------------------------

def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        for k, v in node.items():
            if k != "properties" or not isinstance(v, dict):
                found |= _refs(v)
            else:
                for sub in v.values():
                    found |= _refs(sub)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def test_json_document(kube):
    status, headers, body = _get(kube)
    assert status == 200 and headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["swagger"] == "2.0" and doc["info"]["title"] == "Kubernetes"
    assert doc["info"]["version"] == kube.get("/version").body["gitVersion"]
    assert doc["securityDefinitions"]["BearerToken"]["type"] == "apiKey"
    pod = doc["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["properties"]["metadata"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    containers = doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    refs = _refs(doc["definitions"]) | _refs(doc["paths"])
    assert refs and all(r.startswith("#/definitions/") for r in refs)
    assert {r.removeprefix("#/definitions/") for r in refs} <= set(doc["definitions"])   # kubectl checks that
    patch = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    v3 = kube.get("/openapi/v3/api/v1").body["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert patch["operationId"] == v3["operationId"]
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    query = {p["name"]: p for p in patch["parameters"] if p.get("in") == "query"}
    assert query["fieldValidation"]["type"] == "string"
    assert patch["parameters"][0] == {"in": "body", "name": "body", "required": True,
                                      "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}}
    assert patch["responses"]["200"]["schema"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Pod"}


def test_protobuf_says_what_the_json_says(kube):
    kube.post(CRDS, widget_crd())
    _, _, body = _get(kube)
    status, headers, data = _get(kube, PROTO_ACCEPT)
    assert status == 200 and headers["content-type"] == PROTO_TYPE
    doc = json.loads(body)
    decoded = _document(data)
    assert "com.example.v1.Widget" in decoded["definitions"]
    assert decoded["definitions"] == _proto3(doc["definitions"])
    assert decoded["paths"] == _proto3(doc["paths"])
    assert {k: v for k, v in decoded.items() if k not in ("definitions", "paths")} == \
        {k: v for k, v in doc.items() if k not in ("definitions", "paths")}
    # the other protobuf media type kube accepts, and a wildcard (JSON first, as kube-openapi lists it)
    assert _get(kube, PROTO_TYPE)[2] == data
    assert _get(kube, "*/*")[1]["content-type"] == "application/json"
    assert _get(kube, "text/html;q=0.9, " + PROTO_ACCEPT)[2] == data


def test_etag_304_and_406(kube):
    status, headers, body = _get(kube)
    etag = headers["etag"]
    assert etag == '"' + hashlib.sha512(body).hexdigest().upper() + '"'
    assert headers["vary"] == "Accept" and headers["last-modified"].endswith(" GMT")
    assert _get(kube, PROTO_ACCEPT)[1]["etag"] == etag   # one ETag for both encodings, as kube-openapi
    for match in (etag, "W/" + etag, f'"other", {etag}', "*"):
        status, got, data = _get(kube, PROTO_ACCEPT, **{"If-None-Match": match})
        assert (status, data, got["etag"]) == (304, b"", etag)
    assert _get(kube, **{"If-None-Match": '"other"'})[0] == 200
    assert _get(kube, **{"If-Modified-Since": headers["last-modified"]})[0] == 304
    status, headers, data = _get(kube, "text/html")
    assert (status, data, headers["vary"]) == (406, b"", "Accept")


def test_follows_crds(kube):
    _, before, _ = _get(kube)
    assert kube.post(CRDS, widget_crd(versions=("v1", "v1beta1"))).status == 201
    status, headers, body = _get(kube, **{"If-None-Match": before["etag"]})
    assert status == 200 and headers["etag"] != before["etag"]
    doc = json.loads(body)
    widget = doc["definitions"]["com.example.v1.Widget"]
    assert widget["properties"]["spec"]["properties"]["size"] == {"type": "integer"}
    # preserve-unknown-fields: no type nor properties in v2, as kube publishes CRDs
    assert widget["properties"]["status"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert widget["properties"]["metadata"]["$ref"].endswith("meta.v1.ObjectMeta")
    assert widget["x-kubernetes-group-version-kind"] == [{"group": "example.com", "kind": "Widget",
                                                          "version": "v1"}]
    assert "com.example.v1beta1.Widget" in doc["definitions"]
    patch = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["produces"] == ["application/json", "application/yaml"]
    assert "application/strategic-merge-patch+json" not in patch["consumes"]
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status" in doc["paths"]
    assert kube.delete(f"{CRDS}/widgets.example.com").ok
    _, after, body = _get(kube)
    assert "com.example.v1.Widget" not in json.loads(body)["definitions"]
    assert after["etag"] == before["etag"]   # the same document again


# --- kubectl -----------------------------------------------------------------------------------------------

def _no_match(path: Path, name: str, kind: str, version: str) -> str:
    return (f'error: resource mapping not found for name: "{name}" namespace: "" from "{path}": no matches for kind '
            f'"{kind}" in version "{version}"\nensure CRDs are installed first')


def test_kubectl_unknown_kinds_say_no_matches(kubectl, tmp_path):
    manifests = {
        # no CRD serves kubeflow.org yet: v3 has no such group-version
        "tfjob.yaml": ("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: t1\n", "TFJob", "kubeflow.org/v1"),
        # a kind this server does not serve, in a group-version it does
        # (PersistentVolumeClaims are served since issue 47: ComponentStatus, deprecated, is not)
        "cs.yaml": ("apiVersion: v1\nkind: ComponentStatus\nmetadata:\n  name: p1\n", "ComponentStatus", "v1"),
    }
    kubectl.ok("create", "-f", str(MXJOB_CRD))
    # a misspelt kind in a group-version a CRD serves
    manifests["tfjobb.yaml"] = ("apiVersion: kubeflow.org/v1\nkind: TFJobb\nmetadata:\n  name: x\n", "TFJobb",
                                "kubeflow.org/v1")
    for file, (text, kind, version) in manifests.items():
        path = tmp_path / file
        path.write_text(text)
        name = yaml.safe_load(text)["metadata"]["name"]
        for verb in ("apply", "create"):
            proc = kubectl.run(verb, "-f", str(path))
            assert (proc.returncode, proc.stdout) == (1, ""), proc.stderr
            assert proc.stderr.strip() == _no_match(path, name, kind, version), (verb, file)


def test_kubectl_explain_plaintext_openapiv2(kubectl, kube):
    out = kubectl.ok("explain", "--output=plaintext-openapiv2", "pod.spec")
    assert out.startswith("KIND:     Pod\nVERSION:  v1\n\nRESOURCE: spec <Object>\n")
    assert "\n   containers\t<[]Object> -required-\n" in out
    kubectl.ok("create", "-f", str(MXJOB_CRD))
    kubectl.ok("wait", "--for", "condition=established", "crd/mxjobs.kubeflow.org", "--timeout=10s")
    out = kubectl.ok("explain", "--output=plaintext-openapiv2", "mxjob.spec")
    assert out.startswith("KIND:     MXJob\nVERSION:  kubeflow.org/v1\n\nRESOURCE: spec <Object>\n")
    assert "\n   mxReplicaSpecs\t<map[string]Object> -required-\n" in out
    out = kubectl.ok("explain", "--output=plaintext-openapiv2", "mxjob.spec.mxReplicaSpecs.template")
    assert "RESOURCE: template <Object>" in out
