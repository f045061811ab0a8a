"""What the container image holds, proven without Docker: the Dockerfile's builder steps, done here.

The wheel is built from exactly the files the Dockerfile copies into its builder stage, less what ``.dockerignore``
leaves out of the build context (the embedded cluster), and installed alone into a virtualenv of its own
(dependencies from the package index, as ``pip install`` in the image gets them). From that install, as the image
runs it: ``mxjob-controller --version``, and the end-to-end run (``tests/e2e/scenario.py``) with that install's
``mxjob-controller run`` (the operator: controllers, webhooks, manager) against the checkout's ``local up``. The
install holds no ``mxjob_controller.local``, so the run proves the operator starts and works without it.

The virtualenv with the dependencies is cached under ``.mxjob-local/`` keyed by the dependency list and the Python
version (``tests/cached_builds.py``: rebuilding it costs most of this test, so ``make test`` builds it beside the
project's venv); the project's own wheel is always rebuilt and force-reinstalled into it, and ``pip check`` proves
that what the wheel declares it needs is what that virtualenv holds.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from mxjob_controller import __version__
from tests.cached_builds import pip, wheel_dependencies_venv
from tests.e2e.scenario import run_end_to_end
from tests.e2e.test_run import check
from tests.manifests import ROOT, find, render

# One xdist worker runs them: the wheel and its install are made once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]


def ignored(dockerignore: Path) -> list[str]:
    """The paths ``.dockerignore`` leaves out after letting its ``!`` paths through (``mxjob_controller/local/``)."""
    lines = [line.strip() for line in dockerignore.read_text().splitlines()]
    return [line.rstrip("/") for line in lines if line and not line.startswith(("#", "!", "*"))]


def builder_sources(dockerfile: Path) -> list[str]:
    """The paths the builder stage copies from the build context (``COPY a b ./`` → a, b)."""
    sources, stage = [], 0
    for line in dockerfile.read_text().splitlines():
        words = line.split()
        if words[:1] == ["FROM"]:
            stage += 1
        elif stage == 1 and words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            sources.extend(words[1:-1])
    return sources


@pytest.fixture(scope="session")   # once per run (or xdist worker), however the worker orders its tests
def wheel(tmp_path_factory) -> Path:
    context = tmp_path_factory.mktemp("docker-context")
    sources = builder_sources(ROOT / "Dockerfile")
    assert sources == ["pyproject.toml", "setup.cfg", "README.md", "mxjob_controller"]
    left_out = ignored(ROOT / ".dockerignore")
    assert left_out == ["mxjob_controller/local", "mxjob_controller/cli/local.py"]
    for source in sources:
        src, dst = ROOT / source, context / source
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(src, dst)
    for path in left_out:   # as the build context has it: Docker never sends these
        target = context / path
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    dist = tmp_path_factory.mktemp("dist")
    pip(Path(sys.executable), "wheel", "--no-deps", "--wheel-dir", str(dist), str(context))
    wheels = list(dist.glob("*.whl"))
    assert [w.name for w in wheels] == [f"mxjob_controller-{__version__}-py3-none-any.whl"]
    return wheels[0]


@pytest.fixture(scope="session")
def installed(wheel: Path) -> Path:
    """A virtualenv holding the wheel (forced in) and its dependencies (cached); its ``bin`` directory."""
    def put_the_wheel_in(python: Path) -> None:
        pip(python, "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel))
        pip(python, "check")   # every requirement the wheel declares is installed there, at a version it accepts

    return wheel_dependencies_venv(refresh=put_the_wheel_in)


def test_the_wheel_holds_the_package_and_its_data_only(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "mxjob_controller/data/crds/kubeflow.org_mxjobs.yaml" in names
    assert "mxjob_controller/data/crds/kubeflow.org_tfjobs.yaml" in names
    assert "mxjob_controller/data/crds.json" in names   # what the local cluster reads at start
    assert "mxjob_controller/cli/run.py" in names
    assert not [n for n in names if n.startswith(("tests/", "hack/", "manifests/")) or "__pycache__" in n]
    assert not [n for n in names if n.startswith(("mxjob_controller/local/", "mxjob_controller/cli/local.py"))]
    entry_points = zipfile.ZipFile(wheel).read(f"mxjob_controller-{__version__}.dist-info/entry_points.txt").decode()
    assert "mxjob-controller = mxjob_controller.cli:main" in entry_points


def test_the_install_runs_from_itself_not_from_the_checkout(installed, tmp_path):
    where = subprocess.run([str(installed / "python"), "-c", "import mxjob_controller as m; print(m.__file__)"],
                           capture_output=True, text=True, timeout=60, cwd=tmp_path, check=True).stdout.strip()
    assert where.startswith(str(installed.parent)) and not where.startswith(str(ROOT / "mxjob_controller"))
    for args in (["--version"], ["run", "--version"]):
        done = subprocess.run([str(installed / "mxjob-controller"), *args], capture_output=True, text=True,
                              timeout=60, cwd=tmp_path, check=False)
        assert (done.returncode, done.stdout) == (0, f"mxjob-controller, version {__version__}\n")


def test_the_install_has_no_embedded_cluster_and_says_so(installed, tmp_path):
    """``local`` in the image: a usage error naming what is left out, not a traceback; the operator's modules all
    import there (what ``run``, the webhook server and the manager load)."""
    done = subprocess.run([str(installed / "mxjob-controller"), "local", "up"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, check=False)
    assert done.returncode == 2 and "mxjob_controller.cli.local is left out" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    probe = ("import importlib.util, mxjob_controller.cli.run, mxjob_controller.webhooks.server, "
             "mxjob_controller.manager; print(importlib.util.find_spec('mxjob_controller.local'))")
    where = subprocess.run([str(installed / "python"), "-c", probe], capture_output=True, text=True, timeout=60,
                           cwd=tmp_path, check=True).stdout.strip()
    assert where == "None"


def test_end_to_end_from_the_install(installed, tmp_path):
    """The image's command, from the wheel's install alone (no embedded cluster in it), against the checkout's
    ``local up``: the whole end-to-end run, RBAC audit included."""
    check(run_end_to_end([str(installed / "mxjob-controller")], tmp_path,
                         cluster_cli=[sys.executable, "-m", "mxjob_controller"]))


def stages(dockerfile: Path) -> list[list[list[str]]]:
    """The Dockerfile's stages, each a list of instructions (words), continuation lines joined."""
    text = dockerfile.read_text().replace("\\\n", " ")
    out: list[list[list[str]]] = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#") or (words[0] == "ARG" and not out):
            continue
        if words[0] == "FROM":
            out.append([])
        out[-1].append(words)
    return out


