"""CertificateSigningRequests: who asked, as kube's strategy records it, and the ``approval`` subresource's split.

On create kube overwrites ``spec.username``, ``uid``, ``groups`` and ``extra`` with the requesting user (a client
cannot ask in another's name) and clears the status. An update of the main resource keeps the stored status; one
through ``/approval`` changes only ``status.conditions`` (approving or denying), one through ``/status`` only the
status. Nothing signs certificates here (there is no kube-controller-manager signer): an approved request stays
without ``status.certificate`` until a client writes one.
"""

from __future__ import annotations

from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.local.apiserver.auth.user import ADMIN
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext


class CSRStrategy(Strategy):
    def prepare_create(self, obj: dict, ctx: WriteContext) -> None:
        super().prepare_create(obj, ctx)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        for key in ("username", "uid", "groups", "extra"):
            spec.pop(key, None)
        spec.update((ctx.user or ADMIN).to_json())   # a server enforcing nothing serves everyone as its admin

    def prepare_update(self, new: dict, old: dict, ctx: WriteContext) -> None:
        if ctx.subresource != "approval":
            super().prepare_update(new, old, ctx)
            return
        conditions = (new.get("status") or {}).get("conditions")
        managed = (new.get("metadata") or {}).get("managedFields")
        new.clear()
        new.update(deep_copy(old))
        if managed is not None:
            new["metadata"]["managedFields"] = managed
        status = new.setdefault("status", {})
        if conditions is None:
            status.pop("conditions", None)
        else:
            status["conditions"] = conditions
