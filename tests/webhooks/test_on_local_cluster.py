"""The webhooks as a user meets them on the local cluster (``local up`` wires them by default), with real kubectl:
each invalid job refused at ``kubectl create`` with every field error; valid jobs unaffected; with the webhook down,
``failurePolicy: Fail`` refuses with kube's message and ``Ignore`` lets the job through to the controller, which marks
it Failed; every job stored with its defaults (``kubectl get -o yaml`` shows what the controller does), the 2019
shape kept, and without the webhooks stored as written but run the same; the seed's MXJob ``v1alpha1`` created,
read back as ``v1alpha1`` and as ``v1``, reconciled to the same pods and env as its ``v1`` equivalent, and
round-tripping without loss."""

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
from tests.local_support import local_cluster
from tests.support import Kube, Kubectl, wait_for

# Each test starts the embedded API server or a process of its own (no server fixture).
pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
INVALID = Path(__file__).resolve().parents[1] / "data" / "invalid-jobs.yaml"
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
    # No kubelet runs them, so the local cluster gives no job ports of its own (only `--kubelet process` does):
    # the v1alpha1 job reads back with the ports it was written with, its v1 form has only the SCHEDULER's.
    seed = yaml.safe_load(SEED.read_text())
    alpha = cluster.kubectl.json("get", "mxjobs.v1alpha1.kubeflow.org", "example-dist-job")
    assert alpha["spec"]["replicaSpecs"] == seed["spec"]["replicaSpecs"]
    assert not set(alpha["metadata"].get("annotations") or {}) - {"kubectl.kubernetes.io/last-applied-configuration"}
    as_v1 = cluster.kubectl.json("get", "mxjob", "example-dist-job")["spec"]["mxReplicaSpecs"]
    assert [spec["template"]["spec"]["containers"][0].get("ports") for spec in as_v1.values()] == [
        [{"name": "mxjob-port", "containerPort": 9000}], None, None]


def replica_defaults(specs: dict[str, Any], container: str, port_name: str) -> list[tuple[Any, ...]]:
    """Per replica: (replicas, restartPolicy, the framework container's port names)."""
    out = []
    for spec in specs.values():
        [main] = [c for c in spec["template"]["spec"]["containers"] if c["name"] == container]
        out.append((spec.get("replicas"), spec.get("restartPolicy"),
                    [p["name"] for p in main.get("ports") or () if p["name"] == port_name]))
    return out


def without_defaults(example: str, tmp_path: Path) -> tuple[Path, str]:
    """An example with every defaulted field left out (replicas, restartPolicy, clean-up policies; a GenericJob's
    rules, which name ranks): its path and name."""
    job = yaml.safe_load((ROOT / "examples" / example).read_text())
    spec = job["spec"]
    for key in ("cleanUpPolicy", "cleanPodPolicy", "runPolicy", "successRules", "failureRules"):
        spec.pop(key, None)
    replicas = spec.get("replicaSpecs") or list(spec.get("mxReplicaSpecs", spec.get("tfReplicaSpecs", {})).values())
    for replica in replicas:
        replica.pop("replicas", None), replica.pop("restartPolicy", None)
    path = tmp_path / example.replace("/", "-")
    path.write_text(yaml.safe_dump(job))
    return path, job["metadata"]["name"]


def test_jobs_read_back_with_the_defaults_the_controller_applies(cluster: Cluster, tmp_path: Path):
    names = {}
    for kind, example in (("mxjob", "mxjob-single-worker.yaml"), ("tfjob", "tensorflow/tfjob-dist.yaml"),
                          ("gj", "generic/rendezvous.yaml")):
        path, names[kind] = without_defaults(example, tmp_path)
        cluster.kubectl.ok("create", "-f", str(path))
    cluster.kubectl.ok("create", "-f", str(SEED))
    mx = cluster.kubectl.json("get", "mxjob", names["mxjob"])["spec"]
    assert mx["runPolicy"] == {"cleanPodPolicy": "All"}
    assert replica_defaults(mx["mxReplicaSpecs"], "mxnet", "mxjob-port") == [
        (1, "Never", ["mxjob-port"])] * len(mx["mxReplicaSpecs"])
    tf = cluster.kubectl.json("get", "tfjob", names["tfjob"])["spec"]
    assert (tf["runPolicy"], tf["successPolicy"]) == ({"cleanPodPolicy": "Running"}, "")
    assert replica_defaults(tf["tfReplicaSpecs"], "tensorflow", "tfjob-port") == [
        (1, "Never", ["tfjob-port"])] * len(tf["tfReplicaSpecs"])
    gj = cluster.kubectl.json("get", "gj", names["gj"])["spec"]
    assert gj["cleanUpPolicy"] == "None"
    assert [(r["replicas"], r["restartPolicy"]) for r in gj["replicaSpecs"]] == [
        (1, {"policy": "OnFailure", "limit": 0})] * len(gj["replicaSpecs"])
    alpha_as_v1 = cluster.kubectl.json("get", "mxjob", "example-dist-job")["spec"]
    assert alpha_as_v1["runPolicy"]["cleanPodPolicy"] == "All", "written by its conversion"


