"""The layers, checked on the source (every import statement, lazy ones inside functions included): the generic
job-controller core imports no framework, no framework's API and nothing above it; the frameworks do not import
each other; ``kubeflow_api/``, what every Kubeflow kind shares, imports no framework and nothing above them; and
every framework has the same shape (its API, CRD, wiring, status rules and adapter in modules of the same names)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mxjob_controller"


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports (absolute names; relative imports resolved against its package)."""
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def offending(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        bad = sorted(m for m in imports_of(path) if any(m == f or m.startswith(f + ".") for f in forbidden))
        if bad:
            out[str(path.relative_to(PACKAGE))] = bad
    return out


FRAMEWORKS = ("mxjob_controller.mxnet", "mxjob_controller.tensorflow", "mxjob_controller.generic",
              "mxjob_controller.frameworks")
ABOVE_CORE = ("mxjob_controller.kubeflow_api", "mxjob_controller.manager", "mxjob_controller.local",
              "mxjob_controller.cli")
ABOVE_FRAMEWORKS = ("mxjob_controller.webhooks", "mxjob_controller.manager", "mxjob_controller.local",
                    "mxjob_controller.cli")
#: The modules every framework package has, so a reader finds the same thing in the same place in each.
FRAMEWORK_MODULES = ("api.py", "crd.py", "wiring.py", "status_rules.py", "framework.py")


@pytest.mark.parametrize(("folder", "forbidden"), [
    ("core", FRAMEWORKS + ABOVE_CORE),
    ("mxnet", ("mxjob_controller.tensorflow", "mxjob_controller.generic", "mxjob_controller.frameworks")),
    ("tensorflow", ("mxjob_controller.mxnet", "mxjob_controller.generic", "mxjob_controller.frameworks")),
    ("generic", ("mxjob_controller.mxnet", "mxjob_controller.tensorflow", "mxjob_controller.frameworks",
                 "mxjob_controller.manager", "mxjob_controller.local", "mxjob_controller.cli")),
    ("kubeflow_api", FRAMEWORKS + ABOVE_FRAMEWORKS),
    ("runtime", FRAMEWORKS + ABOVE_CORE + ("mxjob_controller.core",)),
])
def test_layer_imports(folder: str, forbidden: tuple[str, ...]) -> None:
    assert offending(folder, forbidden) == {}


@pytest.mark.parametrize("framework", ["mxnet", "tensorflow", "generic"])
def test_every_framework_has_the_same_shape(framework: str) -> None:
    assert [m for m in FRAMEWORK_MODULES if not (PACKAGE / framework / m).is_file()] == []


def test_the_old_api_package_is_gone() -> None:
    """MXJob's API lives in ``mxnet/``, the shared part in ``kubeflow_api/``: no third place to look."""
    assert list((PACKAGE / "api").glob("**/*.py")) == []


def test_the_check_sees_imports_of_every_form(tmp_path: Path) -> None:
    """The checker is not vacuous: plain, from, relative and function-level imports are all found."""
    module = PACKAGE / "core" / "_layering_probe.py"
    assert not module.exists()
    source = ("import mxjob_controller.mxnet.wiring\n"
              "from ..tensorflow import api\n"
              "def f():\n    from mxjob_controller.kubeflow_api.view import identity\n")
    module.write_text(source)
    try:
        found = imports_of(module)
        assert {"mxjob_controller.mxnet.wiring", "mxjob_controller.tensorflow.api",
                "mxjob_controller.kubeflow_api.view.identity"} <= found
        assert "core/_layering_probe.py" in offending("core", FRAMEWORKS + ABOVE_CORE)
    finally:
        module.unlink()


def module_of(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module → the package modules it imports, each statement resolved to the module it names: ``from a import b``
    is an edge to ``a.b`` where that is a module (a sibling import, not a dependency on ``a``'s ``__init__``), else to
    ``a``, whose attribute ``b`` is taken."""
    modules = {module_of(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{parent}.{base}" if base else parent
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_through_others() -> None:
    """No import circle anywhere in the package: every statement counts, lazy and TYPE_CHECKING ones included,
    because a circle is a design fact (two modules that cannot be read apart) before it is a run-time one."""
    assert circles(import_graph()) == []


def test_the_circle_check_finds_a_circle() -> None:
    """The checker is not vacuous: a two-module loop and a three-module loop are both reported."""
    graph = {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c", "a"}, "f": set()}
    assert sorted(circles(graph)) == [["a", "b"], ["c", "d", "e"]]
