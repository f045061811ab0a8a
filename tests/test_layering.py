"""The layers, checked on the source (every import statement, lazy ones inside functions included): the generic
job-controller core imports no framework, no framework's API and nothing above it; the frameworks do not import
each other; ``kubeflow_api/``, what every Kubeflow kind shares, imports no framework and nothing above them; and
every framework has the same shape (its API, CRD, wiring, status rules and adapter in modules of the same names)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mxjob_controller"


def imports_of(path: Path, root: Path = PACKAGE) -> set[str]:
    """Every module ``path`` (a file of the package at ``root``) imports (absolute names; relative imports resolved
    against its package)."""
    tree = ast.parse(path.read_text(), str(path))
    package = ".".join(path.relative_to(root.parent).with_suffix("").parts[:-1])
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


def offending(folder: str, forbidden: tuple[str, ...], root: Path = PACKAGE) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted((root / folder).rglob("*.py")):
        bad = sorted(m for m in imports_of(path, root) if any(m == f or m.startswith(f + ".") for f in forbidden))
        if bad:
            out[str(path.relative_to(root))] = bad
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
    """The checker is not vacuous: plain, from, relative and function-level imports are all found. The probe is
    planted in a package of its own under ``tmp_path``, never in the real one, which other tests read at the same
    time on other workers."""
    root = tmp_path / "mxjob_controller"
    module = root / "core" / "_layering_probe.py"
    module.parent.mkdir(parents=True)
    module.write_text("import mxjob_controller.mxnet.wiring\n"
                      "from ..tensorflow import api\n"
                      "def f():\n    from mxjob_controller.kubeflow_api.view import identity\n")
    found = imports_of(module, root)
    assert {"mxjob_controller.mxnet.wiring", "mxjob_controller.tensorflow.api",
            "mxjob_controller.kubeflow_api.view.identity"} <= found
    assert "core/_layering_probe.py" in offending("core", FRAMEWORKS + ABOVE_CORE, root)


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


# --- one definition per constant ----------------------------------------------------------------------------


def constant_definitions(root: Path) -> dict[tuple[str, str], set[str]]:
    """(UPPER_CASE name, repr of its literal) → the modules under ``root`` that assign it at module level, whether
    alone (``A = 1``), annotated (``A: int = 1``) or unpacked (``A, B = 1, 2``)."""
    found: dict[tuple[str, str], set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            for target in targets:
                if isinstance(target, ast.Name):
                    pairs = [(target, value)]
                elif isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple):
                    pairs = list(zip(target.elts, value.elts, strict=False))
                else:
                    continue
                for name, literal in pairs:
                    if isinstance(name, ast.Name) and name.id.isupper() and isinstance(literal, ast.Constant):
                        found.setdefault((name.id, repr(literal.value)), set()).add(
                            path.relative_to(root).as_posix())
    return found


def duplicated_constants(root: Path) -> dict[tuple[str, str], set[str]]:
    return {key: modules for key, modules in constant_definitions(root).items() if len(modules) > 1}


# Separate vocabularies that merely share a name and a string: each module's constant means something else.
SEPARATE_VOCABULARIES: dict[tuple[str, str], set[str]] = {
    # a strategic-merge-patch directive ($patch: delete) vs an informer's notification kind
    ("DELETE", "'delete'"): {"local/apiserver/strategic_merge.py", "runtime/informer_listener.py"},
    # Kubeflow job condition types vs T9k GenericJob condition types: two APIs' enums
    ("FAILED", "'Failed'"): {"core/job_vocabulary.py", "generic/status.py"},
    ("RUNNING", "'Running'"): {"core/job_vocabulary.py", "generic/status.py"},
    # GenericJob status phases vs MXJob v1alpha1 phases vs Volcano PodGroup phases: three APIs' enums
    ("PHASE_FAILED", "'Failed'"): {"generic/status.py", "mxnet/v1alpha1/vocabulary.py"},
    ("PHASE_PENDING", "'Pending'"): {"core/podgroups.py", "generic/status.py"},
    ("PHASE_RUNNING", "'Running'"): {"core/podgroups.py", "generic/status.py", "mxnet/v1alpha1/vocabulary.py"},
    # each framework's replica type; frameworks may not import each other
    ("WORKER", "'Worker'"): {"mxnet/api.py", "tensorflow/api.py"},
    # each thread's own stop budget, tuned on its own
    ("_JOIN_TIMEOUT", "5.0"): {"runtime/endpoints.py", "runtime/lease_watch.py"},
}


def test_no_two_modules_define_the_same_constant() -> None:
    """A constant shared by two modules is defined once, in the lowest layer both may import (issue 31)."""
    assert duplicated_constants(PACKAGE) == SEPARATE_VOCABULARIES


def test_the_constant_check_finds_a_planted_duplicate(tmp_path: Path) -> None:
    """The checker is not vacuous: plain, annotated and unpacked assignments are all found; lower case and
    non-literal values are not constants."""
    (tmp_path / "a.py").write_text('READY = "Ready"\nlimit = 3\nLIMIT = 3\nTIMEOUT: float = 2.0\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text('GO, READY = "Go", "Ready"\nlimit = 3\nLIMIT = 1 + 2\nTIMEOUT = 2.0\n')
    assert duplicated_constants(tmp_path) == {("READY", "'Ready'"): {"a.py", "sub/b.py"},
                                              ("TIMEOUT", "2.0"): {"a.py", "sub/b.py"}}
