"""The runtime's API client, against the embedded API server over HTTP: verbs, typed errors, pagination, watch
streams, the client's rate limit and the user agent. (Configuration: test_loading.py, test_kubeconfig.py,
test_incluster.py; errors as pure functions: test_errors.py; the token bucket: tests/runtime/test_token_bucket.py.)"""

from __future__ import annotations

import importlib.machinery
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.runtime.client import (
    CONFIGMAPS,
    PODS,
    AlreadyExists,
    BadRequest,
    Cancelled,
    Client,
    ClientConfig,
    Conflict,
    Expired,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    NotFound,
    RateLimitTimeout,
    ReadTimeout,
    Resource,
    ServerError,
    ServiceUnavailable,
    TooManyRequests,
    TransportError,
    Unauthorized,
    user_agent,
)
from mxjob_controller.runtime.client.api import default_program
from tests.support import configmap, pod, wait_for

REPO = Path(__file__).resolve().parents[3]


def make_client(url: str, component: str = "tests", **config: object) -> Client:
    max_retries = int(config.pop("max_retries", 0))  # type: ignore[call-overload]
    program = config.pop("program", None)
    settings: dict = {"qps": -1, **config}
    return Client(ClientConfig(host=url, **settings), component=component, program=program,  # type: ignore[arg-type]
                  max_retries=max_retries)


