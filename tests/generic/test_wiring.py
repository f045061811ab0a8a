"""A GenericJob replica's pod template (pure): debug mode (the first container sleeps, its args cleared, init
containers skipped per type), resume overrides only after a pause, variables substituted everywhere (the
overrides' too), T9k's labels, the T9k scheduler's name and labels only while its PodGroups are served, and T9k's
keras tutorial's TF_CONFIG, each worker's own."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest

from mxjob_controller.generic.api import GenericJobView
from mxjob_controller.generic.wiring import wired_template
from tests.generic_support import KERAS_CLUSTER, genericjob, keras, replica, view

INIT = [{"name": "init", "image": "busybox", "command": ["sh", "-c", "echo $(type) $(rank)"]}]
T9K_LABELS = {"tensorstack.dev/component": "genericjob", "tensorstack.dev/component-type": "user"}


def with_init(body: dict[str, Any], index: int, init: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body["spec"]["replicaSpecs"][index]["template"]["spec"]["initContainers"] = copy.deepcopy(init or INIT)
    return body


def two_containers(rtype: str, replicas: int = 1, **spec: Any) -> dict[str, Any]:
    body = replica(rtype, replicas, command=["python", "train.py"], args=["--rank=$(rank)", "--type=$(type)"],
                   env=[{"name": "RANK", "value": "$(rank)"}], **spec)
    body["template"]["spec"]["containers"].append(
        {"name": "sidecar", "image": "side:1", "command": ["tail", "-f", "/log/$(type)-$(rank)"], "args": ["-n", "1"]})
    return body


def debug_job(replica_specs: list[dict[str, Any]] | None = None, **spec: Any) -> GenericJobView:
    debug: dict[str, Any] = {"enabled": True}
    if replica_specs is not None:
        debug["replicaSpecs"] = replica_specs
    body = genericjob("g", "default", two_containers("master"), two_containers("worker", 2), runMode={"debug": debug},
                      **spec)
    return view(with_init(with_init(body, 0), 1))


def containers(template: dict[str, Any]) -> list[dict[str, Any]]:
    return template["spec"]["containers"]


SIDECAR_MASTER = {"name": "sidecar", "image": "side:1", "command": ["tail", "-f", "/log/master-0"], "args": ["-n", "1"]}


# --- debug mode ------------------------------------------------------------------------------------------------

def test_debug_defaults_sleep_inf_in_the_first_container_with_args_cleared() -> None:
    """Checklist 26: no debug replicaSpecs: every type sleeps, keeps its env and init containers."""
    job = debug_job()
    for rtype, rank in (("master", 0), ("worker", 1)):
        template = wired_template(job, rtype, rank)
        assert containers(template)[0] == {"name": "main", "image": "generic/test:1", "command": ["sleep", "inf"],
                                           "env": [{"name": "RANK", "value": str(rank)}]}
        assert containers(template)[1] == {"name": "sidecar", "image": "side:1",
                                           "command": ["tail", "-f", f"/log/{rtype}-{rank}"], "args": ["-n", "1"]}
        assert template["spec"]["initContainers"] == [
            {"name": "init", "image": "busybox", "command": ["sh", "-c", f"echo {rtype} {rank}"]}]


def test_debug_replica_specs_apply_to_their_type_only() -> None:
    """Checklist 27: the manual's example, {type: worker, skipInitContainer: true, command: ["/usr/bin/sshd"]}."""
    job = debug_job([{"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}])
    worker = wired_template(job, "worker", 1)
    assert containers(worker)[0] == {"name": "main", "image": "generic/test:1", "command": ["/usr/bin/sshd"],
                                     "env": [{"name": "RANK", "value": "1"}]}
    assert "initContainers" not in worker["spec"]
    master = wired_template(job, "master", 0)
    assert containers(master)[0]["command"] == ["sleep", "inf"] and "args" not in containers(master)[0]
    assert master["spec"]["initContainers"] == [
        {"name": "init", "image": "busybox", "command": ["sh", "-c", "echo master 0"]}]
    assert containers(master)[1] == SIDECAR_MASTER


def test_skip_init_container_without_a_command_still_sleeps() -> None:
    job = debug_job([{"type": "master", "skipInitContainer": True}, {"type": "worker", "skipInitContainer": False}])
    master, worker = wired_template(job, "master", 0), wired_template(job, "worker", 0)
    assert containers(master)[0]["command"] == ["sleep", "inf"] and "initContainers" not in master["spec"]
    assert containers(worker)[0]["command"] == ["sleep", "inf"] and len(worker["spec"]["initContainers"]) == 1


def test_variables_are_substituted_in_the_debug_command() -> None:
    job = debug_job([{"type": "worker", "command": ["sh", "-c", "echo $(type)-$(rank) of $(replicas[worker]); "
                                                    "sleep inf # $(service.master[0].host):$(service.port[ssh])"]}],
                    service={"ports": [{"name": "ssh", "port": 22}]})
    assert containers(wired_template(job, "worker", 1))[0]["command"] == [
        "sh", "-c", "echo worker-1 of 2; sleep inf # g-master-0:22"]


def test_debug_disabled_changes_nothing() -> None:
    body = genericjob("g", "default", two_containers("worker"), runMode={"debug": {
        "enabled": False, "replicaSpecs": [{"type": "worker", "skipInitContainer": True, "command": ["sshd"]}]}})
    job = view(with_init(body, 0))
    template = wired_template(job, "worker", 0)
    assert containers(template)[0]["command"] == ["python", "train.py"]
    assert containers(template)[0]["args"] == ["--rank=0", "--type=worker"]
    assert len(template["spec"]["initContainers"]) == 1


def test_debug_ignores_resume_overrides() -> None:
    body = genericjob("g", "default", two_containers("worker"), runMode={
        "debug": {"enabled": True},
        "pause": {"enabled": False, "resumeSpecs": [{"type": "worker", "command": ["resume"], "args": ["x"]}]}})
    job = dataclasses.replace(view(body), resumed=True)
    first = containers(wired_template(job, "worker", 0))[0]
    assert first["command"] == ["sleep", "inf"] and "args" not in first


# --- resume ----------------------------------------------------------------------------------------------------

def resume_job(resume_specs: list[dict[str, Any]], paused: bool = False) -> GenericJobView:
    body = genericjob("g", "default", two_containers("master"), two_containers("worker", 2),
                      runMode={"pause": {"enabled": paused, "resumeSpecs": resume_specs}})
    return view(with_init(with_init(body, 0), 1))


RESUME = [{"type": "worker", "skipInitContainer": True, "command": ["python", "train.py", "--resume"],
           "args": ["--from=/ckpt/$(type)-$(rank)"]},
          {"type": "master", "args": ["--resume"]}]


def test_resume_overrides_apply_only_once_resumed() -> None:
    job = resume_job(RESUME)
    for rtype, rank in (("master", 0), ("worker", 1)):
        template = wired_template(job, rtype, rank)
        assert containers(template)[0]["command"] == ["python", "train.py"]
        assert containers(template)[0]["args"] == [f"--rank={rank}", f"--type={rtype}"]
        assert len(template["spec"]["initContainers"]) == 1


def test_resumed_overrides_command_args_and_init_containers_per_type() -> None:
    """Checklist 29: resumeSpecs' command/args where given; the template's otherwise."""
    job = dataclasses.replace(resume_job(RESUME), resumed=True)
    worker = wired_template(job, "worker", 1)
    assert containers(worker)[0] == {"name": "main", "image": "generic/test:1",
                                     "command": ["python", "train.py", "--resume"], "args": ["--from=/ckpt/worker-1"],
                                     "env": [{"name": "RANK", "value": "1"}]}
    assert "initContainers" not in worker["spec"]
    master = wired_template(job, "master", 0)
    assert containers(master)[0] == {"name": "main", "image": "generic/test:1", "command": ["python", "train.py"],
                                     "args": ["--resume"], "env": [{"name": "RANK", "value": "0"}]}
    assert len(master["spec"]["initContainers"]) == 1
    assert containers(master)[1] == SIDECAR_MASTER, "only the first container is overridden"


def test_types_without_a_resume_spec_use_their_template() -> None:
    job = dataclasses.replace(resume_job([{"type": "worker", "command": ["resume"]}]), resumed=True)
    master = wired_template(job, "master", 0)
    assert containers(master)[0]["command"] == ["python", "train.py"]
    assert containers(master)[0]["args"] == ["--rank=0", "--type=master"]
    worker = wired_template(job, "worker", 0)
    assert containers(worker)[0]["command"] == ["resume"]
    assert containers(worker)[0]["args"] == ["--rank=0", "--type=worker"], "no args in the resume spec: the template's"
    assert len(worker["spec"]["initContainers"]) == 1


# --- variables ------------------------------------------------------------------------------------------------

def test_variables_in_command_args_and_env_of_every_container() -> None:
    body = genericjob("g", "default", replica("ps"), replica(
        "worker", 3, command=["python", "$(type).py"], args=["--peer=$(service.ps[0].host):$(service.port[grpc])",
                                                            "--n=$(replicas[worker])", "$$(rank)", "$(FOO)"],
        env=[{"name": "RANK", "value": "$(rank)"}, {"name": "HOST", "valueFrom": {"fieldRef": {
            "fieldPath": "status.podIP"}}}]), service={"ports": [{"name": "grpc", "port": 50051}]})
    job = view(with_init(body, 1))
    template = wired_template(job, "worker", 2)
    assert containers(template) == [{
        "name": "main", "image": "generic/test:1", "command": ["python", "worker.py"],
        "args": ["--peer=g-ps-0:50051", "--n=3", "$$(rank)", "$(FOO)"],
        "env": [{"name": "RANK", "value": "2"}, {"name": "HOST", "valueFrom": {"fieldRef": {
            "fieldPath": "status.podIP"}}}]}]
    assert template["spec"]["initContainers"] == [
        {"name": "init", "image": "busybox", "command": ["sh", "-c", "echo worker 2"]}]


def test_the_template_in_the_view_is_not_modified() -> None:
    job = debug_job([{"type": "worker", "skipInitContainer": True}])
    before = copy.deepcopy(job.replicas["worker"].pod_template())
    first = wired_template(job, "worker", 0)
    first["metadata"]["labels"]["x"] = "y"
    assert job.replicas["worker"].pod_template() == before
    assert wired_template(job, "worker", 0) == wired_template(job, "worker", 0)


# --- labels and scheduler -------------------------------------------------------------------------------------

def test_t9k_labels_beside_the_users() -> None:
    body = genericjob("job-sample", "default", replica("worker", 2))
    body["spec"]["replicaSpecs"][0]["template"]["metadata"] = {"labels": {"app": "mine"},
                                                               "annotations": {"a": "b"}}
    template = wired_template(view(body), "worker", 1)
    assert template["metadata"] == {"labels": {"app": "mine", "genericjob": "job-sample",
                                               "genericjob-replica": "job-sample-worker-1", **T9K_LABELS},
                                    "annotations": {"a": "b"}}
    assert "schedulerName" not in template["spec"]


def test_t9k_labels_without_template_metadata() -> None:
    template = wired_template(view(genericjob("generic-example", "default", replica("worker", 4))), "worker", 3)
    assert template["metadata"] == {"labels": {"genericjob": "generic-example",
                                               "genericjob-replica": "generic-example-worker-3", **T9K_LABELS}}


SCHEDULED = genericjob("job-sample", "default", replica("ps"), replica("worker", 4),
                       scheduler={"t9kScheduler": {"queue": "demo", "priority": 10}})


@pytest.mark.parametrize(("scheduler_name", "body", "expected_name", "expected_labels"), [
    ("t9k-scheduler", SCHEDULED, "t9k-scheduler", {
        "scheduler.tensorstack.dev/group-name": "job-sample", "scheduler.tensorstack.dev/queue": "demo",
        "scheduler.tensorstack.dev/role": "worker"}),
    ("my-scheduler", SCHEDULED, "my-scheduler", {
        "scheduler.tensorstack.dev/group-name": "job-sample", "scheduler.tensorstack.dev/queue": "demo",
        "scheduler.tensorstack.dev/role": "worker"}),
    ("", SCHEDULED, None, {}),
    ("t9k-scheduler", genericjob("job-sample", "default", replica("ps"), replica("worker", 4)), None, {}),
])
def test_the_t9k_scheduler_only_when_its_name_is_set(scheduler_name: str, body: dict[str, Any],
                                                     expected_name: str | None,
                                                     expected_labels: dict[str, str]) -> None:
    job = dataclasses.replace(view(body), scheduler_name=scheduler_name)
    template = wired_template(job, "worker", 3)
    assert template["spec"].get("schedulerName") == expected_name
    assert template["metadata"]["labels"] == {"genericjob": "job-sample", "genericjob-replica": "job-sample-worker-3",
                                              **T9K_LABELS, **expected_labels}


def test_the_default_queue_and_each_types_role() -> None:
    body = genericjob("job-test", "default", replica("ps"), replica("worker", 4), scheduler={"t9kScheduler": {}})
    job = dataclasses.replace(view(body), scheduler_name="t9k-scheduler")
    for rtype in ("ps", "worker"):
        labels = wired_template(job, rtype, 0)["metadata"]["labels"]
        assert labels["scheduler.tensorstack.dev/queue"] == "default"
        assert labels["scheduler.tensorstack.dev/role"] == rtype
        assert labels["scheduler.tensorstack.dev/group-name"] == "job-test"


def test_a_template_scheduler_name_is_replaced_only_when_the_t9k_scheduler_is_used() -> None:
    body = genericjob("g", "default", replica("worker"), scheduler={"t9kScheduler": {"queue": "q"}})
    body["spec"]["replicaSpecs"][0]["template"]["spec"]["schedulerName"] = "custom"
    assert wired_template(view(body), "worker", 0)["spec"]["schedulerName"] == "custom"
    job = dataclasses.replace(view(body), scheduler_name="t9k-scheduler")
    assert wired_template(job, "worker", 0)["spec"]["schedulerName"] == "t9k-scheduler"


@pytest.mark.parametrize("rank", [0, 1, 2, 3])
def test_every_keras_pod_gets_its_own_tf_config(rank: int) -> None:
    template = wired_template(view(keras()), "worker", rank)
    (env,) = template["spec"]["containers"][0]["env"]
    assert env["name"] == "TF_CONFIG"
    assert json.loads(env["value"]) == {"cluster": KERAS_CLUSTER, "task": {"type": "worker", "index": rank}}
    assert template["spec"]["containers"][0]["command"] == ["python", "keras_mnist_genericjob.py", "--log_dir", "log"]