def test_the_2019_shape_keeps_its_inline_run_policy_and_can_still_be_patched(cluster: Cluster):
    cluster.kubectl.ok("create", "namespace", "kube-test")
    cluster.kubectl.ok("create", "-n", "kube-test", "-f", str(ROOT / "examples" / "cloud-api" / "create-mxjob.json"))
    spec = cluster.kubectl.json("get", "-n", "kube-test", "mxjob", "mxnet-job")["spec"]
    assert (spec["cleanPodPolicy"], spec["runPolicy"]) == ("Running", {})
    cluster.kubectl.ok("patch", "-n", "kube-test", "mxjob", "mxnet-job", "--type", "merge",
                       "-p", '{"spec": {"cleanPodPolicy": "All"}}')
    spec = cluster.kubectl.json("get", "-n", "kube-test", "mxjob", "mxnet-job")["spec"]
    assert (spec["cleanPodPolicy"], spec["runPolicy"]) == ("All", {})


def test_without_the_webhooks_a_job_is_stored_as_written_and_run_with_the_same_defaults(tmp_path: Path):
    cluster = Cluster(tmp_path, webhooks=False, job_ports=None)
    try:
        job = yaml.safe_load((ROOT / "examples" / "mxjob-single-worker.yaml").read_text())
        for spec in job["spec"]["mxReplicaSpecs"].values():
            spec.pop("replicas", None), spec.pop("restartPolicy", None)
        assert cluster.kube.post(MXJOBS, job).status == 201
        stored = cluster.kube.get(f"{MXJOBS}/{job['metadata']['name']}").body["spec"]
        assert "runPolicy" not in stored and stored["mxReplicaSpecs"] == job["spec"]["mxReplicaSpecs"]
        pods = wait_for(lambda: cluster.kube.get("/api/v1/namespaces/default/pods").body["items"], timeout=30,
                        what="the controller creates the pod")
        [pod] = pods
        assert pod["spec"]["restartPolicy"] == "Never"
        [main] = [c for c in pod["spec"]["containers"] if c["name"] == "mxnet"]
        assert {"name": "mxjob-port", "containerPort": 9091} in [
            {k: p[k] for k in ("name", "containerPort")} for p in main["ports"]]
    finally:
        cluster.close()


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
    cluster = Cluster(tmp_path)   # the jobs as written: no local ports (no kubelet runs them)
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


LOCAL = ROOT / "examples" / "v1alpha1" / "mx_job_local.yaml"


