"""Service-account token directories (``local up --token-dir``), kept valid as a kubelet keeps a pod's projected
token.

The token written there is bound to its ServiceAccount's uid (``auth/tokens.py``): deleting the account revokes it,
and an account re-created under the same name does not inherit it. A kubelet asks for a new token when the one in
a pod's volume can no longer serve; here the server does it, event-driven: each commit to a ServiceAccount that has
a token directory queues that account, and the worker (thread ``apiserver-token-dirs``) writes a fresh token, whole
(temp file and rename), when the one on disk no longer authenticates and the account exists again. Clients read the
file anew when it changes (``FileToken``), as client-go does.
"""

from __future__ import annotations

import threading
from pathlib import Path

from mxjob_controller.local.apiserver import builtin
from mxjob_controller.local.apiserver.auth.security import Security
from mxjob_controller.local.apiserver.controllers.workqueue import QueueController
from mxjob_controller.local.apiserver.storage.store import Store
from mxjob_controller.local.apiserver.storage.watch import Event
from mxjob_controller.local.files import write_atomically

Account = tuple[str, str]   # (namespace, name)


class TokenDirs(QueueController[Account]):
    def __init__(self, store: Store, security: Security) -> None:
        self._security = security
        self._lock = threading.Lock()
        self._tokens: dict[Account, dict[Path, str]] = {}   # account → directory → the token written there
        super().__init__("apiserver-token-dirs", store, self._refresh)

    def write(self, directory: str | Path, namespace: str, name: str) -> Path:
        """``token``, ``ca.crt`` and ``namespace`` in ``directory`` (TLS only), refreshed from now on."""
        path = self._security.write_token_dir(directory, namespace, name)
        with self._lock:
            self._tokens.setdefault((namespace, name), {})[path] = (path / "token").read_text()
        return path

    def _record(self, key: str, ev: Event) -> None:
        if key != builtin.SERVICEACCOUNTS.storage_key:
            return
        meta = ev.entry.obj.get("metadata") or {}
        account = (meta.get("namespace") or "", meta.get("name") or "")
        with self._lock:
            watched = account in self._tokens
        if watched:
            self._queue.add(account)

    def _refresh(self, account: Account) -> None:
        with self._lock:
            written = dict(self._tokens.get(account) or {})
        for directory, token in written.items():
            if self._security.tokens.authenticate(token) is not None:
                continue   # still good (a token issued before its account existed is bound here, on first use)
            if self._security.service_account(*account) is None:
                continue   # revoked with its account: a new one is written when the account is back
            fresh = self._security.issue_service_account_token(*account)
            write_atomically(directory / "token", fresh.encode(), 0o600)
            with self._lock:
                self._tokens[account][directory] = fresh
