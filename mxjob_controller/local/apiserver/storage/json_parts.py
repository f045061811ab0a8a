"""The stored JSON of an object, built from parts encoded before where a part is one already encoded.

Every write encodes the whole object it stores (its bytes are the answer and every watcher's), but much of what it
holds is unchanged from an object stored before: a status write leaves a custom resource's spec as stored (the
status strategy shares it with the stored version), a write leaves the other managers' FieldsV1 documents as they
were (``managedfields/managers.update`` writes the very documents back), and the pods a controller creates from one
template have one FieldsV1 document between them (``managers.created`` hands out one object for equal documents).
Those documents are most of a managed object's bytes (5 of the 9 KB of a training pod). A stored object is never
changed, so a part's JSON is known by its identity: it is encoded once and spliced in after, and the object's bytes
are the ones a single encoding of it would give (the encoder is the same; parts are put where stand-ins were).

:func:`encode_json` takes the parts to splice from ``prior`` (the version it replaces: its top-level parts the new
one shares, as a status write shares the spec) and from ``metadata.managedFields`` (each ``fieldsV1`` document).
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from typing import Any

# Built once (json.dumps builds an encoder per call), and without the circular-reference check: what is encoded
# is a tree (decoded JSON and what the server adds to it). Together a fifth less per stored object.
ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False)



def _one_shot_encoder() -> Callable[[Any], str]:
    """``ENCODER.encode`` with its C encoder built once: ``encode`` builds one on every call (a few thousand
    instructions, which an object encoded by its parts pays for each part). The same encoder and arguments as
    ``JSONEncoder.iterencode`` gives it, so the same text; ``ENCODER.encode`` itself where there is none."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return ENCODER.encode
    try:
        c_encoder = make(None, ENCODER.default, json.encoder.encode_basestring_ascii, None, ENCODER.key_separator,
                         ENCODER.item_separator, ENCODER.sort_keys, ENCODER.skipkeys, ENCODER.allow_nan)
    except TypeError:   # another interpreter's signature
        return ENCODER.encode
    as_string = json.encoder.encode_basestring_ascii

    def encode(value: Any) -> str:
        return as_string(value) if type(value) is str else "".join(c_encoder(value, 0))

    sample = {"a": [1, 2.5, None, True, "\u2028\"<>"], "b": {}, "c": []}
    return encode if encode(sample) == ENCODER.encode(sample) else ENCODER.encode


_encode = _one_shot_encoder()

# What stands for a part while the rest is encoded: a string no object holds (a NUL and a nonce drawn at start).
# Should one hold it all the same, the count of stand-ins found is off and the object is encoded whole.
_STAND_IN = "\x00mxjob-part-" + secrets.token_hex(16)
_STAND_IN_JSON = ENCODER.encode(_STAND_IN)

# The JSON of parts seen, by identity: (the part, which keeps the identity its own while it is here, its JSON).
# Only what is stored gets here (a stored object is never changed), so a part's JSON stays its JSON. Bounded by
# the characters kept (the parts themselves are mostly shared with stored objects); cleared when full.
_JSON: dict[int, tuple[Any, str]] = {}
_JSON_LIMIT = 4 * 1024 * 1024
_kept = 0


def _part_json(part: Any) -> str:
    global _kept
    hit = _JSON.get(id(part))
    if hit is not None and hit[0] is part:
        return hit[1]
    text = _encode(part)
    if _kept + len(text) > _JSON_LIMIT:
        _JSON.clear()
        _kept = 0
    _JSON[id(part)] = (part, text)
    _kept += len(text)
    return text


def encode_json(obj: dict, prior: dict | None = None) -> bytes:
    """An object as the server sends it: compact JSON, the parts it shares with ``prior`` (the stored version it
    replaces) and its FieldsV1 documents spliced in as encoded before. Raises ValueError/TypeError for what JSON
    cannot carry (NaN, infinities, non-JSON types), so nothing unservable is ever encoded."""
    pieces: list[str] = []
    stand_in: dict | None = None
    for key, value in obj.items():
        if key == "metadata":
            meta = _metadata_stand_in(value, pieces)
            if meta is not value:
                stand_in = stand_in if stand_in is not None else dict(obj)
                stand_in[key] = meta
        elif prior is not None and type(value) is dict and value and prior.get(key) is value:
            pieces.append(_part_json(value))
            stand_in = stand_in if stand_in is not None else dict(obj)
            stand_in[key] = _STAND_IN
    return (_encode(obj) if stand_in is None else _spliced(obj, stand_in, pieces)).encode()


def _metadata_json(meta: Any) -> str:
    """``meta``'s JSON with its FieldsV1 documents spliced in as encoded before."""
    pieces: list[str] = []
    stand_in = _metadata_stand_in(meta, pieces)
    return _encode(meta) if stand_in is meta else _spliced(meta, stand_in, pieces)


