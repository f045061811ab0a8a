"""TFJobs through the real controller, end to end over HTTP against the embedded API server (a stand-in kubelet
moves the pods): the vendor's 2019 bodies (run policy inline, key ``Ps``, a template ``restartPolicy``) and the
same jobs in training-operator 1.9's shape are created, reconciled and finished with their TTL and backoff limit
honoured; children named and labelled as 1.9 does, with TF_CONFIG; the chief decides; a failed PS fails the job;
events and metrics say ``framework="tensorflow"``; and an MXJob and a TFJob of one name, reconciled side by side on
one metrics registry, never touch each other's pods."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from mxjob_controller.local.apiserver.server import APIServer
from mxjob_controller.mxnet.controller import MXJobController
from tests.reconciler_support import DEADLINE, jobs_path, metric, mxjob, wait_metric
from tests.reconciler_time import FakeTime
from tests.support import Kube, wait_for
from tests.tensorflow_support import CLOUD_NS, RESPONSES, TFHarness, create_body, tfjob, update_body

NS = "default"
JOB = "tfjob-test"   # the vendor's


@pytest.fixture
def tf(apiserver: APIServer, kube: Kube, tmp_path: Path) -> Iterator[TFHarness]:
    with TFHarness(apiserver, kube, tmp_path) as harness:
        yield harness


def create_namespace(tf: TFHarness, name: str) -> None:
    assert tf.kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                               "metadata": {"name": name}}).status == 201


def nested(body: dict[str, Any]) -> dict[str, Any]:
    """The job in training-operator 1.9's shape: the inline run policy under ``spec.runPolicy``."""
    out = copy.deepcopy(body)
    out["spec"]["runPolicy"] = {k: out["spec"].pop(k) for k in ("backoffLimit", "ttlSecondsAfterFinished")
                                if k in out["spec"]}
    return out


def put_vendor_update(tf: TFHarness, shape: str) -> dict[str, Any]:
    """The vendor's PUT (``ttlSecondsAfterFinished: 1000``) onto the job created from its listing, in ``shape``."""
    current = tf.job(CLOUD_NS, JOB)
    body = update_body() if shape == "2019" else nested(update_body())
    body["metadata"].update(uid=current["metadata"]["uid"], resourceVersion=current["metadata"]["resourceVersion"])
    body.pop("status")
    reply = tf.kube.put(jobs_path(CLOUD_NS, JOB, "tfjobs"), body)
    assert reply.status == 200, reply.body
    return reply.body


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    [container] = pod["spec"]["containers"]
    return {e["name"]: e["value"] for e in container.get("env") or ()}


