"""kube-apiserver 1.32's exact bytes and words where issue 47 found them different, each request and kube's answer
(kube's source named):

- ``metav1.Status`` fields in the Go struct's order (``types.go``: kind, apiVersion, metadata, status, message,
  reason, details, code) and every JSON body ending in a newline (the serializer's ``json.Encoder.Encode``);
  ``/version`` indented (``WriteRawJSON``'s ``json.MarshalIndent``), the OpenAPI documents as marshalled;
- a server-side apply conflict's causes keyed ``reason`` (``metav1.StatusCause.Type`` is ``json:"reason"``);
- WatchList (``validateWatchOptions``; the cacher's initial-events-end bookmark);
- go-restful's 405 for a namespace collection DELETE (the namespace storage has no ``DeleteCollection``);
- OpenAPI v3 (kube-openapi ``handler3``): one Cache-Control, ``Vary: Accept``, ``Expires``, a 301 from a stale hash;
- ``404 page not found`` (Go's ``http.NotFound``) for a path outside every served group-version, go-restful's 404
  Status inside one; the kubelet's ``is terminated``; etcd3 storage's ``invalid continue token: ...``.
"""

from __future__ import annotations

import base64
import datetime
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mxjob_controller.local.apiserver.encoding import kubeproto
from mxjob_controller.local.apiserver.encoding.openapi_v3 import expires
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.kinds.pod_log_options import LogOptions
from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.local.kubelet.logs import LogStore
from tests.support import Kube

CMS = "/api/v1/namespaces/default/configmaps"


