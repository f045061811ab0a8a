"""Files the local cluster hands to other processes (kubeconfigs, a service account's token directory).

Each is written whole: a temporary file in the same directory, its mode set, then renamed over the target, so a
reader (kubectl, a controller started by a script) never sees half a file, and a credential is never readable by
others, not even for a moment.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: str | os.PathLike[str], data: bytes, mode: int = 0o600) -> Path:
    """Write ``data`` to ``path`` (its directory made if need be) with ``mode``, all at once; the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
