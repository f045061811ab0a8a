"""Admission of the local cluster: every job is stored with its defaults, as the defaulting webhook writes them on a
cluster (``webhooks/admission.py``, ``manifests/components/webhook``).

The embedded API server serves no MutatingWebhookConfigurations, so the cluster applies the same pure defaults
(``FrameworkEntry.defaults``) as a mutating admission plugin, on the create and the update of a job of each kind,
before validation and the validating webhooks, as kube-apiserver orders mutating and validating admission. It runs
with the webhooks (``local up --no-webhooks`` leaves jobs as written: the controller defaults its copy, as on a
cluster without the webhook). An MXJob written as ``v1alpha1`` is left to its conversion, which writes its
``runPolicy.cleanPodPolicy``.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.frameworks import FRAMEWORKS
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.strategy import WriteContext
from mxjob_controller.mxnet import v1alpha1


class JobDefaults:
    """The admission plugin (``REST.admission`` and, through :meth:`on_update`, ``REST.update_admission``)."""

    def __init__(self) -> None:
        self._defaults = {(entry.framework().resource.group, entry.kind): entry.defaults
                          for entry in FRAMEWORKS.values()}

    def __call__(self, rt: ResourceType, obj: dict[str, Any], ctx: WriteContext) -> None:
        """Admission of a create."""
        self._default(rt, obj)

    def on_update(self, rt: ResourceType, new: dict[str, Any], old: dict[str, Any], ctx: WriteContext) -> None:
        """Admission of an update of the job itself (not of its status)."""
        if not ctx.subresource:
            self._default(rt, new)

    def _default(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        defaults = self._defaults.get((rt.group, rt.kind))
        if defaults is None or obj.get("apiVersion") == v1alpha1.API_VERSION or not isinstance(obj.get("spec"), dict):
            return
        obj["spec"] = defaults(obj)["spec"]
