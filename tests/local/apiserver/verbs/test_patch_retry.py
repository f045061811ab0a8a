"""A patch that loses its compare-and-swap is applied again, from the request's bytes, to the newer object.

kube-apiserver's patch handler re-applies the patch's bytes on every attempt of its ``GuaranteedUpdate``. A merge
patch's lists (a status's conditions) end up in the object an attempt checks, prunes and defaults in place, so a
retry applying the same decoded patch again found nothing to warn about (it failed so before the fix). These tests
make a real concurrent writer win the race (a validating webhook, a real HTTPS server, writes the object through
the API server while the patch waits for its answer) and hold that the retry answers and stores what a first
attempt would: the unknown-field warnings, the pruned and defaulted lists.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from mxjob_controller.local.apiserver.server import ServerOptions
from tests.support import Kube, wait_for
from tests.webhook_support import Answer, WebhookServer, review_response, validating_configuration

pytestmark = pytest.mark.integration

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
VWC = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
SPROCKETS = "/apis/example.com/v1/namespaces/default/sprockets"
CONDITION = {"type": "object", "properties": {
    "type": {"type": "string"}, "status": {"type": "string"}, "reason": {"type": "string", "default": "Unset"}}}


@pytest.fixture
def server_options() -> ServerOptions:
    return ServerOptions(tls=True)   # the clients speak HTTPS to it, with its CA and the admin's token


@pytest.fixture
def hooks() -> Iterator[WebhookServer]:
    with WebhookServer() as server:
        yield server


def sprocket_crd() -> dict:
    """A CRD whose status has a list of objects (pruned and defaulted item by item), as a job's conditions."""
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
        "status": {"type": "object", "properties": {
            "phase": {"type": "string"}, "conditions": {"type": "array", "items": CONDITION}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "sprockets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "sprockets", "singular": "sprocket", "kind": "Sprocket"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}]}}


class Overtaker:
    """The webhook's answer: allow, but first (``times`` times) have another client write the sprocket, so that
    the write being admitted loses its compare-and-swap."""

    def __init__(self, other: Kube, times: int) -> None:
        self.other, self.left, self.calls = other, times, 0
        self.lock = threading.Lock()

    def __call__(self, review: Any) -> Answer:
        with self.lock:
            self.calls += 1
            overtake, self.left = self.left > 0, self.left - 1
        if overtake:
            name = review["request"]["name"]
            reply = self.other.patch(f"{SPROCKETS}/{name}", {"metadata": {"labels": {"overtaken": str(self.calls)}}})
            assert reply.status == 200, reply.body
        return Answer(review_response(review, True))


def _setup(apiserver: Any, kube: Kube, hooks: WebhookServer, times: int) -> Overtaker:
    assert kube.post(CRDS, sprocket_crd()).status == 201
    wait_for(lambda: kube.get(SPROCKETS).status == 200)
    other = Kube.of(apiserver, user_agent="overtaker")
    overtaker = Overtaker(other, times)
    hooks.answer("/validate", overtaker)
    rules = [{"operations": ["UPDATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"],
              "resources": ["sprockets/status"]}]
    reply = kube.post(VWC, validating_configuration("race.example.com", hooks.url("/validate"), hooks.ca_bundle,
                                                    rules=rules))
    assert reply.status == 201, reply.body
    body = {"apiVersion": "example.com/v1", "kind": "Sprocket", "metadata": {"name": "s"}, "spec": {"size": 1}}
    assert kube.post(SPROCKETS, body).status == 201
    return overtaker


def _wait_for_the_webhook(kube: Kube, overtaker: Overtaker) -> None:
    """The configuration is served to the admission chain shortly after its create: patch the status until the
    webhook sees a write (the first it sees, it overtakes)."""
    def seen() -> bool:
        assert kube.patch(f"{SPROCKETS}/s/status", {"status": {"phase": "warming"}}).status == 200
        return overtaker.calls > 0
    wait_for(seen)


@pytest.mark.parametrize("content_type", ["application/merge-patch+json", "application/json-patch+json"])
def test_a_retried_patch_warns_and_prunes_as_its_first_attempt(apiserver, kube, hooks, content_type):
    overtaker = _setup(apiserver, kube, hooks, times=0)
    _wait_for_the_webhook(kube, overtaker)
    conditions = [{"type": "Running", "status": "True", "bogus": 1}, {"type": "Created", "status": "True"}]
    if content_type == "application/merge-patch+json":
        patch: Any = {"status": {"phase": "Running", "conditions": conditions}}
    else:
        patch = [{"op": "add", "path": "/status/conditions", "value": conditions},
                 {"op": "replace", "path": "/status/phase", "value": "Running"}]
    with overtaker.lock:
        overtaker.left, calls_before = 1, overtaker.calls
    reply = kube.patch(f"{SPROCKETS}/s/status", patch, content_type=content_type)
    assert reply.status == 200, reply.body
    assert overtaker.calls - calls_before == 2, "the webhook overtook the first attempt, then admitted the retry"
    assert reply.body["metadata"]["labels"] == {"overtaken": str(calls_before + 1)}, "applied to the newer object"
    assert reply.headers.get("warning") == '299 - "unknown field \\"status.conditions[0].bogus\\""'
    want = [{"type": "Running", "status": "True", "reason": "Unset"},
            {"type": "Created", "status": "True", "reason": "Unset"}]
    assert reply.body["status"] == {"phase": "Running", "conditions": want}
    assert kube.get(f"{SPROCKETS}/s").body["status"] == {"phase": "Running", "conditions": want}


def test_a_patch_overtaken_twice_still_warns_once(apiserver, kube, hooks):
    """kube's warning recorder keeps one of equal warnings: the attempts' warnings are the last attempt's."""
    overtaker = _setup(apiserver, kube, hooks, times=0)
    _wait_for_the_webhook(kube, overtaker)
    with overtaker.lock:
        overtaker.left = 2
    patch = {"status": {"conditions": [{"type": "Running", "status": "True", "bogus": 1, "extra": {"a": 1}}]}}
    reply = kube.patch(f"{SPROCKETS}/s/status", patch)
    assert reply.status == 200, reply.body
    assert reply.headers.get("warning") == ('299 - "unknown field \\"status.conditions[0].bogus\\"", '
                                            '299 - "unknown field \\"status.conditions[0].extra\\""')
    assert reply.body["status"]["conditions"] == [{"type": "Running", "status": "True", "reason": "Unset"}]
