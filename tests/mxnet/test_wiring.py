"""The MXNet environment every replica gets (pure): MX_CONFIG field by field and byte for byte as Go wrote it,
the DMLC_* variables of 1/1/1, 1/2/2 and worker-only jobs, custom ports and TVM keys, and user-set names kept."""

from __future__ import annotations

import json

import pytest

from mxjob_controller.mxnet.wiring import dmlc_env, wired_template, with_env
from tests.mxnet_support import replica, view


def env_dict(env: list[dict[str, str]]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in env}


def test_mx_config_of_a_1_1_1_job_field_by_field() -> None:
    job = view({"Scheduler": replica(1), "Server": replica(1), "Worker": replica(1)})
    config = json.loads(env_dict(dmlc_env(job, "Worker", 0))["MX_CONFIG"])
    assert set(config) == {"cluster", "labels", "task"}
    assert config["cluster"] == {"scheduler": [{"url": "j-scheduler-0", "port": 9091}],
                                 "server": [{"url": "j-server-0", "port": 9091}],
                                 "worker": [{"url": "j-worker-0", "port": 9091}]}
    assert config["labels"] == {"scheduler": "", "server": "", "worker": ""}
    assert config["task"] == {"type": "worker", "index": 0}


def test_mx_config_is_compact_json_in_go_field_order() -> None:
    job = view({"Worker": replica(1), "Scheduler": replica(1), "Server": replica(1)})
    assert env_dict(dmlc_env(job, "Server", 0))["MX_CONFIG"] == (
        '{"cluster":{"scheduler":[{"url":"j-scheduler-0","port":9091}],"server":[{"url":"j-server-0","port":9091}],'
        '"worker":[{"url":"j-worker-0","port":9091}]},"labels":{"scheduler":"","server":"","worker":""},'
        '"task":{"type":"server","index":0}}')


@pytest.mark.parametrize(("rtype", "index", "role", "worker_id"), [
    ("Scheduler", 0, "scheduler", None), ("Server", 0, "server", None), ("Worker", 0, "worker", "0")])
def test_dmlc_variables_of_a_1_1_1_job_in_upstream_order(rtype: str, index: int, role: str,
                                                          worker_id: str | None) -> None:
    job = view({"Scheduler": replica(1), "Server": replica(1), "Worker": replica(1)})
    env = dmlc_env(job, rtype, index)
    expected = [("DMLC_PS_ROOT_PORT", "9091"), ("DMLC_PS_ROOT_URI", "j-scheduler-0"), ("DMLC_NUM_SERVER", "1"),
                ("DMLC_NUM_WORKER", "1"), ("DMLC_ROLE", role), ("DMLC_USE_KUBERNETES", "1")]
    if worker_id is not None:
        expected.append(("DMLC_WORKER_ID", worker_id))
    assert env[0]["name"] == "MX_CONFIG"
    assert [(e["name"], e["value"]) for e in env[1:]] == expected


def test_a_1_2_2_job_counts_servers_and_workers_and_numbers_workers_only() -> None:
    job = view({"Scheduler": replica(1), "Server": replica(2), "Worker": replica(2)})
    for rtype, count in (("Scheduler", 1), ("Server", 2), ("Worker", 2)):
        for i in range(count):
            env = env_dict(dmlc_env(job, rtype, i))
            assert (env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"]) == ("2", "2")
            assert env.get("DMLC_WORKER_ID") == (str(i) if rtype == "Worker" else None)
            assert json.loads(env["MX_CONFIG"])["task"] == {"type": rtype.lower(), "index": i}
    cluster = json.loads(env_dict(dmlc_env(job, "Worker", 1))["MX_CONFIG"])["cluster"]
    assert [u["url"] for u in cluster["worker"]] == ["j-worker-0", "j-worker-1"]


def test_without_a_scheduler_the_root_is_empty_and_port_zero() -> None:
    env = env_dict(dmlc_env(view({"Worker": replica(2)}), "Worker", 1))
    assert (env["DMLC_PS_ROOT_URI"], env["DMLC_PS_ROOT_PORT"], env["DMLC_NUM_SERVER"]) == ("", "0", "0")
    assert env["DMLC_WORKER_ID"] == "1"


def test_custom_ports_and_tvm_keys() -> None:
    port = {"container": {"ports": [{"name": "mxjob-port", "containerPort": 9999}]}}
    job = view({"TunerTracker": replica(1, **port), "TunerServer": {**replica(2), "label": "gpu-key"},
                "Tuner": replica(1, metadata={"annotations": {"tuner-server-key": "annotated"}})}, jobMode="MXTune")
    config = json.loads(env_dict(dmlc_env(job, "TunerServer", 1))["MX_CONFIG"])
    assert config["cluster"]["tunertracker"] == [{"url": "j-tunertracker-0", "port": 9999}]
    assert config["labels"] == {"tuner": "annotated", "tunerserver": "gpu-key", "tunertracker": ""}


def test_user_set_names_are_kept_and_not_duplicated() -> None:
    user = [{"name": "DMLC_ROLE", "value": "custom"}, {"name": "MY_VAR", "value": "1"},
            {"name": "MX_CONFIG", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}]
    job = view({"Scheduler": replica(1, container={"env": user}), "Worker": replica(1)})
    env = wired_template(job, "Scheduler", 0)["spec"]["containers"][0]["env"]
    assert env[:3] == user
    names = [e["name"] for e in env]
    assert len(names) == len(set(names))
    assert names[3:] == ["DMLC_PS_ROOT_PORT", "DMLC_PS_ROOT_URI", "DMLC_NUM_SERVER", "DMLC_NUM_WORKER",
                         "DMLC_USE_KUBERNETES"]
    assert with_env(None, [{"name": "A", "value": "1"}]) == [{"name": "A", "value": "1"}]


def test_every_container_is_wired_and_the_view_is_untouched() -> None:
    job = view({"Worker": {"replicas": 1, "template": {"spec": {"containers": [
        {"name": "mxnet", "image": "a"}, {"name": "sidecar", "image": "b"}]}}}})
    template = wired_template(job, "Worker", 0)
    assert all(env_dict(c["env"])["DMLC_ROLE"] == "worker" for c in template["spec"]["containers"])
    assert "env" not in job.replicas["Worker"].pod_template()["spec"]["containers"][0]
