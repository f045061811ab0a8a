"""Built-in kinds served at more than one version (or group) from one storage: the conversions between them.

- ``autoscaling/v1`` HorizontalPodAutoscalers are stored as ``autoscaling/v2`` (kube 1.32's storage version). A v1
  object's ``targetCPUUtilizationPercentage`` is a v2 CPU ``Utilization`` metric and back; what v1 cannot say (other
  metrics, ``behavior``, conditions, current metrics) travels in the annotations kube uses for it
  (``autoscaling.alpha.kubernetes.io/...``), so a v1 read-modify-write loses nothing. Kube writes those annotations
  in the v1 metric types' shape; here they hold the v2 structures, which only this server reads back.
- ``events.k8s.io/v1`` Events are core ``v1`` Events renamed (``regarding`` ↔ ``involvedObject``, ``note`` ↔
  ``message``, ``deprecatedSource`` ↔ ``source``...): ``pkg/apis/events/v1/conversion.go``.

:data:`CONVERSIONS` maps a storage key to ``(object, target apiVersion) -> object``; the server's converter
(``webhooks/conversion.py``) calls it for these kinds as it calls a CRD's webhook for custom resources. Inputs are
never changed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.local.apiserver.encoding import printers

Conversion = Callable[[dict, str], dict]

_HPA_METRICS = "autoscaling.alpha.kubernetes.io/metrics"
_HPA_BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_HPA_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
_HPA_CURRENT = "autoscaling.alpha.kubernetes.io/current-metrics"


def _is_cpu_utilization(metric: Any, target_key: str = "target") -> bool:
    if not isinstance(metric, dict) or metric.get("type") != "Resource":
        return False
    resource = metric.get("resource")
    if not isinstance(resource, dict) or resource.get("name") != "cpu":
        return False
    value = resource.get(target_key) if target_key == "target" else resource.get("current")
    return isinstance(value, dict) and value.get("averageUtilization") is not None and (
        target_key != "target" or value.get("type") == "Utilization")


def _annotations(obj: dict) -> dict:
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    return annotations


def _take(annotations: dict, key: str) -> Any:
    text = annotations.pop(key, None)
    try:
        return json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _stash(annotations: dict, key: str, value: Any) -> None:
    if value:
        annotations[key] = json.dumps(value, separators=(",", ":"))


def _cpu_utilization(metrics: list, target_key: str) -> tuple[int | None, list]:
    """The CPU utilization among ``metrics`` (the ``target`` or the ``current`` one), and the other metrics."""
    cpu = next((m for m in metrics if _is_cpu_utilization(m, target_key)), None)
    if cpu is None:
        return None, metrics
    return cpu["resource"][target_key]["averageUtilization"], [m for m in metrics if m is not cpu]


def hpa_to_v1(obj: dict) -> dict:
    out = deep_copy(obj)
    out["apiVersion"] = "autoscaling/v1"
    spec, status = out.get("spec") or {}, out.get("status") or {}
    annotations = _annotations(out)
    target, others = _cpu_utilization(spec.pop("metrics", None) or [], "target")
    if target is not None:
        spec["targetCPUUtilizationPercentage"] = target
    _stash(annotations, _HPA_METRICS, others)
    behavior = spec.pop("behavior", None)
    if behavior is not None:
        annotations[_HPA_BEHAVIOR] = json.dumps(behavior, separators=(",", ":"))
    if isinstance(status, dict) and status:
        utilization, rest = _cpu_utilization(status.pop("currentMetrics", None) or [], "current")
        if utilization is not None:
            status["currentCPUUtilizationPercentage"] = utilization
        _stash(annotations, _HPA_CURRENT, rest)
        _stash(annotations, _HPA_CONDITIONS, status.pop("conditions", None))
        status.setdefault("currentReplicas", 0)
    if not annotations:
        del out["metadata"]["annotations"]
    return out


def hpa_to_v2(obj: dict) -> dict:
    out = deep_copy(obj)
    out["apiVersion"] = "autoscaling/v2"
    spec, status = out.get("spec"), out.get("status")
    annotations = _annotations(out)
    if isinstance(spec, dict):
        metrics: list = []
        target = spec.pop("targetCPUUtilizationPercentage", None)
        if target is not None:
            metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
                "type": "Utilization", "averageUtilization": target}}})
        metrics.extend(_take(annotations, _HPA_METRICS) or [])
        if metrics:
            spec["metrics"] = metrics
        behavior = _take(annotations, _HPA_BEHAVIOR)
        if behavior is not None:
            spec["behavior"] = behavior
    if isinstance(status, dict):
        current: list = []
        utilization = status.pop("currentCPUUtilizationPercentage", None)
        if utilization is not None:
            current.append({"type": "Resource", "resource": {"name": "cpu", "current": {
                "averageUtilization": utilization}}})
        current.extend(_take(annotations, _HPA_CURRENT) or [])
        status["currentMetrics"] = current or None   # no omitempty in v2
        conditions = _take(annotations, _HPA_CONDITIONS)
        if conditions:
            status["conditions"] = conditions
        if not status.get("currentReplicas"):
            status.pop("currentReplicas", None)   # omitempty in v2
    if not annotations:
        del out["metadata"]["annotations"]
    return out


def horizontal_pod_autoscaler(obj: dict, target: str) -> dict:
    return hpa_to_v1(obj) if target == "autoscaling/v1" else hpa_to_v2(obj)


# --- events ----------------------------------------------------------------------------------------------

#: core v1 field → events.k8s.io/v1 field (the ones that differ by name).
_EVENT_RENAMES = (("involvedObject", "regarding"), ("message", "note"), ("source", "deprecatedSource"),
                  ("firstTimestamp", "deprecatedFirstTimestamp"), ("lastTimestamp", "deprecatedLastTimestamp"),
                  ("count", "deprecatedCount"), ("reportingComponent", "reportingController"))


def event(obj: dict, target: str) -> dict:
    out = deep_copy(obj)
    to_events = target == "events.k8s.io/v1"
    out["apiVersion"] = target
    for core, events in _EVENT_RENAMES:
        old, new = (core, events) if to_events else (events, core)
        if old in out:
            value = out.pop(old)
            if value is not None:
                out[new] = value
    return out


def events_printer() -> printers.Printer:
    """How ``kubectl get events.v1.events.k8s.io`` prints: kube prints its internal Event, which is the core one, so
    the core columns, each row from the event seen as a core one."""
    core = printers.printer_for("", "Event")
    assert core is not None
    return printers.Printer(core.columns, lambda obj, now: core.cells(event(dict(obj), "v1"), now))


CONVERSIONS: dict[str, Conversion] = {
    "autoscaling/horizontalpodautoscalers": horizontal_pod_autoscaler,
    "/events": event,
}
