"""The sizes kube-apiserver bounds, where several parts of the project must agree on them.

- :data:`MAX_OBJECT_BYTES`: an object as stored (its JSON, for a custom resource), at most etcd's default
  ``--max-request-bytes`` (1.5 MiB): kube-apiserver cannot store a bigger one, however it grew (a patch, an apply,
  a mutating webhook). The embedded API server's store refuses past it; the operator's admission webhooks refuse to
  judge a bigger object (no judgement of it could matter, and judging costs CPU in proportion to its size).
"""

from __future__ import annotations

MAX_OBJECT_BYTES = 1572864   # etcd's default --max-request-bytes (1.5 MiB), which kube-apiserver's writes must pass
