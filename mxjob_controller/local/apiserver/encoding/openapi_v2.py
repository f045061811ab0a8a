"""``/openapi/v2``: one Swagger 2.0 document for every served kind, as JSON and as gnostic protobuf.

Built from the very documents ``/openapi/v3`` serves (``openapi.OpenAPI``): their schemas become ``definitions``
(``#/components/schemas/X`` → ``#/definitions/X``, ``allOf: [$ref]`` → ``$ref``), their operations v2 operations
(``requestBody`` → a ``body`` parameter, parameter schemas flattened, ``consumes``/``produces``); a custom
resource's schema is reduced the way kube-apiserver publishes CRDs in v2 (``nullable``, ``anyOf``/``oneOf``/``not``,
preserve-unknown-fields and embedded-resource nodes lose what v2 clients cannot read). The document follows the v3
ones, so it changes live as CRDs come and go.

kubectl depends on it: ``create``/``apply`` fall back to v2 whenever v3 has no path for a manifest's kind, and only
when v2 loads do they get as far as the RESTMapper and say ``no matches for kind ... ensure CRDs are installed
first``; ``explain --output=plaintext-openapiv2`` reads its definitions. client-go asks for
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and reads nothing else: the protobuf is gnostic's
``openapi.v2.Document`` (``github.com/google/gnostic-models`` ``openapiv2/OpenAPIv2.proto``), written here field by
field. As kube-openapi's handler does: the ETag is the upper-case hex SHA-512 of the JSON, shared by both
encodings, with ``Vary: Accept`` and ``Last-Modified``; ``If-None-Match`` / ``If-Modified-Since`` answer 304; an
``Accept`` naming neither encoding answers 406.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import time
import weakref
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

from mxjob_controller.kube import k8s_schemas
from mxjob_controller.kube.vocabulary import JSON_MEDIA_TYPE as JSON
from mxjob_controller.local.apiserver.encoding.openapi import REF_PREFIX as _V3_REF
from mxjob_controller.local.apiserver.encoding.openapi import OpenAPI
from mxjob_controller.local.apiserver.request import Response

PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
_PROTOBUF_SUBTYPES = ("com.github.proto-openapi.spec.v2@v1.0+protobuf",   # what client-go asks for
                      "com.github.proto-openapi.spec.v2.v1.0+protobuf")
_V2_REF = "#/definitions/"
_BUILTIN_PRODUCES = ["application/json", "application/yaml", "application/vnd.kubernetes.protobuf"]
_CUSTOM_PRODUCES = ["application/json", "application/yaml"]
_SPECIAL_BUILTINS = ("io.k8s.apimachinery.pkg.util.intstr.IntOrString", "io.k8s.apimachinery.pkg.api.resource.Quantity")
# Schema keywords a Swagger 2.0 schema has (the gnostic Schema message); anything else but x-* is dropped.
_SCHEMA_KEYS = frozenset((
    "$ref", "format", "title", "description", "default", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxProperties",
    "minProperties", "required", "enum", "additionalProperties", "type", "items", "allOf", "properties",
    "discriminator", "readOnly", "externalDocs", "example"))


# --- v3 → v2 ------------------------------------------------------------------------------------------------

def _schema(node: Any, custom: bool) -> Any:
    """A v3 schema node → a v2 one; ``custom``: reduce it as kube reduces CRD schemas for v2."""
    if not isinstance(node, dict):
        return node
    all_of = node.get("allOf")
    if (isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict)
            and set(all_of[0]) == {"$ref"}):  # kube-openapi's v3 spelling of a ref with siblings
        node = {**{k: v for k, v in node.items() if k != "allOf"}, "$ref": all_of[0]["$ref"]}
    if isinstance(node.get("$ref"), str):
        out = {"$ref": _V2_REF + node["$ref"].removeprefix(_V3_REF)}
        out.update({k: v for k, v in node.items() if k in ("description", "default") or k.startswith("x-")})
        return out
    node = dict(node)
    if custom:
        if node.get("nullable") or node.get("x-kubernetes-preserve-unknown-fields") \
                or node.get("x-kubernetes-embedded-resource"):
            for key in ("type", "items", "properties"):
                node.pop(key, None)
        if node.get("x-kubernetes-int-or-string"):
            node.pop("type", None)
        props = node.get("properties")
        if isinstance(props, dict) and isinstance(node.get("required"), list):
            nullable = {k for k, v in props.items() if isinstance(v, dict) and v.get("nullable")}
            node["required"] = [r for r in node["required"] if r not in nullable]
            if not node["required"]:
                del node["required"]
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("nullable"):
            node["additionalProperties"] = {k: v for k, v in extra.items() if k not in ("nullable", "type")}
        if "allOf" in node:  # kube drops allOf/anyOf/oneOf/not from CRD schemas in v2
            del node["allOf"]
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _SCHEMA_KEYS and not key.startswith("x-"):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _schema(sub, custom) for name, sub in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _schema(value, custom)
        elif key == "allOf" and isinstance(value, list):
            out[key] = [_schema(sub, custom) for sub in value]
        else:
            out[key] = value
    return out


def _parameter(p: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in p:
        return {"$ref": p["$ref"]}
    out = {k: v for k, v in p.items() if k != "schema"}
    out.update({k: v for k, v in (p.get("schema") or {}).items() if k in ("type", "format", "uniqueItems")})
    return out


def _operation(op: dict[str, Any], custom: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    body = op.get("requestBody")
    if body:
        media = list(body.get("content", {}))
        ref = next(iter(body["content"].values()), {}).get("schema", {}).get("$ref", "")
        out["consumes"] = media if any("patch" in m for m in media) else ["*/*"]
    else:
        out["consumes"] = ["*/*"]
    if op.get("description"):
        out["description"] = op["description"]
    out["operationId"] = op.get("operationId", "")
    params = [_parameter(p) for p in op.get("parameters", [])]
    if body:
        params.insert(0, {"in": "body", "name": "body", "required": True,
                          "schema": {"$ref": _V2_REF + ref.removeprefix(_V3_REF)}})
    out["parameters"] = params
    out["produces"] = list(_CUSTOM_PRODUCES if custom else _BUILTIN_PRODUCES)
    responses: dict[str, Any] = {}
    for code, resp in op.get("responses", {}).items():
        r: dict[str, Any] = {"description": resp.get("description", "")}
        for media in resp.get("content", {}).values():
            if "schema" in media:
                r["schema"] = _schema(media["schema"], False)
                break
        responses[code] = r
    out["responses"] = responses
    out["schemes"] = ["https"]
    out["tags"] = list(op.get("tags", []))
    out.update({k: v for k, v in op.items() if k.startswith("x-")})
    return out


def build(documents: dict[str, dict[str, Any]], version: str) -> dict[str, Any]:
    """The v2 document for the v3 ``documents`` (path → parsed document)."""
    builtins = k8s_schemas.definitions()
    definitions: dict[str, Any] = {}
    paths: dict[str, Any] = {}
    for doc in documents.values():
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            custom = name not in builtins and name not in _SPECIAL_BUILTINS
            if custom and schema.get("x-kubernetes-preserve-unknown-fields") \
                    and not name.endswith("List") and "x-kubernetes-group-version-kind" in schema:
                # kube publishes a schemaless or preserve-unknown CRD as a bare object, no properties
                definitions[name] = {"type": "object", "x-kubernetes-group-version-kind":
                                     schema["x-kubernetes-group-version-kind"]}
            else:
                definitions[name] = _schema(schema, custom)
        for path, item in doc.get("paths", {}).items():
            custom = any(isinstance(op, dict) and _is_custom(op.get("x-kubernetes-group-version-kind"))
                         for op in item.values())
            paths[path] = {verb: (_operation(op, custom) if verb != "parameters"
                                  else [_parameter(p) for p in op]) for verb, op in item.items()}
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "in": "header",
                                                "name": "authorization", "type": "apiKey"}},
        "security": [{"BearerToken": []}],
    }


def _is_custom(gvk: Any) -> bool:
    if not isinstance(gvk, dict) or not gvk.get("kind"):
        return False
    return k8s_schemas.definition_name(gvk.get("group", ""), gvk.get("version", ""), gvk["kind"]) is None


# --- protobuf (gnostic openapi.v2) --------------------------------------------------------------------------

def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class Msg:
    """One message being written: fields appended in any order, serialised by field number (as Go does)."""

    def __init__(self) -> None:
        self._fields: list[tuple[int, bytes]] = []

    def raw(self, number: int, wire: int, payload: bytes) -> None:
        self._fields.append((number, _varint(number << 3 | wire) + payload))

    def bytes_(self, number: int, data: bytes) -> None:
        self.raw(number, 2, _varint(len(data)) + data)

    def string(self, number: int, value: Any, keep_empty: bool = False) -> None:
        if isinstance(value, str) and (value or keep_empty):
            self.bytes_(number, value.encode("utf-8"))

    def strings(self, number: int, values: Any) -> None:
        for v in values if isinstance(values, list) else []:
            self.string(number, v, keep_empty=True)

    def boolean(self, number: int, value: Any, keep_false: bool = False) -> None:
        if isinstance(value, bool) and (value or keep_false):
            self.raw(number, 0, b"\x01" if value else b"\x00")

    def int64(self, number: int, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and value:
            self.raw(number, 0, _varint(value))

    def double(self, number: int, value: Any) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value:
            self.raw_double(number, float(value))

    def raw_double(self, number: int, value: float) -> None:
        """A double even when zero (a oneof member is written whatever its value)."""
        self.raw(number, 1, struct.pack("<d", value))

    def message(self, number: int, msg: Msg) -> None:
        self.bytes_(number, msg.encode())

    def encode(self) -> bytes:
        return b"".join(data for _, data in sorted(self._fields, key=lambda f: f[0]))


def any_value(value: Any) -> Msg:
    """gnostic's Any: the value as YAML text (JSON is YAML)."""
    m = Msg()
    m.string(2, json.dumps(value, separators=(",", ":")) + "\n")
    return m


