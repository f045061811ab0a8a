"""The built-in kinds the embedded API server serves, described as kube-apiserver's discovery does."""

from __future__ import annotations

from mxjob_controller.kube.selectors import path_getter
from mxjob_controller.local.apiserver.resources import ResourceType


def _fields(*paths: str) -> dict:
    return {p: path_getter(p.split(".")) for p in paths}


NAMESPACES = ResourceType(
    "", "v1", "namespaces", "namespace", "Namespace", namespaced=False, short_names=("ns",),
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
                              short_names=("quota",), status_subresource=True)
LIMITRANGES = ResourceType("", "v1", "limitranges", "limitrange", "LimitRange", namespaced=True,
                           short_names=("limits",))
LEASES = ResourceType("coordination.k8s.io", "v1", "leases", "lease", "Lease", namespaced=True)
CRDS = ResourceType(
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition",
    "CustomResourceDefinition", namespaced=False, short_names=("crd", "crds"), categories=("api-extensions",),
    status_subresource=True, sets_generation=True)
DEPLOYMENTS = ResourceType("apps", "v1", "deployments", "deployment", "Deployment", namespaced=True,
                           short_names=("deploy",), categories=("all",), status_subresource=True,
                           extra_subresources=("scale",), sets_generation=True)
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

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    NAMESPACES, PODS, SERVICES, EVENTS, CONFIGMAPS, SECRETS, SERVICEACCOUNTS, NODES, LEASES, CRDS,
    DEPLOYMENTS, ROLES, ROLEBINDINGS, CLUSTERROLES, CLUSTERROLEBINDINGS, PDBS, PRIORITYCLASSES,
    VALIDATING_WEBHOOK_CONFIGURATIONS, RESOURCEQUOTAS, LIMITRANGES,
)
