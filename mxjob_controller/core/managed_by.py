"""``spec.runPolicy.managedBy``: whether this controller reconciles a job, or another one (MultiKueue...) does.

Kubeflow's common RunPolicy has the field for every job kind, so it is read here, from the raw object, before
the job is parsed: a job handed to another controller gets no write of any kind from us (no children, no status,
no event), even when its spec is one we would call invalid, since its controller may read it otherwise.

- Unset or empty, or one of the framework's own names (for MXJobs ``kubeflow.org/mxjob-controller`` and, as a
  drop-in, ``kubeflow.org/training-operator``): ours.
- Any other well-formed value (a domain-prefixed path of at most 63 characters, e.g.
  ``kueue.x-k8s.io/multikueue``): someone else's.
- A malformed value is not a hand-over: the job stays ours, and validation reports the value.

The value cannot change after creation: the CRD's transition rule refuses it (see ``api/crd.py``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from mxjob_controller.kube.names import dns1123_subdomain_errors

MAX_LENGTH = 63


def managed_by(obj: dict[str, Any]) -> str | None:
    """The job's ``spec.runPolicy.managedBy`` if it is a non-empty string."""
    spec = obj.get("spec")
    run_policy = spec.get("runPolicy") if isinstance(spec, dict) else None
    value = run_policy.get("managedBy") if isinstance(run_policy, dict) else None
    return value if isinstance(value, str) and value else None


def _well_formed(value: str) -> bool:
    domain, slash, rest = value.partition("/")
    return len(value) <= MAX_LENGTH and bool(slash and rest) and not dns1123_subdomain_errors(domain)


def managed_elsewhere(obj: dict[str, Any], ours: Collection[str]) -> str | None:
    """The controller the job is handed to, or None when it is ours to reconcile."""
    value = managed_by(obj)
    if value is None or value in ours or not _well_formed(value):
        return None
    return value