SHAPES = ["2019", "1.9"]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_vendor_job_runs_succeeds_and_is_deleted_by_its_ttl(tf: TFHarness, shape: str) -> None:
    create_namespace(tf, CLOUD_NS)
    body = create_body() if shape == "2019" else nested(create_body())
    tf.create_job(body)
    stored = put_vendor_update(tf, shape)
    assert stored["spec"]["tfReplicaSpecs"].keys() == {"Ps", "Worker"}, "the user's keys are never rewritten"
    if shape == "2019":
        assert (stored["spec"]["backoffLimit"], stored["spec"]["ttlSecondsAfterFinished"]) == (6, 1000), "not pruned"
    ft = FakeTime()
    controller = tf.start_tf(**ft.options())
    uid = stored["metadata"]["uid"]

    pods = tf.wait_children(CLOUD_NS, JOB, 2)
    created = tf.wait_condition(CLOUD_NS, JOB, "Created")
    assert (created["reason"], created["message"]) == ("TFJobCreated", "TFJob tfjob-test is created.")
    assert "lastUpdateTime" in created and "lastTransitionTime" in created
    assert [p["metadata"]["name"] for p in pods] == ["tfjob-test-ps-0", "tfjob-test-worker-0"]
    for pod in pods:
        index_type = pod["metadata"]["name"].split("-")[-2]
        labels = {"training.kubeflow.org/operator-name": "tfjob-controller",
                  "training.kubeflow.org/job-name": JOB, "training.kubeflow.org/replica-type": index_type,
                  "training.kubeflow.org/replica-index": "0"}
        if index_type == "worker":
            labels["training.kubeflow.org/job-role"] = "master"   # no chief: worker 0
        assert pod["metadata"]["labels"] == labels
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
        assert pod["spec"]["restartPolicy"] == "Never", "the template's OnFailure is overwritten"
        assert pod["spec"]["imagePullSecrets"] == [{"name": "imagepull-secret"}]
        assert json.loads(env_of(pod)["TF_CONFIG"]) == {
            "cluster": {"ps": ["tfjob-test-ps-0.kube-test.svc:2222"],
                        "worker": ["tfjob-test-worker-0.kube-test.svc:2222"]},
            "task": {"type": index_type, "index": 0}, "environment": "cloud"}
    services = tf.services(CLOUD_NS, JOB)
    assert [(s["spec"]["clusterIP"], [(p["name"], p["port"]) for p in s["spec"]["ports"]]) for s in services] == [
        ("None", [("tfjob-port", 2222)])] * 2

    tf.run_all(CLOUD_NS, JOB)
    running = tf.wait_condition(CLOUD_NS, JOB, "Running")
    assert (running["reason"], running["message"]) == ("TFJobRunning", "TFJob tfjob-test is running.")
    wait_for(lambda: tf.job(CLOUD_NS, JOB)["status"].get("replicaStatuses") == RESPONSES["get"]["status"][
        "replicaStatuses"], timeout=DEADLINE, what="the counts the vendor showed: PS 1 active, Worker 1 active")

    tf.kubelet.succeed(CLOUD_NS, "tfjob-test-worker-0")
    succeeded = tf.wait_condition(CLOUD_NS, JOB, "Succeeded")
    assert succeeded["reason"] == "TFJobSucceeded"
    status = tf.job(CLOUD_NS, JOB)["status"]
    assert status["completionTime"] and status["replicaStatuses"] == {"PS": {"succeeded": 1},
                                                                      "Worker": {"succeeded": 1}}
    wait_for(lambda: [p["metadata"]["name"] for p in tf.pods(CLOUD_NS, JOB)] == ["tfjob-test-worker-0"],
             timeout=DEADLINE, what="the running PS pod reaped (cleanPodPolicy Running, the default)")

    ft.step(999)
    tf.settle(controller, f"{CLOUD_NS}/{JOB}")
    assert tf.kube.get(jobs_path(CLOUD_NS, JOB, "tfjobs")).ok, "kept until its TTL"
    ft.step(1)
    wait_for(lambda: tf.kube.get(jobs_path(CLOUD_NS, JOB, "tfjobs")).status == 404, timeout=DEADLINE,
             what="the job deleted by its TTL of 1000 s")
    wait_metric(controller.registry, "deleted", namespace=CLOUD_NS, framework="tensorflow")   # once it returned

    assert controller.recorder.flush(DEADLINE)
    warnings = tf.events(CLOUD_NS, uid, "SetPodTemplateRestartPolicy")
    assert [(e["type"], e["source"]["component"]) for e in warnings] == [("Warning", "tfjob-controller")]
    assert [e["message"] for e in tf.events(CLOUD_NS, uid, "TFJobSucceeded")] == [
        "TFJob tfjob-test is successfully completed."]
    for what in ("created", "successful", "deleted"):
        assert metric(controller.registry, what, CLOUD_NS, framework="tensorflow") == 1, what
    assert metric(controller.registry, "created", CLOUD_NS, framework="mxnet") == 0


