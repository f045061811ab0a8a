"""v1alpha1 → v1 (mxnet/v1alpha1/to_v1.py): the seed objects converted field by field into valid v1 jobs with v1
children names and environment, and the mapping's rows (jobMode, cleanupPodPolicy, restart policies, PsRootPort,
schedulerName, duplicate types, list order)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mxjob_controller.core.job_vocabulary import child_name
from mxjob_controller.mxnet.api import parse_job, validate_job
from mxjob_controller.mxnet.v1alpha1 import (
    V1ALPHA1_EXTRA_ANNOTATION,
    to_v1,
    to_v1alpha1,
)
from mxjob_controller.mxnet.wiring import wired_template
from tests.mxnet.v1alpha1.support import (
    V1,
    WORKER_ARGS,
    alpha_job,
    assert_no_managed_annotations,
    container,
    edit,
    entries_of,
    entry,
    extra_of,
    mxnet_ports,
    pod,
    replica,
    seed_container,
    seed_dump,
    seed_manifest,
    v1_job,
)

# --- v1alpha1 → v1 (checklist 3-7, 13) ------------------------------------------------------------------------------

def test_seed_manifest_to_v1() -> None:
    """3: the three types with their replicas and templates; 4: PsRootPort 9000 → the scheduler's mxjob-port;
    5: no PsRootPort → no port (v1's 9091); 6: the template's OnFailure → the replica's; 7: dist → MXTrain;
    13: no cleanupPodPolicy → All."""
    def v1_replica(*args: str, port: int | None = None) -> dict[str, Any]:
        c = seed_container(*args)
        if port is not None:
            c["ports"] = [{"name": "mxjob-port", "containerPort": port}]
        return {"replicas": 1, "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [c], "restartPolicy": "OnFailure"}}}

    v1 = to_v1(seed_manifest())
    assert v1["apiVersion"] == V1
    assert v1["kind"] == "MXJob"
    assert "status" not in v1
    assert v1["spec"] == {
        "jobMode": "MXTrain",
        "mxReplicaSpecs": {"Scheduler": v1_replica(port=9000), "Server": v1_replica(),
                           "Worker": v1_replica(*WORKER_ARGS)},
        "runPolicy": {"cleanPodPolicy": "All"},
    }
    assert v1["metadata"]["name"] == "example-dist-job"
    assert set(v1["metadata"]["annotations"]) == {V1ALPHA1_EXTRA_ANNOTATION}


def test_seed_to_v1_is_a_valid_v1_job() -> None:
    v1 = to_v1(seed_manifest())
    assert [str(e) for e in validate_job(v1)] == []
    view, errors = parse_job(v1)
    assert errors == []
    assert view is not None
    assert view.job_mode == "MXTrain"
    assert view.run_policy.clean_pod_policy == "All"
    assert {t: (r.replicas, r.port, r.restart_policy) for t, r in view.replicas.items()} == {
        "Scheduler": (1, 9000, "OnFailure"), "Server": (1, 9091, "OnFailure"), "Worker": (1, 9091, "OnFailure")}
    env = {e["name"]: e["value"] for e in wired_template(view, "Worker", 0)["spec"]["containers"][0]["env"]}
    assert env["DMLC_PS_ROOT_PORT"] == "9000"   # 4
    assert env["DMLC_PS_ROOT_URI"] == "example-dist-job-scheduler-0"


def test_seed_dump_to_v1() -> None:
    """The persisted shape: RuntimeId, mxImage and terminationPolicy only in the annotation; PsRootPort 9091 on
    SERVER and WORKER becomes their mxjob-port; the v1alpha1 status is dropped."""
    dump = seed_dump()
    v1 = to_v1(dump)
    assert "status" not in v1
    assert {k: v for k, v in v1["metadata"].items() if k != "annotations"} == dump["metadata"]
    assert [mxnet_ports(v1, k) for k in ("Scheduler", "Server", "Worker")] == [
        [{"name": "mxjob-port", "containerPort": p}] for p in (9000, 9091, 9091)]
    extra = extra_of(v1, V1ALPHA1_EXTRA_ANNOTATION)
    assert extra is not None
    assert (extra["RuntimeId"], extra["mxImage"], extra["terminationPolicy"]) == (
        "aycw", "jzp1025/mxnet:test", {"chief": {"replicaIndex": 0, "replicaName": "SCHEDULER"}})
    assert "aycw" not in json.dumps(v1["spec"])
    assert [str(e) for e in validate_job(v1)] == []
    view, _ = parse_job(v1)
    assert view is not None
    assert {t: r.port for t, r in view.replicas.items()} == {"Scheduler": 9000, "Server": 9091, "Worker": 9091}


def test_v1_children_have_v1_names() -> None:
    """23: pods and services are ``<job>-<type>-<index>``: no RuntimeId, no random suffix."""
    view, _ = parse_job(to_v1(seed_dump()))
    assert view is not None
    names = {child_name(view.name, t, i) for t, r in view.replicas.items() for i in range(r.replicas)}
    assert names == {"example-dist-job-scheduler-0", "example-dist-job-server-0", "example-dist-job-worker-0"}


def test_user_env_is_kept_and_dmlc_appended() -> None:
    """24: two user variables on the mxnet container stay first and unchanged (v1alpha1 overwrote Env[0..5] and
    panicked with fewer than 6); the DMLC variables follow."""
    job = seed_manifest()
    user_env = [{"name": "PYTHONUNBUFFERED", "value": "1"}, {"name": "MXNET_ENGINE_TYPE", "value": "NaiveEngine"}]
    for e in entries_of(job):
        e["template"]["spec"]["containers"][0]["env"] = copy.deepcopy(user_env)
    view, errors = parse_job(to_v1(job))
    assert view is not None, errors
    env = wired_template(view, "Server", 0)["spec"]["containers"][0]["env"]
    assert env[:2] == user_env
    assert [e["name"] for e in env[2:]] == ["MX_CONFIG", "DMLC_PS_ROOT_PORT", "DMLC_PS_ROOT_URI", "DMLC_NUM_SERVER",
                                            "DMLC_NUM_WORKER", "DMLC_ROLE", "DMLC_USE_KUBERNETES"]


def test_long_job_name_root_uri_is_the_service_name() -> None:
    """25: over 40 characters, DMLC_PS_ROOT_URI still names the scheduler's Service (v1alpha1 truncated one and
    not the other)."""
    job = seed_manifest()
    job["metadata"]["name"] = name = "a-rather-long-mxnet-job-name-of-fifty-chars-x"
    assert len(name) > 40
    view, errors = parse_job(to_v1(job))
    assert view is not None, errors
    env = {e["name"]: e["value"] for e in wired_template(view, "Worker", 0)["spec"]["containers"][0]["env"]}
    assert env["DMLC_PS_ROOT_URI"] == child_name(name, "Scheduler", 0) == f"{name}-scheduler-0"


@pytest.mark.parametrize(("mode", "v1_mode", "extra"), [
    ("dist", "MXTrain", None), ("", "MXTrain", {"was": "", "now": "MXTrain"}),
    (None, "MXTrain", {"was": None, "now": "MXTrain"}),
    ("local", None, {"was": "local", "now": None}),   # invalid with these types, yet it converts and comes back
])
def test_job_mode_maps_to_mxtrain_and_comes_back(mode: str | None, v1_mode: str | None,
                                                 extra: dict[str, Any] | None) -> None:
    """7: dist (and an empty or unset mode) run as MXTrain, local as a v1 job without a mode; the original
    survives the round trip."""
    job = alpha_job()
    if mode is None:
        job["spec"].pop("jobMode")
    else:
        job["spec"]["jobMode"] = mode
    v1 = to_v1(job)
    assert v1["spec"].get("jobMode") == v1_mode
    assert (extra_of(v1, V1ALPHA1_EXTRA_ANNOTATION) or {}).get("jobMode") == extra
    assert to_v1alpha1(v1)["spec"] == job["spec"]


@pytest.mark.parametrize("template", [pod(restartPolicy="OnFailure"), pod()])
def test_a_local_job_is_a_v1_job_with_one_worker_and_no_mode_and_reads_back_as_local(
        template: dict[str, Any]) -> None:
    """The old spec's local job (one WORKER, no scheduler or server) runs as one process: v1 with only a Worker of
    1 and no jobMode (v1 requires no type then, and its workers decide the job), a valid v1 job whose one pod
    gets no scheduler address. Back in v1alpha1 it reads as ``local`` with nothing left in annotations, and a v1
    job of that shape reads as ``local`` too."""
    job = alpha_job(entry("WORKER", template=template), jobMode="local")
    v1 = to_v1(job)
    assert "jobMode" not in v1["spec"] and list(v1["spec"]["mxReplicaSpecs"]) == ["Worker"]
    assert (extra_of(v1, V1ALPHA1_EXTRA_ANNOTATION) or {}).get("jobMode") is None, "derived, not remembered"
    view, errors = parse_job({**v1, "metadata": {**v1["metadata"], "uid": "u"}})
    assert errors == [] and view is not None and view.job_mode == ""
    env = {e["name"]: e["value"] for e in wired_template(view, "Worker", 0)["spec"]["containers"][0]["env"]}
    assert (env["DMLC_ROLE"], env["DMLC_PS_ROOT_URI"], env["DMLC_NUM_SERVER"], env["DMLC_NUM_WORKER"]) == (
        "worker", "", "0", "1")
    back = to_v1alpha1(v1)
    assert back["spec"] == job["spec"]
    assert_no_managed_annotations(back)
    def without_mode(specs: dict[str, Any]) -> dict[str, Any]:
        return edit(lambda j: j["spec"].pop("jobMode"), lambda: v1_job(specs))
    assert to_v1alpha1(without_mode({"worker": replica()}))["spec"]["jobMode"] == "local"
    for other in (without_mode({"Worker": replica(2)}), without_mode({"Server": replica(), "Worker": replica()})):
        alpha = to_v1alpha1(other)
        assert "jobMode" not in alpha["spec"] and to_v1(alpha)["spec"] == other["spec"]


@pytest.mark.parametrize(("policy", "v1_policy"), [(None, "All"), ("", "All"), ("All", "All"),
                                                   ("Running", "Running"), ("None", "None")])
def test_cleanup_pod_policy(policy: str | None, v1_policy: str) -> None:
    """13: unset and "" behave as All (written explicitly: whatever a v1 controller's default); Running and None
    map one to one."""
    job = alpha_job() if policy is None else alpha_job(cleanupPodPolicy=policy)
    v1 = to_v1(job)
    assert v1["spec"]["runPolicy"] == {"cleanPodPolicy": v1_policy}
    view, _ = parse_job(v1)
    assert view is not None
    assert view.run_policy.clean_pod_policy == v1_policy
    assert to_v1alpha1(v1)["spec"] == job["spec"]


def test_restart_policy_from_the_template() -> None:
    """6: the template's policy becomes the replica's (v1 overrides the template with it); no template policy:
    v1's Never."""
    job = alpha_job(entry("SCHEDULER", template=pod(restartPolicy="Always")),
                    entry("SERVER", template=pod()), entry("WORKER", template=pod(restartPolicy="Never")))
    v1 = to_v1(job)
    view, _ = parse_job(v1)
    assert view is not None
    assert {t: r.restart_policy for t, r in view.replicas.items()} == {"Scheduler": "Always", "Server": "Never",
                                                                       "Worker": "Never"}
    assert "restartPolicy" not in v1["spec"]["mxReplicaSpecs"]["Server"]
    assert to_v1alpha1(v1)["spec"] == job["spec"]


def test_ps_root_port_on_each_type() -> None:
    """Each entry's PsRootPort is its own type's mxjob-port (v1 reads each type's); a template port of that name
    is overwritten, other ports kept; the scheduler's is DMLC_PS_ROOT_PORT."""
    job = alpha_job(
        entry("SCHEDULER", template=pod(container(ports=[{"name": "mxjob-port", "containerPort": 1234}])),
              PsRootPort=9000),
        entry("SERVER", template=pod(container("sidecar"), container(ports=[{"name": "http", "containerPort": 80}])),
              PsRootPort=9001),
        entry("WORKER", 2, PsRootPort=9002))
    v1 = to_v1(job)
    assert mxnet_ports(v1, "Scheduler") == [{"name": "mxjob-port", "containerPort": 9000}]
    assert mxnet_ports(v1, "Server") == [{"name": "http", "containerPort": 80},
                                         {"name": "mxjob-port", "containerPort": 9001}]
    assert mxnet_ports(v1, "Worker") == [{"name": "mxjob-port", "containerPort": 9002}]
    view, errors = parse_job(v1)
    assert view is not None, errors
    assert {t: r.port for t, r in view.replicas.items()} == {"Scheduler": 9000, "Server": 9001, "Worker": 9002}
    env = {e["name"]: e["value"] for e in wired_template(view, "Worker", 1)["spec"]["containers"][0]["env"]}
    assert env["DMLC_PS_ROOT_PORT"] == "9000"
    assert to_v1alpha1(v1)["spec"] == job["spec"]


def test_scheduler_name_goes_to_templates_without_one() -> None:
    job = alpha_job(entry("SCHEDULER", template=pod(schedulerName="default-scheduler")), entry("SERVER"),
                    entry("WORKER", template=pod(schedulerName="")), schedulerName="volcano")
    v1 = to_v1(job)
    names = {k: r["template"]["spec"].get("schedulerName") for k, r in v1["spec"]["mxReplicaSpecs"].items()}
    assert names == {"Scheduler": "default-scheduler", "Server": "volcano", "Worker": "volcano"}
    assert "schedulerName" not in v1["spec"]
    assert to_v1alpha1(v1)["spec"] == job["spec"]


def test_duplicate_types_stay_invalid_in_v1() -> None:
    """v1 cannot hold two Workers: the second gets another spelling, which v1 validation refuses, as v1alpha1's
    does; and the list comes back as it was."""
    job = alpha_job(entry("SCHEDULER"), entry("SERVER"), entry("WORKER"), entry("WORKER", 3))
    v1 = to_v1(job)
    assert list(v1["spec"]["mxReplicaSpecs"]) == ["Scheduler", "Server", "Worker", "WORKER"]
    assert [e.field for e in validate_job(v1)] == ["spec.mxReplicaSpecs"]
    assert "Duplicate value" in str(validate_job(v1)[0])
    assert to_v1alpha1(v1)["spec"] == job["spec"]


def test_list_order_is_kept() -> None:
    job = alpha_job(entry("WORKER", 2), entry("SCHEDULER", PsRootPort=9000), entry("SERVER"))
    v1 = to_v1(job)
    assert [r["key"] for r in extra_of(v1, V1ALPHA1_EXTRA_ANNOTATION)["replicaSpecs"]] == ["Worker", "Scheduler",
                                                                                           "Server"]
    assert [e["mxReplicaType"] for e in entries_of(to_v1alpha1(v1))] == ["WORKER", "SCHEDULER", "SERVER"]
