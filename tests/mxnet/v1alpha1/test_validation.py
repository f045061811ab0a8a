"""v1alpha1 defaults and validation (mxnet/v1alpha1/validation.py), table-driven: what is defaulted and kept,
every invalid case with its paths, messages like kube's and the old operator's, local mode's limit."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.mxnet.v1alpha1 import (
    apply_defaults,
    validate,
)
from tests.mxnet.v1alpha1.support import (
    R,
    alpha_job,
    edit,
    entries_of,
    entry,
    seed_dump,
    seed_manifest,
)

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
