"""The FlowSchemas and PriorityLevelConfigurations the server's API Priority and Fairness runs, as objects.

``http/flowcontrol.py`` classifies requests by a fixed configuration (kube's bootstrap objects); this module
serves that configuration through ``flowcontrol.apiserver.k8s.io/v1``, each object with the UID the
``X-Kubernetes-PF-*-UID`` headers carry, so ``kubectl get flowschemas`` shows what decides a request here.
Objects clients create, change or delete are stored and served, but do not change how requests are classified
(the server does not reload its configuration from them); ``lendablePercent`` is 0 everywhere, since this server
does not lend seats between levels.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.local.apiserver.http.flowcontrol import FLOW_SCHEMAS, PRIORITY_LEVELS, FlowSchema, PriorityLevel

API_VERSION = "flowcontrol.apiserver.k8s.io/v1"
_AUTOUPDATE = {"apf.kubernetes.io/autoupdate-spec": "true"}


def _meta(name: str, uid: str, created: str) -> dict[str, Any]:
    return {"name": name, "uid": uid, "generation": 1, "creationTimestamp": created,
            "annotations": dict(_AUTOUPDATE)}


def priority_level_object(level: PriorityLevel, created: str) -> dict[str, Any]:
    if level.exempt:
        spec: dict[str, Any] = {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}
    else:
        response: dict[str, Any] = {"type": "Reject"}
        if level.queues:
            response = {"type": "Queue", "queuing": {"queues": level.queues, "handSize": level.hand_size,
                                                     "queueLengthLimit": level.queue_length}}
        spec = {"type": "Limited", "limited": {"nominalConcurrencyShares": level.shares, "lendablePercent": 0,
                                               "limitResponse": response}}
    return {"apiVersion": API_VERSION, "kind": "PriorityLevelConfiguration",
            "metadata": _meta(level.name, level.uid, created), "spec": spec, "status": {}}


def _subject(kind: str, name: str) -> dict[str, Any]:
    if kind == "Group":
        return {"kind": "Group", "group": {"name": name}}
    if kind == "User":
        return {"kind": "User", "user": {"name": name}}
    namespace, _, account = name.partition("/")
    return {"kind": "ServiceAccount", "serviceAccount": {"namespace": namespace, "name": account}}


def flow_schema_object(schema: FlowSchema, created: str) -> dict[str, Any]:
    resource_rules = [{"verbs": list(r.verbs), "apiGroups": list(r.groups), "resources": list(r.resources),
                       **({"clusterScope": True} if r.cluster_scope else {}), "namespaces": list(r.namespaces)}
                      for r in schema.rules if r.resources]
    non_resource = [{"verbs": list(r.verbs), "nonResourceURLs": list(r.urls)} for r in schema.rules if r.urls]
    rule: dict[str, Any] = {"subjects": [_subject(k, n) for k, n in schema.subjects]}
    if resource_rules:
        rule["resourceRules"] = resource_rules
    if non_resource:
        rule["nonResourceRules"] = non_resource
    spec: dict[str, Any] = {"priorityLevelConfiguration": {"name": schema.priority_level},
                            "matchingPrecedence": schema.precedence, "rules": [rule]}
    if schema.distinguisher:
        spec["distinguisherMethod"] = {"type": schema.distinguisher}
    status = {"conditions": [{
        "type": "Dangling", "status": "False", "lastTransitionTime": created, "reason": "Found",
        "message": f'This FlowSchema references the PriorityLevelConfiguration object named '
                   f'"{schema.priority_level}" and it exists'}]}
    return {"apiVersion": API_VERSION, "kind": "FlowSchema", "metadata": _meta(schema.name, schema.uid, created),
            "spec": spec, "status": status}


def bootstrap_objects() -> list[dict[str, Any]]:
    """Every priority level, then every FlowSchema, as the server runs them."""
    created = now_rfc3339()
    return ([priority_level_object(level, created) for level in PRIORITY_LEVELS]
            + [flow_schema_object(schema, created) for schema in FLOW_SCHEMAS])
