"""The webhook configurations, in one place: the ``ValidatingWebhookConfiguration`` that sends job writes to the
webhook server, and the MXJob CRD's conversion patch (``mxnet/crd_conversion.py``). Rendered into
``manifests/components/webhook`` with the webhook Service as their address (``hack/gen_crd.py``), and created by
``local up`` with the in-process server's URL and CA.

One webhook per job kind (training-operator's names: ``validator.<kind>.training-operator.kubeflow.org``), on CREATE
and UPDATE of the kind at every version it serves; ``failurePolicy: Fail`` (a job the webhook could not check waits
for it rather than slipping past), ``sideEffects: None``, ``timeoutSeconds: 10``, ``admissionReviewVersions: [v1]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mxjob_controller.frameworks import FRAMEWORKS
from mxjob_controller.kubeflow_api.crd import render_yaml
from mxjob_controller.mxnet import v1alpha1
from mxjob_controller.mxnet.crd_conversion import conversion_patch
from mxjob_controller.webhooks.server import validate_path

NAME = "mxjob-controller-validator"
COMPONENT_DIR = "manifests/components/webhook"
LABELS = {"app.kubernetes.io/name": "mxjob-controller", "app.kubernetes.io/component": "webhook"}
SERVICE = {"name": "mxjob-controller-webhook", "namespace": "kubeflow", "port": 443}

ClientConfig = Callable[[str], dict[str, Any]]
"""path -> the webhook's ``clientConfig`` (``service`` with that path, or ``url`` ending in it, with ``caBundle``)."""


def service_client_config(path: str) -> dict[str, Any]:
    return {"service": {**SERVICE, "path": path}}


def url_client_config(base_url: str, ca_bundle: str) -> ClientConfig:
    return lambda path: {"url": base_url + path, "caBundle": ca_bundle}


def webhook_name(group: str, kind: str) -> str:
    if group == "kubeflow.org":
        return f"validator.{kind.lower()}.training-operator.kubeflow.org"
    return f"validator.{kind.lower()}.{group}"


def validating_webhook_configuration(client_config: ClientConfig,
                                     frameworks: Sequence[str] = tuple(FRAMEWORKS)) -> dict[str, Any]:
    webhooks = []
    for name in frameworks:
        entry = FRAMEWORKS[name]
        crd = entry.crd()
        resource = entry.framework().resource
        versions = [v["name"] for v in crd["spec"]["versions"]]
        if entry.kind == "MXJob":
            versions.append(v1alpha1.VERSION)   # served when the conversion webhook is on (mxnet/crd_conversion.py)
        webhooks.append({
            "name": webhook_name(resource.group, entry.kind),
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 10,
            "clientConfig": client_config(validate_path(resource.group, resource.version, entry.kind)),
            "rules": [{"apiGroups": [resource.group], "apiVersions": versions, "operations": ["CREATE", "UPDATE"],
                       "resources": [resource.plural], "scope": "Namespaced"}],
        })
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": NAME, "labels": dict(LABELS)}, "webhooks": webhooks}


def component_files() -> dict[str, str]:
    """Repository-relative path → content of the generated files of ``manifests/components/webhook``."""
    return {f"{COMPONENT_DIR}/validating_webhook_configuration.yaml":
            render_yaml(validating_webhook_configuration(service_client_config)),
            f"{COMPONENT_DIR}/crd_mxjobs_conversion.yaml": render_yaml(conversion_patch())}
