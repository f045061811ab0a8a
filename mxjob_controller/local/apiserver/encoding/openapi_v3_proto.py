"""An OpenAPI v3 document as gnostic's protobuf (``github.com/google/gnostic-models`` ``openapiv3/OpenAPIv3.proto``),
which kube-openapi's ``handler3`` serves for ``application/com.github.proto-openapi.spec.v3@v1.0+protobuf``
(``ToV3ProtoBinary``: the JSON parsed by gnostic's compiler, then ``proto.Marshal``).

Written field by field for what the server's documents hold (``openapi.py``): info, paths with their operations,
parameters, request bodies and responses, and ``components.schemas``. As gnostic's compiler reads JSON: a map with
``$ref`` (and at most ``summary`` and ``description``) is a ``Reference``, any other a ``Schema`` or
``Parameter``...; ``x-`` keys are specification extensions; examples, enum values and extensions are ``Any``s
holding the value as YAML text (JSON, which is YAML, as for v2: ``openapi_v2.py``); a ``default`` is a
``DefaultType`` when it is a number, a boolean or a string (gnostic has no other), else left out.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.local.apiserver.encoding.openapi_v2 import Msg, any_value, extensions, named

_REFERENCE_KEYS = frozenset({"$ref", "summary", "description"})
_OPERATIONS = {"get": 4, "put": 5, "post": 6, "delete": 7, "options": 8, "head": 9, "patch": 10, "trace": 11}


def _is_reference(node: Any) -> bool:
    return isinstance(node, dict) and "$ref" in node and set(node) <= _REFERENCE_KEYS


def _reference(node: dict) -> Msg:
    m = Msg()
    m.string(1, node.get("$ref"))
    m.string(2, node.get("summary"))
    m.string(3, node.get("description"))
    return m


def _or_reference(node: Any, encode: Any) -> Msg:
    """A ``...OrReference``: field 1 the object, field 2 a Reference."""
    m = Msg()
    if _is_reference(node):
        m.message(2, _reference(node))
    else:
        m.message(1, encode(node))
    return m


def _default(value: Any) -> Msg | None:
    m = Msg()
    if isinstance(value, bool):
        m.boolean(2, value, keep_false=True)
    elif isinstance(value, (int, float)):
        m.raw_double(1, float(value))
    elif isinstance(value, str):
        m.string(3, value, keep_empty=True)
    else:
        return None
    return m


def schema(s: dict[str, Any]) -> Msg:
    m = Msg()
    for key, number in (("nullable", 1), ("readOnly", 3), ("writeOnly", 4), ("deprecated", 8),
                        ("exclusiveMaximum", 12), ("exclusiveMinimum", 14), ("uniqueItems", 20)):
        m.boolean(number, s.get(key))
    for key, number in (("title", 9), ("pattern", 17), ("type", 25), ("description", 34), ("format", 35)):
        m.string(number, s.get(key))
    for key, number in (("multipleOf", 10), ("maximum", 11), ("minimum", 13)):
        m.double(number, s.get(key))
    for key, number in (("maxLength", 15), ("minLength", 16), ("maxItems", 18), ("minItems", 19),
                        ("maxProperties", 21), ("minProperties", 22)):
        m.int64(number, s.get(key))
    if isinstance(s.get("discriminator"), dict):
        d = Msg()
        d.string(1, s["discriminator"].get("propertyName"))
        m.message(2, d)
    if "example" in s:
        m.message(7, any_value(s["example"]))
    m.strings(23, s.get("required"))
    for v in s.get("enum") or []:
        m.message(24, any_value(v))
    for key, number in (("allOf", 26), ("oneOf", 27), ("anyOf", 28)):
        for sub in s.get(key) or []:
            m.message(number, _or_reference(sub, schema))
    if isinstance(s.get("not"), dict):
        m.message(29, schema(s["not"]))
    items = s.get("items")
    if isinstance(items, (dict, list)):
        item = Msg()
        for sub in items if isinstance(items, list) else [items]:
            item.message(1, _or_reference(sub, schema))
        m.message(30, item)
    if isinstance(s.get("properties"), dict):
        props = Msg()
        for name, sub in s["properties"].items():
            props.message(1, named(name, _or_reference(sub, schema)))
        m.message(31, props)
    extra = s.get("additionalProperties")
    if isinstance(extra, (dict, bool)):
        item = Msg()
        if isinstance(extra, bool):
            item.boolean(2, extra, keep_false=True)
        else:
            item.message(1, _or_reference(extra, schema))
        m.message(32, item)
    if "default" in s:
        default = _default(s["default"])
        if default is not None:
            m.message(33, default)
    if isinstance(s.get("externalDocs"), dict):
        docs = Msg()
        docs.string(1, s["externalDocs"].get("description"))
        docs.string(2, s["externalDocs"].get("url"))
        m.message(6, docs)
    extensions(m, 36, s)
    return m


def _media_types(content: dict[str, Any]) -> Msg:
    m = Msg()
    for name, media in content.items():
        mt = Msg()
        if isinstance(media, dict):
            if isinstance(media.get("schema"), dict):
                mt.message(1, _or_reference(media["schema"], schema))
            if "example" in media:
                mt.message(2, any_value(media["example"]))
            extensions(mt, 5, media)
        m.message(1, named(name, mt))
    return m


def _parameter(p: dict[str, Any]) -> Msg:
    m = Msg()
    for key, number in (("name", 1), ("in", 2), ("description", 3), ("style", 7)):
        m.string(number, p.get(key))
    for key, number in (("required", 4), ("deprecated", 5), ("allowEmptyValue", 6), ("explode", 8),
                        ("allowReserved", 9)):
        m.boolean(number, p.get(key))
    if isinstance(p.get("schema"), dict):
        m.message(10, _or_reference(p["schema"], schema))
    if "example" in p:
        m.message(11, any_value(p["example"]))
    if isinstance(p.get("content"), dict):
        m.message(13, _media_types(p["content"]))
    extensions(m, 14, p)
    return m


def _request_body(body: dict[str, Any]) -> Msg:
    m = Msg()
    m.string(1, body.get("description"))
    if isinstance(body.get("content"), dict):
        m.message(2, _media_types(body["content"]))
    m.boolean(3, body.get("required"))
    extensions(m, 4, body)
    return m


def _response(r: dict[str, Any]) -> Msg:
    m = Msg()
    m.string(1, r.get("description"), keep_empty=True)
    if isinstance(r.get("content"), dict):
        m.message(3, _media_types(r["content"]))
    extensions(m, 5, r)
    return m


def _operation(op: dict[str, Any]) -> Msg:
    m = Msg()
    m.strings(1, op.get("tags"))
    for key, number in (("summary", 2), ("description", 3), ("operationId", 5)):
        m.string(number, op.get(key))
    for p in op.get("parameters") or []:
        m.message(6, _or_reference(p, _parameter))
    if isinstance(op.get("requestBody"), dict):
        m.message(7, _or_reference(op["requestBody"], _request_body))
    responses = op.get("responses")
    if isinstance(responses, dict):
        rs = Msg()
        for code, r in responses.items():
            if code == "default":
                rs.message(1, _or_reference(r, _response))
            elif not code.startswith("x-"):
                rs.message(2, named(code, _or_reference(r, _response)))
        extensions(rs, 3, responses)
        m.message(8, rs)
    m.boolean(10, op.get("deprecated"))
    extensions(m, 13, op)
    return m


def _path_item(item: dict[str, Any]) -> Msg:
    m = Msg()
    m.string(1, item.get("$ref"))
    m.string(2, item.get("summary"))
    m.string(3, item.get("description"))
    for verb, number in _OPERATIONS.items():
        if isinstance(item.get(verb), dict):
            m.message(number, _operation(item[verb]))
    for p in item.get("parameters") or []:
        m.message(13, _or_reference(p, _parameter))
    extensions(m, 14, item)
    return m


def encode(doc: dict[str, Any]) -> bytes:
    """gnostic's ``openapi.v3.Document`` of ``doc``, marshalled."""
    m = Msg()
    m.string(1, doc.get("openapi"))
    info = doc.get("info")
    if isinstance(info, dict):
        i = Msg()
        for key, number in (("title", 1), ("description", 2), ("termsOfService", 3), ("version", 6),
                            ("summary", 8)):
            i.string(number, info.get(key))
        extensions(i, 7, info)
        m.message(2, i)
    if isinstance(doc.get("paths"), dict):
        paths = Msg()
        for name, item in doc["paths"].items():
            if isinstance(item, dict) and not name.startswith("x-"):
                paths.message(1, named(name, _path_item(item)))
        extensions(paths, 2, doc["paths"])
        m.message(4, paths)
    components = doc.get("components")
    if isinstance(components, dict):
        c = Msg()
        if isinstance(components.get("schemas"), dict):
            schemas = Msg()
            for name, s in components["schemas"].items():
                schemas.message(1, named(name, _or_reference(s, schema)))
            c.message(1, schemas)
        m.message(5, c)
    extensions(m, 9, doc)
    return m.encode()
