"""kube-apiserver's printers for the workload, storage, networking and control-plane kinds (``printers.py`` has the
core ones): ``pkg/printers/internalversion`` of Kubernetes 1.32 (and kube-aggregator's for APIServices), with
``Wide`` always on, as the server runs them. Each printer is a row function plus its columns, in one table
(:data:`PRINTERS`), the columns built on first use (their descriptions come from Kubernetes' schemas).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from mxjob_controller.kube.schema.rules.workloads import APPS as _APPS
from mxjob_controller.kube.timefmt import parse_time
from mxjob_controller.local.apiserver.encoding.printers import (
    _CORE,
    Cells,
    Column,
    Conditions,
    Printer,
    PrintFn,
    _containers_and_images,
    _get,
    _int,
    _list,
    _map,
    _name,
    _str,
    age,
    age_column,
    doc,
    format_label_selector,
    format_labels,
    human_duration,
    name_column,
    since,
)

_BATCH = "io.k8s.api.batch.v1."
_CONTAINERS = "Names of each container in the template."
_IMAGES = "Images referenced by each container in the template."


def _template_columns(selector_doc: str | None) -> tuple[Column, ...]:
    columns = (Column("Containers", priority=1, description=_CONTAINERS),
               Column("Images", priority=1, description=_IMAGES))
    return columns + ((Column("Selector", priority=1, description=selector_doc),) if selector_doc is not None else ())


def _template_cells(template: Any) -> list[str]:
    return list(_containers_and_images(_get(template, "spec", "containers")))


# --- workloads -------------------------------------------------------------------------------------------

def print_replicas(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    """ReplicaSets and ReplicationControllers: desired, current, ready."""
    spec, status = _map(obj.get("spec")), _map(obj.get("status"))
    selector = spec.get("selector")
    text = format_labels(selector) if obj.get("kind") == "ReplicationController" else format_label_selector(selector)
    return [_name(obj), _int(spec.get("replicas")), _int(status.get("replicas")), _int(status.get("readyReplicas")),
            age(obj, now), *_template_cells(spec.get("template")), text], None


def print_daemon_set(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec, status = _map(obj.get("spec")), _map(obj.get("status"))
    return [_name(obj), _int(status.get("desiredNumberScheduled")), _int(status.get("currentNumberScheduled")),
            _int(status.get("numberReady")), _int(status.get("updatedNumberScheduled")),
            _int(status.get("numberAvailable")), format_labels(_get(spec, "template", "spec", "nodeSelector")),
            age(obj, now), *_template_cells(spec.get("template")), format_label_selector(spec.get("selector"))], None


def print_stateful_set(obj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec, status = _map(obj.get("spec")), _map(obj.get("status"))
    return [_name(obj), f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas'))}", age(obj, now),
            *_template_cells(spec.get("template"))], None


def _has_condition(conditions: Any, kind: str) -> bool:
    return any(isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True"
               for c in _list(conditions))


def job_status(job: Mapping[str, Any]) -> str:
    """``printJob``'s STATUS: the first that holds of Complete, Failed, Terminating, Suspended, FailureTarget,
    SuccessCriteriaMet; else Running."""
    conditions = _get(job, "status", "conditions")
    if _has_condition(conditions, "Complete"):
        return "Complete"
    if _has_condition(conditions, "Failed"):
        return "Failed"
    if _get(job, "metadata", "deletionTimestamp"):
        return "Terminating"
    for kind in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if _has_condition(conditions, kind):
            return kind
    return "Running"


def print_job(job: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec, status = _map(job.get("spec")), _map(job.get("status"))
    succeeded = _int(status.get("succeeded"))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{_int(spec.get('completions'))}"
    elif spec.get("parallelism") is None:
        completions = f"{succeeded}/1 of 1"
    elif _int(spec.get("parallelism")) > 1:
        completions = f"{succeeded}/1 of {_int(spec.get('parallelism'))}"
    else:
        completions = f"{succeeded}/1"
    started, completed = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = "" if started is None else human_duration((completed if completed is not None else now) - started)
    return [_name(job), job_status(job), completions, duration, age(job, now), *_template_cells(spec.get("template")),
            format_label_selector(spec.get("selector"))], None


def print_cron_job(cj: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec, status = _map(cj.get("spec")), _map(cj.get("status"))
    job_spec = _map(_get(spec, "jobTemplate", "spec"))
    last = status.get("lastScheduleTime")
    return [_name(cj), _str(spec.get("schedule")), _str(spec.get("timeZone")) or "<none>", spec.get("suspend") is True,
            len(_list(status.get("active"))), since(last, now) if last else "<none>", age(cj, now),
            *_template_cells(job_spec.get("template")), format_label_selector(job_spec.get("selector"))], None


def print_controller_revision(rev: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    owner = next((r for r in _list(_get(rev, "metadata", "ownerReferences"))
                  if isinstance(r, Mapping) and r.get("controller") is True), None)
    controller = "<none>"
    if owner is not None:
        group = _str(owner.get("apiVersion")).rpartition("/")[0]
        kind = _str(owner.get("kind")).lower() + (f".{group}" if group else "")
        controller = f"{kind}/{_str(owner.get('name'))}"
    return [_name(rev), controller, _int(rev.get("revision")), age(rev, now)], None


def print_pod_template(pt: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    template = _map(pt.get("template"))
    return [_name(pt), *_template_cells(template), format_labels(_get(template, "metadata", "labels"))], None


def _hpa_targets(hpa: Mapping[str, Any]) -> str:
    """The TARGETS cell for the metrics kubectl users set most (resource utilization and values); others
    as ``<unknown>`` against their target, as kube prints a metric with no current value."""
    specs = _list(_get(hpa, "spec", "metrics"))
    if not specs:
        return "<none>"
    current = _list(_get(hpa, "status", "currentMetrics"))
    parts = []
    for i, raw in enumerate(specs):
        metric = _map(raw)
        now_metric = _map(current[i]) if i < len(current) else {}
        if metric.get("type") == "Resource":
            resource = _map(metric.get("resource"))
            target = _map(resource.get("target"))
            now_value = _map(_get(now_metric, "resource", "current"))
            name = _str(resource.get("name"))
            if target.get("averageUtilization") is not None:
                shown = f"{now_value['averageUtilization']}%" if now_value.get("averageUtilization") is not None \
                    else "<unknown>"
                parts.append(f"{name}: {shown}/{target['averageUtilization']}%")
                continue
            value = target.get("averageValue") or target.get("value")
            shown = str(now_value.get("averageValue") or now_value.get("value") or "<unknown>")
            parts.append(f"{name}: {shown}/{value}")
            continue
        parts.append("<unknown>/<unknown>")
    if len(parts) > 3:   # kube shows at most three and counts the rest
        return ", ".join(parts[:3]) + f" + {len(parts) - 3} more..."
    return ", ".join(parts)


def print_hpa(hpa: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec, status = _map(hpa.get("spec")), _map(hpa.get("status"))
    ref = _map(spec.get("scaleTargetRef"))
    min_pods = "<unset>" if spec.get("minReplicas") is None else str(spec["minReplicas"])
    return [_name(hpa), f"{_str(ref.get('kind'))}/{_str(ref.get('name'))}", _hpa_targets(hpa), min_pods,
            _int(spec.get("maxReplicas")), _int(status.get("currentReplicas")), age(hpa, now)], None


# --- core storage and networking -------------------------------------------------------------------------

def _endpoint_list(addresses: list[str]) -> str:
    """``formatEndpoints``: at most three, then ``+ N more...``; ``<none>`` for none."""
    if not addresses:
        return "<none>"
    shown = ",".join(addresses[:3])
    return shown + (f" + {len(addresses) - 3} more..." if len(addresses) > 3 else "")


def print_endpoints(ep: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    found: list[str] = []
    for subset in _list(ep.get("subsets")):
        ports = [_int(p.get("port")) for p in _list(_map(subset).get("ports")) if isinstance(p, Mapping)]
        for address in _list(_map(subset).get("addresses")):
            ip = _str(_map(address).get("ip"))
            found.extend(f"{ip}:{port}" for port in ports) if ports else found.append(ip)
    return [_name(ep), _endpoint_list(found), age(ep, now)], None


def print_endpoint_slice(eps: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    ports = [str(_int(p.get("port"))) for p in _list(eps.get("ports")) if isinstance(p, Mapping)]
    addresses = [a for e in _list(eps.get("endpoints")) for a in _list(_map(e).get("addresses")) if isinstance(a, str)]
    port_text = "<unset>" if not ports else ",".join(ports[:3]) + (
        f" + {len(ports) - 3} more..." if len(ports) > 3 else "")
    return [_name(eps), _str(eps.get("addressType")), port_text, _endpoint_list(addresses), age(eps, now)], None


def _access_modes(modes: Any) -> str:
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX", "ReadWriteOncePod": "RWOP"}
    return ",".join(short.get(m, m) for m in _list(modes) if isinstance(m, str))


def print_pvc(pvc: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec, status = _map(pvc.get("spec")), _map(pvc.get("status"))
    phase = "Terminating" if _get(pvc, "metadata", "deletionTimestamp") else _str(status.get("phase"))
    bound = bool(_str(spec.get("volumeName")))
    capacity = str(_map(status.get("capacity")).get("storage", "")) if bound else ""
    modes = _access_modes(status.get("accessModes")) if bound else ""
    return [_name(pvc), phase, _str(spec.get("volumeName")), capacity, modes, _storage_class(pvc),
            _str(spec.get("volumeAttributesClassName")) or "<unset>", age(pvc, now),
            _str(spec.get("volumeMode")) or "<unset>"], None


def _storage_class(obj: Mapping[str, Any]) -> str:
    name = _str(_get(obj, "spec", "storageClassName")) or _str(
        _get(obj, "metadata", "annotations", "volume.beta.kubernetes.io/storage-class"))
    return name


def print_pv(pv: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec, status = _map(pv.get("spec")), _map(pv.get("status"))
    claim = _map(spec.get("claimRef"))
    claim_text = f"{_str(claim.get('namespace'))}/{_str(claim.get('name'))}" if claim else ""
    phase = "Terminating" if _get(pv, "metadata", "deletionTimestamp") else _str(status.get("phase"))
    return [_name(pv), str(_map(spec.get("capacity")).get("storage", "")), _access_modes(spec.get("accessModes")),
            _str(spec.get("persistentVolumeReclaimPolicy")), phase, claim_text, _storage_class(pv),
            _str(spec.get("volumeAttributesClassName")) or "<unset>", _str(status.get("reason")), age(pv, now),
            _str(spec.get("volumeMode")) or "<unset>"], None


def print_ingress(ing: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec = _map(ing.get("spec"))
    hosts = [_str(_map(r).get("host")) for r in _list(spec.get("rules"))]
    hosts_text = ",".join(h or "*" for h in hosts[:4]) + (f" + {len(hosts) - 4} more..." if len(hosts) > 4 else "")
    ingress = [_map(i) for i in _list(_get(ing, "status", "loadBalancer", "ingress"))]
    address = ",".join(_str(i.get("ip")) or _str(i.get("hostname")) for i in ingress)
    ports = "80, 443" if _list(spec.get("tls")) else "80"
    klass = _str(spec.get("ingressClassName")) or _str(
        _get(ing, "metadata", "annotations", "kubernetes.io/ingress.class")) or "<none>"
    return [_name(ing), klass, hosts_text or "*", address, ports, age(ing, now)], None


def print_ingress_class(ic: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    params = _map(_get(ic, "spec", "parameters"))
    text = "<none>"
    if params:
        group = _str(params.get("apiGroup"))
        text = f"{_str(params.get('kind'))}.{group}/{_str(params.get('name'))}" if group else \
            f"{_str(params.get('kind'))}/{_str(params.get('name'))}"
    return [_name(ic), _str(_get(ic, "spec", "controller")), text, age(ic, now)], None


def print_network_policy(np: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    selector = _get(np, "spec", "podSelector")
    text = format_label_selector(selector) or "<none>"
    return [_name(np), text, age(np, now)], None


# --- storage.k8s.io ------------------------------------------------------------------------------------

def print_storage_class(sc: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    annotations = _map(_get(sc, "metadata", "annotations"))
    default = any(annotations.get(k) == "true" for k in ("storageclass.kubernetes.io/is-default-class",
                                                         "storageclass.beta.kubernetes.io/is-default-class"))
    name = _name(sc) + (" (default)" if default else "")
    return [name, _str(sc.get("provisioner")), _str(sc.get("reclaimPolicy")) or "Delete",
            _str(sc.get("volumeBindingMode")) or "Immediate", sc.get("allowVolumeExpansion") is True,
            age(sc, now)], None


def print_volume_attachment(va: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec = _map(va.get("spec"))
    return [_name(va), _str(spec.get("attacher")), _str(_get(spec, "source", "persistentVolumeName")),
            _str(spec.get("nodeName")), _get(va, "status", "attached") is True, age(va, now)], None


def print_csi_driver(d: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec = _map(d.get("spec"))
    audiences = [_str(_map(t).get("audience")) or "<unset>" for t in _list(spec.get("tokenRequests"))]
    modes = ",".join(m for m in _list(spec.get("volumeLifecycleModes")) if isinstance(m, str)) or "<none>"
    return [_name(d), spec.get("attachRequired") is not False, spec.get("podInfoOnMount") is True,
            spec.get("storageCapacity") is True, ",".join(audiences) or "<unset>",
            spec.get("requiresRepublish") is True, modes, age(d, now)], None


def print_csi_node(n: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    return [_name(n), len(_list(_get(n, "spec", "drivers"))), age(n, now)], None


def print_csi_storage_capacity(c: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    capacity = c.get("capacity")
    return [_name(c), _str(c.get("storageClassName")), str(capacity) if capacity is not None else "<unset>"], None


# --- control plane -------------------------------------------------------------------------------------

def print_flow_schema(fs: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec = _map(fs.get("spec"))
    method = _str(_get(spec, "distinguisherMethod", "type")) or "<none>"
    dangling = next((c for c in _list(_get(fs, "status", "conditions"))
                     if isinstance(c, Mapping) and c.get("type") == "Dangling"), None)
    missing = _str(dangling.get("status")) if dangling else "?"
    return [_name(fs), _str(_get(spec, "priorityLevelConfiguration", "name")), _int(spec.get("matchingPrecedence")),
            method, age(fs, now), missing], None


def print_priority_level(pl: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec = _map(pl.get("spec"))
    shares, queues, hand, length = "0", "<none>", "<none>", "<none>"
    limited = _map(spec.get("limited"))
    if limited:
        shares = str(_int(limited.get("nominalConcurrencyShares")))
        queuing = _map(_get(limited, "limitResponse", "queuing"))
        if queuing:
            queues, hand, length = (str(_int(queuing.get(k))) for k in ("queues", "handSize", "queueLengthLimit"))
    return [_name(pl), _str(spec.get("type")), shares, queues, hand, length, age(pl, now)], None


def print_csr(csr: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    spec = _map(csr.get("spec"))
    seconds = spec.get("expirationSeconds")
    requested = human_duration(seconds) if isinstance(seconds, int) else "<none>"
    states = [_str(_map(c).get("type")) for c in _list(_get(csr, "status", "conditions"))]
    if _get(csr, "status", "certificate"):
        states.append("Issued")
    return [_name(csr), age(csr, now), _str(spec.get("signerName")), _str(spec.get("username")), requested,
            ",".join(states) or "Pending"], None


def print_api_service(svc: Mapping[str, Any], now: float) -> tuple[Cells, Conditions]:
    service = _map(_get(svc, "spec", "service"))
    target = f"{_str(service.get('namespace'))}/{_str(service.get('name'))}" if service else "Local"
    available = next((c for c in _list(_get(svc, "status", "conditions"))
                      if isinstance(c, Mapping) and c.get("type") == "Available"), None)
    state = "Unknown"
    if available is not None:
        state = "True" if available.get("status") == "True" else \
            f"{_str(available.get('status'))} ({_str(available.get('reason'))})"
    return [_name(svc), target, state, age(svc, now)], None


# --- the columns ---------------------------------------------------------------------------------------

def _c(name: str, description: str = "", type_: str = "string", priority: int = 0, fmt: str = "") -> Column:
    return Column(name, type_, fmt, description, priority)


@functools.cache
def _columns(kind: str) -> tuple[Column, ...]:
    rs_spec, rc_spec = _APPS + "ReplicaSetSpec", _CORE + "ReplicationControllerSpec"
    replicas = {
        "ReplicaSet": (rs_spec, _APPS + "ReplicaSetStatus"),
        "ReplicationController": (rc_spec, _CORE + "ReplicationControllerStatus"),
    }
    table: dict[str, Callable[[], tuple[Column, ...]]] = {
        **{k: (lambda spec=spec, status=status: (
            name_column(), _c("Desired", doc(spec, "replicas"), "integer"),
            _c("Current", doc(status, "replicas"), "integer"), _c("Ready", doc(status, "readyReplicas"), "integer"),
            age_column(), *_template_columns(doc(spec, "selector")))) for k, (spec, status) in replicas.items()},
        "DaemonSet": lambda: (
            name_column(), _c("Desired", doc(_APPS + "DaemonSetStatus", "desiredNumberScheduled"), "integer"),
            _c("Current", doc(_APPS + "DaemonSetStatus", "currentNumberScheduled"), "integer"),
            _c("Ready", doc(_APPS + "DaemonSetStatus", "numberReady"), "integer"),
            _c("Up-to-date", doc(_APPS + "DaemonSetStatus", "updatedNumberScheduled"), "integer"),
            _c("Available", doc(_APPS + "DaemonSetStatus", "numberAvailable"), "integer"),
            _c("Node Selector", doc(_CORE + "PodSpec", "nodeSelector")), age_column(),
            *_template_columns(doc(_APPS + "DaemonSetSpec", "selector"))),
        "StatefulSet": lambda: (name_column(), _c("Ready", "Number of the pod with ready state"), age_column(),
                                *_template_columns(None)),
        "Job": lambda: (name_column(), _c("Status", "Status of the job."),
                        _c("Completions", "The desired number of successfully finished pods the job should be run "
                                          "with."),
                        _c("Duration", "Time required to complete the job."), age_column(),
                        *_template_columns(doc(_BATCH + "JobSpec", "selector"))),
        "CronJob": lambda: (name_column(), _c("Schedule", doc(_BATCH + "CronJobSpec", "schedule")),
                            _c("Timezone", doc(_BATCH + "CronJobSpec", "timeZone")),
                            _c("Suspend", doc(_BATCH + "CronJobSpec", "suspend"), "boolean"),
                            _c("Active", doc(_BATCH + "CronJobStatus", "active"), "integer"),
                            _c("Last Schedule", doc(_BATCH + "CronJobStatus", "lastScheduleTime")), age_column(),
                            *_template_columns(doc(_BATCH + "JobSpec", "selector"))),
        "ControllerRevision": lambda: (name_column(), _c("Controller", "Controller of the object"),
                                       _c("Revision", doc(_APPS + "ControllerRevision", "revision"), "integer"),
                                       age_column()),
        "PodTemplate": lambda: (name_column(), _c("Containers", _CONTAINERS), _c("Images", _IMAGES),
                                _c("Pod Labels", "The labels for the pod template.")),
        "HorizontalPodAutoscaler": lambda: (
            name_column(), _c("Reference", doc(_HPA_SPEC, "scaleTargetRef")), _c("Targets", doc(_HPA_SPEC, "metrics")),
            _c("MinPods", doc(_HPA_SPEC, "minReplicas")), _c("MaxPods", doc(_HPA_SPEC, "maxReplicas"), "integer"),
            _c("Replicas", doc("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "currentReplicas"),
               "integer"), age_column()),
        "Endpoints": lambda: (name_column(), _c("Endpoints", doc(_CORE + "Endpoints", "subsets")), age_column()),
        "EndpointSlice": lambda: (
            name_column(), _c("AddressType", doc(_EPS, "addressType")), _c("Ports", doc(_EPS, "ports")),
            _c("Endpoints", doc(_EPS, "endpoints")), age_column()),
        "PersistentVolumeClaim": lambda: (
            name_column(), _c("Status", doc(_CORE + "PersistentVolumeClaimStatus", "phase")),
            _c("Volume", doc(_CORE + "PersistentVolumeClaimSpec", "volumeName")),
            _c("Capacity", doc(_CORE + "PersistentVolumeClaimStatus", "capacity")),
            _c("Access Modes", doc(_CORE + "PersistentVolumeClaimStatus", "accessModes")),
            _c("StorageClass", "StorageClass of the pvc"),
            _c("VolumeAttributesClass", "VolumeAttributesClass of the pvc"), age_column(),
            _c("VolumeMode", doc(_CORE + "PersistentVolumeClaimSpec", "volumeMode"), priority=1)),
        "PersistentVolume": lambda: (
            name_column(), _c("Capacity", doc(_CORE + "PersistentVolumeSpec", "capacity")),
            _c("Access Modes", doc(_CORE + "PersistentVolumeSpec", "accessModes")),
            _c("Reclaim Policy", doc(_CORE + "PersistentVolumeSpec", "persistentVolumeReclaimPolicy")),
            _c("Status", doc(_CORE + "PersistentVolumeStatus", "phase")),
            _c("Claim", doc(_CORE + "PersistentVolumeSpec", "claimRef")), _c("StorageClass", "StorageClass of the pv"),
            _c("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
            _c("Reason", doc(_CORE + "PersistentVolumeStatus", "reason")), age_column(),
            _c("VolumeMode", doc(_CORE + "PersistentVolumeSpec", "volumeMode"), priority=1)),
        "Ingress": lambda: (name_column(), _c("Class", "The name of the IngressClass resource that should be used"),
                            _c("Hosts", "Hosts that incoming requests are matched against before the ingress rule"),
                            _c("Address", "Address is a list containing ingress points for the load-balancer"),
                            _c("Ports", "Ports of TLS configurations that open"), age_column()),
        "IngressClass": lambda: (name_column(), _c("Controller", "Controller that is responsible for handling this "
                                                                 "class"),
                                 _c("Parameters", "A reference to a resource with additional parameters"),
                                 age_column()),
        "NetworkPolicy": lambda: (name_column(), _c("Pod-Selector", doc(_NET + "NetworkPolicySpec", "podSelector")),
                                  age_column()),
        "StorageClass": lambda: (name_column(), _c("Provisioner", doc(_ST + "StorageClass", "provisioner")),
                                 _c("ReclaimPolicy", doc(_ST + "StorageClass", "reclaimPolicy")),
                                 _c("VolumeBindingMode", doc(_ST + "StorageClass", "volumeBindingMode")),
                                 _c("AllowVolumeExpansion", doc(_ST + "StorageClass", "allowVolumeExpansion")),
                                 age_column()),
        "VolumeAttachment": lambda: (
            name_column(), _c("Attacher", doc(_ST + "VolumeAttachmentSpec", "attacher")),
            _c("PV", doc(_ST + "VolumeAttachmentSource", "persistentVolumeName")),
            _c("Node", doc(_ST + "VolumeAttachmentSpec", "nodeName")),
            _c("Attached", doc(_ST + "VolumeAttachmentStatus", "attached")), age_column()),
        "CSIDriver": lambda: (
            name_column(), _c("AttachRequired", doc(_ST + "CSIDriverSpec", "attachRequired"), "boolean"),
            _c("PodInfoOnMount", doc(_ST + "CSIDriverSpec", "podInfoOnMount"), "boolean"),
            _c("StorageCapacity", doc(_ST + "CSIDriverSpec", "storageCapacity"), "boolean"),
            _c("TokenRequests", doc(_ST + "CSIDriverSpec", "tokenRequests")),
            _c("RequiresRepublish", doc(_ST + "CSIDriverSpec", "requiresRepublish"), "boolean"),
            _c("Modes", doc(_ST + "CSIDriverSpec", "volumeLifecycleModes")), age_column()),
        "CSINode": lambda: (name_column(), _c("Drivers", "Drivers indicates the number of CSI drivers registered on "
                                                         "the node", "integer"), age_column()),
        "CSIStorageCapacity": lambda: (name_column(),
                                       _c("StorageClassName", doc(_ST + "CSIStorageCapacity", "storageClassName")),
                                       _c("Capacity", doc(_ST + "CSIStorageCapacity", "capacity"))),
        "FlowSchema": lambda: (
            name_column(), _c("PriorityLevel", doc(_FC + "PriorityLevelConfigurationReference", "name")),
            _c("MatchingPrecedence", doc(_FC + "FlowSchemaSpec", "matchingPrecedence"), "string"),
            _c("DistinguisherMethod", doc(_FC + "FlowSchemaSpec", "distinguisherMethod")), age_column(),
            _c("MissingPL", "references a broken or non-existent PriorityLevelConfiguration")),
        "PriorityLevelConfiguration": lambda: (
            name_column(), _c("Type", doc(_FC + "PriorityLevelConfigurationSpec", "type")),
            _c("NominalConcurrencyShares", doc(_FC + "LimitedPriorityLevelConfiguration", "nominalConcurrencyShares")),
            _c("Queues", doc(_FC + "QueuingConfiguration", "queues")),
            _c("HandSize", doc(_FC + "QueuingConfiguration", "handSize")),
            _c("QueueLengthLimit", doc(_FC + "QueuingConfiguration", "queueLengthLimit")), age_column()),
        "CertificateSigningRequest": lambda: (
            name_column(), age_column(), _c("SignerName", doc(_CERT + "CertificateSigningRequestSpec", "signerName")),
            _c("Requestor", "Name of the user which submitted this certificate signing request"),
            _c("RequestedDuration", doc(_CERT + "CertificateSigningRequestSpec", "expirationSeconds")),
            _c("Condition", "Condition of the certificate signing request")),
        "APIService": lambda: (name_column(), _c("Service", "The reference to the service that hosts this API "
                                                            "endpoint."),
                               _c("Available", "Whether this service is available."), age_column()),
    }
    return table[kind]()


_HPA_SPEC = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"
_EPS = "io.k8s.api.discovery.v1.EndpointSlice"
_NET = "io.k8s.api.networking.v1."
_ST = "io.k8s.api.storage.v1."
_FC = "io.k8s.api.flowcontrol.v1."
_CERT = "io.k8s.api.certificates.v1."

#: (group, kind) → the row function; the columns are :func:`_columns` of the kind.
PRINTERS: dict[tuple[str, str], PrintFn] = {
    ("", "ReplicationController"): print_replicas, ("apps", "ReplicaSet"): print_replicas,
    ("apps", "DaemonSet"): print_daemon_set, ("apps", "StatefulSet"): print_stateful_set,
    ("apps", "ControllerRevision"): print_controller_revision, ("batch", "Job"): print_job,
    ("batch", "CronJob"): print_cron_job, ("", "PodTemplate"): print_pod_template,
    ("autoscaling", "HorizontalPodAutoscaler"): print_hpa, ("", "Endpoints"): print_endpoints,
    ("discovery.k8s.io", "EndpointSlice"): print_endpoint_slice, ("", "PersistentVolumeClaim"): print_pvc,
    ("", "PersistentVolume"): print_pv, ("networking.k8s.io", "Ingress"): print_ingress,
    ("networking.k8s.io", "IngressClass"): print_ingress_class,
    ("networking.k8s.io", "NetworkPolicy"): print_network_policy,
    ("storage.k8s.io", "StorageClass"): print_storage_class,
    ("storage.k8s.io", "VolumeAttachment"): print_volume_attachment,
    ("storage.k8s.io", "CSIDriver"): print_csi_driver, ("storage.k8s.io", "CSINode"): print_csi_node,
    ("storage.k8s.io", "CSIStorageCapacity"): print_csi_storage_capacity,
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"): print_flow_schema,
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"): print_priority_level,
    ("certificates.k8s.io", "CertificateSigningRequest"): print_csr,
    ("apiregistration.k8s.io", "APIService"): print_api_service,
}


def printer_for(group: str, kind: str) -> Printer | None:
    fn = PRINTERS.get((group, kind))
    return Printer(_columns(kind), fn) if fn is not None else None
