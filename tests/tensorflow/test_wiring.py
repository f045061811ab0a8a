"""TF_CONFIG (pure), ported from training-operator 1.9's ``pod_test.go``: byte for byte with its vectors (custom
cluster domain, the evaluator included, sorted keys), no TF_CONFIG for a one-replica job or a container not named
``tensorflow``, the user's variables kept first, each type's own port, and ``enableDynamicWorker``'s sparse form."""

from __future__ import annotations

import json

import pytest

from mxjob_controller.tensorflow.framework import TensorFlowFramework
from mxjob_controller.tensorflow.wiring import TF_CONFIG, is_distributed, tf_config, wired_template
from tests.tensorflow_support import replica, tfjob, view

NAME = "test-tfjob"   # training-operator's tftestutil.TestTFJobName


def tf_config_of(template: dict, container: int = 0) -> str | None:
    env = template["spec"]["containers"][container].get("env") or []
    found = [e["value"] for e in env if e["name"] == TF_CONFIG]
    assert len(found) <= 1
    return found[0] if found else None


# (workers, ps, evaluators, namespace, cluster domain, expected TF_CONFIG of worker 0): pod_test.go's table
UPSTREAM = [
    (1, 0, 0, "ns0", "", None),
    (1, 0, 0, "ns1", "tf.training.com", None),
    (1, 1, 0, "ns2", "tf.training.org",
     '{"cluster":{"ps":["test-tfjob-ps-0.ns2.svc.tf.training.org:2222"],"worker":["test-tfjob-worker-0.ns2.svc.'
     'tf.training.org:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}'),
    (1, 1, 1, "ns3", "tf.training.io",
     '{"cluster":{"evaluator":["test-tfjob-evaluator-0.ns3.svc.tf.training.io:2222"],"ps":["test-tfjob-ps-0.ns3.'
     'svc.tf.training.io:2222"],"worker":["test-tfjob-worker-0.ns3.svc.tf.training.io:2222"]},"task":{"type":'
     '"worker","index":0},"environment":"cloud"}'),
    (1, 1, 1, "ns3", "",
     '{"cluster":{"evaluator":["test-tfjob-evaluator-0.ns3.svc:2222"],"ps":["test-tfjob-ps-0.ns3.svc:2222"],'
     '"worker":["test-tfjob-worker-0.ns3.svc:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"}'),
]


@pytest.mark.parametrize(("workers", "ps", "evaluators", "namespace", "domain", "expected"), UPSTREAM)
def test_upstream_cluster_spec_vectors(workers, ps, evaluators, namespace, domain, expected) -> None:
    job = view(tfjob(NAME, namespace, worker=workers, ps=ps, evaluator=evaluators))
    framework = TensorFlowFramework(cluster_domain=domain)
    assert tf_config_of(framework.pod_template(job, "Worker", 0)) == expected


def test_the_domain_comes_from_the_operator_environment(monkeypatch) -> None:
    monkeypatch.setenv("CUSTOM_CLUSTER_DOMAIN", "cluster.local")
    job = view(tfjob("dist", "ns", ps=1, worker=1))
    config = json.loads(tf_config_of(TensorFlowFramework().pod_template(job, "PS", 0)) or "")
    assert config["cluster"]["ps"] == ["dist-ps-0.ns.svc.cluster.local:2222"]
    monkeypatch.delenv("CUSTOM_CLUSTER_DOMAIN")
    config = json.loads(tf_config_of(TensorFlowFramework().pod_template(job, "PS", 0)) or "")
    assert config["cluster"]["ps"] == ["dist-ps-0.ns.svc:2222"]


def test_worker_1_of_2_ps_2_workers_gets_exactly_this() -> None:
    job = view(tfjob("dist", "ns", ps=2, worker=2))
    assert tf_config_of(wired_template(job, "Worker", 1)) == (
        '{"cluster":{"ps":["dist-ps-0.ns.svc:2222","dist-ps-1.ns.svc:2222"],"worker":["dist-worker-0.ns.svc:2222",'
        '"dist-worker-1.ns.svc:2222"]},"task":{"type":"worker","index":1},"environment":"cloud"}')


