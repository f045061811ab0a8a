"""Which of a set of files were written to since last asked (inotify's ``IN_MODIFY``), for the log-time sampler
(``log_times.py``): it looked at the size of every running container's log 20 times a second, which with 400
running containers kept ~0.08 of a core busy while nothing was written; now it looks at those written to.

Not thread-safe: its user holds a lock around every call. Where inotify is missing, or a file cannot be watched
(``max_user_watches`` reached), :meth:`FileChanges.add` says so and the caller keeps looking at that file itself.
"""

from __future__ import annotations

import ctypes
import os
import struct
from pathlib import Path

IN_MODIFY, IN_IGNORED, IN_Q_OVERFLOW = 0x2, 0x8000, 0x4000
_HEADER = struct.Struct("iIII")   # struct inotify_event: wd, mask, cookie, len (then len bytes of name)

_libc = ctypes.CDLL(None, use_errno=True)


class FileChanges:
    """An inotify instance watching files for writes."""

    def __init__(self) -> None:
        """OSError if inotify cannot be had here."""
        fd = _libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        self._fd = fd
        self._paths: dict[int, Path] = {}     # watch descriptor → its file
        self._watches: dict[Path, int] = {}

    def add(self, path: Path) -> bool:
        """Watch ``path`` for writes; False if it cannot be watched."""
        if self._fd < 0:
            return False
        wd = _libc.inotify_add_watch(self._fd, os.fsencode(path), IN_MODIFY)
        if wd < 0:
            return False
        self._paths[wd] = path
        self._watches[path] = wd
        return True

    def remove(self, path: Path) -> None:
        wd = self._watches.pop(path, None)
        if wd is not None and self._paths.pop(wd, None) is not None and self._fd >= 0:
            _libc.inotify_rm_watch(self._fd, wd)   # fails harmlessly if the kernel dropped it (file removed)

    def changed(self) -> set[Path] | None:
        """The watched files written to since the last call; None if the kernel's queue overflowed (some writes
        may be missing: look at every file)."""
        if self._fd < 0:
            return None
        chunks = []
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        data = b"".join(chunks)
        found: set[Path] = set()
        overflowed = False
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size + length
            if mask & IN_Q_OVERFLOW:
                overflowed = True
            elif mask & IN_IGNORED:   # the file was removed: the kernel dropped the watch
                path = self._paths.pop(wd, None)
                if path is not None:
                    self._watches.pop(path, None)
            elif (path := self._paths.get(wd)) is not None:
                found.add(path)
        return None if overflowed else found

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self._paths.clear()
        self._watches.clear()
