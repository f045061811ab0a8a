"""What some tests need installed beside the project, built once and cached under ``.mxjob-local/``: a virtualenv
with the wheel's dependencies (``tests/e2e/test_wheel.py``), the Kubeflow SDK's virtualenv with the ``kubernetes``
client it works with (``tests/e2e/test_sdk_client.py``) and ``@kubernetes/client-node``
(``tests/e2e/test_client_node.py``).

Building them costs a minute or more each on a fresh clone, so each is kept, keyed by what it is made of (and the
Python version for a virtualenv), and rebuilt only when that changes or its build was interrupted (no ``ready``
mark). A file lock makes a second run on the same checkout wait for the first instead of building over it.

``make test`` builds them beside ``make venv`` (``python3 -m tests.cached_builds``: the standard library only, so it
needs no ``.venv``), where a core is idle, instead of on a pytest worker; a test finds them built, or builds what is
missing itself.
"""

from __future__ import annotations

import configparser
import fcntl
import hashlib
import shutil
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".mxjob-local"
SDK_REQUIREMENTS = ("kubeflow-training==1.8.1", "kubernetes==29.0.0")
CLIENT_NODE_VERSION = "1.4.0"


def cached_build(home: Path, build: Callable[[Path], None]) -> Path:
    """``home``, made by ``build(home)`` unless a finished one is there (a ``ready`` marker, written last); runs
    on this checkout wait on a lock beside it, so one builds and the others use its result."""
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f"{home.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / "ready").exists():
            shutil.rmtree(home, ignore_errors=True)
            build(home)
            (home / "ready").touch()
    return home


def pip(python: Path, *args: str, timeout: float = 600) -> None:
    done = subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"pip {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def cached_venv(name: str, key: str, install: Callable[[Path], None],
                refresh: Callable[[Path], None] | None = None) -> Path:
    """The virtualenv ``name`` for ``key`` (made by ``install(python)`` when missing); its ``bin`` directory.
    ``refresh(python)`` runs on every call, under a lock of its own (what must be fresh each run)."""
    digest = hashlib.sha256(f"{sys.version}\n{key}".encode()).hexdigest()[:16]

    def build(home: Path) -> None:
        venv.EnvBuilder(with_pip=True, clear=True).create(home)
        install(home / "bin" / "python")

    home = cached_build(CACHE / f"{name}-{digest}", build)
    if refresh is not None:
        with open(CACHE / f"{home.name}.refresh.lock", "w") as lock:   # other runs on this checkout wait for us
            fcntl.flock(lock, fcntl.LOCK_EX)
            refresh(home / "bin" / "python")
    return home / "bin"


def dependency_list() -> list[str]:
    """The package's ``install_requires`` (setup.cfg), one requirement a line as written there."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    return [line.strip() for line in config["options"]["install_requires"].splitlines() if line.strip()]


def wheel_dependencies_venv(refresh: Callable[[Path], None] | None = None) -> Path:
    """A virtualenv holding the package's dependencies from the package index, as the image's ``pip install`` gets
    them, and nothing else (``refresh`` puts the wheel in); its ``bin`` directory."""
    requirements = dependency_list()
    return cached_venv("wheel-venv", "\n".join(requirements), refresh=refresh, install=lambda python: pip(
        python, "install", "--quiet", "--no-compile", *requirements))   # compiled on import


def sdk_venv() -> Path:
    """The Kubeflow SDK's own virtualenv; its ``bin`` directory."""
    return cached_venv("sdk-venv", "\n".join(SDK_REQUIREMENTS), install=lambda python: pip(
        python, "install", "--quiet", "--no-compile", *SDK_REQUIREMENTS))


def client_node() -> Path:
    """The directory npm installed ``@kubernetes/client-node`` into."""
    def build(home: Path) -> None:
        home.mkdir()
        done = subprocess.run(["npm", "install", "--prefix", str(home), "--no-audit", "--no-fund", "--ignore-scripts",
                               f"@kubernetes/client-node@{CLIENT_NODE_VERSION}"],
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"npm install failed:\n{done.stdout}\n{done.stderr}"
        assert "EBADENGINE" not in done.stderr, f"not for this machine's Node:\n{done.stderr}"

    return cached_build(CACHE / f"client-node-{CLIENT_NODE_VERSION}", build)


def build_all() -> None:
    """Every cache above that this machine can build (client-node needs Node's ``npm``)."""
    wheel_dependencies_venv()
    sdk_venv()
    if shutil.which("npm") is not None and shutil.which("node") is not None:
        client_node()


if __name__ == "__main__":
    build_all()
