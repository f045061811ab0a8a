"""Hostile input to the embedded API server (issue 16, item 4): each is refused quickly with a JSON ``Status``,
nothing is stored, and the server keeps serving.

YAML alias bombs and deep nesting, HTTP framing it cannot trust (conflicting lengths, malformed request lines,
oversized URLs and headers), bad strategic-merge directives, and huge values echoed in error messages.
"""

from __future__ import annotations

import base64
import json
import random
import socket
import time

import pytest

from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from mxjob_controller.local.apiserver.validation.strict_json import MAX_DEPTH
from tests.local.apiserver.test_bad_input import GADGETS, _exchange, _gadget_crd, _post_yaml
from tests.support import configmap

# Each test starts the embedded API server or a process of its own (no server fixture).
pytestmark = pytest.mark.integration

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
STRATEGIC = "application/strategic-merge-patch+json"


def _answer(raw: bytes) -> tuple[int, dict[str, str], dict]:
    """Status code, headers (lower-case names) and JSON body of one raw HTTP/1.1 answer."""
    head, _, rest = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, json.loads(rest[:int(headers["content-length"])])


def _assert_status(body: dict, code: int, reason: str) -> None:
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["code"] == code and body["reason"] == reason and body["message"]


def _nested(levels: int) -> object:
    """A value whose arrays and objects nest ``levels`` deep: [{"k": [{"k": ... "x"}]}]."""
    value: object = "x"
    for i in range(levels):
        value = {"k": value} if i % 2 else [value]
    return value


def _gadget(name: str, spec: object) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


# --- YAML: aliases and depth --------------------------------------------------------------------------------

def _billion_laughs() -> str:
    """Nine levels of nine aliases each: 9^9 (387 million) strings once expanded, from under 500 bytes."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_at_once_without_being_expanded(apiserver, kube):
    text = _billion_laughs()
    assert len(text) < 500
    request = (f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\nConnection: close\r\n"
               f"Content-Length: {len(text)}\r\n\r\n{text}").encode()
    # Unfixed, the expansion took 64 s of CPU (and the 10 s socket timeout ended the wait). The server runs in this
    # process, so its CPU for the request is this process's: robust to a busy machine, where the wall is not.
    started = time.process_time()
    code, _, body = _answer(_exchange(apiserver, request))
    assert time.process_time() - started < 1.0
    assert code == 400
    _assert_status(body, 400, "BadRequest")
    assert "yaml: document contains excessive aliasing" in body["message"]
    assert kube.get(CMS).body["items"] == []


def test_a_small_yaml_alias_bomb_is_refused_as_go_yaml_refuses_it(kube):
    """Five levels: 59,049 strings, which the server would have stored; go-yaml's ratio rule refuses them."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb}", 'x: &a ["lol","lol","lol","lol","lol",'
             '"lol","lol","lol","lol"]']
    for prev, name in zip("abcd", "bcde", strict=True):
        lines.append(f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]")
    reply = _post_yaml(kube, CMS, "\n".join(lines) + "\n")
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    assert "excessive aliasing" in reply.body["message"]


def test_a_yaml_anchor_used_inside_itself_is_400(kube):
    reply = _post_yaml(kube, CMS, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: loop}\nx: &a [*a]\n")
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    assert "yaml: anchor 'a' value contains itself" in reply.body["message"]
    assert kube.get(CMS).body["items"] == []


def test_yaml_with_ordinary_anchors_and_merge_keys_still_works(kube):
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: anchored\n  labels: &labels {app: web, tier: db}\n"
            "  annotations:\n    <<: *labels\n    note: merged\n"
            "data:\n  a: &value hello\n  b: *value\n")
    reply = _post_yaml(kube, CMS, text)
    assert reply.status == 201, reply.body
    assert reply.body["metadata"]["labels"] == {"app": "web", "tier": "db"}
    assert reply.body["metadata"]["annotations"] == {"app": "web", "tier": "db", "note": "merged"}
    assert reply.body["data"] == {"a": "hello", "b": "hello"}


