"""Shared fixtures: an embedded API server per test, reached over HTTP by the official client and kubectl.

A test marked ``as_service_account`` runs twice (ids ``admin`` and ``as-service-account``): as every test runs, and on
a server with TLS, authentication and RBAC enforced, where the harness applies the shipped RBAC
(``manifests/install``, or the marker's ``install=`` directory) and starts its controllers as the ``mxjob-controller``
ServiceAccount with in-cluster configuration (token, ``ca.crt``, namespace files). The test's own client and kubectl
are the cluster's administrator either way.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.manifests import INSTALL_NAMESPACE
from tests.reconciler_support import CONTROLLER_AGENT, SERVICE_ACCOUNT, Harness
from tests.support import Kube, Kubectl

ADMIN, AS_SERVICE_ACCOUNT = "admin", "as-service-account"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On xdist workers, the tests that start processes first, then the rest (a stable sort, the same on every
    worker): a long test handed out last would leave the other workers idle at the end. The serial groups
    (``xdist_group``) need nothing here: ``--dist loadgroup`` hands out the scopes with the most tests first
    (xdist's ``--loadscope-reorder``, on by default), so the groups start before any single test, the largest first."""
    if getattr(config, "workerinput", None) is not None:
        items.sort(key=lambda item: 0 if item.get_closest_marker("slow") else 1)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("as_service_account"):
        if "security" not in metafunc.fixturenames:   # a module's own server_options: the marker would do nothing
            raise pytest.UsageError(f"{metafunc.definition.nodeid} is marked as_service_account but its server "
                                    "does not come from the shared server_options fixture")
        metafunc.parametrize("security", [ADMIN, AS_SERVICE_ACCOUNT], indirect=True)


@pytest.fixture
def security(request: pytest.FixtureRequest) -> str:
    """Who the controller is: the administrator on a server that enforces nothing (the default), or, for tests
    marked ``as_service_account``, also its ServiceAccount under RBAC on a TLS server."""
    return getattr(request, "param", ADMIN)


@pytest.fixture
def server_options(security: str) -> ServerOptions:
    """Override in a test module to start the server with other options (history size, bookmarks...)."""
    return ServerOptions(bookmark_interval=0.2, tls=security == AS_SERVICE_ACCOUNT)


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
    k = Kube.of(apiserver)
    try:
        yield k
    finally:
        k.close()


@pytest.fixture
def kubectl(kubeconfig: Path, tmp_path: Path) -> Kubectl:
    return Kubectl(kubeconfig, tmp_path / "kubectl-cache")


@pytest.fixture
def h(apiserver: APIServer, kube: Kube, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Harness]:
    """The reconciler tests' harness: the MXJob CRD served, controllers started on demand and stopped after (as the
    ServiceAccount, under the shipped RBAC, when the server enforces RBAC)."""
    marker = request.node.get_closest_marker("as_service_account")
    install = (marker.kwargs.get("install") if marker else None) or "install"
    with Harness(apiserver, kube, tmp_path, rbac_install=install if apiserver.admin_token else None) as harness:
        yield harness
    if harness.service_account_dir is not None:   # the shipped RBAC covered everything the controller did
        made = apiserver.audit.records(user_agent=CONTROLLER_AGENT)
        assert made and {r.user for r in made} == {f"system:serviceaccount:{INSTALL_NAMESPACE}:{SERVICE_ACCOUNT}"}
        refused = [f"{r.code} {r.verb} {r.path}" for r in made if r.code in (401, 403)]
        assert not refused, "requests of the controller the shipped RBAC refused:\n" + "\n".join(refused)
