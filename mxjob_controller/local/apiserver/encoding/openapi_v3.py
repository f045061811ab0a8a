"""``/openapi/v3/<group-version>``: a document served as kube-openapi's ``handler3`` serves it.

- ``Etag`` is the document's hash, quoted, the same for both encodings. With ``?hash=`` equal to it, the answer is
  immutable: ``Cache-Control: public, immutable`` (the only Cache-Control: it replaces the server's default
  ``no-cache, private``), ``Vary: Accept`` (JSON and protobuf are cached apart) and ``Expires`` a year from now; with
  another hash, a ``301`` to the current one (``http.Redirect``'s small HTML body), so a client holding an old index
  is sent to the new document.
- Content negotiation in kube-openapi's order: JSON for ``application/json`` and ``application/*`` (or ``*/*``),
  gnostic's protobuf (``openapi_v3_proto.py``) for ``application/com.github.proto-openapi.spec.v3@v1.0+protobuf``;
  an Accept that allows neither is a ``406``.
- ``If-None-Match`` with the current Etag is a ``304`` (``http.ServeContent``).
"""

from __future__ import annotations

import datetime
import hashlib
import html
import json
from collections.abc import Mapping
from typing import Any

from mxjob_controller.kube.vocabulary import JSON_MEDIA_TYPE
from mxjob_controller.local.apiserver.encoding import openapi_v3_proto
from mxjob_controller.local.apiserver.encoding.openapi import OpenAPI
from mxjob_controller.local.apiserver.encoding.openapi_v2 import accepted_media_types
from mxjob_controller.local.apiserver.request import Response, page_not_found

PROTOBUF_V3 = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"


def expires(now: datetime.datetime) -> str:
    """Go's ``time.Now().AddDate(1, 0, 0).Format(time.RFC1123)`` in UTC (a 29 February becomes 1 March)."""
    try:
        later = now.replace(year=now.year + 1)
    except ValueError:
        later = now.replace(year=now.year + 1, month=3, day=1)
    return later.strftime("%a, %d %b %Y %H:%M:%S UTC")


def redirect(location: str) -> Response:
    """Go's ``http.Redirect(w, r, location, 301)`` for a GET: the Location and a one-line HTML body."""
    body = f'<a href="{html.escape(location)}">Moved Permanently</a>.\n\n'.encode()
    return Response(301, body, content_type="text/html; charset=utf-8", headers={"Location": location})


def negotiate(accept: str) -> str | None:
    """The content type to answer ``accept`` with (the first of its clauses either encoding meets), or None."""
    for media_type in accepted_media_types(accept or "*/*"):
        major, _, minor = media_type.partition("/")
        if major in ("application", "*") and minor in ("json", "*"):
            return JSON_MEDIA_TYPE
        if media_type == PROTOBUF_V3:
            return PROTOBUF_V3
    return None


def serve(openapi: OpenAPI, path: str, query: Mapping[str, str], headers: Any,
          now: datetime.datetime | None = None) -> Response:
    """The answer to ``GET /openapi/v3/<path>``."""
    doc = openapi.document(path)
    if doc is None:
        return page_not_found()
    body, digest = doc
    content_type = negotiate(headers.get("Accept", "") or "")
    if content_type is None:
        return Response(406, b"", content_type="text/plain; charset=utf-8")
    out = {"Etag": f'"{digest}"'}
    wanted = query.get("hash")
    if wanted:
        if wanted != digest:
            moved = redirect(f"/openapi/v3/{path}?hash={digest}")
            moved.headers.update(out)
            return moved
        out.update({"Vary": "Accept", "Cache-Control": "public, immutable",
                    "Expires": expires(now or datetime.datetime.now(datetime.UTC))})
    none_match = headers.get("If-None-Match")
    if none_match is not None and ("*" in none_match or out["Etag"] in
                                   [t.strip().removeprefix("W/") for t in none_match.split(",")]):
        return Response(304, b"", headers=out)
    if content_type == PROTOBUF_V3:
        body = _protobuf(openapi, path, body)
    return Response(200, body, content_type=content_type, headers=out, encoder_newline=False)


_PROTOBUF_CACHE: dict[tuple[int, str, str], bytes] = {}


def _protobuf(openapi: OpenAPI, path: str, body: bytes) -> bytes:
    """The document's protobuf, encoded once per document version (its JSON's hash)."""
    key = (id(openapi), path, hashlib.sha256(body).hexdigest())
    encoded = _PROTOBUF_CACHE.get(key)
    if encoded is None:
        encoded = openapi_v3_proto.encode(json.loads(body))
        if len(_PROTOBUF_CACHE) > 64:   # documents change as CRDs come and go: keep the recent ones
            _PROTOBUF_CACHE.clear()
        _PROTOBUF_CACHE[key] = encoded
    return encoded