def test_the_dockerfile_is_multi_stage_slim_non_root_and_runs_the_controller():
    builder, final = stages(ROOT / "Dockerfile")
    assert builder[0][-2:] == ["AS", "builder"] and final[0] == ["FROM", "${PYTHON_IMAGE}"]
    base = next(line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("ARG PYTHON_IMAGE"))
    assert base.split("=", 1)[1].startswith("python:3.11-slim")
    run_lines = [" ".join(w) for w in final if w[0] == "RUN"]
    assert not any(tool in line for line in run_lines for tool in ("apt-get", "apk", "gcc", "pip install", "wheel ."))
    copies = [w for w in final if w[0] == "COPY"]
    assert copies == [["COPY", "--from=builder", "/opt/mxjob-controller", "/opt/mxjob-controller"]]
    user = next(w for w in final if w[0] == "USER")[1]
    uid, gid = (int(x) for x in user.split(":"))
    assert uid > 0 and gid > 0
    assert next(w for w in final if w[0] == "ENTRYPOINT") == ["ENTRYPOINT", '["mxjob-controller",', '"run"]']
    pod = find(render("install"), "Deployment", "mxjob-controller")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == uid, "the Deployment runs the image's user"


def test_dockerignore_lets_through_exactly_what_the_builder_copies():
    patterns = [p for p in (ROOT / ".dockerignore").read_text().splitlines() if p and not p.startswith("#")]
    assert patterns[0] == "*"
    included = {p[1:].rstrip("/") for p in patterns if p.startswith("!")}
    assert included == set(builder_sources(ROOT / "Dockerfile"))
    assert ignored(ROOT / ".dockerignore")[:2] == ["mxjob_controller/local", "mxjob_controller/cli/local.py"]


def test_the_images_manager_is_run_as_training_operators_command_expects(tmp_path):
    """A training-operator Deployment keeps ``command: [/manager]``: the image's /manager, made by the Dockerfile's
    own RUN line (here into a folder of the test's), runs ``mxjob-controller run`` with the Deployment's args."""
    _builder, final = stages(ROOT / "Dockerfile")
    (line,) = [" ".join(w[1:]) for w in final if w[0] == "RUN" and "/manager" in w]
    manager = tmp_path / "manager"
    subprocess.run(["sh", "-c", line.replace("/manager", str(manager))], check=True, timeout=30)
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path)}
    shown = subprocess.run([str(manager), "--help"], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert "training-operator" in shown.stdout and "--enable-scheme" in shown.stdout, shown.stdout
