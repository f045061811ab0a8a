"""``manifests/``: every overlay and component renders with ``kubectl kustomize``; every rendered built-in object
passes ``kubernetes-validate --strict`` for the Kubernetes version we serve; each install (all three frameworks, or
one) holds exactly its frameworks' objects; the Deployment is hardened as the issue asks and its arguments are flags
``run`` accepts; no ``*`` anywhere in RBAC; and ``kubectl apply -k manifests/install`` against ``mxjob-controller
local up`` is accepted and stores valid objects."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from mxjob_controller import __version__
from mxjob_controller.cli.run import run as run_command
from mxjob_controller.kube.k8s_schemas import KUBE_VERSION
from mxjob_controller.kube.quantity import parse as parse_quantity
from tests.manifests import INSTALL_NAMESPACE, MANIFESTS, find, kustomizations, render, render_text
from tests.support import Kubectl, wait_for

OVERLAYS = ["components/gang-scheduling", "components/webhook", "components/webhook-cert-manager", "controller", "crd",
            "install", "monitoring", "overlays/gang-scheduling", "overlays/generic-only", "overlays/high-availability",
            "overlays/monitoring", "overlays/mxnet-only", "overlays/tensorflow-only", "overlays/webhook", "rbac"]
NOT_BUILT_IN = {("monitoring.coreos.com/v1", "ServiceMonitor"), ("monitoring.coreos.com/v1", "PrometheusRule"),
                ("cert-manager.io/v1", "Issuer"),
                ("cert-manager.io/v1", "Certificate")}   # CRD kinds: no schema of Kubernetes' own
RULE_FIELDS = ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")


def test_the_tree_is_what_these_tests_cover():
    assert kustomizations() == OVERLAYS


@pytest.mark.parametrize("directory", OVERLAYS)
def test_every_overlay_renders_and_every_built_in_object_validates_strictly(directory):
    docs = render(directory)
    assert docs
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in NOT_BUILT_IN:
            continue
        try:
            kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            raise AssertionError(f"manifests/{directory}: {doc['kind']}/{doc['metadata']['name']}: {e}") from None


@pytest.mark.parametrize("directory", OVERLAYS)
def test_no_wildcard_anywhere(directory):
    for doc in render(directory):
        for rule in doc.get("rules") or ():
            for field in RULE_FIELDS:
                assert not any("*" in value for value in rule.get(field) or ()), \
                    f"{doc['kind']}/{doc['metadata']['name']}: {field} {rule.get(field)}"
    assert "'*'" not in render_text(directory) and '"*"' not in render_text(directory)


SHARED_OBJECTS = [
    ("Namespace", INSTALL_NAMESPACE), ("ServiceAccount", "mxjob-controller"), ("ClusterRole", "mxjob-controller"),
    ("ClusterRoleBinding", "mxjob-controller"), ("Role", "mxjob-controller-leader-election"),
    ("RoleBinding", "mxjob-controller-leader-election"), ("Deployment", "mxjob-controller"),
    ("Service", "mxjob-controller-metrics")]


#: Each job kind's API group.
GROUPS = {"mxjobs": "kubeflow.org", "tfjobs": "kubeflow.org", "genericjobs": "batch.tensorstack.dev"}


def kind_objects(plural: str) -> list[tuple[str, str]]:
    """What one job kind adds to an install: its CRD, the controller's role for it, the users' roles."""
    return [("CustomResourceDefinition", f"{plural}.{GROUPS[plural]}"),
            ("ClusterRole", f"mxjob-controller-{plural}"),
            ("ClusterRoleBinding", f"mxjob-controller-{plural}"), ("ClusterRole", f"kubeflow-{plural}-admin"),
            ("ClusterRole", f"kubeflow-{plural}-edit"), ("ClusterRole", f"kubeflow-{plural}-view")]


@pytest.mark.parametrize(("directory", "plurals", "flag"), [
    ("install", ("mxjobs", "tfjobs", "genericjobs"), None), ("overlays/mxnet-only", ("mxjobs",), "--frameworks=mxnet"),
    ("overlays/tensorflow-only", ("tfjobs",), "--frameworks=tensorflow"),
    ("overlays/generic-only", ("genericjobs",), "--frameworks=generic")])
def test_each_install_holds_its_frameworks_and_runs_them(directory, plurals, flag):
    docs = render(directory)
    assert sorted((d["kind"], d["metadata"]["name"]) for d in docs) == sorted(
        SHARED_OBJECTS + [o for plural in plurals for o in kind_objects(plural)])
    args = container(docs)["args"]
    assert [a for a in args if a.startswith("--frameworks")] == ([flag] if flag else [])
    for plural in plurals:
        assert find(docs, "CustomResourceDefinition", f"{plural}.{GROUPS[plural]}") == yaml.load(
            (MANIFESTS / "crd" / f"{GROUPS[plural]}_{plural}.yaml").read_text(), Loader=yaml.CSafeLoader)


def test_the_install_is_everything_in_one_namespace():
    docs = render("install")
    namespaced = [d for d in docs if d["kind"] in ("ServiceAccount", "Role", "RoleBinding", "Deployment", "Service")]
    assert {d["metadata"]["namespace"] for d in namespaced} == {INSTALL_NAMESPACE}
    for binding in (d for d in docs if d["kind"].endswith("Binding")):
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "mxjob-controller",
                                        "namespace": INSTALL_NAMESPACE}]


def test_the_image_tag_is_this_version():
    deployment = find(render("install"), "Deployment", "mxjob-controller")
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == f"mxjob-controller:{__version__}"


def container(docs: list[dict]) -> dict:
    return find(docs, "Deployment", "mxjob-controller")["spec"]["template"]["spec"]["containers"][0]


def test_the_deployment_is_hardened():
    deployment = find(render("install"), "Deployment", "mxjob-controller")
    pod = deployment["spec"]["template"]["spec"]
    c = pod["containers"][0]
    assert pod["serviceAccountName"] == "mxjob-controller"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert isinstance(pod["securityContext"]["runAsUser"], int) and pod["securityContext"]["runAsUser"] > 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] == pod["securityContext"]["runAsUser"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["seccompProfile"] == {"type": "RuntimeDefault"}
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert ports == {"metrics": 8080, "health": 8081}
    assert {"cpu", "memory"} <= set(c["resources"]["requests"]) and {"cpu", "memory"} <= set(c["resources"]["limits"])
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}} in c["env"]
    assert pod["terminationGracePeriodSeconds"] > 10, "the process stops within 10 s; the pod must let it"
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod.get("labels", deployment["spec"]["template"]
                                                                                  ["metadata"]["labels"]).items()


#: The controller's largest RSS measured, at 10,000 finished + 1,000 running jobs (docs/performance.md, "Scale").
MEASURED_PEAK_MIB = 436


def test_the_memory_limit_leaves_half_again_the_measured_peak():
    """Issue 45: 512Mi sat 76 MiB above the RSS measured at 10,000 finished + 1,000 running jobs."""
    limit = parse_quantity(container(render("install"))["resources"]["limits"]["memory"]).value
    assert limit >= Fraction(3, 2) * MEASURED_PEAK_MIB * 2**20, limit
    assert "436 MiB" in (MANIFESTS.parent / "docs" / "performance.md").read_text(), "the figure this rests on"


@pytest.mark.parametrize("directory", ["install", "overlays/high-availability", "overlays/gang-scheduling",
                                       "overlays/mxnet-only", "overlays/tensorflow-only", "overlays/generic-only",
                                       "overlays/webhook"])
def test_the_deployment_args_are_flags_run_accepts_with_leader_election_on(directory):
    docs = render(directory)
    args = container(docs)["args"]
    ctx = run_command.make_context("run", list(args))
    assert ctx.params["leader_elect"] is True
    assert ctx.params["metrics_bind_address"] == ":8080" and ctx.params["health_probe_bind_address"] == ":8081"


def test_high_availability_runs_two_leader_elected_replicas_with_a_budget():
    docs = render("overlays/high-availability")
    assert find(docs, "Deployment", "mxjob-controller")["spec"]["replicas"] == 2
    assert find(docs, "PodDisruptionBudget", "mxjob-controller")["metadata"]["namespace"] == INSTALL_NAMESPACE


def test_gang_scheduling_adds_its_rules_and_the_flag():
    docs = render("overlays/gang-scheduling")
    assert "--gang-scheduler-name=volcano" in container(docs)["args"]
    binding = find(docs, "ClusterRoleBinding", "mxjob-controller-gang-scheduling")
    assert binding["subjects"][0]["namespace"] == INSTALL_NAMESPACE


def test_the_metrics_service_and_service_monitor_find_the_pods():
    docs = render("overlays/monitoring")
    pod_labels = find(docs, "Deployment", "mxjob-controller")["spec"]["template"]["metadata"]["labels"]
    service = find(docs, "Service", "mxjob-controller-metrics")
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [{"name": "metrics", "port": 8080, "targetPort": "metrics", "protocol": "TCP"}]
    monitor = find(docs, "ServiceMonitor", "mxjob-controller")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
    dashboard = find(docs, "ConfigMap", "mxjob-controller-dashboard")
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(dashboard["data"]["mxjob-controller.json"])["uid"] == "mxjob-controller"
    assert find(docs, "PrometheusRule", "mxjob-controller")["spec"]["groups"]


@pytest.mark.integration
def test_another_namespace_carries_the_bindings_along(tmp_path):
    """A user overlay that moves the install elsewhere moves the bindings' subjects with it."""
    overlay = tmp_path / "mine"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "namespace": "ml-platform",
        "resources": [os.path.relpath(MANIFESTS / "install", overlay)]}))
    done = subprocess.run(["kubectl", "kustomize", str(overlay)], capture_output=True, text=True, timeout=120,
                          check=True)
    docs = [d for d in yaml.safe_load_all(done.stdout) if d]
    for binding in (d for d in docs if d["kind"].endswith("Binding")):
        assert binding["subjects"][0]["namespace"] == "ml-platform"


