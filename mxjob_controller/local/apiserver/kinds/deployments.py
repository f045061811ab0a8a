"""Deployments: kube's defaulting (SetDefaults_Deployment and the pod template's) and an empty status on create.
Nothing runs them here (there is no deployment controller): they are stored and served as kube serves them."""

from __future__ import annotations

from mxjob_controller.local.apiserver.kinds.pods import default_pod_spec
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
        strategy = spec.setdefault("strategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.setdefault("rollingUpdate", {})
                if isinstance(rolling, dict):
                    rolling.setdefault("maxUnavailable", "25%")
                    rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        template = spec.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            default_pod_spec(template["spec"], pod=False)