def named(name: str, value: Msg) -> Msg:
    m = Msg()
    m.string(1, name, keep_empty=True)
    m.message(2, value)
    return m


def extensions(m: Msg, number: int, obj: dict[str, Any]) -> None:
    for key, value in obj.items():
        if key.startswith("x-"):
            m.message(number, named(key, any_value(value)))


def _pb_schema(s: dict[str, Any]) -> Msg:
    m = Msg()
    for key, number in (("$ref", 1), ("format", 2), ("title", 3), ("description", 4), ("pattern", 13),
                        ("discriminator", 26)):
        m.string(number, s.get(key))
    for key, number in (("multipleOf", 6), ("maximum", 7), ("minimum", 9)):
        m.double(number, s.get(key))
    for key, number in (("exclusiveMaximum", 8), ("exclusiveMinimum", 10), ("uniqueItems", 16),
                        ("readOnly", 27)):
        m.boolean(number, s.get(key))
    for key, number in (("maxLength", 11), ("minLength", 12), ("maxItems", 14), ("minItems", 15),
                        ("maxProperties", 17), ("minProperties", 18)):
        m.int64(number, s.get(key))
    if "default" in s:
        m.message(5, any_value(s["default"]))
    if "example" in s:
        m.message(30, any_value(s["example"]))
    m.strings(19, s.get("required"))
    for v in s.get("enum") or []:
        m.message(20, any_value(v))
    extra = s.get("additionalProperties")
    if isinstance(extra, (dict, bool)):
        item = Msg()
        if isinstance(extra, bool):
            item.boolean(2, extra, keep_false=True)
        else:
            item.message(1, _pb_schema(extra))
        m.message(21, item)
    if "type" in s:
        t = Msg()
        t.strings(1, s["type"] if isinstance(s["type"], list) else [s["type"]])
        m.message(22, t)
    if isinstance(s.get("items"), (dict, list)):
        items = Msg()
        for sub in s["items"] if isinstance(s["items"], list) else [s["items"]]:
            items.message(1, _pb_schema(sub))
        m.message(23, items)
    for sub in s.get("allOf") or []:
        m.message(24, _pb_schema(sub))
    if isinstance(s.get("properties"), dict):
        props = Msg()
        for name, sub in s["properties"].items():
            props.message(1, named(name, _pb_schema(sub)))
        m.message(25, props)
    if isinstance(s.get("externalDocs"), dict):
        docs = Msg()
        docs.string(1, s["externalDocs"].get("description"))
        docs.string(2, s["externalDocs"].get("url"))
        m.message(29, docs)
    extensions(m, 31, s)
    return m


