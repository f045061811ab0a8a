"""What a job asks of its gang and the two PodGroup flavours (core/podgroups.py), table-tested against
training-operator's ``ReconcileJobs`` / ``CalcPGMinResources`` and Volcano's and scheduler-plugins' PodGroups:
``minMember``, ``minResources`` summed highest priority first, each flavour's spec, how a pod joins its group,
when pod creation waits, and the flavour a ``--gang-scheduler-name`` selects."""

from __future__ import annotations

from typing import Any

import pytest

from mxjob_controller.core.podgroups import (
    COSCHEDULING_PODGROUPS,
    VOLCANO_PODGROUPS,
    GangRequest,
    ReplicaTemplate,
    SchedulerPlugins,
    Volcano,
    flavor_for,
    gang_request,
    same_spec,
)
from mxjob_controller.kubeflow_api.run_policy import SchedulingPolicy

PRIORITIES = {"high": 1000, "low": 10}


def priority_of(name: str) -> int:
    return PRIORITIES.get(name, 0)


def template(*containers: dict[str, Any], priority_class: str = "", scheduler: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if scheduler:
        spec["schedulerName"] = scheduler
    return {"spec": spec}


def asks(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {key: value for key, value in (("requests", requests), ("limits", limits)) if value is not None}
    return {"name": "mxnet", "image": "i", "resources": resources}


SCHEDULER = ReplicaTemplate("Scheduler", 1, template(asks({"cpu": "500m", "memory": "512Mi"})))
SERVER = ReplicaTemplate("Server", 2, template(asks({"cpu": "1", "memory": "1Gi"}), priority_class="low"))
WORKER = ReplicaTemplate("Worker", 2, template(asks({"cpu": "2", "nvidia.com/gpu": "1"}), priority_class="high"))


# --- the gang request -------------------------------------------------------------------------------------------

def test_without_a_policy_every_replica_is_a_member_and_every_request_counts() -> None:
    request = gang_request(None, [SCHEDULER, SERVER, WORKER], priority_of)
    assert request == GangRequest(5, min_resources={"cpu": "6500m", "memory": "2560Mi", "nvidia.com/gpu": "2"})


@pytest.mark.parametrize(("min_available", "resources"), [
    (2, {"cpu": "4", "nvidia.com/gpu": "2"}),                           # the two high-priority workers
    (3, {"cpu": "5", "memory": "1Gi", "nvidia.com/gpu": "2"}),          # then one low-priority server
    (5, {"cpu": "6500m", "memory": "2560Mi", "nvidia.com/gpu": "2"}),   # the scheduler (no class: 0) last
    (9, {"cpu": "6500m", "memory": "2560Mi", "nvidia.com/gpu": "2"}),   # more than the job has: what it has
])
def test_min_resources_count_the_first_min_available_pods_highest_priority_class_first(
        min_available: int, resources: dict[str, str]) -> None:
    request = gang_request(SchedulingPolicy(min_available=min_available), [SCHEDULER, SERVER, WORKER], priority_of)
    assert (request.min_member, dict(request.min_resources)) == (min_available, resources)


def test_equal_priorities_keep_the_jobs_type_order_and_an_unknown_class_counts_as_zero() -> None:
    first = ReplicaTemplate("Scheduler", 1, template(asks({"cpu": "1"}), priority_class="no-such-class"))
    second = ReplicaTemplate("Worker", 1, template(asks({"memory": "1Gi"})))
    assert gang_request(SchedulingPolicy(min_available=1), [first, second], priority_of).min_resources == {"cpu": "1"}
    assert gang_request(SchedulingPolicy(min_available=1), [second, first], priority_of).min_resources == {
        "memory": "1Gi"}


def test_a_container_without_requests_counts_its_limits_and_a_bad_quantity_counts_nothing() -> None:
    replicas = [ReplicaTemplate("Worker", 2, template(asks(limits={"cpu": "250m"}),
                                                       asks({"memory": "64Mi", "cpu": "lots"})))]
    assert gang_request(None, replicas, priority_of).min_resources == {"cpu": "500m", "memory": "128Mi"}


def test_min_resources_given_by_the_job_are_used_canonically_and_the_policy_passes_through() -> None:
    policy = SchedulingPolicy(min_available=3, queue="research", priority_class="high",
                              min_resources={"cpu": "3000m", "memory": "1024Mi", "pods": 4},
                              schedule_timeout_seconds=60)
    assert gang_request(policy, [SCHEDULER, SERVER, WORKER], priority_of) == GangRequest(
        3, queue="research", priority_class="high", min_resources={"cpu": "3", "memory": "1Gi", "pods": "4"},
        schedule_timeout_seconds=60)


@pytest.mark.parametrize(("current", "desired", "same"), [
    ({"minMember": 3, "minResources": {"cpu": "1000m"}}, {"minMember": 3, "minResources": {"cpu": "1"}}, True),
    ({"minMember": 3}, {"minMember": 3, "minResources": {}}, True),          # absent is empty
    (None, {"minMember": 0, "queue": ""}, True),
    ({"minMember": 3, "queue": "a"}, {"minMember": 3, "queue": "b"}, False),
    ({"minMember": 3, "minResources": {"cpu": "1"}}, {"minMember": 3, "minResources": {"cpu": "1001m"}}, False),
    ({"minMember": 2}, {"minMember": 3}, False),
])
def test_a_podgroup_spec_is_compared_by_value(current: dict | None, desired: dict, same: bool) -> None:
    assert same_spec(current, desired) is same


# --- volcano ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("request_", "current", "spec"), [
    (GangRequest(4), None, {"minMember": 4, "queue": "default", "minResources": {}}),   # minResources always
    (GangRequest(4, queue="research", priority_class="high", min_resources={"cpu": "2"}), None,
     {"minMember": 4, "queue": "research", "minResources": {"cpu": "2"}, "priorityClassName": "high"}),
    (GangRequest(4, queue="research"), {"queue": "old-queue"}, {"minMember": 4, "queue": "old-queue",
                                                                 "minResources": {}}),    # admitted per queue
    (GangRequest(4, schedule_timeout_seconds=60), None, {"minMember": 4, "queue": "default", "minResources": {}}),
])
def test_volcanos_podgroup_spec(request_: GangRequest, current: dict | None, spec: dict) -> None:
    assert Volcano().spec(request_, current) == spec


