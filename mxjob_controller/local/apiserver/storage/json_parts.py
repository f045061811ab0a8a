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
from typing import Any

# Built once (json.dumps builds an encoder per call), and without the circular-reference check: what is encoded
# is a tree (decoded JSON and what the server adds to it). Together a fifth less per stored object.
ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False)

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
    text = ENCODER.encode(part)
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
    if stand_in is None:
        return ENCODER.encode(obj).encode()
    around = ENCODER.encode(stand_in).split(_STAND_IN_JSON)
    if len(around) != len(pieces) + 1:
        return ENCODER.encode(obj).encode()
    out = [around[0]]
    for piece, after in zip(pieces, around[1:], strict=True):
        out.append(piece)
        out.append(after)
    return "".join(out).encode()


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
