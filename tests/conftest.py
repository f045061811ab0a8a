"""Shared fixtures: an embedded API server per test, reached over HTTP by the official client and kubectl.

A test marked ``as_service_account`` runs twice (ids ``admin`` and ``as-service-account``): as every test runs, and on
a server with TLS, authentication and RBAC enforced, where the harness applies the shipped RBAC
(``manifests/install``, or the marker's ``install=`` directory) and starts its controllers as the ``mxjob-controller``
ServiceAccount with in-cluster configuration (token, ``ca.crt``, namespace files). The test's own client and kubectl
are the cluster's administrator either way.

Every test that starts no process and no embedded API server is marked ``unit`` at collection (``make test-unit``,
the inner loop): one not marked ``slow`` or ``integration`` whose fixtures (all of them, however deep) include none of
``SERVER_FIXTURES``. The mark is checked, not trusted: a ``unit`` test that starts an API server or a process fails
(in every run, ``make test`` included), so a test that does either must say so with ``integration`` (or ``slow``).
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from tests.manifests import INSTALL_NAMESPACE
from tests.reconciler_support import CONTROLLER_AGENT, SERVICE_ACCOUNT, Harness
from tests.support import Kube, Kubectl

ADMIN, AS_SERVICE_ACCOUNT = "admin", "as-service-account"
#: Fixtures that stand up the embedded API server (directly or through the harness): a test using one is no unit test.
SERVER_FIXTURES = frozenset({"apiserver", "server_options", "kube", "kubeconfig", "kubectl", "h"})


def is_unit(item: pytest.Item) -> bool:
    return not (item.get_closest_marker("slow") or item.get_closest_marker("integration")
                or SERVER_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks the unit tests (see the module's docstring). On xdist workers, the tests that start processes first,
    then the rest (a stable sort, the same on every worker): a long test handed out last would leave the other
    workers idle at the end. The serial groups
    (``xdist_group``) need nothing here: ``--dist loadgroup`` hands out the scopes with the most tests first
    (xdist's ``--loadscope-reorder``, on by default), so the groups start before any single test, the largest first."""
    for item in items:
        if is_unit(item):
            item.add_marker(pytest.mark.unit)
    if getattr(config, "workerinput", None) is not None:
        items.sort(key=lambda item: 0 if item.get_closest_marker("slow") else 1)


class UnitTestEscapeError(AssertionError):
    """A test marked ``unit`` started an API server or a process, or uses a fixture that did."""


class _Starts:
    """Counts the embedded API servers and processes this test process starts, refusing them while a unit test is
    set up or runs, and remembers the fixtures that started one: a unit test using such a fixture fails even when
    another test built it first (so the verdict does not depend on the order tests run in)."""

    count = 0
    unit: pytest.Item | None = None
    by_fixtures: set[object] = set()

    @classmethod
    def wrap(cls, owner: type, name: str, what: str) -> None:
        original = getattr(owner, name)

        def counted(*args: object, **kwargs: object) -> object:
            if cls.unit is not None:
                raise UnitTestEscapeError(f"{cls.unit.nodeid} is marked unit (no server fixture) but starts {what}: "
                                          "mark it integration (or slow)")
            cls.count += 1
            return original(*args, **kwargs)

        setattr(owner, name, counted)


_Starts.wrap(APIServer, "start", "the embedded API server")
_Starts.wrap(subprocess.Popen, "__init__", "a process")


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> Iterator[object]:
    before = _Starts.count
    try:
        return (yield)
    finally:
        if _Starts.count != before:
            _Starts.by_fixtures.add(fixturedef)


@contextlib.contextmanager
def _as_unit(item: pytest.Item) -> Iterator[None]:
    _Starts.unit = item if item.get_closest_marker("unit") is not None else None
    try:
        yield
    finally:
        _Starts.unit = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    with _as_unit(item):
        result = yield
    if item.get_closest_marker("unit") is not None:
        definitions = getattr(item, "_fixtureinfo", None)
        used = [name for name, defs in (definitions.name2fixturedefs.items() if definitions else ())
                if any(d in _Starts.by_fixtures for d in defs)]
        if used:
            raise UnitTestEscapeError(f"{item.nodeid} is marked unit but uses {', '.join(sorted(used))}, which "
                                      "started the embedded API server or a process: mark it integration (or slow)")
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    with _as_unit(item):
        return (yield)


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
