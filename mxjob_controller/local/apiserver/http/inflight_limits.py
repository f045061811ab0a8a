"""kube-apiserver's in-flight request limits, by default: defined here, in a module that loads nothing, so that the
CLI shows them in ``local up --help`` without loading the server (``flowcontrol`` enforces them)."""

from __future__ import annotations

MAX_REQUESTS_INFLIGHT = 400  # kube-apiserver's --max-requests-inflight default
MAX_MUTATING_REQUESTS_INFLIGHT = 200  # ... and --max-mutating-requests-inflight