def raw(apiserver: APIServer, method: str, path: str, body: Any = None, headers: dict | None = None,
        follow: bool = True) -> tuple[int, dict[str, list[str]], bytes]:
    """(status, headers by lower-case name with every value, body bytes), as sent on the wire."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(apiserver.url + path, data=data, method=method, headers={
        "Content-Type": "application/json", **(headers or {})})

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(*(() if follow else (NoRedirect,)))
    try:
        with opener.open(request, timeout=10) as resp:
            status, items, payload = resp.status, resp.headers.items(), resp.read()
    except urllib.error.HTTPError as e:
        status, items, payload = e.code, e.headers.items(), e.read()
    out: dict[str, list[str]] = {}
    for name, value in items:
        out.setdefault(name.lower(), []).append(value)
    return status, out, payload


# --- Status bytes ------------------------------------------------------------------------------------------------

def test_a_status_is_kubes_bytes(apiserver: APIServer) -> None:
    raw(apiserver, "POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    status, headers, body = raw(apiserver, "POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                         "metadata": {"name": "c"}})
    assert status == 409 and headers["content-type"] == ["application/json"]
    assert body == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps '
                    b'\\"c\\" already exists","reason":"AlreadyExists","details":{"name":"c","kind":"configmaps"},'
                    b'"code":409}\n')
    status, _, body = raw(apiserver, "GET", f"{CMS}/nope")
    assert body.endswith(b'"details":{"name":"nope","kind":"configmaps"},"code":404}\n')


def test_every_json_body_ends_in_a_newline(apiserver: APIServer) -> None:
    for path in (CMS, f"{CMS}/c", "/api/v1", "/apis", "/api", "/apis/apps/v1"):
        raw(apiserver, "POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
        status, _, body = raw(apiserver, "GET", path)
        assert status == 200 and body.endswith(b"}\n") and not body.endswith(b"\n\n"), path
    status, _, created = raw(apiserver, "POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                      "metadata": {"name": "d"}})
    assert status == 201 and created.endswith(b"}\n")
    _, headers, head = raw(apiserver, "HEAD", CMS)
    assert head == b"" and int(headers["content-length"][0]) == len(raw(apiserver, "GET", CMS)[2])
    # kube's /version is WriteRawJSON's json.MarshalIndent: indented, no newline at the end
    _, _, version = raw(apiserver, "GET", "/version")
    assert version.startswith(b'{\n  "major": "1",\n') and version.endswith(b"\n}")


def test_an_apply_conflict_cause_has_a_reason(kube: Kube) -> None:
    apply = "application/apply-patch+yaml"
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "1"}}
    assert kube.patch(f"{CMS}/a", config, content_type=apply, fieldManager="one").status == 201
    clash = kube.patch(f"{CMS}/a", {**config, "data": {"k": "2"}}, content_type=apply, fieldManager="two")
    assert clash.status == 409
    assert clash.body["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "one"',
                                                "field": ".data.k"}]


# --- WatchList ------------------------------------------------------------------------------------------------------

def test_watchlist_ends_its_initial_events_with_the_annotated_bookmark(kube: Kube) -> None:
    for name in ("a", "b"):
        kube.post(CMS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    listed_rv = int(kube.get(CMS).body["metadata"]["resourceVersion"])
    events = kube.watch(CMS, timeout=10, sendInitialEvents="true", resourceVersionMatch="NotOlderThan",
                        allowWatchBookmarks="true", timeoutSeconds=2)
    first = [next(events) for _ in range(3)]
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in first[:2]] == [("ADDED", "a"), ("ADDED", "b")]
    bookmark = first[2]
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["kind"] == "ConfigMap" and bookmark["object"]["apiVersion"] == "v1"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= listed_rv
    events.close()
    # no initial events to send: the bookmark comes at once
    empty = kube.watch("/api/v1/namespaces/kube-public/configmaps", timeout=10, sendInitialEvents="true",
                       resourceVersionMatch="NotOlderThan", allowWatchBookmarks="true",
                       labelSelector="none=here", timeoutSeconds=2)
    assert next(empty)["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    empty.close()


def test_the_invalid_watchlist_combinations_are_422(kube: Kube) -> None:
    def message(**query: Any) -> tuple[int, str]:
        reply = kube.get(CMS, **query)
        return reply.status, reply.body["message"]

    assert message(watch="true", sendInitialEvents="true") == (
        422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires '
             'setting resourceVersionMatch to NotOlderThan')
    assert message(watch="true", resourceVersion="1", resourceVersionMatch="NotOlderThan") == (
        422, 'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is '
             'forbidden for watch unless sendInitialEvents is provided')
    assert message(sendInitialEvents="true") == (
        422, 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden '
             'for list')


# --- 405, 404 -------------------------------------------------------------------------------------------------------

def test_namespaces_have_no_collection_delete(apiserver: APIServer, kube: Kube) -> None:
    kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "keep", "labels": {"x": "y"}}})
    status, _, body = raw(apiserver, "DELETE", "/api/v1/namespaces?labelSelector=x%3Dy")
    assert (status, body) == (405, b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                                   b'"message":"the server does not allow this method on the requested resource",'
                                   b'"reason":"MethodNotAllowed","details":{},"code":405}\n')
    assert kube.get("/api/v1/namespaces/keep").status == 200


def test_unserved_paths_are_404_page_not_found(apiserver: APIServer) -> None:
    for path in ("/apis/nothing.example.com/v1/things", "/apis/nothing.example.com", "/api/v2", "/nowhere"):
        status, headers, body = raw(apiserver, "GET", path)
        assert (status, headers["content-type"], body) == (404, ["text/plain; charset=utf-8"],
                                                           b"404 page not found\n"), path
        assert headers["x-content-type-options"] == ["nosniff"]
    # inside a served group-version it is go-restful's 404, a Status
    status, _, body = raw(apiserver, "GET", "/api/v1/things")
    assert (status, body) == (404, b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                                   b'"message":"the server could not find the requested resource",'
                                   b'"reason":"NotFound","details":{},"code":404}\n')


def test_a_bad_continue_token_is_kubes_400(kube: Kube) -> None:
    reply = kube.get(CMS, limit=1, **{"continue": "not*base64"})
    assert (reply.status, reply.body["message"]) == (
        400, "invalid continue token: continue key is not valid: illegal base64 data at input byte 3")
    token = base64.urlsafe_b64encode(json.dumps({"v": "meta.k8s.io/v2", "rv": 1, "start": "x"}).encode()).decode()
    assert kube.get(CMS, limit=1, **{"continue": token}).body["message"] == (
        "invalid continue token: continue key is not valid: server does not recognize this encoded version "
        "meta.k8s.io/v2")
    token = base64.urlsafe_b64encode(json.dumps({"v": "meta.k8s.io/v1", "rv": 0, "start": "x"}).encode()).decode()
    assert kube.get(CMS, limit=1, **{"continue": token}).body["message"] == (
        "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version "
        "meta.k8s.io/v1)")


@pytest.mark.parametrize(("state", "last", "message"), [
    ({"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown"}}, None, "is terminated"),
    ({"waiting": {"reason": "ContainerCreating"}}, {"terminated": {"exitCode": 1}}, "is terminated"),
    ({"waiting": {"reason": "ContainerCreating"}}, None, "is waiting to start: ContainerCreating"),
])
def test_the_log_of_a_container_that_never_ran(tmp_path: Path, state: dict, last: dict | None,
                                               message: str) -> None:
    """The kubelet's ``validateContainerLogStatus``: a container terminated (now, or in its last state) with no
    instance to read "is terminated"; one still to start "is waiting to start: <reason>"."""
    store = LogStore(tmp_path)
    status: dict[str, Any] = {"name": "main", "state": state}
    if last is not None:
        status["lastState"] = last
    pod = {"metadata": {"name": "p", "uid": "u-1"}, "spec": {"containers": [{"name": "main"}]},
           "status": {"containerStatuses": [status]}}
    with pytest.raises(StatusError) as refused:
        store.read(pod, "main", LogOptions())
    assert (refused.value.code, refused.value.message) == (400, f'container "main" in pod "p" {message}')


# --- OpenAPI v3 -----------------------------------------------------------------------------------------------------

def test_openapi_v3_caching_and_redirect(apiserver: APIServer) -> None:
    _, _, index = raw(apiserver, "GET", "/openapi/v3")
    url = json.loads(index)["paths"]["apis/apps/v1"]["serverRelativeURL"]
    status, headers, body = raw(apiserver, "GET", url)
    assert status == 200 and headers["content-type"] == ["application/json"]
    assert headers["cache-control"] == ["public, immutable"]   # one, replacing the server's default
    assert headers["vary"] == ["Accept"] and len(headers["expires"]) == 1
    assert headers["etag"] == [f'"{url.rsplit("=", 1)[1]}"']
    assert not body.endswith(b"\n")
    status, headers, moved = raw(apiserver, "GET", "/openapi/v3/apis/apps/v1?hash=0123", follow=False)
    assert (status, headers["location"]) == (301, [url])
    assert moved == f'<a href="{url}">Moved Permanently</a>.\n\n'.encode()
    status, headers, _ = raw(apiserver, "GET", "/openapi/v3/apis/apps/v1")
    assert status == 200 and headers["cache-control"] == ["no-cache, private"] and "expires" not in headers
    status, _, _ = raw(apiserver, "GET", url, headers={"Accept": "text/html"})
    assert status == 406
    status, _, _ = raw(apiserver, "GET", url, headers={"If-None-Match": f'"{url.rsplit("=", 1)[1]}"'})
    assert status == 304


PROTOBUF_V3 = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"


def _fields(data: bytes) -> dict[int, list]:
    out: dict[int, list] = {}
    for number, _wire, value in kubeproto.iter_fields(data):
        out.setdefault(number, []).append(value)
    return out


def _named(entries: list[bytes]) -> dict[str, bytes]:
    """gnostic's Named* messages (name 1, value 2) as a dict."""
    return {_fields(e)[1][0].decode(): _fields(e).get(2, [b""])[0] for e in entries}


