"""A kubeconfig user's ``auth-provider``: ``oidc`` refreshed here, ``gcp`` and ``azure`` by the official client.

kubectl removed the ``gcp`` and ``azure`` providers in 1.26 (their replacements are ``exec`` plugins:
``gke-gcloud-auth-plugin``, ``kubelogin``), but kubeconfigs holding them remain, and ``oidc`` is still in client-go.

- ``oidc`` (:class:`OidcToken`): the ``id-token`` is sent until its JWT ``exp`` has passed (or the server answered
  401 to it); then, given a ``refresh-token``, the issuer's token endpoint (from ``idp-issuer-url``'s
  ``/.well-known/openid-configuration``) is asked for a new one, with ``client-id`` and ``client-secret`` as HTTP
  basic credentials, over TLS verified by ``idp-certificate-authority(-data)`` or else the system's roots. The new
  tokens are kept in memory only: the kubeconfig file is not rewritten (it may be one of several merged files, or
  read-only; kubectl's write-back is a convenience for the next process, which refreshes again if it must).
- ``gcp`` and ``azure`` (:class:`DelegatedAuthProvider`): the official client's ``KubeConfigLoader`` does what it
  does for them (``gcp``: Google's application default credentials through ``google-auth``, or the provider's
  ``cmd-path``; ``azure``: ``adal``), asked per request; it refreshes when the cached token's expiry has passed.
  Neither library is a dependency of this project: without it the error says which to install. The official
  package (1,300 modules) is imported only when such a user is used.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import urllib3

from mxjob_controller.logs import register_secret
from mxjob_controller.runtime.client.config import ConfigError, CredentialError

DISCOVERY_PATH = "/.well-known/openid-configuration"
IDP_TIMEOUT = 10.0   # seconds for each request to the identity provider
DELEGATED = ("gcp", "azure")


def jwt_expiry(token: str) -> float | None:
    """The ``exp`` claim (epoch seconds) of a JWT, read without verifying it (the API server verifies); None when
    the token is no JWT or has no ``exp``."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except ValueError:
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


def auth_provider_token(provider: Any, user: str, user_entry: Mapping[str, Any],
                        ca_file_of: Callable[[Mapping[str, Any]], str | None]) -> Any:
    """The token source of a user's ``auth-provider`` mapping (``ca_file_of``: the IdP CA file its config names)."""
    if not isinstance(provider, Mapping) or not provider.get("name"):
        raise ConfigError(f"user {user!r}: auth-provider needs a name")
    name = provider["name"]
    config = provider.get("config") or {}
    if not isinstance(config, Mapping):
        raise ConfigError(f"user {user!r}: auth-provider config must be a mapping")
    if name == "oidc":
        return OidcToken(dict(config), user, ca_file_of(config))
    if name in DELEGATED:
        return DelegatedAuthProvider(dict(user_entry), user, name)
    raise ConfigError(f"user {user!r}: unknown auth-provider {name!r} (supported: oidc, gcp, azure)")