@pytest.mark.parametrize(("podgroup", "holds"), [
    (None, True),                                   # not seen yet
    ({"status": {}}, True),                         # no phase: Volcano has not looked at it
    ({"status": {"phase": "Pending"}}, True),
    ({"status": {"phase": "Inqueue"}}, False),      # admitted: the queue has room for minResources
    ({"status": {"phase": "Running"}}, False),
])
def test_volcano_holds_pods_until_it_admits_the_gang(podgroup: dict | None, holds: bool) -> None:
    assert Volcano().holds_pods(podgroup) is holds


def test_a_volcano_pod_joins_its_group_by_annotation_and_keeps_a_scheduler_it_names() -> None:
    pod = {"metadata": {"annotations": {"team": "a"}}, "spec": {}}
    Volcano().decorate(pod, "j", "Worker")
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {"team": "a", "scheduling.k8s.io/group-name": "j",
                                              "volcano.sh/task-spec": "worker"}
    named = template(scheduler="my-scheduler")
    Volcano().decorate(named, "j", "Server")
    assert named["spec"]["schedulerName"] == "my-scheduler"
    assert named["metadata"]["annotations"]["volcano.sh/task-spec"] == "server"


# --- scheduler-plugins ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("request_", "spec"), [
    (GangRequest(4), {"minMember": 4}),                                     # no empty minResources
    (GangRequest(4, queue="q", priority_class="high", min_resources={"cpu": "2"}, schedule_timeout_seconds=60),
     {"minMember": 4, "minResources": {"cpu": "2"}, "scheduleTimeoutSeconds": 60}),
    (GangRequest(4, schedule_timeout_seconds=0), {"minMember": 4, "scheduleTimeoutSeconds": 0}),
])
def test_scheduler_plugins_podgroup_spec(request_: GangRequest, spec: dict) -> None:
    assert SchedulerPlugins("scheduler-plugins-scheduler").spec(request_, {"queue": "ignored"}) == spec


def test_a_coscheduling_pod_joins_its_group_by_label_and_is_never_held() -> None:
    flavor = SchedulerPlugins("sp-scheduler")
    pod: dict[str, Any] = {}
    flavor.decorate(pod, "j", "Worker")
    assert pod == {"spec": {"schedulerName": "sp-scheduler"},
                   "metadata": {"labels": {"scheduling.x-k8s.io/pod-group": "j"}}}
    assert not flavor.holds_pods(None) and not flavor.holds_pods({"status": {"phase": "Pending"}})


# --- the flavour ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("flag", "resource", "scheduler"), [
    (None, None, None), ("", None, None), ("none", None, None), (" None ", None, None),
    ("volcano", VOLCANO_PODGROUPS, "volcano"), ("Volcano", VOLCANO_PODGROUPS, "volcano"),
    ("scheduler-plugins-scheduler", COSCHEDULING_PODGROUPS, "scheduler-plugins-scheduler"),
    ("my-coscheduler", COSCHEDULING_PODGROUPS, "my-coscheduler"),
])
def test_the_gang_scheduler_name_chooses_the_flavour(flag: str | None, resource: Any, scheduler: str | None) -> None:
    flavor = flavor_for(flag)
    assert (flavor and flavor.resource, flavor and flavor.scheduler_name) == (resource, scheduler)