def test_openapi_v3_as_gnostic_protobuf(apiserver: APIServer) -> None:
    """kube-openapi's handler3 answers the protobuf Accept with gnostic's ``openapi.v3.Document`` (same Etag)."""
    _, _, index = raw(apiserver, "GET", "/openapi/v3")
    url = json.loads(index)["paths"]["apis/apps/v1"]["serverRelativeURL"]
    _, json_headers, body = raw(apiserver, "GET", url)
    status, headers, data = raw(apiserver, "GET", url, headers={"Accept": PROTOBUF_V3})
    assert (status, headers["content-type"], headers["etag"]) == (200, [PROTOBUF_V3], json_headers["etag"])
    assert headers["cache-control"] == ["public, immutable"] and headers["vary"] == ["Accept"]
    doc = json.loads(body)
    document = _fields(data)
    assert document[1] == [b"3.0.0"]
    info = _fields(document[2][0])
    assert (info[1], info[6]) == ([doc["info"]["title"].encode()], [doc["info"]["version"].encode()])
    paths = _named(_fields(document[4][0])[1])
    assert list(paths) == list(doc["paths"])
    # a list operation: its operationId, and its 200 response's schema a Reference to the list kind
    listing = _fields(_fields(paths["/apis/apps/v1/namespaces/{namespace}/deployments"])[4][0])
    assert listing[5] == [b"listAppsV1NamespacedDeployment"]
    responses = _named(_fields(listing[8][0])[2])
    media = _named(_fields(_fields(_fields(responses["200"])[1][0])[3][0])[1])
    reference = _fields(_fields(_fields(media["application/json"])[1][0])[2][0])
    assert reference[1] == [b"#/components/schemas/io.k8s.api.apps.v1.DeploymentList"]
    # a schema: its type, description and properties
    schemas = _named(_fields(_fields(document[5][0])[1][0])[1])
    assert list(schemas) == list(doc["components"]["schemas"])
    deployment = _fields(_fields(schemas["io.k8s.api.apps.v1.Deployment"])[1][0])
    assert deployment[25] == [b"object"]
    assert deployment[34] == [doc["components"]["schemas"]["io.k8s.api.apps.v1.Deployment"]["description"].encode()]
    assert set(_named(_fields(deployment[31][0])[1])) == {"apiVersion", "kind", "metadata", "spec", "status"}
    # the first clause of the Accept that either encoding meets decides (goautoneg order), a wildcard is JSON
    assert raw(apiserver, "GET", url, headers={"Accept": f"{PROTOBUF_V3}, application/json"})[1][
        "content-type"] == [PROTOBUF_V3]
    assert raw(apiserver, "GET", url, headers={"Accept": "*/*"})[1]["content-type"] == ["application/json"]


