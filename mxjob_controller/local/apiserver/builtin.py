"""The built-in kinds the embedded API server serves, described as kube-apiserver 1.32's discovery does: one
place with each kind's facts (scope, short names, categories, subresources, whether its strategy sets
``metadata.generation`` and what a create leaves in ``status``, its field selectors, its scale paths).

The rules a kind has beyond these facts (defaults, generated selectors) are its strategy's, in ``kinds/``; the
schema and validation come from Kubernetes' own definitions by (apiVersion, kind). No controller runs most of
these kinds here (docs/local-cluster.md lists the ones that do): they are stored and served as kube serves them
without kube-controller-manager.
"""

from __future__ import annotations

from mxjob_controller.kube.selectors import path_getter
from mxjob_controller.local.apiserver.resources import ALL_VERBS, ResourceType, ScalePaths


def _fields(*paths: str) -> dict:
    return {p: path_getter(p.split(".")) for p in paths}


NAMESPACES = ResourceType(
    "", "v1", "namespaces", "namespace", "Namespace", namespaced=False, short_names=("ns",),
    verbs=tuple(v for v in ALL_VERBS if v != "deletecollection"),   # kube's namespace storage has no collection DELETE
    status_subresource=True, extra_subresources=("finalize",), return_deleted_object=True,
    field_getters=_fields("status.phase"))
PODS = ResourceType(
    "", "v1", "pods", "pod", "Pod", namespaced=True, short_names=("po",), categories=("all",),
    status_subresource=True, extra_subresources=("log", "binding", "exec", "attach", "portforward"),
    return_deleted_object=True,
    field_getters=_fields("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                          "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                          "status.nominatedNodeName"))
SERVICES = ResourceType(
    "", "v1", "services", "service", "Service", namespaced=True, short_names=("svc",), categories=("all",),
    status_subresource=True, return_deleted_object=True)
EVENTS = ResourceType(
    "", "v1", "events", "event", "Event", namespaced=True, short_names=("ev",),
    field_getters=_fields("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                          "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
                          "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"))
CONFIGMAPS = ResourceType("", "v1", "configmaps", "configmap", "ConfigMap", namespaced=True,
                          short_names=("cm",))
SECRETS = ResourceType("", "v1", "secrets", "secret", "Secret", namespaced=True, field_getters=_fields("type"))
SERVICEACCOUNTS = ResourceType("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount",
                               namespaced=True, short_names=("sa",), return_deleted_object=True,
                               extra_subresources=("token",))
NODES = ResourceType("", "v1", "nodes", "node", "Node", namespaced=False, short_names=("no",),
                     status_subresource=True, field_getters=_fields("spec.unschedulable"))
RESOURCEQUOTAS = ResourceType("", "v1", "resourcequotas", "resourcequota", "ResourceQuota", namespaced=True,
                              short_names=("quota",), status_subresource=True, initial_status={})
LIMITRANGES = ResourceType("", "v1", "limitranges", "limitrange", "LimitRange", namespaced=True,
                           short_names=("limits",))
LEASES = ResourceType("coordination.k8s.io", "v1", "leases", "lease", "Lease", namespaced=True)
CRDS = ResourceType(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
    "CustomResourceDefinition", namespaced=False, short_names=("crd", "crds"), categories=("api-extensions",),
    status_subresource=True, sets_generation=True)
DEPLOYMENTS = ResourceType("apps", "v1", "deployments", "deployment", "Deployment", namespaced=True,
                           short_names=("deploy",), categories=("all",), status_subresource=True,
                           scale=ScalePaths(), sets_generation=True)
ROLES = ResourceType("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", namespaced=True)
ROLEBINDINGS = ResourceType("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding",
                            namespaced=True)
CLUSTERROLES = ResourceType("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole",
                            namespaced=False)
CLUSTERROLEBINDINGS = ResourceType("rbac.authorization.k8s.io", "v1", "clusterrolebindings",
                                   "clusterrolebinding", "ClusterRoleBinding", namespaced=False)