def in_thread(name: str, call) -> tuple[threading.Thread, list]:
    """Run ``call`` on a named daemon thread; the list receives its result or the exception it raised."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(call())
        except Exception as e:  # handed to the test
            outcome.append(e)

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread, outcome


@pytest.fixture
def client(apiserver):
    c = make_client(apiserver.url)
    yield c
    c.close()


# --- importing is light -----------------------------------------------------------------------------------

@pytest.mark.integration
def test_import_does_not_load_the_generated_models():
    code = ("import sys, time, resource\n"
            "t = time.perf_counter()\n"
            "import mxjob_controller.runtime.client\n"
            "ms = (time.perf_counter() - t) * 1000\n"
            "print(json.dumps({'ms': ms, 'rss': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,\n"
            "                  'kube': sorted(m for m in sys.modules if m.startswith('kubernetes'))}))\n"
            "import kubernetes\n"
            "assert kubernetes.client.rest.ApiException and kubernetes.client.CoreV1Api and kubernetes.watch\n")
    out = subprocess.run([sys.executable, "-c", "import json\n" + code], cwd=REPO, capture_output=True, text=True,
                         timeout=60, check=True)
    facts = json.loads(out.stdout)
    assert facts["kube"] == [], "importing the client must not import the kubernetes package"


# --- verbs ----------------------------------------------------------------------------------------------

def test_create_get_update_patch_delete_with_plain_dicts(client):
    created = client.create(CONFIGMAPS, configmap("c1", {"a": "1"}))
    assert type(created) is dict and created["metadata"]["uid"]
    got = client.get(CONFIGMAPS, "c1", "default")
    assert got == created

    changed = dict(got, data={"a": "2"})
    updated = client.update(CONFIGMAPS, changed)
    assert updated["data"] == {"a": "2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    with pytest.raises(Conflict) as stale:
        client.update(CONFIGMAPS, changed)  # still carries the old resourceVersion
    assert "the object has been modified" in stale.value.message

    patched = client.patch(CONFIGMAPS, "c1", {"data": {"b": "3"}}, "default")
    assert patched["data"] == {"a": "2", "b": "3"}

    gone = client.delete(CONFIGMAPS, "c1", "default")
    # kube answers with the deleted object or a Success Status, depending on the kind
    assert (gone.get("details") or gone["metadata"]).get("uid") == created["metadata"]["uid"]
    with pytest.raises(NotFound):
        client.get(CONFIGMAPS, "c1", "default")


def test_status_subresource_update_and_patch(client):
    client.create(PODS, pod("p1"))
    current = client.get(PODS, "p1", "default")
    current["status"] = {"phase": "Running"}
    current["spec"]["activeDeadlineSeconds"] = 5  # ignored by a status write
    written = client.update_status(PODS, current)
    assert written["status"]["phase"] == "Running"
    assert "activeDeadlineSeconds" not in written["spec"]
    patched = client.patch(PODS, "p1", {"status": {"phase": "Succeeded"}}, "default", subresource="status")
    assert patched["status"]["phase"] == "Succeeded"


def test_a_patch_whose_answer_is_not_decoded_is_applied_and_its_errors_are_raised(client):
    """``decode=False`` (the kubelet's status writes): None back, the write applied, the next request served on the
    same client; a refusal (409 for a resourceVersion that is not the pod's, 404) is raised as when decoded."""
    created = client.create(PODS, pod("p1"))
    meta = created["metadata"]
    assert client.patch(PODS, "p1", {"metadata": {"uid": meta["uid"]}, "status": {"phase": "Running"}}, "default",
                        subresource="status", decode=False) is None
    assert client.get(PODS, "p1", "default")["status"]["phase"] == "Running"
    with pytest.raises(Conflict):
        client.patch(PODS, "p1", {"metadata": {"resourceVersion": meta["resourceVersion"]},
                                  "status": {"phase": "Failed"}}, "default", subresource="status", decode=False)
    with pytest.raises(NotFound):
        client.patch(PODS, "gone", {"status": {"phase": "Failed"}}, "default", subresource="status", decode=False)
    assert client.get(PODS, "p1", "default")["status"]["phase"] == "Running"


def test_json_and_strategic_patches(client):
    client.create(PODS, pod("p1", labels={"a": "1"}))
    out = client.patch(PODS, "p1", [{"op": "add", "path": "/metadata/labels/b", "value": "2"}], "default",
                       patch_type="json")
    assert out["metadata"]["labels"] == {"a": "1", "b": "2"}
    out = client.patch(PODS, "p1", {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}},
                       "default", patch_type="strategic")
    assert [c["image"] for c in out["spec"]["containers"]] == ["busybox:1.37"]


def test_patch_arguments_are_checked_before_sending(client):
    with pytest.raises(ValueError, match="list of operations"):
        client.patch(CONFIGMAPS, "x", {"op": "add"}, "default", patch_type="json")
    with pytest.raises(ValueError, match="unknown patch type"):
        client.patch(CONFIGMAPS, "x", {}, "default", patch_type="yaml")
    with pytest.raises(ValueError, match="field_manager"):
        client.patch(CONFIGMAPS, "x", {}, "default", patch_type="apply")
    with pytest.raises(ValueError, match="propagation policy"):
        client.delete(CONFIGMAPS, "x", "default", propagation_policy="Eventually")
    with pytest.raises(ValueError, match="namespaced"):
        client.get(CONFIGMAPS, "x")


def test_delete_options_reach_the_server(client):
    created = client.create(CONFIGMAPS, configmap("c1"))
    with pytest.raises(Conflict, match=r"(?i)precondition.*not-the-uid"):
        client.delete(CONFIGMAPS, "c1", "default", precondition_uid="not-the-uid")
    with pytest.raises(Conflict, match=r"(?i)precondition"):
        client.delete(CONFIGMAPS, "c1", "default", precondition_resource_version="1")
    client.delete(CONFIGMAPS, "c1", "default", precondition_uid=created["metadata"]["uid"],
                  propagation_policy="Foreground", dry_run=True)
    assert client.get(CONFIGMAPS, "c1", "default")["metadata"]["uid"] == created["metadata"]["uid"]
    client.delete(CONFIGMAPS, "c1", "default", precondition_uid=created["metadata"]["uid"],
                  precondition_resource_version=created["metadata"]["resourceVersion"],
                  propagation_policy="Background")
    with pytest.raises(NotFound):
        client.get(CONFIGMAPS, "c1", "default")


# --- typed errors ---------------------------------------------------------------------------------------

def test_typed_errors_from_real_server_answers(client):
    with pytest.raises(NotFound) as nf:
        client.get(CONFIGMAPS, "missing", "default")
    assert nf.value.code == 404 and nf.value.status["details"]["name"] == "missing"

    client.create(CONFIGMAPS, configmap("c1"))
    with pytest.raises(AlreadyExists) as ae:
        client.create(CONFIGMAPS, configmap("c1"))
    assert ae.value.code == 409 and not isinstance(ae.value, Conflict)

    with pytest.raises(Invalid) as inv:
        client.create(CONFIGMAPS, configmap("Not_A_Name"))
    assert inv.value.code == 422
    assert [c.field for c in inv.value.causes] == ["metadata.name"]
    assert inv.value.causes[0].reason == "FieldValueInvalid"

    with pytest.raises(BadRequest):
        client.list(CONFIGMAPS, "default", label_selector="a in (")

    with pytest.raises(NotFound):  # an unserved resource type
        client.list(Resource("example.com", "v1", "widgets"), "default")


def test_expired_continue_token_and_watch_resume_are_gone(apiserver, client):
    for i in range(3):
        client.create(CONFIGMAPS, configmap(f"c{i}"))
    page = client.list(CONFIGMAPS, "default", limit=1)
    client.create(CONFIGMAPS, configmap("later"))
    apiserver.store.compact()
    with pytest.raises(Expired) as exp:
        client.list(CONFIGMAPS, "default", limit=1, continue_token=page["metadata"]["continue"])
    assert exp.value.code == 410 and isinstance(exp.value, Gone)
    with pytest.raises(Expired), client.watch(CONFIGMAPS, "default",
                                              resource_version=page["metadata"]["resourceVersion"]) as stream:
        list(stream)


@pytest.mark.parametrize(("code", "retry_after", "expected"), [
    (401, None, Unauthorized), (403, None, Forbidden), (409, None, Conflict), (429, 7, TooManyRequests),
    (500, None, InternalError), (503, 3, ServiceUnavailable), (504, None, ServerError), (410, None, Expired),
])
def test_typed_errors_for_injected_statuses(apiserver, client, code, retry_after, expected):
    apiserver.faults.add(FaultRule(verb="get", resource="configmaps", code=code, retry_after=retry_after, count=1))
    with pytest.raises(expected) as err:
        client.get(CONFIGMAPS, "anything", "default")
    assert err.value.code == code
    assert err.value.status["kind"] == "Status" and err.value.status["status"] == "Failure"
    assert err.value.retry_after == (float(retry_after) if retry_after else None)


def test_retry_after_is_retried_up_to_max_retries(apiserver):
    retrying = make_client(apiserver.url, max_retries=3)
    rule = apiserver.faults.add(FaultRule(verb="list", resource="configmaps", code=429, retry_after=1, count=1))
    started = time.monotonic()
    assert retrying.list(CONFIGMAPS, "default")["items"] == []
    assert time.monotonic() - started >= 0.95  # the server asked for one second
    assert rule.fired == 1
    wait_for(lambda: [r.code for r in apiserver.audit.records(verb="list", resource="configmaps")] == [429, 200],
             what="the audit record of the retried list")

    once = make_client(apiserver.url, max_retries=1)
    apiserver.faults.add(FaultRule(verb="get", resource="configmaps", code=503, retry_after=1, count=2))
    with pytest.raises(ServiceUnavailable):
        once.get(CONFIGMAPS, "x", "default")


def test_cancel_interrupts_a_retry_wait(apiserver):
    retrying = make_client(apiserver.url, max_retries=3)
    apiserver.faults.add(FaultRule(verb="get", resource="configmaps", code=429, retry_after=30, count=1))
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        retrying.request("GET", CONFIGMAPS.path("default", "x"), cancel=cancel)
    assert time.monotonic() - started < 5


def test_a_retry_after_beyond_the_deadline_is_not_waited_for(apiserver):
    """A server answering Retry-After: 600 must not park the caller for 600 s (ten times over)."""
    retrying = make_client(apiserver.url, max_retries=10)
    rule = apiserver.faults.add(FaultRule(verb="create", resource="configmaps", code=429, retry_after=600))
    started = time.monotonic()
    writer, outcome = in_thread("test-writer", lambda: retrying.create(CONFIGMAPS, configmap("c1")))
    writer.join(10)
    assert not writer.is_alive(), "the write is still waiting on the server's Retry-After"
    assert isinstance(outcome[0], TooManyRequests) and outcome[0].retry_after == 600
    assert time.monotonic() - started < 5 and rule.fired == 1   # given up at once, nothing re-sent

    # Within the deadline, the server's wait is honoured; the retries stop when the next would pass it.
    apiserver.faults.remove(rule)
    apiserver.faults.add(FaultRule(verb="get", resource="configmaps", code=503, retry_after=1))
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable):
        retrying.get(CONFIGMAPS, "x", "default", deadline=2.5)
    assert 1.9 < time.monotonic() - started < 3.0   # two waits of 1 s fit in 2.5 s, a third would not


