"""The lossless conversion as a whole (mxnet/v1alpha1/: ``to_v1``, ``to_v1alpha1`` and ``convert``): round trips
both ways are the identity (the annotations carrying what the other version cannot hold), edits through either
version win, randomised round trips and edits, ``convert``'s dispatch, and malformed input refused with a
ConversionError naming the part."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

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
from tests.mxnet.v1alpha1.support import (
    ALPHA,
    NOW,
    V1,
    V1BETA1,
    alpha_job,
    assert_no_managed_annotations,
    cond,
    container,
    edit,
    entries_of,
    entry,
    extra_of,
    mxnet_ports,
    pod,
    pruned_fields,
    replica,
    seed_dump,
    seed_manifest,
    v1_job,
    with_status,
    without_status,
)

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
