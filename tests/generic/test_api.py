"""The GenericJob API (pure): validation naming every bad field (ranks, types, policies, limits, priority, clean-up
policy, variables, run-mode entries, the name's length), the defaults of the typed view, the real manifests of
T9k's tutorials and manual (flow- and block-style rules alike), and the rule JSON of failure messages."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from mxjob_controller.generic.api import (
    DEBUG_COMMAND,
    GenericJobView,
    Override,
    Scheduler,
    parse_genericjob,
    rank_of,
    rule_json,
    validate_genericjob,
)
from tests.generic_support import genericjob, replica, view

RANK_MESSAGE = "a rank is a non-negative integer, or a string of decimal digits"
LABEL_1123 = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
              "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
              "'[a-z0-9]([-a-z0-9]*[a-z0-9])?') (it is part of the names of the replicas' pods and Services)")
LABEL_1035 = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
              "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
              "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
NO_SERVICE = "refers to the replicas' Services, but spec.service is not set"
HTTP = {"ports": [{"name": "http", "port": 2222}]}
C0 = "spec.replicaSpecs[0].template.spec.containers[0]"


def errors(body: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_genericjob(body)]


def workers(n: int = 3, **spec: Any) -> dict[str, Any]:
    return genericjob("g", "default", replica("worker", n), **spec)


# --- finish rules: ranks ------------------------------------------------------------------------------------

@pytest.mark.parametrize("ranks", [[0], ["0"], [0, 1, 2], ["0", "1", "2"], [2, "1", 0], ["02"], [0, "0"]])
def test_ranks_are_ints_or_decimal_strings(ranks: list[Any]) -> None:
    assert errors(workers(3, successRules=[{"worker": ranks}], failureRules=[{"worker": ranks}])) == []


@pytest.mark.parametrize(("ranks", "normalised"), [
    ([0], (0,)), (["0"], (0,)), (["2", 1], (2, 1)), (["02"], (2,)), ([0, "0", 1], (0, 1)),
])
def test_ranks_are_normalised_to_ints_in_written_order(ranks: list[Any], normalised: tuple[int, ...]) -> None:
    job = view(workers(3, successRules=[{"worker": ranks}], failureRules=[{"worker": ranks}]))
    assert job.success_rules == ((("worker", normalised),),)
    assert job.failure_rules == ((("worker", normalised),),)


@pytest.mark.parametrize(("value", "expected"), [
    (0, 0), (7, 7), ("0", 0), ("13", 13), ("007", 7),
    (-1, None), ("-1", None), ("+1", None), ("1.5", None), (1.5, None), (1.0, None), (True, None), (False, None),
    (None, None), ("", None), (" 1", None), ("1 ", None), ("x", None), ("\u0663", None), ("0x1", None), ([0], None),
])
def test_rank_of(value: Any, expected: int | None) -> None:
    assert rank_of(value) == expected


@pytest.mark.parametrize(("key", "rules", "expected"), [
    ("successRules", [{"worker": [0, 3]}],
     ['spec.successRules[0].worker[1]: Invalid value: 3: out of range: worker has 3 replicas (ranks 0 to 2)']),
    ("failureRules", [{"worker": [0]}, {"worker": ["3"]}],
     ['spec.failureRules[1].worker[0]: Invalid value: "3": out of range: worker has 3 replicas (ranks 0 to 2)']),
    ("successRules", [{"worker": [-1]}], [f"spec.successRules[0].worker[0]: Invalid value: -1: {RANK_MESSAGE}"]),
    ("successRules", [{"worker": ["-1"]}], [f'spec.successRules[0].worker[0]: Invalid value: "-1": {RANK_MESSAGE}']),
    ("successRules", [{"worker": [0, "x"]}], [f'spec.successRules[0].worker[1]: Invalid value: "x": {RANK_MESSAGE}']),
    ("failureRules", [{"worker": ["1.0"]}], [f'spec.failureRules[0].worker[0]: Invalid value: "1.0": {RANK_MESSAGE}']),
    ("failureRules", [{"worker": [1.5]}], [f"spec.failureRules[0].worker[0]: Invalid value: 1.5: {RANK_MESSAGE}"]),
    ("successRules", [{"worker": [True]}], [f"spec.successRules[0].worker[0]: Invalid value: true: {RANK_MESSAGE}"]),
    ("successRules", [{"worker": [None]}], [f"spec.successRules[0].worker[0]: Invalid value: null: {RANK_MESSAGE}"]),
    ("successRules", [{"worker": [" 1"]}], [f'spec.successRules[0].worker[0]: Invalid value: " 1": {RANK_MESSAGE}']),
    ("successRules", [{"worker": [0, 1, 5, "y"]}],
     ['spec.successRules[0].worker[2]: Invalid value: 5: out of range: worker has 3 replicas (ranks 0 to 2)',
      f'spec.successRules[0].worker[3]: Invalid value: "y": {RANK_MESSAGE}']),
    ("successRules", [{"ps": [0]}], ['spec.successRules[0].ps: Unsupported value: "ps": supported values: "worker"']),
    ("failureRules", [{"worker": [0]}, {"worker": [1], "Worker": [0]}],
     ['spec.failureRules[1].Worker: Unsupported value: "Worker": supported values: "worker"']),
    ("successRules", [{}],
     ["spec.successRules[0]: Required value: a rule names at least one replica type and its ranks"]),
    ("failureRules", [{"worker": []}],
     ["spec.failureRules[0].worker: Required value: a rule lists at least one rank of each type it names"]),
    ("successRules", [{"worker": 0}], ["spec.successRules[0].worker: Invalid value: 0: must be of type array"]),
    ("successRules", [["worker"]], ['spec.successRules[0]: Invalid value: ["worker"]: must be of type object']),
    ("failureRules", {"worker": [0]}, ['spec.failureRules: Invalid value: {"worker":[0]}: must be of type array']),
])
def test_bad_rules_are_rejected_at_the_rank_or_type_written(key: str, rules: Any, expected: list[str]) -> None:
    assert errors(workers(3, **{key: rules})) == expected


def test_every_bad_rank_of_both_rule_lists_is_reported_at_once() -> None:
    body = genericjob("g", "default", replica("master"), replica("worker", 2),
                      successRules=[{"master": [0]}, {"worker": [0, 2], "master": ["1"]}],
                      failureRules=[{"chief": [0]}, {"worker": ["a"]}])
    assert errors(body) == [
        "spec.successRules[1].worker[1]: Invalid value: 2: out of range: worker has 2 replicas (ranks 0 to 1)",
        'spec.successRules[1].master[0]: Invalid value: "1": out of range: master has 1 replicas (ranks 0 to 0)',
        'spec.failureRules[0].chief: Unsupported value: "chief": supported values: "master", "worker"',
        f'spec.failureRules[1].worker[0]: Invalid value: "a": {RANK_MESSAGE}',
    ]


def test_ranks_are_checked_against_the_default_of_one_replica() -> None:
    body = genericjob("g", "default", replica("worker", None), successRules=[{"worker": [1]}])
    assert errors(body) == [
        "spec.successRules[0].worker[0]: Invalid value: 1: out of range: worker has 1 replicas (ranks 0 to 0)"]
    body["spec"]["successRules"] = [{"worker": ["0"]}]
    assert errors(body) == []


def test_absent_and_empty_rule_lists_are_valid_and_read_as_empty() -> None:
    for spec in ({}, {"successRules": [], "failureRules": []}, {"successRules": None}):
        job = view(workers(2, **spec))
        assert (job.success_rules, job.failure_rules) == ((), ())


# --- the replica specs and the other fields -----------------------------------------------------------------

def spec_with(**fields: Any) -> dict[str, Any]:
    return {"type": "worker", "template": {"spec": {"containers": [{"name": "main", "image": "i"}]}}, **fields}


@pytest.mark.parametrize(("body", "expected"), [
    ({"metadata": {"name": "g"}, "spec": {}},
     ["spec.replicaSpecs: Required value: a GenericJob has at least one replica spec"]),
    ({"metadata": {"name": "g"}, "spec": {"replicaSpecs": []}},
     ["spec.replicaSpecs: Required value: a GenericJob has at least one replica spec"]),
    ({"metadata": {"name": "g"}, "spec": {"replicaSpecs": None}},
     ["spec.replicaSpecs: Required value: a GenericJob has at least one replica spec"]),
    ({"metadata": {"name": "g"}, "spec": {"replicaSpecs": {"worker": {}}}},
     ['spec.replicaSpecs: Invalid value: {"worker":{}}: must be of type array']),
    ({"metadata": {"name": "g"}}, ["spec: Required value"]),
    (genericjob("g", "default", replica("worker"), replica("ps"), replica("worker", 2)),
     ['spec.replicaSpecs[2].type: Duplicate value: "worker"']),
    (genericjob("g", "default", spec_with(type=None)), ["spec.replicaSpecs[0].type: Required value"]),
    (genericjob("g", "default", spec_with(type="")), ["spec.replicaSpecs[0].type: Required value"]),
    (genericjob("g", "default", spec_with(type=3)),
     ["spec.replicaSpecs[0].type: Invalid value: 3: must be of type string"]),
    (genericjob("g", "default", replica("Worker")),
     [f'spec.replicaSpecs[0].type: Invalid value: "Worker": {LABEL_1123}']),
    (genericjob("g", "default", replica("ps"), replica("WORKER")),
     [f'spec.replicaSpecs[1].type: Invalid value: "WORKER": {LABEL_1123}']),
    (genericjob("g", "default", replica("work_er")),
     [f'spec.replicaSpecs[0].type: Invalid value: "work_er": {LABEL_1123}']),
    (genericjob("g", "default", replica("worker", -1)),
     ["spec.replicaSpecs[0].replicas: Invalid value: -1: must be greater than or equal to 0"]),
    (genericjob("g", "default", replica("ps"), replica("worker", -3)),
     ["spec.replicaSpecs[1].replicas: Invalid value: -3: must be greater than or equal to 0"]),
    (genericjob("g", "default", replica("worker", "2")),
     ['spec.replicaSpecs[0].replicas: Invalid value: "2": must be of type integer']),
    (genericjob("g", "default", replica("worker", 5001)),
     ["spec.replicaSpecs[0].replicas: Invalid value: 5001: must be less than or equal to 5000, the most replicas "
      "of one type a job may have"]),
    (genericjob("g", "default", replica("worker", 3000), replica("ps", 2001)),
     ["spec.replicaSpecs: Invalid value: 5001: the job has 5001 replicas in all; at most 5000 are allowed"]),
    (genericjob("g", "default", replica("worker", policy="Sometimes")),
     ['spec.replicaSpecs[0].restartPolicy.policy: Unsupported value: "Sometimes": supported values: "Never", '
      '"OnFailure", "Always"']),
    (genericjob("g", "default", replica("worker", policy="onFailure")),
     ['spec.replicaSpecs[0].restartPolicy.policy: Unsupported value: "onFailure": supported values: "Never", '
      '"OnFailure", "Always"']),
    (genericjob("g", "default", replica("worker", policy="ExitCode")),
     ['spec.replicaSpecs[0].restartPolicy.policy: Unsupported value: "ExitCode": supported values: "Never", '
      '"OnFailure", "Always"']),
    (genericjob("g", "default", spec_with(restartPolicy="OnFailure")),
     ['spec.replicaSpecs[0].restartPolicy: Invalid value: "OnFailure": must be of type object']),
    (genericjob("g", "default", replica("worker", limit=-1)),
     ["spec.replicaSpecs[0].restartPolicy.limit: Invalid value: -1: must be greater than or equal to 0"]),
    (genericjob("g", "default", replica("worker", limit=32768)),
     ["spec.replicaSpecs[0].restartPolicy.limit: Invalid value: 32768: must be less than or equal to 32767"]),
    (genericjob("g", "default", replica("worker", limit="3")),
     ['spec.replicaSpecs[0].restartPolicy.limit: Invalid value: "3": must be of type integer']),
    (genericjob("g", "default", replica("worker", policy="Never", limit=-5), replica("ps", policy="Bad", limit=40000)),
     ["spec.replicaSpecs[0].restartPolicy.limit: Invalid value: -5: must be greater than or equal to 0",
      'spec.replicaSpecs[1].restartPolicy.policy: Unsupported value: "Bad": supported values: "Never", '
      '"OnFailure", "Always"',
      "spec.replicaSpecs[1].restartPolicy.limit: Invalid value: 40000: must be less than or equal to 32767"]),
    (genericjob("g", "default", {"type": "worker", "template": {"spec": {"containers": []}}}),
     ["spec.replicaSpecs[0].template.spec.containers: Required value"]),
    (genericjob("g", "default", {"type": "worker"}), ["spec.replicaSpecs[0].template.spec.containers: Required value"]),
    (genericjob("g", "default", {"type": "worker", "template": {"spec": {"containers": [{"name": "m"}]}}}),
     ["spec.replicaSpecs[0].template.spec.containers[0].image: Required value"]),
    (workers(1, cleanUpPolicy="Running"),
     ['spec.cleanUpPolicy: Unsupported value: "Running": supported values: "None", "Unfinished", "All"']),
    (workers(1, cleanUpPolicy="none"),
     ['spec.cleanUpPolicy: Unsupported value: "none": supported values: "None", "Unfinished", "All"']),
    (workers(1, cleanUpPolicy=1), ["spec.cleanUpPolicy: Invalid value: 1: must be of type string"]),
    (workers(1, scheduler={"t9kScheduler": {"queue": "default", "priority": 101}}),
     ["spec.scheduler.t9kScheduler.priority: Invalid value: 101: must be between 0 and 100"]),
    (workers(1, scheduler={"t9kScheduler": {"queue": "default", "priority": -1}}),
     ["spec.scheduler.t9kScheduler.priority: Invalid value: -1: must be between 0 and 100"]),
    (workers(1, scheduler={"t9kScheduler": {"priority": "50"}}),
     ['spec.scheduler.t9kScheduler.priority: Invalid value: "50": must be of type integer']),
    (workers(1, scheduler={"t9kScheduler": {"queue": 5}}),
     ["spec.scheduler.t9kScheduler.queue: Invalid value: 5: must be of type string"]),
    (workers(1, scheduler={"t9kScheduler": "default"}),
     ['spec.scheduler.t9kScheduler: Invalid value: "default": must be of type object']),
])
def test_bad_specs_are_rejected_at_the_field(body: dict[str, Any], expected: list[str]) -> None:
    assert errors(body) == expected


@pytest.mark.parametrize("limit", [0, 1, 100, 32767])
def test_limit_bounds_are_inclusive(limit: int) -> None:
    assert errors(genericjob("g", "default", replica("worker", limit=limit))) == []
    assert view(genericjob("g", "default", replica("worker", limit=limit))).replicas["worker"].limit == limit


@pytest.mark.parametrize("priority", [0, 1, 50, 100])
def test_priority_bounds_are_inclusive(priority: int) -> None:
    body = workers(1, scheduler={"t9kScheduler": {"queue": "q", "priority": priority}})
    assert errors(body) == []
    assert view(body).scheduler == Scheduler("q", priority)


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "Always"])
def test_every_restart_policy_is_accepted(policy: str) -> None:
    assert view(genericjob("g", "default", replica("worker", policy=policy))).replicas["worker"].policy == policy


@pytest.mark.parametrize("clean_up", ["None", "Unfinished", "All"])
def test_every_clean_up_policy_is_accepted(clean_up: str) -> None:
    job = view(workers(1, cleanUpPolicy=clean_up))
    assert (job.clean_up_policy, job.run_policy.clean_pod_policy) == (clean_up, clean_up)


@pytest.mark.parametrize("rtype", ["worker", "ps", "master", "w0", "0w", "data-loader", "a" * 40])
def test_lowercase_labels_are_good_types(rtype: str) -> None:
    assert errors(genericjob("g", "default", replica(rtype))) == []


def test_zero_replicas_is_valid_but_no_rank_of_that_type_can_be_named() -> None:
    assert errors(genericjob("g", "default", replica("worker"), replica("ps", 0))) == []
    assert view(genericjob("g", "default", replica("worker"), replica("ps", 0))).total_replicas == 1
    body = genericjob("g", "default", replica("worker"), replica("ps", 0), failureRules=[{"ps": [0]}])
    assert [str(e) for e in validate_genericjob(body)] == [
        "spec.failureRules[0].ps[0]: Invalid value: 0: out of range: ps has 0 replicas"]


# --- variables --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("container", "spec", "expected"), [
    ({"command": ["sh", "-c", "ping $(service.worker[0].host)"]}, {},
     [f'{C0}.command[2]: Invalid value: "ping $(service.worker[0].host)": $(service.worker[0].host) {NO_SERVICE}']),
    ({"args": ["--port=$(service.port[http])"]}, {},
     [f'{C0}.args[0]: Invalid value: "--port=$(service.port[http])": $(service.port[http]) {NO_SERVICE}']),
    ({"env": [{"name": "A", "value": "x"}, {"name": "B", "value": "$(service.worker[1].host)"}]}, {},
     [f'{C0}.env[1].value: Invalid value: "$(service.worker[1].host)": $(service.worker[1].host) {NO_SERVICE}']),
    ({"args": ["$(service.port[grpc])"]}, {"service": HTTP},
     [f"{C0}.args[0]: Invalid value: \"$(service.port[grpc])\": $(service.port[grpc]) names port 'grpc', which "
      "spec.service.ports does not have"]),
    ({"args": ["$(service.ps[0].host)"]}, {"service": HTTP},
     [f"{C0}.args[0]: Invalid value: \"$(service.ps[0].host)\": $(service.ps[0].host) names replica type 'ps', "
      "which spec.replicaSpecs does not have"]),
    ({"args": ["$(service.worker[2].host)"]}, {"service": HTTP},
     [f'{C0}.args[0]: Invalid value: "$(service.worker[2].host)": $(service.worker[2].host) names rank 2, but '
      "worker has 2 replicas"]),
    ({"env": [{"name": "N", "value": "$(replicas[ps])"}]}, {},
     [f"{C0}.env[0].value: Invalid value: \"$(replicas[ps])\": $(replicas[ps]) names replica type 'ps', which "
      "spec.replicaSpecs does not have"]),
    ({"command": ["$(service.worker[0].host)", "$(service.worker[0].host)"]}, {},
     [f'{C0}.command[0]: Invalid value: "$(service.worker[0].host)": $(service.worker[0].host) {NO_SERVICE}',
      f'{C0}.command[1]: Invalid value: "$(service.worker[0].host)": $(service.worker[0].host) {NO_SERVICE}']),
])
def test_unresolvable_references_are_rejected_where_written(container: dict[str, Any], spec: dict[str, Any],
                                                            expected: list[str]) -> None:
    assert errors(genericjob("g", "default", replica("worker", 2, **container), **spec)) == expected


@pytest.mark.parametrize("text", [
    "$(FOO)", "$(HOME)/data", "$(type)-$(rank)", "$(replicas[worker])", "$$(service.worker[0].host)",
    "$(service.worker.host)", "$(service)", "$(service.port)", "$(rank", "no reference at all",
])
def test_unknown_or_escaped_references_are_no_error_without_a_service(text: str) -> None:
    assert errors(genericjob("g", "default", replica("worker", 2, command=[text], args=[text],
                                                     env=[{"name": "X", "value": text}]))) == []


def test_service_references_resolve_with_a_service() -> None:
    text = "$(service.worker[1].host):$(service.port[http]) $(service.ps[0].host):$(service.port[grpc])"
    body = genericjob("g", "default", replica("ps"), replica("worker", 2, env=[{"name": "X", "value": text}]),
                      service={"ports": [{"name": "http", "port": 2222}, {"name": "grpc", "port": 50051}]})
    assert errors(body) == []


def test_init_containers_are_checked_too() -> None:
    body = genericjob("g", "default", replica("worker"))
    body["spec"]["replicaSpecs"][0]["template"]["spec"]["initContainers"] = [
        {"name": "init", "image": "i", "args": ["$(service.port[http])"]}]
    assert errors(body) == ['spec.replicaSpecs[0].template.spec.initContainers[0].args[0]: Invalid value: '
                            f'"$(service.port[http])": $(service.port[http]) {NO_SERVICE}']


# --- run modes ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("run_mode", "expected"), [
    ({"debug": {"enabled": True, "replicaSpecs": [{"type": "ps"}]}},
     ['spec.runMode.debug.replicaSpecs[0].type: Unsupported value: "ps": supported values: "worker", "master"']),
    ({"pause": {"enabled": False, "resumeSpecs": [{"type": "master"}, {"type": "chief", "command": ["x"]}]}},
     ['spec.runMode.pause.resumeSpecs[1].type: Unsupported value: "chief": supported values: "worker", "master"']),
    ({"debug": {"enabled": True, "replicaSpecs": [{"type": "worker"}, {"type": "worker"}]}},
     ['spec.runMode.debug.replicaSpecs[1].type: Duplicate value: "worker"']),
    ({"pause": {"resumeSpecs": [{"command": ["x"]}]}},
     ["spec.runMode.pause.resumeSpecs[0].type: Required value"]),
    ({"debug": {"enabled": "yes"}}, ['spec.runMode.debug.enabled: Invalid value: "yes": must be of type boolean']),
    ({"pause": {"enabled": 1}}, ["spec.runMode.pause.enabled: Invalid value: 1: must be of type boolean"]),
    ({"debug": {"enabled": True, "replicaSpecs": [{"type": "worker", "command": []}]}},
     ["spec.runMode.debug.replicaSpecs[0].command: Required value: leave it out to keep the default"]),
    ({"debug": {"enabled": True, "replicaSpecs": [{"type": "worker", "command": "sleep inf"}]}},
     ['spec.runMode.debug.replicaSpecs[0].command: Invalid value: "sleep inf": must be of type array']),
    ({"debug": {"enabled": True, "replicaSpecs": [{"type": "worker", "skipInitContainer": "true"}]}},
     ['spec.runMode.debug.replicaSpecs[0].skipInitContainer: Invalid value: "true": must be of type boolean']),
    ({"pause": {"enabled": True, "resumeSpecs": [{"type": "worker", "args": ["--resume", 1]}]}},
     ["spec.runMode.pause.resumeSpecs[0].args[1]: Invalid value: 1: must be of type string"]),
    ({"pause": {"enabled": True, "resumeSpecs": [{"type": "worker", "command": ["$(service.worker[0].host)"]}]}},
     ['spec.runMode.pause.resumeSpecs[0].command[0]: Invalid value: "$(service.worker[0].host)": '
      f"$(service.worker[0].host) {NO_SERVICE}"]),
    ({"debug": {"enabled": True, "replicaSpecs": [{"type": "master", "command": ["sh", "$(replicas[ps])"]}]}},
     ["spec.runMode.debug.replicaSpecs[0].command[1]: Invalid value: \"$(replicas[ps])\": $(replicas[ps]) names "
      "replica type 'ps', which spec.replicaSpecs does not have"]),
    ({"debug": []}, ["spec.runMode.debug: Invalid value: []: must be of type object"]),
])
def test_bad_run_mode_entries_are_rejected(run_mode: dict[str, Any], expected: list[str]) -> None:
    body = genericjob("g", "default", replica("worker", 2), replica("master"), runMode=run_mode)
    assert errors(body) == expected


def test_run_mode_entries_are_read_per_type() -> None:
    body = genericjob("g", "default", replica("worker", 2), replica("master"), runMode={
        "debug": {"enabled": True, "replicaSpecs": [
            {"type": "worker", "skipInitContainer": True, "command": ["/usr/bin/sshd"]}, {"type": "master"}]},
        "pause": {"enabled": False, "resumeSpecs": [{"type": "worker", "args": ["--resume"]}]}})
    job = view(body)
    assert job.debug and not job.paused
    assert dict(job.debug_overrides) == {"worker": Override(True, ("/usr/bin/sshd",)), "master": Override()}
    assert dict(job.resume_overrides) == {"worker": Override(False, None, ("--resume",))}


# --- metadata.name ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "types", "expected"), [
    ("a" * 54, [("worker", 10)], []),
    ("a" * 55, [("worker", 10)],
     [f'metadata.name: Invalid value: "{"a" * 55}": must be no more than 54 characters, so that the name of every '
      f'pod and Service of the job (the longest is "{"a" * 55}-worker-9", 64 characters) is at most 63']),
    ("a" * 53, [("worker", 11)], []),
    ("a" * 54, [("worker", 11)],
     [f'metadata.name: Invalid value: "{"a" * 54}": must be no more than 53 characters, so that the name of every '
      f'pod and Service of the job (the longest is "{"a" * 54}-worker-10", 64 characters) is at most 63']),
    ("a" * 50, [("ps", 1), ("data-loader", 1)],
     [f'metadata.name: Invalid value: "{"a" * 50}": must be no more than 49 characters, so that the name of every '
      f'pod and Service of the job (the longest is "{"a" * 50}-data-loader-0", 64 characters) is at most 63']),
    ("a" * 58, [("ps", 0)], []),
    ("a" * 59, [("ps", 0)],
     [f'metadata.name: Invalid value: "{"a" * 59}": must be no more than 58 characters, so that the name of every '
      f'pod and Service of the job (the longest is "{"a" * 59}-ps-0", 64 characters) is at most 63']),
    ("1job", [("worker", 1)], [f'metadata.name: Invalid value: "1job": {LABEL_1035}']),
    ("Job", [("worker", 1)], [f'metadata.name: Invalid value: "Job": {LABEL_1035}']),
    ("my.job", [("worker", 1)], [f'metadata.name: Invalid value: "my.job": {LABEL_1035}']),
])
def test_the_name_leaves_room_for_every_replica_name(name: str, types: list[tuple[str, int]],
                                                     expected: list[str]) -> None:
    body = genericjob(name, "default", *(replica(t, n) for t, n in types))
    assert errors(body) == expected


@pytest.mark.parametrize(("rtype", "replicas", "room"), [("w" * 70, 1, 59), ("w" * 60, 1, 59), ("w" * 59, 12, 58)])
def test_a_replica_type_too_long_for_any_job_name_is_the_error(rtype: str, replicas: int, room: int) -> None:
    """Issue 33: a 70-character type made the name's message "must be no more than -10 characters"; the type is
    at fault, whatever the job's name, and its own field says so (once: not also as a label too long)."""
    shortest = f"j-{rtype}-{replicas - 1}"
    assert errors(genericjob("job", "default", replica(rtype, replicas))) == [
        f'spec.replicaSpecs[0].type: Invalid value: "{rtype}": must be no more than {room} characters, so that the '
        f"names of its replicas' pods and Services (with a one-character job name, the longest is \"{shortest}\", "
        f"{len(shortest)} characters) are at most 63"]


