"""The MXJob CRD with ``v1alpha1`` served through the conversion webhook: what ``local up`` applies and what
``manifests/components/webhook`` patches in (``hack/gen_crd.py`` writes the patch).

``v1`` stays the storage version: the controller only ever reads and writes ``v1``, and with the webhook down, ``v1``
requests keep working (only ``v1alpha1`` and ``v1beta1`` ones fail, as the API server cannot convert). ``conversion:
None`` cannot serve ``v1alpha1``: the API server would only rewrite ``apiVersion`` and then prune the list-shaped
spec against the ``v1`` schema (research note §4.5), so the base CRD does not serve it at all.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.mxnet import v1alpha1

CONVERT_PATH = "/convert"
WEBHOOK_SERVICE = {"name": "mxjob-controller-webhook", "namespace": "kubeflow", "path": CONVERT_PATH, "port": 443}
V1ALPHA1_COLUMNS = (
    {"name": "State", "type": "string", "jsonPath": ".status.state"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


def v1alpha1_version() -> dict[str, Any]:
    """The CRD's ``v1alpha1`` entry: served, not stored, its own typed schema."""
    return {"name": v1alpha1.VERSION, "served": True, "storage": False,
            "schema": {"openAPIV3Schema": v1alpha1.openapi_schema()},
            "subresources": {"status": {}},
            "additionalPrinterColumns": [dict(c) for c in V1ALPHA1_COLUMNS]}


def webhook_conversion(client_config: dict[str, Any]) -> dict[str, Any]:
    """``spec.conversion`` calling the webhook at ``client_config`` (``service`` or ``url``, and ``caBundle``)."""
    return {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": client_config}}


def with_conversion(crd: dict[str, Any], client_config: dict[str, Any]) -> dict[str, Any]:
    """``crd`` (the MXJob CRD, changed in place and returned) serving ``v1alpha1`` too, converted by the webhook at
    ``client_config``: what :func:`conversion_patch` does to it on a cluster."""
    crd["spec"]["versions"].append(v1alpha1_version())
    crd["spec"]["conversion"] = webhook_conversion(client_config)
    return crd


def conversion_patch() -> list[dict[str, Any]]:
    """The JSON patch ``manifests/components/webhook`` applies to the base MXJob CRD."""
    return [{"op": "add", "path": "/spec/versions/-", "value": v1alpha1_version()},
            {"op": "replace", "path": "/spec/conversion", "value": webhook_conversion({"service": WEBHOOK_SERVICE})}]