# --- kubectl apply -k against local up ------------------------------------------------------------------------

STORED = [("crd", "mxjobs.kubeflow.org", ""), ("crd", "tfjobs.kubeflow.org", ""),
          ("crd", "genericjobs.batch.tensorstack.dev", ""),
          ("serviceaccount", "mxjob-controller", INSTALL_NAMESPACE), ("clusterrole", "mxjob-controller-tfjobs", ""),
          ("clusterrole", "mxjob-controller-genericjobs", ""), ("clusterrole", "kubeflow-genericjobs-edit", ""),
          ("clusterrole", "mxjob-controller", ""), ("clusterrolebinding", "mxjob-controller", ""),
          ("role", "mxjob-controller-leader-election", INSTALL_NAMESPACE),
          ("rolebinding", "mxjob-controller-leader-election", INSTALL_NAMESPACE),
          ("clusterrole", "kubeflow-mxjobs-edit", ""), ("deployment", "mxjob-controller", INSTALL_NAMESPACE),
          ("service", "mxjob-controller-metrics", INSTALL_NAMESPACE), ("namespace", INSTALL_NAMESPACE, "")]


GENERICJOB = {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "GenericJob",
              "metadata": {"name": "g", "namespace": "default"},
              "spec": {"replicaSpecs": [{"type": "worker", "replicas": 1, "template": {"spec": {"containers": [
                  {"name": "main", "image": "x", "command": ["python", "-c", "pass"]}]}}}]}}