def test_a_missing_name_is_required() -> None:
    body = genericjob("g")
    del body["metadata"]["name"]
    assert errors(body) == ["metadata.name: Required value: name or generateName is required"]


# --- service ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("service", "expected"), [
    ({}, ["spec.service.ports: Required value: the replicas' Services need at least one port"]),
    ({"ports": []}, ["spec.service.ports: Required value: the replicas' Services need at least one port"]),
    ({"ports": [{"name": "http", "port": 2222}, {"name": "http", "port": 2223}]},
     ['spec.service.ports[1].name: Duplicate value: "http"']),
    ({"ports": [{"name": "http", "port": 2222}, {"port": 80}]},
     ["spec.service.ports[1].name: Required value: a Service with several ports names each of them"]),
    ({"ports": [{"port": 80}]}, []),
    ({"ports": [{"name": "http", "port": 2222}]}, []),
])
def test_service_ports(service: dict[str, Any], expected: list[str]) -> None:
    assert errors(workers(1, service=service)) == expected


# --- defaults -------------------------------------------------------------------------------------------------

def test_defaults() -> None:
    body = {"metadata": {"name": "g", "namespace": "ns", "uid": "u1", "generation": 3},
            "spec": {"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [
                {"name": "main", "image": "i"}]}}}]}}
    job, errs = parse_genericjob(body)
    assert errs == [] and isinstance(job, GenericJobView)
    worker = job.replicas["worker"]
    assert (worker.replicas, worker.policy, worker.limit, worker.restart_policy) == (1, "OnFailure", 0, "Never")
    assert (job.name, job.namespace, job.uid, job.generation) == ("g", "ns", "u1", 3)
    assert job.clean_up_policy == "None" and job.run_policy.clean_pod_policy == "None"
    assert job.scheduler is None and job.scheduler_name == ""
    assert job.service_ports is None and job.port_numbers is None
    assert (job.success_rules, job.failure_rules) == ((), ())
    assert not job.debug and not job.paused and not job.resumed
    assert dict(job.debug_overrides) == {} and dict(job.resume_overrides) == {}
    assert DEBUG_COMMAND == ("sleep", "inf")
    assert job.total_replicas == 1


