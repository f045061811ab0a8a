"""Children as the core sees them: names and labels, ownership by controller UID, classification by (type, index),
and the pod and service bodies it creates. Pure functions, table-tested."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core import job_vocabulary as lb
from mxjob_controller.core.child_sync import DUPLICATE, OUT_OF_RANGE, UNKNOWN_TYPE, classify
from mxjob_controller.core.child_writes import build_pod, build_service, pod_restart_policy
from mxjob_controller.core.job_vocabulary import api_group, controller_reference, controller_uid, is_controlled_by

UID = "job-uid"


def ref(uid: str = UID, controller: bool = True, kind: str = "MXJob") -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "name": "j", "uid": uid, "controller": controller}


def child(name: str, rtype: str | None, index: str | None, *, owner: dict | None = None, legacy: bool = False,
          created: str = "2024-01-01T00:00:00Z", deleting: bool = False, uid: str | None = None) -> dict[str, Any]:
    labels: dict[str, str] = {}
    type_key, index_key = ((lb.LEGACY_REPLICA_TYPE, lb.LEGACY_REPLICA_INDEX) if legacy
                           else (lb.REPLICA_TYPE, lb.REPLICA_INDEX))
    if rtype is not None:
        labels[type_key] = rtype
    if index is not None:
        labels[index_key] = index
    meta: dict[str, Any] = {"name": name, "uid": uid or f"uid-{name}", "labels": labels, "creationTimestamp": created,
                            "ownerReferences": [owner if owner is not None else ref()]}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T01:00:00Z"
    return {"metadata": meta}


def names(objs: Any) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


# --- names and labels ------------------------------------------------------------------------------------

def test_child_names() -> None:
    assert lb.child_name("j", "Worker", 3) == "j-worker-3"
    assert lb.child_name("a/b", "TunerServer", 0) == "a-b-tunerserver-0"


def test_replica_labels_carry_new_and_legacy_keys_and_the_master_role() -> None:
    assert lb.replica_labels("mxjob-controller", "kubeflow.org", "j", "Server", 1, master=True) == {
        "training.kubeflow.org/operator-name": "mxjob-controller", "training.kubeflow.org/job-name": "j",
        "training.kubeflow.org/replica-type": "server", "training.kubeflow.org/replica-index": "1",
        "training.kubeflow.org/job-role": "master", "group-name": "kubeflow.org", "job-name": "j",
        "replica-type": "server", "replica-index": "1"}
    assert lb.JOB_ROLE not in lb.replica_labels("op", "g", "j", "Worker", 0)


@pytest.mark.parametrize(("labels", "expected"), [
    ({lb.REPLICA_TYPE: "worker", lb.REPLICA_INDEX: "2"}, ("worker", 2)),
    ({lb.LEGACY_REPLICA_TYPE: "Worker", lb.LEGACY_REPLICA_INDEX: "0"}, ("worker", 0)),
    ({lb.REPLICA_TYPE: "server", lb.REPLICA_INDEX: "1", lb.LEGACY_REPLICA_TYPE: "worker",
      lb.LEGACY_REPLICA_INDEX: "5"}, ("server", 1)),
    ({lb.REPLICA_TYPE: "worker"}, None),
    ({lb.REPLICA_TYPE: "worker", lb.REPLICA_INDEX: "-1"}, None),
    ({lb.REPLICA_TYPE: "worker", lb.REPLICA_INDEX: "one"}, None),
    ({lb.REPLICA_TYPE: "worker", lb.REPLICA_INDEX: "\u0661"}, None),   # a digit, but not an ASCII one
    ({}, None), (None, None),
])
def test_replica_of(labels: dict | None, expected: tuple | None) -> None:
    assert lb.replica_of(labels) == expected


def test_selectors_are_disjoint() -> None:
    assert lb.owned_selector("mxjob-controller") == "training.kubeflow.org/operator-name=mxjob-controller"
    assert lb.legacy_selector("kubeflow.org") == "group-name=kubeflow.org,!training.kubeflow.org/operator-name"
    assert lb.needs_adoption({"group-name": "kubeflow.org"}) and not lb.needs_adoption({lb.OPERATOR_NAME: "x"})
    assert lb.missing_labels({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == {"b": "3", "c": "4"}


# --- ownership -------------------------------------------------------------------------------------------

def test_only_the_controller_reference_counts() -> None:
    owned = child("p", "worker", "0")
    assert controller_uid(owned) == UID and is_controlled_by(owned, UID)
    not_controller = child("p", "worker", "0", owner=ref(controller=False))
    assert controller_uid(not_controller) is None and not is_controlled_by(not_controller, UID)
    assert not is_controlled_by(owned, "") and not is_controlled_by(owned, "other")
    assert controller_reference("kubeflow.org/v1", "MXJob", "j", UID) == {
        "apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "j", "uid": UID, "controller": True,
        "blockOwnerDeletion": True}
    assert (api_group("kubeflow.org/v1"), api_group("v1")) == ("kubeflow.org", "")


# --- classification --------------------------------------------------------------------------------------

REPLICAS = {"Scheduler": 1, "Server": 2, "Worker": 4}


def test_a_complete_set_is_all_kept() -> None:
    objs = [child(f"j-{t.lower()}-{i}", t.lower(), str(i)) for t, n in REPLICAS.items() for i in range(n)]
    result = classify(objs, UID, "j", REPLICAS)
    assert {t: sorted(r.kept) for t, r in result.by_type.items()} == {
        "Scheduler": [0], "Server": [0, 1], "Worker": [0, 1, 2, 3]}
    assert all(not r.missing for r in result.by_type.values()) and not result.excess


def test_missing_indices_are_listed_per_type() -> None:
    objs = [child("j-worker-1", "worker", "1"), child("j-server-0", "server", "0")]
    result = classify(objs, UID, "j", REPLICAS)
    assert {t: r.missing for t, r in result.by_type.items()} == {
        "Scheduler": (0,), "Server": (1,), "Worker": (0, 2, 3)}


def test_out_of_range_duplicates_and_unknown_types_are_excess() -> None:
    objs = [child("j-worker-0", "worker", "0"), child("j-worker-4", "worker", "4"),
            child("copy-of-worker-0", "worker", "0", created="2023-01-01T00:00:00Z"),
            child("j-tuner-0", "tuner", "0"), child("j-odd", None, None)]
    result = classify(objs, UID, "j", {"Worker": 4})
    assert names(result.by_type["Worker"].kept.values()) == ["j-worker-0"]   # the expected name wins over age
    assert [(names([e.obj])[0], e.why) for e in result.excess] == [
        ("copy-of-worker-0", DUPLICATE), ("j-worker-4", OUT_OF_RANGE), ("j-tuner-0", UNKNOWN_TYPE)]
    assert names(result.unindexed) == ["j-odd"]


def test_among_duplicates_a_live_one_beats_one_being_deleted_then_the_oldest() -> None:
    objs = [child("b", "worker", "0", created="2024-01-02T00:00:00Z"),
            child("a", "worker", "0", created="2024-01-03T00:00:00Z", deleting=True),
            child("c", "worker", "0", created="2024-01-01T00:00:00Z", deleting=True)]
    result = classify(objs, UID, "j", {"Worker": 1})
    assert names(result.by_type["Worker"].kept.values()) == ["b"]
    assert sorted(names(e.obj for e in result.excess)) == ["a", "c"]


@pytest.mark.parametrize("owner", [ref(uid="another-job"), ref(controller=False), ref(kind="TFJob", uid="tf")])
def test_children_the_job_does_not_control_are_invisible(owner: dict) -> None:
    objs = [child("j-worker-0", "worker", "0", owner=owner), child("j-worker-9", "worker", "9", owner=owner)]
    result = classify(objs, UID, "j", {"Worker": 1})
    assert result.by_type["Worker"].missing == (0,) and not result.excess and not result.unindexed


def test_legacy_labels_classify_like_new_ones_and_repeats_count_once() -> None:
    legacy = child("j-worker-0", "worker", "0", legacy=True)
    result = classify([legacy, copy.deepcopy(legacy)], UID, "j", {"Worker": 1})
    assert names(result.by_type["Worker"].kept.values()) == ["j-worker-0"] and not result.excess


# --- bodies ----------------------------------------------------------------------------------------------

TEMPLATE = {"metadata": {"labels": {"team": "a", lb.REPLICA_TYPE: "bogus"}, "annotations": {"note": "x"},
                         "finalizers": ["example.com/keep"], "name": "ignored", "namespace": "ignored"},
            "spec": {"restartPolicy": "Always", "containers": [{"name": "mxnet", "image": "i"}]}}


@pytest.mark.parametrize(("replica_policy", "pod_policy"), [
    ("Never", "Never"), ("OnFailure", "OnFailure"), ("Always", "Always"), ("ExitCode", "Never")])
def test_pod_restart_policy(replica_policy: str, pod_policy: str) -> None:
    assert pod_restart_policy(replica_policy) == pod_policy


def test_a_pod_copies_its_template_and_controller_keys_win() -> None:
    template = copy.deepcopy(TEMPLATE)
    labels = lb.replica_labels("op", "g", "j", "Worker", 0)
    owner = controller_reference("kubeflow.org/v1", "MXJob", "j", UID)
    pod = build_pod(template, name="j-worker-0", namespace="ns", labels=labels, owner=owner,
                    restart_policy="ExitCode")
    assert pod["metadata"] == {"name": "j-worker-0", "namespace": "ns", "labels": {"team": "a", **labels},
                               "annotations": {"note": "x"}, "finalizers": ["example.com/keep"],
                               "ownerReferences": [owner]}
    assert pod["spec"]["restartPolicy"] == "Never" and pod["spec"]["containers"] == TEMPLATE["spec"]["containers"]
    assert template == TEMPLATE


def test_a_service_is_headless_and_selects_its_pod() -> None:
    selector = lb.service_selector("op", "j", "Worker", 2)
    svc = build_service(name="j-worker-2", namespace="ns", labels={"a": "b"}, selector=selector,
                        owner=ref(), ports=[{"name": "mxjob-port", "port": 9091}])
    assert svc["spec"] == {"clusterIP": "None", "selector": selector, "ports": [{"name": "mxjob-port", "port": 9091}]}
    assert svc["metadata"]["ownerReferences"] == [ref()] and svc["metadata"]["labels"] == {"a": "b"}