def test_yaml_nesting_is_limited_as_json_is_including_through_aliases(kube):
    assert kube.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _gadget_crd()).status == 201
    deepest = _gadget("deepest", {"v": _nested(MAX_DEPTH - 2)})  # the object and spec are two more levels
    reply = _post_yaml(kube, GADGETS, json.dumps(deepest))  # JSON is YAML: flow style
    assert reply.status == 201, reply.body
    reply = _post_yaml(kube, GADGETS, json.dumps(_gadget("deeper", {"v": _nested(MAX_DEPTH - 1)})))
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    assert f"exceeded max depth of {MAX_DEPTH}" in reply.body["message"]
    # each alias adds its anchor's depth: a chain of them nests past the limit in a few lines
    chain = ["apiVersion: example.com/v1", "kind: Gadget", "metadata: {name: chained}", "spec:",
             f"  l0: &l0 {json.dumps(_nested(MAX_DEPTH - 10))}"]
    chain += [f"  l{i}: &l{i} [*l{i - 1}]" for i in range(1, 20)]
    reply = _post_yaml(kube, GADGETS, "\n".join(chain) + "\n")
    assert reply.status == 400 and f"exceeded max depth of {MAX_DEPTH}" in reply.body["message"]
    assert [i["metadata"]["name"] for i in kube.get(GADGETS).body["items"]] == ["deepest"]


# --- JSON: depth ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("levels", [MAX_DEPTH, 1_000, 100_000])
def test_json_nested_past_the_limit_is_400_not_500(kube, levels):
    body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":' + b"[" * levels \
        + b"]" * levels + b"}"
    reply = kube.request("POST", CMS, raw_body=body)
    assert reply.status == 400, reply.body
    assert reply.body["reason"] == "BadRequest"
    assert f"invalid character '[' exceeded max depth of {MAX_DEPTH}" in reply.body["message"]
    assert kube.get(CMS).body["items"] == []


def test_an_object_at_the_depth_limit_goes_through_every_path(kube):
    """What the limit lets in, nothing downstream recurses too deep on: create, read, list, tables, every
    patch type, update, and error messages that print the value."""
    assert kube.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _gadget_crd()).status == 201
    deep = _nested(MAX_DEPTH - 2)  # spec and the object itself are two more levels
    assert kube.post(GADGETS, _gadget("g", {"v": deep}), fieldValidation="Strict").status == 201
    assert kube.get(f"{GADGETS}/g").body["spec"]["v"] == deep
    assert kube.get(f"{GADGETS}/g", pretty="true").status == 200
    assert kube.get(GADGETS).status == 200
    table = kube.request("GET", GADGETS, query={"includeObject": "Object"},
                         accept="application/json;as=Table;v=v1;g=meta.k8s.io")
    assert table.status == 200
    assert kube.patch(f"{GADGETS}/g", {"spec": {"w": deep}}).status == 200
    ops = [{"op": "add", "path": "/spec/z", "value": deep}, {"op": "test", "path": "/spec/z", "value": deep}]
    assert kube.patch(f"{GADGETS}/g", ops, content_type="application/json-patch+json").status == 200
    current = kube.get(f"{GADGETS}/g").body
    current["spec"]["u"] = deep
    assert kube.put(f"{GADGETS}/g", current).status == 200
    # built-in kinds: the deep value is invalid there, and the messages that print it are 4xx
    assert kube.post(CMS, configmap("c")).status == 201
    assert kube.patch(f"{CMS}/c", {"metadata": {"labels": _nested(MAX_DEPTH - 2)}},
                      content_type=STRATEGIC).status == 422
    reply = kube.patch(f"{CMS}/c", {"metadata": {"$patch": "bogus", "x": _nested(MAX_DEPTH - 2)}},
                       content_type=STRATEGIC)
    assert reply.status == 400 and reply.body["message"].startswith("unknown patch type: bogus in map: ")
    reply = kube.post(CMS, {"metadata": {"name": "d", "annotations": {"a": _nested(MAX_DEPTH - 3)}}})
    assert reply.status == 400 and "cannot unmarshal array into Go struct field ObjectMeta.metadata.annotations" \
        in reply.body["message"], "kube's decode error for a built-in kind"


