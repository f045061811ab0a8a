"""Fault injection seen through the official client: error statuses (429 with Retry-After, 500, 503, 409, 410),
latency, watches ended early, compacted history, seeded reproducibility, ``local up --fault``; and a watcher that
stops reading is disconnected instead of blocking writers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kubernetes import client, watch

from mxjob_controller.local.apiserver.http.faults import FaultRule, parse_rule
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.support import Kube, configmap, wait_for

NS = "default"
CMS = f"/api/v1/namespaces/{NS}/configmaps"


def core(kube: Kube) -> client.CoreV1Api:
    return client.CoreV1Api(kube.api)


def strict(target: str | Kube, user_agent: str = "fault-tests") -> Kube:
    """The official client without urllib3's own retries (which replay a 429/503 that has Retry-After), to
    ``target`` (a URL, or a client whose server, CA and token are kept)."""
    kube = target if isinstance(target, Kube) else Kube(target, user_agent)
    config = kube.api.configuration
    kube.api.close()
    config.retries = False
    headers = dict(kube.api.default_headers)
    kube.api = client.ApiClient(config)
    kube.api.default_headers.update(headers)
    kube.api.user_agent = user_agent
    return kube


@pytest.fixture
def strict_kube(apiserver):
    kube = strict(apiserver.url)
    try:
        yield kube
    finally:
        kube.close()


def status_of(e: pytest.ExceptionInfo) -> dict:
    return json.loads(e.value.body)


# --- error statuses --------------------------------------------------------------------------------------

def test_429_with_retry_after_for_the_next_n_requests(apiserver, strict_kube):
    rule = apiserver.faults.add(FaultRule(verb="list", resource="pods", code=429, retry_after=2, count=3))
    api = core(strict_kube)
    for _ in range(3):
        with pytest.raises(client.ApiException) as e:
            api.list_namespaced_pod(NS)
        assert e.value.status == 429
        assert e.value.headers["Retry-After"] == "2"
        body = status_of(e)
        assert body["reason"] == "TooManyRequests"
        assert body["message"] == "Too many requests, please try again later."
        assert body["details"] == {"retryAfterSeconds": 2}
    assert api.list_namespaced_pod(NS).items == []
    assert rule.fired == 3 and rule.exhausted
    api.list_namespaced_config_map(NS)  # other resources were never affected


def test_the_official_client_waits_out_retry_after_by_itself(apiserver, kube):
    rule = apiserver.faults.add(FaultRule(verb="list", resource="pods", code=429, retry_after=1, count=2))
    started = time.monotonic()
    assert core(kube).list_namespaced_pod(NS).items == [], "urllib3 replayed the request after Retry-After"
    assert time.monotonic() - started >= 2
    assert rule.fired == 2


@pytest.mark.parametrize(("code", "reason", "message"), [
    (500, "InternalError", "Internal error occurred: injected fault"),
    (503, "ServiceUnavailable", "the server is currently unable to handle the request"),
    (410, "Expired", "too old resource version: injected fault"),
])
def test_error_codes_on_reads(apiserver, strict_kube, code, reason, message):
    apiserver.faults.add(FaultRule(verb="get", resource="configmaps", code=code, count=1,
                                   retry_after=5 if code == 503 else None))
    strict_kube.post(CMS, configmap("c"))
    with pytest.raises(client.ApiException) as e:
        core(strict_kube).read_namespaced_config_map("c", NS)
    assert e.value.status == code
    assert status_of(e)["reason"] == reason and status_of(e)["message"] == message
    if code == 503:
        assert e.value.headers["Retry-After"] == "5"
    assert core(strict_kube).read_namespaced_config_map("c", NS).metadata.name == "c"


def test_409_conflict_on_update(apiserver, kube):
    kube.post(CMS, configmap("c", {"a": "1"}))
    apiserver.faults.add(FaultRule(verb="update", resource="configmaps", name="c", code=409, count=1))
    api = core(kube)
    current = api.read_namespaced_config_map("c", NS)
    current.data = {"a": "2"}
    with pytest.raises(client.ApiException) as e:
        api.replace_namespaced_config_map("c", NS, current)
    assert e.value.status == 409
    assert status_of(e)["message"] == ('Operation cannot be fulfilled on configmaps "c": the object has been '
                                       "modified; please apply your changes to the latest version and try again")
    assert api.replace_namespaced_config_map("c", NS, current).data == {"a": "2"}


def test_rules_match_namespace_name_and_user_agent(apiserver, kube):
    apiserver.faults.add(FaultRule(verb=("get", "delete"), namespace=NS, name="target", user_agent="chaos",
                                   code=500))
    kube.post(CMS, configmap("target"))
    kube.post(CMS, configmap("other"))
    chaos = Kube(apiserver.url, user_agent="chaos-client/1.0")
    try:
        assert chaos.get(f"{CMS}/target").status == 500
        assert chaos.delete(f"{CMS}/target").status == 500
        assert chaos.get(f"{CMS}/other").status == 200
        assert chaos.get(CMS).status == 200
    finally:
        chaos.close()
    assert kube.get(f"{CMS}/target").status == 200, "another user agent is not affected"


def test_discovery_is_never_matched(apiserver, kube):
    apiserver.faults.add(FaultRule(verb="get", code=500))
    assert kube.get("/api/v1").status == 200
    assert kube.get("/version").status == 200


# --- latency --------------------------------------------------------------------------------------------

def test_fixed_latency(apiserver, kube):
    apiserver.faults.add(FaultRule(verb="list", resource="configmaps", latency=1.0, count=1))
    started = time.monotonic()
    assert kube.get(CMS).status == 200
    assert time.monotonic() - started >= 1.0
    started = time.monotonic()
    assert kube.get(CMS).status == 200
    assert time.monotonic() - started < 1.0, "count=1: only the first list was delayed"


# --- reproducibility -------------------------------------------------------------------------------------

def _chaos_run(seed: int) -> tuple[list[int], list[tuple]]:
    with APIServer(ServerOptions(fault_seed=seed)) as server:
        server.faults.add(FaultRule(verb="list", resource="configmaps", code=503, probability=0.5))
        server.faults.add(FaultRule(verb="list", resource="configmaps", latency=0.0, latency_max=0.01))
        kube = Kube(server.url)
        try:
            codes = [kube.get(CMS).status for _ in range(30)]
        finally:
            kube.close()
        return codes, [(e.rule, e.match, e.action) for e in server.faults.events()]


@pytest.mark.integration
def test_the_same_seed_reproduces_the_same_faults():
    codes_a, events_a = _chaos_run(seed=7)
    codes_b, events_b = _chaos_run(seed=7)
    codes_c, _ = _chaos_run(seed=8)
    assert codes_a == codes_b and events_a == events_b
    assert set(codes_a) == {200, 503}
    assert codes_c != codes_a, "another seed, other faults"


# --- watches ---------------------------------------------------------------------------------------------

def test_watch_ended_after_n_events_then_resumed(apiserver, kube):
    for i in range(6):
        kube.post(CMS, configmap(f"c{i}"))
    apiserver.faults.add(FaultRule(verb="watch", resource="configmaps", watch_events=3, count=1))
    first = list(kube.watch(CMS, timeout=20, timeoutSeconds=30))
    assert [e["object"]["metadata"]["name"] for e in first] == ["c0", "c1", "c2"], "ended cleanly after 3"
    resume_from = first[-1]["object"]["metadata"]["resourceVersion"]
    rest = list(kube.watch(CMS, timeout=20, timeoutSeconds=1, resourceVersion=resume_from))
    assert [e["object"]["metadata"]["name"] for e in rest] == ["c3", "c4", "c5"]


def test_watch_ended_every_t_seconds(apiserver, kube):
    apiserver.faults.add(FaultRule(verb="watch", resource="configmaps", watch_seconds=0.5))
    for _ in range(2):
        started = time.monotonic()
        assert list(kube.watch(CMS, timeout=20, timeoutSeconds=60)) == []
        assert 0.4 <= time.monotonic() - started < 10


def test_410_on_watch_is_an_error_event_the_client_raises(apiserver, kube):
    apiserver.faults.add(FaultRule(verb="watch", resource="configmaps", code=410, count=1))
    rv = kube.get(CMS).body["metadata"]["resourceVersion"]
    with pytest.raises(client.ApiException) as e:
        for _ in watch.Watch().stream(core(kube).list_namespaced_config_map, NS, resource_version=rv,
                                      timeout_seconds=5):
            pass
    assert e.value.status == 410
    assert e.value.reason == "Expired: too old resource version: injected fault"


def test_compaction_makes_the_next_resume_410(apiserver, kube):
    rv = kube.post(CMS, configmap("c", {"v": "0"})).body["metadata"]["resourceVersion"]
    for i in range(3):
        kube.patch(f"{CMS}/c", {"data": {"v": str(i + 1)}})
    apiserver.faults.compact("configmaps")
    with pytest.raises(client.ApiException) as e:
        for _ in watch.Watch().stream(core(kube).list_namespaced_config_map, NS, resource_version=rv,
                                      timeout_seconds=5):
            pass
    assert e.value.status == 410 and e.value.reason.startswith("Expired: too old resource version")

    rv = kube.get(f"{CMS}/c").body["metadata"]["resourceVersion"]
    kube.patch(f"{CMS}/c", {"data": {"v": "later"}})
    apiserver.faults.add(FaultRule(verb="watch", resource="configmaps", compact=True, count=1))
    frames = list(kube.watch(CMS, timeout=20, timeoutSeconds=5, resourceVersion=rv))
    assert [(f["type"], f["object"]["code"]) for f in frames] == [("ERROR", 410)]


@pytest.mark.integration
def test_compact_every_forgets_history_on_a_timer_until_the_server_stops():
    with APIServer() as server:
        kube = Kube(server.url)
        try:
            rv = kube.post(CMS, configmap("c", {"v": "0"})).body["metadata"]["resourceVersion"]
            kube.patch(f"{CMS}/c", {"data": {"v": "1"}})
            server.faults.compact_every(0.05)
            wait_for(lambda: server.faults.compactions >= 2, timeout=10, what="two compactions")
            frames = list(kube.watch(CMS, timeout=20, timeoutSeconds=5, resourceVersion=rv))
            assert [(f["type"], f["object"]["code"]) for f in frames] == [("ERROR", 410)]
        finally:
            kube.close()
    assert not any(t.name == "apiserver-compactor" for t in threading.enumerate())


# --- slow watchers ----------------------------------------------------------------------------------------

@pytest.mark.integration
def test_a_watcher_that_stops_reading_is_disconnected_not_waited_for():
    with APIServer(ServerOptions(watcher_queue=16)) as server:
        kube = Kube(server.url)
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(30)
        try:
            sock.connect((server.host, server.port))
            sock.sendall(f"GET {CMS}?watch=true HTTP/1.1\r\nHost: test\r\n\r\n".encode())
            wait_for(lambda: server.store.watchers("/configmaps"), timeout=10, what="the watch registered")
            watcher = server.store.watchers("/configmaps")[0]
            payload = {"blob": "x" * 200_000}
            started, created = time.monotonic(), 0
            while not watcher.overflowed and created < 500:  # until the socket buffers are full and 16 queued
                assert kube.post(CMS, configmap(f"c{created}", payload)).status == 201
                created += 1
            for _ in range(20):  # and writers go on at full speed
                assert kube.post(CMS, configmap(f"c{created}", payload)).status == 201
                created += 1
            writing = time.monotonic() - started
            assert watcher.overflowed and watcher.closed.is_set()
            assert server.store.watchers("/configmaps") == [], "the slow watcher was dropped"
            assert writing < 60, f"writers were not held up by the slow watcher ({writing:.1f}s)"

            received = b""
            while chunk := sock.recv(1 << 16):  # the client reads again: it gets what was queued, then EOF
                received += chunk
            events = received.count(b'"type":"ADDED"')
            assert 0 < events < created, (events, created)
            assert not received.endswith(b"0\r\n\r\n"), "no clean end: the client must notice and resume"
        finally:
            sock.close()
            kube.close()


# --- the command line -------------------------------------------------------------------------------------

def test_parse_rule():
    rule = parse_rule("verb=list|watch,resource=pods,code=429,retry-after=2,count=3,probability=0.5,"
                      "user-agent=kubectl")
    assert (rule.verb, rule.resource, rule.code, rule.retry_after, rule.count, rule.probability,
            rule.user_agent) == (("list", "watch"), "pods", 429, 2, 3, 0.5, "kubectl")
    assert parse_rule("latency=0.1,latency-max=0.5").latency_max == 0.5
    assert parse_rule("watch-events=5,compact=true").compact
    for bad in ("verb=list", "code=418", "colour=blue", "code", "probability=2,code=500"):
        with pytest.raises(ValueError):
            parse_rule(bad)


@pytest.mark.slow
def test_local_up_fault_flags(tmp_path: Path):
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up",
                             "--kubelet", "none", "--no-controller", "--port", "0", "--no-crds",
                             "--kubeconfig-out", str(kubeconfig), "--fault-seed", "3",
                             "--fault", "verb=list,resource=configmaps,code=429,retry-after=2,count=2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=60, what="local up ready")
        assert proc.poll() is None, proc.communicate()
        kube = strict(Kube.from_kubeconfig(kubeconfig, "fault-tests"))
        try:
            replies = [kube.get(CMS) for _ in range(3)]
        finally:
            kube.close()
        assert [r.status for r in replies] == [429, 429, 200]
        assert replies[0].headers["retry-after"] == "2"
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    bad = subprocess.run([sys.executable, "-m", "mxjob_controller", "local", "up", "--fault", "code=418"],
                         check=False, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--fault" in bad.stderr
