"""Pod Security Admission as users meet it: the real kubectl against a TLS server enforcing RBAC. A namespace labelled
``enforce=restricted`` refuses a ``runAsUser: 0`` pod with kube's exact PodSecurity line; ``warn`` prints kubectl's
``Warning:`` line and lets the pod in; a stricter label warns about the pods already there; a Deployment's template
is warned about, never refused; the audit log carries kube's annotations; an MXJob's pods are refused like any, with
the refusal in the job's ``FailedCreatePod`` event; ``local up --pod-security baseline`` applies to every namespace."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.local.apiserver.auth.pod_security_admission import PodSecurityConfiguration
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from mxjob_controller.local.cluster import ClusterOptions, LocalCluster
from tests.support import Kube, Kubectl, wait_for

pytestmark = pytest.mark.integration   # the server and kubectl; the local cluster and local up ones are slow

ROOT = Path(__file__).resolve().parents[4]
ROOT_DETAIL = ('allowPrivilegeEscalation != false (container "main" must set securityContext.allowPrivilegeEscalation'
               '=false), unrestricted capabilities (container "main" must set securityContext.capabilities.drop='
               '["ALL"]), runAsNonRoot != true (pod or container "main" must set securityContext.runAsNonRoot=true), '
               'runAsUser=0 (pod must not set runAsUser=0), seccompProfile (pod or container "main" must set '
               'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')
# The baseline violation these tests use: NET_RAW is in a container runtime's default set (the local kubelet's
# sandbox honours it), not in the baseline's, so only PodSecurity refuses it (privileged or hostPath pods the
# kubelet's own admission refuses first, as a field it cannot honour).
NET_RAW_DETAIL = ('non-default capabilities (container "main" must not include "NET_RAW" in '
                  "securityContext.capabilities.add)")


def pod_yaml(name: str, namespace: str, *, root: bool = False, net_raw: bool = False,
             image: str = "busybox:1.36") -> str:
    pod: dict = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
                 "spec": {"containers": [{"name": "main", "image": image}]}}
    if root:
        pod["spec"]["securityContext"] = {"runAsUser": 0}
    if net_raw:
        pod["spec"]["containers"][0]["securityContext"] = {"capabilities": {"add": ["NET_RAW"]}}
    return yaml.safe_dump(pod)


def warnings(stderr: str) -> list[str]:
    return [line.removeprefix("Warning: ") for line in stderr.splitlines() if line.startswith("Warning: ")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[APIServer, Kubectl, Path]]:
    tmp = tmp_path_factory.mktemp("pod-security")
    audit = tmp / "audit.jsonl"
    config = PodSecurityConfiguration(usernames=frozenset({"ops"}), namespaces=frozenset({"exempt"}))
    server = APIServer(ServerOptions(tls=True, audit_log=str(audit), pod_security=config)).start()
    try:
        yield server, Kubectl(server.write_kubeconfig(tmp / "admin"), tmp / "cache"), audit
    finally:
        server.stop()


def test_enforce_restricted_refuses_a_root_pod_with_kubes_message(cluster):
    _, kubectl, _ = cluster
    kubectl.ok("create", "namespace", "team")
    labelled = kubectl.run("label", "ns", "team", "pod-security.kubernetes.io/enforce=restricted")
    assert labelled.returncode == 0, labelled.stderr
    assert labelled.stdout == "namespace/team labeled\n" and labelled.stderr == ""   # no pods to warn about
    refused = kubectl.run("create", "-f", "-", input=pod_yaml("root", "team", root=True))
    assert refused.returncode == 1
    assert refused.stderr == ('Error from server (Forbidden): error when creating "STDIN": pods "root" is forbidden: '
                              f'violates PodSecurity "restricted:latest": {ROOT_DETAIL}\n')
    assert kubectl.run("get", "pod", "root", "-n", "team").returncode == 1
    # kubectl run (a pod without a file): the same refusal; no warning goes with it (warn is restricted too).
    run = kubectl.run("run", "sh", "-n", "team", "--image", "busybox:1.36", "--overrides",
                      json.dumps({"spec": {"securityContext": {"runAsUser": 0}}}))
    assert run.returncode == 1 and "Warning" not in run.stderr
    assert run.stderr.startswith('Error from server (Forbidden): pods "sh" is forbidden: violates PodSecurity '
                                 '"restricted:latest": allowPrivilegeEscalation != false (container "sh" ')
    # A pod that meets the restricted standard goes in, without a warning.
    ok = yaml.safe_load(pod_yaml("ok", "team"))
    ok["spec"]["securityContext"] = {"runAsNonRoot": True, "runAsUser": 1000,
                                     "seccompProfile": {"type": "RuntimeDefault"}}
    ok["spec"]["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": False,
                                                      "capabilities": {"drop": ["ALL"]}}
    created = kubectl.run("create", "-f", "-", input=yaml.safe_dump(ok))
    assert created.returncode == 0 and created.stderr == "", created.stderr


def test_warn_prints_kubectls_warning_line_and_admits(cluster):
    _, kubectl, _ = cluster
    kubectl.ok("create", "namespace", "warned")
    kubectl.ok("label", "ns", "warned", "pod-security.kubernetes.io/warn=restricted")
    created = kubectl.run("create", "-f", "-", input=pod_yaml("root", "warned", root=True))
    assert created.returncode == 0, created.stderr
    assert created.stderr == f'Warning: would violate PodSecurity "restricted:latest": {ROOT_DETAIL}\n'
    assert created.stdout == "pod/root created\n"
    # At a version of the label's choosing, named in the warning.
    kubectl.ok("label", "ns", "warned", "pod-security.kubernetes.io/warn-version=v1.22")
    again = kubectl.run("create", "-f", "-", input=pod_yaml("root2", "warned", root=True))
    assert warnings(again.stderr) == [
        'would violate PodSecurity "restricted:v1.22": allowPrivilegeEscalation != false (container "main" must set '
        'securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "main" must set '
        'securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "main" must set '
        'securityContext.runAsNonRoot=true), seccompProfile (pod or container "main" must set '
        'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")']   # runAsUser=0 is v1.23's


def test_a_stricter_label_warns_about_the_pods_already_there(cluster):
    _, kubectl, _ = cluster
    kubectl.ok("create", "namespace", "legacy")
    for name in ("priv-b", "priv-a"):
        kubectl.ok("create", "-f", "-", input=pod_yaml(name, "legacy", net_raw=True))
    kubectl.ok("create", "-f", "-", input=pod_yaml("root", "legacy", root=True))
    baseline = kubectl.run("label", "ns", "legacy", "pod-security.kubernetes.io/enforce=baseline")
    assert baseline.returncode == 0, baseline.stderr
    assert warnings(baseline.stderr) == [
        'existing pods in namespace "legacy" violate the new PodSecurity enforce level "baseline:latest"',
        "priv-a (and 1 other pod): non-default capabilities"]
    restricted = kubectl.run("label", "--overwrite", "ns", "legacy", "pod-security.kubernetes.io/enforce=restricted")
    assert warnings(restricted.stderr) == [
        'existing pods in namespace "legacy" violate the new PodSecurity enforce level "restricted:latest"',
        "priv-a (and 1 other pod): allowPrivilegeEscalation != false, unrestricted capabilities, "
        "runAsNonRoot != true, seccompProfile",
        "root: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, runAsUser=0, "
        "seccompProfile"]
    # Relaxing warns about nothing; the pods stay; a label change that leaves their images alone is admitted.
    relaxed = kubectl.run("label", "--overwrite", "ns", "legacy", "pod-security.kubernetes.io/enforce=baseline")
    assert relaxed.returncode == 0 and relaxed.stderr == ""
    assert kubectl.run("label", "pod", "priv-a", "-n", "legacy", "touched=yes").returncode == 0
    # A new image is a significant update: evaluated, and refused.
    changed = kubectl.run("set", "image", "pod/priv-a", "-n", "legacy", "main=busybox:1.37")
    assert changed.returncode == 1
    assert ('pods "priv-a" is forbidden: violates PodSecurity "baseline:latest": '
            f'{NET_RAW_DETAIL}') in changed.stderr


def test_a_bad_label_is_refused_with_kubes_message(cluster):
    _, kubectl, _ = cluster
    kubectl.ok("create", "namespace", "typo")
    bad = kubectl.run("label", "ns", "typo", "pod-security.kubernetes.io/enforce=strict")
    assert bad.returncode == 1
    assert bad.stderr == ('The Namespace "typo" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: '
                          'Invalid value: "strict": must be one of privileged, baseline, restricted\n')
    created = kubectl.run("create", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "typo2", "labels": {"pod-security.kubernetes.io/audit-version": "1.30"}}}))
    assert created.returncode == 1
    assert 'Invalid value: "1.30": must be "latest" or "v1.x"' in created.stderr


def test_deployment_templates_are_warned_about_never_refused(cluster):
    _, kubectl, _ = cluster
    kubectl.ok("create", "namespace", "apps")
    kubectl.ok("label", "ns", "apps", "pod-security.kubernetes.io/enforce=baseline")
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "apps"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web"}},
                      "spec": {"containers": [{"name": "main", "image": "nginx",
                                               "securityContext": {"capabilities": {"add": ["NET_RAW"]}}}]}}}}
    applied = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(deployment))
    assert applied.returncode == 0, applied.stderr
    assert warnings(applied.stderr) == [f'would violate PodSecurity "baseline:latest": {NET_RAW_DETAIL}']
    assert kubectl.run("get", "deployment", "web", "-n", "apps").returncode == 0


def test_audit_records_carry_kubes_annotations(cluster):
    server, kubectl, audit = cluster
    kubectl.ok("create", "namespace", "audited")
    kubectl.ok("label", "ns", "audited", "pod-security.kubernetes.io/audit=baseline",
               "pod-security.kubernetes.io/enforce=baseline", "pod-security.kubernetes.io/enforce-version=v1.30")
    assert kubectl.run("create", "-f", "-", input=pod_yaml("priv", "audited", net_raw=True)).returncode == 1
    kubectl.ok("create", "-f", "-", input=pod_yaml("plain", "audited"))
    records = wait_for(lambda: (r := [x for x in server.audit.records(resource="pods", namespace="audited")
                                      if x.verb == "create"]) and len(r) == 2 and r, what="two pod creates")
    refused, admitted = records
    assert refused.code == 403 and refused.annotations == {
        "pod-security.kubernetes.io/enforce-policy": "baseline:v1.30",
        "pod-security.kubernetes.io/audit-violations": f'would violate PodSecurity "baseline:latest": '
                                                       f"{NET_RAW_DETAIL}"}
    assert admitted.code == 201 and admitted.annotations == {
        "pod-security.kubernetes.io/enforce-policy": "baseline:v1.30"}
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    mine = [r for r in lines if r["resource"] == "pods" and r["namespace"] == "audited" and r["verb"] == "create"]
    assert [r["annotations"] for r in mine] == [refused.annotations, admitted.annotations]
    # What is not admission's has none.
    assert all(r.annotations == {} for r in server.audit.records(resource="namespaces", verb="get"))


def test_exempt_users_and_namespaces(cluster):
    server, kubectl, _ = cluster
    created = kubectl.run("create", "-f", "-", input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "exempt", "labels": {"pod-security.kubernetes.io/audit": "baseline"}}}))
    assert warnings(created.stderr) == ['namespace "exempt" is exempt from Pod Security, and the policy '
                                        "(audit=baseline:latest) will be ignored"]
    labelled = kubectl.run("label", "ns", "exempt", "pod-security.kubernetes.io/enforce=restricted")
    assert warnings(labelled.stderr) == ['namespace "exempt" is exempt from Pod Security, and the policy '
                                         "(enforce=restricted:latest, audit=baseline:latest) will be ignored"]
    assert kubectl.run("create", "-f", "-", input=pod_yaml("root", "exempt", root=True)).returncode == 0
    kubectl.ok("create", "namespace", "strict")
    kubectl.ok("label", "ns", "strict", "pod-security.kubernetes.io/enforce=restricted")
    ops = Kube(server.url, token=server.issue_user_token("ops", ("system:masters",)), ca_file=server.ca_file)
    try:
        created = ops.post("/api/v1/namespaces/strict/pods", yaml.safe_load(pod_yaml("root", "strict", root=True)))
        assert created.status == 201, created.body
    finally:
        ops.close()
    assert [r.annotations for r in server.audit.records(resource="pods", namespace="strict", user="ops")] == [
        {"pod-security.kubernetes.io/exempt": "user"}]


def test_metrics_count_the_refusals(cluster):
    server, kubectl, _ = cluster
    kubectl.ok("create", "namespace", "counted")
    kubectl.ok("label", "ns", "counted", "pod-security.kubernetes.io/enforce=baseline")
    admin = Kube.of(server)
    try:
        def denials() -> int:
            text = admin.get("/metrics").body
            return sum(int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(
                'pod_security_evaluations_total{decision="deny",policy_level="baseline",policy_version="latest",'
                'mode="enforce",request_operation="create",resource="pod",subresource=""}'))
        before = denials()
        assert kubectl.run("create", "-f", "-", input=pod_yaml("priv", "counted", net_raw=True)).returncode == 1
        assert denials() == before + 1
    finally:
        admin.close()


def mxjob(namespace: str, **security_context: Any) -> str:
    """An MXJob whose every replica runs as root, its container with ``security_context``."""
    replica = {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
        "securityContext": {"runAsUser": 0},
        "containers": [{"name": "mxnet", "image": "mxnet/python", "securityContext": security_context}]}}}
    return yaml.safe_dump({"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
                           "metadata": {"name": "escalate", "namespace": namespace},
                           "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": {
                               "Scheduler": replica, "Server": replica, "Worker": replica}}})


@pytest.mark.slow
def test_an_mxjobs_pods_are_checked_like_any(tmp_path: Path):
    """The job-edit role may create MXJobs, not pods. Where the namespace enforces baseline, the controller's create
    of a pod adding capabilities is refused; where it enforces restricted, so is a root pod; the job's
    FailedCreatePod event carries kube's PodSecurity text."""
    cluster = LocalCluster(ClusterOptions(server=ServerOptions(tls=True), kubelet=False, threadiness=1))
    cluster.start()
    try:
        admin = Kubectl(cluster.server.write_kubeconfig(tmp_path / "admin"), tmp_path / "cache")
        admin.ok("apply", "-f", str(ROOT / "manifests" / "rbac" / "user_roles.yaml"))
        editor = Kubectl(cluster.server.write_kubeconfig(tmp_path / "editor",
                                                          token=cluster.server.issue_user_token("editor")),
                         tmp_path / "cache")
        for namespace, level in (("team", "baseline"), ("strict", "restricted")):
            admin.ok("create", "namespace", namespace)
            admin.ok("label", "ns", namespace, f"pod-security.kubernetes.io/enforce={level}")
            admin.ok("create", "rolebinding", "editor", "-n", namespace, "--clusterrole", "kubeflow-mxjobs-edit",
                     "--user", "editor")
            assert editor.run("auth", "can-i", "create", "pods", "-n", namespace).stdout.strip() == "no"
        editor.ok("create", "-f", "-", input=mxjob("team", capabilities={"add": ["NET_RAW", "SYS_ADMIN"]}))
        editor.ok("create", "-f", "-", input=mxjob("strict", allowPrivilegeEscalation=False,
                                                   capabilities={"drop": ["ALL"]},
                                                   seccompProfile={"type": "RuntimeDefault"}))

        def refusal(namespace: str) -> str | None:
            events = admin.json("get", "events", "-n", namespace)["items"]
            return next((e["message"] for e in events if e.get("reason") == "FailedCreatePod"
                         and e["involvedObject"]["name"] == "escalate"), None)
        for namespace, violation in (
                ("team", 'violates PodSecurity "baseline:latest": non-default capabilities (container "mxnet" must '
                         'not include "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add)'),
                ("strict", 'violates PodSecurity "restricted:latest": runAsNonRoot != true (pod or container '
                           '"mxnet" must set securityContext.runAsNonRoot=true), runAsUser=0 (pod must not set '
                           "runAsUser=0)")):
            message = wait_for(lambda ns=namespace: refusal(ns), timeout=60, what=f"{namespace}'s FailedCreatePod")
            prefix, _, rest = message.partition(" is forbidden: ")
            assert prefix in [f'Error creating: pods "escalate-{t}-0"' for t in ("scheduler", "server", "worker")]
            assert rest == violation
            assert admin.json("get", "pods", "-n", namespace)["items"] == []
    finally:
        assert cluster.stop(20.0)