def test_a_local_v1alpha1_job_runs_one_worker_to_success_and_reads_back_as_local_and_two_workers_are_refused(
        tmp_path: Path):
    """The old spec's ``jobMode: local`` (seed ``mx_job.go``, ``Validate()``): WORKER replicas only, at most one.
    Accepted, it runs as one process (one pod, no scheduler or server) and succeeds; read back as v1alpha1 it is
    ``local`` as written; as v1 a job with only a Worker and no jobMode. Two workers are refused at create."""
    with local_cluster(tmp_path, controller=True) as (_cluster, kube, kubectl):
        written = yaml.safe_load(LOCAL.read_text())
        kubectl.ok("create", "-f", str(LOCAL))

        def finished() -> dict[str, Any] | None:
            status = kube.get(f"{MXJOBS}/local-job").body.get("status") or {}
            done = [c for c in status.get("conditions") or [] if c["type"] in ("Succeeded", "Failed")
                    and c["status"] == "True"]
            return done[0] if done else None
        assert wait_for(finished, timeout=60, what="the local job finished")["type"] == "Succeeded"
        pods = kube.get("/api/v1/namespaces/default/pods",
                        labelSelector="training.kubeflow.org/job-name=local-job").body["items"]
        assert [(p["metadata"]["name"], p["status"]["phase"]) for p in pods] == [("local-job-worker-0", "Succeeded")]
        assert kubectl.ok("logs", "local-job-worker-0") == "worker 1 alone\n"

        as_alpha = yaml.safe_load(kubectl.ok("get", "mxjobs.v1alpha1.kubeflow.org", "local-job", "-o", "yaml"))
        assert as_alpha["spec"] == written["spec"] and as_alpha["spec"]["jobMode"] == "local"
        assert not set(as_alpha["metadata"].get("annotations") or {}) & set(v1alpha1.MANAGED_ANNOTATIONS)
        assert {k: as_alpha["status"][k] for k in ("phase", "state", "replicaStatuses")} == {
            "phase": "Done", "state": "Succeeded", "replicaStatuses": [
                {"mx_replica_type": "WORKER", "state": "Succeeded", "ReplicasStates": {"Succeeded": 1}}]}
        as_v1 = kubectl.json("get", "mxjobs.v1.kubeflow.org", "local-job")["spec"]
        assert "jobMode" not in as_v1 and list(as_v1["mxReplicaSpecs"]) == ["Worker"]

        two = copy.deepcopy(written)
        two["metadata"]["name"] = "two-workers"
        two["spec"]["replicaSpecs"][0]["replicas"] = 2
        done = kubectl.run("create", "-f", "-", input=yaml.safe_dump(two))
        limit = ('spec.replicaSpecs[0].replicas: Invalid value: 2: must be less than or equal to 1 when jobMode is '
                 '"local"')
        assert done.returncode == 1 and limit in done.stderr, done.stderr
        reply = kube.post(ALPHA_MXJOBS, two)
        assert (reply.status, reply.body["reason"]) == (422, "Invalid")
        assert [c["field"] for c in reply.body["details"]["causes"]] == ["spec.replicaSpecs[0].replicas"]
        assert kube.get(f"{MXJOBS}/two-workers").status == 404


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


def test_a_worker_only_mxtrain_job_is_accepted_with_a_warning_and_runs_to_success(tmp_path: Path):
    """Issue 47 (10): training-operator v1.8.1's ``ValidateV1MXJob`` accepts a v1 ``MXTrain`` job with only Workers
    (it checks containers, images, the ``mxnet`` container and at most one Scheduler). Accepted here too, with a
    ``Warning:`` that it runs without parameter servers; it runs locally: two workers, no scheduler or server."""
    job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "workers-only"},
           "spec": {"jobMode": "MXTrain", "runPolicy": {"cleanPodPolicy": "None"}, "mxReplicaSpecs": {"Worker": {
               "replicas": 2, "restartPolicy": "Never", "template": {"spec": {"containers": [{
                   "name": "mxnet", "image": "mxnet/python:1.9.1",
                   "command": ["python3", "-c", "import os; print(os.environ['DMLC_ROLE'], "
                               "os.environ['DMLC_NUM_SERVER'], repr(os.environ['DMLC_PS_ROOT_URI']))"]}]}}}}}}
    warning = ('spec.mxReplicaSpecs: jobMode "MXTrain" without "Scheduler" and "Server" replica specs: the job runs '
               'without parameter servers')
    with local_cluster(tmp_path, controller=True) as (_cluster, kube, kubectl):
        done = kubectl.run("create", "-f", "-", input=yaml.safe_dump(job))
        assert done.returncode == 0, done.stderr
        assert done.stderr == f"Warning: {warning}\n"   # kubectl prints each Warning header so
        assert done.stdout == "mxjob.kubeflow.org/workers-only created\n"

        def finished() -> dict[str, Any] | None:
            status = kube.get(f"{MXJOBS}/workers-only").body.get("status") or {}
            return next((c for c in status.get("conditions") or []
                         if c["type"] in ("Succeeded", "Failed") and c["status"] == "True"), None)
        assert wait_for(finished, timeout=60, what="the worker-only job finished")["type"] == "Succeeded"
        pods = kube.get("/api/v1/namespaces/default/pods",
                        labelSelector="training.kubeflow.org/job-name=workers-only").body["items"]
        assert sorted((p["metadata"]["name"], p["status"]["phase"]) for p in pods) == [
            ("workers-only-worker-0", "Succeeded"), ("workers-only-worker-1", "Succeeded")]
        assert kubectl.ok("logs", "workers-only-worker-1") == "worker 0 ''\n"
        # The same job through the API: the webhook's warning is the answer's Warning header, kube's 299 form (the
        # text quoted as Go's strconv.Quote does).
        again = {**job, "metadata": {"name": "workers-only-2"}}
        reply = kube.post(MXJOBS, again)
        assert reply.status == 201
        assert reply.headers["warning"] == f"299 - {json.dumps(warning)}"