@pytest.mark.parametrize(("restart", "expected"), [
    (None, ("OnFailure", 0)),
    ({}, ("OnFailure", 0)),
    ({"policy": "Always"}, ("Always", 0)),
    ({"limit": 3}, ("OnFailure", 3)),
    ({"policy": "Never", "limit": 2}, ("Never", 2)),
    ({"policy": "OnFailure", "limit": 100}, ("OnFailure", 100)),
])
def test_restart_policy_defaults_field_by_field(restart: dict[str, Any] | None, expected: tuple[str, int]) -> None:
    body = genericjob("g", "default", spec_with(**({} if restart is None else {"restartPolicy": restart})))
    worker = view(body).replicas["worker"]
    assert (worker.policy, worker.limit) == expected


@pytest.mark.parametrize(("t9k", "expected"), [
    ({}, Scheduler("default", 0)),
    ({"queue": None}, Scheduler("default", 0)),
    ({"queue": None, "priority": 0}, Scheduler("default", 0)),
    ({"queue": "demo"}, Scheduler("demo", 0)),
    ({"priority": 10}, Scheduler("default", 10)),
    ({"queue": "default", "priority": 50}, Scheduler("default", 50)),
])
def test_scheduler_defaults(t9k: dict[str, Any], expected: Scheduler) -> None:
    assert view(workers(1, scheduler={"t9kScheduler": t9k})).scheduler == expected


