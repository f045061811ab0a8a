"""The manager in-process (``Manager.run`` on a thread, ``request_stop`` as a signal handler calls it) against the
embedded API server: a controller that fails to start leaves no thread behind, and a stop requested while the
controller waits for its caches ends the start at once (no worker is started, nothing outlives ``run``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.manager import controllers
from mxjob_controller.manager.controllers import ManagedController
from mxjob_controller.manager.process import Manager
from mxjob_controller.manager.settings import RunSettings
from mxjob_controller.mxnet.crd import mxjob_crd
from mxjob_controller.runtime.client import Client
from tests.support import Kube, wait_for

DEADLINE = 30.0
# Threads a controller (and the manager running it) starts; none may outlive run().
CONTROLLER_THREADS = ("controller-runner", "mxjob-controller", "informer-", "events-",
                      "workqueue-delay:mxjob-controller")


@pytest.fixture
def kube_with_crd(apiserver: APIServer, kube: Kube) -> Kube:
    apiserver.create(mxjob_crd())
    wait_for(lambda: kube.get("/apis/kubeflow.org/v1/namespaces/default/mxjobs").ok, timeout=DEADLINE,
             what="the MXJob API served")
    return kube


class Run:
    """``Manager.run`` on a thread, with the controllers its factory built."""

    def __init__(self, kubeconfig: Path, **settings: object) -> None:
        self.built: list[ManagedController] = []
        self.code: int | None = None
        self.before = set(threading.enumerate())
        self.manager = Manager(RunSettings(kubeconfig=str(kubeconfig), metrics_bind_address="127.0.0.1:0",
                                           health_probe_bind_address="127.0.0.1:0", **settings),  # type: ignore[arg-type]
                               controller_factory=self._factory)
        self.thread = threading.Thread(target=self._run, name="test-manager-run", daemon=True)

    def _factory(self, client: Client, settings: RunSettings, registry: CollectorRegistry) -> ManagedController:
        controller = controllers.new_controller(client, settings, registry)
        self.built.append(controller)
        return controller

    def _run(self) -> None:
        self.code = self.manager.run()

    def __enter__(self) -> Run:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.manager.request_stop()
        self.thread.join(DEADLINE)

    def leftover(self) -> list[str]:
        return sorted(t.name for t in threading.enumerate()
                      if t not in self.before and t.is_alive() and t.name.startswith(CONTROLLER_THREADS))


@pytest.fixture
def no_lingering_threads() -> Iterator[None]:
    before = set(threading.enumerate())
    yield
    # a failing test must not leave controllers running into the next one
    wait_for(lambda: not [t for t in threading.enumerate()
                          if t not in before and t.name.startswith(CONTROLLER_THREADS)],
             timeout=DEADLINE, what="controller threads gone")


def test_a_failed_start_leaves_no_thread(kube_with_crd: Kube, kubeconfig: Path, no_lingering_threads: None) -> None:
    """No PodGroup CRD with gang scheduling: the start fails, run() returns 1, and every thread the controller had
    already started (its work queue's timer included) is stopped."""
    with Run(kubeconfig, gang_scheduler_name="volcano") as run:
        run.thread.join(DEADLINE)
        assert run.code == 1
        assert len(run.built) == 1
        assert run.leftover() == []


def test_a_stop_during_the_cache_sync_ends_the_start_at_once(apiserver: APIServer, kube_with_crd: Kube,
                                                            kubeconfig: Path, no_lingering_threads: None) -> None:
    """The pod caches cannot sync (every pod list fails): start() waits (up to a minute). A stop request meanwhile
    ends that wait at once: run() returns 0 within a second or so, with no worker started and no thread left."""
    rule = apiserver.faults.add(FaultRule(verb="list", resource="pods", code=500))
    with Run(kubeconfig) as run:
        wait_for(lambda: run.built and rule.fired >= 2, timeout=DEADLINE, what="the controller waiting for its caches")
        assert run.thread.is_alive()
        stop_requested = time.monotonic()
        run.manager.request_stop()
        run.thread.join(DEADLINE)
        took = time.monotonic() - stop_requested
        assert run.code == 0
        assert took < 5.0, f"run() took {took:.1f}s after the stop request"   # was 7 s: the runner join timed out
        assert run.leftover() == []
        apiserver.faults.clear()    # the caches could sync now: still no worker may start
        [controller] = run.built
        assert controller.controller.stopping    # type: ignore[attr-defined]
        assert not [t for t in threading.enumerate()
                    if t not in run.before and t.name.startswith("mxjob-controller-worker")]


def test_caches_that_do_not_sync_within_the_flag_end_the_start_naming_them_and_the_flag(
        apiserver: APIServer, kube_with_crd: Kube, kubeconfig: Path, no_lingering_threads: None,
        caplog: pytest.LogCaptureFixture) -> None:
    """``--cache-sync-timeout`` (issue 35: it was a fixed 60 s): the pod caches cannot sync (every pod list fails);
    past the limit run() returns 1, the error names the caches not synced and the flag, and no thread is left."""
    apiserver.faults.add(FaultRule(verb="list", resource="pods", code=500))
    with caplog.at_level(logging.ERROR, logger="mxjob_controller.manager.process"), \
            Run(kubeconfig, frameworks=("mxnet",), cache_sync_timeout=1.0) as run:
        run.thread.join(DEADLINE)
        assert run.code == 1
        assert run.leftover() == []
    [error] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("exiting:")]
    assert "caches not synced within 1s: pods" in error, error
    assert "a longer --cache-sync-timeout (now 1s)" in error, error
