"""The cached views of pods and services (core/handlers.py): everything the core reads survives the transform,
so every decision over the views equals the decision over the whole objects; what nobody reads is gone."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mxjob_controller.core import job_vocabulary as lb
from mxjob_controller.core.child_sync import classify
from mxjob_controller.core.failure_policy import container_restarts, ran_for
from mxjob_controller.core.finished_jobs import cleanup_plan
from mxjob_controller.core.handlers import pod_cache_view, service_cache_view
from mxjob_controller.core.job_status import exit_message
from mxjob_controller.core.pods import failure_of, replica_state, termination
from mxjob_controller.runtime.cache_keys import controller_uid_index, object_key

UID = "job-uid"


def pod(index: int, phase: str, *, exit_code: int | None = None, reason: str = "", deleting: bool = False,
        restarts: int = 0) -> dict[str, Any]:
    state: dict[str, Any] = {"running": {"startedAt": "2024-01-01T00:00:05Z"}}
    if exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": reason, "message": "m",
                                "startedAt": "2024-01-01T00:00:05Z", "finishedAt": "2024-01-01T00:10:05Z"}}
    meta: dict[str, Any] = {
        "name": f"j-worker-{index}", "namespace": "ns", "uid": f"pod-{index}", "resourceVersion": str(10 + index),
        "creationTimestamp": "2024-01-01T00:00:00Z", "generateName": "x-",
        "labels": {lb.REPLICA_TYPE: "worker", lb.REPLICA_INDEX: str(index), "app": "a"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{" + "x" * 500 + "}"},
        "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "j", "uid": UID,
                             "controller": True, "blockOwnerDeletion": True}],
        "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:20:00Z"
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"containers": [{"name": "mxnet", "image": "i", "env": [{"name": "MX_CONFIG", "value": "{}" * 200}]}],
                 "restartPolicy": "Never", "volumes": [{"name": "v", "emptyDir": {}}]},
        "status": {"phase": phase, "reason": reason, "message": "msg", "startTime": "2024-01-01T00:00:01Z",
                   "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}],
                   "initContainerStatuses": [{"name": "init", "restartCount": 1, "image": "i",
                                              "state": {"terminated": {"exitCode": 0}}}],
                   "containerStatuses": [{"name": "mxnet", "restartCount": restarts, "image": "i", "imageID": "d",
                                          "ready": True, "lastState": {"terminated": {"exitCode": 1}},
                                          "state": state}]}}


PODS = [pod(0, "Running"), pod(1, "Succeeded", exit_code=0), pod(2, "Failed", exit_code=137, reason="OOMKilled"),
        pod(3, "Running", deleting=True, restarts=2), pod(4, "Failed", reason="Evicted"), pod(5, "Pending")]


def test_the_view_drops_what_nobody_reads() -> None:
    view = pod_cache_view(copy.deepcopy(PODS[2]))
    assert "spec" not in view
    assert set(view["metadata"]) == {"name", "namespace", "uid", "resourceVersion", "creationTimestamp", "labels",
                                     "ownerReferences"}
    assert set(view["status"]) == {"phase", "reason", "message", "startTime", "initContainerStatuses",
                                   "containerStatuses"}
    assert view["status"]["containerStatuses"] == [{"name": "mxnet", "restartCount": 0,
                                                    "state": PODS[2]["status"]["containerStatuses"][0]["state"]}]
    service = {"apiVersion": "v1", "kind": "Service", "metadata": PODS[0]["metadata"],
               "spec": {"clusterIP": "None", "ports": [{"port": 9091}]}}
    assert service_cache_view(service) == {"apiVersion": "v1", "kind": "Service",
                                           "metadata": pod_cache_view(PODS[0])["metadata"]}


def test_the_original_is_left_alone() -> None:
    original = copy.deepcopy(PODS[0])
    pod_cache_view(original)
    assert original == PODS[0]


@pytest.mark.parametrize("policy", ["Never", "OnFailure", "Always", "ExitCode"])
def test_decisions_over_views_equal_decisions_over_whole_pods(policy: str) -> None:
    views = [pod_cache_view(copy.deepcopy(p)) for p in PODS]
    for whole, view in zip(PODS, views, strict=True):
        assert object_key(view) == object_key(whole)
        assert controller_uid_index(view) == controller_uid_index(whole)
        assert termination(view, "mxnet") == termination(whole, "mxnet")
        assert failure_of(view, "Worker", 0, "mxnet") == failure_of(whole, "Worker", 0, "mxnet")
        assert container_restarts(view) == container_restarts(whole)
        assert ran_for(view, "mxnet", 1e10) == ran_for(whole, "mxnet", 1e10)
        assert exit_message(view, 1) == exit_message(whole, 1)
    kept_whole = classify(PODS, UID, "j", {"Worker": 7}).by_type["Worker"]
    kept_view = classify(views, UID, "j", {"Worker": 7}).by_type["Worker"]
    assert kept_view.missing == kept_whole.missing
    assert {i: o["metadata"]["uid"] for i, o in kept_view.kept.items()} == \
        {i: o["metadata"]["uid"] for i, o in kept_whole.kept.items()}
    assert replica_state(dict(kept_view.kept), "Worker", policy, "mxnet") == \
        replica_state(dict(kept_whole.kept), "Worker", policy, "mxnet")
    for clean in ("All", "Running", "None"):
        whole_plan, view_plan = cleanup_plan(clean, PODS, PODS), cleanup_plan(clean, views, views)
        assert [o["metadata"]["uid"] for o in view_plan.pods] == [o["metadata"]["uid"] for o in whole_plan.pods]
        assert [o["metadata"]["uid"] for o in view_plan.services] == \
            [o["metadata"]["uid"] for o in whole_plan.services]