def test_no_t9k_scheduler_means_the_default_scheduler() -> None:
    assert view(workers(1, scheduler={})).scheduler is None
    assert view(workers(1)).scheduler is None


def test_replicas_keep_spec_order_and_totals_add_up() -> None:
    job = view(genericjob("g", "default", replica("worker", 4), replica("ps", None), replica("master", 0)))
    assert list(job.replicas) == ["worker", "ps", "master"]
    assert [r.replicas for r in job.replicas.values()] == [4, 1, 0]
    assert job.total_replicas == 5


def test_service_ports_and_port_numbers() -> None:
    job = view(workers(1, service={"ports": [{"name": "http", "port": 2222}, {"name": "grpc", "port": 50051,
                                                                              "targetPort": 9000}]}))
    assert job.service_ports == ({"name": "http", "port": 2222}, {"name": "grpc", "port": 50051, "targetPort": 9000})
    assert job.port_numbers == {"http": 2222, "grpc": 50051}


def test_parse_leaves_the_body_alone_and_reports_every_error() -> None:
    body = genericjob("g", "default", replica("worker", -1, policy="Bad"), cleanUpPolicy="X")
    before = copy.deepcopy(body)
    job, errs = parse_genericjob(body)
    assert job is None
    assert [e.field for e in errs] == ["spec.replicaSpecs[0].replicas", "spec.replicaSpecs[0].restartPolicy.policy",
                                       "spec.cleanUpPolicy"]
    assert body == before
    good = workers(2, successRules=[{"worker": ["1"]}])
    before = copy.deepcopy(good)
    assert parse_genericjob(good)[0] is not None and good == before