@pytest.mark.slow
def test_kubectl_apply_k_install_is_accepted_by_local_up(tmp_path):
    kubeconfig = tmp_path / "kc" / "config"
    up = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up",
                           "--kubelet", "none", "--no-controller", "--port", "0", "--no-crds",
                           "--kubeconfig-out", str(kubeconfig)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    try:
        wait_for(lambda: kubeconfig.exists() or up.poll() is not None, timeout=30, what="local up's kubeconfig")
        assert up.poll() is None, up.communicate()
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        applied = kubectl.ok("apply", "-k", str(MANIFESTS / "install"), timeout=60)
        assert "customresourcedefinition.apiextensions.k8s.io/mxjobs.kubeflow.org created" in applied
        assert "customresourcedefinition.apiextensions.k8s.io/tfjobs.kubeflow.org created" in applied
        assert "customresourcedefinition.apiextensions.k8s.io/genericjobs.batch.tensorstack.dev created" in applied
        assert "deployment.apps/mxjob-controller created" in applied
        kubectl.ok("wait", "--for", "condition=established", "crd/mxjobs.kubeflow.org", "crd/tfjobs.kubeflow.org",
                   "crd/genericjobs.batch.tensorstack.dev", "--timeout", "30s")
        for kind, name, namespace in STORED:
            obj = kubectl.json("get", kind, name, *(["-n", namespace] if namespace else []))
            kubernetes_validate.validate(obj, KUBE_VERSION, strict=True)
        deployment = kubectl.json("get", "deployment", "mxjob-controller", "-n", INSTALL_NAMESPACE)
        rendered = find(render("install"), "Deployment", "mxjob-controller")
        assert deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"] == \
            rendered["spec"]["template"]["spec"]["containers"][0]["securityContext"]
        # Applying again changes nothing, as on a cluster.
        again = kubectl.ok("apply", "-k", str(MANIFESTS / "install"), timeout=60)
        assert all(line.endswith("unchanged") for line in again.strip().splitlines()), again
        # And an MXJob is accepted once the CRD is in.
        example = Path(MANIFESTS.parent / "examples" / "mxjob-single-worker.yaml").read_text()
        assert "mxjob.kubeflow.org/mxnet-single created" in kubectl.ok("create", "-f", "-", input=example)
        assert json.loads(kubectl.ok("get", "mxjob", "mxnet-single", "-o", "json"))["kind"] == "MXJob"
        tfjob = Path(MANIFESTS.parent / "examples" / "tensorflow" / "tfjob-dist.yaml").read_text()
        assert "tfjob.kubeflow.org/tf-dist created" in kubectl.ok("create", "-f", "-", input=tfjob)
        assert json.loads(kubectl.ok("get", "tfjob", "tf-dist", "-o", "json"))["kind"] == "TFJob"
        assert "genericjob.batch.tensorstack.dev/g created" in kubectl.ok("create", "-f", "-",
                                                                          input=json.dumps(GENERICJOB))
        assert json.loads(kubectl.ok("get", "gj", "g", "-o", "json"))["kind"] == "GenericJob"
    finally:
        up.terminate()
        up.communicate(timeout=15)


