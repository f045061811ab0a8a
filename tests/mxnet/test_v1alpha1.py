"""MXJob v1alpha1 (mxnet/v1alpha1/): its schema, its validation, and the lossless conversion to and from v1.

Pure functions, table-driven, no server: the conversion webhook and the embedded API server's converter only move
these functions' results. The seed objects are mx-operator's (jzp1025 fork) ``mx_job_dist.yaml`` and the
``kubectl get -o yaml`` dump of it from its README (research note §4, checklist §5.3).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable
from typing import Any

import pytest

from mxjob_controller.core import job_status as validation_failure
from mxjob_controller.core.job_vocabulary import child_name
from mxjob_controller.kubeflow_api.crd_schema import structural, structural_problems
from mxjob_controller.mxnet import crd, v1alpha1
from mxjob_controller.mxnet.api import parse_job, validate_job
from mxjob_controller.mxnet.v1alpha1 import (
    V1_EXTRA_ANNOTATION,
    V1ALPHA1_EXTRA_ANNOTATION,
    ConversionError,
    apply_defaults,
    convert,
    to_v1,
    to_v1alpha1,
    validate,
)
from mxjob_controller.mxnet.wiring import wired_template

ALPHA = "kubeflow.org/v1alpha1"
V1 = "kubeflow.org/v1"
V1BETA1 = "kubeflow.org/v1beta1"
WORKDIR = "/incubator-mxnet/example/image-classification"
MANAGED = (V1ALPHA1_EXTRA_ANNOTATION, V1_EXTRA_ANNOTATION)


# --- the seed objects --------------------------------------------------------------------------------------------

def seed_container(*args: str) -> dict[str, Any]:
    return {"image": "jzp1025/mxnet:test", "name": "mxnet", "command": ["python"],
            "args": list(args) or ["train_mnist.py"], "workingDir": WORKDIR}


WORKER_ARGS = ("train_mnist.py", "--num-epochs=10", "--num-layers=2", "--kv-store=dist_device_sync")


def seed_manifest() -> dict[str, Any]:
    """``examples/mxjob_sample/mx_job_dist.yaml``, as the README shows it."""
    def entry(rtype: str, *args: str, **extra: Any) -> dict[str, Any]:
        return {"replicas": 1, "mxReplicaType": rtype, **extra,
                "template": {"spec": {"containers": [seed_container(*args)], "restartPolicy": "OnFailure"}}}

    return {"apiVersion": ALPHA, "kind": "MXJob", "metadata": {"name": "example-dist-job"},
            "spec": {"jobMode": "dist", "replicaSpecs": [
                entry("SCHEDULER", PsRootPort=9000), entry("SERVER"), entry("WORKER", *WORKER_ARGS)]}}


def seed_dump() -> dict[str, Any]:
    """``kubectl get -o yaml mxjobs example-dist-job`` from the README: defaults and RuntimeId persisted."""
    def entry(rtype: str, port: int, *args: str) -> dict[str, Any]:
        container = {**seed_container(*args), "resources": {}}
        return {"PsRootPort": port, "mxReplicaType": rtype, "replicas": 1,
                "template": {"metadata": {"creationTimestamp": None},
                             "spec": {"containers": [container], "restartPolicy": "OnFailure"}}}

    return {
        "apiVersion": ALPHA, "kind": "MXJob",
        "metadata": {"clusterName": "", "creationTimestamp": "2018-08-10T07:13:39Z", "generation": 1,
                     "name": "example-dist-job", "namespace": "default", "resourceVersion": "491499",
                     "selfLink": "/apis/kubeflow.org/v1alpha1/namespaces/default/mxjobs/example-dist-job",
                     "uid": "e800b1ed-9c6c-11e8-962f-704d7b2c0a63"},
        "spec": {"RuntimeId": "aycw", "jobMode": "dist", "mxImage": "jzp1025/mxnet:test",
                 "replicaSpecs": [entry("SCHEDULER", 9000), entry("SERVER", 9091), entry("WORKER", 9091, *WORKER_ARGS)],
                 "terminationPolicy": {"chief": {"replicaIndex": 0, "replicaName": "SCHEDULER"}}},
        "status": {"phase": "Running", "reason": "",
                   "replicaStatuses": [{"ReplicasStates": {"Running": 1}, "mx_replica_type": t, "state": "Running"}
                                       for t in ("SCHEDULER", "SERVER", "WORKER")],
                   "state": "Running"},
    }


# --- builders ----------------------------------------------------------------------------------------------------

def container(name: str = "mxnet", image: str = "mxnet/python:1.9.1", **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def pod(*containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"spec": {"containers": list(containers) or [container()], **extra}}


def entry(rtype: str | None, replicas: int | None = 1, template: dict[str, Any] | None = None,
          **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {**extra, "template": template if template is not None else pod(restartPolicy="OnFailure")}
    if rtype is not None:
        out["mxReplicaType"] = rtype
    if replicas is not None:
        out["replicas"] = replicas
    return out


def alpha_job(*entries: dict[str, Any], name: str = "mxjob", **spec: Any) -> dict[str, Any]:
    """A valid v1alpha1 job (all three types) unless entries are given."""
    if not entries:
        entries = (entry("SCHEDULER", PsRootPort=9000), entry("SERVER"), entry("WORKER", 2))
    return {"apiVersion": ALPHA, "kind": "MXJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobMode": "dist", **spec, "replicaSpecs": list(entries)}}


def replica(replicas: int | None = 1, template: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {**extra, "template": template if template is not None else pod()}
    if replicas is not None:
        out["replicas"] = replicas
    return out


def v1_job(specs: dict[str, Any] | None = None, name: str = "mxjob", **spec: Any) -> dict[str, Any]:
    if specs is None:
        specs = {"Scheduler": replica(), "Server": replica(2), "Worker": replica(3)}
    return {"apiVersion": V1, "kind": "MXJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobMode": "MXTrain", **spec, "mxReplicaSpecs": specs}}


def edit(fn: Callable[[dict[str, Any]], Any], base: Callable[[], dict[str, Any]] = alpha_job) -> dict[str, Any]:
    job = base()
    fn(job)
    return job


def entries_of(job: dict[str, Any]) -> list[dict[str, Any]]:
    return job["spec"]["replicaSpecs"]


def extra_of(job: dict[str, Any], key: str) -> dict[str, Any] | None:
    raw = ((job.get("metadata") or {}).get("annotations") or {}).get(key)
    return json.loads(raw) if raw is not None else None


def without_status(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "status"}


def mxnet_ports(v1: dict[str, Any], key: str) -> list[dict[str, Any]]:
    containers = v1["spec"]["mxReplicaSpecs"][key]["template"]["spec"]["containers"]
    return next(c for c in containers if c["name"] == "mxnet").get("ports") or []


# --- what the API server would prune --------------------------------------------------------------------------------

def pruned(value: Any, schema: dict[str, Any], path: str) -> list[str]:
    """The fields of ``value`` a structural ``schema`` does not declare (the API server drops them)."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return []
    out: list[str] = []
    if isinstance(value, dict):
        props, more = schema.get("properties"), schema.get("additionalProperties")
        for key, sub in value.items():
            if props is not None and key in props:
                out += pruned(sub, props[key], f"{path}.{key}")
            elif isinstance(more, dict):
                out += pruned(sub, more, f"{path}[{key}]")
            else:
                out.append(f"{path}.{key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, sub in enumerate(value):
            out += pruned(sub, schema["items"], f"{path}[{i}]")
    return out


def pruned_fields(obj: dict[str, Any]) -> list[str]:
    """What the API server would prune from ``obj``'s spec and status under its version's schema."""
    if obj["apiVersion"] == ALPHA:
        spec, status = v1alpha1.spec_schema(), v1alpha1.status_schema()
    else:
        spec, status = crd.spec_schema(), crd.status_schema()
    return pruned(obj.get("spec"), spec, "spec") + pruned(obj.get("status"), status, "status")


# --- schema --------------------------------------------------------------------------------------------------------

def test_schema_is_structural_and_typed() -> None:
    schema = v1alpha1.openapi_schema()
    assert structural_problems(schema) == []
    assert set(schema["properties"]) == {"apiVersion", "kind", "metadata", "spec", "status"}

    def nodes(node: dict[str, Any], path: str) -> list[tuple[str, dict[str, Any]]]:
        """Our own nodes (not Kubernetes' pod template)."""
        out = [(path, node)]
        for key, sub in (node.get("properties") or {}).items():
            if key != "template":
                out += nodes(sub, f"{path}.{key}")
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                out += nodes(node[key], f"{path}.{key}")
        return out

    for path, node in nodes(schema["properties"]["spec"], "spec") + nodes(schema["properties"]["status"], "status"):
        if path == "status.v1":
            continue   # the v1 status carried unchanged: v1's own schema checks it where it is stored
        assert "x-kubernetes-preserve-unknown-fields" not in node, path
        assert node.get("type") in ("object", "array", "string", "integer"), path


def test_schema_has_the_seed_keys() -> None:
    spec = v1alpha1.spec_schema()["properties"]
    assert set(spec) == {"RuntimeId", "replicaSpecs", "mxImage", "terminationPolicy", "cleanupPodPolicy",
                         "schedulerName", "jobMode"}
    item = spec["replicaSpecs"]["items"]["properties"]
    assert set(item) == {"mxReplicaType", "replicas", "template", "PsRootPort"}
    assert item["mxReplicaType"]["enum"] == ["SCHEDULER", "SERVER", "WORKER"]
    assert {k: v for k, v in item["template"].items() if k != "description"} == \
        structural("io.k8s.api.core.v1.PodTemplateSpec")
    assert item["PsRootPort"]["type"] == "integer"
    assert spec["cleanupPodPolicy"]["enum"] == ["", "All", "Running", "None"]
    chief = spec["terminationPolicy"]["properties"]["chief"]["properties"]
    assert {k: v["type"] for k, v in chief.items()} == {"replicaName": "string", "replicaIndex": "integer"}
    status = v1alpha1.status_schema()["properties"]
    assert set(status) == {"phase", "state", "reason", "replicaStatuses", "v1"}
    assert status["v1"]["x-kubernetes-preserve-unknown-fields"] is True   # the v1 status, carried unchanged
    assert set(status["replicaStatuses"]["items"]["properties"]) == {"mx_replica_type", "state", "ReplicasStates"}
    assert status["replicaStatuses"]["items"]["properties"]["ReplicasStates"]["additionalProperties"]["type"] == \
        "integer"


def test_seed_objects_fit_the_schema() -> None:
    """Nothing of the seed manifest is pruned; of the dump only the templates' ``creationTimestamp: null``, which
    the API server prunes from every pod template (as it would under v1)."""
    assert pruned_fields(seed_manifest()) == []
    assert pruned_fields(seed_dump()) == [f"spec.replicaSpecs[{i}].template.metadata.creationTimestamp"
                                          for i in range(3)]


def test_api_constants() -> None:
    assert (v1alpha1.VERSION, v1alpha1.API_VERSION) == ("v1alpha1", ALPHA)
    assert V1ALPHA1_EXTRA_ANNOTATION == "mxjob.kubeflow.org/v1alpha1-spec-extra"
    assert V1_EXTRA_ANNOTATION == "mxjob.kubeflow.org/v1-spec-extra"


# --- defaults (checklist 12) ---------------------------------------------------------------------------------------

def test_defaults_fill_what_is_unset() -> None:
    job = alpha_job(entry(None, None), entry("SCHEDULER", 1, PsRootPort=9000))
    before = copy.deepcopy(job)
    out = apply_defaults(job)
    assert job == before
    assert entries_of(out)[0] | {"template": None} == {"mxReplicaType": "WORKER", "replicas": 1, "PsRootPort": 9091,
                                                       "template": None}
    assert entries_of(out)[1]["PsRootPort"] == 9000
    assert out["spec"]["terminationPolicy"] == {"chief": {"replicaName": "SCHEDULER", "replicaIndex": 0}}


def test_defaults_keep_a_set_termination_policy_and_malformed_parts() -> None:
    job = alpha_job(terminationPolicy={})
    assert apply_defaults(job)["spec"]["terminationPolicy"] == {}
    assert apply_defaults({"spec": {"replicaSpecs": "x"}}) == {"spec": {"replicaSpecs": "x", "terminationPolicy": {
        "chief": {"replicaName": "SCHEDULER", "replicaIndex": 0}}}}
    assert apply_defaults({"spec": 3}) == {"spec": 3}


# --- validation (checklist 10-12) -----------------------------------------------------------------------------------

R = "spec.replicaSpecs"
VALID: list[tuple[str, dict[str, Any]]] = [
    ("seed manifest", seed_manifest()),
    ("seed dump", seed_dump()),
    ("local mode: one WORKER (the old spec's Validate)", alpha_job(entry("WORKER"), jobMode="local")),
    ("local mode: the WORKER's type and replicas defaulted", alpha_job(entry(None, None), jobMode="local")),
    ("local mode: its WORKER as the chief", alpha_job(entry("WORKER"), jobMode="local", terminationPolicy={
        "chief": {"replicaName": "WORKER", "replicaIndex": 0}})),
    ("no jobMode", edit(lambda j: j["spec"].pop("jobMode"))),
    ("defaults: type WORKER, replicas 1", alpha_job(entry("SCHEDULER"), entry("SERVER"), entry(None, None))),
    ("chief SCHEDULER 0 written out", alpha_job(terminationPolicy={"chief": {"replicaName": "SCHEDULER",
                                                                              "replicaIndex": 0}})),
    ("every optional field", alpha_job(RuntimeId="ab12", mxImage="x", schedulerName="volcano",
                                       cleanupPodPolicy="None")),
    ("cleanupPodPolicy empty", alpha_job(cleanupPodPolicy="")),
]

INVALID: list[tuple[str, dict[str, Any], set[str]]] = [
    ("two SCHEDULERs (10)", alpha_job(entry("SCHEDULER"), entry("SCHEDULER"), entry("SERVER"), entry("WORKER")),
     {f"{R}[1].mxReplicaType"}),
    ("absent type defaults to a second WORKER", alpha_job(entry("SCHEDULER"), entry("SERVER"), entry("WORKER"),
                                                          entry(None)), {f"{R}[3].mxReplicaType"}),
    ("unknown type", alpha_job(entry("SCHEDULER"), entry("PS"), entry("SERVER"), entry("WORKER")),
     {f"{R}[1].mxReplicaType"}),
    ("type in v1 spelling", alpha_job(entry("SCHEDULER"), entry("SERVER"), entry("Worker")),
     {f"{R}[2].mxReplicaType", R}),
    ("no mxnet container", edit(lambda j: entries_of(j)[2]["template"]["spec"]["containers"][0].update(name="main")),
     {f"{R}[2].template.spec.containers"}),
    ("2 SCHEDULER replicas", edit(lambda j: entries_of(j)[0].update(replicas=2)), {f"{R}[0].replicas"}),
    ("0 WORKER replicas", edit(lambda j: entries_of(j)[2].update(replicas=0)), {f"{R}[2].replicas"}),
    ("replicas not a number", edit(lambda j: entries_of(j)[1].update(replicas="2")), {f"{R}[1].replicas"}),
    ("another chief: v1 cannot honour it", alpha_job(terminationPolicy={"chief": {"replicaName": "WORKER",
                                                                                  "replicaIndex": 1}}),
     {"spec.terminationPolicy.chief"}),
    ("chief names no type", alpha_job(terminationPolicy={"chief": {"replicaName": "MASTER", "replicaIndex": 0}}),
     {"spec.terminationPolicy.chief.replicaName"}),
    ("no SCHEDULER: the default chief is missing too", edit(lambda j: entries_of(j).pop(0)),
     {R, "spec.terminationPolicy.chief.replicaName"}),
    ("no SERVER", edit(lambda j: entries_of(j).pop(1)), {R}),
    ("termination policy without chief", alpha_job(terminationPolicy={}), {"spec.terminationPolicy.chief"}),
    ("chief index past the replicas",
     alpha_job(terminationPolicy={"chief": {"replicaName": "WORKER", "replicaIndex": 2}}),
     {"spec.terminationPolicy.chief.replicaIndex"}),
    ("negative chief index",
     alpha_job(terminationPolicy={"chief": {"replicaName": "WORKER", "replicaIndex": -1}}),
     {"spec.terminationPolicy.chief.replicaIndex"}),
    ("missing template", edit(lambda j: entries_of(j)[1].pop("template")), {f"{R}[1].template"}),
    ("template without containers", edit(lambda j: entries_of(j)[1].update(template={"spec": {"containers": []}})),
     {f"{R}[1].template.spec.containers"}),
    ("missing image", edit(lambda j: entries_of(j)[0]["template"]["spec"]["containers"][0].pop("image")),
     {f"{R}[0].template.spec.containers[0].image"}),
    ("PsRootPort out of range", edit(lambda j: entries_of(j)[0].update(PsRootPort=70000)), {f"{R}[0].PsRootPort"}),
    ("PsRootPort a string", edit(lambda j: entries_of(j)[0].update(PsRootPort="9000")), {f"{R}[0].PsRootPort"}),
    ("entry not an object", edit(lambda j: entries_of(j).append("WORKER")), {f"{R}[3]"}),
    ("no replicaSpecs", edit(lambda j: j["spec"].pop("replicaSpecs")), {R}),
    ("empty replicaSpecs", edit(lambda j: j["spec"].update(replicaSpecs=[])), {R}),
    ("replicaSpecs a map", edit(lambda j: j["spec"].update(replicaSpecs={"WORKER": entry("WORKER")})), {R}),
    ("no spec", edit(lambda j: j.pop("spec")), {"spec"}),
    ("spec a list", edit(lambda j: j.update(spec=[])), {"spec"}),
    ("bad cleanupPodPolicy", alpha_job(cleanupPodPolicy="Always"), {"spec.cleanupPodPolicy"}),
    ("bad jobMode", alpha_job(jobMode="distributed"), {"spec.jobMode"}),
    ("local mode with a SCHEDULER and a SERVER", alpha_job(entry("SCHEDULER"), entry("SERVER"), entry("WORKER"),
                                                           jobMode="local"),
     {f"{R}[0].mxReplicaType", f"{R}[1].mxReplicaType"}),
    ("local mode with 2 workers", alpha_job(entry("WORKER", 2), jobMode="local"), {f"{R}[0].replicas"}),
    ("local mode without a WORKER: the default chief is missing too", alpha_job(entry("SERVER"), jobMode="local"),
     {R, f"{R}[0].mxReplicaType", "spec.terminationPolicy.chief.replicaName"}),
    ("local mode, empty list", edit(lambda j: j["spec"].update(jobMode="local", replicaSpecs=[])), {R}),
    ("local mode, the SCHEDULER as the chief", alpha_job(entry("WORKER"), jobMode="local", terminationPolicy={
        "chief": {"replicaName": "SCHEDULER", "replicaIndex": 0}}), {"spec.terminationPolicy.chief.replicaName"}),
    ("RuntimeId not a string", alpha_job(RuntimeId=7), {"spec.RuntimeId"}),
    ("name not DNS-1035", alpha_job(name="10-jobs"), {"metadata.name"}),
    ("name too long for its children", alpha_job(name="a" * 60), {"metadata.name"}),
]


def test_enough_invalid_cases() -> None:
    assert len(INVALID) >= 25


@pytest.mark.parametrize(("case", "job"), VALID, ids=[c[0] for c in VALID])
def test_valid_jobs(case: str, job: dict[str, Any]) -> None:
    assert [str(e) for e in validate(job)] == []


@pytest.mark.parametrize(("case", "job", "paths"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_job_reports_expected_paths(case: str, job: dict[str, Any], paths: set[str]) -> None:
    before = copy.deepcopy(job)
    errors = validate(job)
    assert {e.field for e in errors} == paths, [str(e) for e in errors]
    assert len(errors) == len(set(errors))
    assert job == before, "validation must not modify its input"


def test_messages_read_like_kube_and_like_the_old_operator() -> None:
    job = alpha_job(entry("SCHEDULER", 2), entry("PS"), entry("SERVER"), entry("WORKER"), entry("WORKER"),
                    terminationPolicy={"chief": {"replicaName": "MASTER", "replicaIndex": 0}})
    entries_of(job)[3]["template"]["spec"]["containers"][0]["name"] = "main"
    assert [str(e) for e in validate(job)] == [
        f"{R}[0].replicas: Invalid value: 2: must be 1: a job has exactly one SCHEDULER",
        f'{R}[1].mxReplicaType: Unsupported value: "PS": must be one of "SCHEDULER", "SERVER", "WORKER"',
        f'{R}[3].template.spec.containers: Required value: must have a container named "mxnet" (the MXNet process)',
        f'{R}[4].mxReplicaType: Duplicate value: "WORKER": {R}[3] has this type: a job has one replica spec per type',
        'spec.terminationPolicy.chief.replicaName: Invalid value: "MASTER": the job has no replica spec of this type '
        "(Missing ReplicaSpec for chief)",
    ]
    assert [e.reason for e in validate(job)] == ["FieldValueInvalid", "FieldValueNotSupported", "FieldValueRequired",
                                                  "FieldValueDuplicate", "FieldValueInvalid"]


def test_local_mode_is_refused_with_the_old_rules_meaning_naming_the_field_and_the_limit() -> None:
    """The old spec's ``Validate()``: "job mode is local, but its replicas set have replicas type other than
    worker", "job mode is local, but it has more than 1 worker"."""
    job = alpha_job(entry("SCHEDULER"), entry("WORKER", 2), jobMode="local")
    assert [str(e) for e in validate(job)] == [
        f'{R}[0].mxReplicaType: Invalid value: "SCHEDULER": jobMode "local" runs WORKER replicas only (job mode is '
        "local, but its replicas set have replicas type other than worker)",
        f'{R}[1].replicas: Invalid value: 2: must be less than or equal to 1 when jobMode is "local" (job mode is '
        "local, but it has more than 1 worker)",
    ]
    assert f'{R}: Required value: must have a WORKER replica spec: jobMode "local" runs one WORKER' in [
        str(e) for e in validate(alpha_job(entry("SERVER"), jobMode="local"))]


def test_validate_something_not_an_object() -> None:
    assert [str(e) for e in validate(["x"])] == ['Invalid value: ["x"]: must be of type object']


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


# --- v1 → v1alpha1: the status (checklist 14-16) --------------------------------------------------------------------

NOW = "2024-05-01T10:00:00Z"


def cond(ctype: str, status: str = "True", reason: str = "", message: str = "") -> dict[str, str]:
    return {"type": ctype, "status": status, "reason": reason or f"MXJob{ctype}", "message": message,
            "lastUpdateTime": NOW, "lastTransitionTime": NOW}


def with_status(status: dict[str, Any] | None) -> dict[str, Any]:
    job = to_v1(alpha_job(entry("WORKER", 2), entry("SCHEDULER", PsRootPort=9000), entry("SERVER")))
    if status is not None:
        job["status"] = status
    return job


def counts(scheduler: dict[str, int], server: dict[str, int], worker: dict[str, int]) -> dict[str, Any]:
    return {"Scheduler": scheduler, "Server": server, "Worker": worker}


def rs(rtype: str, state: str, **states: int) -> dict[str, Any]:
    return {"mx_replica_type": rtype, "state": state, "ReplicasStates": states}


STATUSES: list[tuple[str, dict[str, Any] | None, dict[str, Any]]] = [
    ("no status yet", None,
     {"phase": "Creating", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running"), rs("SCHEDULER", "Running"), rs("SERVER", "Running")]}),
    ("created", {"conditions": [cond("Created")]},
     {"phase": "Creating", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running"), rs("SCHEDULER", "Running"), rs("SERVER", "Running")]}),
    ("running", {"conditions": [cond("Created"), cond("Running")],
                 "replicaStatuses": counts({"active": 1}, {"active": 1}, {"active": 2})},
     {"phase": "Running", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running", Running=2), rs("SCHEDULER", "Running", Running=1),
                          rs("SERVER", "Running", Running=1)]}),
    ("restarting, a worker failed", {"conditions": [cond("Created"), cond("Restarting")],
                                     "replicaStatuses": counts({"active": 1}, {"active": 1},
                                                               {"active": 1, "failed": 1})},
     {"phase": "Running", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Failed", Running=1, Failed=1), rs("SCHEDULER", "Running", Running=1),
                          rs("SERVER", "Running", Running=1)]}),
    ("only the older count map", {"conditions": [cond("Running")],
                                  "mxReplicaStatuses": counts({"active": 1}, {}, {"succeeded": 1, "active": 1})},
     {"phase": "Running", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running", Running=1, Succeeded=1), rs("SCHEDULER", "Running", Running=1),
                          rs("SERVER", "Running")]}),
    ("succeeded", {"conditions": [cond("Created"), cond("Running", "False"), cond("Succeeded")],
                   "replicaStatuses": counts({"succeeded": 1}, {"active": 1}, {"succeeded": 2})},
     {"phase": "Done", "state": "Succeeded", "reason": "",
      "replicaStatuses": [rs("WORKER", "Succeeded", Succeeded=2), rs("SCHEDULER", "Succeeded", Succeeded=1),
                          rs("SERVER", "Running", Running=1)]}),
    ("some workers succeeded", {"conditions": [cond("Running")],
                                "replicaStatuses": counts({"active": 1}, {"active": 1}, {"succeeded": 1})},
     {"phase": "Running", "state": "Running", "reason": "",
      "replicaStatuses": [rs("WORKER", "Running", Succeeded=1), rs("SCHEDULER", "Running", Running=1),
                          rs("SERVER", "Running", Running=1)]}),
    ("failed", {"conditions": [cond("Created"), cond("Running", "False"),
                               cond("Failed", message="MXJob mxjob has failed because 1 Scheduler replica(s) failed.")],
                "replicaStatuses": counts({"failed": 1}, {}, {})},
     {"phase": "Done", "state": "Failed", "reason": "MXJob mxjob has failed because 1 Scheduler replica(s) failed.",
      "replicaStatuses": [rs("WORKER", "Running"), rs("SCHEDULER", "Failed", Failed=1), rs("SERVER", "Running")]}),
    ("suspended", {"conditions": [cond("Created"), cond("Suspended", message="MXJob mxjob is suspended.")]},
     {"phase": "Creating", "state": "Unknown", "reason": "MXJob mxjob is suspended.",
      "replicaStatuses": [rs("WORKER", "Running"), rs("SCHEDULER", "Running"), rs("SERVER", "Running")]}),
]


@pytest.mark.parametrize(("case", "status", "expected"), STATUSES, ids=[c[0] for c in STATUSES])
def test_status_is_derived_from_v1(case: str, status: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    """14, 15: phase/state from the conditions; replicaStatuses in the spec's list order, from the counts."""
    job = with_status(status)
    before = copy.deepcopy(job)
    derived = to_v1alpha1(job)["status"]
    assert derived.pop("v1", None) == status, "the v1 status rides along, for the way back"
    assert derived == expected
    assert job == before
    assert pruned_fields(to_v1alpha1(job)) == []


def test_invalid_spec_shows_failed_with_the_reason() -> None:
    """16: an invalid v1alpha1 spec stored anyway is marked invalid by the v1 controller; read as v1alpha1 it is
    ``Failed/Failed`` with ``reason: "invalid job spec: ..."``, its paths pointing into the list."""
    job = alpha_job(entry("SCHEDULER", 2, PsRootPort=9000), entry("SERVER"), entry("WORKER"))
    assert [e.field for e in validate(job)] == [f"{R}[0].replicas"]
    v1 = to_v1(job)
    errors = validate_job(v1)
    assert [e.field for e in errors] == ["spec.mxReplicaSpecs.Scheduler.replicas"]
    v1["status"] = validation_failure.invalid_status(None, kind="MXJob", name="mxjob", errors=errors, now=NOW)
    status = to_v1alpha1(v1)["status"]
    assert (status["phase"], status["state"]) == ("Failed", "Failed")
    assert status["reason"] == (f"invalid job spec: {R}[0].replicas: Invalid value: 2: must be 1: a job has "
                                "exactly one Scheduler")


def test_status_of_a_job_with_types_v1alpha1_lacks() -> None:
    v1 = v1_job({"TunerTracker": replica(), "TunerServer": replica(), "Tuner": replica()}, jobMode="MXTune")
    v1["status"] = {"conditions": [cond("Running")], "replicaStatuses": {"Tuner": {"active": 1}}}
    assert to_v1alpha1(v1)["status"] == {"phase": "Running", "state": "Running", "reason": "", "replicaStatuses": [],
                                         "v1": v1["status"]}


# --- round trips (checklist 8, 9) -----------------------------------------------------------------------------------

ALPHA_OBJECTS: list[tuple[str, dict[str, Any]]] = [
    ("seed manifest", seed_manifest()),
    ("seed dump", seed_dump()),
    ("local, every v1alpha1-only field", alpha_job(
        jobMode="local", RuntimeId="k3x9", mxImage="mxjob/mxnet:gpu", schedulerName="volcano",
        terminationPolicy={"chief": {"replicaName": "WORKER", "replicaIndex": 1}}, cleanupPodPolicy="Running")),
    ("jobMode empty, cleanupPodPolicy empty", alpha_job(jobMode="", cleanupPodPolicy="")),
    ("no jobMode, cleanupPodPolicy None", edit(lambda j: [j["spec"].pop("jobMode"),
                                                          j["spec"].update(cleanupPodPolicy="None")])),
    ("several PsRootPorts", alpha_job(entry("SCHEDULER", PsRootPort=9000), entry("SERVER", 2, PsRootPort=9001),
                                      entry("WORKER", 4, PsRootPort=9002))),
    ("order and absent fields", alpha_job(entry(None, None, template=pod()), entry("SERVER", None),
                                          entry("SCHEDULER", PsRootPort=9000))),
    ("duplicates", alpha_job(entry("WORKER"), entry("SCHEDULER"), entry("WORKER", 2), entry(None, 3), entry("SERVER"),
                             entry("SERVER"))),
    ("template ports and restart policies", alpha_job(
        entry("SCHEDULER", template=pod(container(ports=[{"name": "mxjob-port", "containerPort": 7000}])),
              PsRootPort=9000),
        entry("SERVER", template=pod(container(ports=[{"name": "mxjob-port", "containerPort": 7001}]),
                                     restartPolicy="ExitCode")),
        entry("WORKER", template=pod(container("side"), container(ports=[]), restartPolicy="Always"),
              PsRootPort=9091))),
    ("templates v1 cannot place a port in", alpha_job(
        entry("SCHEDULER", template={"metadata": {"labels": {"a": "b"}}}, PsRootPort=9000),
        entry("SERVER", template={"spec": {"containers": []}}, PsRootPort=9001),
        edit(lambda e: e.pop("template"), lambda: entry("WORKER", PsRootPort=9002)))),
    ("scheduler names", alpha_job(entry("SCHEDULER", template=pod(schedulerName="volcano")),
                                  entry("SERVER", template=pod(schedulerName="")), entry("WORKER"),
                                  schedulerName="volcano")),
    ("user annotations and labels", edit(lambda j: j["metadata"].update(
        annotations={"team": "ml", "note": "{}"}, labels={"app": "mnist"}))),
    ("no replicaSpecs", edit(lambda j: j["spec"].pop("replicaSpecs"))),
    ("empty list", edit(lambda j: j["spec"].update(replicaSpecs=[]))),
    ("no spec", {"apiVersion": ALPHA, "kind": "MXJob", "metadata": {"name": "bare"}}),
]

V1_OBJECTS: list[tuple[str, dict[str, Any]]] = [
    ("training-operator shape", v1_job(runPolicy={
        "cleanPodPolicy": "None", "ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 3600, "backoffLimit": 3,
        "schedulingPolicy": {"minAvailable": 3, "queue": "q", "minResources": {"cpu": "4"}, "priorityClass": "high",
                             "scheduleTimeoutSeconds": 30},
        "suspend": True, "managedBy": "kubeflow.org/training-operator"}, successPolicy="AllWorkers")),
    ("mxnet-operator inline run policy", v1_job(cleanPodPolicy="Running", backoffLimit=2, activeDeadlineSeconds=10,
                                                schedulingPolicy={"queue": "a"})),
    ("inline and runPolicy", v1_job(cleanPodPolicy="All", runPolicy={"cleanPodPolicy": "All", "backoffLimit": 1})),
    ("only runPolicy.cleanPodPolicy", v1_job(runPolicy={"cleanPodPolicy": "Running"})),
    ("no run policy at all", v1_job()),
    ("tuning job", v1_job({"TunerTracker": replica(), "TunerServer": replica(2, label="gpu"),
                           "Tuner": replica(restartPolicy="ExitCode")}, jobMode="MXTune")),
    ("train and tune types", v1_job({"Scheduler": replica(), "Server": replica(), "Worker": replica(),
                                     "TunerTracker": replica(), "TunerServer": replica(), "Tuner": replica()})),
    ("ExitCode, labels, template policies", v1_job({
        "Scheduler": replica(restartPolicy="OnFailure"),
        "Server": replica(restartPolicy="ExitCode", template=pod(restartPolicy="OnFailure"), label="ps"),
        "Worker": replica(4, restartPolicy="Always", template=pod(restartPolicy="Always"))})),
    ("lowercase and odd keys", v1_job({"scheduler": replica(), "SERVER": replica(), "worker": replica(None)},
                                      jobMode="")),
    ("case-duplicate keys (invalid)", v1_job({"Worker": replica(), "worker": replica(2), "WORKER": replica(3),
                                              "wOrKeR": replica(4), "Scheduler": replica()})),
    ("no jobMode, explicit ports", edit(lambda j: j["spec"].pop("jobMode"), lambda: v1_job({
        "Scheduler": replica(template=pod(container(ports=[{"name": "mxjob-port", "containerPort": 9000}]))),
        "Server": replica(template=pod(container(ports=[{"name": "mxjob-port", "containerPort": 9001},
                                                        {"name": "metrics", "containerPort": 8080}]))),
        "Worker": replica(template=pod(container("side"), container()))}))),
    ("replicas without templates", v1_job({"Scheduler": {"replicas": 1, "restartPolicy": "Never"},
                                           "Worker": {"restartPolicy": "ExitCode"}, "Server": {}})),
    ("template scheduler names", v1_job({"Scheduler": replica(template=pod(schedulerName="volcano")),
                                         "Server": replica(), "Worker": replica()})),
    ("unknown replica key (invalid)", v1_job({"Chief": replica(), "Worker": replica()})),
    ("empty map", v1_job({})),
    ("no spec", {"apiVersion": V1, "kind": "MXJob", "metadata": {"name": "bare"}}),
    ("v1beta1", edit(lambda j: j.update(apiVersion=V1BETA1), v1_job)),
]


def assert_no_managed_annotations(obj: dict[str, Any]) -> None:
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    assert not set(annotations) & set(MANAGED), annotations


@pytest.mark.parametrize(("case", "job"), ALPHA_OBJECTS, ids=[c[0] for c in ALPHA_OBJECTS])
def test_v1alpha1_round_trip_is_identity(case: str, job: dict[str, Any]) -> None:
    """8: v1alpha1 → v1 → v1alpha1 gives back the same spec and metadata (no annotation left)."""
    before = copy.deepcopy(job)
    v1 = to_v1(job)
    back = to_v1alpha1(v1)
    assert job == before
    assert without_status(back) == without_status(job)
    assert_no_managed_annotations(back)
    assert not (extra_of(v1, V1_EXTRA_ANNOTATION))
    assert to_v1(back) == v1, "stable: converting again gives the same v1 object"
    assert [p for p in pruned_fields(v1) if "creationTimestamp" not in p] == []


@pytest.mark.parametrize(("case", "job"), V1_OBJECTS, ids=[c[0] for c in V1_OBJECTS])
def test_v1_round_trip_is_identity(case: str, job: dict[str, Any]) -> None:
    """9: v1 → v1alpha1 → v1 gives back the same object (runPolicy, successPolicy, Tuner types, ExitCode, labels,
    key spellings), whatever v1alpha1 can express of it."""
    before = copy.deepcopy(job)
    alpha = to_v1alpha1(job)
    back = to_v1(alpha)
    assert job == before
    back["apiVersion"] = job["apiVersion"]
    assert back == job
    assert_no_managed_annotations(back)
    assert to_v1alpha1(back) == alpha, "stable"
    assert pruned_fields(alpha) == []


def test_a_crafted_annotation_cannot_drop_a_type_v1alpha1_needs() -> None:
    """``typeAbsent`` means "an unset type, which defaulted to WORKER": on any other key it is ignored."""
    job = v1_job()
    job["metadata"]["annotations"] = {V1ALPHA1_EXTRA_ANNOTATION: json.dumps(
        {"replicaSpecs": [{"key": "Scheduler", "typeAbsent": True}, {"key": "Worker", "typeAbsent": True}]})}
    assert [e.get("mxReplicaType") for e in entries_of(to_v1alpha1(job))] == ["SCHEDULER", None, "SERVER"]


@pytest.mark.parametrize("planted", ["{", "[]", "5", '{"replicaSpecs": 5}', '{"replicaSpecs": [5]}',
                                     '{"fields": []}', '{"jobMode": "x"}'])
def test_an_unreadable_v1alpha1_annotation_is_ignored_not_fatal(planted: str) -> None:
    """Issue 33: anyone who may annotate a job can plant the v1alpha1 extra (``kubectl annotate``); reading the job
    as v1alpha1 must not fail over it (one such job made every v1alpha1 list fail): it reads as without it."""
    job = v1_job()
    job["metadata"]["annotations"] = {"team": "ml"}
    clean = to_v1alpha1(job)
    job["metadata"]["annotations"][V1ALPHA1_EXTRA_ANNOTATION] = planted
    assert to_v1alpha1(job) == clean
    assert V1ALPHA1_EXTRA_ANNOTATION not in clean["metadata"]["annotations"]


def test_a_v1_object_with_a_status_round_trips_with_it() -> None:
    """An update through v1alpha1 gets the stored status back in v1alpha1 form (the API server keeps the status of
    a main-resource write): the way back to v1 must restore it, or the job would be stored with none and run
    again."""
    job = with_status({"conditions": [cond("Succeeded")], "startTime": NOW, "completionTime": NOW})
    assert to_v1(to_v1alpha1(job)) == job
    new = alpha_job()
    assert "status" not in to_v1(new), "a job created as v1alpha1 has no v1 status yet"


def test_v1_only_content_rides_in_the_annotation() -> None:
    job = dict(V1_OBJECTS)["tuning job"]
    alpha = to_v1alpha1(job)
    assert alpha["spec"] == {"replicaSpecs": []}
    extra = extra_of(alpha, V1_EXTRA_ANNOTATION)
    assert extra is not None
    assert extra["mxReplicaSpecs"] == job["spec"]["mxReplicaSpecs"]
    assert extra["jobMode"] == {"was": "MXTune", "now": None}
    assert extra["spec"] == {}


def test_annotation_text_is_deterministic() -> None:
    a = to_v1(seed_dump())["metadata"]["annotations"][V1ALPHA1_EXTRA_ANNOTATION]
    b = to_v1(json.loads(json.dumps(seed_dump())))["metadata"]["annotations"][V1ALPHA1_EXTRA_ANNOTATION]
    assert a == b
    assert a == json.dumps(json.loads(a), sort_keys=True, separators=(",", ":"))


def test_stale_annotations_are_dropped_and_user_ones_kept() -> None:
    job = alpha_job()
    job["metadata"]["annotations"] = {V1ALPHA1_EXTRA_ANNOTATION: '{"RuntimeId":"old"}', "team": "ml"}
    v1 = to_v1(job)
    assert extra_of(v1, V1ALPHA1_EXTRA_ANNOTATION).get("RuntimeId") is None
    assert v1["metadata"]["annotations"]["team"] == "ml"
    back = to_v1alpha1(v1)
    assert back["metadata"]["annotations"] == {"team": "ml"}
    only_ours = v1_job()
    only_ours["metadata"]["annotations"] = {V1_EXTRA_ANNOTATION: "{}"}
    assert "annotations" not in to_v1alpha1(only_ours)["metadata"] or \
        set(to_v1alpha1(only_ours)["metadata"]["annotations"]) == {V1_EXTRA_ANNOTATION}


def test_empty_annotations_of_the_user_are_kept() -> None:
    """A v1 job whose every field v1alpha1 can express gets no annotation, and keeps the map it had."""
    never = pod(restartPolicy="Never")
    job = v1_job({t: replica(template=never, restartPolicy="Never") for t in ("Scheduler", "Server", "Worker")},
                 runPolicy={"cleanPodPolicy": "All"})
    job["metadata"]["annotations"] = {}
    alpha = to_v1alpha1(job)
    assert alpha["metadata"]["annotations"] == {}
    assert to_v1(alpha) == job


# --- edits through either version win over the annotation ----------------------------------------------------------

def test_edits_through_v1alpha1_reach_v1() -> None:
    alpha = to_v1alpha1(to_v1(seed_dump()))
    entries_of(alpha)[2]["replicas"] = 4
    entries_of(alpha)[0]["PsRootPort"] = 9100
    alpha["spec"]["jobMode"] = "local"
    alpha["spec"]["cleanupPodPolicy"] = "None"
    alpha["spec"]["RuntimeId"] = "new1"
    entries_of(alpha)[1]["template"]["spec"]["restartPolicy"] = "Never"
    v1 = to_v1(alpha)
    specs = v1["spec"]["mxReplicaSpecs"]
    assert specs["Worker"]["replicas"] == 4
    assert mxnet_ports(v1, "Scheduler") == [{"name": "mxjob-port", "containerPort": 9100}]
    assert specs["Server"]["restartPolicy"] == "Never"
    assert v1["spec"]["runPolicy"] == {"cleanPodPolicy": "None"}
    assert "jobMode" not in v1["spec"], "local: no mode in v1"
    assert extra_of(v1, V1ALPHA1_EXTRA_ANNOTATION)["RuntimeId"] == "new1"
    assert without_status(to_v1alpha1(v1)) == without_status(alpha)


def test_edits_through_v1_reach_v1alpha1() -> None:
    """A v1 client changes what the annotation also remembers: the v1 values win."""
    job = alpha_job(entry("SCHEDULER", template=pod(), PsRootPort=9000), entry("SERVER"), entry("WORKER"),
                    jobMode="local", cleanupPodPolicy="")
    v1 = to_v1(job)
    specs = v1["spec"]["mxReplicaSpecs"]
    specs["Scheduler"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = 9200
    specs["Scheduler"]["restartPolicy"] = "ExitCode"
    specs["Worker"]["label"] = "w"
    v1["spec"]["jobMode"] = ""
    v1["spec"]["runPolicy"] = {"cleanPodPolicy": "Running", "backoffLimit": 2}
    alpha = to_v1alpha1(v1)
    scheduler = entries_of(alpha)[0]
    assert scheduler["PsRootPort"] == 9200
    assert scheduler["template"]["spec"]["containers"][0]["ports"] == [{"name": "mxjob-port", "containerPort": 9200}]
    assert scheduler["template"]["spec"]["restartPolicy"] == "Never"
    assert "jobMode" not in alpha["spec"]
    assert alpha["spec"]["cleanupPodPolicy"] == "Running"
    assert to_v1(alpha)["spec"] == v1["spec"]


def test_v1alpha1_list_edits_keep_v1_only_fields_with_their_type() -> None:
    v1 = v1_job({"Scheduler": replica(), "Server": replica(label="s"), "worker": replica(label="w")})
    alpha = to_v1alpha1(v1)
    entries_of(alpha).reverse()
    del entries_of(alpha)[1]   # the SERVER
    back = to_v1(alpha)
    assert back["spec"]["mxReplicaSpecs"] == {"worker": replica(label="w"), "Scheduler": replica()}


# --- randomised round trips ------------------------------------------------------------------------------------------

def random_template(rng: random.Random) -> dict[str, Any] | None:
    shape = rng.randrange(12)
    if shape == 0:
        return None
    if shape == 1:
        return {"metadata": {"labels": {"x": "y"}}}
    containers: list[dict[str, Any]] = []
    for name in rng.choice([["mxnet"], ["mxnet"], ["side", "mxnet"], ["main"], []]):
        c = container(name)
        ports = rng.choice([None, [], [{"name": "http", "containerPort": 80}],
                            [{"name": "mxjob-port", "containerPort": rng.choice([9000, 9091, 7777])}]])
        if ports is not None:
            c["ports"] = ports
        if rng.random() < 0.3:
            c["env"] = [{"name": "A", "value": "1"}]
        containers.append(c)
    spec: dict[str, Any] = {"containers": containers}
    for key, values in (("restartPolicy", [None, "OnFailure", "Always", "Never", "ExitCode"]),
                        ("schedulerName", [None, None, "", "kube-batch"])):
        value = rng.choice(values)
        if value is not None:
            spec[key] = value
    return {"spec": spec}


def random_alpha(rng: random.Random) -> dict[str, Any]:
    entries = []
    for _ in range(rng.randrange(0, 6)):
        e: dict[str, Any] = {}
        for key, values in (("mxReplicaType", [None, "SCHEDULER", "SERVER", "WORKER", "WORKER"]),
                            ("replicas", [None, 1, 2, 5]), ("PsRootPort", [None, 9091, 9000, 7777, 9001])):
            value = rng.choice(values)
            if value is not None:
                e[key] = value
        template = random_template(rng)
        if template is not None:
            e["template"] = template
        entries.append(e)
    spec: dict[str, Any] = {"replicaSpecs": entries}
    for key, values in (("jobMode", [None, "", "dist", "local"]), ("cleanupPodPolicy", [None, "", "All", "Running",
                                                                                        "None"]),
                        ("schedulerName", [None, "", "volcano"]), ("RuntimeId", [None, "ab12"]),
                        ("mxImage", [None, "img"]),
                        ("terminationPolicy", [None, {"chief": {"replicaName": "WORKER", "replicaIndex": 0}}])):
        value = rng.choice(values)
        if value is not None:
            spec[key] = value
    meta: dict[str, Any] = {"name": f"job-{rng.randrange(1000)}"}
    if rng.random() < 0.3:
        meta["annotations"] = {"a": "b"}
    return {"apiVersion": ALPHA, "kind": "MXJob", "metadata": meta, "spec": spec}


def random_v1(rng: random.Random) -> dict[str, Any]:
    specs: dict[str, Any] = {}
    for rtype in ("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"):
        for spelling in rng.sample([rtype, rtype.upper(), rtype.lower()], rng.choice([0, 1, 1, 1, 2])):
            r: dict[str, Any] = {}
            for key, values in (("replicas", [None, 1, 3]),
                                ("restartPolicy", [None, "OnFailure", "Always", "Never", "ExitCode"]),
                                ("label", [None, None, "gpu"])):
                value = rng.choice(values)
                if value is not None:
                    r[key] = value
            template = random_template(rng)
            if template is not None:
                r["template"] = template
            specs[spelling] = r
    spec: dict[str, Any] = {"mxReplicaSpecs": specs}
    for key, values in (("jobMode", [None, "", "MXTrain", "MXTrain", "MXTune"]),
                        ("successPolicy", [None, "", "AllWorkers"]),
                        ("cleanPodPolicy", [None, None, "All", "Running"]),
                        ("backoffLimit", [None, 4]),
                        ("runPolicy", [None, {}, {"cleanPodPolicy": "None"}, {"cleanPodPolicy": "All"},
                                       {"suspend": True, "ttlSecondsAfterFinished": 5}])):
        value = rng.choice(values)
        if value is not None:
            spec[key] = copy.deepcopy(value)
    return {"apiVersion": V1, "kind": "MXJob", "metadata": {"name": f"job-{rng.randrange(1000)}"}, "spec": spec}


def test_randomised_v1alpha1_round_trips() -> None:
    rng = random.Random(4)
    for _ in range(300):
        job = random_alpha(rng)
        before = copy.deepcopy(job)
        v1 = to_v1(job)
        back = to_v1alpha1(v1)
        assert job == before
        assert without_status(back) == job, json.dumps(job)
        assert to_v1(back) == v1, json.dumps(job)


def test_randomised_v1_round_trips() -> None:
    rng = random.Random(9)
    for _ in range(300):
        job = random_v1(rng)
        before = copy.deepcopy(job)
        alpha = to_v1alpha1(job)
        back = to_v1(alpha)
        assert job == before
        assert back == job, json.dumps(job)
        assert to_v1alpha1(back) == alpha, json.dumps(job)


def main_container(template: Any) -> dict[str, Any] | None:
    containers = ((template or {}).get("spec") or {}).get("containers") if isinstance(template, dict) else None
    if not containers:
        return None
    return next((c for c in containers if c.get("name") == "mxnet"), containers[0])


def mutate_template(template: Any, rng: random.Random) -> None:
    """One change a user could make to a pod template: its policy, scheduler, or the main container's ports."""
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return
    spec = template["spec"]
    c = main_container(template)
    choice = rng.randrange(6)
    if choice == 0:
        spec["restartPolicy"] = rng.choice(["Always", "OnFailure", "Never", "ExitCode"])
    elif choice == 1:
        spec.pop(rng.choice(["restartPolicy", "schedulerName"]), None)
    elif choice == 2:
        spec["schedulerName"] = rng.choice(["", "volcano", "other"])
    elif c is not None and choice == 3:
        c.pop("ports", None)
    elif c is not None and choice == 4:
        c.setdefault("ports", []).append({"name": "extra", "containerPort": 81})
    elif c is not None:
        for port in c.get("ports") or []:
            if port.get("name") == "mxjob-port":
                port.update(rng.choice([{"containerPort": 9333}, {"protocol": "TCP"}]))


def mutate_v1(job: dict[str, Any], rng: random.Random) -> None:
    """A few changes a v1 client could make to a job (which may carry the v1alpha1 annotation)."""
    spec = job["spec"]
    specs = spec.setdefault("mxReplicaSpecs", {})
    for _ in range(rng.randrange(1, 4)):
        keys = list(specs)
        choice = rng.randrange(9)
        if keys and choice < 4:
            r = specs[rng.choice(keys)]
            if choice == 0:
                r["restartPolicy"] = rng.choice(["Always", "OnFailure", "Never", "ExitCode"])
            elif choice == 1:
                r.pop("restartPolicy", None)
                r["label"] = "x"
            elif choice == 2:
                r["replicas"] = rng.choice([1, 2, 7])
            elif rng.random() < 0.2:
                r["template"] = pod()
            else:
                mutate_template(r.get("template"), rng)
        elif keys and choice == 4:
            del specs[rng.choice(keys)]
        elif choice == 5:
            specs[rng.choice(["Tuner", "worker", "SERVER", "Scheduler"])] = replica(template=random_template(rng))
        elif choice == 6:
            spec["jobMode"] = rng.choice(["", "MXTrain", "MXTune"])
        elif choice == 7:
            spec["runPolicy"] = rng.choice([{}, {"cleanPodPolicy": "None"}, {"backoffLimit": 1}])
        else:
            spec["cleanPodPolicy"] = rng.choice(["All", "Running"])


def mutate_alpha(job: dict[str, Any], rng: random.Random) -> None:
    """A few changes a v1alpha1 client could make to a job (which may carry the v1 annotation)."""
    spec = job["spec"]
    entries = spec.setdefault("replicaSpecs", [])
    for _ in range(rng.randrange(1, 4)):
        choice = rng.randrange(10)
        if entries and choice < 4:
            e = rng.choice(entries)
            if choice == 0:
                e["mxReplicaType"] = rng.choice(["SCHEDULER", "SERVER", "WORKER"])
            elif choice == 1:
                e.pop(rng.choice(["mxReplicaType", "PsRootPort", "replicas"]), None)
            elif choice == 2:
                e["PsRootPort"] = rng.choice([9000, 9091, 9444])
            else:
                mutate_template(e.get("template"), rng)
        elif entries and choice == 4:
            entries.pop(rng.randrange(len(entries)))
        elif choice == 5:
            rng.shuffle(entries)
        elif choice == 6:
            entries.append(entry(rng.choice(["SCHEDULER", "SERVER", "WORKER", None]), template=random_template(rng)))
        elif choice == 7:
            spec["schedulerName"] = rng.choice(["", "volcano"])
        elif choice == 8:
            spec["cleanupPodPolicy"] = rng.choice(["", "All", "Running", "None"])
        else:
            spec["jobMode"] = rng.choice(["", "dist", "local"])


def test_randomised_v1_edits_survive_a_round_trip() -> None:
    """Whatever a v1 client changes in a converted job (its annotation now partly stale), v1 → v1alpha1 → v1
    gives back exactly the spec it wrote."""
    rng = random.Random(21)
    for _ in range(400):
        job = to_v1(random_alpha(rng)) if rng.random() < 0.7 else random_v1(rng)
        mutate_v1(job, rng)
        assert to_v1(to_v1alpha1(job))["spec"] == job["spec"], json.dumps(job)


def test_randomised_v1alpha1_edits_survive_a_round_trip() -> None:
    """Whatever a v1alpha1 client changes in a converted job (its annotation now partly stale), v1alpha1 → v1 →
    v1alpha1 gives back exactly the spec it wrote."""
    rng = random.Random(22)
    for _ in range(400):
        job = to_v1alpha1(random_v1(rng)) if rng.random() < 0.7 else random_alpha(rng)
        mutate_alpha(job, rng)
        assert to_v1alpha1(to_v1(job))["spec"] == job["spec"], json.dumps(job)


# --- convert -------------------------------------------------------------------------------------------------------

def test_convert_dispatches_on_the_api_versions() -> None:
    alpha, v1 = seed_manifest(), v1_job()
    assert convert(alpha, ALPHA) == alpha
    assert convert(alpha, ALPHA) is not alpha
    assert convert(alpha, V1) == to_v1(alpha)
    assert convert(alpha, V1BETA1) == {**to_v1(alpha), "apiVersion": V1BETA1}
    assert convert(v1, V1BETA1) == {**v1, "apiVersion": V1BETA1}
    assert convert(convert(v1, V1BETA1), V1) == v1
    assert convert(v1, ALPHA) == to_v1alpha1(v1)
    assert convert({**v1, "apiVersion": V1BETA1}, ALPHA) == to_v1alpha1(v1)
    assert convert(convert(v1, ALPHA), V1) == v1
    assert convert(convert(alpha, V1BETA1), ALPHA)["spec"] == alpha["spec"]


def test_nothing_is_modified() -> None:
    objects = [seed_dump(), seed_manifest(), *(j for _, j in V1_OBJECTS)]
    for obj in objects:
        before = copy.deepcopy(obj)
        for target in (ALPHA, V1, V1BETA1):
            convert(obj, target)
        if obj["apiVersion"] == ALPHA:
            to_v1(obj)
            validate(obj)
            apply_defaults(obj)
        else:
            to_v1alpha1(obj)
        assert obj == before


def test_outputs_share_nothing_with_inputs() -> None:
    dump = seed_dump()
    v1 = to_v1(dump)
    v1["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["args"].append("x")
    v1["metadata"]["uid"] = "changed"
    assert dump == seed_dump()
    same = convert(dump, ALPHA)
    same["spec"]["replicaSpecs"][0]["replicas"] = 7
    assert dump == seed_dump()


# --- malformed input -------------------------------------------------------------------------------------------------

MALFORMED: list[tuple[str, Any, str, str]] = [
    ("not an object", ["x"], V1, "the object: must be an object, not a list"),
    ("unknown apiVersion", {**seed_manifest(), "apiVersion": "kubeflow.org/v2"}, V1, "apiVersion: unsupported"),
    ("unknown desired version", seed_manifest(), "kubeflow.org/v2", "desired apiVersion: unsupported"),
    ("another kind", {**v1_job(), "kind": "TFJob"}, ALPHA, "kind: expected MXJob"),
    ("spec not an object", {**seed_manifest(), "spec": "x"}, V1, "spec: must be an object, not a string"),
    ("replicaSpecs not a list", edit(lambda j: j["spec"].update(replicaSpecs={"a": 1}), seed_manifest), V1,
     "spec.replicaSpecs: must be a list, not an object"),
    ("entry not an object", edit(lambda j: entries_of(j).append(3), seed_manifest), V1,
     "spec.replicaSpecs[3]: must be an object, not a number"),
    ("unknown mxReplicaType", edit(lambda j: entries_of(j)[1].update(mxReplicaType="PS"), seed_manifest), V1,
     'spec.replicaSpecs[1].mxReplicaType: unsupported value "PS"'),
    ("mxReplicaSpecs not an object", v1_job([replica()]), ALPHA, "spec.mxReplicaSpecs: must be an object"),
    ("replica spec not an object", v1_job({"Worker": None}), ALPHA,
     "spec.mxReplicaSpecs.Worker: must be an object, not null"),
    ("metadata not an object", {**v1_job(), "metadata": "x"}, ALPHA, "metadata: must be an object"),
    ("annotations not an object", edit(lambda j: j["metadata"].update(annotations=[]), v1_job), ALPHA,
     "metadata.annotations: must be an object"),
    ("status not an object", {**v1_job(), "status": []}, ALPHA, "status: must be an object"),
    ("annotation not an object", edit(lambda j: j["metadata"].update(annotations={V1_EXTRA_ANNOTATION: "[]"}),
                                      seed_manifest), V1, f"metadata.annotations[{V1_EXTRA_ANNOTATION}]: must be an "
                                                          "object"),
    ("annotation records not a list", edit(lambda j: j["metadata"].update(
        annotations={V1_EXTRA_ANNOTATION: '{"replicaSpecs":{}}'}), seed_manifest), V1, ".replicaSpecs: must be a list"),
]


@pytest.mark.parametrize(("case", "obj", "target", "message"), MALFORMED, ids=[c[0] for c in MALFORMED])
def test_malformed_input_raises_conversion_error(case: str, obj: Any, target: str, message: str) -> None:
    with pytest.raises(ConversionError) as info:
        convert(obj, target)
    assert message in str(info.value)


def test_conversion_error_is_a_value_error() -> None:
    assert issubclass(ConversionError, ValueError)
