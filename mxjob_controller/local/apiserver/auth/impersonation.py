"""Impersonation (``kubectl --as``), as kube-apiserver's ``WithImpersonation`` filter does it.

A request may ask to act as another user with the headers ``Impersonate-User``, ``Impersonate-Group`` (repeated),
``Impersonate-Uid`` and ``Impersonate-Extra-<key>`` (repeated; the key lower-cased and %-unescaped). Each thing
asked for is authorized on its own, for the authenticated caller, with the verb ``impersonate``:

- a user named ``system:serviceaccount:<ns>:<name>`` is the resource ``serviceaccounts`` ``<name>`` in ``<ns>``,
  any other user ``users`` ``<name>``; both in the core group;
- each group ``groups``, the uid ``uids`` and each extra value ``userextras/<key>`` (``authentication.k8s.io``).

The first refusal answers kube's 403 for that attribute, e.g. ``users "alice" is forbidden: User "bob" cannot
impersonate resource "users" in API group "" at the cluster scope``. Groups, a uid or extras without a user are a
500, as kube's filter answers them. Once every part is allowed the request *is* the impersonated user: RBAC, the
review APIs (``auth whoami``, ``auth can-i``), admission webhooks and managed fields see it, while the audit log
keeps both. As kube does, a service account without explicit groups gets its fixed groups, and every impersonated
user other than ``system:anonymous`` is in ``system:authenticated`` unless the groups given say
``system:authenticated`` or ``system:unauthenticated`` (``system:anonymous`` gets ``system:unauthenticated``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from mxjob_controller.local.apiserver.auth.rbac import Attributes
from mxjob_controller.local.apiserver.auth.user import (
    ANONYMOUS_NAME,
    AUTHENTICATED,
    SERVICE_ACCOUNTS,
    UNAUTHENTICATED,
    UserInfo,
    service_account_username,
    split_service_account_username,
)
from mxjob_controller.local.apiserver.errors import StatusError

USER_HEADER = "Impersonate-User"
GROUP_HEADER = "Impersonate-Group"
UID_HEADER = "Impersonate-Uid"
EXTRA_HEADER_PREFIX = "Impersonate-Extra-"
VERB = "impersonate"
_AUTHENTICATION_V1 = "authentication.k8s.io/v1"
_PERCENT_ESCAPES = re.compile(r"%(?![0-9A-Fa-f]{2})")   # a % not followed by two hex digits: not escaped

# kind → (API group, resource) of the attributes the caller is authorized on
_RESOURCES = {"ServiceAccount": ("", "serviceaccounts"), "User": ("", "users"), "Group": ("", "groups"),
              "UserExtra": ("authentication.k8s.io", "userextras"), "UID": ("authentication.k8s.io", "uids")}


@dataclass(frozen=True, slots=True)
class Target:
    """One thing asked for: kube's ``ObjectReference`` built by ``buildImpersonationRequests``."""

    kind: str                 # ServiceAccount, User, Group, UserExtra or UID
    name: str                 # the user, group, uid or extra value
    namespace: str = ""       # a service account's
    api_version: str = ""     # authentication.k8s.io/v1 for UserExtra and UID
    field_path: str = ""      # an extra's key

    def go_string(self) -> str:
        """The reference as Go's ``%v`` prints it (kube's error quotes the list so)."""
        fields = (self.kind, self.namespace, self.name, "", self.api_version, "", self.field_path)
        return "{" + " ".join(fields) + "}"

    def attributes(self, requestor: UserInfo) -> Attributes:
        """What ``requestor`` must be allowed to impersonate this."""
        group, resource = _RESOURCES[self.kind]
        version = self.api_version.rpartition("/")[2]
        return Attributes(requestor, VERB, True, group, version, resource, self.field_path, self.namespace, self.name)


def _extra_key(header_name: str) -> str:
    """An extra's key from its header name: lower-cased, then %-unescaped unless malformed (Go's ``PathUnescape``,
    whose error keeps the key as sent)."""
    key = header_name[len(EXTRA_HEADER_PREFIX):].lower()   # Go canonicalizes the name: its case is not kept
    return key if _PERCENT_ESCAPES.search(key) else unquote(key, errors="replace")


def requested(headers: Any, request_uri: str) -> list[Target]:
    """What ``headers`` (``http.Headers``: names case-insensitive) ask to act as, in kube's order; []
    when nothing. Raises kube's 500 for groups, extras or a uid without a user (its message quotes
    ``request_uri``)."""
    targets: list[Target] = []
    user = headers.get(USER_HEADER) or ""
    if user:
        account = split_service_account_username(user)
        targets.append(Target("ServiceAccount", account[1], account[0]) if account else Target("User", user))
    groups = headers.get_all(GROUP_HEADER) or []
    targets += [Target("Group", group) for group in groups]
    prefix = EXTRA_HEADER_PREFIX.lower()
    extras = [Target("UserExtra", value, api_version=_AUTHENTICATION_V1, field_path=_extra_key(name))
              for name in headers.names() if name.startswith(prefix) for value in headers.get_all(name)]
    targets += extras
    uid = headers.get(UID_HEADER) or ""
    if uid:
        targets.append(Target("UID", uid, api_version=_AUTHENTICATION_V1))
    if (groups or extras or uid) and not user:
        listed = "[" + " ".join(t.go_string() for t in targets) + "]"
        raise StatusError(500, "InternalError", f"Internal Server Error: {json.dumps(request_uri, ensure_ascii=False)}"
                                                f": requested {listed} without impersonating a user")
    return targets


def impersonated_user(targets: Iterable[Target], groups_given: bool) -> UserInfo:
    """The user a request acts as once every target is allowed."""
    name, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for target in targets:
        if target.kind == "ServiceAccount":
            name = service_account_username(target.namespace, target.name)
            if not groups_given:   # a service account's groups are known: its fixed ones
                groups = [SERVICE_ACCOUNTS, f"{SERVICE_ACCOUNTS}:{target.namespace}"]
        elif target.kind == "User":
            name = target.name
        elif target.kind == "Group":
            groups.append(target.name)
        elif target.kind == "UserExtra":
            extra.setdefault(target.field_path, []).append(target.name)
        elif target.kind == "UID":
            uid = target.name
    if name != ANONYMOUS_NAME:
        if AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
            groups.append(AUTHENTICATED)
    elif UNAUTHENTICATED not in groups:
        groups.append(UNAUTHENTICATED)
    return UserInfo(name, uid, tuple(groups), tuple((k, tuple(v)) for k, v in extra.items()))
