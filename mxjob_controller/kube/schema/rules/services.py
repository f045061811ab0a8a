"""A service's spec: ``ValidateService`` (the parts that do not depend on IP allocation)."""

from __future__ import annotations

from mxjob_controller.kube.field_errors import FieldError, child, duplicate, forbidden, invalid, required
from mxjob_controller.kube.schema.rules import rule
from mxjob_controller.kube.schema.rules.common import (
    dns_label,
    dns_subdomain,
    enum,
    items,
    labels,
    port_number,
    port_number_or_name,
)
from mxjob_controller.kube.schema.rules.containers import PROTOCOLS

SERVICE_SPEC = "io.k8s.api.core.v1.ServiceSpec"
SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")  # sets.List: sorted
SESSION_AFFINITIES = ("ClientIP", "None")
TRAFFIC_POLICIES = ("Cluster", "Local")


@rule(SERVICE_SPEC)
def service_spec(spec: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = spec.get("type")
    headless = spec.get("clusterIP") == "None"
    ports = spec.get("ports")
    if not ports and not headless and kind != "ExternalName":
        errs.append(required(child(path, "ports")))
    if kind == "ExternalName":
        name = str(spec.get("externalName") or "").removesuffix(".")
        errs.extend(dns_subdomain(name, path, "externalName") if name else [required(child(path, "externalName"))])
    errs.extend(_ports(ports, child(path, "ports"), kind))
    errs.extend(labels(spec.get("selector"), path, "selector"))
    errs.extend(enum(spec.get("sessionAffinity"), path, "sessionAffinity", SESSION_AFFINITIES))
    errs.extend(enum(kind, path, "type", SERVICE_TYPES))
    external = kind in ("NodePort", "LoadBalancer") or (kind in (None, "ClusterIP") and bool(spec.get("externalIPs")))
    policy = spec.get("externalTrafficPolicy")
    if policy and not external:
        errs.append(invalid(child(path, "externalTrafficPolicy"), policy,
                            "may only be set for externally-accessible services"))
    elif external:
        errs.extend(enum(policy, path, "externalTrafficPolicy", TRAFFIC_POLICIES))
    errs.extend(enum(spec.get("internalTrafficPolicy"), path, "internalTrafficPolicy", TRAFFIC_POLICIES))
    return errs


def _ports(value: object, path: str, kind: object) -> list[FieldError]:
    """``validateServicePort`` for each port, then duplicates of (protocol, port) and of node ports."""
    errs: list[FieldError] = []
    ports = items(value)
    names: set[str] = set()
    seen: set[tuple[object, object]] = set()
    node_ports: set[tuple[object, object]] = set()
    for i, port in ports:
        base = child(path, i)
        name = port.get("name")
        if len(ports) > 1 and not name:
            errs.append(required(child(base, "name")))
        elif type(name) is str and name:
            errs.extend(dns_label(name, base, "name"))
            if name in names:
                errs.append(duplicate(child(base, "name"), name))
            names.add(name)
        number = port.get("port")
        errs.extend(port_number(number, base, "port"))
        errs.extend(enum(port.get("protocol"), base, "protocol", PROTOCOLS))
        if port.get("targetPort") is not None:
            errs.extend(port_number_or_name(port["targetPort"], base, "targetPort"))
        node_port = port.get("nodePort")
        if node_port and kind in (None, "ClusterIP"):
            errs.append(forbidden(child(base, "nodePort"), "may not be used when `type` is 'ClusterIP'"))
        protocol = port.get("protocol") or "TCP"
        if node_port:
            if (protocol, node_port) in node_ports:
                errs.append(duplicate(child(base, "nodePort"), node_port))
            node_ports.add((protocol, node_port))
        if (protocol, number) in seen:
            errs.append(duplicate(base, {"port": number, "protocol": protocol}))
        seen.add((protocol, number))
    return errs
