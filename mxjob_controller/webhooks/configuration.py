"""The webhook configurations, in one place: the ``ValidatingWebhookConfiguration`` and the
``MutatingWebhookConfiguration`` that send job writes to the webhook server, and the MXJob CRD's conversion patch
(``mxnet/crd_conversion.py``). Rendered into ``manifests/components/webhook`` with the webhook Service as their
address (``hack/gen_crd.py``); ``local up`` creates the validating one with the in-process server's URL and CA, and
applies the defaults in its API server itself (``local/job_defaults.py``: it serves no mutating configurations).

One validating webhook per job kind (training-operator's names: ``validator.<kind>.training-operator.kubeflow.org``),
on CREATE and UPDATE of the kind at every version it serves; ``failurePolicy: Fail`` (a job the webhook could not
check waits for it rather than slipping past), ``sideEffects: None``, ``timeoutSeconds: 10``,
``admissionReviewVersions: [v1]``. One defaulting webhook per kind beside it (``defaulter.<kind>...``; training-operator
has none: it defaults in memory only, which this controller also still does), on the kind's own versions (MXJob
``v1alpha1`` reaches it converted to ``v1``: ``matchPolicy: Equivalent``); ``failurePolicy: Ignore``, since a job
left undefaulted still runs exactly the same (the controller defaults its copy), and ``reinvocationPolicy: Never``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mxjob_controller.frameworks import FRAMEWORKS
from mxjob_controller.kubeflow_api.crd import render_yaml
from mxjob_controller.mxnet import v1alpha1
from mxjob_controller.mxnet.crd_conversion import conversion_patch
from mxjob_controller.webhooks.server import mutate_path, validate_path

NAME = "mxjob-controller-validator"
DEFAULTER_NAME = "mxjob-controller-defaulter"
COMPONENT_DIR = "manifests/components/webhook"
LABELS = {"app.kubernetes.io/name": "mxjob-controller", "app.kubernetes.io/component": "webhook"}
SERVICE = {"name": "mxjob-controller-webhook", "namespace": "kubeflow", "port": 443}

ClientConfig = Callable[[str], dict[str, Any]]
"""path -> the webhook's ``clientConfig`` (``service`` with that path, or ``url`` ending in it, with ``caBundle``)."""


def service_client_config(path: str) -> dict[str, Any]:
    return {"service": {**SERVICE, "path": path}}


def url_client_config(base_url: str, ca_bundle: str) -> ClientConfig:
    return lambda path: {"url": base_url + path, "caBundle": ca_bundle}


def webhook_name(group: str, kind: str, role: str = "validator") -> str:
    if group == "kubeflow.org":
        return f"{role}.{kind.lower()}.training-operator.kubeflow.org"
    return f"{role}.{kind.lower()}.{group}"


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


def mutating_webhook_configuration(client_config: ClientConfig,
                                   frameworks: Sequence[str] = tuple(FRAMEWORKS)) -> dict[str, Any]:
    webhooks = []
    for name in frameworks:
        entry = FRAMEWORKS[name]
        resource = entry.framework().resource
        versions = [v["name"] for v in entry.crd()["spec"]["versions"]]
        webhooks.append({
            "name": webhook_name(resource.group, entry.kind, "defaulter"),
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore",
            "matchPolicy": "Equivalent", "reinvocationPolicy": "Never", "timeoutSeconds": 10,
            "clientConfig": client_config(mutate_path(resource.group, resource.version, entry.kind)),
            "rules": [{"apiGroups": [resource.group], "apiVersions": versions,
                       "operations": ["CREATE", "UPDATE"], "resources": [resource.plural], "scope": "Namespaced"}],
        })
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": DEFAULTER_NAME, "labels": dict(LABELS)}, "webhooks": webhooks}


def component_files() -> dict[str, str]:
    """Repository-relative path → content of the generated files of ``manifests/components/webhook``."""
    return {f"{COMPONENT_DIR}/validating_webhook_configuration.yaml":
            render_yaml(validating_webhook_configuration(service_client_config)),
            f"{COMPONENT_DIR}/mutating_webhook_configuration.yaml":
            render_yaml(mutating_webhook_configuration(service_client_config)),
            f"{COMPONENT_DIR}/crd_mxjobs_conversion.yaml": render_yaml(conversion_patch())}
