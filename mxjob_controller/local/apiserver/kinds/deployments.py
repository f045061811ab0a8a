"""Deployments: kube's defaulting (SetDefaults_Deployment and the pod template's) and an empty status on create.
Nothing runs them here (there is no deployment controller): they are stored and served as kube serves them."""

from __future__ import annotations

from mxjob_controller.local.apiserver.kinds.workloads import default_rolling_update, default_template
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext


class DeploymentStrategy(Strategy):
    def prepare_create(self, obj: dict, ctx: WriteContext) -> None:
        super().prepare_create(obj, ctx)
        obj["status"] = {}

    def default(self, obj: dict, ctx: WriteContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("replicas", 1)
        default_rolling_update(spec, "strategy", maxUnavailable="25%", maxSurge="25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        default_template(spec.get("template"))
