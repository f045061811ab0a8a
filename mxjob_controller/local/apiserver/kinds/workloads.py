"""The workload kinds besides Deployments (ReplicaSets, StatefulSets, DaemonSets, ReplicationControllers, Jobs,
CronJobs, PodTemplates): kube's ``SetDefaults_*`` for the fields clients read back, and a Job's generated selector.

Nothing runs them here (there is no kube-controller-manager): they are stored and served as kube serves them, their
status as a create leaves it (``ResourceType.initial_status``), until a client writes it.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kube.field_errors import FieldError, invalid
from mxjob_controller.local.apiserver.kinds.pods import default_pod_spec
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext

#: The labels a Job's generated selector and pod template carry (``batch/v1`` types.go), the legacy ones too.
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
MAX_INT32 = 2**31 - 1


def _dict(parent: dict, key: str) -> dict | None:
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def default_template(template: Any) -> None:
    """A pod template's defaults (``SetDefaults_PodSpec`` and what it holds, without the pod's own)."""
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"], pod=False)


def default_claim_template(claim: Any) -> None:
    """A PersistentVolumeClaim's defaults (a StatefulSet's ``volumeClaimTemplates`` get them too)."""
    if not isinstance(claim, dict):
        return
    claim.setdefault("apiVersion", "v1")   # the apps/v1 conversion writes the claims' TypeMeta
    claim.setdefault("kind", "PersistentVolumeClaim")
    spec = _dict(claim, "spec")
    if spec is not None:
        spec.setdefault("volumeMode", "Filesystem")
    status = claim.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")


class _TemplateStrategy(Strategy):
    """Kinds whose ``spec.template`` is a pod template: its defaults, then the kind's own (:meth:`default_spec`)."""

    def default(self, obj: dict, ctx: WriteContext) -> None:
        spec = _dict(obj, "spec")
        if spec is None:
            return
        self.default_spec(obj, spec)
        default_template(spec.get("template"))

    def default_spec(self, obj: dict, spec: dict) -> None:
        """The kind's ``SetDefaults_*`` on its spec."""


class ReplicaSetStrategy(_TemplateStrategy):
    def default_spec(self, obj: dict, spec: dict) -> None:
        spec.setdefault("replicas", 1)


def default_rolling_update(spec: dict, key: str, **rolling_defaults: Any) -> None:
    """The update strategy at ``key`` defaults to ``RollingUpdate``, whose ``rollingUpdate`` gets
    ``rolling_defaults``."""
    strategy = spec.setdefault(key, {})
    if not isinstance(strategy, dict):
        return
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        if isinstance(rolling, dict):
            for field, value in rolling_defaults.items():
                rolling.setdefault(field, value)


class DaemonSetStrategy(_TemplateStrategy):
    def default_spec(self, obj: dict, spec: dict) -> None:
        default_rolling_update(spec, "updateStrategy", maxUnavailable=1, maxSurge=0)
        spec.setdefault("revisionHistoryLimit", 10)


class StatefulSetStrategy(_TemplateStrategy):
    def default_spec(self, obj: dict, spec: dict) -> None:
        spec.setdefault("podManagementPolicy", "OrderedReady")
        default_rolling_update(spec, "updateStrategy", partition=0)
        policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
        if isinstance(policy, dict):
            policy.setdefault("whenDeleted", "Retain")
            policy.setdefault("whenScaled", "Retain")
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        for claim in spec.get("volumeClaimTemplates") or ():
            default_claim_template(claim)


class ReplicationControllerStrategy(_TemplateStrategy):
    def default_spec(self, obj: dict, spec: dict) -> None:
        """``SetDefaults_ReplicationController``: the template's labels are the selector and the labels when those
        are empty."""
        template = _dict(spec, "template")
        template_labels = (_dict(template, "metadata") or {}).get("labels") if template is not None else None
        if isinstance(template_labels, dict) and template_labels:
            if not spec.get("selector"):
                spec["selector"] = dict(template_labels)
            meta = obj.setdefault("metadata", {})
            if isinstance(meta, dict) and not meta.get("labels"):
                meta["labels"] = dict(template_labels)
        spec.setdefault("replicas", 1)


class PodTemplateStrategy(Strategy):
    def default(self, obj: dict, ctx: WriteContext) -> None:
        default_template(obj.get("template"))


def default_job_spec(spec: dict) -> None:
    """``SetDefaults_Job``: one completion at a time unless told, six retries, non-indexed, not suspended."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")


def generate_job_selector(job: dict) -> None:
    """kube's ``generateSelector`` (run once the uid is set): the template labelled with the job's name and uid, the
    selector matching the uid. Labels a user set are left for validation to judge."""
    meta = job.get("metadata") or {}
    spec = _dict(job, "spec")
    template = _dict(spec, "template") if spec is not None else None
    if spec is None or template is None:
        return
    template_meta = template.setdefault("metadata", {})
    if not isinstance(template_meta, dict):
        return
    labels = template_meta.get("labels")
    if not isinstance(labels, dict):
        labels = template_meta["labels"] = {}
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, str(meta.get("name") or ""))
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, str(meta.get("uid") or ""))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match = selector.get("matchLabels")
    if not isinstance(match, dict):
        match = selector["matchLabels"] = {}
    match.setdefault(CONTROLLER_UID_LABELS[1], str(meta.get("uid") or ""))


class JobStrategy(Strategy):
    def default(self, obj: dict, ctx: WriteContext) -> None:
        spec = _dict(obj, "spec")
        if spec is not None:
            default_job_spec(spec)
            default_template(spec.get("template"))

    def prepare_create(self, obj: dict, ctx: WriteContext) -> None:
        super().prepare_create(obj, ctx)
        spec = _dict(obj, "spec")
        if spec is not None and spec.get("manualSelector") is not True:
            generate_job_selector(obj)

    def validate(self, obj: dict, old: dict | None, ctx: WriteContext) -> list[FieldError]:
        causes = super().validate(obj, old, ctx)
        if old is not None and ctx.subresource is None:
            selector, old_selector = (obj.get("spec") or {}).get("selector"), (old.get("spec") or {}).get("selector")
            if selector != old_selector:   # ValidateJobSpecUpdate
                causes.append(invalid("spec.selector", selector, "field is immutable"))
        return causes


class CronJobStrategy(Strategy):
    def default(self, obj: dict, ctx: WriteContext) -> None:
        """``SetDefaults_CronJob``; the job template's pod template gets its defaults (not the Job's own: those
        are the Job's when the CronJob creates one)."""
        spec = _dict(obj, "spec")
        if spec is None:
            return
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)
        job_template = _dict(spec, "jobTemplate")
        if job_template is not None:
            default_template((_dict(job_template, "spec") or {}).get("template"))
