"""One container: name, image, ports, env, resources, probes, and the enums of ``validateContainerCommon``.

Checks that need the whole pod (unique container names, volume mounts naming real volumes) are in
:mod:`.pods`. Each present field is looked at once, through a table of field checks: a container's rules
cost what its fields are, not what fields a container could have.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from mxjob_controller.kube.field_errors import (
    FieldError,
    child,
    duplicate,
    forbidden,
    invalid,
    key_child,
    not_supported,
    required,
)
from mxjob_controller.kube.schema.formats import quantity_value
from mxjob_controller.kube.schema.rules import rule
from mxjob_controller.kube.schema.rules.common import (
    NEGATIVE,
    PORT_RANGE,
    by_messages,
    config_key_messages,
    dns_label_messages,
    dns_subdomain,
    each_message,
    enum,
    env_var_messages,
    port_name_messages,
    port_number_or_name,
    qualified_name_messages,
)

CONTAINER = "io.k8s.api.core.v1.Container"
PROTOCOLS = ("SCTP", "TCP", "UDP")  # sets.List: sorted
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
ENV_FIELD_PATHS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                   "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
                   "status.podIPs")
ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")  # validateHandler's order
PROBE_COUNTS = frozenset({"initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                          "failureThreshold"})

Check = Callable[[Any, str, list[FieldError]], None]


@rule(CONTAINER)
def container(c: dict, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    prefix = f"{path}." if path else ""   # child(path, key), without a call for each field checked
    for key, value in c.items():
        check = _FIELDS.get(key)
        if check is not None:
            check(value, prefix + key, errs)
    if not c.get("image"):
        errs.append(required(child(path, "image")))
    return errs


def _name(value: Any, path: str, errs: list[FieldError]) -> None:
    if value == "":
        errs.append(required(path))
    elif type(value) is str:
        errs.extend(each_message(path, value, dns_label_messages(value)))


def _enum(supported: tuple[str, ...]) -> Check:
    def check(value: Any, path: str, errs: list[FieldError]) -> None:
        if value is not None and value not in supported:
            errs.append(required(path) if value == "" else not_supported(path, value, supported))
    return check


def ports(value: Any, path: str, errs: list[FieldError]) -> None:
    """``validateContainerPorts``: names unique within the container, numbers in range, known protocols."""
    if type(value) is not list:
        return
    names: set[str] = set()
    for i, port in enumerate(value):
        if type(port) is not dict:
            continue
        name = port.get("name")
        if type(name) is str and name:
            msgs = port_name_messages(name)
            if msgs:
                errs.extend(each_message(child(child(path, i), "name"), name, msgs))
            elif name in names:
                errs.append(duplicate(child(child(path, i), "name"), name))
            else:
                names.add(name)
        number = port.get("containerPort")
        if number == 0:
            errs.append(required(child(child(path, i), "containerPort")))
        elif type(number) is int and not 1 <= number <= 65535:
            errs.append(invalid(child(child(path, i), "containerPort"), number, PORT_RANGE))
        host = port.get("hostPort")
        if type(host) is int and host and not 1 <= host <= 65535:
            errs.append(invalid(child(child(path, i), "hostPort"), host, PORT_RANGE))
        protocol = port.get("protocol")
        if protocol is not None and protocol not in PROTOCOLS:
            errs.extend(enum(protocol, child(path, i), "protocol", PROTOCOLS))


def env(value: Any, path: str, errs: list[FieldError]) -> None:
    """``ValidateEnv``: names, and exactly one ``valueFrom`` source when there is no ``value``."""
    if type(value) is not list:
        return
    for i, var in enumerate(value):
        if type(var) is not dict:
            continue
        name = var.get("name")
        if name == "":
            errs.append(required(child(child(path, i), "name")))
        elif type(name) is str:
            msgs = env_var_messages(name)
            if msgs:
                errs.extend(each_message(child(child(path, i), "name"), name, msgs))
        source = var.get("valueFrom")
        if type(source) is dict:
            _value_from(source, bool(var.get("value")), child(child(path, i), "valueFrom"), errs)


def _value_from(source: dict, has_value: bool, path: str, errs: list[FieldError]) -> None:
    given = [k for k in ENV_SOURCES if source.get(k) is not None]
    if type(source.get("fieldRef")) is dict:
        _field_ref(source["fieldRef"], child(path, "fieldRef"), errs)
    for key in ("configMapKeyRef", "secretKeyRef"):
        if type(source.get(key)) is dict:
            _key_selector(source[key], child(path, key), errs)
    if not given:
        errs.append(invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` "
                                      "or `secretKeyRef`"))
    elif has_value:
        errs.append(invalid(path, "", "may not be specified when `value` is not empty"))
    elif len(given) > 1:
        errs.append(invalid(path, "", "may not have more than one field specified at a time"))


def _field_ref(ref: dict, path: str, errs: list[FieldError]) -> None:
    """``validateObjectFieldSelector`` with the downward API's env var paths."""
    if ref.get("apiVersion") == "":
        errs.append(required(child(path, "apiVersion")))
        return
    field_path = ref.get("fieldPath")
    if type(field_path) is not str:
        return
    if not field_path:
        errs.append(required(child(path, "fieldPath")))
        return
    base, _, subscript = field_path.partition("[")
    if subscript:
        key = subscript.rstrip("]").strip("'\"")
        if base == "metadata.labels":
            errs.extend(each_message(path, key, qualified_name_messages(key)))
        elif base == "metadata.annotations":
            errs.extend(each_message(path, key.lower(), qualified_name_messages(key.lower())))
        else:
            errs.append(invalid(path, base, "does not support subscript"))
    elif field_path not in ENV_FIELD_PATHS:
        errs.append(not_supported(child(path, "fieldPath"), field_path, ENV_FIELD_PATHS))