def _spliced(whole: Any, stand_in: Any, pieces: list[str]) -> str:
    """``whole``'s JSON from ``stand_in`` (``whole`` with stand-ins where ``pieces`` go, in order) with the pieces
    put back in their places; ``whole`` encoded whole if the stand-ins found are not one per piece."""
    around = _encode(stand_in).split(_STAND_IN_JSON)
    if len(around) != len(pieces) + 1:
        return _encode(whole)
    out = [around[0]]
    for piece, after in zip(pieces, around[1:], strict=True):
        out.append(piece)
        out.append(after)
    return "".join(out)


def _metadata_stand_in(meta: Any, pieces: list[str]) -> Any:
    """``meta`` with stand-ins for its managed fields' FieldsV1 documents (their JSON added to ``pieces`` in
    order), or ``meta`` itself when it has none."""
    entries = meta.get("managedFields") if type(meta) is dict else None
    if type(entries) is not list or not entries:
        return meta
    items = []
    for item in entries:
        doc = item.get("fieldsV1") if type(item) is dict else None
        if type(doc) is dict and doc:
            pieces.append(_part_json(doc))
            items.append({**item, "fieldsV1": _STAND_IN})
        else:
            items.append(item)
    out = dict(meta)
    out["managedFields"] = items
    return out


# --- a stored version's bytes from the version it replaces ------------------------------------------------

#: Where a stored version's top-level parts (non-empty objects and lists but metadata) are in its bytes, by key:
#: offsets into the bytes (ASCII JSON).
Spans = dict[str, tuple[int, int]]

_KEYS: dict[str, bytes] = {}   # a member's key and colon, by key (the kinds' keys: a few hundred)


def _key(key: str) -> bytes:
    head = _KEYS.get(key)
    if head is None:
        head = _encode(key).encode() + b":"
        if len(_KEYS) < 4096:
            _KEYS[key] = head
    return head


def encode_stored(obj: dict, prior: dict | None = None, prior_raw: bytes | None = None,
                  prior_spans: Spans | None = None) -> tuple[bytes, Spans]:
    """``encode_json(obj, prior)``'s bytes, and where ``obj``'s top-level parts are in them. A part ``obj`` shares
    by identity with ``prior`` (the stored version it replaces, whose bytes are ``prior_raw`` and parts
    ``prior_spans``) is copied from ``prior_raw`` instead of encoded again (a pod's status write shares its spec),
    and so is a part that is ``prior``'s with members added after its own, which it shares (a binding's spec:
    ``nodeName`` added): its members' JSON but theirs. A 1,000-peer MXJob's pod carries 65 KB of ``MX_CONFIG`` in
    its spec. No cache: the prior version's bytes are the part's JSON while it is stored. The bytes are a whole
    encoding's: an object is ``{``, its members' JSON joined by commas, ``}``, as the one encoder writes them."""
    if not obj or not all(type(k) is str for k in obj):
        return encode_json(obj, prior), {}
    spans: Spans = {}
    same = prior is not None and prior_raw is not None and prior_spans is not None
    out: list[bytes] = []
    pos = 0
    for key, value in obj.items():
        head = (b"," if out else b"{") + _key(key)
        out.append(head)
        pos += len(head)
        kind = type(value)
        if key == "metadata":
            piece = _metadata_json(value).encode()
        elif not value or (kind is not dict and kind is not list):
            piece = _encode(value).encode()
        else:
            span = prior_spans.get(key) if same else None   # type: ignore[union-attr]
            before = prior.get(key) if span is not None else None   # type: ignore[union-attr]
            if before is value:
                piece = prior_raw[span[0]:span[1]]   # type: ignore[index]
            elif kind is dict and type(before) is dict and before and _extends(value, before):
                piece = _extended(value, before, prior_raw[span[0]:span[1]])   # type: ignore[index]
            else:
                piece = _encode(value).encode()
            spans[key] = (pos, pos + len(piece))
        out.append(piece)
        pos += len(piece)
    out.append(b"}")
    return b"".join(out), spans


def _extends(value: dict, before: dict) -> bool:
    """Whether ``value`` is ``before``'s members (the same objects, in order) with members after them."""
    if len(value) <= len(before) or not all(type(k) is str for k in value):
        return False
    members = zip(value.items(), before.items(), strict=False)   # stops at the end of ``before``
    return all(key == was and child is old for (key, child), (was, old) in members)


def _extended(value: dict, before: dict, before_json: bytes) -> bytes:
    """``value``'s JSON from ``before_json`` (that of ``before``, which it extends) and its members after."""
    out = [before_json[:-1]]
    for i, (key, child) in enumerate(value.items()):
        if i >= len(before):
            out.append(b"," + _key(key))
            out.append(_encode(child).encode())
    out.append(b"}")
    return b"".join(out)
