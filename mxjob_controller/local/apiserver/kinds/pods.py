"""Pods: kube's defaulting (SetDefaults_Pod and the default admission plugins), initial status, and binding to a
node (the ``pods/binding`` subresource a scheduler writes)."""

from __future__ import annotations

from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kube.timefmt import now_rfc3339
from mxjob_controller.local.apiserver import errors
from mxjob_controller.local.apiserver.builtin import PRIORITYCLASSES
from mxjob_controller.local.apiserver.errors import Cause, Resource
from mxjob_controller.local.apiserver.storage.store import Conflict, Missing, Store
from mxjob_controller.local.apiserver.strategy import Strategy, WriteContext

_DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
     "tolerationSeconds": 300},
)

_BIND_ATTEMPTS = 16

# Fields of a running pod's spec that an update may change (validation.ValidatePodUpdate).
_MUTABLE_SPEC = ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds", "schedulingGates")


#: The PriorityClasses every cluster has (kube's scheduling API defines them; not stored as objects here).
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
_PODS = Resource("", "pods", "Pod")


class PodStrategy(Strategy):
    status_write_shares = True   # the kubelet's status merge patches leave the spec as stored

    def prepare_create(self, obj: dict, ctx: WriteContext) -> None:
        super().prepare_create(obj, ctx)
        spec = obj.get("spec") or {}
        if isinstance(spec, dict):
            resolve_priority(spec, (obj.get("metadata") or {}).get("name") or "", ctx)
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}
        if isinstance(spec, dict) and spec.get("schedulingGates"):   # kube's applySchedulingGatedCondition
            obj["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                                            "lastTransitionTime": now_rfc3339(), "reason": "SchedulingGated",
                                            "message": "Scheduling is blocked due to non-empty scheduling gates"}]

    def default(self, obj: dict, ctx: WriteContext) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict):
            default_pod_spec(spec, pod=True)

    def admission_defaults(self, obj: dict, ctx: WriteContext) -> None:
        """The ServiceAccount, Priority and DefaultTolerationSeconds admission plugins' defaults."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        sa = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        spec["serviceAccountName"] = spec["serviceAccount"] = sa
        if not spec.get("priorityClassName"):   # else resolve_priority() sets it, at create
            spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        tolerations = spec.setdefault("tolerations", [])
        if isinstance(tolerations, list):
            have = {(t.get("key"), t.get("effect")) for t in tolerations if isinstance(t, dict)}
            for t in _DEFAULT_TOLERATIONS:
                if (t["key"], t["effect"]) not in have and (None, "NoExecute") not in have:
                    tolerations.append(dict(t))

    def validate(self, obj: dict, old: dict | None, ctx: WriteContext) -> list[Cause]:
        causes = super().validate(obj, old, ctx)
        if old is not None and ctx.subresource is None:
            new_spec, old_spec = dict(obj.get("spec") or {}), dict(old.get("spec") or {})
            for s in (new_spec, old_spec):
                for k in _MUTABLE_SPEC:
                    s.pop(k, None)
                s["containers"] = [{k: v for k, v in c.items() if k != "image"}
                                   for c in s.get("containers") or [] if isinstance(c, dict)]
            if new_spec != old_spec:
                causes.append(Cause("spec", "FieldValueForbidden",
                                    "Forbidden: pod updates may not change fields other than "
                                    "`spec.containers[*].image`,`spec.initContainers[*].image`,"
                                    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                                    "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it "
                                    "to be set to 1 if it was previously negative)"))
        return causes

    supports_graceful_delete = True

    def graceful_delete_period(self, obj: dict, requested: int | None) -> int | None:
        """The request's grace period, else the pod's own; 0 for unbound or finished pods (they go at once)."""
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        period = requested if requested is not None else spec.get("terminationGracePeriodSeconds") or 0
        if not spec.get("nodeName") or status.get("phase") in ("Succeeded", "Failed"):
            period = 0
        return 1 if period < 0 else period


def resolve_priority(spec: dict, name: str, ctx: WriteContext) -> None:
    """kube's Priority admission plugin at create: ``spec.priority`` (and ``preemptionPolicy``, when unset) from the
    PriorityClass ``priorityClassName`` names; 403 when there is no such class, or the pod gave another priority.
    Schedulers order pods by this value. (A class with ``globalDefault`` is not looked for: pods without a class get
    priority 0.)"""
    class_name = spec.get("priorityClassName")
    if not class_name or not isinstance(class_name, str):
        return
    if class_name in SYSTEM_PRIORITY_CLASSES:
        value, policy = SYSTEM_PRIORITY_CLASSES[class_name], None
    else:
        found = ctx.lookup(PRIORITYCLASSES.storage_key, "", class_name) if ctx.lookup is not None else None
        if found is None:
            raise errors.forbidden(_PODS, name, f"no PriorityClass with name {class_name} was found")
        value, policy = found.get("value"), found.get("preemptionPolicy")
        if not isinstance(value, int) or isinstance(value, bool):
            value = 0
    given = spec.get("priority")
    if given is not None and given != value:
        raise errors.forbidden(_PODS, name, f"the integer value of priority ({given}) must not be provided in pod "
                                            f"spec; priority admission controller computed {value} from the given "
                                            "PriorityClass name")
    spec["priority"] = value
    if policy and "preemptionPolicy" not in spec:
        spec["preemptionPolicy"] = policy


def default_pod_spec(spec: dict, *, pod: bool) -> None:
    """kube's SetDefaults_PodSpec and those of what it holds (containers, ports, probes, volumes), for a pod or a
    pod template; ``pod``: also SetDefaults_Pod's (enableServiceLinks, requests from limits), which templates do
    not get."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    if pod:
        spec.setdefault("enableServiceLinks", True)
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _default_container(c, pod)
    for v in spec.get("volumes") or []:
        if not isinstance(v, dict):
            continue
        for src in ("secret", "configMap"):
            if isinstance(v.get(src), dict):
                v[src].setdefault("defaultMode", 420)