# Non-body parameter sub-schemas: (gnostic oneof field, {key: field number}); query (and formData) have
# allowEmptyValue at 5, shifting the rest by one.
_COMMON_PARAM = ("required", "in", "description", "name", "type", "format", "items", "collectionFormat",
                 "default", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength",
                 "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "enum", "multipleOf")
_PATH_FIELDS = {k: i + 1 for i, k in enumerate(_COMMON_PARAM)} | {"x-": 22}
_QUERY_FIELDS = ({k: i + 1 for i, k in enumerate(_COMMON_PARAM[:4])} | {"allowEmptyValue": 5}
                 | {k: i + 6 for i, k in enumerate(_COMMON_PARAM[4:])} | {"x-": 23})
_NON_BODY = {"header": (1, _PATH_FIELDS), "formData": (2, _QUERY_FIELDS), "query": (3, _QUERY_FIELDS),
             "path": (4, _PATH_FIELDS)}


def _pb_sub_schema(p: dict[str, Any], fields: dict[str, int]) -> Msg:
    m = Msg()
    for key, value in p.items():
        number = fields.get(key)
        if number is None:
            continue
        if key in ("in", "description", "name", "type", "format", "collectionFormat", "pattern"):
            m.string(number, value)
        elif key in ("required", "allowEmptyValue", "exclusiveMaximum", "exclusiveMinimum", "uniqueItems"):
            m.boolean(number, value)
        elif key in ("maximum", "minimum", "multipleOf"):
            m.double(number, value)
        elif key in ("maxLength", "minLength", "maxItems", "minItems"):
            m.int64(number, value)
        elif key == "default":
            m.message(number, any_value(value))
        elif key == "enum":
            for v in value:
                m.message(number, any_value(v))
    extensions(m, fields["x-"], p)
    return m


def _pb_parameters_item(p: dict[str, Any]) -> Msg:
    item = Msg()
    if "$ref" in p:
        ref = Msg()
        ref.string(1, p["$ref"])
        item.message(2, ref)
        return item
    param = Msg()
    if p.get("in") == "body":
        body = Msg()
        body.string(1, p.get("description"))
        body.string(2, p.get("name"))
        body.string(3, p.get("in"))
        body.boolean(4, p.get("required"))
        if isinstance(p.get("schema"), dict):
            body.message(5, _pb_schema(p["schema"]))
        extensions(body, 6, p)
        param.message(1, body)
    else:
        number, fields = _NON_BODY.get(p.get("in", ""), _NON_BODY["query"])
        non_body = Msg()
        non_body.message(number, _pb_sub_schema(p, fields))
        param.message(2, non_body)
    item.message(1, param)
    return item


def _pb_operation(op: dict[str, Any]) -> Msg:
    m = Msg()
    m.strings(1, op.get("tags"))
    m.string(2, op.get("summary"))
    m.string(3, op.get("description"))
    m.string(5, op.get("operationId"))
    m.strings(6, op.get("produces"))
    m.strings(7, op.get("consumes"))
    for p in op.get("parameters", []):
        m.message(8, _pb_parameters_item(p))
    responses = Msg()
    for code, resp in op.get("responses", {}).items():
        r = Msg()
        r.string(1, resp.get("description"))
        if isinstance(resp.get("schema"), dict):
            item = Msg()
            item.message(1, _pb_schema(resp["schema"]))
            r.message(2, item)
        extensions(r, 5, resp)
        value = Msg()
        value.message(1, r)
        responses.message(1, named(code, value))
    m.message(9, responses)
    m.strings(10, op.get("schemes"))
    m.boolean(11, op.get("deprecated"))
    extensions(m, 13, op)
    return m


_VERBS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def encode(doc: dict[str, Any]) -> bytes:
    """``doc`` (a Swagger 2.0 document as :func:`build` makes it) as a serialised gnostic ``openapi.v2.Document``."""
    m = Msg()
    m.string(1, doc.get("swagger"))
    info = Msg()
    info.string(1, doc.get("info", {}).get("title"))
    info.string(2, doc.get("info", {}).get("version"))
    m.message(2, info)
    paths = Msg()
    for path, item in doc.get("paths", {}).items():
        pi = Msg()
        for verb, op in item.items():
            if verb in _VERBS:
                pi.message(_VERBS[verb], _pb_operation(op))
            elif verb == "parameters":
                for p in op:
                    pi.message(9, _pb_parameters_item(p))
        extensions(pi, 10, item)
        paths.message(2, named(path, pi))
    m.message(8, paths)
    definitions = Msg()
    for name, schema in doc.get("definitions", {}).items():
        definitions.message(1, named(name, _pb_schema(schema)))
    m.message(9, definitions)
    for requirement in doc.get("security", []):
        req = Msg()
        for name, scopes in requirement.items():
            arr = Msg()
            arr.strings(1, scopes)
            req.message(1, named(name, arr))
        m.message(12, req)
    if doc.get("securityDefinitions"):
        defs = Msg()
        for name, sd in doc["securityDefinitions"].items():
            key = Msg()
            key.string(1, sd.get("type"))
            key.string(2, sd.get("name"))
            key.string(3, sd.get("in"))
            key.string(4, sd.get("description"))
            item = Msg()
            item.message(2, key)   # ApiKeySecurity: the only kind kube publishes
            defs.message(1, named(name, item))
        m.message(13, defs)
    extensions(m, 16, doc)
    return m.encode()


# --- serving --------------------------------------------------------------------------------------------------

class _Spec:
    def __init__(self, key: tuple, json_body: bytes, doc: dict[str, Any]) -> None:
        self.key = key
        self.json = json_body
        self.etag = hashlib.sha512(json_body).hexdigest().upper()
        self.last_modified = int(time.time())
        self._doc: dict[str, Any] | None = doc
        self._proto: bytes | None = None
        self._lock = threading.Lock()

    def proto(self) -> bytes:
        with self._lock:
            if self._proto is None:
                assert self._doc is not None
                self._proto = encode(self._doc)
                self._doc = None
            return self._proto


class OpenAPIV2:
    """The v2 document of one server, rebuilt when any of the v3 documents it comes from changes."""

    def __init__(self, openapi: OpenAPI, version: str) -> None:
        self._openapi = openapi
        self._version = version
        self._lock = threading.Lock()
        self._spec: _Spec | None = None

    def spec(self) -> _Spec:
        with self._lock:
            index = self._openapi.index()["paths"]
            key = tuple(sorted((p, v["serverRelativeURL"]) for p, v in index.items()))
            if self._spec is None or self._spec.key != key:
                docs = {}
                for path in index:
                    got = self._openapi.document(path)
                    if got is not None:
                        docs[path] = json.loads(got[0])
                doc = build(docs, self._version)
                doc = json.loads(json.dumps(doc, sort_keys=True))   # kube's maps serialise sorted
                self._spec = _Spec(key, json.dumps(doc, separators=(",", ":")).encode(), doc)
            return self._spec

    def serve(self, headers: Any) -> Response:
        accept = headers.get("Accept", "") or "*/*"
        for media_type in accepted_media_types(accept):
            major, _, minor = media_type.partition("/")
            if major not in ("application", "*"):
                continue
            if minor in ("json", "*"):
                content_type = JSON
            elif minor in _PROTOBUF_SUBTYPES:
                content_type = PROTOBUF
            else:
                continue
            spec = self.spec()
            out = {"Vary": "Accept", "Etag": f'"{spec.etag}"', "Accept-Ranges": "bytes",
                   "Last-Modified": formatdate(spec.last_modified, usegmt=True)}
            if _not_modified(headers, spec):
                del out["Last-Modified"]
                return Response(304, b"", headers=out)
            body = spec.json if content_type == JSON else spec.proto()
            return Response(200, body, content_type=content_type, headers=out, encoder_newline=False)
        return Response(406, b"", content_type="text/plain; charset=utf-8", headers={"Vary": "Accept"})


def accepted_media_types(accept: str) -> list[str]:
    """The media types of an Accept header, best first (by q, then as listed), as goautoneg orders them."""
    clauses: list[tuple[float, int, str]] = []
    for i, part in enumerate(accept.split(",")):
        media, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media:
            clauses.append((-q, i, media.lower()))
    return [media for _, _, media in sorted(clauses)]


def _not_modified(headers: Any, spec: _Spec) -> bool:
    """Go's http.ServeContent: If-None-Match (weak comparison) first, else If-Modified-Since."""
    none_match = headers.get("If-None-Match")
    if none_match is not None:
        tags = [t.strip().removeprefix("W/") for t in none_match.split(",")]
        return "*" in tags or f'"{spec.etag}"' in tags
    since = headers.get("If-Modified-Since")
    if since:
        try:
            return spec.last_modified <= parsedate_to_datetime(since).timestamp()
        except (TypeError, ValueError):
            return False
    return False


_SERVICES: weakref.WeakKeyDictionary[OpenAPI, OpenAPIV2] = weakref.WeakKeyDictionary()
_SERVICES_LOCK = threading.Lock()


def service(openapi: OpenAPI, version: str) -> OpenAPIV2:
    """The v2 service of ``openapi``'s server (one per server, made on first use)."""
    with _SERVICES_LOCK:
        svc = _SERVICES.get(openapi)
        if svc is None:
            svc = _SERVICES[openapi] = OpenAPIV2(openapi, version)
        return svc
