"""The review APIs: what ``kubectl auth can-i`` and ``kubectl auth whoami`` ask, and service-account TokenRequests.

- ``authorization.k8s.io/v1`` SelfSubjectAccessReview (``can-i VERB RESOURCE``): the caller's own access, decided
  by the same authorizer as its requests, with kube's reason (``RBAC: allowed by ClusterRoleBinding ...``);
- ``authorization.k8s.io/v1`` SelfSubjectRulesReview (``can-i --list``): every rule the caller has in a namespace;
- ``authentication.k8s.io/v1`` SelfSubjectReview (``whoami``): the caller as the server authenticated it;
- ``serviceaccounts/<name>/token`` (``kubectl create token``): a token of that account, expiring.

Each is a create that stores nothing and answers 201 with the object and its ``status``, as kube-apiserver does.
Who may call them is the authorizer's business (every authenticated user may ask about itself: the bootstrap
policy's ``system:basic-user``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from mxjob_controller.kube import field_errors
from mxjob_controller.kube.timefmt import now_rfc3339, rfc3339
from mxjob_controller.local.apiserver import builtin, errors
from mxjob_controller.local.apiserver.auth.authorizer import Authorizer
from mxjob_controller.local.apiserver.auth.rbac import Attributes
from mxjob_controller.local.apiserver.auth.tokens import TokenAuthenticator
from mxjob_controller.local.apiserver.auth.user import ADMIN, UserInfo
from mxjob_controller.local.apiserver.encoding import kubeproto
from mxjob_controller.local.apiserver.errors import Resource
from mxjob_controller.local.apiserver.request import Request, Response, dumps
from mxjob_controller.local.apiserver.resources import ResourceType
from mxjob_controller.local.apiserver.validation import strict_json

AUTHORIZATION = "authorization.k8s.io"
AUTHENTICATION = "authentication.k8s.io"

SELF_SUBJECT_ACCESS_REVIEWS = ResourceType(AUTHORIZATION, "v1", "selfsubjectaccessreviews", "selfsubjectaccessreview",
                                           "SelfSubjectAccessReview", namespaced=False, verbs=("create",))
SELF_SUBJECT_RULES_REVIEWS = ResourceType(AUTHORIZATION, "v1", "selfsubjectrulesreviews", "selfsubjectrulesreview",
                                          "SelfSubjectRulesReview", namespaced=False, verbs=("create",))
SELF_SUBJECT_REVIEWS = ResourceType(AUTHENTICATION, "v1", "selfsubjectreviews", "selfsubjectreview",
                                    "SelfSubjectReview", namespaced=False, verbs=("create",))
REVIEW_TYPES = (SELF_SUBJECT_ACCESS_REVIEWS, SELF_SUBJECT_RULES_REVIEWS, SELF_SUBJECT_REVIEWS)

DEFAULT_TOKEN_SECONDS = 3600        # a TokenRequest's default expirationSeconds
MIN_TOKEN_SECONDS = 600             # kube refuses shorter ones
MAX_TOKEN_SECONDS = 1 << 32
_AUDIENCES = ["https://kubernetes.default.svc.cluster.local"]


def _user(req: Request) -> UserInfo:
    """The caller: who the server authenticated, or, when it authenticates nobody, the administrator."""
    return req.user if isinstance(req.user, UserInfo) else ADMIN


def _body(req: Request) -> dict[str, Any]:
    """The request's object, from JSON or (kubectl's typed clients) protobuf."""
    kind = req.rt.kind if req.subresource is None else "TokenRequest"
    ctype = req.content_type.split(";")[0].strip().lower()
    if ctype not in ("", "application/json", "*/*", kubeproto.MEDIA_TYPE):
        raise errors.unsupported_media_type(ctype)
    try:
        obj = (kubeproto.decode_object(req.body) if ctype == kubeproto.MEDIA_TYPE
               else strict_json.loads(req.body or b"{}"))
    except KeyError as e:  # a kind with no protobuf message here
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): cannot decode "
                                 f"{e.args[0] or 'an unnamed kind'} from protobuf") from None
    except ValueError as e:
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind}): {e}") from None
    if not isinstance(obj, dict) or obj.get("kind") not in (None, kind):
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {kind})")
    return obj


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _string(attrs: Mapping[str, Any], key: str) -> str:
    value = attrs.get(key)
    return value if isinstance(value, str) else ""


def _answer(rt: ResourceType, spec: Mapping[str, Any], status: dict[str, Any]) -> Response:
    return Response(201, dumps({"kind": rt.kind, "apiVersion": rt.api_version, "metadata": {"creationTimestamp": None},
                                "spec": dict(spec), "status": status}))


class Reviews:
    def __init__(self, authorizer: Authorizer, tokens: TokenAuthenticator,
                 lookup: Callable[[str, str], Mapping[str, Any] | None],
                 objects: Callable[[str, str, str], Mapping[str, Any] | None] = lambda _k, _ns, _n: None) -> None:
        self._authorizer = authorizer
        self._tokens = tokens
        self._lookup = lookup   # (namespace, name) → a ServiceAccount
        self._objects = objects   # (kind, namespace, name) → a Pod or Secret a token may be bound to

    def creators(self) -> dict[str, Callable[[Request], Response]]:
        """Storage key → handler, for ``REST.virtual_creators``."""
        return {SELF_SUBJECT_ACCESS_REVIEWS.storage_key: self.access_review,
                SELF_SUBJECT_RULES_REVIEWS.storage_key: self.rules_review,
                SELF_SUBJECT_REVIEWS.storage_key: self.subject_review}

    def access_review(self, req: Request) -> Response:
        spec = _spec(_body(req))
        resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
        res = Resource(AUTHORIZATION, SELF_SUBJECT_ACCESS_REVIEWS.plural, SELF_SUBJECT_ACCESS_REVIEWS.kind)
        if isinstance(resource, Mapping) and isinstance(non_resource, Mapping):
            raise errors.invalid(res, "", [field_errors.invalid("spec.nonResourceAttributes", non_resource,
                                                                "cannot be specified in combination with "
                                                                "resourceAttributes")])
        user = _user(req)
        if isinstance(resource, Mapping):
            attrs = Attributes(user, _string(resource, "verb"), True, _string(resource, "group"),
                               _string(resource, "version"), _string(resource, "resource"),
                               _string(resource, "subresource"), _string(resource, "namespace"),
                               _string(resource, "name"))
        elif isinstance(non_resource, Mapping):
            attrs = Attributes(user, _string(non_resource, "verb"), False, path=_string(non_resource, "path"))
        else:
            raise errors.invalid(res, "", [field_errors.invalid("spec.resourceAttributes", None,
                                                                "exactly one of nonResourceAttributes or "
                                                                "resourceAttributes must be specified")])
        decision = self._authorizer.authorize(attrs)
        status: dict[str, Any] = {"allowed": decision.allowed}
        if decision.reason:
            status["reason"] = decision.reason
        return _answer(SELF_SUBJECT_ACCESS_REVIEWS, spec, status)

    def rules_review(self, req: Request) -> Response:
        spec = _spec(_body(req))
        namespace = _string(spec, "namespace")
        if not namespace:
            raise errors.bad_request("no namespace on request")
        rules, problems = self._authorizer.rules_for(_user(req), namespace)
        resource_rules, non_resource_rules = [], []
        for rule in rules:
            if rule.get("resources"):
                resource_rules.append({k: list(rule[k]) for k in ("verbs", "apiGroups", "resources", "resourceNames")
                                       if rule.get(k)})
            if rule.get("nonResourceURLs"):
                non_resource_rules.append({"verbs": list(rule.get("verbs") or ()),
                                           "nonResourceURLs": list(rule["nonResourceURLs"])})
        status: dict[str, Any] = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                                  "incomplete": False}
        if problems:
            status["evaluationError"] = problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
        return _answer(SELF_SUBJECT_RULES_REVIEWS, spec, status)

    def subject_review(self, req: Request) -> Response:
        _body(req)
        body = {"kind": SELF_SUBJECT_REVIEWS.kind, "apiVersion": SELF_SUBJECT_REVIEWS.api_version,
                "metadata": {"creationTimestamp": None}, "status": {"userInfo": _user(req).to_json()}}
        return Response(201, dumps(body))

    def token_request(self, req: Request) -> Response:
        """``POST serviceaccounts/<name>/token``: a token of an existing account, bound to it, expiring."""
        namespace, name = req.namespace or "", req.name or ""
        account = self._lookup(namespace, name)
        if account is None:
            raise errors.not_found(builtin.SERVICEACCOUNTS.resource, name)
        spec = dict(_spec(_body(req)))
        seconds = spec.get("expirationSeconds", DEFAULT_TOKEN_SECONDS)
        res = Resource(AUTHENTICATION, "tokenrequests", "TokenRequest")
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise errors.invalid(res, name, [field_errors.invalid("spec.expirationSeconds", seconds,
                                                                  "must be an integer")])
        if seconds < MIN_TOKEN_SECONDS:
            raise errors.invalid(res, name, [field_errors.invalid("spec.expirationSeconds", seconds,
                                                                  "may not specify a duration less than 10 minutes")])
        if seconds > MAX_TOKEN_SECONDS:
            raise errors.invalid(res, name, [field_errors.invalid("spec.expirationSeconds", seconds,
                                                                  "may not specify a duration larger than 2^32 "
                                                                  "seconds")])
        spec["expirationSeconds"] = seconds
        spec.setdefault("audiences", list(_AUDIENCES))
        spec.setdefault("boundObjectRef", None)
        bound = self._bound(namespace, name, spec["boundObjectRef"]) if spec["boundObjectRef"] else None
        if bound is not None:
            spec["boundObjectRef"] = {**spec["boundObjectRef"], "uid": bound[2]}
        uid = (account.get("metadata") or {}).get("uid") or ""
        token = self._tokens.issue_service_account(namespace, name, uid, expiration_seconds=seconds, bound=bound)
        body = {"kind": "TokenRequest", "apiVersion": f"{AUTHENTICATION}/v1",
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now_rfc3339()},
                "spec": spec, "status": {"token": token, "expirationTimestamp": rfc3339(time.time() + seconds)}}
        return Response(201, json.dumps(body, separators=(",", ":")).encode())

    def _bound(self, namespace: str, account: str, ref: Any) -> tuple[str, str, str]:
        """(kind, name, uid) of a TokenRequest's ``boundObjectRef``, checked as kube's token registry checks it:
        a Pod (running as this account) or a Secret of the namespace, that exists, with the uid given if any."""
        ref = ref if isinstance(ref, Mapping) else {}
        kind, name = ref.get("kind") or "", ref.get("name") or ""
        if ref.get("apiVersion", "v1") != "v1" or kind not in ("Pod", "Secret"):
            raise errors.bad_request(f"cannot bind token to object of type {ref.get('apiVersion') or ''}, "
                                     f"Kind={kind}")
        resource = builtin.PODS.resource if kind == "Pod" else builtin.SECRETS.resource
        found = self._objects(kind, namespace, name)
        if found is None:
            raise errors.not_found(resource, name)
        if kind == "Pod" and ((found.get("spec") or {}).get("serviceAccountName") or "default") != account:
            raise errors.bad_request(f'cannot bind token for serviceaccount "{account}" to pod running with '
                                     "different serviceaccount name.")
        uid = (found.get("metadata") or {}).get("uid") or ""
        if ref.get("uid") and ref["uid"] != uid:
            raise errors.conflict(Resource("", kind, kind), name,
                                  f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
                                  "record. The object might have been deleted and then recreated")
        return kind, name, uid