@pytest.mark.parametrize("shape", SHAPES)
def test_the_vendor_backoff_limit_of_6_fails_the_job_at_the_sixth_restart(tf: TFHarness, shape: str) -> None:
    body = create_body()
    body["metadata"]["namespace"] = NS
    body["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] = "OnFailure"
    tf.create_job(body if shape == "2019" else nested(body))
    controller = tf.start_tf()
    tf.wait_children(NS, JOB, 2)
    tf.run_all(NS, JOB)
    tf.wait_condition(NS, JOB, "Running")
    tf.kubelet.run(NS, "tfjob-test-worker-0", restart_count=5)
    wait_for(lambda: tf.job(NS, JOB)["status"].get("restartCount") == 5, timeout=DEADLINE, what="5 restarts")
    tf.settle(controller, f"{NS}/{JOB}")
    assert "Failed" not in tf.conditions(NS, JOB), "5 restarts are within the limit of 6"
    tf.kubelet.run(NS, "tfjob-test-worker-0", restart_count=6)
    failed = tf.wait_condition(NS, JOB, "Failed")
    assert (failed["reason"], failed["message"]) == (
        "TFJobFailed", "Job tfjob-test has failed because it has reached the specified backoff limit")
    # Counted by the reconcile that wrote Failed, just after the write the test saw: polled, not raced.
    wait_for(lambda: metric(controller.registry, "failed", NS, framework="tensorflow") == 1, timeout=DEADLINE,
             what="the failed-jobs metric")


def test_the_chief_decides_and_running_replicas_are_reaped(tf: TFHarness) -> None:
    controller = tf.start_tf()
    tf.create_job(tfjob("c", chief=1, ps=1, worker=2))
    pods = {p["metadata"]["name"]: p for p in tf.wait_children(NS, "c", 4)}
    roles = {name for name, p in pods.items() if p["metadata"]["labels"].get("training.kubeflow.org/job-role")}
    assert roles == {"c-chief-0"}, "job-role=master on the chief only"
    assert json.loads(env_of(pods["c-worker-1"])["TF_CONFIG"])["cluster"]["chief"] == ["c-chief-0.default.svc:2222"]
    tf.run_all(NS, "c")
    tf.wait_condition(NS, "c", "Running")
    tf.kubelet.succeed(NS, "c-worker-0")
    tf.settle(controller, f"{NS}/c")
    assert "Succeeded" not in tf.conditions(NS, "c"), "worker 0 does not decide when there is a chief"
    tf.kubelet.succeed(NS, "c-chief-0")
    tf.wait_condition(NS, "c", "Succeeded")
    wait_for(lambda: sorted(p["metadata"]["name"] for p in tf.pods(NS, "c")) == ["c-chief-0", "c-worker-0"],
             timeout=DEADLINE, what="the running PS and worker deleted")
    wait_metric(controller.registry, "successful", namespace=NS, framework="tensorflow")
    assert metric(controller.registry, "successful", NS, framework="tensorflow") == 1


def test_a_failed_parameter_server_fails_the_job(tf: TFHarness) -> None:
    controller = tf.start_tf()
    tf.create_job(tfjob("p", ps=1, worker=2))
    tf.wait_children(NS, "p", 3)
    tf.run_all(NS, "p")
    tf.wait_condition(NS, "p", "Running")
    tf.kubelet.fail(NS, "p-ps-0", exit_code=2)
    failed = tf.wait_condition(NS, "p", "Failed")
    assert (failed["reason"], failed["message"]) == (
        "TFJobFailed", "TFJob p has failed because 1 PS replica(s) failed: p-ps-0 exited with code 2 (Error).")
    uid = tf.job(NS, "p")["metadata"]["uid"]
    tf.wait_events(NS, uid, "TFJobFailed")
    tf.wait_events(NS, uid, "ExitedWithCode")
    assert controller.recorder.flush(DEADLINE)
    assert [e["type"] for e in tf.events(NS, uid, "TFJobFailed")] == ["Warning"]
    assert [e["message"] for e in tf.events(NS, uid, "ExitedWithCode")] == ["Pod: default.p-ps-0 exited with code 2"]


def test_an_invalid_tfjob_fails_with_every_field_error_and_gets_no_pod(tf: TFHarness) -> None:
    controller = tf.start_tf()
    tf.create_job(tfjob("bad", chief=1, master=1, ps=1))
    failed = tf.wait_condition(NS, "bad", "Failed")
    assert failed["reason"] == "TFJobFailedValidation"
    assert "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role" in failed["message"]
    tf.settle(controller, f"{NS}/bad")
    assert tf.pods(NS, "bad") == [] and tf.services(NS, "bad") == []


def test_an_mxjob_and_a_tfjob_of_one_name_never_touch_each_others_pods(tf: TFHarness) -> None:
    """Both controllers on one registry (one process): the job counters are told apart by ``framework``, and each
    controller's pods carry its operator name; the TFJob's pods hold names the MXJob wants, and stay the TFJob's."""
    registry = CollectorRegistry()
    tf_controller = tf.start_tf(registry=registry)
    tf.create_job(tfjob("same", worker=2))
    tf_pods = {p["metadata"]["name"]: p for p in tf.wait_children(NS, "same", 2)}
    mx_controller = tf.start(registry=registry)
    assert isinstance(mx_controller, MXJobController)
    reply = tf.kube.post(jobs_path(NS), mxjob("same", scheduler=0, server=0, worker=1))
    assert reply.status == 201, reply.body
    mx_uid = reply.body["metadata"]["uid"]

    def mx_created_message() -> str:
        job = tf.kube.get(jobs_path(NS, "same")).body
        return next((c["message"] for c in (job.get("status") or {}).get("conditions") or ()
                     if c["type"] == "Created"), "")
    wait_for(lambda: "Cannot create" in mx_created_message(), timeout=DEADLINE,
             what="the MXJob's Created message naming the names held by another object")
    assert 'pod "same-worker-0"' in mx_created_message()
    for name, before in tf_pods.items():
        pod = tf.kubelet.pod(NS, name)
        assert pod["metadata"]["uid"] == before["metadata"]["uid"]
        assert pod["metadata"]["labels"] == before["metadata"]["labels"], "not adopted or relabelled"
        assert pod["metadata"]["ownerReferences"][0]["kind"] == "TFJob"
    mx_pods = tf.kubelet.pods(NS, "training.kubeflow.org/operator-name=mxjob-controller")
    assert mx_pods == [], "the MXJob's only pod name is the TFJob's"
    wait_metric(registry, "created", namespace=NS, framework="mxnet")   # counted after the write the test saw
    assert metric(registry, "created", NS, framework="tensorflow") == 1
    assert metric(registry, "created", NS, framework="mxnet") == 1
    assert tf_controller.metrics.framework == "tensorflow" and mx_controller.metrics.framework == "mxnet"
    assert registry.get_sample_value("controller_runtime_active_workers", {"controller": "tfjob-controller"}) == 0
    assert mx_uid != tf.job(NS, "same")["metadata"]["uid"]