def _key_selector(sel: dict, path: str, errs: list[FieldError]) -> None:
    errs.extend(dns_subdomain(sel.get("name"), path, "name"))
    key = sel.get("key")
    if key == "":
        errs.append(required(child(path, "key")))
    else:
        errs.extend(by_messages(config_key_messages, key, path, "key"))


def env_from(value: Any, path: str, errs: list[FieldError]) -> None:
    """``ValidateEnvFrom``: prefixes are env var names; exactly one source each."""
    if type(value) is not list:
        return
    for i, source in enumerate(value):
        if type(source) is not dict:
            continue
        base = child(path, i)
        errs.extend(by_messages(env_var_messages, source.get("prefix"), base, "prefix"))
        for key in ("configMapRef", "secretRef"):
            ref = source.get(key)
            if type(ref) is dict:
                errs.extend([required(child(child(base, key), "name"))] if not ref.get("name")
                            else dns_subdomain(ref["name"], child(base, key), "name"))
        count = sum(1 for k in ("configMapRef", "secretRef") if source.get(k) is not None)
        if count == 0:
            errs.append(invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errs.append(invalid(path, "", "may not have more than one field specified at a time"))


def resources(value: Any, path: str, errs: list[FieldError]) -> None:
    """``ValidateContainerResourceRequirements``: resource names, non-negative values, requests ≤ limits."""
    if type(value) is not dict:
        return
    limits = value.get("limits")
    limits = limits if type(limits) is dict else {}
    requests = value.get("requests")
    requests = requests if type(requests) is dict else {}
    limit_values: dict[str, Decimal] = {}
    for name, quantity in limits.items():
        amount = _check_resource(name, quantity, path, "limits", errs)
        if amount is not None:
            limit_values[name] = amount
    for name, quantity in requests.items():
        amount = _check_resource(name, quantity, path, "requests", errs)
        limit = limit_values.get(name)
        if amount is None or limit is None or amount == limit:
            continue
        if not (_native(name) and not name.startswith("hugepages-")):  # IsOvercommitAllowed
            errs.append(invalid(child(path, "requests"), str(quantity),
                                f"must be equal to {name} limit of {limits[name]}"))
        elif amount > limit:
            errs.append(invalid(child(path, "requests"), str(quantity),
                                f"must be less than or equal to {name} limit of {limits[name]}"))


def _check_resource(name: str, quantity: Any, path: str, field: str, errs: list[FieldError]) -> Decimal | None:
    """Name and value of one resource (``validateContainerResourceName``, ``ValidateResourceQuantityValue``)."""
    amount = quantity_value(quantity)
    if name in STANDARD_CONTAINER_RESOURCES:
        if amount is not None and amount < 0:
            errs.append(invalid(key_child(child(path, field), name), str(quantity), NEGATIVE))
        return amount
    where = key_child(child(path, field), name)
    errs.extend(each_message(where, name, qualified_name_messages(name)))
    extended = _extended(name)
    if "/" not in name:
        if not name.startswith("hugepages-"):
            errs.append(invalid(where, name, "must be a standard resource for containers"))
    elif not _native(name) and not extended:
        errs.append(invalid(where, name, "doesn't follow extended resource name standard"))
    if amount is not None:
        if amount < 0:
            errs.append(invalid(where, str(quantity), NEGATIVE))
        elif extended and amount != amount.to_integral_value():
            errs.append(invalid(where, str(quantity), "must be an integer"))
    return amount


def _native(name: str) -> bool:
    return "/" not in name or name.startswith("kubernetes.io/")


def _extended(name: str) -> bool:
    """``IsExtendedResourceName``: a domain-prefixed name that also makes a valid quota name."""
    if _native(name) or name.startswith("requests."):
        return False
    return not qualified_name_messages("requests." + name)


def _probe(kind: str) -> Check:
    def check(value: Any, path: str, errs: list[FieldError]) -> None:
        if type(value) is dict:
            probe(value, path, kind, errs)
    return check


def probe(p: dict, path: str, kind: str, errs: list[FieldError]) -> None:
    """``validateProbe`` and the per-kind rules: one handler, non-negative timings."""
    handlers = [k for k in HANDLERS if p.get(k) is not None]
    if not handlers:
        errs.append(required(path, "must specify a handler type"))
    for extra in handlers[1:]:
        errs.append(forbidden(child(path, extra), "may not specify more than 1 handler type"))
    for key, value in p.items():
        if key in PROBE_COUNTS and type(value) in (int, float) and value < 0:
            errs.append(invalid(child(path, key), value, NEGATIVE))
    action = p.get("exec")
    if type(action) is dict and not action.get("command"):
        errs.append(required(child(child(path, "exec"), "command")))
    for key in ("httpGet", "tcpSocket"):
        action = p.get(key)
        if type(action) is dict:
            port = action.get("port")
            if port == "" or port is None:
                errs.append(required(child(child(path, key), "port")))
            else:
                errs.extend(port_number_or_name(port, child(path, key), "port"))
            if key == "httpGet":
                errs.extend(enum(action.get("scheme"), child(path, key), "scheme", ("HTTP", "HTTPS")))
    threshold = p.get("successThreshold")
    if kind != "readinessProbe" and type(threshold) is int and threshold >= 0 and threshold != 1:
        errs.append(invalid(child(path, "successThreshold"), threshold, "must be 1"))
    grace = p.get("terminationGracePeriodSeconds")
    if kind == "readinessProbe" and grace is not None:
        errs.append(invalid(child(path, "terminationGracePeriodSeconds"), grace, "must not be set for readinessProbes"))
    elif type(grace) is int and grace <= 0:
        errs.append(invalid(child(path, "terminationGracePeriodSeconds"), grace, "must be greater than 0"))


_FIELDS: dict[str, Check] = {
    "name": _name,
    "terminationMessagePolicy": _enum(TERMINATION_MESSAGE_POLICIES),
    "imagePullPolicy": _enum(PULL_POLICIES),
    "ports": ports,
    "env": env,
    "envFrom": env_from,
    "resources": resources,
    "livenessProbe": _probe("livenessProbe"),
    "readinessProbe": _probe("readinessProbe"),
    "startupProbe": _probe("startupProbe"),
}