def test_keys_are_sorted_and_every_type_is_in_with_its_own_port() -> None:
    body = tfjob("j", "ns", worker=2, evaluator=1)
    body["spec"]["tfReplicaSpecs"]["chief"] = replica(1, ports=[{"name": "tfjob-port", "containerPort": 3333}])
    body["spec"]["tfReplicaSpecs"]["Ps"] = replica(1)
    job = view(body)
    config = json.loads(tf_config_of(wired_template(job, "Evaluator", 0)) or "")
    assert list(config) == ["cluster", "task", "environment"]
    assert list(config["cluster"]) == ["chief", "evaluator", "ps", "worker"]
    assert config["cluster"]["chief"] == ["j-chief-0.ns.svc:3333"], "a user's tfjob-port is kept"
    assert config["cluster"]["ps"] == ["j-ps-0.ns.svc:2222"]
    assert config["task"] == {"type": "evaluator", "index": 0}


def test_master_is_named_master() -> None:
    job = view(tfjob("j", "ns", master=1, worker=1))
    config = json.loads(tf_config_of(wired_template(job, "Master", 0)) or "")
    assert config["cluster"]["master"] == ["j-master-0.ns.svc:2222"] and config["task"]["type"] == "master"


@pytest.mark.parametrize(("counts", "distributed"), [
    ({"worker": 1}, False), ({"chief": 1}, False), ({"worker": 2}, True), ({"chief": 1, "worker": 1}, True),
    ({"ps": 1, "worker": 1}, True)])
def test_is_distributed(counts, distributed) -> None:
    assert is_distributed(view(tfjob(**counts))) is distributed


def test_only_the_tensorflow_container_gets_it_after_the_users_variables() -> None:
    body = tfjob("j", "ns", ps=1, worker=1)
    spec = body["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["containers"] = [{"name": "sidecar", "image": "s"},
                          {"name": "tensorflow", "image": "t", "env": [{"name": "A", "value": "1"}]}]
    template = wired_template(view(body), "Worker", 0)
    assert tf_config_of(template, 0) is None
    env = template["spec"]["containers"][1]["env"]
    assert [e["name"] for e in env] == ["A", TF_CONFIG]


def test_a_tf_config_the_user_set_is_kept() -> None:
    body = tfjob("j", "ns", ps=1, worker=1)
    body["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["env"] = [
        {"name": TF_CONFIG, "value": "{}"}]
    assert tf_config_of(wired_template(view(body), "Worker", 0)) == "{}"


def test_the_template_is_a_fresh_copy_each_time() -> None:
    job = view(tfjob("j", "ns", ps=1, worker=1))
    first = wired_template(job, "Worker", 0)
    first["spec"]["containers"][0]["env"].append({"name": "X", "value": "y"})
    assert [e["name"] for e in wired_template(job, "Worker", 0)["spec"]["containers"][0]["env"]] == [TF_CONFIG]


# --- enableDynamicWorker: the sparse form (tensorflow.go convertClusterSpecToSparseClusterSpec) -----------------

def test_dynamic_worker_knows_itself_and_the_parameter_servers() -> None:
    job = view(tfjob("j", "ns", ps=2, worker=3, enableDynamicWorker=True))
    assert tf_config_of(wired_template(job, "Worker", 1)) == (
        '{"cluster":{"worker":{"1":"j-worker-1.ns.svc:2222"},"ps":["j-ps-0.ns.svc:2222","j-ps-1.ns.svc:2222"]},'
        '"task":{"type":"worker","index":1}}')
    assert tf_config_of(wired_template(job, "PS", 1)) == (
        '{"cluster":{"worker":{},"ps":["j-ps-1.ns.svc:2222"]},"task":{"type":"ps","index":1}}')


def test_dynamic_worker_other_types_know_nothing_and_no_ps_is_null() -> None:
    job = view(tfjob("j", "ns", chief=1, worker=2, enableDynamicWorker=True))
    assert tf_config(job, "Chief", 0) == {"cluster": {"worker": {}, "ps": []}, "task": {"type": "chief", "index": 0}}
    assert tf_config(job, "Worker", 0)["cluster"] == {"worker": {"0": "j-worker-0.ns.svc:2222"}, "ps": None}
