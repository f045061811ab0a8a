"""Defaults, the reconciler's typed view (parse_job) and the status shape: table-driven, pure functions."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core.framework import managed_elsewhere
from mxjob_controller.kubeflow_api.constants import MANAGED_BY_OURS
from mxjob_controller.kubeflow_api.status import ReplicaCounts, condition
from mxjob_controller.mxnet.api import apply_defaults, mxjob_replica_counts, parse_job, with_mxjob_replica_counts

PORT = {"name": "mxjob-port", "containerPort": 9091}


def job(specs: dict[str, Any], **spec: Any) -> dict:
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
            "metadata": {"name": "j", "namespace": "ns", "uid": "u-1", "generation": 3},
            "spec": {"mxReplicaSpecs": specs, **spec}}


def rspec(*containers: dict, **extra: Any) -> dict:
    return {"template": {"spec": {"containers": list(containers) or [{"name": "mxnet", "image": "m"}]}}, **extra}


def containers_of(obj: dict, rtype: str = "Worker") -> list[dict]:
    return obj["spec"]["mxReplicaSpecs"][rtype]["template"]["spec"]["containers"]


# --- replicas and restartPolicy -------------------------------------------------------------------------

@pytest.mark.parametrize(("given", "replicas", "restart"), [
    ({}, 1, "Never"),
    ({"replicas": 4}, 4, "Never"),
    ({"restartPolicy": "OnFailure"}, 1, "OnFailure"),
    ({"replicas": 2, "restartPolicy": "ExitCode"}, 2, "ExitCode"),
    ({"replicas": None, "restartPolicy": None}, 1, "Never"),
])
def test_replicas_and_restart_policy(given: dict, replicas: int, restart: str) -> None:
    out = apply_defaults(job({"Worker": rspec(**given)}))
    worker = out["spec"]["mxReplicaSpecs"]["Worker"]
    assert (worker["replicas"], worker["restartPolicy"]) == (replicas, restart)


# --- the mxjob-port -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("case", "containers", "expected"), [
    ("added to the mxnet container",
     [{"name": "mxnet", "image": "m"}],
     [{"name": "mxnet", "image": "m", "ports": [PORT]}]),
    ("added to mxnet, not to the first container",
     [{"name": "sidecar", "image": "s"}, {"name": "mxnet", "image": "m"}],
     [{"name": "sidecar", "image": "s"}, {"name": "mxnet", "image": "m", "ports": [PORT]}]),
    ("added to the first container when none is named mxnet",
     [{"name": "main", "image": "m"}, {"name": "other", "image": "o"}],
     [{"name": "main", "image": "m", "ports": [PORT]}, {"name": "other", "image": "o"}]),
    ("appended after the user's other ports",
     [{"name": "mxnet", "image": "m", "ports": [{"name": "metrics", "containerPort": 8080}]}],
     [{"name": "mxnet", "image": "m", "ports": [{"name": "metrics", "containerPort": 8080}, PORT]}]),
    ("not duplicated when present",
     [{"name": "mxnet", "image": "m", "ports": [dict(PORT)]}],
     [{"name": "mxnet", "image": "m", "ports": [PORT]}]),
    ("the user's number is kept",
     [{"name": "mxnet", "image": "m", "ports": [{"name": "mxjob-port", "containerPort": 9000}]}],
     [{"name": "mxnet", "image": "m", "ports": [{"name": "mxjob-port", "containerPort": 9000}]}]),
    ("a port of that name on another container does not count",
     [{"name": "side", "image": "s", "ports": [dict(PORT)]}, {"name": "mxnet", "image": "m"}],
     [{"name": "side", "image": "s", "ports": [PORT]}, {"name": "mxnet", "image": "m", "ports": [PORT]}]),
])
def test_default_port(case: str, containers: list[dict], expected: list[dict]) -> None:
    assert containers_of(apply_defaults(job({"Worker": rspec(*containers)}))) == expected


# --- replica-type keys ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("keys", "expected"), [
    (["worker"], ["Worker"]),
    (["SCHEDULER", "server", "wOrKeR"], ["Scheduler", "Server", "Worker"]),
    (["tunertracker", "TUNERSERVER", "tuner"], ["TunerTracker", "TunerServer", "Tuner"]),
    (["Worker", "worker"], ["Worker", "worker"]),          # ambiguous: left for validation to report
    (["Chief", "worker"], ["Chief", "Worker"]),            # unknown: left as is
])
def test_key_normalisation(keys: list[str], expected: list[str]) -> None:
    out = apply_defaults(job({k: rspec() for k in keys}))
    assert list(out["spec"]["mxReplicaSpecs"]) == expected


# --- cleanPodPolicy -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("spec", "inline", "nested"), [
    # No run policy anywhere: training-operator's place, and runPolicy exists (the Kubeflow SDK needs it; issue 34).
    ({}, None, "All"),
    ({"cleanPodPolicy": "None"}, "None", None),
    ({"runPolicy": {}}, None, "All"),
    ({"runPolicy": {"cleanPodPolicy": "Running"}}, None, "Running"),
    ({"cleanPodPolicy": "Running", "runPolicy": {"backoffLimit": 2}}, "Running", None),
    # The older shape (run policy inline only): the default goes beside the user's fields.
    ({"backoffLimit": 3}, "All", None),
    ({"backoffLimit": 3, "runPolicy": {"suspend": False}}, None, "All"),
])
def test_clean_pod_policy(spec: dict, inline: str | None, nested: str | None) -> None:
    out = apply_defaults(job({"Worker": rspec()}, **spec))["spec"]
    assert out.get("cleanPodPolicy") == inline
    assert isinstance(out["runPolicy"], dict)
    assert out["runPolicy"].get("cleanPodPolicy") == nested


def test_defaults_never_modify_the_input() -> None:
    original = job({"worker": rspec(), "scheduler": rspec(replicas=1)}, runPolicy={})
    before = copy.deepcopy(original)
    out = apply_defaults(original)
    assert original == before
    containers_of(out)[0]["image"] = "changed"
    assert original == before, "the copy shares nothing with the input"


@pytest.mark.parametrize("garbage", [{}, {"spec": "x"}, {"spec": {"mxReplicaSpecs": ["x"]}},
                                     {"spec": {"mxReplicaSpecs": {"Worker": None}}},
                                     {"spec": {"mxReplicaSpecs": {"Worker": {"template": {"spec": {
                                         "containers": ["x"]}}}}}},
                                     {"spec": {"runPolicy": "x"}}])
def test_defaults_are_total(garbage: dict) -> None:
    apply_defaults(garbage)


# --- parse_job: the reconciler's view -------------------------------------------------------------------

def test_parse_job_normalises_and_types_everything() -> None:
    tvm = rspec(label="gpu-rpc")
    annotated = rspec()
    annotated["template"]["metadata"] = {"annotations": {"tuner-server-key": "from-annotation"}}
    custom_port = rspec({"name": "mxnet", "image": "m", "ports": [{"name": "mxjob-port", "containerPort": 9000}]})
    original = job({"tuner": annotated, "TUNERSERVER": tvm, "tunertracker": custom_port}, jobMode="MXTune",
                   cleanPodPolicy="None", successPolicy="AllWorkers",
                   runPolicy={"backoffLimit": 2, "suspend": True, "schedulingPolicy": {"queue": "q"}},
                   schedulingPolicy={"minAvailable": 3})
    before = copy.deepcopy(original)
    view, errors = parse_job(original)
    assert errors == []
    assert view is not None
    assert original == before
    assert (view.name, view.namespace, view.uid, view.generation, view.job_mode) == ("j", "ns", "u-1", 3, "MXTune")
    assert list(view.replicas) == ["TunerTracker", "TunerServer", "Tuner"]
    assert [(r.replicas, r.restart_policy, r.tvm_label, r.port) for r in view.replicas.values()] == [
        (1, "Never", "", 9000), (1, "Never", "gpu-rpc", 9091), (1, "Never", "from-annotation", 9091)]
    policy = view.run_policy
    assert (policy.clean_pod_policy, policy.backoff_limit, policy.suspend, policy.managed_by) == ("None", 2, True,
                                                                                                   None)
    assert policy.scheduling_policy is not None
    assert (policy.scheduling_policy.min_available, policy.scheduling_policy.queue) == (3, "q")
    assert view.success_policy == "AllWorkers"


def test_view_is_immutable_and_hands_out_copies() -> None:
    view, _ = parse_job(job({"Worker": rspec()}))
    assert view is not None
    with pytest.raises(AttributeError):
        view.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        view.replicas["Server"] = view.replicas["Worker"]  # type: ignore[index]
    first = view.replicas["Worker"].pod_template()
    first["spec"]["containers"][0]["image"] = "changed"
    assert view.replicas["Worker"].pod_template()["spec"]["containers"][0] == {
        "name": "mxnet", "image": "m", "ports": [PORT]}


def test_parse_job_defaults_run_policy() -> None:
    view, _ = parse_job(job({"Worker": rspec()}))
    assert view is not None
    policy = view.run_policy
    assert (policy.clean_pod_policy, policy.suspend, policy.scheduling_policy, policy.managed_by) == (
        "All", False, None, None)
    assert view.job_mode == ""
    assert view.success_policy == ""


@pytest.mark.parametrize(("managed_by", "handed_to"), [
    (None, None),
    ("kubeflow.org/mxjob-controller", None),
    ("kubeflow.org/training-operator", None),
    ("kueue.x-k8s.io/multikueue", "kueue.x-k8s.io/multikueue"),
    ("example.com/my-dispatcher", "example.com/my-dispatcher"),
    # malformed: no hand-over (nobody can claim a value the API refuses); the job is ours, and invalid
    ("", None),
    ("me", None),
    ("Example.com/x", None),
    ("example.com/a b", None),
    ("example.com/" + "x" * 60, None),
])
def test_managed_by_decides_who_reconciles(managed_by: str | None, handed_to: str | None) -> None:
    run_policy = {} if managed_by is None else {"managedBy": managed_by}
    obj = job({"Worker": rspec()}, runPolicy=run_policy)
    assert managed_elsewhere(obj, MANAGED_BY_OURS) == handed_to
    view, errors = parse_job(obj)
    well_formed = managed_by is None or handed_to is not None or managed_by in MANAGED_BY_OURS
    assert (view is not None, not errors) == (well_formed, well_formed), [str(e) for e in errors]
    assert well_formed or {e.field for e in errors} == {"spec.runPolicy.managedBy"}


def test_parse_job_returns_every_error_and_no_view() -> None:
    view, errors = parse_job(job({"Worker": rspec(replicas=0)}, cleanPodPolicy="Some"))
    assert view is None
    assert [e.field for e in errors] == ["spec.mxReplicaSpecs.Worker.replicas", "spec.cleanPodPolicy"]


# --- status ---------------------------------------------------------------------------------------------

def test_replica_statuses_are_mirrored() -> None:
    status = {"conditions": [condition("Created", "MXJobCreated", "MXJob j is created.", "2024-01-01T00:00:00Z")]}
    out = with_mxjob_replica_counts(status, {"Worker": ReplicaCounts(active=2),
                                             "Scheduler": ReplicaCounts(succeeded=1)})
    assert out["replicaStatuses"] == out["mxReplicaStatuses"] == {"Worker": {"active": 2},
                                                                  "Scheduler": {"succeeded": 1}}
    assert out["replicaStatuses"] is not out["mxReplicaStatuses"]
    assert "replicaStatuses" not in status
    assert out["conditions"][0] == {"type": "Created", "status": "True", "reason": "MXJobCreated",
                                    "message": "MXJob j is created.", "lastUpdateTime": "2024-01-01T00:00:00Z",
                                    "lastTransitionTime": "2024-01-01T00:00:00Z"}


@pytest.mark.parametrize(("status", "expected"), [
    (None, {}),
    ({"mxReplicaStatuses": {"worker": {"active": 1}}}, {"Worker": ReplicaCounts(active=1)}),
    ({"replicaStatuses": {"Server": {"failed": 2}}, "mxReplicaStatuses": {"Server": {"failed": 9}}},
     {"Server": ReplicaCounts(failed=2)}),
])
def test_replica_counts_read_either_map(status: dict | None, expected: dict) -> None:
    assert mxjob_replica_counts(status) == expected