def test_a_view_template_is_a_fresh_copy() -> None:
    job = view(workers(1))
    template = job.replicas["worker"].pod_template()
    template["spec"]["containers"][0]["image"] = "changed"
    assert job.replicas["worker"].pod_template()["spec"]["containers"][0]["image"] == "generic/test:1"


# --- the real manifests (T9k's tutorials, examples and manual) ---------------------------------------------

KERAS_TF_CONFIG = ('{"cluster":{"worker":["$(service.worker[0].host):$(service.port[http])","$(service.worker[1].host)'
                   ':$(service.port[http])","$(service.worker[2].host):$(service.port[http])","$(service.worker[3].'
                   'host):$(service.port[http])"]},"task":{"type":"$(type)","index":$(rank)}}')

# t9k/tutorial-examples job/genericjob/multiworker-keras/job.yaml
KERAS = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata:
  name: keras-mnist-genericjob
spec:
  successRules:
    - { "worker": [0] }
  failureRules:
    - { "worker": [0] }
    - { "worker": [1] }
    - { "worker": [2] }
    - { "worker": [3] }
  service:
    ports:
      - name: http
        port: 2222
  cleanUpPolicy: Unfinished
  replicaSpecs:
    - type: worker
      replicas: 4
      restartPolicy:
        policy: OnFailure
        limit: 100
      template:
        spec:
          containers:
            - name: tensorflow
              command:
                - python
                - job/genericjob/multiworker-keras/keras_mnist_genericjob.py
                - "--log_dir"
                - "job/genericjob/multiworker-keras/log"
                - "--no_cuda"
              workingDir: /t9k/mnt/tutorial-examples
              env:
                - name: TF_CONFIG
                  value: '""" + KERAS_TF_CONFIG + """'
              image: t9kpublic/tensorflow-2.11.0:cpu-sdk-0.5.2
              resources:
                requests:
                  cpu: 2
                  memory: 2Gi
                limits:
                  cpu: 4
                  memory: 4Gi
              volumeMounts:
                - mountPath: /t9k/mnt
                  name: data
          volumes:
            - name: data
              persistentVolumeClaim:
                claimName: tutorial
