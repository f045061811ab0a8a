"""The controller's client budget in the APF era (issue 35): no client-side limit where the API server advertises
API Priority and Fairness (its PF headers on ``GET /version``), a token bucket where it does not, the flags'
bucket whenever given (``-1``: none), asked again after a lost connection; a 429 with ``Retry-After`` from the
server's flow control retried after a jittered wait and counted in ``rest_client_request_retries_total``."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from mxjob_controller.manager import controllers
from mxjob_controller.manager.process import Manager
from mxjob_controller.manager.settings import RunSettings
from mxjob_controller.mxnet.crd import mxjob_crd
from mxjob_controller.runtime.client import CONFIGMAPS, Client, ClientConfig, TransportError
from mxjob_controller.runtime.client.budget import advertises_flow_control, detected_budget
from mxjob_controller.runtime.rest_client_metrics import register_retry_metrics
from tests.support import configmap, wait_for

DEADLINE = 30.0
APF = "server advertises API Priority and Fairness: no client-side limit"
NO_PF_HEADERS = "server sends no PF headers: token bucket qps=20, burst=30"


# --- the pure part ----------------------------------------------------------------------------------------------

def test_pf_headers_mean_flow_control_whatever_their_case():
    assert advertises_flow_control({"X-Kubernetes-PF-FlowSchema-UID": "a", "X-Kubernetes-PF-PriorityLevel-UID": "b"})
    assert advertises_flow_control({"x-kubernetes-pf-prioritylevel-uid": "b"})
    assert not advertises_flow_control({"Content-Type": "text/plain", "X-Kubernetes-PF-FlowSchema-UID": " "})
    assert detected_budget(True, 20, 30).qps < 0
    assert (detected_budget(False, 20, 30).qps, detected_budget(False, 20, 30).burst) == (20, 30)
    assert detected_budget(None, 0, 0).why.startswith("server not reachable")   # 0: client-go's 5/10 meanwhile
    assert (detected_budget(None, 0, 0).qps, detected_budget(None, 0, 0).burst) == (5, 10)


# --- the manager's start-up: which budget, and why ----------------------------------------------------------------

def _start(flow_control: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture,
           **settings: object) -> tuple[list, str, list[str]]:
    """Run the manager against a fresh server until its controllers run; return them, its start-up line and the
    paths of every request the manager's clients sent."""
    built: list = []

    def factory(client: Client, run_settings: RunSettings, registry: CollectorRegistry):
        controller = controllers.new_controller(client, run_settings, registry)
        built.append((client, controller))
        return controller

    with APIServer(ServerOptions(flow_control=flow_control)) as server:
        server.create(mxjob_crd())
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        manager = Manager(RunSettings(kubeconfig=str(kubeconfig), metrics_bind_address="0",
                                      health_probe_bind_address="0", frameworks=("mxnet",), **settings),  # type: ignore[arg-type]
                          controller_factory=factory)
        with caplog.at_level(logging.INFO, logger="mxjob_controller.manager.process"):
            runner = threading.Thread(target=manager.run, name="test-manager-run", daemon=True)
            runner.start()
            try:
                wait_for(lambda: built and built[0][1].factory.has_synced(), timeout=DEADLINE,
                         what="the controller running")
            finally:
                manager.request_stop()
                runner.join(DEADLINE)
        assert not runner.is_alive()
        paths = [r.path for r in server.audit.records(user_agent="mxjob-controller/")]
    [line] = [r.getMessage() for r in caplog.records if "client budget:" in r.getMessage()]
    return built, line, paths


@pytest.mark.parametrize(("flow_control", "settings", "bucket", "why"), [
    (True, {}, None, APF),
    (False, {}, (20.0, 30), NO_PF_HEADERS),
    (True, {"kube_api_qps": -1.0}, None, "explicit --kube-api-qps -1: no client-side limit"),
    (True, {"kube_api_qps": 7.0, "kube_api_burst": 9}, (7.0, 9),
     "explicit --kube-api-qps 7 --kube-api-burst 9: token bucket qps=7, burst=9"),
], ids=["apf-default", "old-server-default", "apf-off", "apf-explicit-bucket"])
@pytest.mark.integration
def test_the_budget_in_force_and_why_are_in_the_start_up_line(flow_control, settings, bucket, why, tmp_path, caplog):
    """The default: none where the server sends PF headers, the 20/30 bucket where it does not; the flags win over
    what the server says. The informers' client has the same budget; the slow-start batches are sized to it; the
    events client keeps its own bucket."""
    [(client, controller)], line, paths = _start(flow_control, tmp_path, caplog, **settings)
    assert f"client budget: {why};" in line
    for each in (client, controller.cache_client):
        limiter = each.rate_limiter
        assert (None if limiter is None else (limiter.qps, limiter.burst)) == bucket
    if bucket is not None:
        assert client.rate_limiter is not controller.cache_client.rate_limiter   # a bucket each
    # One probe at most answers the main client and the informers' alike (none when the flags decide).
    assert paths.count("/version") == (0 if settings else 1), paths
    assert controller.cache_client.budget.decision is client.budget.decision
    assert controller.options.slice_batch == (128 if bucket is None else 32)
    events = controller.event_client.rate_limiter      # --event-qps/--event-burst: a bucket of its own, always
    assert events is not None and (events.qps, events.burst) == (150.0, 300)


