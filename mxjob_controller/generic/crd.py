"""The GenericJob CustomResourceDefinition (``genericjobs.batch.tensorstack.dev``), generated from this package's
API with the shared pieces of ``kubeflow_api/crd.py``; ``hack/gen_crd.py`` writes it beside MXJob's and TFJob's.

One version, ``v1beta1``, with a status subresource, the short name ``gj`` and the Phase/Age columns. The schema
enforces what holds field by field (enums, ranges, types; ranks as int-or-string); what spans fields (ranks below
replica counts, types named in rules, variables) is the validator's (``generic/api.py``). Two CEL transition rules
on ``spec`` (evaluated by kube-apiserver and by the embedded API server): ``runMode.pause.resumeSpecs`` and
``runMode.debug.enabled`` cannot change after creation, as T9k's manual says of the first and its debug mode
implies of the second (debug is decided when the pods are first made).
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.core.framework import MAX_REPLICAS_PER_TYPE
from mxjob_controller.generic import api
from mxjob_controller.generic.status import AGGREGATE_KEYS
from mxjob_controller.kubeflow_api.crd import (
    CRDNames,
    described,
    enum_schema,
    int_schema,
    job_crd,
    openapi_schema,
    string_schema,
    time_schema,
)
from mxjob_controller.kubeflow_api.crd_schema import structural

GENERICJOB_NAMES = CRDNames(api.KIND, api.LIST_KIND, api.PLURAL, api.SINGULAR, api.SHORT_NAMES, api.VERSIONS,
                            group=api.GROUP)
PRINTER_COLUMNS = (
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)
IMMUTABLE_RUN_MODE = (
    {"rule": "self.?runMode.?pause.?resumeSpecs == oldSelf.?runMode.?pause.?resumeSpecs",
     "message": "field is immutable: set resumeSpecs when the job is created",
     "fieldPath": ".runMode.pause.resumeSpecs"},
    {"rule": "self.?runMode.?debug.?enabled == oldSelf.?runMode.?debug.?enabled",
     "message": "field is immutable: debug mode is chosen when the job is created",
     "fieldPath": ".runMode.debug.enabled"},
)


def _strings(description: str) -> dict[str, Any]:
    return described({"type": "array", "items": {"type": "string"}}, description)


def _override(extra: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": ["type"], "properties": {
        "type": string_schema("The replica type this entry is for."),
        "skipInitContainer": described({"type": "boolean"}, "Drop the template's initContainers."),
        **extra,
    }}


def spec_schema() -> dict[str, Any]:
    rule = described({"type": "object", "additionalProperties": {
        "type": "array", "items": {"x-kubernetes-int-or-string": True}}},
        "Replica type → ranks (ints or decimal strings), e.g. {worker: [0, 1]}: fulfilled when all of them are.")
    replica_spec = {"type": "object", "required": ["type", "template"], "properties": {
        "type": string_schema("The replica type: a lowercase RFC 1123 label, part of its pods' names "
                              "(<job>-<type>-<rank>)."),
        "replicas": int_schema(f"Number of replicas (default 1, 0 to {MAX_REPLICAS_PER_TYPE}).", minimum=0,
                               maximum=MAX_REPLICAS_PER_TYPE),
        "restartPolicy": described({"type": "object", "properties": {
            "policy": enum_schema(api.RESTART_POLICIES, "Never, OnFailure (default: restart a failed replica) or "
                                                        "Always (also a succeeded one)."),
            "limit": int_schema("Restarts allowed for all replicas of this type together (default 0).",
                                minimum=0, maximum=api.MAX_LIMIT),
        }}, "What happens when a replica ends; its pods always run with restartPolicy Never."),
        "template": described(structural("io.k8s.api.core.v1.PodTemplateSpec"), "The pod of each replica."),
    }}
    properties = {
        "replicaSpecs": described({"type": "array", "minItems": 1, "items": replica_spec},
                                  "The replica types, each with its pod template."),
        "successRules": described({"type": "array", "items": rule},
                                  "The job succeeds when any rule is fulfilled; none: when every replica has."),
        "failureRules": described({"type": "array", "items": rule},
                                  "The job fails when all replicas of any rule have failed for good; none: when "
                                  "any replica has."),
        "service": described({"type": "object", "required": ["ports"], "properties": {
            "ports": {"type": "array", "minItems": 1, "items": structural("io.k8s.api.core.v1.ServicePort")},
        }}, "Give every replica a headless Service named like its pod, with these ports; none: no Services."),
        "runMode": described({"type": "object", "properties": {
            "debug": {"type": "object", "properties": {
                "enabled": described({"type": "boolean"}, "Start the pods with the debug command instead of the "
                                                          "workload; no rule is evaluated."),
                "replicaSpecs": {"type": "array", "items": _override({
                    "command": _strings('The first container\'s command (default ["sleep", "inf"]).')})},
            }},
            "pause": {"type": "object", "properties": {
                "enabled": described({"type": "boolean"}, "Delete the pods (Services stay) until set to false."),
                "resumeSpecs": {"type": "array", "items": _override({
                    "command": _strings("The first container's command after a resume (default: the template's)."),
                    "args": _strings("The first container's args after a resume (default: the template's)."),
                })},
            }},
        }}, "Debug and pause modes."),
        "cleanUpPolicy": enum_schema(api.CLEAN_UP_POLICIES, "Pods deleted once the job has finished: None (default), "
                                                            "Unfinished (Pending, Running, Unknown) or All."),
        "scheduler": described({"type": "object", "properties": {
            "t9kScheduler": {"type": "object", "properties": {
                "queue": string_schema("The queue (default: default)."),
                "priority": int_schema("The PodGroup's priority, 0 (default) to 100.", minimum=0,
                                       maximum=api.MAX_PRIORITY),
            }},
        }}, "Schedule the pods with the T9k scheduler, as one PodGroup."),
    }
    return {"type": "object", "required": ["replicaSpecs"], "properties": properties,
            "x-kubernetes-validations": [dict(r) for r in IMMUTABLE_RUN_MODE]}


def status_schema() -> dict[str, Any]:
    count = int_schema()
    condition = {"type": "object", "required": ["type", "status"], "properties": {
        "type": string_schema(), "status": string_schema(), "reason": string_schema(), "message": string_schema(),
        "lastTransitionTime": time_schema(""),
    }}
    replica = {"type": "object", "properties": {
        "name": string_schema(), "uid": string_schema(), "phase": string_schema(),
        "containers": {"type": "array", "items": {"type": "object", "properties": {
            "name": string_schema(), "state": string_schema(), "exitCode": count}}},
    }}
    task = {"type": "object", "properties": {
        "type": string_schema(), "restartCount": count,
        "restarting": _strings("Pods being replaced by a restart counted in restartCount (their UIDs)."),
        "replicas": {"type": "array", "items": replica},
    }}
    return {"type": "object", "description": "Observed state, written by the controller.", "properties": {
        "phase": string_schema("Pending, Running, Paused, Resuming, Succeeded or Failed."),
        "conditions": {"type": "array", "items": condition,
                       "description": "Initialized, Running, ReplicaFailure, Completed, Failed, Paused."},
        "tasks": described({"type": "array", "items": task}, "Per replica type: restarts and each replica's pod."),
        "aggregate": described({"type": "object", "properties": {key: count for key in AGGREGATE_KEYS}},
                               "Replicas per phase; they add up to the job's replicas."),
    }}


def genericjob_crd() -> dict[str, Any]:
    """The GenericJob CRD object (a fresh one per call)."""
    schema = openapi_schema("A general-purpose batch job: replica types with success and failure rules.",
                            spec_schema(), status_schema())
    return job_crd(GENERICJOB_NAMES, schema, PRINTER_COLUMNS)
