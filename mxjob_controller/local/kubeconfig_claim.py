"""Which running local cluster a kubeconfig path belongs to, so that two never share one.

    claim = claim_path(".mxjob-local/kubeconfig")            # KubeconfigInUseError if a live cluster holds it
    claim = claim_free(".mxjob-local/run-kubeconfig")       # that path, or -2, -3… : the first one free
    ...  write the kubeconfig to claim.path  ...
    claim.release()                                         # the kubeconfig (if still ours) goes, the claim ends

A claim is an exclusive ``flock`` on ``<path>.lock``, holding the claimant's pid, kept open for the cluster's
whole life: the kernel lets it go when the process ends however it ends (SIGKILL included), so a path left by a
dead cluster is free again, and a live one is never taken (two ``local run`` in one checkout used to overwrite, then
delete, each other's kubeconfig). The kubeconfig is removed at release only if it is still the one written (a
claimant that lost it to someone who ignores claims leaves theirs alone).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

_MOST = 100   # run-kubeconfig, -2 … -100: past that something is wrong, say so


class KubeconfigInUseError(Exception):
    """The path belongs to a running local cluster."""


class Claim:
    def __init__(self, path: Path, fd: int) -> None:
        self.path, self._fd = path, fd
        self._written: bytes | None = None

    @property
    def lock_path(self) -> Path:
        return _lock_path(self.path)

    def written(self) -> None:
        """Remember what the kubeconfig holds now (what release will remove)."""
        try:
            self._written = self.path.read_bytes()
        except OSError:
            self._written = None

    def release(self) -> None:
        try:
            if self._written is not None and self.path.read_bytes() == self._written:
                self.path.unlink()
        except OSError:
            pass
        os.close(self._fd)   # the lock file stays: unlinking it would let two later claimants lock two inodes


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _holder(lock: Path) -> str:
    try:
        pid = lock.read_text().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


def claim_path(path: str | os.PathLike[str]) -> Claim:
    """Claim ``path``; :class:`KubeconfigInUseError` naming the holder's pid if a live process has it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = _lock_path(target)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise KubeconfigInUseError(f"{target} belongs to a local cluster that is running{_holder(lock)}: stop it, or "
                              "give this one a kubeconfig of its own (--kubeconfig-out)") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return Claim(target, fd)


def claim_free(path: str | os.PathLike[str]) -> Claim:
    """Claim ``path``, or the first of ``path-2``, ``path-3``… that no running cluster holds."""
    base = Path(path)
    for n in range(1, _MOST + 1):
        candidate = base if n == 1 else base.with_name(f"{base.name}-{n}")
        try:
            return claim_path(candidate)
        except KubeconfigInUseError:
            continue
    raise KubeconfigInUseError(f"{base} and {_MOST - 1} more like it belong to running local clusters: give this one a "
                          "kubeconfig of its own (--kubeconfig-out)")