# --- on reconnect -----------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_the_server_is_asked_again_after_the_connection_was_lost():
    """A server with APF goes away; another, without it, comes back on the same address: the first request after
    the lost connection finds no PF headers, and the token bucket applies from then on, to the informers' client
    too (it shares the main client's decision: one probe each time answers both)."""
    first = APIServer(ServerOptions(flow_control=True)).start()
    client = Client(ClientConfig(host=first.url, qps=20, burst=30, detect_flow_control=True), max_retries=0)
    informers = client.sibling(None)   # shares the decision, as the controller's informers' client does
    try:
        assert client.list(CONFIGMAPS, "default")["items"] == []
        assert client.rate_limiter is None and client.budget.current().why == APF
        assert informers.rate_limiter is None
        assert [r.path for r in first.audit.records() if r.path == "/version"] == ["/version"], "one probe for both"
        port = first.port
        first.stop()
        with pytest.raises(TransportError):
            client.list(CONFIGMAPS, "default")
        with APIServer(ServerOptions(port=port, flow_control=False)) as second:
            wait_for(lambda: informers.rate_limiter is not None, timeout=DEADLINE, what="the budget asked again")
            assert client.budget.current().why == NO_PF_HEADERS and client.rate_limiter is not None
            assert client.list(CONFIGMAPS, "default")["items"] == []
            assert informers.rate_limiter is not client.rate_limiter   # the same rule, a bucket each
            assert [r.path for r in second.audit.records() if r.path == "/version"] == ["/version"]
    finally:
        informers.close()
        client.close()
        first.stop()


# --- 429 from the server's flow control -------------------------------------------------------------------------

@pytest.mark.integration
def test_a_create_refused_by_flow_control_is_retried_after_retry_after_and_counted():
    """Ten seats in all leave global-default one, and a queue wait of a quarter of the 4 s request timeout. A slow
    list holds that seat for 3 s: the create queued behind it is refused (429, Retry-After 1), waited for, sent
    again once the seat is free, and stored once; each retry is in ``rest_client_request_retries_total``."""
    options = ServerOptions(max_requests_inflight=5, max_mutating_requests_inflight=5, request_timeout=4.0)
    with APIServer(options) as server:
        registry = CollectorRegistry()
        client = Client(ClientConfig(host=server.url, qps=20, burst=30, detect_flow_control=True))
        holder = client.sibling("seat-holder")
        register_retry_metrics(registry, client.retries)
        server.faults.add(FaultRule(verb="list", resource="configmaps", user_agent=holder.user_agent, latency=3.0))
        holding = threading.Thread(target=lambda: holder.list(CONFIGMAPS, "default"), name="test-seat-holder",
                                   daemon=True)
        try:
            assert client.rate_limiter is None        # the server advertises APF: no client-side limit
            holding.start()
            wait_for(lambda: server.flow_control.limit("global-default") == 1 and _executing(server) == 1,
                     timeout=DEADLINE, what="the slow list holding global-default's seat")
            started = time.monotonic()
            created = client.create(CONFIGMAPS, configmap("made-once"))
            took = time.monotonic() - started
        finally:
            holding.join(DEADLINE)
            holder.close()
            client.close()
        assert created["metadata"]["name"] == "made-once"
        codes = [r.code for r in server.audit.records(verb="create", resource="configmaps")]
        assert codes[-1] == 201 and set(codes[:-1]) == {429}, codes
        assert took >= 1.0 * (len(codes) - 1)          # each retry came no sooner than Retry-After: 1
        assert len(server.audit.records(verb="create", resource="configmaps", code=201)) == 1
        host = server.url.split("://", 1)[1]
        retries = registry.get_sample_value("rest_client_request_retries_total",
                                            {"code": "429", "host": host, "verb": "POST"})
        assert retries == len(codes) - 1 >= 1


def _executing(server: APIServer) -> int:
    prefix = 'apiserver_flowcontrol_current_executing_requests{flow_schema="global-default",' \
             'priority_level="global-default"} '
    return next((int(line[len(prefix):]) for line in server.flow_control.metrics() if line.startswith(prefix)), 0)