def test_other_json_bodies_are_limited_too(kube):
    assert kube.post(CMS, configmap("c")).status == 201
    too_deep = _nested(MAX_DEPTH + 1)
    reply = kube.patch(f"{CMS}/c", {"data": too_deep}, content_type=STRATEGIC)
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    reply = kube.request("DELETE", f"{CMS}/c", body={"kind": "DeleteOptions", "x": too_deep})
    assert reply.status == 400 and "exceeded max depth" in reply.body["message"]
    assert kube.post(PODS, {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
                     ).status == 201
    reply = kube.request("POST", f"{PODS}/p/binding", body={"kind": "Binding", "x": too_deep})
    assert reply.status == 400 and "exceeded max depth" in reply.body["message"]
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": 1, "start": too_deep}).encode()
    reply = kube.get(CMS, limit=1, **{"continue": base64.urlsafe_b64encode(token).decode()})
    assert reply.status == 400 and "continue key is not valid" in reply.body["message"]
    assert kube.get(f"{CMS}/c").status == 200


# --- HTTP: every refusal is a Status -------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "code", "reason"), [
    pytest.param(f"FOO {CMS} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(), 405, "MethodNotAllowed",
                 id="unknown method"),
    pytest.param(b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "RequestURITooLong",
                 id="URL too long"),
    pytest.param(b"GET /api HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", 431, "RequestHeaderFieldsTooLarge",
                 id="header line too long"),
    pytest.param(b"GET /api HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(150)) + b"\r\n", 431,
                 "RequestHeaderFieldsTooLarge", id="too many headers"),
    pytest.param(b"GET /api HTTP/1.1\r\n" + b"".join(b"X-%d: %s\r\n" % (i, b"a" * 60_000) for i in range(20))
                 + b"\r\n", 431, "RequestHeaderFieldsTooLarge", id="over 1 MiB of headers"),
    pytest.param(b"GET\r\n\r\n", 400, "BadRequest", id="method alone"),
    pytest.param(b"GET /api\r\n\r\n", 400, "BadRequest", id="HTTP/0.9"),
    pytest.param(b"GET /api FOO/1.1\r\n\r\n", 400, "BadRequest", id="not HTTP"),
    pytest.param(b"GET /api HTTP/2.0\r\n\r\n", 505, "HTTPVersionNotSupported", id="HTTP/2 as text"),
    pytest.param(b"G(T /api HTTP/1.1\r\n\r\n", 400, "BadRequest", id="method not a token"),
    pytest.param(b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", 400, "BadRequest", id="TLS hello, no line end"),
    pytest.param(bytes(range(256)) * 4, 400, "BadRequest", id="binary"),
])
def test_refusals_are_json_statuses(apiserver, kube, raw, code, reason):
    answer = _exchange(apiserver, raw)  # read until the server closes: no answer hangs
    got, headers, body = _answer(answer)
    assert got == code, answer[:300]
    assert headers["content-type"] == "application/json"
    _assert_status(body, code, reason)
    assert kube.post(CMS, configmap("after")).status == 201  # the server is fine afterwards


def test_random_bytes_always_get_a_status(apiserver, kube):
    """Seeded garbage, each sent on its own connection then half-closed: every one is answered with a
    Status (none hangs, none kills the server)."""
    rng = random.Random(16)
    for _ in range(200):
        garbage = rng.randbytes(rng.randint(1, 2048))
        with socket.create_connection((apiserver.host, apiserver.port), timeout=10) as s:
            s.sendall(garbage)
            s.shutdown(socket.SHUT_WR)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        code, _, body = _answer(answer)
        assert code == 400, (garbage[:40], answer[:200])
        _assert_status(body, 400, "BadRequest")
    assert kube.get("/version").status == 200