def test_close_ends_a_retry_wait_and_every_write_verb_takes_cancel(apiserver):
    retrying = make_client(apiserver.url, max_retries=3)
    apiserver.faults.add(FaultRule(verb="get", resource="configmaps", code=503, retry_after=30, count=1))
    reader, outcome = in_thread("test-reader", lambda: retrying.get(CONFIGMAPS, "x", "default", deadline=120))
    wait_for(apiserver.faults.events, what="the 503 answered")
    started = time.monotonic()
    retrying.close()
    reader.join(5)
    assert not reader.is_alive() and isinstance(outcome[0], Cancelled)
    assert time.monotonic() - started < 1

    writer = make_client(apiserver.url, max_retries=3)
    writer.create(CONFIGMAPS, configmap("c1"))
    apiserver.faults.add(FaultRule(verb=("create", "update", "patch", "delete"), resource="configmaps", code=429,
                                   retry_after=30))
    current = writer.get(CONFIGMAPS, "c1", "default")
    calls = {
        "create": lambda cancel: writer.create(CONFIGMAPS, configmap("c2"), cancel=cancel),
        "update": lambda cancel: writer.update(CONFIGMAPS, current, cancel=cancel),
        "update_status": lambda cancel: writer.update_status(CONFIGMAPS, current, cancel=cancel),
        "patch": lambda cancel: writer.patch(CONFIGMAPS, "c1", {"data": {"a": "b"}}, "default", cancel=cancel),
        "delete": lambda cancel: writer.delete(CONFIGMAPS, "c1", "default", cancel=cancel),
    }
    for verb, call in calls.items():
        cancel = threading.Event()
        answered = len(apiserver.faults.events())
        thread, outcome = in_thread(f"test-{verb}", lambda call=call, cancel=cancel: call(cancel))
        wait_for(lambda answered=answered: len(apiserver.faults.events()) > answered, what=f"the {verb} answered")
        cancel.set()
        thread.join(5)
        assert not thread.is_alive() and isinstance(outcome[0], Cancelled), (verb, outcome)
    writer.close()


