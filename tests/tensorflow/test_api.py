"""The TFJob API (pure): defaults, validation naming every bad field, the two shapes of run policy merged field by
field, and the status shape. (The framework's names and labels: test_framework.py; the CRD: test_crd.py.)"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core.job_vocabulary import ReplicaCounts
from mxjob_controller.tensorflow.api import (
    apply_defaults,
    parse_tfjob,
    tfjob_replica_counts,
    validate_tfjob,
    with_tfjob_replica_counts,
)
from tests.tensorflow_support import create_body, replica, tfjob, update_body, view


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
