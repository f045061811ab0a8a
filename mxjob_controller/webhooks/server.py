"""The webhook server: HTTPS, one validating and one defaulting path per job kind and one conversion path, on ``run``'s
``--webhook-bind-address``. Every replica serves it (admission does not wait for leadership, as controller-runtime's
webhooks do not).

    server = WebhookServer(":9443", CertificateFiles("/tmp/k8s-webhook-server/serving-certs").context,
                           frameworks=("mxnet", "tensorflow", "generic"), registry=registry).start()

Paths, as training-operator names its webhooks' (``/validate-<group with dashes>-<version>-<kind>``):

====================================================  ==================================================
``/validate-kubeflow-org-v1-mxjob``                   MXJob (``v1``, ``v1beta1``, ``v1alpha1``)
``/validate-kubeflow-org-v1-tfjob``                   TFJob
``/validate-batch-tensorstack-dev-v1beta1-genericjob`` GenericJob
``/mutate-kubeflow-org-v1-mxjob`` (and so on)         the defaults of each kind, as a JSON patch
``/convert``                                          ``ConversionReview`` (MXJob ``v1alpha1`` ⇄ ``v1``)
====================================================  ==================================================

A body that is not JSON or not a review is answered 400 (the API server then applies the webhook's failurePolicy).
Metrics, controller-runtime's: ``controller_runtime_webhook_requests_total{webhook, code}`` and
``controller_runtime_webhook_latency_seconds{webhook}``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from mxjob_controller.frameworks import FRAMEWORKS, FrameworkEntry
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kube.vocabulary import JSON_MEDIA_TYPE as JSON
from mxjob_controller.kube.vocabulary import TEXT_MEDIA_TYPE as TEXT
from mxjob_controller.mxnet import v1alpha1
from mxjob_controller.mxnet.crd_conversion import CONVERT_PATH
from mxjob_controller.runtime.endpoints import EndpointServer, PostRoute, Reply, TLSContext
from mxjob_controller.runtime.registry import families_for
from mxjob_controller.webhooks import admission, conversion

log = logging.getLogger(__name__)



def validate_path(group: str, version: str, kind: str) -> str:
    return f"/validate-{group.replace('.', '-')}-{version}-{kind.lower()}"


def mutate_path(group: str, version: str, kind: str) -> str:
    return f"/mutate-{group.replace('.', '-')}-{version}-{kind.lower()}"


def _defaulter(entry: FrameworkEntry) -> admission.Defaulter:
    def defaults(obj: dict[str, Any]) -> dict[str, Any]:
        if entry.kind == "MXJob" and obj.get("apiVersion") == v1alpha1.API_VERSION:
            return obj   # not its shape: the API server sends v1alpha1 jobs converted to v1 (admission.py)
        return entry.defaults(obj)
    return defaults


def _validator(entry: FrameworkEntry) -> admission.Validator:
    framework = entry.framework()

    def validate(obj: dict[str, Any], api_version: str) -> list[FieldError]:
        if entry.kind == "MXJob" and api_version == v1alpha1.API_VERSION:
            errors = v1alpha1.validate(obj)
            if errors:
                return errors   # in the shape the user wrote
            obj = v1alpha1.to_v1(obj)
        return framework.parse(obj)[1]

    return validate


def _warner(entry: FrameworkEntry) -> admission.Warner:
    def warn(obj: dict[str, Any], api_version: str) -> list[str]:
        if entry.kind == "MXJob" and api_version == v1alpha1.API_VERSION:
            obj = v1alpha1.to_v1(obj)
        return entry.warnings(obj)

    return warn


def job_kinds(names: Sequence[str]) -> dict[tuple[str, str], admission.Kind]:
    """(group, kind) → how to judge it, for the frameworks named."""
    kinds = {}
    for name in names:
        entry = FRAMEWORKS[name]
        resource = entry.framework().resource
        kinds[(resource.group, entry.kind)] = admission.Kind(resource.group, entry.kind, _validator(entry),
                                                             _warner(entry))
    return kinds


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter("controller_runtime_webhook_requests_total",
                                "Total number of admission requests by HTTP status code.", ("webhook", "code"),
                                registry=registry)
        self.latency = Histogram("controller_runtime_webhook_latency_seconds",
                                 "Histogram of the latency of processing admission requests", ("webhook",),
                                 registry=registry)


class WebhookServer:
    def __init__(self, bind_address: str, tls: TLSContext, *, frameworks: Sequence[str],
                 registry: CollectorRegistry | None = None) -> None:
        self.metrics = families_for(_Metrics, registry or CollectorRegistry())
        kinds = job_kinds(frameworks)
        routes: dict[str, PostRoute] = {}
        for name in frameworks:
            entry = FRAMEWORKS[name]
            resource = entry.framework().resource
            only = {(resource.group, entry.kind): kinds[(resource.group, entry.kind)]}
            routes[validate_path(resource.group, resource.version, entry.kind)] = self._route(
                validate_path(resource.group, resource.version, entry.kind),
                lambda body, only=only: admission.review(body, only), admission.ReviewError)
            defaulter = {(resource.group, entry.kind): _defaulter(entry)}
            routes[mutate_path(resource.group, resource.version, entry.kind)] = self._route(
                mutate_path(resource.group, resource.version, entry.kind),
                lambda body, defaulter=defaulter: admission.default_review(body, defaulter), admission.ReviewError)
        routes[CONVERT_PATH] = self._route(CONVERT_PATH, conversion.review, conversion.ReviewError)
        self.paths = tuple(routes)
        self.server = EndpointServer("webhooks", bind_address, {}, routes, tls)

    def _route(self, path: str, answer: Callable[[Mapping[str, Any]], dict[str, Any]],
               malformed: type[Exception]) -> PostRoute:
        def route(body: bytes, headers: Mapping[str, str]) -> Reply:
            started = time.monotonic()
            reply = self._answer(path, body, headers, answer, malformed)
            self.metrics.requests.labels(path, str(reply[0])).inc()
            self.metrics.latency.labels(path).observe(time.monotonic() - started)
            return reply
        return route

    @staticmethod
    def _answer(path: str, body: bytes, headers: Mapping[str, str],
                answer: Callable[[Mapping[str, Any]], dict[str, Any]], malformed: type[Exception]) -> Reply:
        if headers.get("content-type", "").split(";")[0].strip() != JSON:
            return 415, TEXT, b"contentType must be application/json\n"
        try:
            review = json.loads(body)
            if not isinstance(review, dict):
                raise malformed("the body is not a JSON object")
        except (ValueError, RecursionError, malformed) as e:   # json's errors are ValueErrors; deep nesting recurses
            log.info("webhook %s: malformed request: %s", path, e)
            return 400, TEXT, f"{str(e)[:200]}\n".encode()
        try:
            return 200, JSON, json.dumps(answer(review), separators=(",", ":")).encode()
        except malformed as e:
            log.info("webhook %s: malformed review: %s", path, e)
            return 400, TEXT, f"{e}\n".encode()
        except Exception:   # a bug of ours: answered (the API server applies its failurePolicy), never a dropped line
            log.exception("webhook %s: failed to answer a review", path)
            return 500, TEXT, b"internal error answering the review\n"

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return self.server.port

    def start(self) -> WebhookServer:
        self.server.start()
        return self

    def stop(self, timeout: float = 5.0) -> bool:
        return self.server.stop(timeout)
