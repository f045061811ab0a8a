"""The project's kustomize tree, rendered by the real ``kubectl kustomize`` (tests of manifests and RBAC share it)."""

from __future__ import annotations

import concurrent.futures
import copy
import fcntl
import functools
import hashlib
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.support import KUBECTL

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "manifests"
INSTALL = MANIFESTS / "install"
INSTALL_NAMESPACE = "kubeflow"


def kustomizations() -> list[str]:
    """Every directory of the tree holding a kustomization (overlays and components), relative to manifests/."""
    return sorted(str(p.parent.relative_to(MANIFESTS)) for p in MANIFESTS.rglob("kustomization.yaml"))


@functools.cache
def _tree_key() -> str:
    """A digest of every file under manifests/ (paths and bytes): a rendering is reused only for this exact tree."""
    digest = hashlib.sha256()
    for path in sorted(p for p in MANIFESTS.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(MANIFESTS)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@functools.cache
def render_text(directory: str) -> str:
    """``kubectl kustomize manifests/<directory>``, rendered once per tree for all xdist workers (on disk, locked)."""
    cache = ROOT / ".mxjob-local" / "kustomize" / _tree_key()
    cache.mkdir(parents=True, exist_ok=True)
    rendered = cache / (directory.replace("/", "__") + ".yaml")
    with open(cache / (rendered.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)          # a second worker waits for the first one's rendering
        if rendered.exists():
            return rendered.read_text()
        done = subprocess.run([KUBECTL, "kustomize", str(MANIFESTS / directory)], capture_output=True, text=True,
                              timeout=120, check=False)
        if done.returncode != 0:
            raise AssertionError(f"kubectl kustomize manifests/{directory} failed:\n{done.stderr}")
        partial = rendered.with_suffix(".partial")
        partial.write_text(done.stdout)
        partial.replace(rendered)
        return done.stdout


def render_all() -> None:
    """Every kustomization rendered into the on-disk cache (4 at a time), before any test runs: the tests that read
    the renderings are unit tests, which may start no process (tests/conftest.py), so a cold cache is filled here."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="kustomize") as pool:
        list(pool.map(render_text, kustomizations()))


@functools.cache
def _parsed(directory: str) -> tuple[dict[str, Any], ...]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # the CRD is large: the C parser is 10x faster
    return tuple(doc for doc in yaml.load_all(render_text(directory), Loader=loader) if doc)


def render(directory: str) -> list[dict[str, Any]]:
    """The rendered objects (a fresh copy: callers may change them)."""
    return copy.deepcopy(list(_parsed(directory)))


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    matches = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return matches[0]
