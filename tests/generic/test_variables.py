"""GenericJob's ``$(…)`` variables (pure): what each reference becomes for one replica, what is left literal
(unknown names, ``$$`` escapes, references that cannot be resolved), why an unresolvable reference is refused,
where in a pod spec they are looked for, and T9k's keras tutorial's hand-built TF_CONFIG rendered (its pods:
tests/generic/test_wiring.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mxjob_controller.generic.variables import (
    Scope,
    container_texts,
    host,
    reference_problems,
    substitute,
    substitute_pod_spec,
)
from tests.generic_support import KERAS_CLUSTER, KERAS_TF_CONFIG, genericjob, keras, replica, view

PORTS = {"http": 2222, "grpc": 50051}
WORKER_2 = Scope("job", {"worker": 4, "ps": 1}, PORTS, "worker", 2)
NO_SERVICE = Scope("job", {"worker": 4, "ps": 1}, None, "worker", 2)


@pytest.mark.parametrize(("text", "expected"), [
    ("$(type)", "worker"),
    ("$(rank)", "2"),
    ("$(replicas[worker])", "4"),
    ("$(replicas[ps])", "1"),
    ("$(service.worker[3].host)", "job-worker-3"),
    ("$(service.worker[0].host)", "job-worker-0"),
    ("$(service.ps[0].host)", "job-ps-0"),
    ("$(service.port[http])", "2222"),
    ("$(service.port[grpc])", "50051"),
    ("$(service.worker[1].host):$(service.port[http])", "job-worker-1:2222"),
    ("--rank=$(rank) --world=$(replicas[worker])", "--rank=2 --world=4"),
    ("$(type)$(rank)$(type)", "worker2worker"),
    ("no references", "no references"),
    ("", ""),
    # unknown names are left for the kubelet (env vars) or as text
    ("$(FOO)", "$(FOO)"),
    ("$(HOME)/$(rank)", "$(HOME)/2"),
    ("$(TYPE)", "$(TYPE)"),
    ("$( rank )", "$( rank )"),
    ("$(service.worker.host)", "$(service.worker.host)"),
    ("$(service.port)", "$(service.port)"),
    ("$(replicas)", "$(replicas)"),
    # escapes stay escapes: the kubelet turns $$ into $
    ("$$(rank)", "$$(rank)"),
    ("$$(type)-$(type)", "$$(type)-worker"),
    ("$$", "$$"),
    ("$$$(rank)", "$$2"),
    ("$$$$(rank)", "$$$$(rank)"),
    ("$rank", "$rank"),
    ("$(rank", "$(rank"),
    ("rank)", "rank)"),
    # known forms that cannot be resolved are left as written (validation refuses them)
    ("$(replicas[chief])", "$(replicas[chief])"),
    ("$(service.worker[4].host)", "$(service.worker[4].host)"),
    ("$(service.chief[0].host)", "$(service.chief[0].host)"),
    ("$(service.port[ssh])", "$(service.port[ssh])"),
])
def test_substitution(text: str, expected: str) -> None:
    assert substitute(text, WORKER_2) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("$(type)-$(rank)", "worker-2"),
    ("$(replicas[worker])", "4"),
    ("$(service.worker[3].host)", "$(service.worker[3].host)"),
    ("$(service.port[http])", "$(service.port[http])"),
])
def test_without_a_service_the_service_variables_are_not_substituted(text: str, expected: str) -> None:
    assert substitute(text, NO_SERVICE) == expected


@pytest.mark.parametrize(("scope", "expected"), [
    (Scope("g", {"ps": 1, "worker": 2}, {}, "ps", 0), "ps 0 1 2 g-worker-1"),
    (Scope("g", {"ps": 1, "worker": 2}, {}, "worker", 1), "worker 1 1 2 g-worker-1"),
    (Scope("other", {"ps": 1, "worker": 2}, {}, "worker", 0), "worker 0 1 2 other-worker-1"),
])
def test_each_replica_sees_its_own_type_and_rank(scope: Scope, expected: str) -> None:
    text = "$(type) $(rank) $(replicas[ps]) $(replicas[worker]) $(service.worker[1].host)"
    assert substitute(text, scope) == expected


def test_host_is_the_bare_service_name() -> None:
    assert host("generic-example", "worker", 0) == "generic-example-worker-0"
    assert host("j", "ps", 12) == "j-ps-12"


# --- problems -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("scope", "text", "expected"), [
    (WORKER_2, "$(type) $(rank) $(FOO) $$(service.x[9].host)", []),
    (WORKER_2, "$(service.worker[3].host):$(service.port[http])", []),
    (NO_SERVICE, "$(service.worker[3].host)",
     ["$(service.worker[3].host) refers to the replicas' Services, but spec.service is not set"]),
    (NO_SERVICE, "$(service.port[http])",
     ["$(service.port[http]) refers to the replicas' Services, but spec.service is not set"]),
    (NO_SERVICE, "$(service.worker.host) $(service)", []),
    (WORKER_2, "$(service.worker[4].host)", ["$(service.worker[4].host) names rank 4, but worker has 4 replicas"]),
    (WORKER_2, "$(service.chief[0].host)",
     ["$(service.chief[0].host) names replica type 'chief', which spec.replicaSpecs does not have"]),
    (WORKER_2, "$(service.port[ssh])",
     ["$(service.port[ssh]) names port 'ssh', which spec.service.ports does not have"]),
    (NO_SERVICE, "$(replicas[chief])", ["$(replicas[chief]) names replica type 'chief', which spec.replicaSpecs does "
                                        "not have"]),
    (WORKER_2, "$(service.port[ssh]) $(service.port[ssh]) $(service.port[x])",
     ["$(service.port[ssh]) names port 'ssh', which spec.service.ports does not have",
      "$(service.port[x]) names port 'x', which spec.service.ports does not have"]),
])
def test_reference_problems(scope: Scope, text: str, expected: list[str]) -> None:
    assert reference_problems(text, scope) == expected


# --- where variables are looked for ---------------------------------------------------------------------------

POD_SPEC: dict[str, Any] = {
    "initContainers": [{"name": "init", "image": "i", "command": ["echo", "$(rank)"], "args": ["$(type)"]}],
    "containers": [
        {"name": "main", "image": "i", "command": ["python", "--rank=$(rank)"], "args": ["$(service.worker[0].host)"],
         "env": [{"name": "A", "value": "$(type)-$(rank)"},
                 {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                 {"name": "C", "value": "$(FOO)"}]},
        {"name": "side", "image": "$(type)", "workingDir": "/$(rank)", "env": [{"name": "D", "value": "$(rank)"}]},
    ],
    "volumes": [{"name": "v", "emptyDir": {}}],
}


def test_container_texts_are_command_args_and_env_values_of_every_container() -> None:
    assert list(container_texts(POD_SPEC, "spec.template.spec")) == [
        ("spec.template.spec.initContainers[0].command[0]", "echo"),
        ("spec.template.spec.initContainers[0].command[1]", "$(rank)"),
        ("spec.template.spec.initContainers[0].args[0]", "$(type)"),
        ("spec.template.spec.containers[0].command[0]", "python"),
        ("spec.template.spec.containers[0].command[1]", "--rank=$(rank)"),
        ("spec.template.spec.containers[0].args[0]", "$(service.worker[0].host)"),
        ("spec.template.spec.containers[0].env[0].value", "$(type)-$(rank)"),
        ("spec.template.spec.containers[0].env[2].value", "$(FOO)"),
        ("spec.template.spec.containers[1].env[0].value", "$(rank)"),
    ]


def test_substitute_pod_spec_touches_command_args_and_env_values_only() -> None:
    spec = json.loads(json.dumps(POD_SPEC))
    substitute_pod_spec(spec, WORKER_2)
    assert spec == {
        "initContainers": [{"name": "init", "image": "i", "command": ["echo", "2"], "args": ["worker"]}],
        "containers": [
            {"name": "main", "image": "i", "command": ["python", "--rank=2"], "args": ["job-worker-0"],
             "env": [{"name": "A", "value": "worker-2"},
                     {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                     {"name": "C", "value": "$(FOO)"}]},
            {"name": "side", "image": "$(type)", "workingDir": "/$(rank)", "env": [{"name": "D", "value": "2"}]},
        ],
        "volumes": [{"name": "v", "emptyDir": {}}],
    }


def test_substitute_pod_spec_without_containers_or_fields_is_a_no_op() -> None:
    for spec in ({}, {"containers": []}, {"containers": [{"name": "m", "image": "i"}]},
                 {"containers": [{"name": "m", "image": "i", "command": [], "env": []}]}):
        before = json.loads(json.dumps(spec))
        substitute_pod_spec(spec, WORKER_2)
        assert spec == before


# --- T9k's keras tutorial: a hand-built TF_CONFIG -------------------------------------------------------------

def test_the_keras_tf_config_renders_to_valid_json_for_rank_2_of_4() -> None:
    job = view(keras())
    text = substitute(KERAS_TF_CONFIG, job.variables("worker", 2))
    assert text == (
        '{"cluster":{"worker":["keras-mnist-genericjob-worker-0:2222","keras-mnist-genericjob-worker-1:2222",'
        '"keras-mnist-genericjob-worker-2:2222","keras-mnist-genericjob-worker-3:2222"]},'
        '"task":{"type":"worker","index":2}}')
    assert json.loads(text) == {"cluster": KERAS_CLUSTER, "task": {"type": "worker", "index": 2}}


def test_the_view_scope_is_the_jobs() -> None:
    job = view(genericjob("g", "default", replica("ps"), replica("worker", 3),
                          service={"ports": [{"name": "http", "port": 2222}, {"name": "grpc", "port": 50051}]}))
    assert job.variables("worker", 1) == Scope("g", {"ps": 1, "worker": 3}, {"http": 2222, "grpc": 50051},
                                               "worker", 1)
    assert view(genericjob("g")).variables("worker", 0) == Scope("g", {"worker": 1}, None, "worker", 0)


def test_only_ascii_digits_are_ranks() -> None:
    """As for rule ranks (``api.rank_of``): a rank written in other scripts' digits is no reference of ours."""
    assert substitute("$(service.worker[\u0663].host)", WORKER_2) == "$(service.worker[\u0663].host)"
    assert reference_problems("$(service.worker[\u0663].host)", WORKER_2) == []
