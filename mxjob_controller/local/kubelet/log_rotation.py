"""A container instance's log rotated as the kubelet rotates it: at ``containerLogMaxSize`` (10 MiB) per file, at
most ``containerLogMaxFiles`` (5) files, the oldest removed; so a container printing 1 GB keeps 50 MiB.

The container writes its file itself (it is its stdout and stderr, opened with ``O_APPEND``), so the file cannot be
renamed under it. Rotation moves the file's first 10 MiB to a segment of their own (``<n>.log.<seq>``, ``seq``
counting up) and then takes them off the front of the live file in place (``fallocate``'s ``COLLAPSE_RANGE``,
which ext4 and XFS offer: the container's next write lands after what it wrote before, nothing is lost). Where the
file system cannot collapse a range, the live file's content is copied whole and the file truncated (a write that
lands between the two is lost, as with logrotate's ``copytruncate``).

Offsets are *absolute*: counted from the instance's first byte, rotated or removed ones included, so that a reader
following the log and the times of ``log_times.py`` keep their place across rotations. A segment removed is gone:
reading from before the oldest kept byte starts at it. Every read and every rotation of one log holds its lock, so
a reader never sees a rotation half done.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import logging
import os
import threading
from pathlib import Path

log = logging.getLogger(__name__)

MAX_SIZE = 10 * 1024 * 1024     # the kubelet's containerLogMaxSize default, 10Mi
MAX_FILES = 5                   # the kubelet's containerLogMaxFiles default: the live file and 4 rotated ones
_FALLOC_FL_COLLAPSE_RANGE = 0x08
_COPY_BLOCK = 1 << 20

_libc = ctypes.CDLL(None, use_errno=True)
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]


def _collapse_front(fd: int, length: int) -> bool:
    """Take the first ``length`` bytes off the file in place; False when its file system cannot."""
    if _libc.fallocate(fd, _FALLOC_FL_COLLAPSE_RANGE, 0, length) == 0:
        return True
    if ctypes.get_errno() not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return False


def _copy(src: int, dst: int, offset: int, length: int) -> None:
    done = 0
    while done < length:
        chunk = os.pread(src, min(_COPY_BLOCK, length - done), offset + done)
        if not chunk:
            return
        os.write(dst, chunk)
        done += len(chunk)


class RotatedLog:
    """One instance's log: its live file ``path`` and the rotated segments before it."""

    def __init__(self, path: Path, max_size: int = MAX_SIZE, max_files: int = MAX_FILES) -> None:
        self.path = path
        self.max_size = max(4096, max_size)
        self.max_files = max(1, max_files)
        self.lock = threading.Lock()
        self._dropped = 0                       # absolute offset of the first byte kept
        self._first_line = 0                    # ... of the first whole line kept (a removed file cut one)
        self._segments: list[tuple[Path, int]] = []   # rotated (file, size), oldest first
        self._seq = 0

    @classmethod
    def from_disk(cls, path: Path, max_size: int = MAX_SIZE, max_files: int = MAX_FILES) -> RotatedLog:
        """The log as its files on disk show it (segments removed earlier are not counted)."""
        found = cls(path, max_size, max_files)
        with contextlib.suppress(OSError):
            numbered = [(int(p.name.rsplit(".", 1)[1]), p) for p in path.parent.glob(path.name + ".*")
                        if p.name.rsplit(".", 1)[1].isdigit()]
            found._segments = [(p, _size(p)) for _seq, p in sorted(numbered)]
            found._seq = max((seq for seq, _p in numbered), default=0)
        return found

    # --- rotation -------------------------------------------------------------------------------------------

    def rotate(self) -> int:
        """Rotate while the live file holds a whole segment or more; the absolute size afterwards (bytes ever
        written, as far as seen now)."""
        with self.lock:
            try:   # a look first (the sampler asks every running container's 20 times a second): opened when due
                size = os.stat(self.path).st_size
                if size < self.max_size:
                    return self._end(size)
                fd = os.open(self.path, os.O_RDWR)
            except FileNotFoundError:
                return self._end(0)
            try:
                size = os.fstat(fd).st_size
                while size >= self.max_size:
                    size = self._rotate_once(fd, size)
                return self._end(size)
            finally:
                os.close(fd)

    def _rotate_once(self, fd: int, size: int) -> int:
        self._seq += 1
        segment = self.path.with_name(f"{self.path.name}.{self._seq}")
        out = os.open(segment, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _copy(fd, out, 0, self.max_size)
            if _collapse_front(fd, self.max_size):
                moved = self.max_size
            else:   # no COLLAPSE_RANGE here: what the file holds now moves whole
                size = os.fstat(fd).st_size
                _copy(fd, out, self.max_size, size - self.max_size)
                os.ftruncate(fd, 0)
                moved = size
        finally:
            os.close(out)
        self._segments.append((segment, moved))
        dropped = False
        while len(self._segments) > self.max_files - 1:
            oldest, oldest_size = self._segments.pop(0)
            oldest.unlink(missing_ok=True)
            self._dropped += oldest_size
            dropped = True
        if dropped:
            self._first_line = self._next_line_start(self._dropped)
        return os.fstat(fd).st_size

    def _next_line_start(self, offset: int) -> int:
        """The first offset at or after ``offset`` that begins a line (the end, if no newline follows)."""
        if offset == 0:
            return 0
        start = offset - 1   # a newline just before ``offset`` makes it a line start
        while True:
            at, data = self._pread_locked(start, _COPY_BLOCK)
            if not data:
                return at
            newline = data.find(b"\n")
            if newline >= 0:
                return at + newline + 1
            start = at + len(data)

    def _end(self, live_size: int) -> int:
        return self._dropped + sum(size for _p, size in self._segments) + live_size

    def remove(self) -> None:
        """Remove the rotated segments (the live file is its owner's to remove)."""
        with self.lock:
            for segment, _size in self._segments:
                segment.unlink(missing_ok=True)
            self._segments.clear()

    # --- reading --------------------------------------------------------------------------------------------

    def bounds(self) -> tuple[int, int]:
        """(absolute offset of the first whole line kept, of the end): a read from the start begins there, as the
        kubelet's oldest rotated file begins with a line."""
        with self.lock:
            return self._first_line, self._end(_size(self.path))

    def pread(self, offset: int, length: int) -> tuple[int, bytes]:
        """Up to ``length`` bytes from absolute ``offset`` (from the first byte kept, if that is later): (the offset
        they start at, the bytes); empty at the end."""
        with self.lock:
            return self._pread_locked(max(offset, self._first_line), length)

    def _pread_locked(self, offset: int, length: int) -> tuple[int, bytes]:
        start = self._dropped
        offset = max(offset, start)
        for segment, size in self._segments:
            if offset < start + size:
                return offset, _pread(segment, offset - start, min(length, start + size - offset))
            start += size
        return offset, _pread(self.path, offset - start, length)

    def reader(self) -> LogReader:
        return LogReader(self)


class LogReader:
    """A file-like view of a :class:`RotatedLog` in absolute offsets (``seek``, ``read``, ``tell``)."""

    def __init__(self, log_: RotatedLog) -> None:
        self._log = log_
        self._pos = log_.bounds()[0]

    def seek(self, offset: int, whence: int = 0) -> int:
        first, end = self._log.bounds()
        target = offset if whence == 0 else end + offset if whence == 2 else self._pos + offset
        self._pos = max(first, target)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            parts = []
            while chunk := self.read(_COPY_BLOCK):
                parts.append(chunk)
            return b"".join(parts)
        parts, got = [], 0   # across a segment's end: as a file's read, short only at the end
        while got < size:
            start, data = self._log.pread(self._pos, size - got)
            if not data:
                break
            self._pos = start + len(data)
            parts.append(data)
            got += len(data)
        return b"".join(parts)

    def close(self) -> None:
        """Nothing to release: each read opens and closes its file."""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _pread(path: Path, offset: int, length: int) -> bytes:
    with contextlib.suppress(FileNotFoundError):
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)
    return b""
