"""Services: defaults and ClusterIP/NodePort allocation, as the service REST storage does."""

from __future__ import annotations

import ipaddress
import itertools
import threading

from mxjob_controller.local.apiserver.errors import Cause
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext

_SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")


class ServiceStrategy(Strategy):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # .1 belongs to the "kubernetes" service in a real cluster; start after it.
        self._next_ip = itertools.count(2)
        self._next_node_port = itertools.count(30000)

    def _allocate_ip(self) -> str:
        with self._lock:
            return str(_SERVICE_CIDR.network_address + next(self._next_ip))

    def prepare_create(self, obj: dict, ctx: WriteContext) -> None:
        super().prepare_create(obj, ctx)
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        if spec.get("type") != "ExternalName":
            ip = spec.get("clusterIP") or (spec.get("clusterIPs") or [None])[0]
            if not ip:
                ip = self._allocate_ip()
            spec["clusterIP"] = ip
            spec["clusterIPs"] = [ip]
            spec.setdefault("ipFamilies", ["IPv4"])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            if spec.get("type") in ("NodePort", "LoadBalancer"):
                for p in spec.get("ports") or []:
                    if isinstance(p, dict) and not p.get("nodePort"):
                        with self._lock:
                            p["nodePort"] = next(self._next_node_port)
        obj["status"] = {"loadBalancer": {}}

    def prepare_update(self, new: dict, old: dict, ctx: WriteContext) -> None:
        # Allocated values survive an update that omits them (kube's patchAllocatedValues).
        spec, old_spec = new.get("spec"), old.get("spec") or {}
        if isinstance(spec, dict) and ctx.subresource is None:
            for k in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                if not spec.get(k) and old_spec.get(k):
                    spec[k] = old_spec[k]
        super().prepare_update(new, old, ctx)

    def default(self, obj: dict, ctx: WriteContext) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        if spec["type"] != "ExternalName":
            spec.setdefault("internalTrafficPolicy", "Cluster")
        if spec["type"] in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        for p in spec.get("ports") or []:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")
                if "targetPort" not in p and "port" in p:
                    p["targetPort"] = p["port"]

    def validate(self, obj: dict, old: dict | None, ctx: WriteContext) -> list[Cause]:
        causes = super().validate(obj, old, ctx)
        if old is not None:
            new_ip = (obj.get("spec") or {}).get("clusterIP")
            old_ip = (old.get("spec") or {}).get("clusterIP")
            if old_ip and new_ip != old_ip:
                causes.append(Cause("spec.clusterIPs[0]", "FieldValueInvalid",
                                    f'Invalid value: []string{{"{new_ip}"}}: may not change once set'))
        return causes
