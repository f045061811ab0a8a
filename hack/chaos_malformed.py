"""Hostile and odd requests for the chaos run (hack/chaos.py): a seeded generator of raw HTTP exchanges against
the API server, and the checks on what comes back.

Each probe is sent on a fresh TCP connection as raw bytes (so request lines, headers and framing can be wrong on
purpose), then the client half-closes the connection: the server sees the end of the request and must answer.
What counts against the server (the issue's "no crash, no hang, every error a Status"):

- crash: the server stops answering (its ``/readyz`` fails 3 times in a row after a probe);
- hang: no complete answer within the probe's timeout;
- no reply: the connection closed without a status line;
- not a Status: an answer with code >= 400 whose body is not a JSON ``{"kind": "Status"}``;
- server error: an answer with code >= 500 but 505 (no fault rule matches these probes' User-Agent);
- smuggling accepted: a request with two different ``Content-Length`` headers answered 2xx;
- oversized error: the largest error answer, against a bound (kube truncates long values in messages).
"""

from __future__ import annotations

import json
import random
import socket
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MALFORMED_NS = "chaos-malformed"
ODD_NS = "chaos-odd"
AGENT = "chaos-malformed/1"
HANG_TIMEOUT = 10.0               # seconds a probe may wait for its whole answer
MAX_ERROR_BYTES = 1024 * 1024     # an error answer larger than this echoes the request back (kube truncates)
CMS = f"/api/v1/namespaces/{MALFORMED_NS}/configmaps"
PODS = f"/api/v1/namespaces/{MALFORMED_NS}/pods"
ODD_JOBS = f"/apis/kubeflow.org/v1/namespaces/{ODD_NS}/mxjobs"


@dataclass(frozen=True, slots=True)
class Probe:
    kind: str
    data: bytes
    timeout: float = HANG_TIMEOUT
    expect_refusal: bool = False   # two Content-Length headers: a 2xx answer is smuggling accepted


@dataclass(slots=True)
class Answer:
    code: int | None               # None: no status line
    body: bytes
    size: int
    hung: bool
    error: str = ""


@dataclass
class ProbeStats:
    """What the probes found; ``examples`` keeps the first few findings of each kind for the report."""

    sent: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    crashes: int = 0
    hangs: int = 0
    no_reply: int = 0
    not_status: int = 0
    server_errors: int = 0
    smuggling_accepted: int = 0
    largest_error: int = 0
    examples: dict[str, list[str]] = field(default_factory=dict)

    def note(self, what: str, probe: Probe, detail: str) -> None:
        found = self.examples.setdefault(what, [])
        if len(found) < 5:
            found.append(f"{probe.kind}: {detail}"[:300])


