"""Virtualenvs of their own for tests that need another set of packages than the project's (the wheel's install, the
Kubeflow SDK with the ``kubernetes`` client it works with), cached under ``.mxjob-local/``.

Creating one costs a minute or more (most of those tests' time), so each is kept, keyed by what it is made of and the
Python version, and rebuilt only when that changes or its creation was interrupted (no ``ready`` mark). A file lock
makes a second test run on the same checkout wait for the first instead of building over it.
"""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
import sys
import venv
from collections.abc import Callable
from pathlib import Path

from tests.manifests import ROOT
from tests.support import cached_build

CACHE = ROOT / ".mxjob-local"


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
