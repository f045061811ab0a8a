"""The workload kinds besides Deployments: ``ValidateReplicaSetSpec``, ``ValidateDaemonSetSpec``,
``ValidateStatefulSetSpec``, ``ValidateReplicationControllerSpec`` (counts, and a template whose labels the selector
matches and whose pods always restart), and batch's ``ValidateJobSpec`` / ``ValidateCronJobSpec`` (counts, and pods
that restart ``OnFailure`` or ``Never``)."""

from __future__ import annotations

from mxjob_controller.kube.field_errors import FieldError, child, invalid, not_supported, required
from mxjob_controller.kube.schema.rules import rule
from mxjob_controller.kube.schema.rules.common import nonnegative
from mxjob_controller.kube.schema.rules.deployments import template_errors

APPS = "io.k8s.api.apps.v1."
JOB_RESTART_POLICIES = ("OnFailure", "Never")


def _replicated(spec: dict, path: str, kind: str, word: str) -> list[FieldError]:
    """``word``: what kube's "empty selector is invalid for ..." names (a ReplicaSet's says deployment)."""
    errs: list[FieldError] = []
    for key in ("replicas", "minReadySeconds", "revisionHistoryLimit"):
        errs.extend(nonnegative(spec, key, path))
    selector, template = spec.get("selector"), spec.get("template")
    if type(selector) is dict and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errs.append(invalid(child(path, "selector"), selector, f"empty selector is invalid for {word}"))
    if type(template) is dict and type(selector) is dict:
        errs.extend(template_errors(template, selector, child(path, "template"), kind))
    return errs


@rule(APPS + "ReplicaSetSpec")
def replica_set_spec(spec: dict, path: str) -> list[FieldError]:
    return _replicated(spec, path, "ReplicaSet", "deployment")


@rule(APPS + "StatefulSetSpec")
def stateful_set_spec(spec: dict, path: str) -> list[FieldError]:
    return _replicated(spec, path, "StatefulSet", "statefulset")


@rule(APPS + "DaemonSetSpec")
def daemon_set_spec(spec: dict, path: str) -> list[FieldError]:
    return _replicated(spec, path, "DaemonSet", "daemonset")


@rule("io.k8s.api.core.v1.ReplicationControllerSpec")
def replication_controller_spec(spec: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("replicas", "minReadySeconds"):
        errs.extend(nonnegative(spec, key, path))
    selector, template = spec.get("selector"), spec.get("template")
    if type(template) is dict:
        labels = selector if type(selector) is dict and selector else (template.get("metadata") or {}).get("labels")
        as_label_selector = {"matchLabels": labels or {}}
        errs.extend(template_errors(template, as_label_selector, child(path, "template"), "ReplicationController"))
    elif template is None and spec.get("replicas"):
        errs.append(required(child(path, "template")))
    return errs


def _restart_policy(template: object, path: str) -> list[FieldError]:
    """A Job's pods end: ``OnFailure`` or ``Never`` (kube's words name both, as a Required value)."""
    pod = template.get("spec") if type(template) is dict else None
    if type(pod) is not dict:
        return []
    policy = pod.get("restartPolicy", "Always")   # what SetDefaults_PodSpec makes of an absent one
    if policy in JOB_RESTART_POLICIES:
        return []
    where = child(child(path, "spec"), "restartPolicy")
    if policy in ("Always", ""):
        return [required(where, 'valid values: "OnFailure", "Never"')]
    return [not_supported(where, policy, JOB_RESTART_POLICIES)]


@rule("io.k8s.api.batch.v1.JobSpec")
def job_spec(spec: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        errs.extend(nonnegative(spec, key, path))
    errs.extend(_restart_policy(spec.get("template"), child(path, "template")))
    return errs


@rule("io.k8s.api.batch.v1.CronJobSpec")
def cron_job_spec(spec: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        errs.extend(nonnegative(spec, key, path))
    if spec.get("schedule") == "":
        errs.append(required(child(path, "schedule")))
    return errs