PDBS = ResourceType("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget",
                    namespaced=True, short_names=("pdb",), status_subresource=True, sets_generation=True)
PRIORITYCLASSES = ResourceType("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass", "PriorityClass",
                               namespaced=False, short_names=("pc",))
VALIDATING_WEBHOOK_CONFIGURATIONS = ResourceType(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", "validatingwebhookconfiguration",
    "ValidatingWebhookConfiguration", namespaced=False, categories=("api-extensions",), sets_generation=True)


# --- workloads: apps/v1, batch/v1, core ReplicationControllers ---------------------------------------------------

_WORKLOAD = {"namespaced": True, "categories": ("all",), "status_subresource": True, "sets_generation": True}
REPLICATIONCONTROLLERS = ResourceType(
    "", "v1", "replicationcontrollers", "replicationcontroller", "ReplicationController", short_names=("rc",),
    scale=ScalePaths(selector_form="map"), initial_status={"replicas": 0}, field_getters=_fields("status.replicas"),
    **_WORKLOAD)
DAEMONSETS = ResourceType(
    "apps", "v1", "daemonsets", "daemonset", "DaemonSet", short_names=("ds",), **_WORKLOAD,
    initial_status={"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                    "numberReady": 0})
REPLICASETS = ResourceType(
    "apps", "v1", "replicasets", "replicaset", "ReplicaSet", short_names=("rs",), scale=ScalePaths(),
    initial_status={"replicas": 0}, field_getters=_fields("status.replicas"), **_WORKLOAD)
STATEFULSETS = ResourceType(
    "apps", "v1", "statefulsets", "statefulset", "StatefulSet", short_names=("sts",), scale=ScalePaths(),
    initial_status={"replicas": 0, "availableReplicas": 0}, **_WORKLOAD)
CONTROLLERREVISIONS = ResourceType("apps", "v1", "controllerrevisions", "controllerrevision", "ControllerRevision",
                                   namespaced=True)
JOBS = ResourceType("batch", "v1", "jobs", "job", "Job", initial_status={},
                    field_getters=_fields("status.successful"), **_WORKLOAD)
CRONJOBS = ResourceType("batch", "v1", "cronjobs", "cronjob", "CronJob", short_names=("cj",), initial_status={},
                        **_WORKLOAD)
# autoscaling/v2 is stored (and preferred); v1 is served by conversion (kinds/conversions.py).
_HPA = {"namespaced": True, "short_names": ("hpa",), "categories": ("all",), "status_subresource": True}
HPAS_V2 = ResourceType("autoscaling", "v2", "horizontalpodautoscalers", "horizontalpodautoscaler",
                       "HorizontalPodAutoscaler", initial_status={"desiredReplicas": 0, "currentMetrics": None},
                       **_HPA)   # currentMetrics has no omitempty in v2: Go writes null
HPAS_V1 = ResourceType("autoscaling", "v1", "horizontalpodautoscalers", "horizontalpodautoscaler",
                       "HorizontalPodAutoscaler", storage_version="v2",
                       initial_status={"currentReplicas": 0, "desiredReplicas": 0}, **_HPA)

# --- core storage and networking ---------------------------------------------------------------------------------

ENDPOINTS = ResourceType("", "v1", "endpoints", "endpoints", "Endpoints", namespaced=True, short_names=("ep",))
PODTEMPLATES = ResourceType("", "v1", "podtemplates", "podtemplate", "PodTemplate", namespaced=True)
PVCS = ResourceType("", "v1", "persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim",
                    namespaced=True, short_names=("pvc",), status_subresource=True, initial_status={"phase": "Pending"})
PVS = ResourceType("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", namespaced=False,
                   short_names=("pv",), status_subresource=True, initial_status={"phase": "Pending"})
ENDPOINTSLICES = ResourceType("discovery.k8s.io", "v1", "endpointslices", "endpointslice", "EndpointSlice",
                              namespaced=True)
# events.k8s.io/v1 Events are core Events seen through another schema: one storage, converted both ways.
EVENTS_V1 = ResourceType("events.k8s.io", "v1", "events", "event", "Event", namespaced=True, short_names=("ev",),
                         storage_group="", storage_version="v1")
INGRESSES = ResourceType("networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", namespaced=True,
                         short_names=("ing",), status_subresource=True, sets_generation=True,
                         initial_status={"loadBalancer": {}})
NETWORKPOLICIES = ResourceType("networking.k8s.io", "v1", "networkpolicies", "networkpolicy", "NetworkPolicy",
                               namespaced=True, short_names=("netpol",), sets_generation=True)
INGRESSCLASSES = ResourceType("networking.k8s.io", "v1", "ingressclasses", "ingressclass", "IngressClass",
                              namespaced=False, sets_generation=True)
STORAGECLASSES = ResourceType("storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass",
                              namespaced=False, short_names=("sc",))
VOLUMEATTACHMENTS = ResourceType("storage.k8s.io", "v1", "volumeattachments", "volumeattachment",
                                 "VolumeAttachment", namespaced=False, status_subresource=True,
                                 initial_status={"attached": False})
CSIDRIVERS = ResourceType("storage.k8s.io", "v1", "csidrivers", "csidriver", "CSIDriver", namespaced=False)
CSINODES = ResourceType("storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", namespaced=False)
CSISTORAGECAPACITIES = ResourceType("storage.k8s.io", "v1", "csistoragecapacities", "csistoragecapacity",
                                    "CSIStorageCapacity", namespaced=True)

# --- the control plane's own APIs --------------------------------------------------------------------------------

FLOWSCHEMAS = ResourceType("flowcontrol.apiserver.k8s.io", "v1", "flowschemas", "flowschema", "FlowSchema",
                           namespaced=False, status_subresource=True, sets_generation=True, initial_status={})
PRIORITYLEVELCONFIGURATIONS = ResourceType(
    "flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations", "prioritylevelconfiguration",
    "PriorityLevelConfiguration", namespaced=False, status_subresource=True, sets_generation=True, initial_status={})
MUTATING_WEBHOOK_CONFIGURATIONS = ResourceType(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", "mutatingwebhookconfiguration",
    "MutatingWebhookConfiguration", namespaced=False, categories=("api-extensions",), sets_generation=True)
APISERVICES = ResourceType("apiregistration.k8s.io", "v1", "apiservices", "apiservice", "APIService",
                           namespaced=False, categories=("api-extensions",), status_subresource=True,
                           initial_status={})
CSRS = ResourceType("certificates.k8s.io", "v1", "certificatesigningrequests", "certificatesigningrequest",
                    "CertificateSigningRequest", namespaced=False, short_names=("csr",), status_subresource=True,
                    extra_subresources=("approval",), initial_status={}, field_getters=_fields("spec.signerName"))

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    NAMESPACES, PODS, SERVICES, EVENTS, CONFIGMAPS, SECRETS, SERVICEACCOUNTS, NODES, LEASES, CRDS,
    DEPLOYMENTS, ROLES, ROLEBINDINGS, CLUSTERROLES, CLUSTERROLEBINDINGS, PDBS, PRIORITYCLASSES,
    VALIDATING_WEBHOOK_CONFIGURATIONS, RESOURCEQUOTAS, LIMITRANGES,
    REPLICATIONCONTROLLERS, DAEMONSETS, REPLICASETS, STATEFULSETS, CONTROLLERREVISIONS, JOBS, CRONJOBS,
    HPAS_V2, HPAS_V1, ENDPOINTS, PODTEMPLATES, PVCS, PVS, ENDPOINTSLICES, EVENTS_V1, INGRESSES, NETWORKPOLICIES,
    INGRESSCLASSES, STORAGECLASSES, VOLUMEATTACHMENTS, CSIDRIVERS, CSINODES, CSISTORAGECAPACITIES, FLOWSCHEMAS,
    PRIORITYLEVELCONFIGURATIONS, MUTATING_WEBHOOK_CONFIGURATIONS, APISERVICES, CSRS,
)
