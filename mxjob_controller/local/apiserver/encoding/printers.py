"""kube-apiserver's printers: the columns ``kubectl get`` shows for built-in kinds, and how cells are computed.

These follow ``pkg/printers/internalversion`` of Kubernetes 1.32 as the server runs it, that is with
``Wide`` always on: priority-1 columns are always filled and ``kubectl`` hides them unless ``-o wide``.
A printer is a pure function of the object (a plain dict) and the current time; cells are strings,
integers or booleans as kube sends them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mxjob_controller.kube import k8s_schemas
from mxjob_controller.kube.schema.compiler import OBJECT_META as _META
from mxjob_controller.kube.selectors import SelectorError, selector_from_label_selector
from mxjob_controller.kube.timefmt import parse_time

_CORE = "io.k8s.api.core.v1."


@dataclass(frozen=True, slots=True)
class Column:
    """A ``metav1.TableColumnDefinition``."""

    name: str
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format, "description": self.description,
                "priority": self.priority}


Cells = list[Any]
Conditions = list[dict[str, str]] | None
PrintFn = Callable[[Mapping[str, Any], float], tuple[Cells, Conditions]]


@dataclass(frozen=True, slots=True)
class Printer:
    """A kind's columns and the function computing one row's cells (and row conditions) from an object."""

    columns: tuple[Column, ...]
    cells: PrintFn


def doc(definition: str, field: str) -> str:
    """A field's description in Kubernetes' schemas (what kube's ``SwaggerDoc()`` returns)."""
    props = (k8s_schemas.definitions().get(definition) or {}).get("properties") or {}
    return (props.get(field) or {}).get("description", "")


def name_column() -> Column:
    return Column("Name", format="name", description=doc(_META, "name"))


def age_column(name: str = "Age", type_: str = "string") -> Column:
    return Column(name, type_, description=doc(_META, "creationTimestamp"))


# --- time -----------------------------------------------------------------------------------------------

def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: about 2-3 significant figures (``5m30s``, ``3h``, ``2d4h``)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        s = whole % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def since(timestamp: Any, now: float) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` when there is none."""
    ts = parse_time(timestamp) if isinstance(timestamp, str) else None
    return "<unknown>" if ts is None else human_duration(now - ts)


def age(obj: Mapping[str, Any], now: float) -> str:
    return since(_get(obj, "metadata", "creationTimestamp"), now)


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def format_labels(labels: Any) -> str:
    """``labels.FormatLabels``: ``k=v,k2=v2`` sorted by key, ``<none>`` when empty."""
    text = ",".join(f"{k}={v}" for k, v in sorted(_map(labels).items()))
    return text or "<none>"


def format_label_selector(selector: Any) -> str:
    """``LabelSelectorAsSelector(...).String()``: requirements sorted by key, values sorted."""
    if selector is None:
        return ""
    try:
        parsed = selector_from_label_selector(_map(selector))
    except (SelectorError, KeyError, TypeError):
        return "<invalid>"
    parts = []
    for r in sorted(parsed.requirements, key=lambda r: r.key):
        if r.op in ("in", "notin"):
            parts.append(f"{r.key} {r.op} ({','.join(sorted(r.values))})")
        else:
            parts.append(str(r))
    return ",".join(parts)


def _containers_and_images(containers: Any) -> tuple[str, str]:
    items = [c for c in _list(containers) if isinstance(c, Mapping)]
    return ",".join(_str(c.get("name")) for c in items), ",".join(_str(c.get("image")) for c in items)


# --- pods -----------------------------------------------------------------------------------------------

_POD_SUCCEEDED = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}]
_POD_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def _condition_true(conditions: Any, ctype: str) -> bool:
    for c in _list(conditions):
        if isinstance(c, Mapping) and c.get("type") == ctype:
            return c.get("status") == "True"
    return False


def _finished_at(status: Mapping[str, Any]) -> float | None:
    return parse_time(_get(status, "lastState", "terminated", "finishedAt"))


def _terminated_reason(terminated: Mapping[str, Any], prefix: str = "") -> str:
    if _str(terminated.get("reason")):
        return prefix + terminated["reason"]
    if _int(terminated.get("signal")):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{_int(terminated.get('exitCode'))}"


def print_pod(pod: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec, status = _map(pod.get("spec")), _map(pod.get("status"))
    meta = _map(pod.get("metadata"))
    init_specs = {_str(c.get("name")): c for c in _list(spec.get("initContainers")) if isinstance(c, Mapping)}
    sidecars = {n for n, c in init_specs.items() if c.get("restartPolicy") == "Always"}
    total = len(_list(spec.get("containers"))) + len(sidecars)
    ready = restarts = sidecar_restarts = 0
    last_restart: float | None = None
    last_sidecar_restart: float | None = None

    phase = _str(status.get("phase"))
    reason = _str(status.get("reason")) or phase
    for c in _list(status.get("conditions")):
        if isinstance(c, Mapping) and c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    conditions = _POD_SUCCEEDED if phase == "Succeeded" else _POD_FAILED if phase == "Failed" else None

    initializing = False
    init_statuses = [s for s in _list(status.get("initContainerStatuses")) if isinstance(s, Mapping)]
    for i, cs in enumerate(init_statuses):
        restarts += _int(cs.get("restartCount"))
        finished = _finished_at(cs)
        if finished is not None and (last_restart is None or finished > last_restart):
            last_restart = finished
        is_sidecar = _str(cs.get("name")) in sidecars
        if is_sidecar:
            sidecar_restarts += _int(cs.get("restartCount"))
            if finished is not None and (last_sidecar_restart is None or finished > last_sidecar_restart):
                last_sidecar_restart = finished
        state = _map(cs.get("state"))
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if isinstance(terminated, Mapping) and _int(terminated.get("exitCode")) == 0:
            continue
        if is_sidecar and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if isinstance(terminated, Mapping):
            reason = _terminated_reason(terminated, "Init:")
        elif isinstance(waiting, Mapping) and _str(waiting.get("reason")) and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(_list(spec.get('initContainers')))}"
        initializing = True
        break

    if not initializing or _condition_true(status.get("conditions"), "Initialized"):
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed([s for s in _list(status.get("containerStatuses")) if isinstance(s, Mapping)]):
            restarts += _int(cs.get("restartCount"))
            finished = _finished_at(cs)
            if finished is not None and (last_restart is None or finished > last_restart):
                last_restart = finished
            state = _map(cs.get("state"))
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if isinstance(waiting, Mapping) and _str(waiting.get("reason")):
                reason = waiting["reason"]
            elif isinstance(terminated, Mapping):
                reason = _terminated_reason(terminated)
            elif cs.get("ready") is True and isinstance(state.get("running"), Mapping):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(status.get("conditions"), "Ready") else "NotReady"

    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"

    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration(now - last_restart)} ago)"

    pod_ips = [p for p in _list(status.get("podIPs")) if isinstance(p, Mapping)]
    pod_ip = _str(pod_ips[0].get("ip")) if pod_ips else ""
    gates = [g for g in _list(spec.get("readinessGates")) if isinstance(g, Mapping)]
    readiness = "<none>"
    if gates:
        true_count = sum(1 for g in gates if _condition_true(status.get("conditions"), _str(g.get("conditionType"))))
        readiness = f"{true_count}/{len(gates)}"
    cells = [meta.get("name", ""), f"{ready}/{total}", reason, restarts_text, age(pod, now),
             pod_ip or "<none>", _str(spec.get("nodeName")) or "<none>",
             _str(status.get("nominatedNodeName")) or "<none>", readiness]
    return cells, conditions


@functools.cache
def _pod_columns() -> tuple[Column, ...]:
    return (
        name_column(),
        Column("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
        Column("Status", description="The aggregate status of the containers in this pod."),
        Column("Restarts", description="The number of times the containers in this pod have been restarted and "
                                       "when the last container in this pod has restarted."),
        age_column(),
        Column("IP", priority=1, description=doc(_CORE + "PodStatus", "podIP")),
        Column("Node", priority=1, description=doc(_CORE + "PodSpec", "nodeName")),
        Column("Nominated Node", priority=1, description=doc(_CORE + "PodStatus", "nominatedNodeName")),
        Column("Readiness Gates", priority=1, description=doc(_CORE + "PodSpec", "readinessGates")),
    )


# --- services -------------------------------------------------------------------------------------------

def _external_ip(svc: Mapping[str, Any]) -> str:
    spec = _map(svc.get("spec"))
    external = [ip for ip in _list(spec.get("externalIPs")) if isinstance(ip, str)]
    stype = spec.get("type")
    if stype in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if stype == "LoadBalancer":
        ingress = [i for i in _list(_get(svc, "status", "loadBalancer", "ingress")) if isinstance(i, Mapping)]
        lb = sorted({_str(i.get("ip")) or _str(i.get("hostname")) for i in ingress} - {""})
        if external:
            return ",".join(lb + external)
        return ",".join(lb) if lb else "<pending>"
    if stype == "ExternalName":
        return _str(spec.get("externalName"))
    return "<unknown>"


def _ports(ports: Any) -> str:
    pieces = []
    for p in _list(ports):
        if not isinstance(p, Mapping):
            continue
        node_port = _int(p.get("nodePort"))
        protocol = _str(p.get("protocol"))
        port = _int(p.get("port"))
        pieces.append(f"{port}:{node_port}/{protocol}" if node_port > 0 else f"{port}/{protocol}")
    return ",".join(pieces)


def print_service(svc: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec = _map(svc.get("spec"))
    cluster_ips = [ip for ip in _list(spec.get("clusterIPs")) if isinstance(ip, str)]
    cells = [_get(svc, "metadata", "name") or "", _str(spec.get("type")), cluster_ips[0] if cluster_ips else "<none>",
             _external_ip(svc), _ports(spec.get("ports")) or "<none>", age(svc, now),
             format_labels(spec.get("selector"))]
    return cells, None


@functools.cache
def _service_columns() -> tuple[Column, ...]:
    spec = _CORE + "ServiceSpec"
    return (name_column(), Column("Type", description=doc(spec, "type")),
            Column("Cluster-IP", description=doc(spec, "clusterIP")),
            Column("External-IP", description=doc(spec, "externalIPs")),
            Column("Port(s)", description=doc(spec, "ports")), age_column(),
            Column("Selector", priority=1, description=doc(spec, "selector")))


# --- the other kinds ------------------------------------------------------------------------------------

def _name(obj: Mapping[str, Any]) -> str:
    return _get(obj, "metadata", "name") or ""


def print_namespace(ns: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    return [_name(ns), _str(_get(ns, "status", "phase")), age(ns, now)], None


def print_configmap(cm: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    return [_name(cm), len(_map(cm.get("data"))) + len(_map(cm.get("binaryData"))), age(cm, now)], None


def print_secret(secret: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    return [_name(secret), _str(secret.get("type")), len(_map(secret.get("data"))), age(secret, now)], None


def print_service_account(sa: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    return [_name(sa), len(_list(sa.get("secrets"))), age(sa, now)], None


def print_event(ev: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    first = since(ev.get("firstTimestamp"), now)
    if parse_time(ev.get("firstTimestamp")) is None:
        first = since(ev.get("eventTime"), now)
    last = since(ev.get("lastTimestamp"), now) if parse_time(ev.get("lastTimestamp")) is not None else first
    count = _int(ev.get("count"))
    series = ev.get("series")
    if isinstance(series, Mapping):
        last = since(series.get("lastObservedTime"), now)
        count = _int(series.get("count"))
    elif count == 0:
        count = 1  # singleton events of the events.k8s.io API carry no count
    involved = _map(ev.get("involvedObject"))
    kind = _str(involved.get("kind")).lower()
    target = f"{kind}/{involved['name']}" if _str(involved.get("name")) else kind
    source = _map(ev.get("source"))
    component = _str(source.get("component")) or _str(ev.get("reportingComponent"))
    instance = _str(source.get("host")) or _str(ev.get("reportingInstance"))
    source_text = f"{component}, {instance}" if instance else component
    cells = [last, _str(ev.get("type")), _str(ev.get("reason")), target, _str(involved.get("fieldPath")),
             source_text, _str(ev.get("message")).strip(), first, count, _name(ev)]
    return cells, None


def print_node(node: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    status = _map(node.get("status"))
    states = []
    for c in _list(status.get("conditions")):
        if isinstance(c, Mapping) and c.get("type") == "Ready":
            states = ["Ready" if c.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if _get(node, "spec", "unschedulable") is True:
        states.append("SchedulingDisabled")
    roles = set()
    for k, v in _map(_get(node, "metadata", "labels")).items():
        if k.startswith("node-role.kubernetes.io/") and k[len("node-role.kubernetes.io/"):]:
            roles.add(k[len("node-role.kubernetes.io/"):])
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    info = _map(status.get("nodeInfo"))

    def address(kind: str) -> str:
        for a in _list(status.get("addresses")):
            if isinstance(a, Mapping) and a.get("type") == kind:
                return _str(a.get("address"))
        return "<none>"

    cells = [_name(node), ",".join(states), ",".join(sorted(roles)) or "<none>", age(node, now),
             _str(info.get("kubeletVersion")), address("InternalIP"), address("ExternalIP"),
             _str(info.get("osImage")) or "<unknown>", _str(info.get("kernelVersion")) or "<unknown>",
             _str(info.get("containerRuntimeVersion")) or "<unknown>"]
    return cells, None


def print_lease(lease: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    return [_name(lease), _str(_get(lease, "spec", "holderIdentity")), age(lease, now)], None


def print_deployment(dep: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec, status = _map(dep.get("spec")), _map(dep.get("status"))
    names, images = _containers_and_images(_get(spec, "template", "spec", "containers"))
    cells = [_name(dep), f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}",
             _int(status.get("updatedReplicas")), _int(status.get("availableReplicas")), age(dep, now),
             names, images, format_label_selector(spec.get("selector"))]
    return cells, None


def print_pdb(pdb: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec = _map(pdb.get("spec"))
    min_available = spec.get("minAvailable")
    max_unavailable = spec.get("maxUnavailable")
    cells = [_name(pdb), "N/A" if min_available is None else str(min_available),
             "N/A" if max_unavailable is None else str(max_unavailable),
             _int(_get(pdb, "status", "disruptionsAllowed")), age(pdb, now)]
    return cells, None


def print_role_binding(binding: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    ref = _map(binding.get("roleRef"))
    users, groups, accounts = [], [], []
    for s in _list(binding.get("subjects")):
        if not isinstance(s, Mapping):
            continue
        kind, name = s.get("kind"), _str(s.get("name"))
        if kind == "ServiceAccount":
            accounts.append(f"{_str(s.get('namespace'))}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    cells = [_name(binding), f"{_str(ref.get('kind'))}/{_str(ref.get('name'))}", age(binding, now),
             ", ".join(users), ", ".join(groups), ", ".join(accounts)]
    return cells, None


def print_priority_class(pc: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    return [_name(pc), _int(pc.get("value")), pc.get("globalDefault") is True, age(pc, now),
            _str(pc.get("preemptionPolicy"))], None


@functools.cache
def _columns(kind: str) -> tuple[Column, ...]:
    event, binding = _CORE + "Event", "io.k8s.api.rbac.v1.RoleBinding"
    columns: dict[str, tuple[Column, ...]] = {
        "Namespace": (name_column(), Column("Status", description="The status of the namespace"), age_column()),
        "ConfigMap": (name_column(), Column("Data", description=doc(_CORE + "ConfigMap", "data")), age_column()),
        "Secret": (name_column(), Column("Type", description=doc(_CORE + "Secret", "type")),
                   Column("Data", description=doc(_CORE + "Secret", "data")), age_column()),
        "ServiceAccount": (name_column(), Column("Secrets", description=doc(_CORE + "ServiceAccount", "secrets")),
                           age_column()),
        "Event": (Column("Last Seen", description=doc(event, "lastTimestamp")),
                  Column("Type", description=doc(event, "type")),
                  Column("Reason", description=doc(event, "reason")),
                  Column("Object", description=doc(event, "involvedObject")),
                  Column("Subobject", priority=1, description=doc(_CORE + "ObjectReference", "fieldPath")),
                  Column("Source", priority=1, description=doc(event, "source")),
                  Column("Message", description=doc(event, "message")),
                  Column("First Seen", priority=1, description=doc(event, "firstTimestamp")),
                  Column("Count", priority=1, description=doc(event, "count")),
                  Column("Name", format="name", priority=1, description=doc(_META, "name"))),
        "Node": (name_column(), Column("Status", description="The status of the node"),
                 Column("Roles", description="The roles of the node"), age_column(),
                 Column("Version", description=doc(_CORE + "NodeSystemInfo", "kubeletVersion")),
                 Column("Internal-IP", priority=1, description=doc(_CORE + "NodeStatus", "addresses")),
                 Column("External-IP", priority=1, description=doc(_CORE + "NodeStatus", "addresses")),
                 Column("OS-Image", priority=1, description=doc(_CORE + "NodeSystemInfo", "osImage")),
                 Column("Kernel-Version", priority=1, description=doc(_CORE + "NodeSystemInfo", "kernelVersion")),
                 Column("Container-Runtime", priority=1,
                        description=doc(_CORE + "NodeSystemInfo", "containerRuntimeVersion"))),
        "Lease": (name_column(), Column("Holder", description=doc("io.k8s.api.coordination.v1.LeaseSpec",
                                                                  "holderIdentity")), age_column()),
        "Deployment": (name_column(), Column("Ready", description="Number of the pod with ready state"),
                       Column("Up-to-date", description=doc("io.k8s.api.apps.v1.DeploymentStatus",
                                                            "updatedReplicas")),
                       Column("Available", description=doc("io.k8s.api.apps.v1.DeploymentStatus",
                                                           "availableReplicas")),
                       age_column(),
                       Column("Containers", priority=1, description="Names of each container in the template."),
                       Column("Images", priority=1, description="Images referenced by each container in the "
                                                                "template."),
                       Column("Selector", priority=1, description=doc("io.k8s.api.apps.v1.DeploymentSpec",
                                                                      "selector"))),
        "PodDisruptionBudget": (name_column(),
                                Column("Min Available", description="The minimum number of pods that must be "
                                                                    "available."),
                                Column("Max Unavailable", description="The maximum number of pods that may be "
                                                                      "unavailable."),
                                Column("Allowed Disruptions", "integer", description="Calculated number of pods "
                                                                                     "that may be disrupted at "
                                                                                     "this time."),
                                age_column()),
        "RoleBinding": _binding_columns("roleBinding", binding),
        "ClusterRoleBinding": _binding_columns("clusterRoleBinding", "io.k8s.api.rbac.v1.ClusterRoleBinding"),
        "PriorityClass": (name_column(),
                          Column("Value", "integer", description=doc("io.k8s.api.scheduling.v1.PriorityClass",
                                                                     "value")),
                          Column("Global-Default", "boolean",
                                 description=doc("io.k8s.api.scheduling.v1.PriorityClass", "globalDefault")),
                          age_column(),
                          Column("PreemptionPolicy", description=doc("io.k8s.api.scheduling.v1.PriorityClass",
                                                                     "preemptionPolicy"))),
    }
    return columns[kind]


def _binding_columns(label: str, definition: str) -> tuple[Column, ...]:
    return (name_column(), Column("Role", description=doc(definition, "roleRef")), age_column(),
            Column("Users", priority=1, description=f"Users in the {label}"),
            Column("Groups", priority=1, description=f"Groups in the {label}"),
            Column("ServiceAccounts", priority=1, description=f"ServiceAccounts in the {label}"))


_PRINTERS: dict[tuple[str, str], tuple[Callable[[], tuple[Column, ...]], PrintFn]] = {
    ("", "Pod"): (_pod_columns, print_pod),
    ("", "Service"): (_service_columns, print_service),
    ("", "Namespace"): (lambda: _columns("Namespace"), print_namespace),
    ("", "ConfigMap"): (lambda: _columns("ConfigMap"), print_configmap),
    ("", "Secret"): (lambda: _columns("Secret"), print_secret),
    ("", "ServiceAccount"): (lambda: _columns("ServiceAccount"), print_service_account),
    ("", "Event"): (lambda: _columns("Event"), print_event),
    ("", "Node"): (lambda: _columns("Node"), print_node),
    ("coordination.k8s.io", "Lease"): (lambda: _columns("Lease"), print_lease),
    ("apps", "Deployment"): (lambda: _columns("Deployment"), print_deployment),
    ("policy", "PodDisruptionBudget"): (lambda: _columns("PodDisruptionBudget"), print_pdb),
    ("rbac.authorization.k8s.io", "RoleBinding"): (lambda: _columns("RoleBinding"), print_role_binding),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (lambda: _columns("ClusterRoleBinding"),
                                                          print_role_binding),
    ("scheduling.k8s.io", "PriorityClass"): (lambda: _columns("PriorityClass"), print_priority_class),
}


def printer_for(group: str, kind: str) -> Printer | None:
    """kube's printer for a built-in kind; None for kinds it prints with the default Name / Created At."""
    found = _PRINTERS.get((group, kind))
    if found is None:
        return None
    columns, fn = found
    return Printer(columns(), fn)