def test_a_slow_answer_is_a_read_timeout_raised_once(apiserver):
    impatient = make_client(apiserver.url, timeout=0.3)
    rule = apiserver.faults.add(FaultRule(verb="get", resource="configmaps", latency=1.0, count=2))
    started = time.monotonic()
    with pytest.raises(ReadTimeout):
        impatient.get(CONFIGMAPS, "x", "default")
    assert time.monotonic() - started < 0.9 and rule.matched == 1   # not silently re-sent


def test_connection_refused_is_a_transport_error():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(TransportError):
        make_client(f"http://127.0.0.1:{port}", connect_timeout=2).get(CONFIGMAPS, "x", "default")


# --- pagination ---------------------------------------------------------------------------------------------

def test_pagination_with_limit_and_continue(apiserver, client):
    for i in range(25):
        client.create(CONFIGMAPS, configmap(f"c{i:02d}"))
    pages, token = [], None
    while True:
        page = client.list(CONFIGMAPS, "default", limit=10, continue_token=token)
        pages.append([o["metadata"]["name"] for o in page["items"]])
        token = page["metadata"].get("continue")
        if not token:
            break
    assert [len(p) for p in pages] == [10, 10, 5]
    assert [name for p in pages for name in p] == [f"c{i:02d}" for i in range(25)]

    pager = make_client(apiserver.url, program="pager")  # its own user agent: its requests alone are counted
    everything = pager.list_all(CONFIGMAPS, "default", page_size=7)
    assert [o["metadata"]["name"] for o in everything["items"]] == [f"c{i:02d}" for i in range(25)]
    assert everything["metadata"]["resourceVersion"] == page["metadata"]["resourceVersion"]
    wait_for(lambda: len(apiserver.audit.records(verb="list", resource="configmaps", user_agent="pager/")) == 4,
             what="4 list requests")


def test_list_all_falls_back_to_a_full_list_when_its_snapshot_expires(apiserver, client):
    for i in range(6):
        client.create(CONFIGMAPS, configmap(f"c{i}"))
    expired_once = []

    def expire_snapshot_before_second_page(ex):
        if ex.info.verb == "list" and ex.query.get("continue") and not expired_once:
            expired_once.append(True)
            apiserver.create(configmap("meanwhile"))  # a write after the snapshot, then history is forgotten
            apiserver.store.compact()

    apiserver.router.interceptors.append(expire_snapshot_before_second_page)
    try:
        result = client.list_all(CONFIGMAPS, "default", page_size=4)
    finally:
        apiserver.router.interceptors.remove(expire_snapshot_before_second_page)
    assert expired_once
    assert sorted(o["metadata"]["name"] for o in result["items"]) == sorted([f"c{i}" for i in range(6)]
                                                                           + ["meanwhile"])
    wait_for(lambda: [r.code for r in apiserver.audit.records(verb="list", resource="configmaps")] == [200, 410, 200],
             what="a page, the expired page, then one full list")


