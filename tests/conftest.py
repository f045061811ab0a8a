"""Shared fixtures: an embedded API server per test, reached over HTTP by the official client and kubectl."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver import APIServer, ServerOptions
from tests.reconciler_support import Harness
from tests.support import Kube, Kubectl


@pytest.fixture
def server_options() -> ServerOptions:
    """Override in a test module to start the server with other options (history size, bookmarks...)."""
    return ServerOptions(bookmark_interval=0.2)


@pytest.fixture
def apiserver(server_options: ServerOptions) -> Iterator[APIServer]:
    server = APIServer(server_options).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def kubeconfig(apiserver: APIServer, tmp_path: Path) -> Path:
    return apiserver.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def kube(apiserver: APIServer) -> Iterator[Kube]:
    k = Kube(apiserver.url)
    try:
        yield k
    finally:
        k.close()


@pytest.fixture
def kubectl(kubeconfig: Path, tmp_path: Path) -> Kubectl:
    return Kubectl(kubeconfig, tmp_path / "kubectl-cache")


@pytest.fixture
def h(apiserver: APIServer, kube: Kube, tmp_path: Path) -> Iterator[Harness]:
    """The reconciler tests' harness: the MXJob CRD served, controllers started on demand and stopped after."""
    with Harness(apiserver, kube, tmp_path) as harness:
        yield harness
