"""``/openapi/v3/<group-version>``: a document served as kube-openapi's ``handler3`` serves it.

- ``Etag`` is the document's hash, quoted. With ``?hash=`` equal to it, the answer is immutable: ``Cache-Control:
  public, immutable`` (the only Cache-Control: it replaces the server's default ``no-cache, private``), ``Vary:
  Accept`` (JSON and protobuf are cached apart) and ``Expires`` a year from now; with another hash, a ``301`` to the
  current one (``http.Redirect``'s small HTML body), so a client holding an old index is sent to the new document.
- Content negotiation: JSON for ``application/json`` and ``application/*`` (or ``*/*``); kube also serves
  ``application/com.github.proto-openapi.spec.v3@v1.0+protobuf``, gnostic's protobuf of the document, which this
  server does not encode: an Accept that allows nothing else is answered ``406`` (kube's answer to an Accept it
  cannot meet), so a client never mistakes JSON for protobuf. No Kubernetes client asks v3 for protobuf alone.
- ``If-None-Match`` with the current Etag is a ``304`` (``http.ServeContent``).
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Mapping
from typing import Any

from mxjob_controller.kube.vocabulary import JSON_MEDIA_TYPE
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


def _wants_json(accept: str) -> bool:
    for media_type in accepted_media_types(accept or "*/*"):
        major, _, minor = media_type.partition("/")
        if major in ("application", "*") and minor in ("json", "*"):
            return True
    return False


def serve(openapi: OpenAPI, path: str, query: Mapping[str, str], headers: Any,
          now: datetime.datetime | None = None) -> Response:
    """The answer to ``GET /openapi/v3/<path>``."""
    doc = openapi.document(path)
    if doc is None:
        return page_not_found()
    body, digest = doc
    if not _wants_json(headers.get("Accept", "") or ""):
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
    return Response(200, body, content_type=JSON_MEDIA_TYPE, headers=out, encoder_newline=False)