def request(method: str, path: str, host: str, body: bytes = b"", content_type: str | None = None,
            extra: list[tuple[str, str]] | None = None) -> bytes:
    """A well-framed HTTP/1.1 request (the hostile part is in the arguments)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", f"User-Agent: {AGENT}", "Connection: close"]
    if content_type:
        lines.append(f"Content-Type: {content_type}")
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    lines += [f"{k}: {v}" for k, v in extra or []]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape") + body


def _json(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def configmap(name: str, data: Any = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or {"k": "v"}}


# --- the generators: each returns one probe ---------------------------------------------------------------

def random_bytes(rng: random.Random, host: str) -> Probe:
    n = rng.choice([1, 7, 64, 512, 4096])
    data = bytes(rng.getrandbits(8) for _ in range(n))
    if rng.random() < 0.5:
        data += b"\r\n\r\n"
    return Probe("random-bytes", data)


def bad_request_line(rng: random.Random, host: str) -> Probe:
    lines = [b"GET\r\n", b"GET /api\r\n", b"GET /api HTTP/1.1 extra\r\n", b"GET /api HTTP/9.9\r\n",
             b"GET /api HTTP/1.x\r\n", b"\x00\x01\x02 / HTTP/1.1\r\n", b" GET /api HTTP/1.1\r\n",
             b"GET  /api  HTTP/1.1\r\n", b"GET api HTTP/1.1\r\n", b"GET /api HTTP/1.1\n",
             b"\r\n\r\nGET /api HTTP/1.1\r\n", b"GET /api%zz HTTP/1.1\r\n", b"GET /\xff\xfe HTTP/1.1\r\n",
             b"GET http://evil.example/api HTTP/1.1\r\n", b"GET * HTTP/1.1\r\n", b"PRI * HTTP/2.0\r\n\r\nSM\r\n"]
    headers = [b"", b"Host\r\n", b"Host: a\r\nBad Header: x\r\n", b": empty-name\r\n", b"Host: a\r\n x-folded\r\n",
               b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", b"Content-Length: -1\r\n",
               b"Content-Length: 1e3\r\n", b"Transfer-Encoding: gzip, chunked\r\n"]
    return Probe("bad-request-line", rng.choice(lines) + rng.choice(headers) + b"\r\n")


def unknown_method(rng: random.Random, host: str) -> Probe:
    method = rng.choice(["BREW", "PROPFIND", "TRACE", "CONNECT", "FOO", "get", "G\x7fET", "MKCOL", "PURGE",
                         "X" * rng.choice([10, 1000])])
    path = rng.choice(["/api/v1/namespaces", CMS, f"{CMS}/target", "/apis", "/healthz", "/nope"])
    return Probe("unknown-method", request(method, path, host))


def huge_header(rng: random.Random, host: str) -> Probe:
    if rng.random() < 0.5:
        extra = [("X-Big", "a" * rng.choice([70_000, 300_000, 1_100_000]))]
    else:
        extra = [(f"X-H{i}", "v") for i in range(rng.choice([101, 500, 5000]))]
    return Probe("huge-header", request("GET", "/api/v1/namespaces", host, extra=extra))


def huge_url(rng: random.Random, host: str) -> Probe:
    n = rng.choice([9_000, 70_000, 300_000, 1_100_000])
    path = rng.choice([f"{CMS}/" + "a" * n, "/api/v1/namespaces?labelSelector=" + "a%3D" * (n // 4),
                       "/" + "x/" * (n // 2)])
    return Probe("huge-url", request("GET", path, host))


def deep_json(rng: random.Random, host: str) -> Probe:
    depth = rng.choice([100, 1_000, 5_000, 10_001, 100_000])
    if rng.random() < 0.5:
        body = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":' + b"[" * depth + \
            b"]" * depth + b"}"
    else:
        body = b'{"a":' * depth + b"1" + b"}" * depth
    return Probe("deep-json", request("POST", CMS, host, body, "application/json"))


def yaml_bomb(rng: random.Random, host: str, max_nodes: int = 10 ** 8) -> Probe:
    """A billion-laughs document: ``levels`` anchors each aliasing the previous one ``width`` times."""
    width = 10
    levels = rng.choice([4, 5, 6, 7, 8])
    while levels > 1 and width ** levels > max_nodes:
        levels -= 1
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]")
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\n  annotations: {}\ndata:\n  " + \
        "\n  ".join(lines) + "\n"
    return Probe(f"yaml-bomb-1e{levels}", request("POST", CMS, host, doc.encode(), "application/yaml"),
                 timeout=HANG_TIMEOUT * 2)


def bad_patch(rng: random.Random, host: str) -> Probe:
    strategic = [{"$patch": "bogus"}, {"metadata": {"$patch": "replace2"}}, {"data": {"$patch": 5}},
                 {"$setElementOrder/containers": "x"}, {"spec": {"$setElementOrder/containers": [{"x": 1}]}},
                 {"$retainKeys": 1}, {"spec": {"$retainKeys": ["nope"], "containers": 3}},
                 {"$deleteFromPrimitiveList/finalizers": "str"}, {"spec": {"containers": [{"$patch": "delete"}]}},
                 {"spec": {"containers": [{"name": "main", "$patch": "merge2"}]}}, {"metadata": {"labels": [1]}},
                 {"spec": {"containers": {"$patch": "replace"}}}, [], "text", None]
    json_patches: list[Any] = [[{"op": "explode", "path": "/data"}], [{"op": "add"}],
                               [{"op": "remove", "path": "/x/y"}], {"op": "add"},
                               [{"op": "move", "from": "/data", "path": "/data/k"}],
                               [{"op": "test", "path": "/data/k", "value": "nope"}], [{"op": "copy", "path": 5}],
                               [{"op": "replace", "path": "/metadata/name", "value": "renamed"}], "[", []]
    which = rng.random()
    if which < 0.45:
        path = rng.choice([f"{PODS}/target", f"{CMS}/target"])
        patch, ctype = rng.choice(strategic), "application/strategic-merge-patch+json"
    elif which < 0.8:
        path, patch, ctype = f"{CMS}/target", rng.choice(json_patches), "application/json-patch+json"
    else:
        path = f"{CMS}/target"
        patch = rng.choice([[1, 2], "x", {"metadata": {"name": None}}, {"data": {"k": {"nested": 1}}}])
        ctype = "application/merge-patch+json"
    body = patch.encode() if isinstance(patch, str) else _json(patch)
    return Probe("bad-patch", request("PATCH", path, host, body, ctype))


def hostile_name(rng: random.Random, host: str) -> Probe:
    names = ["..", ".", "%2e%2e", "a%2Fb", "a/../../b", "%00", "n%C3%B1ame", "UPPER", "-lead", "a" * 300,
             "%", "%zz", "a;b", "a%0d%0aSet-Cookie:%20x", "\u00e9t\u00e9", "a" * 64]
    roll = rng.random()
    if roll < 0.3:
        return Probe("hostile-name-get", request("GET", f"{CMS}/{rng.choice(names)}", host))
    if roll < 0.45:
        return Probe("hostile-name-delete", request("DELETE", f"{CMS}/{rng.choice(names)}", host))
    if roll < 0.6:
        ns = rng.choice(names)
        return Probe("hostile-namespace", request("GET", f"/api/v1/namespaces/{ns}/configmaps", host))
    raw = rng.choice(["..", ".", "a/b", "\x00", "\u00f1ame", "A", "a" * 254, "a" * rng.choice([10_000, 2_900_000]),
                      "a\nb", "", " ", "a..b", "\ud800", "x" * 63 + ".", "default"])
    body = json.dumps(configmap("x"))  # the name goes in as text, so lone surrogates reach the server as sent
    body = body.replace('"name": "x"', '"name": ' + json.dumps(raw))
    return Probe("hostile-name-create", request("POST", CMS, host, body.encode("utf-8", "surrogatepass"),
                                                "application/json"))


def conflicting_length(rng: random.Random, host: str) -> Probe:
    body = _json(configmap(f"smuggle-{rng.randrange(10 ** 9)}"))
    extra = [("Content-Length", str(len(body) + rng.choice([-10, 5, 100])))]
    return Probe("conflicting-content-length", request("POST", CMS, host, body, "application/json", extra),
                 expect_refusal=True)


def bad_body(rng: random.Random, host: str) -> Probe:
    choices: list[tuple[bytes, str]] = [
        (b'{"metadata": {"name": "x"', "application/json"), (b"\xff\xfe\x00", "application/json"),
        (b"[1,2]", "application/json"), (b"null", "application/json"), (b'"str"', "application/json"),
        (b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"kind-mismatch"}}', "application/json"),
        (b"{}", "application/json"), (b"<xml/>", "application/xml"), (b"a: [", "application/yaml"),
        (b"!!python/object:os.system ['true']", "application/yaml"), (b"{}", "text/plain"),
        (_json(configmap("nan")).replace(b'"v"', b"NaN"), "application/json"),
        (_json(configmap("big-int")).replace(b'"v"', b"1" * 5000), "application/json"),
        (b'{"a":1,"a":2}', "application/json"), (b"\xef\xbb\xbf{}", "application/json"),
    ]
    body, ctype = rng.choice(choices)
    method = rng.choice(["POST", "PUT"])
    path = CMS if method == "POST" else f"{CMS}/target"
    return Probe("bad-body", request(method, path, host, body, ctype))


def bad_framing(rng: random.Random, host: str) -> Probe:
    head = f"POST {CMS} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: {AGENT}\r\nConnection: close\r\n" \
           "Content-Type: application/json\r\n"
    body = _json(configmap(f"framed-{rng.randrange(10 ** 9)}"))
    variants = [
        head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        head + "Transfer-Encoding: chunked\r\n\r\n" + f"{len(body) + 50:x}\r\n" + body.decode() + "\r\n0\r\n\r\n",
        head + "Transfer-Encoding: chunked\r\n\r\n-5\r\nabc\r\n0\r\n\r\n",
        head + f"Content-Length: {len(body) + 1000}\r\n\r\n" + body.decode(),
        head + "Content-Length: 99999999999999999999\r\n\r\n",
        head + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
        head + "Expect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
        "GET /api HTTP/1.0\r\n\r\n",
        f"GET /api/v1/namespaces HTTP/1.1\r\nHost: {host}\r\n\r\nGET /api HTTP/1.1\r\nHost: {host}\r\n"
        "Connection: close\r\n\r\n",
    ]
    return Probe("bad-framing", rng.choice(variants).encode())


def odd_query(rng: random.Random, host: str) -> Probe:
    queries = ["labelSelector=%3D%3D%3D", "labelSelector=a+in+(", "fieldSelector=spec.nope%3Dx", "limit=-1",
               "limit=abc", "resourceVersion=abc", "resourceVersion=99999999999&resourceVersionMatch=Exact",
               "continue=garbage", "watch=true&timeoutSeconds=1&resourceVersion=1", "watch=maybe&timeoutSeconds=1",
               "timeoutSeconds=-5&watch=true", "pretty=2", "dryRun=Nope", "fieldManager=" + "m" * 200,
               "propagationPolicy=Sideways", "gracePeriodSeconds=-10", "allowWatchBookmarks=yes&timeoutSeconds=1"]
    method = rng.choice(["GET", "GET", "DELETE"])
    path = CMS if method == "GET" else f"{CMS}/absent"
    return Probe("odd-query", request(method, f"{path}?{rng.choice(queries)}", host))


def odd_mxjob(rng: random.Random, host: str) -> Probe:
    """Valid but unusual MXJobs (and a few just past the edge, which must be refused with a Status)."""
    n = rng.randrange(10 ** 6)
    container = {"name": "mxnet", "image": "busybox", "command": ["sh", "-c", "exit 0"]}
    worker: dict[str, Any] = {"replicas": 1, "restartPolicy": "Never",
                              "template": {"spec": {"containers": [container], "terminationGracePeriodSeconds": 1}}}
    job: dict[str, Any] = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
                           "metadata": {"name": f"odd-{n}"}, "spec": {"mxReplicaSpecs": {"Worker": worker}}}
    variant = rng.choice(["unicode-annotation", "long-label", "max-name", "too-long-name", "zero-replicas",
                          "lowercase-types", "unicode-env", "many-labels", "empty-specs", "negative-ttl",
                          "unknown-field", "big-annotation"])
    meta = job["metadata"]
    if variant == "unicode-annotation":
        meta["annotations"] = {"chaos/\u00e9": "\u2603 \U0001f600 \u0000",
                               "chaos/rtl": "\u202e\u05e9\u05dc\u05d5\u05dd"}
    elif variant == "long-label":
        meta["labels"] = {"chaos.example/" + "k" * 63: "v" * 63}
    elif variant == "max-name":
        meta["name"] = ("m" * 60)[: 63 - len("-worker-0")] + f"{n % 10}"
    elif variant == "too-long-name":
        meta["name"] = "m" * 64
    elif variant == "zero-replicas":
        worker["replicas"] = 0
    elif variant == "lowercase-types":
        job["spec"]["mxReplicaSpecs"] = {"worker": worker}
    elif variant == "unicode-env":
        container["env"] = [{"name": "GREETING", "value": "\u3053\u3093\u306b\u3061\u306f \u2764"}]
    elif variant == "many-labels":
        meta["labels"] = {f"k{i}": f"v{i}" for i in range(200)}
    elif variant == "empty-specs":
        job["spec"]["mxReplicaSpecs"] = {}
    elif variant == "negative-ttl":
        job["spec"]["runPolicy"] = {"ttlSecondsAfterFinished": -1}
    elif variant == "unknown-field":
        job["spec"]["surprise"] = {"deep": [1, 2, 3]}
    else:
        meta["annotations"] = {"chaos/big": "b" * rng.choice([100_000, 270_000])}
    return Probe(f"odd-mxjob-{variant}", request("POST", ODD_JOBS, host, _json(job), "application/json"))


GENERATORS: list[tuple[float, Callable[[random.Random, str], Probe]]] = [
    (0.08, random_bytes), (0.10, bad_request_line), (0.07, unknown_method), (0.05, huge_header),
    (0.05, huge_url), (0.05, deep_json), (0.10, bad_patch), (0.12, hostile_name), (0.04, conflicting_length),
    (0.10, bad_body), (0.06, bad_framing), (0.10, odd_query), (0.075, odd_mxjob),
]


def generate(seed: int, count: int, host: str, bombs: int, bomb_max_nodes: int) -> list[Probe]:
    """``count`` probes from ``seed`` (the same seed gives the same bytes), ``bombs`` of them YAML alias bombs."""
    rng = random.Random(f"{seed}/malformed")
    weights = [w for w, _ in GENERATORS]
    probes = [rng.choices(GENERATORS, weights)[0][1](rng, host) for _ in range(max(0, count - bombs))]
    for _ in range(min(bombs, count)):
        probes.insert(rng.randrange(len(probes) + 1), yaml_bomb(rng, host, bomb_max_nodes))
    return probes


# --- sending and judging ------------------------------------------------------------------------------

def send(host: str, port: int, probe: Probe) -> Answer:
    """Send ``probe`` on a new connection, half-close, read the whole answer (or until the timeout)."""
    deadline = time.monotonic() + probe.timeout
    chunks: list[bytes] = []
    try:
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                sock.sendall(probe.data)
                sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the server may answer (and close) before reading everything: read what it said
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return _answer(chunks, hung=True)
                sock.settimeout(left)
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    return _answer(chunks, hung=True)
                except OSError as e:  # reset: what arrived before it counts (none: no reply)
                    if not chunks:
                        return Answer(None, b"", 0, False, f"{type(e).__name__}: {e} (before any answer)")
                    break
                if not data:
                    break
                chunks.append(data)
                if _complete(b"".join(chunks)):
                    break
    except OSError as e:
        return Answer(None, b"", 0, False, f"{type(e).__name__}: {e}")
    return _answer(chunks, hung=False)


def _final(raw: bytes) -> bytes:
    """``raw`` without the interim ``1xx`` answers (``100 Continue``) before the final one."""
    while raw.startswith(b"HTTP/1.1 1") or raw.startswith(b"HTTP/1.0 1"):
        _, sep, rest = raw.partition(b"\r\n\r\n")
        if not sep:
            break
        raw = rest
    return raw


def _complete(raw: bytes) -> bool:
    """Whether ``raw`` holds one whole answer (so a server keeping the connection open is not a hang)."""
    head, sep, body = _final(raw).partition(b"\r\n\r\n")
    if not sep:
        return False
    lower = head.lower()
    for line in lower.split(b"\r\n"):
        if line.startswith(b"content-length:"):
            try:
                return len(body) >= int(line.split(b":", 1)[1].strip())
            except ValueError:
                return False
    if b"transfer-encoding: chunked" in lower:
        return body.endswith(b"0\r\n\r\n")
    return False


def _answer(chunks: list[bytes], hung: bool) -> Answer:
    raw = _final(b"".join(chunks))
    head, _, body = raw.partition(b"\r\n\r\n")
    code = None
    if not raw.startswith(b"HTTP/"):
        body = raw                # HTTP/0.9-style: a body without a status line
    first = head.split(b"\r\n", 1)[0].split()
    if len(first) >= 2 and first[0].startswith(b"HTTP/") and first[1].isdigit():
        code = int(first[1])
        if b"transfer-encoding: chunked" in head.lower():
            body = _dechunk(body)
    return Answer(code, body, len(raw), hung and not _complete(raw))


def _dechunk(body: bytes) -> bytes:
    out, rest = [], body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out.append(rest[:size])
        rest = rest[size + 2:]
    return b"".join(out)


def is_status(body: bytes) -> bool:
    try:
        obj = json.loads(body)
    except ValueError:
        return False
    return isinstance(obj, dict) and obj.get("kind") == "Status"


def is_go_not_found(answer: Answer) -> bool:
    """kube-apiserver's own answer to a path outside its API (Go's ``http.NotFound``): plain text, not a Status."""
    return answer.code == 404 and answer.body == b"404 page not found\n"


def judge(stats: ProbeStats, probe: Probe, answer: Answer) -> None:
    """Count one exchange into ``stats``."""
    stats.sent += 1
    stats.by_kind[probe.kind.split("-1e")[0]] += 1
    if answer.hung:
        stats.hangs += 1
        stats.note("hang", probe, f"no whole answer in {probe.timeout:.0f} s ({answer.size} bytes read)")
        stats.codes["hang"] += 1
        return
    if answer.code is None:
        stats.no_reply += 1
        stats.codes["no reply"] += 1
        stats.note("no reply", probe, answer.error or f"closed after {answer.size} bytes without a status line: "
                                         f"{answer.body[:60]!r}")
        return
    stats.codes[str(answer.code)] += 1
    if answer.code >= 400:
        stats.largest_error = max(stats.largest_error, answer.size)
        if answer.size > MAX_ERROR_BYTES:
            stats.note("oversized error", probe, f"{answer.code}, {answer.size} bytes")
        if not is_status(answer.body) and not is_go_not_found(answer):
            stats.not_status += 1
            stats.note("not a Status", probe, f"{answer.code}: {answer.body[:120]!r}")
    # 505: the request's HTTP version, as Go answers it; 504 "Too large resource version": kube's answer to a list
    # at a resourceVersion the server has not reached (at once for resourceVersionMatch=Exact, else after the
    # watch cache's 3 s wait), a Timeout to retry.
    if answer.code >= 500 and answer.code != 505 and not (answer.code == 504 and b"Too large resource version"
                                                          in answer.body):
        stats.server_errors += 1
        stats.note("5xx", probe, f"{answer.code}: {answer.body[:200]!r}")
    if probe.expect_refusal and 200 <= answer.code < 300:
        stats.smuggling_accepted += 1
        stats.note("smuggling accepted", probe, str(answer.code))


def setup_objects(post: Callable[[str, dict[str, Any]], Any]) -> None:
    """The objects the probes aim at: namespaces, a ConfigMap and a Pod no kubelet runs (another scheduler)."""
    post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MALFORMED_NS}})
    post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ODD_NS}})
    post(CMS, configmap("target"))
    post(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "target"},
                "spec": {"schedulerName": "chaos-nobody", "containers": [
                    {"name": "main", "image": "busybox", "command": ["sh", "-c", "exit 0"]}]}})
