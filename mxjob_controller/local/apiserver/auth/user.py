"""Who a request is from, as kube-apiserver's authenticators describe a user (``user.Info``).

The names and groups are Kubernetes' own: a request without credentials is ``system:anonymous`` in the group
``system:unauthenticated`` (kube's anonymous authenticator); a service account is the user
``system:serviceaccount:<ns>:<name>`` in the groups ``system:serviceaccounts``, ``system:serviceaccounts:<ns>`` and
``system:authenticated``; members of ``system:masters`` are allowed everything before RBAC is asked
(kube-apiserver's privileged-group authorizer).
"""

from __future__ import annotations

from dataclasses import dataclass

from mxjob_controller.kube.names import dns1123_label_errors, dns1123_subdomain_errors

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_NAME = "system:anonymous"
SERVICE_ACCOUNTS = "system:serviceaccounts"
SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
ADMIN_NAME = "kubernetes-admin"   # what kubeadm and kind call the kubeconfig's user


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def is_master(self) -> bool:
        return MASTERS in self.groups

    def to_json(self) -> dict:
        """``authentication.k8s.io/v1`` UserInfo, as a SelfSubjectReview returns it (empty fields left out)."""
        out: dict = {"username": self.name}
        if self.uid:
            out["uid"] = self.uid
        if self.groups:
            out["groups"] = list(self.groups)
        if self.extra:
            out["extra"] = {k: list(v) for k, v in self.extra}
        return out


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}"


def split_service_account_username(username: str) -> tuple[str, str] | None:
    """(namespace, name) of a service account's user name; None for any other user, as kube's ``SplitUsername``
    decides it: the namespace must be a valid namespace name and the name a valid ServiceAccount name."""
    if not username.startswith(SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, sep, name = username[len(SERVICE_ACCOUNT_PREFIX):].partition(":")
    if not sep or ":" in name or dns1123_label_errors(namespace) or dns1123_subdomain_errors(name):
        return None
    return namespace, name


def service_account_user(namespace: str, name: str, uid: str = "") -> UserInfo:
    return UserInfo(service_account_username(namespace, name), uid,
                    (SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{namespace}", AUTHENTICATED))


ADMIN = UserInfo(ADMIN_NAME, groups=(MASTERS, AUTHENTICATED))
"""The kubeconfig's user; also who every request is when the server enforces nothing."""


ANONYMOUS = UserInfo(ANONYMOUS_NAME, groups=(UNAUTHENTICATED,))
"""Who a request without a bearer token is, when the server authorizes with RBAC."""
