"""LimitRange: the defaults kube's ``SetDefaults_LimitRangeItem`` gives a ``Container`` item (a default limit from
``max``, a default request from the default limit, else from ``min``), so ``kubectl describe`` shows what kube's
does."""

from __future__ import annotations

from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext


class LimitRangeStrategy(Strategy):
    def default(self, obj: dict, ctx: WriteContext) -> None:
        super().default(obj, ctx)
        for item in (obj.get("spec") or {}).get("limits") or ():
            if not isinstance(item, dict) or item.get("type") != "Container":
                continue
            default = dict(item.get("default") or {})
            request = dict(item.get("defaultRequest") or {})
            for key, value in (item.get("max") or {}).items():
                default.setdefault(key, value)
            for key, value in default.items():
                request.setdefault(key, value)
            for key, value in (item.get("min") or {}).items():
                request.setdefault(key, value)
            if default:
                item["default"] = default
            if request:
                item["defaultRequest"] = request
