"""What the REST layer tells admission about one write: kube's ``admission.Attributes``, and the options objects an
``AdmissionReview`` carries.

Kept apart from the dispatcher so that the verbs (``verbs/``) depend on this small record only, not on how webhooks are
matched or called.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube.vocabulary import CREATE, DELETE, META_V1, UPDATE
from mxjob_controller.local.apiserver.resources import ResourceType

__all__ = ["CREATE", "DELETE", "UPDATE", "AdmissionAttributes", "delete_options", "write_options"]


@dataclass(slots=True)
class AdmissionAttributes:
    """One write, as admission sees it.

    ``obj`` and ``old`` may be at any version of ``rt``'s kind (the stored one on DELETE): the dispatcher converts
    them to the version each webhook is called at. ``namespace`` is the request's (a namespace's own name for a
    namespace's update or delete, as kube's request info has it); ``user`` is the caller (``auth.UserInfo``), None
    for a server that authenticates nobody (every request is then its administrator).
    """

    operation: str
    rt: ResourceType
    subresource: str
    name: str
    namespace: str
    obj: dict | None
    old: dict | None
    dry_run: bool
    options: dict[str, Any]
    user: Any = None


def write_options(kind: str, query: Mapping[str, str], dry_run: bool) -> dict[str, Any]:
    """``CreateOptions``/``UpdateOptions`` from a write's query, as kube decodes them (empty fields left out; a
    patch's ``PatchOptions`` become ``UpdateOptions``, ``force`` dropped, as ``patchToUpdateOptions`` does)."""
    options: dict[str, Any] = {"kind": kind, "apiVersion": META_V1}
    if dry_run:
        options["dryRun"] = ["All"]
    for key in ("fieldManager", "fieldValidation"):
        if query.get(key):
            options[key] = query[key]
    return options


def delete_options(grace_period_seconds: int | None, uid: str | None, resource_version: str | None,
                   orphan_dependents: bool | None, propagation_policy: str | None, dry_run: bool) -> dict[str, Any]:
    """``DeleteOptions`` as the request gave them (empty fields left out)."""
    options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": META_V1}
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v is not None}
    if preconditions:
        options["preconditions"] = preconditions
    if orphan_dependents is not None:
        options["orphanDependents"] = orphan_dependents
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if dry_run:
        options["dryRun"] = ["All"]
    return options