def test_expires_is_go_rfc1123_a_year_on() -> None:
    assert expires(datetime.datetime(2026, 12, 1, 23, 5, 9, tzinfo=datetime.UTC)) == "Wed, 01 Dec 2027 23:05:09 UTC"
    assert expires(datetime.datetime(2028, 2, 29, 0, 0, 0, tzinfo=datetime.UTC)) == "Thu, 01 Mar 2029 00:00:00 UTC"


def test_openapi_v3_has_the_scale_paths_and_no_namespace_collection_delete(apiserver: APIServer) -> None:
    """kube's installer publishes what it routes: ``…/{name}/scale`` with an autoscaling/v1 Scale, and no DELETE on
    the namespaces collection."""
    _, _, apps = raw(apiserver, "GET", "/openapi/v3/apis/apps/v1")
    doc = json.loads(apps)
    scale = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert set(scale) == {"get", "put", "patch", "parameters"}
    assert scale["get"]["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"}
    assert "io.k8s.api.autoscaling.v1.Scale" in doc["components"]["schemas"]
    assert not any(p.startswith("/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}/scale") for p in doc["paths"])
    _, _, core = raw(apiserver, "GET", "/openapi/v3/api/v1")
    namespaces = json.loads(core)["paths"]["/api/v1/namespaces"]
    assert "delete" not in namespaces and "get" in namespaces
