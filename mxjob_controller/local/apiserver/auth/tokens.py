"""Bearer tokens → users: the server's only way to authenticate a request (kube's token authenticators).

Two kinds of token, each an opaque random string (256 bits) known only to this process:

- a *user* token names a fixed user (kube's ``--token-auth-file``): the kubeconfig's administrator, the local
  cluster's own parts, users a test makes up;
- a *service-account* token names ``<namespace>/<name>`` (kube's bound service-account tokens, from a TokenRequest
  or a pod's projected volume). It authenticates only while that ServiceAccount exists, and only as the
  ServiceAccount it was first used with (bound to its uid): deleting the account revokes it, and an account
  re-created under the same name does not inherit it. A token may be issued before its account exists (``local up
  --serviceaccount`` writes the token before ``kubectl apply`` creates the account): it is bound on first use.
  Tokens from a TokenRequest expire (``expirationSeconds``); the others live as long as the server. One bound to
  an object (a TokenRequest's ``boundObjectRef``: a Pod or a Secret of the account's namespace) authenticates only
  while that object exists with the uid it had: deleting the pod revokes it, as kube's bound tokens.

An unknown, expired or revoked token authenticates nobody (the request gets 401). Tokens are never logged. Expired
tokens are forgotten when the next token is issued, and a revoked one when it is next presented, so a long-lived
server issuing TokenRequests holds only the tokens that can still authenticate.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.local.apiserver.auth.user import UserInfo, service_account_user

ServiceAccountLookup = Callable[[str, str], "Mapping[str, Any] | None"]
"""(namespace, name) → the ServiceAccount object, or None."""
ObjectLookup = Callable[[str, str, str], "Mapping[str, Any] | None"]
"""(kind, namespace, name) → the object a token is bound to, or None."""


@dataclass(slots=True)
class _Issued:
    user: UserInfo | None = None                  # a user token
    account: tuple[str, str] | None = None        # a service-account token: (namespace, name)
    uid: str = ""                                 # the account it is bound to ("": bound on first use)
    expires: float | None = None                  # time.time() after which it is refused
    bound: tuple[str, str, str] | None = None     # (kind, name, uid) of the object it lives with


class TokenAuthenticator:
    def __init__(self, lookup: ServiceAccountLookup, clock: Callable[[], float] = time.time,
                 objects: ObjectLookup | None = None) -> None:
        self._lookup = lookup
        self._objects = objects
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens: dict[str, _Issued] = {}

    def issue_user(self, user: UserInfo) -> str:
        return self._issue(_Issued(user=user))

    def issue_service_account(self, namespace: str, name: str, uid: str = "",
                              expiration_seconds: float | None = None,
                              bound: tuple[str, str, str] | None = None) -> str:
        expires = None if expiration_seconds is None else self._clock() + expiration_seconds
        return self._issue(_Issued(account=(namespace, name), uid=uid, expires=expires, bound=bound))

    def __len__(self) -> int:
        """How many tokens are held (issued, and not yet forgotten as expired or revoked)."""
        with self._lock:
            return len(self._tokens)

    def _issue(self, issued: _Issued) -> str:
        token = secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            expired = [t for t, i in self._tokens.items() if i.expires is not None and now >= i.expires]
            for old in expired:   # else every TokenRequest would stay here for the server's life
                del self._tokens[old]
            self._tokens[token] = issued
        return token

    def _forget(self, token: str) -> None:
        with self._lock:
            self._tokens.pop(token, None)

    def authenticate(self, token: str) -> UserInfo | None:
        """The user ``token`` stands for now; None when it stands for nobody."""
        with self._lock:
            issued = self._tokens.get(token)
        if issued is None:
            return None
        if issued.expires is not None and self._clock() >= issued.expires:
            self._forget(token)
            return None
        if issued.user is not None:
            return issued.user
        assert issued.account is not None
        namespace, name = issued.account
        if issued.bound is not None and not self._bound_alive(namespace, issued.bound):
            self._forget(token)   # its pod (or Secret) is gone: revoked for good
            return None
        account = self._lookup(namespace, name)
        if account is None:
            if issued.uid:   # its account is gone: revoked for good (one made anew has another uid)
                self._forget(token)
            return None
        uid = (account.get("metadata") or {}).get("uid") or ""
        with self._lock:
            if not issued.uid:
                issued.uid = uid
            elif issued.uid != uid:
                self._tokens.pop(token, None)
                return None   # another account of the same name: the one it was bound to is gone
        return service_account_user(namespace, name, uid)


    def _bound_alive(self, namespace: str, bound: tuple[str, str, str]) -> bool:
        kind, name, uid = bound
        found = self._objects(kind, namespace, name) if self._objects is not None else None
        return found is not None and (found.get("metadata") or {}).get("uid") == uid


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header (scheme case-insensitive); "" for a bearer header
    without a token, None for no header or another scheme."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip()