def test_a_refusal_survives_the_unread_rest_of_the_request(apiserver):
    """The server refuses a 1.1 MB URL after reading 64 KiB of it. Closing then, with the rest unread, makes
    the kernel reset the connection, and the client's next call fails (ENOTCONN, ECONNRESET) instead of
    ending cleanly; so the server drains the rest first, as Go does (closeWriteAndWait)."""
    for _ in range(5):
        with socket.create_connection((apiserver.host, apiserver.port), timeout=10) as s:
            s.sendall(b"GET /" + b"a" * 1_100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = b""
            while not answer.endswith(b"}") and (chunk := s.recv(65536)):
                answer += chunk
            s.shutdown(socket.SHUT_WR)
            assert s.recv(65536) == b""
        assert _answer(answer)[0] == 414


def test_an_unknown_method_on_a_resource_keeps_the_connection(apiserver):
    with socket.create_connection((apiserver.host, apiserver.port), timeout=10) as s:
        s.sendall(f"FOO {CMS} HTTP/1.1\r\nHost: x\r\n\r\nGET {CMS} HTTP/1.1\r\nHost: x\r\n"
                  "Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    first, second = data.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"405 ") and b'"message":"the server does not allow this method on the requested ' \
        b'resource"' in first
    assert second.startswith(b"200 ")


def test_a_request_line_that_never_ends_is_dropped_after_the_header_timeout():
    with APIServer(ServerOptions(header_timeout=0.3)) as api, \
            socket.create_connection((api.host, api.port), timeout=10) as s:
        s.sendall(b"GET /api/v1/namespaces/default/configmaps")  # no line end, ever
        assert s.recv(1024) == b""  # closed (as Go closes on ReadHeaderTimeout), well before 10 s


# --- HTTP: framing that could smuggle a second request -------------------------------------------------------

def _post_configmap(apiserver, headers: str, body: bytes) -> tuple[int, dict]:
    raw = f"POST {CMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n{headers}\r\n"
    code, _, reply = _answer(_exchange(apiserver, raw.encode() + body))
    return code, reply


SMUGGLED = json.dumps(configmap("smuggled")).encode()


@pytest.mark.parametrize(("headers", "message"), [
    (f"Content-Length: 2\r\nContent-Length: {len(SMUGGLED)}\r\n",
     f'http: message cannot contain multiple Content-Length headers; got ["2" "{len(SMUGGLED)}"]'),
    (f"Content-Length: {len(SMUGGLED)}\r\nContent-Length: 2\r\n",
     "http: message cannot contain multiple Content-Length headers"),
    (f"Content-Length:\r\nContent-Length: {len(SMUGGLED)}\r\n",
     "http: message cannot contain multiple Content-Length headers"),
    (f"Content-Length: {len(SMUGGLED)}\r\nTransfer-Encoding: chunked\r\n",
     "http: message cannot contain both Transfer-Encoding and Content-Length"),
    ("Transfer-Encoding: gzip, chunked\r\n", 'unsupported transfer encoding: ["gzip, chunked"]'),
    ("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "unsupported transfer encoding"),
])
def test_ambiguous_framing_is_400(apiserver, kube, headers, message):
    """Go refuses lengths that disagree (RFC 9112 6.3) and transfer codings other than chunked; a length with
    chunked is refused too (Go lets chunked win), as RFC 9112 allows a server to."""
    code, reply = _post_configmap(apiserver, headers, SMUGGLED)
    assert code == 400
    _assert_status(reply, 400, "BadRequest")
    assert reply["message"] == message or reply["message"].startswith(message)
    assert kube.get(CMS).body["items"] == []


def test_identical_content_lengths_are_one_as_go_reads_them(apiserver, kube):
    code, reply = _post_configmap(apiserver, f"Content-Length: {len(SMUGGLED)}\r\nContent-Length:  "
                                             f"{len(SMUGGLED)} \r\n", SMUGGLED)
    assert code == 201, reply
    assert [i["metadata"]["name"] for i in kube.get(CMS).body["items"]] == ["smuggled"]


def test_a_chunked_body_over_the_limit_is_413(apiserver, kube):
    code, reply = _post_configmap(apiserver, "Transfer-Encoding: chunked\r\n", b"400000\r\n{")  # one 4 MiB chunk
    assert code == 413
    _assert_status(reply, 413, "RequestEntityTooLarge")
    assert reply["message"] == "Request entity too large: limit is 3145728"


# --- strategic merge patch: bad directives are the client's fault --------------------------------------------

@pytest.mark.parametrize(("patch", "message"), [
    ({"$patch": "bogus"}, "unknown patch type: bogus in map: map[$patch:bogus]"),
    ({"metadata": {"$patch": "bogus"}}, "unknown patch type: bogus in map: map[$patch:bogus]"),
    ({"metadata": {"$patch": 5}}, "unknown patch type: %!s(int64=5) in map: map[$patch:5]"),
    ({"spec": {"containers": [{"name": "c", "$patch": "bogus"}]}}, "unknown patch type: bogus in map"),
    ({"spec": {"$setElementOrder/containers": 5}}, "expected a []interface {}, but received a int64"),
    ({"metadata": {"$setElementOrder/finalizers": "x"}}, "expected a []interface {}, but received a string"),
    ({"spec": {"$setElementOrder/containers": [{"name": "z"}], "containers": [{"name": "c"}]}},
     "doesn't match $setElementOrder list"),
    ({"$retainKeys": 5}, "invalid patch format of retainKeys"),
    ({"metadata": {"$retainKeys": "x"}}, "invalid patch format of retainKeys"),
    ({"$deleteFromPrimitiveListX/finalizers": ["a"]}, "invalid patch format of primitive list"),
    ({"spec": {"containers": [{"$patch": "merge"}]}}, "merging lists cannot yet be specified in the patch"),
    ({"spec": {"containers": [{"image": "x"}]}}, "map: map[image:x] does not contain declared merge key: name"),
])
def test_bad_strategic_directives_are_400_with_a_reason(kube, patch, message):
    """kube-apiserver answers the library's typed errors with 400 and the rest (plain Go errors) with 500 and
    an empty reason; all are the patch's fault, so all are 400 here, with apimachinery's message."""
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    created = kube.post(PODS, pod).body
    reply = kube.patch(f"{PODS}/p", patch, content_type=STRATEGIC)
    assert reply.status == 400, reply.body
    _assert_status(reply.body, 400, "BadRequest")
    assert message in reply.body["message"]
    assert kube.get(f"{PODS}/p").body == created


def test_a_delete_from_primitive_list_that_is_not_a_list_is_ignored_as_kube_does(kube):
    """apimachinery skips a ``$deleteFromPrimitiveList`` whose value's type is not the list's (mergeMap)."""
    created = kube.post(CMS, {**configmap("c"), "metadata": {"name": "c", "finalizers": ["example.com/f"]}}).body
    reply = kube.patch(f"{CMS}/c", {"metadata": {"$deleteFromPrimitiveList/finalizers": "example.com/f"}},
                       content_type=STRATEGIC)
    assert reply.status == 200, reply.body
    assert reply.body["metadata"]["finalizers"] == created["metadata"]["finalizers"]


# --- long values in error messages ---------------------------------------------------------------------------

def test_a_huge_invalid_name_gets_a_small_422_that_names_the_field(kube):
    name = "A" * 2_900_000
    body = json.dumps(configmap(name)).encode()
    reply = kube.request("POST", CMS, raw_body=body)
    assert reply.status == 422
    assert len(json.dumps(reply.body)) < 8 * 1024  # unfixed: 11.6 MB, the name four times over
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"].startswith('ConfigMap "AAAA')
    assert "(truncated, 2900000 characters)" in reply.body["message"]
    causes = reply.body["details"]["causes"]
    assert {c["field"] for c in causes} == {"metadata.name"}
    assert any(c["message"].endswith("must be no more than 253 characters") for c in causes)


@pytest.mark.parametrize(("meta", "field"), [
    ({"name": "c", "labels": {"k": "v" * 2_000_000}}, "metadata.labels"),
    ({"name": "c", "finalizers": ["f" * 2_000_000]}, "metadata.finalizers[0]"),
    ({"name": "c", "labels": {"k" * 2_000_000: "v"}}, "metadata.labels"),
])
def test_huge_invalid_values_are_shortened(kube, meta, field):
    reply = kube.post(CMS, {"metadata": meta, "data": {}})
    assert reply.status == 422
    assert len(json.dumps(reply.body)) < 8 * 1024
    assert field in {c["field"] for c in reply.body["details"]["causes"]}
    assert "...(truncated, 2000000 characters)" in reply.body["message"]


def test_a_huge_pod_field_is_shortened_in_its_message(kube):
    pod = {"metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "i", "imagePullPolicy": "X" * 2_000_000}]}}
    reply = kube.post(PODS, pod)
    assert reply.status == 422
    assert len(json.dumps(reply.body)) < 8 * 1024
    assert reply.body["details"]["causes"][0]["field"] == "spec.containers[0].imagePullPolicy"
    assert 'supported values: "Always", "IfNotPresent", "Never"' in reply.body["message"]
