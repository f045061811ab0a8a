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
