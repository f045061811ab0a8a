"""kube's ``OwnerReferencesPermissionEnforcement`` admission plugin (``plugin/pkg/admission/gc``).

Not on in a default kube-apiserver, but on in OpenShift and other hardened clusters; on here whenever RBAC is, so
that what the controller needs there is part of what our tests prove. On a create or update that changes an
object's ``ownerReferences`` (``pods/status`` excepted):

- on an update, the caller must be allowed to delete the object itself, else ``cannot set an ownerRef on a
  resource you can't delete``; not on a create (upstream: whoever creates an object could as well never have
  created it, so may give it owners);
- on both, for every reference newly made blocking (``blockOwnerDeletion: true``), the caller must be allowed to
  update the owner's ``finalizers`` subresource (the controller's ``mxjobs/finalizers`` rule), else ``cannot set
  blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on``: the power to delete
  one's own object does not imply the power to hold back the deletion of another.

The server's own writes (garbage collector, namespace controller, in-process creates) have no caller and pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.auth.authorizer import Authorizer
from mxjob_controller.local.apiserver.auth.rbac import Attributes
from mxjob_controller.local.apiserver.auth.user import UserInfo
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.resources import Registry, ResourceType
from mxjob_controller.local.apiserver.strategy import WriteContext


def _refs(obj: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences")
    return [r for r in refs if isinstance(r, Mapping)] if isinstance(refs, list) else []


def _changing(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    return bool(_refs(new)) if old is None else _refs(new) != _refs(old)


def _new_blocking(new: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    blocking = [r for r in _refs(new) if r.get("blockOwnerDeletion") is True]
    if old is None:
        return blocking
    before = {r.get("uid"): r for r in _refs(old)}
    return [r for r in blocking if r.get("uid") not in before or before[r.get("uid")].get("blockOwnerDeletion")
            is not True]


class OwnerReferencesPermissionEnforcement:
    def __init__(self, authorizer: Authorizer, registry: Registry) -> None:
        self._authorizer = authorizer
        self._registry = registry

    def __call__(self, rt: ResourceType, new: dict, old: dict | None, ctx: WriteContext) -> None:
        user = ctx.user
        if not isinstance(user, UserInfo) or (rt.group == "" and rt.plural == "pods" and ctx.subresource == "status"):
            return
        if not _changing(new, old):
            return
        meta = new.get("metadata") or {}
        namespace, name = meta.get("namespace") or "", meta.get("name") or ""
        if old is not None:
            delete = self._authorizer.authorize(Attributes(user, "delete", True, rt.group, rt.version, rt.plural,
                                                           ctx.subresource or "", namespace, name))
            if not delete.allowed:
                raise _forbidden(rt, name,
                                 f"cannot set an ownerRef on a resource you can't delete: {delete.reason}, <nil>")
        for ref in _new_blocking(new, old):
            api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
            group, _, version = api_version.rpartition("/")
            owners = [t for t in self._registry.all() if (t.group, t.version, t.kind) == (group, version, kind)]
            if not owners:
                raise _forbidden(rt, name, "cannot set blockOwnerDeletion in this case because cannot find "
                                           f"RESTMapping for APIVersion {api_version} Kind {kind}: , no matches for "
                                           f'kind "{kind}" in version "{api_version}"')
            for owner in owners:
                decision = self._authorizer.authorize(Attributes(
                    user, "update", True, group, version, owner.plural, "finalizers", namespace,
                    str(ref.get("name") or "")))
                if not decision.allowed:
                    raise _forbidden(rt, name, "cannot set blockOwnerDeletion if an ownerReference refers to a "
                                               f"resource you can't set finalizers on: {decision.reason}, <nil>")


def _forbidden(rt: ResourceType, name: str, why: str) -> StatusError:
    return errors.admission_forbidden(rt.resource, name, why)
