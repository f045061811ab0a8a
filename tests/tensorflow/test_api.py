"""The TFJob API (pure): defaults, validation naming every bad field, the two shapes of run policy merged field by
field, the status shape, the names and labels the framework gives children, and the generated CRD (structural,
strict-valid, both shapes kept by the schema)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.core.job_vocabulary import ReplicaCounts, replica_labels
from mxjob_controller.frameworks import FRAMEWORKS
from mxjob_controller.kube.k8s_schemas import schema_version
from mxjob_controller.kubeflow_api.crd_schema import structural_problems
from mxjob_controller.tensorflow.api import (
    apply_defaults,
    parse_tfjob,
    tfjob_replica_counts,
    validate_tfjob,
    with_tfjob_replica_counts,
)
from mxjob_controller.tensorflow.crd import tfjob_crd
from mxjob_controller.tensorflow.framework import TensorFlowFramework
from tests.tensorflow_support import ROOT, create_body, replica, tfjob, update_body, view

KUBERNETES_VALIDATE = Path(sys.executable).parent / "kubernetes-validate"


def errors(body: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_tfjob(body)]


# --- the vendor's bodies (2019 shape) and training-operator 1.9's ------------------------------------------

def test_the_vendor_bodies_are_valid_and_read_as_tf_operator_v1_0_meant_them() -> None:
    for body in (create_body(), update_body()):
        assert errors(body) == []
        job = view(body)
        assert list(job.replicas) == ["PS", "Worker"], "Ps is the PS type"
        assert [(r.replicas, r.restart_policy, r.port) for r in job.replicas.values()] == [(1, "Never", 2222)] * 2
        assert job.run_policy.backoff_limit == 6
        assert job.run_policy.clean_pod_policy == "Running"
        assert job.success_policy == "" and not job.enable_dynamic_worker
    assert view(update_body()).run_policy.ttl_seconds_after_finished == 1000
    assert view(create_body()).run_policy.ttl_seconds_after_finished is None


def nested(body: dict[str, Any]) -> dict[str, Any]:
    """The same job in training-operator 1.9's shape: the inline run policy moved under ``spec.runPolicy``."""
    out = copy.deepcopy(body)
    spec = out["spec"]
    spec["runPolicy"] = {k: spec.pop(k) for k in ("backoffLimit", "ttlSecondsAfterFinished") if k in spec}
    return out


def test_both_shapes_read_the_same() -> None:
    assert view(nested(update_body())).run_policy == view(update_body()).run_policy


def test_the_two_places_merge_field_by_field_and_conflicts_name_both() -> None:
    body = tfjob(worker=1, backoffLimit=3, runPolicy={"ttlSecondsAfterFinished": 5, "cleanPodPolicy": "All"})
    policy = view(body).run_policy
    assert (policy.backoff_limit, policy.ttl_seconds_after_finished, policy.clean_pod_policy) == (3, 5, "All")
    body["spec"]["runPolicy"]["backoffLimit"] = 4
    assert errors(body) == ['spec.runPolicy.backoffLimit: Invalid value: 4: conflicts with spec.backoffLimit (3): '
                            'set it in one place, or to the same value in both']
    body["spec"]["runPolicy"]["backoffLimit"] = 3
    assert errors(body) == [], "the same value in both places is fine"


def test_the_clean_pod_policy_defaults_to_running_as_tf_operator_v1_0() -> None:
    """A parameter server never exits: under 1.9's None it would hold its resources after success."""
    assert view(tfjob(ps=1, worker=1)).run_policy.clean_pod_policy == "Running"
    assert view(tfjob(ps=1, worker=1, cleanPodPolicy="None")).run_policy.clean_pod_policy == "None"


# --- defaults -------------------------------------------------------------------------------------------------