def test_the_webhook_overlay_wires_service_configuration_crd_certificate_and_deployment():
    docs = render("overlays/webhook")
    controller = container(docs)
    ctx = run_command.make_context("run", list(controller["args"]))
    assert (ctx.params["webhook_bind_address"], ctx.params["webhook_cert_dir"]) == (
        ":9443", "/tmp/k8s-webhook-server/serving-certs")
    assert {"name": "webhook", "containerPort": 9443, "protocol": "TCP"} in controller["ports"]
    [mount] = [m for m in controller["volumeMounts"] if m["name"] == "webhook-cert"]
    assert (mount["mountPath"], mount["readOnly"]) == ("/tmp/k8s-webhook-server/serving-certs", True)
    pod = find(docs, "Deployment", "mxjob-controller")["spec"]["template"]
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == "webhook-cert"]
    certificate = find(docs, "Certificate", "mxjob-controller-webhook")
    assert volume["secret"]["secretName"] == certificate["spec"]["secretName"] == "mxjob-controller-webhook-tls"
    service = find(docs, "Service", "mxjob-controller-webhook")
    assert service["metadata"]["namespace"] == INSTALL_NAMESPACE
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert service["spec"]["ports"] == [{"name": "webhook", "port": 443, "targetPort": "webhook", "protocol": "TCP"}]
    hosts = {f"{service['metadata']['name']}.{INSTALL_NAMESPACE}.svc",
             f"{service['metadata']['name']}.{INSTALL_NAMESPACE}.svc.cluster.local"}
    assert set(certificate["spec"]["dnsNames"]) == hosts, "the certificate names the Service the API server calls"
    injected = f"{INSTALL_NAMESPACE}/{certificate['metadata']['name']}"
    configuration = find(docs, "ValidatingWebhookConfiguration", "mxjob-controller-validator")
    crd = find(docs, "CustomResourceDefinition", "mxjobs.kubeflow.org")
    for obj in (configuration, crd):
        assert obj["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == injected
    for webhook in configuration["webhooks"]:
        assert webhook["clientConfig"]["service"]["name"] == service["metadata"]["name"]
        assert webhook["clientConfig"]["service"]["namespace"] == INSTALL_NAMESPACE
    assert [w["clientConfig"]["service"]["path"] for w in configuration["webhooks"]] == [
        "/validate-kubeflow-org-v1-mxjob", "/validate-kubeflow-org-v1-tfjob",
        "/validate-batch-tensorstack-dev-v1beta1-genericjob"]
    defaulter = find(docs, "MutatingWebhookConfiguration", "mxjob-controller-defaulter")
    assert defaulter["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == injected
    assert [(w["clientConfig"]["service"]["name"], w["clientConfig"]["service"]["namespace"],
             w["clientConfig"]["service"]["path"]) for w in defaulter["webhooks"]] == [
        (service["metadata"]["name"], INSTALL_NAMESPACE, path) for path in (
            "/mutate-kubeflow-org-v1-mxjob", "/mutate-kubeflow-org-v1-tfjob",
            "/mutate-batch-tensorstack-dev-v1beta1-genericjob")]
    # v1alpha1 reaches the defaulter converted to v1 (matchPolicy Equivalent): it names the kind's own versions.
    assert defaulter["webhooks"][0]["rules"][0]["apiVersions"] == ["v1", "v1beta1"]
    assert {w["matchPolicy"] for w in defaulter["webhooks"]} == {"Equivalent"}
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1", "v1beta1", "v1alpha1"]
    assert [v["name"] for v in crd["spec"]["versions"] if v["storage"]] == ["v1"]
    conversion = crd["spec"]["conversion"]
    assert conversion["strategy"] == "Webhook" and conversion["webhook"]["conversionReviewVersions"] == ["v1"]
    assert conversion["webhook"]["clientConfig"]["service"] == {
        "name": service["metadata"]["name"], "namespace": INSTALL_NAMESPACE, "path": "/convert", "port": 443}


def test_the_install_without_the_webhook_component_serves_no_v1alpha1_and_calls_no_webhook():
    docs = render("install")
    crd = find(docs, "CustomResourceDefinition", "mxjobs.kubeflow.org")
    assert [v["name"] for v in crd["spec"]["versions"]] == ["v1", "v1beta1"]
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert not [d for d in docs if d["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")]