@pytest.mark.parametrize(("failures", "retries", "ok"), [(2, 2, True), (3, 2, False), (1, 0, False)])
def test_list_all_asks_again_for_a_later_page_that_failed(apiserver, client, failures, retries, ok):
    """A later page answered 500 is asked again with its continue token (up to ``page_retries`` times), not the
    whole list; the first page is never retried here (its caller's back-off covers it)."""
    for i in range(6):
        client.create(CONFIGMAPS, configmap(f"c{i}"))
    continued = []

    def fail_continued_pages(ex):
        if ex.info.verb == "list" and ex.query.get("continue"):
            continued.append(ex.query["continue"])
            if len(continued) <= failures:
                raise errors.internal("injected: page lost")

    apiserver.router.interceptors.append(fail_continued_pages)
    try:
        if ok:
            result = client.list_all(CONFIGMAPS, "default", page_size=4, page_retries=retries)
            assert sorted(o["metadata"]["name"] for o in result["items"]) == [f"c{i}" for i in range(6)]
        else:
            with pytest.raises(ServerError):
                client.list_all(CONFIGMAPS, "default", page_size=4, page_retries=retries)
    finally:
        apiserver.router.interceptors.remove(fail_continued_pages)
    assert len(continued) == (failures + 1 if ok else retries + 1)
    assert len(set(continued)) == 1, "the same page (continue token) was asked for again"
    wait_for(lambda: sum(r.code == 200 for r in apiserver.audit.records(verb="list", resource="configmaps"))
             == (2 if ok else 1), what="the first page once, and the second once it was answered")


# --- watch ----------------------------------------------------------------------------------------------

def test_watch_streams_events_in_order_and_resumes_from_a_version(client):
    start = client.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"]
    client.create(CONFIGMAPS, configmap("c1"))
    client.patch(CONFIGMAPS, "c1", {"data": {"k": "v"}}, "default")
    client.delete(CONFIGMAPS, "c1", "default")
    with client.watch(CONFIGMAPS, "default", resource_version=start, timeout_seconds=5) as stream:
        events = []
        for event in stream:
            events.append(event)
            if len(events) == 3:
                break
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(start)

    with client.watch(CONFIGMAPS, "default", resource_version=events[0]["object"]["metadata"]["resourceVersion"],
                      timeout_seconds=5) as stream:
        resumed = [next(iter(stream))["type"]]
    assert resumed == ["MODIFIED"]


def test_watch_bookmarks_server_timeout_and_close_from_another_thread(client):
    rv = client.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"]
    with client.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=1,
                      allow_bookmarks=True) as stream:
        types = {e["type"] for e in stream}   # ends by itself after the server-side timeout
    assert types == {"BOOKMARK"}

    stream = client.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=60)
    got: list = []
    reader = threading.Thread(target=lambda: got.extend(stream), name="test-watch-reader")
    reader.start()
    time.sleep(0.1)
    started = time.monotonic()
    stream.close()
    reader.join(5)
    assert not reader.is_alive() and time.monotonic() - started < 1.0
    assert got == []


def test_watch_read_timeout(client):
    rv = client.list(CONFIGMAPS, "default")["metadata"]["resourceVersion"]
    with pytest.raises(ReadTimeout), client.watch(CONFIGMAPS, "default", resource_version=rv, timeout_seconds=30,
                                                  read_timeout=0.3) as stream:
        list(stream)


# --- rate limiting --------------------------------------------------------------------------------------