"""

# the same tutorial, job_gpu_t9ksched.yaml: the T9k scheduler with an empty queue
KERAS_T9KSCHED = KERAS.replace("  cleanUpPolicy: Unfinished\n", """\
  scheduler:
    t9kScheduler:
      queue:
      priority: 0
""").replace("cpu: 2\n", "cpu: 1\n                  nvidia.com/gpu: 1\n", 1)

# t9k/examples dcu/llama3/job-finetune.yaml (GenericJob version; "commands" is the manifest's own typo)
LLAMA3 = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata:
  name: llama3-finetune-2x2xdp
spec:
  successRules:
    - { "worker": [0] }
  failureRules:
    - { "worker": [0] }
    - { "worker": [1] }
  replicaSpecs:
    - type: worker
      replicas: 2
      template:
        spec:
          containers:
            - name: llama3
              image: registry.cn-hangzhou.aliyuncs.com/xyxxxxx/pytorch:dcu-2.1.0-xtuner
              workingDir: /workspace/llama3_pytorch
              commands: ["xtuner"]
              args:
                - "train"
                - "llama3_8b_instruct_qlora_alpaca_e3_M.py"
                - "--deepspeed=deepspeed_zero2"
              env:
                - name: NPROC_PER_NODE
                  value: "2"
                - name: HIP_VISIBLE_DEVICES  # a comment, as in the manifest
                  value: "0,1"
              resources:
                limits:
                  cpu: 4
                  memory: 64Gi
                  hygon.com/dcu: 2
              volumeMounts:
                - name: dshm
                  mountPath: /dev/shm
          volumes:
            - name: dshm
              emptyDir:
                medium: Memory
                sizeLimit: "80Gi"
"""

