"""MXJob validation, table-driven: each invalid job yields exactly the expected field paths.

Pure functions (no server): the validator is what turns a bad manifest into a clear condition message.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.core.framework import MAX_REPLICAS_PER_JOB, MAX_REPLICAS_PER_TYPE
from mxjob_controller.kubeflow_api.validation import longest_child_name
from mxjob_controller.mxnet.api import job_warnings, validate_job

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
W = "spec.mxReplicaSpecs.Worker"


def container(name: str = "mxnet", image: str | None = "mxnet/python:1.9.1", **extra: Any) -> dict:
    c: dict[str, Any] = {"name": name, **extra}
    if image is not None:
        c["image"] = image
    return c


def replica(replicas: int | None = None, *containers: dict, **extra: Any) -> dict:
    spec: dict[str, Any] = {"template": {"spec": {"containers": list(containers) or [container()]}}, **extra}
    if replicas is not None:
        spec["replicas"] = replicas
    return spec


def train_job(name: str = "mxjob") -> dict:
    """A valid MXTrain job; each case below breaks one thing."""
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": {
                "Scheduler": replica(1), "Server": replica(2), "Worker": replica(2)}}}


def tune_job() -> dict:
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "tune"},
            "spec": {"jobMode": "MXTune", "mxReplicaSpecs": {
                "TunerTracker": replica(1), "TunerServer": replica(1, label="gpu"), "Tuner": replica(1)}}}


def edit(fn: Callable[[dict], Any], base: Callable[[], dict] = train_job) -> dict:
    job = base()
    fn(job)
    return job


def specs(job: dict) -> dict:
    return job["spec"]["mxReplicaSpecs"]


def worker_containers(job: dict) -> list:
    return specs(job)["Worker"]["template"]["spec"]["containers"]


INVALID: list[tuple[str, dict, set[str]]] = [
    ("missing spec", edit(lambda j: j.pop("spec")), {"spec"}),
    ("spec not an object", edit(lambda j: j.update(spec=["x"])), {"spec"}),
    ("missing mxReplicaSpecs", edit(lambda j: j["spec"].pop("mxReplicaSpecs")), {"spec.mxReplicaSpecs"}),
    ("empty mxReplicaSpecs", edit(lambda j: j["spec"].update(mxReplicaSpecs={})), {"spec.mxReplicaSpecs"}),
    ("mxReplicaSpecs a list", edit(lambda j: j["spec"].update(mxReplicaSpecs=[replica()])),
     {"spec.mxReplicaSpecs"}),
    ("replica spec null", edit(lambda j: specs(j).update(Worker=None)), {W}),
    ("empty containers", edit(lambda j: worker_containers(j).clear()), {f"{W}.template.spec.containers"}),
    ("missing template", edit(lambda j: specs(j)["Worker"].pop("template")), {f"{W}.template.spec.containers"}),
    ("template without spec", edit(lambda j: specs(j)["Worker"].update(template={"metadata": {}})),
     {f"{W}.template.spec.containers"}),
    ("empty image", edit(lambda j: worker_containers(j)[0].update(image="")),
     {f"{W}.template.spec.containers[0].image"}),
    ("missing image in a sidecar", edit(lambda j: worker_containers(j).append(container("sidecar", None))),
     {f"{W}.template.spec.containers[1].image"}),
    ("image with whitespace", edit(lambda j: worker_containers(j)[0].update(image=" mxnet ")),
     {f"{W}.template.spec.containers[0].image"}),
    ("no mxnet container", edit(lambda j: worker_containers(j)[0].update(name="main")),
     {f"{W}.template.spec.containers"}),
    ("unknown replica type", edit(lambda j: specs(j).update(Chief=replica(1))), {"spec.mxReplicaSpecs"}),
    ("two keys for one type", edit(lambda j: specs(j).update(worker=replica(1))), {"spec.mxReplicaSpecs"}),
    ("2 schedulers", edit(lambda j: specs(j)["Scheduler"].update(replicas=2)),
     {"spec.mxReplicaSpecs.Scheduler.replicas"}),
    ("2 tuner trackers", edit(lambda j: specs(j)["TunerTracker"].update(replicas=2), tune_job),
     {"spec.mxReplicaSpecs.TunerTracker.replicas"}),
    ("0 tuners", edit(lambda j: specs(j)["Tuner"].update(replicas=0), tune_job),
     {"spec.mxReplicaSpecs.Tuner.replicas"}),
    ("negative replicas", edit(lambda j: specs(j)["Worker"].update(replicas=-1)), {f"{W}.replicas"}),
    ("zero servers", edit(lambda j: specs(j)["Server"].update(replicas=0)), {"spec.mxReplicaSpecs.Server.replicas"}),
    ("replicas not a number", edit(lambda j: specs(j)["Worker"].update(replicas="2")), {f"{W}.replicas"}),
    ("MXTune missing Tuner", edit(lambda j: specs(j).pop("Tuner"), tune_job), {"spec.mxReplicaSpecs.Tuner"}),
    ("MXTune missing TunerServer", edit(lambda j: specs(j).pop("TunerServer"), tune_job),
     {"spec.mxReplicaSpecs.TunerServer"}),
    ("MXTune missing TunerTracker and TunerServer",
     edit(lambda j: [specs(j).pop("TunerTracker"), specs(j).pop("TunerServer")], tune_job),
     {"spec.mxReplicaSpecs.TunerTracker", "spec.mxReplicaSpecs.TunerServer"}),
    ("neither Worker nor Tuner", edit(lambda j: [j["spec"].pop("jobMode"), specs(j).pop("Worker")]),
     {"spec.mxReplicaSpecs"}),
    ("unknown jobMode", edit(lambda j: j["spec"].update(jobMode="Train")), {"spec.jobMode"}),
    ("name 10test", train_job("10test"), {"metadata.name"}),
    ("60-character name", train_job("a" * 60), {"metadata.name"}),
    ("uppercase name", train_job("MyJob"), {"metadata.name"}),
    ("no name", edit(lambda j: j["metadata"].pop("name")), {"metadata.name"}),
    ("bad restartPolicy", edit(lambda j: specs(j)["Worker"].update(restartPolicy="Sometimes")),
     {f"{W}.restartPolicy"}),
    ("bad inline cleanPodPolicy", edit(lambda j: j["spec"].update(cleanPodPolicy="Some")), {"spec.cleanPodPolicy"}),
    ("bad runPolicy.cleanPodPolicy", edit(lambda j: j["spec"].update(runPolicy={"cleanPodPolicy": "all"})),
     {"spec.runPolicy.cleanPodPolicy"}),
    ("bad successPolicy", edit(lambda j: j["spec"].update(successPolicy="AnyWorker")), {"spec.successPolicy"}),
    ("negative ttlSecondsAfterFinished", edit(lambda j: j["spec"].update(ttlSecondsAfterFinished=-5)),
     {"spec.ttlSecondsAfterFinished"}),
    ("negative activeDeadlineSeconds", edit(lambda j: j["spec"].update(activeDeadlineSeconds=-1)),
     {"spec.activeDeadlineSeconds"}),
    ("negative runPolicy.backoffLimit", edit(lambda j: j["spec"].update(runPolicy={"backoffLimit": -1})),
     {"spec.runPolicy.backoffLimit"}),
    ("negative minAvailable",
     edit(lambda j: j["spec"].update(runPolicy={"schedulingPolicy": {"minAvailable": -2}})),
     {"spec.runPolicy.schedulingPolicy.minAvailable"}),
    ("bad minResources quantity",
     edit(lambda j: j["spec"].update(schedulingPolicy={"minResources": {"cpu": "lots", "memory": "2Gi"}})),
     {"spec.schedulingPolicy.minResources[cpu]"}),
    ("inline/runPolicy conflict",
     edit(lambda j: j["spec"].update(cleanPodPolicy="All", runPolicy={"cleanPodPolicy": "None"})),
     {"spec.runPolicy.cleanPodPolicy"}),
    ("schedulingPolicy conflict one level down",
     edit(lambda j: j["spec"].update(schedulingPolicy={"queue": "a"}, runPolicy={"schedulingPolicy": {"queue": "b"}})),
     {"spec.runPolicy.schedulingPolicy.queue"}),
    ("suspend not a boolean", edit(lambda j: j["spec"].update(runPolicy={"suspend": "yes"})),
     {"spec.runPolicy.suspend"}),
    ("managedBy not a domain-prefixed path", edit(lambda j: j["spec"].update(runPolicy={"managedBy": "me"})),
     {"spec.runPolicy.managedBy"}),
    ("managedBy too long", edit(lambda j: j["spec"].update(runPolicy={"managedBy": "a.io/" + "x" * 60})),
     {"spec.runPolicy.managedBy"}),
    ("runPolicy not an object", edit(lambda j: j["spec"].update(runPolicy="All")), {"spec.runPolicy"}),
    ("label not a string", edit(lambda j: specs(j)["TunerServer"].update(label=5), tune_job),
     {"spec.mxReplicaSpecs.TunerServer.label"}),
    ("template breaks the Kubernetes schema", edit(lambda j: worker_containers(j)[0].update(
        ports=[{"containerPort": "abc"}])), {f"{W}.template.spec.containers[0].ports[0].containerPort"}),
    ("port out of range", edit(lambda j: worker_containers(j)[0].update(ports=[{"containerPort": 70000}])),
     {f"{W}.template.spec.containers[0].ports[0].containerPort"}),
    ("bad port name", edit(lambda j: worker_containers(j)[0].update(
        ports=[{"name": "MXJob_Port", "containerPort": 9091}])), {f"{W}.template.spec.containers[0].ports[0].name"}),
    ("bad sidecar name", edit(lambda j: worker_containers(j).append(container("Side_car"))),
     {f"{W}.template.spec.containers[1].name"}),
    ("two containers named mxnet", edit(lambda j: worker_containers(j).append(container())),
     {f"{W}.template.spec.containers[1].name"}),
    ("bad env var name", edit(lambda j: worker_containers(j)[0].update(env=[{"name": "1X", "value": "1"}])),
     {f"{W}.template.spec.containers[0].env[0].name"}),
    ("quantity typo", edit(lambda j: worker_containers(j)[0].update(resources={"limits": {"cpu": "lots"}})),
     {f"{W}.template.spec.containers[0].resources.limits.cpu"}),
    ("lowercase key: path names the key as written",
     edit(lambda j: specs(j).update(worker=specs(j).pop("Worker")) or
          specs(j)["worker"]["template"]["spec"]["containers"][0].pop("image")),
     {"spec.mxReplicaSpecs.worker.template.spec.containers[0].image"}),
]


def test_at_least_thirty_invalid_cases() -> None:
    assert len(INVALID) >= 30


@pytest.mark.parametrize(("case", "job", "paths"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_job_reports_expected_paths(case: str, job: dict, paths: set[str]) -> None:
    before = copy.deepcopy(job)
    errors = validate_job(job)
    assert {e.field for e in errors} == paths, [str(e) for e in errors]
    assert len(errors) == len(set(errors)), "each problem once"
    assert job == before, "validation must not modify its input"
    for e in errors:
        assert str(e).startswith(f"{e.field}: ")


def test_messages_read_like_kube() -> None:
    job = train_job()
    worker_containers(job)[0].pop("image")
    specs(job)["Chief"] = replica(1)
    specs(job)["Scheduler"]["replicas"] = 2
    job["spec"]["cleanPodPolicy"] = "All"
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "None"}
    got = [str(e) for e in validate_job(job)]
    assert got == [
        'spec.mxReplicaSpecs.Scheduler.replicas: Invalid value: 2: must be 1: a job has exactly one Scheduler',
        f"{W}.template.spec.containers[0].image: Required value",
        'spec.mxReplicaSpecs: Unsupported value: "Chief": supported values: "Scheduler", "Server", "Worker", '
        '"TunerTracker", "TunerServer", "Tuner"',
        'spec.runPolicy.cleanPodPolicy: Invalid value: "None": conflicts with spec.cleanPodPolicy ("All"): set it '
        "in one place, or to the same value in both",
    ]


@pytest.mark.parametrize(("value", "messages"), [
    ("", ["Required value"]),
    ("me", ['Invalid value: "me": must be a domain-prefixed path (such as "acme.io/foo")']),
    ("/x", ['Invalid value: "/x": must be a domain-prefixed path (such as "acme.io/foo")']),
    ("Acme.io/x", ['Invalid value: "Acme.io": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
                   "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
                   "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]"
                   "([-a-z0-9]*[a-z0-9])?)*')"]),
    ("acme.io/a b", ['Invalid value: "a b": Invalid path (regex used for validation is '
                     "'[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"]),
    ("acme.io/" + "x" * 56, ["Too long: may not be more than 63 bytes"]),
])
def test_managed_by_messages_are_batch_jobs(value: str, messages: list[str]) -> None:
    """batch/v1 Job's rule and words (apimachinery's IsDomainPrefixedPath, then at most 63 characters)."""
    job = train_job()
    job["spec"]["runPolicy"] = {"managedBy": value}
    assert [str(e) for e in validate_job(job)] == [f"spec.runPolicy.managedBy: {m}" for m in messages]


def test_every_problem_is_reported_at_once() -> None:
    job = train_job("9lives")
    job["spec"]["jobMode"] = "MXTune"
    specs(job)["Server"]["restartPolicy"] = "Sometimes"
    worker_containers(job)[0]["image"] = ""
    job["spec"]["backoffLimit"] = -1
    paths = [e.field for e in validate_job(job)]
    assert paths == ["metadata.name", "spec.mxReplicaSpecs.Server.restartPolicy",
                     f"{W}.template.spec.containers[0].image", "spec.mxReplicaSpecs.TunerTracker",
                     "spec.mxReplicaSpecs.TunerServer", "spec.mxReplicaSpecs.Tuner", "spec.backoffLimit"]


@pytest.mark.parametrize(("name", "counts", "ok"), [
    ("a" * 51, {"Scheduler": 1, "Server": 1, "Worker": 1}, True),     # a-...-scheduler-0 is 63
    ("a" * 52, {"Scheduler": 1, "Server": 1, "Worker": 1}, False),
    ("a" * 53, {"Worker": 100}, True),                                 # a-...-worker-99 is 63
    ("a" * 53, {"Worker": 101}, False),                                # a-...-worker-100 is 64
    ("a" * 54, {"Worker": 1}, True),                                   # a-...-worker-0 is 63
    ("a" * 55, {"Worker": 1}, False),
    ("a" * 70, {"Worker": 1}, False),                                  # too long as a label, too
])
def test_name_leaves_room_for_child_names(name: str, counts: dict[str, int], ok: bool) -> None:
    job = {"metadata": {"name": name}, "spec": {"mxReplicaSpecs": {t: replica(n) for t, n in counts.items()}}}
    errors = [e for e in validate_job(job) if e.field == "metadata.name"]
    assert (errors == []) == ok, [str(e) for e in errors]
    assert (len(longest_child_name(name, counts)) <= 63) == ok
    if not ok:  # one error, naming the limit that matters: the child names'
        assert len(errors) == 1
        assert "characters, so that the name of every pod and Service" in errors[0].message


VALID: list[tuple[str, dict]] = [
    ("MXTrain", train_job()),
    ("MXTune", tune_job()),
    # training-operator v1.8.1's ValidateV1MXJob: no type is required of MXTrain (issue 47; it warns: job_warnings)
    ("MXTrain, Workers only", edit(lambda j: [specs(j).pop("Server"), specs(j).pop("Scheduler")])),
    ("MXTrain without a Server", edit(lambda j: specs(j).pop("Server"))),
    ("single worker, no jobMode", {"metadata": {"name": "one"}, "spec": {"mxReplicaSpecs": {"Worker": replica()}}}),
    ("tuner only, jobMode empty", {"metadata": {"name": "t"}, "spec": {"jobMode": "",
                                                                       "mxReplicaSpecs": {"tuner": replica()}}}),
    ("lowercase and uppercase keys", edit(lambda j: j["spec"].update(mxReplicaSpecs={
        "scheduler": replica(), "SERVER": replica(3), "worker": replica(4)}))),
    ("equal values in both places", edit(lambda j: j["spec"].update(
        cleanPodPolicy="None", backoffLimit=3, schedulingPolicy={"queue": "q"},
        runPolicy={"cleanPodPolicy": "None", "backoffLimit": 3, "schedulingPolicy": {"queue": "q", "minAvailable": 2},
                   "suspend": True, "managedBy": "kubeflow.org/training-operator"}))),
    ("nulls are unset fields", edit(lambda j: j["spec"].update(cleanPodPolicy=None, runPolicy=None,
                                                               successPolicy=None))),
    ("mxnet container second, with ports", edit(lambda j: worker_containers(j).insert(0, container("sidecar")))),
    ("every restart policy", edit(lambda j: [specs(j)[t].update(restartPolicy=p) for t, p in
                                             (("Scheduler", "Always"), ("Server", "OnFailure"),
                                              ("Worker", "ExitCode"))])),
    ("successPolicy AllWorkers and quantities", edit(lambda j: j["spec"].update(
        successPolicy="AllWorkers", schedulingPolicy={"minResources": {"cpu": 4, "memory": "8Gi", "gpu": "0.5"}}))),
]


@pytest.mark.parametrize(("case", "job"), VALID, ids=[c[0] for c in VALID])
def test_valid_job_has_no_errors(case: str, job: dict) -> None:
    assert [str(e) for e in validate_job(job)] == []


@pytest.mark.parametrize(("case", "job", "warnings"), [
    ("MXTrain, Workers only", edit(lambda j: [specs(j).pop("Server"), specs(j).pop("Scheduler")]),
     ['spec.mxReplicaSpecs: jobMode "MXTrain" without "Scheduler" and "Server" replica specs: the job runs without '
      'parameter servers']),
    ("MXTrain without a Server", edit(lambda j: specs(j).pop("Server")),
     ['spec.mxReplicaSpecs: jobMode "MXTrain" without "Server" replica spec: the job runs without parameter servers']),
    ("MXTrain, lower-case keys", edit(lambda j: j["spec"].update(mxReplicaSpecs={
        "scheduler": replica(), "server": replica(), "worker": replica(2)})), []),
    ("MXTrain, every type", train_job(), []),
    ("no jobMode, Workers only", {"metadata": {"name": "one"}, "spec": {"mxReplicaSpecs": {"Worker": replica()}}}, []),
    ("MXTune", tune_job(), []),
])
def test_warnings_of_valid_jobs(case: str, job: dict, warnings: list[str]) -> None:
    assert validate_job(job) == []
    assert job_warnings(job) == warnings


def example_jobs() -> list[tuple[str, dict]]:
    """Every MXJob under examples/ (YAML manifests and the cloud API's JSON request bodies)."""
    out = []
    for path in sorted(EXAMPLES.rglob("*")):
        if path.suffix in (".yaml", ".json"):
            doc = json.loads(path.read_text()) if path.suffix == ".json" else yaml.safe_load(path.read_text())
            if doc.get("kind") == "MXJob" and doc.get("apiVersion") != "kubeflow.org/v1alpha1":
                out.append((str(path.relative_to(EXAMPLES)), doc))   # v1alpha1: tests/mxnet/v1alpha1/
    return out


def test_examples_cover_the_issue() -> None:
    names = [n for n, _ in example_jobs()]
    assert len(names) >= 6, names


@pytest.mark.parametrize(("name", "job"), example_jobs(), ids=[n for n, _ in example_jobs()])
def test_examples_are_valid(name: str, job: dict) -> None:
    assert [str(e) for e in validate_job(job)] == []


@pytest.mark.parametrize("garbage", [None, [], "job", {"spec": {"mxReplicaSpecs": {"Worker": {"template": []}}}},
                                     {"spec": {"mxReplicaSpecs": {"Worker": {"template": {"spec": "x"}}}}},
                                     {"spec": {"mxReplicaSpecs": {"Worker": {"template": {"spec": {
                                         "containers": ["x", None]}}}}}}])
def test_garbage_is_reported_not_raised(garbage: Any) -> None:
    assert validate_job(garbage)


@pytest.mark.parametrize(("workers", "servers", "messages"), [
    (MAX_REPLICAS_PER_TYPE, 1, [f"spec.mxReplicaSpecs: Invalid value: {MAX_REPLICAS_PER_TYPE + 2}: a job may "
                                f"have at most {MAX_REPLICAS_PER_JOB} replicas in all (the sum of every type's "
                                f"replicas)"]),
    (MAX_REPLICAS_PER_TYPE + 1, 1, [f"{W}.replicas: Invalid value: {MAX_REPLICAS_PER_TYPE + 1}: must be less than "
                                    f"or equal to {MAX_REPLICAS_PER_TYPE}, the most replicas of one type a job may "
                                    f"have"]),
    (1_000_000_000, 1, [f"{W}.replicas: Invalid value: 1000000000: must be less than or equal to "
                        f"{MAX_REPLICAS_PER_TYPE}, the most replicas of one type a job may have"]),
    (MAX_REPLICAS_PER_JOB - 2, 1, []),
    (MAX_REPLICAS_PER_JOB - 1, 1, [f"spec.mxReplicaSpecs: Invalid value: {MAX_REPLICAS_PER_JOB + 1}: a job may "
                                   f"have at most {MAX_REPLICAS_PER_JOB} replicas in all (the sum of every type's "
                                   f"replicas)"]),
])
def test_replicas_are_bounded_per_type_and_per_job(workers: int, servers: int, messages: list[str]) -> None:
    job = train_job()
    job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = workers
    job["spec"]["mxReplicaSpecs"]["Server"]["replicas"] = servers
    assert [str(e) for e in validate_job(job)] == messages