def test_client_rate_is_bounded_by_qps_and_burst(apiserver):
    limited = make_client(apiserver.url, qps=20, burst=5)
    apiserver.audit.clear()
    started = time.monotonic()

    def five_lists() -> None:
        for _ in range(5):
            limited.list(CONFIGMAPS, "default")

    workers = [threading.Thread(target=five_lists, name=f"test-rate-{i}") for i in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    elapsed = time.monotonic() - started
    assert elapsed >= (15 - 5) / 20 - 0.05        # 15 requests, 5 free, then 20 per second
    wait_for(lambda: len(apiserver.audit.records(verb="list", resource="configmaps")) == 15, what="15 records")
    times = sorted(r.time for r in apiserver.audit.records(verb="list", resource="configmaps"))
    # No window ever holds more than burst + qps * its length. Times are of arrival at the server, where a loaded
    # machine may bunch requests the client spaced out: 0.1 s of slack for that.
    for i, t in enumerate(times):
        for j in range(i + 1, len(times)):
            assert j - i + 1 <= 5 + 20 * (times[j] - t + 0.1) + 1


def test_a_rate_limit_wait_past_the_deadline_sends_nothing(apiserver):
    slow = make_client(apiserver.url, qps=0.5, burst=1)
    slow.list(CONFIGMAPS, "default")              # the burst
    started = time.monotonic()
    with pytest.raises(RateLimitTimeout):
        slow.list(CONFIGMAPS, "default", deadline=0.5)   # the next token is 2 s away
    assert time.monotonic() - started < 0.3       # refused at once, not after waiting
    wait_for(lambda: apiserver.audit.records(verb="list", resource="configmaps"), what="the first list's record")
    assert len(apiserver.audit.records(verb="list", resource="configmaps")) == 1


def test_a_rate_limit_wait_ends_on_cancel_and_on_close(apiserver):
    slow = make_client(apiserver.url, qps=0.2, burst=1)
    slow.list(CONFIGMAPS, "default")              # the burst
    cancel = threading.Event()
    waiting, outcome = in_thread("test-token-wait", lambda: slow.list(CONFIGMAPS, "default", cancel=cancel))
    time.sleep(0.1)
    cancel.set()
    waiting.join(2)
    assert not waiting.is_alive() and isinstance(outcome[0], Cancelled)

    waiting, outcome = in_thread("test-token-wait-close", lambda: slow.list(CONFIGMAPS, "default"))
    time.sleep(0.1)
    slow.close()                                  # no cancel given: the client's close ends the wait
    waiting.join(2)
    assert not waiting.is_alive() and isinstance(outcome[0], Cancelled)
    with pytest.raises(Cancelled, match="closed"):
        slow.list(CONFIGMAPS, "default")          # a closed client sends nothing


def test_an_attempt_whose_cancel_is_set_by_the_time_its_token_is_granted_sends_nothing(apiserver):
    """Issue 48: a caller that cancels (a create whose job was deleted) sends nothing after that moment, even when
    no wait was left to interrupt: with a token at hand, and with no rate limit at all (the same check follows a
    retry's wait). The token such an attempt took goes back to the bucket."""
    cancel = threading.Event()
    cancel.set()
    limited = make_client(apiserver.url, qps=0.01, burst=2)
    unlimited = make_client(apiserver.url)
    for client in (limited, unlimited):
        with pytest.raises(Cancelled):
            client.create(CONFIGMAPS, configmap("never"), cancel=cancel)
    assert limited.rate_limiter is not None
    limited.create(CONFIGMAPS, configmap("c1"), deadline=5)
    limited.create(CONFIGMAPS, configmap("c2"), deadline=5)   # the burst of 2 whole: the token came back (else the
                                                              # next one is 100 s away: RateLimitTimeout at once)
    wait_for(lambda: len(apiserver.audit.records(verb="create", resource="configmaps")) == 2,
             what="the two creates audited")
    assert [r.code for r in apiserver.audit.records(verb="create", resource="configmaps")] == [201, 201]


# --- identity -------------------------------------------------------------------------------------------

def test_user_agent_names_the_program_given_and_the_component(apiserver, monkeypatch):
    named = Client(ClientConfig(host=apiserver.url, qps=-1), component="job-controller", program="my-operator",
                   version="1.2.3")
    named.list(CONFIGMAPS, "default")
    agents = {r.user_agent for r in wait_for(lambda: apiserver.audit.records(verb="list", resource="configmaps"))}
    assert agents == {user_agent("job-controller", "my-operator", "1.2.3")}
    assert re.fullmatch(r"my-operator/1\.2\.3 \([a-z]+/\w+\) job-controller", agents.pop())
    # Without a name, client-go's defaults: the running program (pytest here, as `python -m pytest` starts it: a
    # pytest-xdist worker is started by `python -c`, which names none) and version "unknown".
    monkeypatch.setattr(sys.modules["__main__"], "__spec__", importlib.machinery.ModuleSpec("pytest.__main__", None),
                        raising=False)
    assert user_agent("x") == user_agent("x", default_program(), "unknown")
    assert user_agent().startswith("pytest/unknown (") and user_agent("x").endswith(") x")