# T9k's manual: the basic example
MANUAL_BASIC = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata:
  name: generic-example
spec:
  successRules:
    - { "worker": [0] }
  failureRules:
    - { "worker": [0] }
    - { "worker": [1] }
  replicaSpecs:
    - type: worker
      replicas: 4
      template:
        spec:
          containers:
            - command:
                - sleep
                - '365'
              image: nginx:latest
              name: sleep
"""

# T9k's manual: three success rules, written as flow maps inside a block list
MANUAL_RULES = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata:
  name: generic-example
spec:
  successRules:
  - {"master": [0]}
  - {"worker": [0, 1, 2]}
  - {"master": [2], "worker": [0, 1]}
  failureRules:
  - {"master": [0]}
  replicaSpecs:
    - type: master
      replicas: 3
      restartPolicy: {policy: Always, limit: 3}
      template: {spec: {containers: [{name: m, image: "nginx:latest"}]}}
    - type: worker
      replicas: 3
      restartPolicy: {policy: OnFailure, limit: 100}
      template: {spec: {restartPolicy: Never, containers: [{name: w, image: "nginx:latest"}]}}
"""

# block style throughout, ranks as strings, service, scheduler, debug and pause (T9k's manual's fields)
BLOCK = """\
apiVersion: batch.tensorstack.dev/v1beta1
kind: GenericJob
metadata:
  name: job-sample
spec:
  successRules:
    - master:
        - 0
  failureRules:
    - master:
        - "0"
    - worker:
        - "0"
        - "1"
  service:
    ports:
      - name: http
        port: 2222
  cleanUpPolicy: All
  scheduler:
    t9kScheduler:
      queue: default
      priority: 50
  runMode:
    debug:
      enabled: true
      replicaSpecs:
        - type: worker
          skipInitContainer: true
          command: ["/usr/bin/sshd"]
    pause:
      enabled: false
      resumeSpecs:
        - type: worker
          skipInitContainer: true
          command: ["/usr/bin/sshd"]
  replicaSpecs:
    - type: master
      template:
        spec:
          containers:
            - name: master
              image: nginx:latest
    - type: worker
      replicas: 4
      restartPolicy:
        policy: Never
      template:
        spec:
          restartPolicy: Never
          initContainers:
            - name: init
              image: busybox
          containers:
            - name: worker
              image: nginx:latest
              args: ["--master=$(service.master[0].host):$(service.port[http])"]
"""