class OidcToken:
    """An ``oidc`` auth-provider's id-token, refreshed when it expires (see the module's docstring)."""

    def __init__(self, config: dict[str, Any], user: str, ca_file: str | None,
                 clock: Callable[[], float] = time.time) -> None:
        for required in ("idp-issuer-url", "client-id"):
            if not config.get(required):
                raise ConfigError(f"user {user!r}: auth-provider oidc needs {required}")
        self.user = user
        self._issuer = str(config["idp-issuer-url"]).rstrip("/")
        self._client_id = str(config["client-id"])
        self._client_secret = str(config.get("client-secret") or "")
        self._id_token: str | None = config.get("id-token") or None
        self._refresh_token: str | None = config.get("refresh-token") or None
        self._ca_file = ca_file
        self._clock = clock
        self._lock = threading.Lock()
        register_secret(self._id_token)
        register_secret(self._refresh_token)
        register_secret(self._client_secret)

    def __repr__(self) -> str:
        return f"OidcToken({self._issuer!r} of user {self.user!r})"

    def __call__(self) -> str | None:
        with self._lock:
            token = self._id_token
            expiry = jwt_expiry(token) if token else None
            if token is None or (expiry is not None and self._clock() >= expiry):
                self._refresh()
            return self._id_token

    def refresh(self, refused: str | None) -> bool:
        with self._lock:
            if self._id_token != refused:
                return True
            if not self._refresh_token:
                return False
            self._refresh()
            return self._id_token != refused

    def client_certificate(self) -> str | None:
        return None

    def _refresh(self) -> None:
        """Ask the issuer's token endpoint for a new id-token (the lock held)."""
        where = f"user {self.user!r}: refreshing the oidc id-token from {self._issuer}"
        if not self._refresh_token:
            raise CredentialError(f"{where}: the id-token has expired (or is absent) and there is no refresh-token "
                                  "to get another; log in again")
        pool = urllib3.PoolManager(cert_reqs="CERT_REQUIRED", ca_certs=self._ca_file,
                                   timeout=urllib3.Timeout(IDP_TIMEOUT), retries=False)
        try:
            found = pool.request("GET", self._issuer + DISCOVERY_PATH)
            if found.status != 200:
                raise CredentialError(f"{where}: its discovery document answered {found.status}")
            endpoint = _json(found.data, where).get("token_endpoint")
            if not endpoint:
                raise CredentialError(f"{where}: its discovery document names no token_endpoint")
            basic = base64.b64encode(f"{self._client_id}:{self._client_secret}".encode()).decode()
            answer = pool.request("POST", endpoint, encode_multipart=False,
                                  fields={"grant_type": "refresh_token", "refresh_token": self._refresh_token},
                                  headers={"Authorization": f"Basic {basic}", "Accept": "application/json"})
        except urllib3.exceptions.HTTPError as e:
            raise CredentialError(f"{where}: {e}") from None
        finally:
            pool.clear()
        body = _json(answer.data, where)
        if answer.status != 200:
            raise CredentialError(f"{where}: the token endpoint answered {answer.status}: "
                                  f"{body.get('error') or ''} {body.get('error_description') or ''}".rstrip())
        if not body.get("id_token"):
            raise CredentialError(f"{where}: the token endpoint's answer holds no id_token")
        self._id_token = str(body["id_token"])
        self._refresh_token = str(body.get("refresh_token") or self._refresh_token)
        register_secret(self._id_token)
        register_secret(self._refresh_token)


def _json(data: bytes, where: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError:
        raise CredentialError(f"{where}: the answer is not JSON: {data[:100]!r}") from None
    if not isinstance(doc, dict):
        raise CredentialError(f"{where}: the answer is not a JSON object")
    return doc


class DelegatedAuthProvider:
    """A ``gcp`` or ``azure`` auth-provider, asked of the official client's kubeconfig loader per request."""

    def __init__(self, user_entry: dict[str, Any], user: str, name: str) -> None:
        self.user = user
        self.name = name
        self._entry = user_entry
        self._lock = threading.Lock()
        self._loader: Any = None

    def __repr__(self) -> str:
        return f"DelegatedAuthProvider({self.name!r} of user {self.user!r})"

    def __call__(self) -> str | None:
        with self._lock:
            return self._token()

    def refresh(self, refused: str | None) -> bool:
        return False   # the official loader refreshes on expiry only

    def client_certificate(self) -> str | None:
        return None

    def _token(self) -> str | None:
        where = f"user {self.user!r}: auth-provider {self.name}"
        try:
            if self._loader is None:
                # the whole official package: imported only for such a user
                from kubernetes.config.kube_config import KubeConfigLoader  # noqa: PLC0415

                doc = {"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                       "clusters": [{"name": "c", "cluster": {"server": "https://unused"}}],
                       "users": [{"name": "u", "user": self._entry}]}
                self._loader = KubeConfigLoader(doc)
            header = self._loader._load_auth_provider_token()
        except Exception as e:   # the official loader raises whatever its libraries raise
            # Without its library the loader fails so: adal's absence is an ImportError; google-auth's, no
            # credentials (None) whose token it then reads.
            if isinstance(e, ImportError) or (self.name == "gcp" and isinstance(e, AttributeError)):
                library, plugin = ("google-auth", "gke-gcloud-auth-plugin") if self.name == "gcp" else \
                    ("adal", "kubelogin")
                raise CredentialError(f"{where}: its token has expired and refreshing it needs the {library!r} "
                                      f"package, not installed; or use the {plugin} exec plugin instead, as kubectl "
                                      ">= 1.26 requires") from None
            raise CredentialError(f"{where}: {type(e).__name__}: {e}") from None
        if not header:
            raise CredentialError(f"{where}: no access-token in its config and none could be obtained")
        token = str(header).removeprefix("Bearer ")
        register_secret(token)
        return token