def _default_container(c: dict, pod: bool) -> None:
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    image = c.get("image") or ""
    if "imagePullPolicy" not in c:
        tag = image.rsplit("/", 1)[-1]
        untagged = ":" not in tag and "@" not in image
        c["imagePullPolicy"] = "Always" if untagged or tag.endswith(":latest") else "IfNotPresent"
    resources = c.setdefault("resources", {})
    if pod and isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
        requests = resources.setdefault("requests", {})
        if isinstance(requests, dict):
            for k, v in resources["limits"].items():
                requests.setdefault(k, v)
    for p in c.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
    for e in c.get("env") or []:
        ref = (e.get("valueFrom") or {}).get("fieldRef") if isinstance(e, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        p = c.get(probe)
        if isinstance(p, dict):
            p.setdefault("timeoutSeconds", 1)
            p.setdefault("periodSeconds", 10)
            p.setdefault("successThreshold", 1)
            p.setdefault("failureThreshold", 3)
            if isinstance(p.get("httpGet"), dict):
                p["httpGet"].setdefault("scheme", "HTTP")
                p["httpGet"].setdefault("path", "/")


def qos_class(spec: dict) -> str:
    """Guaranteed, Burstable or BestEffort, from the containers' requests and limits."""
    containers = [c for k in ("containers", "initContainers") for c in spec.get(k) or [] if isinstance(c, dict)]
    any_set, guaranteed = False, bool(containers)
    for c in containers:
        res = c.get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        if requests or limits:
            any_set = True
        for r in ("cpu", "memory"):
            if r not in limits or requests.get(r, limits[r]) != limits[r]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


# --- pods/binding: how a scheduler assigns a pod to a node -------------------------------------------------

BINDING_RESOURCE = Resource("", "pods/binding", "Binding")


def bind(store: Store, pods_key: str, namespace: str, name: str, body: dict) -> dict:
    """Assign pod ``namespace/name`` to the node ``body`` (a ``v1`` Binding) targets, as kube's binding storage
    does: ``spec.nodeName`` set, the binding's annotations copied, condition ``PodScheduled`` True. 409 when the
    pod is already assigned, is being deleted or still has ``schedulingGates``; 404 when it does not
    exist. Returns the Success Status (201)."""
    target = body.get("target") if isinstance(body.get("target"), dict) else {}
    node = target.get("name") or ""
    if target.get("kind") not in (None, "", "Node"):
        raise errors.invalid(BINDING_RESOURCE, name, [Cause("target.kind", "FieldValueNotSupported",
                                                            f'Unsupported value: "{target.get("kind")}": '
                                                            'supported values: "Node"')])
    if not node:
        raise errors.invalid(BINDING_RESOURCE, name, [Cause("target.name", "FieldValueRequired", "Required value")])
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    if meta.get("name") not in (None, "", name):
        raise errors.bad_request(f"the name of the object ({meta.get('name')}) does not match the name on the "
                                 f"URL ({name})")
    annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
    for _attempt in range(_BIND_ATTEMPTS):
        entry = store.get(pods_key, (namespace, name))
        if entry is None:
            raise errors.not_found(Resource("", "pods", "Pod"), name)
        pod = _bound_copy(entry.obj)
        pod_meta, spec = pod["metadata"], pod["spec"]
        if pod_meta.get("deletionTimestamp"):
            raise errors.conflict(BINDING_RESOURCE, name, f"pod {name} is being deleted, cannot be assigned to a host")
        if spec.get("nodeName"):
            raise errors.conflict(BINDING_RESOURCE, name,
                                  f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        if spec.get("schedulingGates"):
            raise errors.conflict(BINDING_RESOURCE, name, f"pod {name} has non-empty .spec.schedulingGates")
        spec["nodeName"] = node
        if annotations:
            pod_meta["annotations"] = {**(pod_meta.get("annotations") or {}), **annotations}
        status = pod.setdefault("status", {})
        scheduled = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                     "lastTransitionTime": now_rfc3339()}
        status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        status["conditions"].insert(0, scheduled)
        try:
            store.update(pods_key, pod, expect_rv=entry.rv)
        except Conflict:
            continue
        except Missing:
            raise errors.not_found(Resource("", "pods", "Pod"), name) from None
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    raise errors.write_outlasted()


def _bound_copy(stored: dict) -> dict:
    """A copy of ``stored`` for its binding to change: its spec's own fields (``nodeName`` is set) but not what
    they hold, which the version bound shares with it (a stored object is never changed; the store copies the
    shared parts' JSON from the stored bytes: a 1,000-peer MXJob's containers are 65 KB of it)."""
    pod = deep_copy({k: v for k, v in stored.items() if k != "spec"})
    spec = stored.get("spec")
    pod["spec"] = dict(spec) if isinstance(spec, dict) else {}
    if "spec" in stored:
        return {k: pod[k] for k in stored}   # the stored key order
    return pod
