"""The operator's HTTP endpoints (runtime/endpoints): /metrics parses with prometheus_client's parser and holds every
controller, work-queue, leader-election and process metric with its labels; /readyz is 503 until the informers
(watching the embedded API server) have synced; /healthz is 200; bind addresses as the Go operators take them."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.runtime.client import CONFIGMAPS, Client, ClientConfig
from mxjob_controller.runtime.controller import DONE, Controller
from mxjob_controller.runtime.endpoints import Endpoints, informers_synced, parse_bind_address
from mxjob_controller.runtime.informer_factory import SharedInformerFactory
from mxjob_controller.runtime.leaderelection import LeaderElectionConfig, LeaderElector, leader_election_client
from mxjob_controller.runtime.registry import new_registry
from tests.support import wait_for


def fetch(url: str, path: str, method: str = "GET", accept: str = "") -> tuple[int, dict[str, str], str]:
    host_port = url.removeprefix("http://")
    host, _, port = host_port.rpartition(":")
    conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=10)
    try:
        conn.request(method, path, headers={"Accept": accept} if accept else {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read().decode()
    finally:
        conn.close()


@pytest.fixture
def endpoints_started() -> Iterator[list[Endpoints]]:
    started: list[Endpoints] = []
    yield started
    for e in started:
        e.stop()


# Every family the issue names, with its label names (samples of histograms carry ``le`` as well).
EXPECTED = {
    "controller_runtime_reconcile_total": {"controller", "result"},
    "controller_runtime_reconcile_errors_total": {"controller"},
    "controller_runtime_reconcile_time_seconds": {"controller"},
    "controller_runtime_active_workers": {"controller"},
    "controller_runtime_max_concurrent_reconciles": {"controller"},
    "workqueue_depth": {"name", "controller"},
    "workqueue_adds_total": {"name", "controller"},
    "workqueue_queue_duration_seconds": {"name", "controller"},
    "workqueue_work_duration_seconds": {"name", "controller"},
    "workqueue_unfinished_work_seconds": {"name", "controller"},
    "workqueue_longest_running_processor_seconds": {"name", "controller"},
    "workqueue_retries_total": {"name", "controller"},
    "leader_election_master_status": {"name"},
    "process_cpu_seconds_total": set(),
    "process_resident_memory_bytes": set(),
    "process_open_fds": set(),
    "process_start_time_seconds": set(),
    "python_info": {"implementation", "major", "minor", "patchlevel", "version"},
}


def test_metrics_readyz_and_healthz_of_a_running_operator(apiserver, kube, endpoints_started):
    registry = new_registry()
    client = Client(ClientConfig(host=apiserver.url), component="endpoints-test")
    factory = SharedInformerFactory(client, namespace="default")
    informer = factory.informer(CONFIGMAPS)
    controller = Controller("mxjob", lambda key: DONE, workers=2, registry=registry)
    informer.add_handler(on_add=lambda obj: controller.queue.add(obj["metadata"]["name"]))
    elector = LeaderElector(leader_election_client(ClientConfig(host=apiserver.url), "endpoints-elector", 1.2),
                            LeaderElectionConfig("mxjob-controller", "default", lease_duration=2, renew_deadline=1.2,
                                                 retry_period=0.2), registry=registry)
    endpoints = Endpoints(registry, metrics_address="127.0.0.1:0", probe_address="127.0.0.1:0",
                          readiness={"informers": informers_synced(factory)})
    endpoints_started.append(endpoints.start())
    assert endpoints.metrics_server is not None and endpoints.probe_server is not None
    assert endpoints.metrics_server is not endpoints.probe_server
    probes, metrics = endpoints.probe_server.url, endpoints.metrics_server.url
    try:
        # Alive at once; not ready before the informers have their initial list...
        assert fetch(probes, "/healthz")[::2] == (200, "ok")
        status, _, body = fetch(probes, "/readyz?verbose")
        assert status == 503
        assert "[-]informers failed: reason withheld" in body and body.endswith("readyz check failed\n")
        # ... nor while that list fails (the reflector backs off and retries)...
        rule = apiserver.faults.add(FaultRule(verb="list", resource="configmaps", code=500, count=1))
        factory.start()
        wait_for(lambda: rule.fired == 1, what="the first list failed")
        assert fetch(probes, "/readyz")[0] == 503
        assert fetch(probes, "/readyz/informers")[0] == 503
        # ... and ready once synced. A standby (this elector does not even run yet) is ready too.
        wait_for(lambda: fetch(probes, "/readyz")[0] == 200, timeout=15, what="ready after the sync")
        assert fetch(probes, "/readyz")[2] == "ok"
        assert fetch(probes, "/readyz/informers")[::2] == (200, "ok")
        assert fetch(probes, "/readyz?verbose")[2] == "[+]informers ok\nreadyz check passed\n"
        assert fetch(probes, "/healthz?verbose")[2] == "[+]ping ok\nhealthz check passed\n"
        assert fetch(probes, "/readyz/nonesuch")[0] == 404
        assert fetch(probes, "/metrics")[0] == 404  # metrics live on their own address
        assert fetch(metrics, "/healthz")[0] == 404
        assert fetch(probes, "/healthz", method="POST")[0] == 501

        controller.start()
        elector.start()
        assert elector.wait_for_leadership(10)
        assert kube.post("/api/v1/namespaces/default/configmaps",
                         {"metadata": {"name": "c1"}, "data": {}}).ok
        wait_for(lambda: registry.get_sample_value("controller_runtime_reconcile_total",
                                                   {"controller": "mxjob", "result": "success"}) == 1.0,
                 what="a reconcile")

        status, headers, text = fetch(metrics, "/metrics")
        assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
        samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples.setdefault(s.name, []).append(s)
        for name, labels in EXPECTED.items():
            found = samples.get(name) or samples.get(name + "_count")
            assert found, f"{name} missing from /metrics"
            assert all(set(s.labels) - {"le"} == labels for s in found), (name, found[0].labels)

        def value(metric: str, **labels: str) -> float:
            return next(s.value for s in samples[metric] if s.labels == labels)

        for result in ("success", "error", "requeue", "requeue_after"):
            assert value("controller_runtime_reconcile_total", controller="mxjob", result=result) == (
                1.0 if result == "success" else 0.0)
        assert value("controller_runtime_max_concurrent_reconciles", controller="mxjob") == 2.0
        assert value("workqueue_adds_total", name="mxjob", controller="mxjob") == 1.0
        assert value("leader_election_master_status", name="mxjob-controller") == 1.0
        assert len([s for s in samples["controller_runtime_reconcile_time_seconds_bucket"]]) == 41  # 40 + Inf
        assert value("process_open_fds") > 0

        status, headers, text = fetch(metrics, "/metrics", accept="application/openmetrics-text; version=1.0.0")
        assert status == 200 and headers["content-type"].startswith("application/openmetrics-text")
        assert text.endswith("# EOF\n")
    finally:
        elector.stop(10)
        controller.shutdown_with_drain(5)
        factory.stop(5)
        client.close()
        elector.client.close()


def test_one_address_serves_every_path_and_zero_disables(endpoints_started):
    registry = new_registry()
    failing = threading.Event()

    def flaky() -> bool:
        if failing.is_set():
            raise RuntimeError("secret detail")
        return True

    both = Endpoints(registry, metrics_address="127.0.0.1:0", probe_address="127.0.0.1:0",
                     readiness={"cache": flaky}, liveness={"deadlock": lambda: not failing.is_set()})
    # ``:0`` twice means two servers on two free ports; the same explicit address means one server.
    assert both.metrics_server is not both.probe_server
    endpoints_started.append(both.start())
    port = both.probe_server.port
    both.stop()
    same = Endpoints(registry, metrics_address=f"127.0.0.1:{port}", probe_address=f"127.0.0.1:{port}",
                     readiness={"cache": flaky}, liveness={"deadlock": lambda: not failing.is_set()})
    endpoints_started.append(same.start())
    assert same.metrics_server is same.probe_server
    url = same.metrics_server.url
    assert fetch(url, "/metrics")[0] == 200
    assert fetch(url, "/readyz")[::2] == (200, "ok")
    failing.set()
    status, _, body = fetch(url, "/readyz?verbose")
    assert status == 503 and "[-]cache failed" in body and "secret detail" not in body
    assert fetch(url, "/readyz?exclude=cache")[::2] == (200, "ok")
    assert fetch(url, "/healthz")[0] == 503
    assert fetch(url, "/healthz/ping")[::2] == (200, "ok")

    off = Endpoints(registry, metrics_address="0", probe_address="0")
    assert off.metrics_server is None and off.probe_server is None
    assert off.start().stop()


def test_stop_closes_the_port_and_joins_the_named_thread(endpoints_started):
    endpoints = Endpoints(new_registry(), metrics_address="127.0.0.1:0", probe_address="0").start()
    endpoints_started.append(endpoints)
    assert endpoints.metrics_server is not None
    port = endpoints.metrics_server.port
    assert [t for t in threading.enumerate() if t.name == "endpoints-metrics"]
    assert endpoints.stop(5)
    assert not [t for t in threading.enumerate() if t.name == "endpoints-metrics"]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_requests_run_on_named_threads_and_stop_waits_for_them_within_its_deadline(endpoints_started):
    entered, release = threading.Event(), threading.Event()

    def slow_check() -> bool:
        entered.set()
        return release.wait(10)

    endpoints = Endpoints(new_registry(), metrics_address="0", probe_address="127.0.0.1:0",
                          readiness={"slow": slow_check})
    endpoints_started.append(endpoints.start())
    assert endpoints.probe_server is not None
    url = endpoints.probe_server.url
    idle = http.client.HTTPConnection("127.0.0.1", endpoints.probe_server.port, timeout=10)
    idle.request("GET", "/healthz")                 # a keep-alive connection, left open and idle
    assert idle.getresponse().read() == b"ok"
    answers: list = []
    prober = threading.Thread(target=lambda: answers.append(fetch(url, "/readyz")), name="test-prober")
    prober.start()
    assert entered.wait(10)
    serving = sorted(t.name for t in threading.enumerate() if t.name.startswith("endpoints-probes-request-"))
    assert len(serving) == 2, serving               # the idle connection's thread and the probe's

    started = time.monotonic()
    assert endpoints.stop(0.5) is False             # the probe is still being answered
    assert 0.4 < time.monotonic() - started < 2
    release.set()
    prober.join(10)
    assert answers and answers[0][::2] == (200, "ok")   # a request in progress still gets its answer
    wait_for(lambda: not [t for t in threading.enumerate() if t.name.startswith("endpoints-probes")],
             what="every thread of the server gone")
    idle.close()


def test_stop_ends_idle_keep_alive_connections_at_once(endpoints_started):
    endpoints = Endpoints(new_registry(), metrics_address="127.0.0.1:0", probe_address="0").start()
    endpoints_started.append(endpoints)
    assert endpoints.metrics_server is not None
    idle = http.client.HTTPConnection("127.0.0.1", endpoints.metrics_server.port, timeout=10)
    idle.request("GET", "/metrics")
    assert idle.getresponse().status == 200
    started = time.monotonic()
    assert endpoints.stop(5)                        # not held for the connection's 10 s idle timeout
    assert time.monotonic() - started < 1.5
    assert not [t for t in threading.enumerate() if t.name.startswith("endpoints-metrics")]
    idle.close()


@pytest.mark.parametrize(("address", "parsed"), [
    (":8080", ("", 8080)), ("0.0.0.0:8081", ("0.0.0.0", 8081)), ("127.0.0.1:0", ("127.0.0.1", 0)),
    ("[::1]:9443", ("::1", 9443)), ("0", None), ("", None),
])
def test_bind_addresses_as_the_go_operators_take_them(address, parsed):
    assert parse_bind_address(address) == parsed


@pytest.mark.parametrize("address", ["8080", "localhost", ":http", "::1:8080", ":70000"])
def test_bad_bind_addresses_are_refused(address):
    with pytest.raises(ValueError):
        parse_bind_address(address)
