"""Stopping the embedded API server: bounded by its timeout, requests in progress may finish, and every
connection thread is joined (or named, when one would not end in time)."""

from __future__ import annotations

import threading
import time

from tests.support import Kube, configmap, wait_for

CMS = "/api/v1/namespaces/default/configmaps"


def _slow_writes(apiserver, name: str, hold: threading.Event, hold_for: float):
    """Hold every write of configmap ``name`` inside the server (while its schema is checked) until ``hold`` is
    set or ``hold_for`` seconds pass: a request in progress when the server is told to stop."""
    check = apiserver.rest.schema_validator
    entered, finished = threading.Event(), threading.Event()

    def slow_check(rt, obj, ctx):
        if rt.plural == "configmaps" and (obj.get("metadata") or {}).get("name") == name:
            entered.set()
            hold.wait(hold_for)
            finished.set()
        return check(rt, obj, ctx)

    apiserver.rest.schema_validator = slow_check
    return entered, finished


def _post_in_background(apiserver, body: dict) -> tuple[threading.Thread, list]:
    replies: list = []

    def post() -> None:
        client = Kube(apiserver.url)
        try:
            replies.append(client.post(CMS, body))
        except Exception as e:  # the connection may be cut: record it, the test decides
            replies.append(e)
        finally:
            client.close()

    t = threading.Thread(target=post, name="test-slow-post")
    t.start()
    return t, replies


def test_stop_lets_a_request_in_progress_finish_and_joins_its_thread(apiserver):
    entered, finished = _slow_writes(apiserver, "slow", threading.Event(), hold_for=1.0)
    client, replies = _post_in_background(apiserver, configmap("slow"))
    assert entered.wait(10)
    stopped = apiserver.stop(timeout=10)
    assert finished.is_set(), "stop() returned while a request was still being handled"
    assert stopped is True
    client.join(10)
    assert replies and getattr(replies[0], "status", None) == 201, replies
    assert replies[0].headers.get("connection") == "close"


def test_stop_is_bounded_when_a_request_never_ends(apiserver, caplog):
    release = threading.Event()
    entered, _ = _slow_writes(apiserver, "stuck", release, hold_for=60.0)
    client, _ = _post_in_background(apiserver, configmap("stuck"))
    try:
        assert entered.wait(10)
        started = time.monotonic()
        with caplog.at_level("WARNING", logger="mxjob_controller.local.apiserver.server"):
            stopped = apiserver.stop(timeout=1.0)
        assert time.monotonic() - started < 3.0
        assert "apiserver-conn-" in caplog.text, "the thread left running is named"
        assert stopped is False
    finally:
        release.set()
        client.join(10)


def test_stop_ends_idle_keep_alives_and_watches_at_once(apiserver, kube):
    assert kube.post(CMS, configmap("a")).status == 201  # leaves a keep-alive connection open
    events: list = []
    watch = threading.Thread(target=lambda: events.extend(kube.watch(CMS, timeout=30, timeoutSeconds=600)),
                             name="test-watch")
    watch.start()
    wait_for(lambda: apiserver.store.watchers("/configmaps"), what="the watch to be registered")
    started = time.monotonic()
    assert apiserver.stop(timeout=10) is True
    assert time.monotonic() - started < 2.0
    watch.join(10)
    assert not watch.is_alive()
