"""The server's security, assembled: TLS, authentication, impersonation and authorization, one filter before every
request.

Off by default: every request is then the administrator and everything is allowed, as a server without any
``--authorization-mode`` would behave. On (``tls`` or ``authorization="RBAC"``), in kube-apiserver's order:

1. authentication: a bearer token must name a user (:mod:`.tokens`); an unknown, expired or revoked one is a 401
   with kube's ``Unauthorized`` Status. A request without a token (no ``Authorization`` header, another scheme, an
   empty bearer) is ``system:anonymous`` in ``system:unauthenticated``, as kube's anonymous authenticator makes
   it, and RBAC decides: the bootstrap policy lets it read ``/healthz``, ``/livez``, ``/readyz`` and ``/version``
   (``system:public-info-viewer``), and it gets a 403 for anything else. Under ``AlwaysAllow`` there is no
   anonymous user (kube-apiserver turns ``--anonymous-auth`` off there too): no token is a 401;
2. impersonation (``kubectl --as``, :mod:`.impersonation`): ``Impersonate-*`` headers make the request another
   user's, each part authorized (verb ``impersonate``) for the caller first. Also when nothing is enforced: the
   administrator may impersonate anyone, so ``kubectl auth whoami --as=alice`` says alice everywhere;
3. authorization: ``system:masters`` may do anything; everyone else what RBAC grants over the server's own Roles,
   ClusterRoles and bindings (:mod:`.rbac`), else 403 with kube's message, e.g. ``pods is forbidden: User
   "system:serviceaccount:kubeflow:mxjob-controller" cannot create resource "pods" in API group "" in the namespace
   "default"``.

The filters are ``Router.interceptors``, which run before a request's body is read (``http/connection.py``), in
kube-apiserver's order: authentication and impersonation (:meth:`Security.intercept`), flow control
(``http/flowcontrol.py``), authorization (:meth:`Security.intercept_authorization`). So a 401 and an impersonation's
403 carry no ``X-Kubernetes-PF-*`` headers and an authorization's 403 does, as kube's answers. A refused request
reaches neither fault injection nor a handler, and its body is never read (kube refuses a
forbidden request before it knows whether the resource exists). With RBAC the server starts with kube's bootstrap
policy (``cluster-admin`` for ``system:masters``; discovery and the self-reviews for every authenticated user;
health and version for everyone), runs the cluster-role aggregation controller's part and refuses RBAC writes that
would grant more than their writer holds (``kinds/rbac.py``), and admits owner references as OpenShift does
(``admission.py``: ``blockOwnerDeletion`` needs ``update`` on the owner's finalizers).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from mxjob_controller.local.apiserver import builtin
from mxjob_controller.local.apiserver.auth import impersonation, rbac
from mxjob_controller.local.apiserver.auth.authorizer import (
    ALWAYS_ALLOW,
    RBAC,
    Authorizer,
    StorePolicy,
    request_attributes,
)
from mxjob_controller.local.apiserver.auth.reviews import Reviews
from mxjob_controller.local.apiserver.auth.serving_cert import apiserver_tls
from mxjob_controller.local.apiserver.auth.tokens import TokenAuthenticator, bearer_token
from mxjob_controller.local.apiserver.auth.user import (
    ADMIN,
    ANONYMOUS,
    AUTHENTICATED,
    MASTERS,
    UNAUTHENTICATED,
    UserInfo,
)
from mxjob_controller.local.apiserver.errors import StatusError
from mxjob_controller.local.apiserver.request import Exchange
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.files import write_atomically

log = logging.getLogger(__name__)

_RBAC_V1 = "rbac.authorization.k8s.io/v1"
_BOOTSTRAP_LABELS = {"kubernetes.io/bootstrapping": "rbac-defaults"}
_AUTOUPDATE = {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def unauthorized() -> StatusError:
    """kube's 401 (``apierrors.NewUnauthorized("Unauthorized")``)."""
    return StatusError(401, "Unauthorized", "Unauthorized")


