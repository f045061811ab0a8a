"""What the store keeps, and for how long: watch history bounded by the bytes it keeps alive across kinds (oldest
events first, whatever their kind) and pruned by age on a timer even when no later event comes (a deleted object's
old versions go with it), a resume from before what is kept is 410 ``Expired`` over HTTP, and ``/metrics`` reports
the bytes (``apiserver_resource_size_estimate_bytes``, ``apiserver_storage_history_size_bytes``,
``apiserver_storage_size_bytes``)."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Iterator

import pytest

from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from mxjob_controller.local.apiserver.storage.memory import release_free_memory
from mxjob_controller.local.apiserver.storage.watch import DELETED, MODIFIED, Entry, Event, History, event_bytes
from tests.support import Kube, configmap, wait_for

CMS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
VALUE = 50_000   # characters of each version's data


@contextlib.contextmanager
def started(**options: float) -> Iterator[tuple[APIServer, Kube]]:
    server = APIServer(ServerOptions(bookmark_interval=0.2, **options)).start()   # type: ignore[arg-type]
    kube = Kube.of(server)
    try:
        yield server, kube
    finally:
        kube.close()
        server.stop()


def big(name: str, fill: str) -> dict:
    obj = configmap(name)
    obj["data"] = {"blob": fill * VALUE}
    return obj


def metric(kube: Kube, name: str, **labels: str) -> int:
    text = kube.request("GET", "/metrics", accept="text/plain").body
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    found = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (-?\d+)$", text, re.M)
    assert found, f"{name}{{{wanted}}} not in /metrics"
    return int(found.group(1))


def watch_from(kube: Kube, path: str, rv: str) -> list[dict]:
    return list(kube.watch(path, timeout=10, resourceVersion=rv, timeoutSeconds=1))


def expired(events: list[dict]) -> bool:
    return bool(events) and events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410 and \
        events[0]["object"]["reason"] == "Expired"


def test_what_an_event_keeps_alive_is_counted_once():
    first, second = Entry({"v": 1}, 1, b"x" * 10), Entry({"v": 2}, 2, b"y" * 30)
    final = Entry({"v": 2}, 3, b"z" * 31)
    history = History(max_events=10, max_age=0)
    history.append(Event(MODIFIED, 2, second, first, 0.0))
    assert history.bytes == 10, "the replaced version; the new one is current (counted with the objects)"
    history.append(Event(DELETED, 3, final, second, 0.0))
    assert event_bytes(history.events[-1]) == 61 and history.bytes == 71, "a deletion: the last version and the end"
    history.drop_oldest()
    assert (history.bytes, history.compacted_rv) == (61, 2)


@pytest.mark.integration
def test_the_history_is_bounded_by_bytes_across_kinds_oldest_first():
    bound = 6 * VALUE
    with started(history_bytes=bound) as (server, kube):
        assert kube.post(SECRETS, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}).status == 201
        secret_rv = kube.get(f"{SECRETS}/s").body["metadata"]["resourceVersion"]
        created = kube.post(CMS, big("big", "a")).body["metadata"]["resourceVersion"]
        for i in range(12):
            assert kube.patch(f"{CMS}/big", {"data": {"blob": "bcdefghijklmn"[i] * VALUE}}).status == 200
        kept = server.store.footprint()["/configmaps"][1]
        assert VALUE * 4 <= kept <= bound, "the bound holds, and keeps what fits"
        assert metric(kube, "apiserver_storage_history_size_bytes", group="", resource="configmaps") == kept
        assert expired(watch_from(kube, CMS, created)), "the oldest versions went"
        assert expired(watch_from(kube, SECRETS, str(int(secret_rv) - 1))), "older than them, another kind's went first"
        recent = kube.get(f"{CMS}/big").body["metadata"]["resourceVersion"]
        assert kube.patch(f"{CMS}/big", {"data": {"blob": "z"}}).status == 200
        resumed = watch_from(kube, CMS, str(int(recent) - 1))
        assert [e["type"] for e in resumed][:2] == ["MODIFIED", "MODIFIED"], "what is kept still resumes"


@pytest.mark.integration
def test_a_quiet_kind_s_history_is_pruned_on_a_timer_and_a_deleted_object_s_goes_with_it():
    with started(history_age=1.0) as (server, kube):
        # The baseline once the server's own start-up writes have settled (each namespace's ServiceAccount and
        # ConfigMap come from its controllers a moment after start): read before, those writes landed after it.
        assert server.wait_idle()
        baseline = metric(kube, "apiserver_storage_size_bytes", storage_cluster_id="embedded")
        created = kube.post(CMS, big("big", "a")).body["metadata"]["resourceVersion"]
        for fill in "bcd":
            assert kube.patch(f"{CMS}/big", {"data": {"blob": fill * VALUE}}).status == 200
        assert metric(kube, "apiserver_resource_size_estimate_bytes", group="", resource="configmaps") == \
            len(json.dumps(kube.get(f"{CMS}/big").body, separators=(",", ":")))
        assert kube.delete(f"{CMS}/big").status == 200
        assert metric(kube, "apiserver_resource_size_estimate_bytes", group="", resource="configmaps") == 0
        assert metric(kube, "apiserver_storage_history_size_bytes", group="", resource="configmaps") > 4 * VALUE
        # No later configmap event comes: the timer alone prunes what is older than a second.
        wait_for(lambda: server.store.footprint()["/configmaps"] == (0, 0), timeout=15)
        assert metric(kube, "apiserver_storage_history_size_bytes", group="", resource="configmaps") == 0
        assert metric(kube, "apiserver_storage_size_bytes", storage_cluster_id="embedded") <= baseline
        assert expired(watch_from(kube, CMS, created))


def pruners() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "apiserver-history-pruner"]


@pytest.mark.integration
def test_the_pruner_runs_with_its_server_and_hands_free_memory_back():
    before = len(pruners())
    with started():
        assert len(pruners()) == before + 1
    assert len(pruners()) == before, "stopped with the server"
    assert release_free_memory() is True, "this machine's Python runs on glibc: malloc_trim is there"
