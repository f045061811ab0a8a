"""The attributes a request is authorized by (local/apiserver/auth/authorizer.py), as kube's RequestInfo makes them:
a list or watch narrowed by ``metadata.name=`` names that object, other selectors and a deletecollection name
none, and a namespace is in itself."""

from __future__ import annotations

import pytest

from mxjob_controller.local.apiserver.auth.authorizer import request_attributes
from mxjob_controller.local.apiserver.auth.user import service_account_user
from mxjob_controller.local.apiserver.request import RequestInfo
from mxjob_controller.local.apiserver.router import Router

SA = service_account_user("ops", "bot")


@pytest.mark.parametrize(("method", "path", "query", "expected"), [
    ("GET", "/api/v1/namespaces/ns/pods", {"fieldSelector": "metadata.name=p"}, ("list", "ns", "p")),
    ("GET", "/api/v1/namespaces/ns/pods", {"watch": "1", "fieldSelector": "metadata.name=p,status.phase=Running"},
     ("watch", "ns", "p")),
    ("GET", "/api/v1/namespaces/ns/pods", {"fieldSelector": "metadata.name!=p"}, ("list", "ns", "")),
    ("GET", "/api/v1/namespaces/ns/pods", {"fieldSelector": "metadata.name=a/b"}, ("list", "ns", "")),
    ("DELETE", "/api/v1/namespaces/ns/pods", {"fieldSelector": "metadata.name=p"}, ("deletecollection", "ns", "")),
    ("GET", "/api/v1/namespaces/team-a", {}, ("get", "team-a", "team-a")),
    ("PUT", "/api/v1/namespaces/team-a/finalize", {}, ("update", "team-a", "team-a")),
])
def test_request_attributes_as_kube_s_request_info(method, path, query, expected):
    info = RequestInfo(method=method, path=path)
    assert Router.__new__(Router)._fill_resource_info(info, path.strip("/").split("/"), query)
    attrs = request_attributes(info, query, SA)
    assert (attrs.verb, attrs.namespace, attrs.name) == expected
