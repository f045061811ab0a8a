"""``spec.runPolicy.managedBy``: whether this controller reconciles a job, or another one (MultiKueue...) does.

Kubeflow's common RunPolicy has the field for every job kind, so it is read here, from the raw object, before
the job is parsed: a job handed to another controller gets no write of any kind from us (no children, no status,
no event), even when its spec is one we would call invalid, since its controller may read it otherwise.

- Unset, or one of the framework's own names (for MXJobs ``kubeflow.org/mxjob-controller`` and, as a drop-in,
  ``kubeflow.org/training-operator``): ours.
- Any other well-formed value (batch/v1 Job's rule: a domain-prefixed path of at most 63 characters, e.g.
  ``kueue.x-k8s.io/multikueue``): someone else's.
- A malformed value (``""`` included) is no hand-over: nobody else can claim a value the API would refuse, so the
  job stays ours and is *invalid*: it is ``Failed`` with the validation error naming the field, and gets no pod.
  Neither silently adopted (run as if the field were unset) nor silently ignored (left without a word).

This module is the one place the format rule lives: :func:`value_errors` gives the job's validation its messages,
and :func:`well_formed`, the same rule, decides the hand-over. The value cannot change after creation: the CRD's
transition rule refuses it (see ``api/crd.py``).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from mxjob_controller.kube import field_errors as fe
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.names import dns1123_subdomain_errors

MAX_LENGTH = 63   # batch/v1 Job's maxManagedByLength
_HTTP_PATH_FMT = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"   # RFC 3986 path characters, as apimachinery writes them
_HTTP_PATH = re.compile("^" + _HTTP_PATH_FMT + "$")


def managed_by(obj: dict[str, Any]) -> str | None:
    """The job's ``spec.runPolicy.managedBy`` if it is a string (``""`` included: a malformed value)."""
    spec = obj.get("spec")
    run_policy = spec.get("runPolicy") if isinstance(spec, dict) else None
    value = run_policy.get("managedBy") if isinstance(run_policy, dict) else None
    return value if isinstance(value, str) else None


def value_errors(value: str, path: str) -> list[FieldError]:
    """What is wrong with a ``managedBy`` string, as kube-apiserver words it for batch/v1 Job (apimachinery's
    ``IsDomainPrefixedPath``, then the length); empty when it is well formed."""
    if value == "":
        return [fe.required(path)]
    errs: list[FieldError] = []
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        errs.append(fe.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")'))
    else:
        errs += [fe.invalid(path, host, message) for message in dns1123_subdomain_errors(host)]
        if not _HTTP_PATH.match(rest):
            errs.append(fe.invalid(path, rest, f"Invalid path (regex used for validation is '{_HTTP_PATH_FMT}')"))
    if len(value) > MAX_LENGTH:
        errs.append(fe.too_long(path, MAX_LENGTH))
    return errs


def well_formed(value: str) -> bool:
    """Whether ``value`` names a controller at all (see :func:`value_errors`)."""
    return not value_errors(value, "")


def managed_elsewhere(obj: dict[str, Any], ours: Collection[str]) -> str | None:
    """The controller the job is handed to, or None when it is ours to reconcile (unset, ours, or malformed)."""
    value = managed_by(obj)
    if value is None or value in ours or not well_formed(value):
        return None
    return value