@pytest.mark.slow
def test_local_up_pod_security_applies_cluster_wide(tmp_path: Path):
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up", "--kubelet", "none",
                             "--no-controller", "--no-crds", "--port", "0", "--kubeconfig-out", str(kubeconfig),
                             "--pod-security", "baseline"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=60, what="local up ready")
        assert proc.poll() is None, proc.communicate()
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        kubectl.ok("create", "namespace", "any")
        for namespace in ("default", "any"):
            refused = kubectl.run("create", "-f", "-", input=pod_yaml("priv", namespace, net_raw=True))
            assert refused.returncode == 1
            assert refused.stderr == ('Error from server (Forbidden): error when creating "STDIN": pods "priv" is '
                                      f'forbidden: violates PodSecurity "baseline:latest": {NET_RAW_DETAIL}\n')
        # Root alone is within baseline; a namespace may still choose to be privileged.
        assert kubectl.run("create", "-f", "-", input=pod_yaml("root", "any", root=True)).returncode == 0
        kubectl.ok("label", "ns", "any", "pod-security.kubernetes.io/enforce=privileged")
        assert kubectl.run("create", "-f", "-", input=pod_yaml("priv", "any", net_raw=True)).returncode == 0
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert ("Pod Security: a namespace without pod-security.kubernetes.io labels enforces baseline:latest, audits "
            "privileged:latest, warns privileged:latest\n") in out


@pytest.mark.slow
def test_local_up_refuses_a_bad_admission_configuration(tmp_path: Path):
    config = tmp_path / "admission.yaml"
    config.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
                      "- name: PodSecurity\n  configuration:\n"
                      "    apiVersion: pod-security.admission.config.k8s.io/v1\n"
                      "    kind: PodSecurityConfiguration\n    defaults: {enforce: strict}\n")
    proc = subprocess.run([sys.executable, "-m", "mxjob_controller", "local", "up", "--kubelet", "none",
                           "--no-controller", "--no-crds", "--port", "0", "--kubeconfig-out",
                           str(tmp_path / "kubeconfig"), "--admission-control-config-file", str(config)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert ('Invalid value for --admission-control-config-file: PodSecurity invalid: defaults.enforce: Invalid value: '
            '"strict": must be one of privileged, baseline, restricted') in proc.stderr
    assert not (tmp_path / "kubeconfig").exists()