def bootstrap_policy() -> list[dict[str, Any]]:
    """What kube-apiserver's RBAC bootstrap policy creates that clients of this server rely on."""
    def role(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": _RBAC_V1, "kind": "ClusterRole",
                "metadata": {"name": name, "labels": dict(_BOOTSTRAP_LABELS), "annotations": dict(_AUTOUPDATE)},
                "rules": list(rules)}

    def binding(name: str, *groups: str) -> dict[str, Any]:
        return {"apiVersion": _RBAC_V1, "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": dict(_BOOTSTRAP_LABELS), "annotations": dict(_AUTOUPDATE)},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g} for g in groups]}

    public_urls = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
    return [
        role("cluster-admin", *(dict(r) for r in rbac.EVERYTHING)),
        binding("cluster-admin", MASTERS),
        role("system:discovery", {"verbs": ["get"], "nonResourceURLs": [
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
            "/version", "/version/"]}),
        binding("system:discovery", AUTHENTICATED),
        role("system:basic-user",
             {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
              "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
             {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"]}),
        binding("system:basic-user", AUTHENTICATED),
        role("system:public-info-viewer", {"verbs": ["get"], "nonResourceURLs": public_urls}),
        binding("system:public-info-viewer", AUTHENTICATED, UNAUTHENTICATED),
        role("system:monitoring", {"verbs": ["get"], "nonResourceURLs": [
            "/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*"]}),
        binding("system:monitoring", "system:monitoring"),
    ]


class Security:
    """TLS material, tokens and the authorizer of one server; :meth:`intercept` is its request filter."""

    def __init__(self, store: Store, *, tls: bool = False, authorization: str = ALWAYS_ALLOW,
                 host: str = "127.0.0.1") -> None:
        self.store = store
        self.authorization = authorization
        self.enforcing = tls or authorization == RBAC
        # kube-apiserver resets --anonymous-auth to false under AlwaysAllow: anonymous would then be anything.
        self.anonymous = authorization == RBAC
        self.tls = apiserver_tls(host) if tls else None
        self.tokens = TokenAuthenticator(self.service_account, objects=self.bindable)
        self.authorizer = Authorizer(authorization, StorePolicy(store))
        self.reviews = Reviews(self.authorizer, self.tokens, self.service_account, self.bindable)
        # The kubeconfig's user. Without enforcement no token is needed (none is written).
        self.admin_token = self.tokens.issue_user(ADMIN) if self.enforcing else None

    def service_account(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        entry = self.store.get(builtin.SERVICEACCOUNTS.storage_key, (namespace, name))
        return entry.obj if entry is not None else None

    def bindable(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """The Pod or Secret a bound token may live with (tokens.py), or None."""
        rt = {"Pod": builtin.PODS, "Secret": builtin.SECRETS}.get(kind)
        entry = self.store.get(rt.storage_key, (namespace, name)) if rt is not None else None
        return entry.obj if entry is not None else None

    # --- the filter -----------------------------------------------------------------------------------

    def intercept(self, ex: Exchange) -> None:
        """Authenticate, then impersonate ``ex``: the filters before flow control in kube's chain; raise the 401 or
        403 a refused request gets (with no PF headers: flow control never saw it)."""
        requestor = self.authenticate(ex.headers.get("Authorization")) if self.enforcing else None
        ex.user = requestor
        uri = ex.info.path + (f"?{urlencode(ex.query)}" if ex.query else "")
        targets = impersonation.requested(ex.headers, uri)
        if targets:
            caller = requestor or ADMIN   # unenforced, every request is the administrator
            ex.user = self.impersonate(caller, targets, bool(ex.headers.get_all(impersonation.GROUP_HEADER)))
            ex.impersonator = caller

    def intercept_authorization(self, ex: Exchange) -> None:
        """Authorize ``ex``: the filter after flow control in kube's chain, so a 403 here carries the PF headers
        (and took a seat, as kube's does)."""
        if self.enforcing:
            self.authorize(ex, ex.user)

    def impersonate(self, requestor: UserInfo, targets: list[impersonation.Target], groups_given: bool) -> UserInfo:
        """The user ``requestor`` acts as, each part of it authorized (``impersonate``) first: kube's 403 for the
        first part refused."""
        for target in targets:
            self.check(target.attributes(requestor))
        return impersonation.impersonated_user(targets, groups_given)

    def authenticate(self, authorization: str | None) -> UserInfo:
        """Who an ``Authorization`` header says the caller is: a token's user, else (no token) anonymous; 401 for a
        token that names nobody, and for no token where there is no anonymous user."""
        token = bearer_token(authorization)
        if not token:
            if self.anonymous:
                return ANONYMOUS
            raise unauthorized()
        user = self.tokens.authenticate(token)
        if user is None:
            raise unauthorized()
        return user

    def authorize(self, ex: Exchange, user: UserInfo) -> None:
        """The 403 a request ``user`` may not make gets (kube's message and details)."""
        self.check(request_attributes(ex.info, ex.query, user))

    def check(self, attrs: rbac.Attributes) -> None:
        """Raise kube's 403 (``responsewriters.Forbidden``) unless ``attrs`` are allowed."""
        decision = self.authorizer.authorize(attrs)
        if decision.allowed:
            return
        message, details = rbac.forbidden_status(attrs, decision.reason)
        log.debug("forbidden: %s", message)
        raise StatusError(403, "Forbidden", message, details)

    # --- credentials ----------------------------------------------------------------------------------

    def issue_user_token(self, name: str, groups: tuple[str, ...] = (), uid: str = "") -> str:
        """A token for a made-up user (kube's ``--token-auth-file``), always also in ``system:authenticated``."""
        all_groups = tuple(dict.fromkeys((*groups, AUTHENTICATED)))
        return self.tokens.issue_user(UserInfo(name, uid, all_groups))

    def issue_service_account_token(self, namespace: str, name: str) -> str:
        """A token of the ServiceAccount ``namespace/name``, which may not exist yet (bound on first use)."""
        account = self.service_account(namespace, name)
        uid = ((account or {}).get("metadata") or {}).get("uid") or ""
        return self.tokens.issue_service_account(namespace, name, uid)

    def write_token_dir(self, directory: str | os.PathLike[str], namespace: str, name: str) -> Path:
        """``token``, ``ca.crt`` and ``namespace`` of ``namespace/name``, as a pod's projected service-account
        volume holds them; each file written whole (temp file and rename), the token 0600."""
        if self.tls is None:
            raise ValueError("a service-account token directory needs TLS: in-cluster clients speak https only")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        for filename, data, mode in (("ca.crt", self.tls.ca_pem, 0o644), ("namespace", namespace.encode(), 0o644),
                                     ("token", self.issue_service_account_token(namespace, name).encode(), 0o600)):
            write_atomically(path / filename, data, mode)
        return path

    def close(self) -> None:
        if self.tls is not None:
            self.tls.close()

