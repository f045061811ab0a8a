"""``apps/v1`` Deployments: ``ValidateDeploymentSpec`` (selector, template labels, strategy, counts)."""

from __future__ import annotations

from mxjob_controller.kube.field_errors import FieldError, child, forbidden, invalid, not_supported, required
from mxjob_controller.kube.schema.rules import rule
from mxjob_controller.kube.schema.rules.common import (
    by_messages,
    each_message,
    enum,
    items,
    label_value_messages,
    labels,
    nonnegative,
    qualified_name_messages,
)
from mxjob_controller.kube.selectors import SelectorError, selector_from_label_selector

DEPLOYMENT_SPEC = "io.k8s.api.apps.v1.DeploymentSpec"
LABEL_SELECTOR = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"
STRATEGIES = ("Recreate", "RollingUpdate")


@rule(DEPLOYMENT_SPEC)
def deployment_spec(spec: dict, path: str) -> list[FieldError]:
    errs = list(nonnegative(spec, "replicas", path))
    selector = spec.get("selector")
    if type(selector) is dict and not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errs.append(invalid(child(path, "selector"), selector, "empty selector is invalid for deployment"))
    template = spec.get("template")
    if type(template) is dict and type(selector) is dict:
        errs.extend(template_errors(template, selector, child(path, "template")))
    strategy = spec.get("strategy")
    if type(strategy) is dict:
        base = child(path, "strategy")
        kind = strategy.get("type")
        errs.extend(enum(kind, base, "type", STRATEGIES))
        if kind == "Recreate" and strategy.get("rollingUpdate") is not None:
            errs.append(forbidden(child(base, "rollingUpdate"),
                                  "may not be specified when strategy `type` is 'Recreate'"))
    for key in ("minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"):
        errs.extend(nonnegative(spec, key, path))
    return errs


def template_errors(template: dict, selector: dict, path: str, kind: str = "ReplicaSet") -> list[FieldError]:
    """``ValidatePodTemplateSpecForReplicaSet``: labels the selector matches; pods that always restart."""
    errs: list[FieldError] = []
    meta = template.get("metadata") if type(template.get("metadata")) is dict else {}
    template_labels = meta.get("labels") if type(meta.get("labels")) is dict else {}
    try:
        matcher = selector_from_label_selector(selector)
    except (SelectorError, KeyError, TypeError):
        matcher = None
    if matcher is not None and not matcher.empty and not matcher.matches(template_labels):
        errs.append(invalid(child(child(path, "metadata"), "labels"), template_labels,
                            "`selector` does not match template `labels`"))
    pod_spec = template.get("spec") if type(template.get("spec")) is dict else {}
    policy = pod_spec.get("restartPolicy")
    if policy not in (None, "Always"):
        errs.append(not_supported(child(child(path, "spec"), "restartPolicy"), policy, ["Always"]))
    if pod_spec.get("activeDeadlineSeconds") is not None:
        errs.append(invalid(child(child(path, "spec"), "activeDeadlineSeconds"), pod_spec["activeDeadlineSeconds"],
                            f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs


@rule(LABEL_SELECTOR)
def label_selector(selector: dict, path: str) -> list[FieldError]:
    """``ValidateLabelSelector``: requirement operators and values, then matchLabels."""
    errs: list[FieldError] = []
    for i, req in items(selector.get("matchExpressions")):
        base = child(child(path, "matchExpressions"), i)
        op, values = req.get("operator"), req.get("values") or []
        if op in ("In", "NotIn"):
            if not values:
                errs.append(required(child(base, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(forbidden(child(base, "values"),
                                      "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(invalid(child(base, "operator"), op, "not a valid selector operator"))
        errs.extend(by_messages(qualified_name_messages, req.get("key"), base, "key"))
        for j, v in enumerate(values if type(values) is list else []):
            msgs = label_value_messages(v) if type(v) is str else ()
            errs.extend(each_message(child(child(base, "values"), j), v, msgs))
    errs.extend(labels(selector.get("matchLabels"), path, "matchLabels"))
    return errs
