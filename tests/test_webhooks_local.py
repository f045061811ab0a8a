"""The webhooks as a user meets them on the local cluster (``local up`` wires them by default), with real kubectl:
each invalid job refused at ``kubectl create`` with every field error; valid jobs unaffected; with the webhook down,
``failurePolicy: Fail`` refuses with kube's message and ``Ignore`` lets the job through to the controller, which marks
it Failed; the seed's MXJob ``v1alpha1`` created, read back as ``v1alpha1`` and as ``v1``, reconciled to the same
pods and env as its ``v1`` equivalent, and round-tripping without loss."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.local.cluster import ClusterOptions, LocalCluster
from mxjob_controller.mxnet import v1alpha1
from tests.support import Kube, Kubectl, wait_for

ROOT = Path(__file__).resolve().parent.parent
INVALID = Path(__file__).parent / "data" / "invalid-jobs.yaml"
SEED = ROOT / "examples" / "v1alpha1" / "mx_job_dist.yaml"
VALIDATOR = "validator.mxjob.training-operator.kubeflow.org"
MXJOBS = "/apis/kubeflow.org/v1/namespaces/default/mxjobs"
ALPHA_MXJOBS = "/apis/kubeflow.org/v1alpha1/namespaces/default/mxjobs"
CONFIGURATION = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/mxjob-controller-validator"


class Cluster:
    def __init__(self, tmp_path: Path, **options: Any) -> None:
        self.local = LocalCluster(ClusterOptions(kubelet=False, threadiness=2, **options)).start()
        kubeconfig = self.local.server.write_kubeconfig(tmp_path / "kubeconfig")
        self.kubectl = Kubectl(kubeconfig, tmp_path / "kube-cache")
        self.kube = Kube.of(self.local.server)

    def close(self) -> None:
        self.kube.close()
        assert self.local.stop(20.0)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path)
    try:
        yield c
    finally:
        c.close()


def invalid_jobs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(INVALID.read_text()) if d]


def test_every_invalid_job_is_refused_at_kubectl_create_with_every_field_error(cluster: Cluster, tmp_path: Path):
    for job in invalid_jobs():
        path = tmp_path / f"{job['metadata']['name']}.yaml"
        path.write_text(yaml.safe_dump(job))
        done = cluster.kubectl.run("create", "-f", str(path))
        assert done.returncode == 1, (job["metadata"]["name"], done.stdout)
        # kubectl prints a 422 from its causes, as for any Invalid (the webhook's name is in the message).
        assert done.stderr.startswith(f'The {job["kind"]} "{job["metadata"]["name"]}" is invalid: '), done.stderr
        for field in job["metadata"]["annotations"]["expect"].split(","):
            assert f"{field}: " in done.stderr, (field, done.stderr)
        webhook = {"MXJob": VALIDATOR, "TFJob": "validator.tfjob.training-operator.kubeflow.org",
                   "GenericJob": "validator.genericjob.batch.tensorstack.dev"}[job["kind"]]
        reply = cluster.kube.post(f"/apis/{job['apiVersion']}/namespaces/default/{job['kind'].lower()}s", job)
        group = job["apiVersion"].rpartition("/")[0]
        assert (reply.status, reply.body["reason"]) == (422, "Invalid")
        assert reply.body["message"].startswith(f'admission webhook "{webhook}" denied the request: '
                                                f'{job["kind"]}.{group} "{job["metadata"]["name"]}" is invalid: ')
    assert cluster.kubectl.ok("get", "mxjobs,tfjobs,genericjobs", "-o", "name") == "", "nothing was stored"


def test_valid_jobs_are_unaffected(cluster: Cluster):
    for example in ("mxjob-dist-train.yaml", "tensorflow/tfjob-dist.yaml", "generic/rendezvous.yaml",
                    "v1alpha1/mx_job_dist.yaml"):
        cluster.kubectl.ok("create", "-f", str(ROOT / "examples" / example))
    assert sorted(cluster.kubectl.ok("get", "mxjobs,tfjobs,gj", "-o", "name").split()) == [
        "genericjob.batch.tensorstack.dev/rendezvous", "mxjob.kubeflow.org/example-dist-job",
        "mxjob.kubeflow.org/mxnet-dist", "tfjob.kubeflow.org/tf-dist"]
    # The local cluster gives a v1alpha1 job's default ports (9091) ports of its own, as a v1 job's.
    alpha = cluster.kubectl.json("get", "mxjobs.v1alpha1.kubeflow.org", "example-dist-job")["spec"]["replicaSpecs"]
    ports = [entry["PsRootPort"] for entry in alpha]
    assert ports[0] == 9000 and all(20000 <= p <= 29999 for p in ports[1:]), ports
    as_v1 = cluster.kubectl.json("get", "mxjob", "example-dist-job")["spec"]["mxReplicaSpecs"]
    assert [spec["template"]["spec"]["containers"][0]["ports"] for spec in as_v1.values()] == [
        [{"name": "mxjob-port", "containerPort": p}] for p in ports]


def test_with_the_webhook_down_fail_refuses_with_kube_s_message_and_ignore_lets_the_controller_judge(cluster: Cluster):
    [bad] = [j for j in invalid_jobs() if j["metadata"]["name"] == "no-image"]
    assert cluster.local.webhooks.stop(5.0)
    reply = cluster.kube.post(MXJOBS, bad)
    assert reply.status == 500, reply.body
    assert reply.body["reason"] == "InternalError"
    assert reply.body["message"].startswith(
        f'Internal error occurred: failed calling webhook "{VALIDATOR}": failed to call webhook: Post "'
        f'{cluster.local.webhooks.url}/validate-kubeflow-org-v1-mxjob?timeout=10s": '), reply.body["message"]
    configuration = cluster.kube.get(CONFIGURATION).body
    for webhook in configuration["webhooks"]:
        webhook["failurePolicy"] = "Ignore"
    assert cluster.kube.put(CONFIGURATION, configuration).ok
    assert cluster.kube.post(MXJOBS, bad).status == 201, "let through: the webhook is down and may be ignored"

    def failed() -> dict[str, Any] | None:
        conditions = (cluster.kube.get(f"{MXJOBS}/no-image").body.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == "Failed" and c["status"] == "True"), None)
    condition = wait_for(failed, timeout=30, what="the controller marks the job Failed")
    assert condition["reason"] == "MXJobFailedValidation"
    assert "spec.mxReplicaSpecs.Worker.template.spec.containers[0].image: Required value" in condition["message"]


def comparable(pod: dict[str, Any]) -> dict[str, Any]:
    """A pod's spec as the controller made it, with the job's name replaced: what must be the same for a job
    submitted as v1alpha1 and its v1 equivalent."""
    spec = copy.deepcopy(pod["spec"])
    return json.loads(json.dumps(spec).replace("example-dist-job", "JOB").replace("v1-equivalent", "JOB"))


def test_the_seed_v1alpha1_job_is_served_both_ways_reconciled_as_its_v1_equivalent_and_round_trips(
        tmp_path: Path):
    cluster = Cluster(tmp_path, job_ports=None)   # the jobs as written: no local ports (no kubelet runs them)
    try:
        seed_job_round_trip(cluster)
    finally:
        cluster.close()


def seed_job_round_trip(cluster: Cluster) -> None:
    seed = yaml.safe_load(SEED.read_text())
    cluster.kubectl.ok("create", "-f", str(SEED))
    as_alpha = cluster.kubectl.json("get", "mxjobs.v1alpha1.kubeflow.org", "example-dist-job")
    assert as_alpha["apiVersion"] == "kubeflow.org/v1alpha1"
    assert as_alpha["spec"] == seed["spec"], "read back as written"
    assert not set(as_alpha["metadata"].get("annotations") or {}) & set(v1alpha1.MANAGED_ANNOTATIONS)
    as_v1 = cluster.kubectl.json("get", "mxjobs.v1.kubeflow.org", "example-dist-job")
    assert list(as_v1["spec"]["mxReplicaSpecs"]) == ["Scheduler", "Server", "Worker"]
    assert as_v1["spec"]["mxReplicaSpecs"]["Scheduler"]["restartPolicy"] == "OnFailure"
    assert as_v1["spec"]["jobMode"] == "MXTrain"

    equivalent = v1alpha1.to_v1(seed)
    equivalent["metadata"] = {"name": "v1-equivalent", "namespace": "default"}
    assert cluster.kube.post(MXJOBS, equivalent).status == 201

    def pods(job: str) -> dict[str, dict[str, Any]] | None:
        found = cluster.kube.get("/api/v1/namespaces/default/pods",
                                 labelSelector=f"training.kubeflow.org/job-name={job}").body["items"]
        return {p["metadata"]["name"].replace(job, "JOB"): p for p in found} if len(found) == 3 else None
    alpha_pods = wait_for(lambda: pods("example-dist-job"), timeout=30, what="the v1alpha1 job's 3 pods")
    v1_pods = wait_for(lambda: pods("v1-equivalent"), timeout=30, what="its v1 equivalent's 3 pods")
    assert sorted(alpha_pods) == ["JOB-scheduler-0", "JOB-server-0", "JOB-worker-0"], "v1 names, no RuntimeId"
    for name, pod in alpha_pods.items():
        assert comparable(pod) == comparable(v1_pods[name]), name
    env = {e["name"]: e.get("value") for e in alpha_pods["JOB-worker-0"]["spec"]["containers"][0]["env"]}
    assert (env["DMLC_PS_ROOT_PORT"], env["DMLC_PS_ROOT_URI"]) == ("9000", "example-dist-job-scheduler-0")

    status = wait_for(lambda: s if (s := cluster.kubectl.json("get", "mxjobs.v1alpha1.kubeflow.org",
                                                               "example-dist-job").get("status") or {}).get("state")
                      else None, timeout=30, what="a v1alpha1 status")
    assert status["phase"] in ("Creating", "Running") and status["state"] == "Running"
    # Round trip: what is read as v1alpha1, written back unchanged as v1alpha1, is still the same v1 spec.
    stored_status = cluster.kubectl.json("get", "mxjobs.v1.kubeflow.org", "example-dist-job")["status"]
    current = cluster.kubectl.json("get", "mxjobs.v1alpha1.kubeflow.org", "example-dist-job")
    current["metadata"].setdefault("labels", {})["team"] = "a"
    assert cluster.kube.put(f"{ALPHA_MXJOBS}/example-dist-job", current).ok
    again = cluster.kubectl.json("get", "mxjobs.v1.kubeflow.org", "example-dist-job")
    assert again["spec"] == as_v1["spec"] and again["metadata"]["labels"] == {"team": "a"}
    assert [c["type"] for c in again["status"]["conditions"]] == [c["type"] for c in stored_status["conditions"]], \
        "an update through v1alpha1 keeps the v1 status (else a finished job would run again)"
    assert cluster.kubectl.json("get", "mxjobs.v1alpha1.kubeflow.org", "example-dist-job")["spec"] == seed["spec"]
    listed = cluster.kubectl.ok("get", "mxjobs.v1alpha1.kubeflow.org", "-o", "name").split()
    assert listed == cluster.kubectl.ok("get", "mxjobs", "-o", "name").split()


def test_an_unreadable_v1alpha1_annotation_does_not_fail_the_v1alpha1_list(cluster: Cluster):
    """Issue 33: ``kubectl annotate`` (the validating webhook judges specs, not annotations) could plant an extra
    the conversion cannot read, and every ``kubectl get mxjobs.v1alpha1.kubeflow.org -A`` failed over that one job.
    The conversion ignores it: the list answers, and the job reads as it would without it."""
    cluster.kubectl.ok("create", "-f", str(SEED))
    cluster.kubectl.ok("annotate", "--overwrite", "mxjobs.v1.kubeflow.org", "example-dist-job",
                       f'{v1alpha1.V1ALPHA1_EXTRA_ANNOTATION}={{"replicaSpecs": 5}}')
    listed = cluster.kubectl.run("get", "mxjobs.v1alpha1.kubeflow.org", "-A", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["mxjob.kubeflow.org/example-dist-job"]
    after = cluster.kubectl.json("get", "mxjobs.v1alpha1.kubeflow.org", "example-dist-job")
    stored = cluster.kubectl.json("get", "mxjobs.v1.kubeflow.org", "example-dist-job")
    assert stored["metadata"]["annotations"].pop(v1alpha1.V1ALPHA1_EXTRA_ANNOTATION) == '{"replicaSpecs": 5}'
    assert after["spec"] == v1alpha1.to_v1alpha1(stored)["spec"]
    assert [e["mxReplicaType"] for e in after["spec"]["replicaSpecs"]] == ["SCHEDULER", "SERVER", "WORKER"]