def test_defaults_are_applied_to_a_copy_with_canonical_keys() -> None:
    body = {"metadata": {"name": "j"}, "spec": {"tfReplicaSpecs": {
        "ps": replica(None, None), "worker": replica(3, None, ports=[{"name": "tfjob-port", "containerPort": 3333}]),
        "chief": replica(None, "OnFailure"), "evaluator": replica(1, None)}}}
    before = copy.deepcopy(body)
    out = apply_defaults(body)
    assert body == before, "the input is not modified"
    specs = out["spec"]["tfReplicaSpecs"]
    assert list(specs) == ["PS", "Worker", "Chief", "Evaluator"]
    assert (specs["PS"]["replicas"], specs["PS"]["restartPolicy"]) == (1, "Never")
    assert specs["Chief"]["restartPolicy"] == "OnFailure"
    assert specs["PS"]["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "tfjob-port", "containerPort": 2222}]
    assert specs["Worker"]["template"]["spec"]["containers"][0]["ports"] == [
        {"name": "tfjob-port", "containerPort": 3333}], "a user's tfjob-port is kept"
    assert out["spec"]["successPolicy"] == ""


def test_without_a_tensorflow_container_the_port_goes_to_the_first_and_validation_refuses_it() -> None:
    body = tfjob(worker=1)
    body["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"] = [
        {"name": "main", "image": "i"}, {"name": "side", "image": "i"}]
    containers = apply_defaults(body)["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert containers[0]["ports"] == [{"name": "tfjob-port", "containerPort": 2222}] and "ports" not in containers[1]
    assert errors(body) == ['spec.tfReplicaSpecs.Worker.template.spec.containers: Required value: must have a '
                            'container named "tensorflow" (the TensorFlow process)']


# --- validation -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "expected"), [
    ({"metadata": {"name": "j"}, "spec": {}},
     ['spec.tfReplicaSpecs: Required value: must have at least one replica type: "Chief", "Master", "PS", '
      '"Worker", "Evaluator"']),
    ({"metadata": {"name": "j"}, "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1}}}},
     ["spec.tfReplicaSpecs.Worker.template.spec.containers: Required value"]),
    (tfjob("10test", worker=1), ['metadata.name: Invalid value: "10test": a DNS-1035 label must consist of lower '
                                 "case alphanumeric characters or '-', start with an alphabetic character, and end "
                                 "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
                                 "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    (tfjob(chief=1, master=1, worker=1), ["spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or "
                                          "Master role"]),
    (tfjob(chief=2, worker=1), ["spec.tfReplicaSpecs.Chief.replicas: Invalid value: 2: must be 1: a job has exactly "
                                "one Chief"]),
    (tfjob(ps=1, evaluator=1), ['spec.tfReplicaSpecs: Required value: every TFJob needs one of "Chief", "Master", '
                                '"Worker": the job succeeds when they do']),
    (tfjob(worker=1, successPolicy="Some"), ['spec.successPolicy: Unsupported value: "Some": supported values: "", '
                                             '"AllWorkers"']),
    (tfjob(worker=1, enableDynamicWorker="yes"), ['spec.enableDynamicWorker: Invalid value: "yes": must be of '
                                                  'type boolean']),
    (tfjob(worker=1, ttlSecondsAfterFinished=-1), ["spec.ttlSecondsAfterFinished: Invalid value: -1: must be "
                                                   "greater than or equal to 0"]),
    (tfjob(worker=1, runPolicy={"cleanPodPolicy": "Some"}),
     ['spec.runPolicy.cleanPodPolicy: Unsupported value: "Some": supported values: "All", "Running", "None"']),
])
def test_validation_names_every_bad_field(body: dict, expected: list[str]) -> None:
    assert errors(body) == expected


def test_chief_and_master_in_any_case_are_caught_after_folding() -> None:
    """1.9 checked the raw keys, so ``chief`` + ``Master`` passed."""
    body = tfjob(worker=1)
    body["spec"]["tfReplicaSpecs"].update(chief=replica(), Master=replica())
    assert "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role" in errors(body)


def test_unknown_and_duplicate_types_and_every_container_problem_at_once() -> None:
    body = tfjob(worker=1)
    specs = body["spec"]["tfReplicaSpecs"]
    specs["Foo"] = replica()
    specs["worker"] = replica()
    specs["Ps"] = {"replicas": 1, "template": {"spec": {"containers": [{"name": "tensorflow"}, {"name": "x",
                                                                                              "image": ""}]}}}
    assert errors(body) == [
        'spec.tfReplicaSpecs: Unsupported value: "Foo": supported values: "Chief", "Master", "PS", "Worker", '
        '"Evaluator"',
        'spec.tfReplicaSpecs: Duplicate value: "worker": names the same replica type as "Worker" (replica types '
        'are case-insensitive)',
        "spec.tfReplicaSpecs.Ps.template.spec.containers[0].image: Required value",
        "spec.tfReplicaSpecs.Ps.template.spec.containers[1].image: Required value",
    ]


def test_parse_refuses_an_invalid_job_and_leaves_the_input_alone() -> None:
    body = tfjob(chief=1, master=1, worker=1)
    before = copy.deepcopy(body)
    job, errs = parse_tfjob(body)
    assert job is None and errs and body == before


# --- status shape ---------------------------------------------------------------------------------------------

def test_counts_go_to_replica_statuses_under_the_canonical_keys_only() -> None:
    status = with_tfjob_replica_counts({"startTime": "t"}, {"PS": ReplicaCounts(1), "Worker": ReplicaCounts(0, 1)})
    assert status == {"startTime": "t", "replicaStatuses": {"PS": {"active": 1}, "Worker": {"succeeded": 1}}}
    assert tfjob_replica_counts({"replicaStatuses": {"Ps": {"active": 1}, "Worker": {"succeeded": 2}}}) == {
        "PS": ReplicaCounts(1), "Worker": ReplicaCounts(0, 2)}
    assert tfjob_replica_counts(update_body()["status"]) == {"PS": ReplicaCounts(1), "Worker": ReplicaCounts(1)}


# --- names and labels: training-operator 1.9's for TFJobs -----------------------------------------------------

def test_the_framework_names_things_as_training_operator_does_for_tfjobs() -> None:
    framework = TensorFlowFramework()
    assert (framework.operator_name, framework.framework_name, framework.resource.kind,
            framework.resource.plural, framework.default_container) == (
        "tfjob-controller", "tensorflow", "TFJob", "tfjobs", "tensorflow")
    labels = replica_labels(framework.operator_name, framework.group_label, "dist", "PS", 1)
    assert labels == {"training.kubeflow.org/operator-name": "tfjob-controller",
                      "training.kubeflow.org/job-name": "dist", "training.kubeflow.org/replica-type": "ps",
                      "training.kubeflow.org/replica-index": "1"}, "exactly 1.9's labels: no legacy ones"
    assert FRAMEWORKS["tensorflow"].framework().operator_name == "tfjob-controller"


@pytest.mark.parametrize(("body", "masters"), [
    (tfjob(chief=1, ps=1, worker=2), {("Chief", 0)}),
    (tfjob(master=1, worker=2), {("Master", 0)}),
    (tfjob(ps=2, worker=2), {("Worker", 0)}),
])
def test_job_role_master_goes_to_the_chief_else_worker_0(body: dict, masters: set) -> None:
    job = view(body)
    framework = TensorFlowFramework()
    found = {(t, i) for t, r in job.replicas.items() for i in range(r.replicas) if framework.is_master(job, t, i)}
    assert found == masters


def test_services_expose_every_named_port_of_the_tensorflow_container() -> None:
    body = tfjob(worker=1)
    body["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "debug", "containerPort": 6006}, {"containerPort": 7000}]
    assert TensorFlowFramework().service_ports(view(body), "Worker") == [
        {"name": "debug", "port": 6006}, {"name": "tfjob-port", "port": 2222}]


# --- the CRD --------------------------------------------------------------------------------------------------

def schema() -> dict[str, Any]:
    [version] = tfjob_crd()["spec"]["versions"]
    return version["schema"]["openAPIV3Schema"]


def test_the_crd_names_version_and_columns() -> None:
    crd = tfjob_crd()
    assert crd["metadata"]["name"] == "tfjobs.kubeflow.org"
    assert crd["spec"]["names"] == {"kind": "TFJob", "listKind": "TFJobList", "plural": "tfjobs",
                                    "singular": "tfjob", "shortNames": ["tfjob"]}
    [version] = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == ["State", "Age"]
    assert version["additionalPrinterColumns"][0]["jsonPath"] == ".status.conditions[-1:].type"


def test_the_schema_is_structural_and_keeps_both_shapes() -> None:
    assert structural_problems(schema()) == []
    spec = schema()["properties"]["spec"]
    assert spec["required"] == ["tfReplicaSpecs"]
    assert {"runPolicy", "successPolicy", "enableDynamicWorker", "backoffLimit", "ttlSecondsAfterFinished",
            "activeDeadlineSeconds", "cleanPodPolicy", "schedulingPolicy"} <= set(spec["properties"])
    replica_spec = spec["properties"]["tfReplicaSpecs"]["additionalProperties"]
    assert set(replica_spec["properties"]) == {"replicas", "restartPolicy", "template"}
    assert "(default)" in spec["properties"]["cleanPodPolicy"]["description"]
    assert "Running (default)" in spec["properties"]["runPolicy"]["properties"]["cleanPodPolicy"]["description"]
    assert set(schema()["properties"]["status"]["properties"]) == {
        "conditions", "replicaStatuses", "startTime", "completionTime", "lastReconcileTime", "restartCount",
        "replicaHistory"}


@pytest.mark.integration
def test_kubernetes_validate_strict_accepts_the_committed_crd(tmp_path: Path) -> None:
    path = ROOT / "manifests" / "crd" / "kubeflow.org_tfjobs.yaml"
    assert yaml.safe_load(path.read_text()) == tfjob_crd()
    proc = subprocess.run([str(KUBERNETES_VALIDATE), "--strict", "-k", schema_version(), str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bad = tfjob_crd()
    bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-patch-strategy"] = "m"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    proc = subprocess.run([str(KUBERNETES_VALIDATE), "--strict", "-k", schema_version(), str(tmp_path / "bad.yaml")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode != 0, "the check can fail"
