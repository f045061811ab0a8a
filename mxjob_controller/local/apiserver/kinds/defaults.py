"""kube's ``SetDefaults_*`` for the built-in kinds whose only rule beyond the common ones is defaulting: storage,
networking, autoscaling and flow-control objects. One function per kind, applied by :class:`DefaultingStrategy`;
:data:`DEFAULTERS` maps each kind's storage key to it (``server.py`` builds the strategies from it).

Each default is what Kubernetes 1.32's ``pkg/apis/<group>/v1/defaults.go`` sets for a field left empty, so an
object reads back as kube's does (``kubectl get -o yaml``, an SSA diff). Only the defaults of GA features are here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext

Defaulter = Callable[[dict], None]


def _dicts(value: Any) -> list[dict]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _spec(obj: dict) -> dict | None:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else None


def _tcp(ports: Any) -> None:
    for port in _dicts(ports):
        port.setdefault("protocol", "TCP")


# --- core ------------------------------------------------------------------------------------------------

def persistent_volume_claim(obj: dict) -> None:
    spec = _spec(obj)
    if spec is not None:
        spec.setdefault("volumeMode", "Filesystem")


def persistent_volume(obj: dict) -> None:
    spec = _spec(obj)
    if spec is not None:
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")


def endpoints(obj: dict) -> None:
    for subset in _dicts(obj.get("subsets")):
        _tcp(subset.get("ports"))


def endpoint_slice(obj: dict) -> None:
    for port in _dicts(obj.get("ports")):
        port.setdefault("name", "")
        port.setdefault("protocol", "TCP")


# --- networking.k8s.io -----------------------------------------------------------------------------------

def network_policy(obj: dict) -> None:
    """Ports default to TCP; ``policyTypes`` to Ingress, plus Egress when there are egress rules."""
    spec = _spec(obj)
    if spec is None:
        return
    for direction in ("ingress", "egress"):
        for rule in _dicts(spec.get(direction)):
            _tcp(rule.get("ports"))
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


# --- storage.k8s.io --------------------------------------------------------------------------------------

def storage_class(obj: dict) -> None:
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")


def csi_driver(obj: dict) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    for key, value in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                       ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("requiresRepublish", False),
                       ("seLinuxMount", False)):
        spec.setdefault(key, value)
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


# --- autoscaling/v2 --------------------------------------------------------------------------------------

def _scale_up_rules() -> dict:
    return {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                         {"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _scale_down_rules() -> dict:
    return {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _fill_rules(rules: Any, defaults: dict) -> dict:
    """``GenerateHPAScale{Up,Down}Rules``: the defaults for what a rule leaves out."""
    if not isinstance(rules, dict):
        return defaults
    for key, value in defaults.items():
        if rules.get(key) is None:
            rules[key] = value
    return rules


def horizontal_pod_autoscaler(obj: dict) -> None:
    """One replica at least; in v2, CPU at 80% when no metric is given and a given ``behavior`` completed (v1 has
    neither: its objects get them when converted to the stored v2)."""
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if obj.get("apiVersion") != "autoscaling/v2":
        return
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": 80}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _fill_rules(behavior.get("scaleUp"), _scale_up_rules())
        behavior["scaleDown"] = _fill_rules(behavior.get("scaleDown"), _scale_down_rules())


# --- flowcontrol.apiserver.k8s.io/v1 ---------------------------------------------------------------------

def flow_schema(obj: dict) -> None:
    spec = _spec(obj)
    if spec is not None and not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = 1000


def priority_level_configuration(obj: dict) -> None:
    spec = _spec(obj)
    if spec is None:
        return
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if spec.get("type") == "Limited" and isinstance(limited, dict):
        limited.setdefault("nominalConcurrencyShares", 30)
        limited.setdefault("lendablePercent", 0)
        response = limited.get("limitResponse")
        queuing = response.get("queuing") if isinstance(response, dict) else None
        if isinstance(response, dict) and response.get("type") == "Queue" and isinstance(queuing, dict):
            for key, value in (("queues", 64), ("handSize", 8), ("queueLengthLimit", 50)):
                if not queuing.get(key):
                    queuing[key] = value
    if spec.get("type") == "Exempt" and isinstance(exempt, dict):
        exempt.setdefault("nominalConcurrencyShares", 0)
        exempt.setdefault("lendablePercent", 0)


# --- apiregistration.k8s.io ------------------------------------------------------------------------------

def api_service(obj: dict) -> None:
    spec = _spec(obj)
    service = spec.get("service") if spec is not None else None
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


class DefaultingStrategy(Strategy):
    """The common rules plus one kind's defaults."""

    def __init__(self, defaulter: Defaulter) -> None:
        self._defaulter = defaulter

    def default(self, obj: dict, ctx: WriteContext) -> None:
        self._defaulter(obj)


class PersistentVolumeStrategy(DefaultingStrategy):
    """``persistentvolumeStrategy.PrepareForCreate``: Pending since now (``lastPhaseTransitionTime``, GA in 1.31)."""

    def __init__(self) -> None:
        super().__init__(persistent_volume)

    def prepare_create(self, obj: dict, ctx: WriteContext) -> None:
        super().prepare_create(obj, ctx)
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": now_rfc3339()}


#: storage key → the kind's defaults.
DEFAULTERS: dict[str, Defaulter] = {
    "/persistentvolumeclaims": persistent_volume_claim,
    "/persistentvolumes": persistent_volume,
    "/endpoints": endpoints,
    "discovery.k8s.io/endpointslices": endpoint_slice,
    "networking.k8s.io/networkpolicies": network_policy,
    "storage.k8s.io/storageclasses": storage_class,
    "storage.k8s.io/csidrivers": csi_driver,
    "autoscaling/horizontalpodautoscalers": horizontal_pod_autoscaler,
    "flowcontrol.apiserver.k8s.io/flowschemas": flow_schema,
    "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations": priority_level_configuration,
    "apiregistration.k8s.io/apiservices": api_service,
}