@pytest.mark.parametrize("manifest", [KERAS, KERAS_T9KSCHED, LLAMA3, MANUAL_BASIC, MANUAL_RULES, BLOCK],
                         ids=["keras", "keras-t9ksched", "llama3", "manual-basic", "manual-rules", "block-style"])
def test_real_manifests_are_accepted_unchanged(manifest: str) -> None:
    body = yaml.safe_load(manifest)
    before = copy.deepcopy(body)
    assert errors(body) == []
    job, _ = parse_genericjob(body)
    assert job is not None and body == before


def test_the_keras_tutorial_reads_as_written() -> None:
    job = view(yaml.safe_load(KERAS))
    assert job.name == "keras-mnist-genericjob"
    assert job.success_rules == ((("worker", (0,)),),)
    assert job.failure_rules == tuple(((("worker", (i,)),)) for i in range(4))
    assert job.service_ports == ({"name": "http", "port": 2222},)
    assert job.clean_up_policy == "Unfinished"
    worker = job.replicas["worker"]
    assert (worker.replicas, worker.policy, worker.limit) == (4, "OnFailure", 100)
    assert job.replicas["worker"].pod_template()["spec"]["containers"][0]["env"] == [
        {"name": "TF_CONFIG", "value": KERAS_TF_CONFIG}], "variables are substituted per pod, not in the view"
    assert job.scheduler is None


def test_the_keras_tutorial_with_the_t9k_scheduler_uses_the_default_queue() -> None:
    assert view(yaml.safe_load(KERAS_T9KSCHED)).scheduler == Scheduler("default", 0)


def test_flow_and_block_style_rules_read_the_same() -> None:
    flow = view(yaml.safe_load(MANUAL_RULES))
    assert flow.success_rules == ((("master", (0,)),), (("worker", (0, 1, 2)),), (("master", (2,)), ("worker", (0, 1))))
    assert flow.failure_rules == ((("master", (0,)),),)
    assert (flow.replicas["master"].policy, flow.replicas["master"].limit) == ("Always", 3)
    assert (flow.replicas["worker"].policy, flow.replicas["worker"].limit) == ("OnFailure", 100)
    block = view(yaml.safe_load(BLOCK))
    assert block.success_rules == ((("master", (0,)),),)
    assert block.failure_rules == ((("master", (0,)),), (("worker", (0, 1)),))
    assert block.scheduler == Scheduler("default", 50)
    assert block.clean_up_policy == "All"
    assert block.debug and not block.paused
    assert dict(block.debug_overrides) == {"worker": Override(True, ("/usr/bin/sshd",))}
    assert dict(block.resume_overrides) == {"worker": Override(True, ("/usr/bin/sshd",))}
    assert block.replicas["worker"].policy == "Never"
    assert block.replicas["worker"].restart_policy == "Never"


def test_the_manuals_tf_config_example_without_a_service_is_rejected() -> None:
    """T9k's manual shows the TF_CONFIG example without ``spec.service``; ours refuses the dangling references."""
    body = genericjob("generic-example", "default",
                      replica("worker", 4, env=[{"name": "TF_CONFIG", "value": KERAS_TF_CONFIG}]))
    found = validate_genericjob(body)
    assert [e.field for e in found] == [f"{C0}.env[0].value"] * 5, "one error per distinct reference"
    assert [str(e).rsplit(": ", 1)[1] for e in found] == [
        f"$(service.worker[0].host) {NO_SERVICE}", f"$(service.port[http]) {NO_SERVICE}",
        *(f"$(service.worker[{i}].host) {NO_SERVICE}" for i in (1, 2, 3))]
    body["spec"]["service"] = HTTP
    assert errors(body) == []


# --- rule_json ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("rule", "expected"), [
    ({"worker": [0]}, '{"worker":["0"]}'),
    ({"worker": ["0"]}, '{"worker":["0"]}'),
    ({"worker": [1]}, '{"worker":["1"]}'),
    ({"worker": [0, 1, 2]}, '{"worker":["0","1","2"]}'),
    ({"master": [2], "worker": [0, 1]}, '{"master":["2"],"worker":["0","1"]}'),
    ({"worker": [1, 0], "master": ["2"]}, '{"worker":["1","0"],"master":["2"]}'),
    ({"worker": ["01", 1]}, '{"worker":["1"]}'),
])
def test_rule_json_prints_rules_as_t9k_does(rule: dict[str, list[Any]], expected: str) -> None:
    body = genericjob("g", "default", replica("master", 3), replica("worker", 3), failureRules=[rule])
    (parsed,) = view(body).failure_rules
    assert rule_json(parsed) == expected
