"""Just enough of Kubernetes' protobuf encoding to read the review requests kubectl sends.

kubectl's typed clients (``auth can-i``, ``auth whoami``, ``create token``) send bodies as
``application/vnd.kubernetes.protobuf``: the magic ``k8s\\0`` and a ``runtime.Unknown`` (typeMeta, raw) whose raw
bytes are the object in the field numbers of ``k8s.io/api``'s ``generated.proto``. This module decodes the protobuf
wire format and maps the fields of the four request kinds to the dicts their JSON would have been; everything
else in them (metadata, status) is skipped. Any other kind, or bytes that are not such a body, cannot be decoded:
the caller answers 400 ``the object provided is unrecognized``, as kube-apiserver answers a body it cannot decode
(415 is for a media type it does not accept at all).
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kube.vocabulary import PROTOBUF_MEDIA_TYPE as MEDIA_TYPE  # noqa: F401 (the type this module reads)

_MAGIC = b"k8s\x00"

Field = tuple[str, Any]   # (JSON name, str | int | [str] | the name of a nested message)
_MESSAGES: dict[str, dict[int, Field]] = {
    "SelfSubjectAccessReview": {2: ("spec", "SelfSubjectAccessReviewSpec")},
    "SelfSubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes"),
                                    2: ("nonResourceAttributes", "NonResourceAttributes")},
    "ResourceAttributes": {1: ("namespace", str), 2: ("verb", str), 3: ("group", str), 4: ("version", str),
                           5: ("resource", str), 6: ("subresource", str), 7: ("name", str)},
    "NonResourceAttributes": {1: ("path", str), 2: ("verb", str)},
    "SelfSubjectRulesReview": {2: ("spec", "SelfSubjectRulesReviewSpec")},
    "SelfSubjectRulesReviewSpec": {1: ("namespace", str)},
    "SelfSubjectReview": {},
    "TokenRequest": {2: ("spec", "TokenRequestSpec")},
    "TokenRequestSpec": {1: ("audiences", [str]), 4: ("expirationSeconds", int)},
}


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of one message: varints as ints, length-delimited fields as bytes."""
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, value))
        elif wire == 2:
            length, i = _varint(data, i)
            if i + length > len(data):
                raise ValueError("truncated field")
            out.append((number, data[i:i + length]))
            i += length
        elif wire in (1, 5):
            i += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _message(name: str, data: bytes) -> dict[str, Any]:
    schema = _MESSAGES[name]
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        key, kind = schema[number]
        if kind is str and isinstance(value, bytes):
            if value:
                out[key] = value.decode("utf-8")
        elif kind is int and isinstance(value, int):
            out[key] = value - (1 << 64) if value >= 1 << 63 else value
        elif kind == [str] and isinstance(value, bytes):
            out.setdefault(key, []).append(value.decode("utf-8"))
        elif isinstance(kind, str) and isinstance(value, bytes):
            out[key] = _message(kind, value)
    return out


def decode(body: bytes) -> dict[str, Any]:
    """The object a protobuf body carries, as its JSON would be; ValueError for anything this cannot read."""
    if not body.startswith(_MAGIC):
        raise ValueError("not a Kubernetes protobuf body (no k8s magic)")
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(_MAGIC):]):
        if number == 1 and isinstance(value, bytes):
            for sub, text in _fields(value):
                if sub == 1 and isinstance(text, bytes):
                    api_version = text.decode("utf-8")
                elif sub == 2 and isinstance(text, bytes):
                    kind = text.decode("utf-8")
        elif number == 2 and isinstance(value, bytes):
            raw = value
    if kind not in _MESSAGES:
        raise ValueError(f"cannot decode {kind or 'an unnamed kind'} from protobuf")
    return {"apiVersion": api_version, "kind": kind, **_message(kind, raw)}
