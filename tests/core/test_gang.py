"""Gang scheduling's decisions (core/gang.py) that need no write, table-tested with the real caches: whether pods
wait for the PodGroup (Volcano until it admits the gang, any group being deleted, one the job does not control), the
PodGroup spec a job asks for (its templates and the PriorityClass values the cache holds), a pod joining the group,
which PodGroups a release leaves alone, and the PodGroup informer's handlers (which job wakes, which expectation
is observed).

The client points at a port nothing listens on and never retries: a write these decisions must not make fails the
test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mxjob_controller.core.framework import JobContext
from mxjob_controller.core.gang import GangScheduling, PodGroupHandlers, PodGroupNameTakenError, podgroup_key
from mxjob_controller.core.podgroups import (
    PRIORITY_CLASSES,
    PodGroupFlavor,
    PriorityClasses,
    SchedulerPlugins,
    Volcano,
)
from mxjob_controller.mxnet.framework import MXNetFramework
from mxjob_controller.runtime.cache_keys import DeletedFinalStateUnknown
from mxjob_controller.runtime.client import Client, ClientConfig
from mxjob_controller.runtime.events import EventRecorder
from mxjob_controller.runtime.expectations import ControllerExpectations, ExpectationKey
from mxjob_controller.runtime.informer import SharedInformer

UID = "job-uid"
#: The Volcano PodGroup spec of ``mxjob()``: 1 scheduler, 1 server, 2 workers, every request summed.
ASKED = {"minMember": 4, "queue": "default", "minResources": {"cpu": "5500m", "memory": "5376Mi"}}
NOWHERE = ClientConfig(host="http://127.0.0.1:9", connect_timeout=1.0, timeout=1.0)   # the discard port


def container(cpu: str, memory: str) -> dict[str, Any]:
    return {"name": "mxnet", "image": "mxjob/test:1", "resources": {"requests": {"cpu": cpu, "memory": memory}}}


def mxjob(run_policy: dict[str, Any] | None = None, *, scheduler_name: str = "") -> dict[str, Any]:
    def replica(replicas: int, cpu: str, memory: str, priority_class: str = "") -> dict[str, Any]:
        spec: dict[str, Any] = {"containers": [container(cpu, memory)]}
        if priority_class:
            spec["priorityClassName"] = priority_class
        if scheduler_name:
            spec["schedulerName"] = scheduler_name
        return {"replicas": replicas, "template": {"spec": spec}}

    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob",
            "metadata": {"name": "j", "namespace": "ns", "uid": UID, "generation": 1,
                         "annotations": {"team": "a"}},
            "spec": {"jobMode": "MXTrain", "runPolicy": run_policy or {},
                     "mxReplicaSpecs": {"Scheduler": replica(1, "500m", "256Mi"),
                                        "Server": replica(1, "1", "1Gi", "low"),
                                        "Worker": replica(2, "2", "2Gi", "high")}}}


def podgroup(*, owner_uid: str = UID, controller: bool = True, phase: str = "", deleting: bool = False,
             spec: dict[str, Any] | None = None, rv: str = "5", kind: str = "MXJob") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "j", "namespace": "ns", "uid": "pg-uid", "resourceVersion": rv,
                            "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": kind, "name": "j",
                                                 "uid": owner_uid, "controller": controller}]}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    body: dict[str, Any] = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta,
                            "spec": spec if spec is not None else dict(ASKED)}
    if phase:
        body["status"] = {"phase": phase}
    return body


class Gang:
    """A GangScheduling over real caches that nothing fills but the test, and a client that reaches nothing."""

    def __init__(self, flavor: PodGroupFlavor) -> None:
        self.client = Client(NOWHERE, "test-gang", max_retries=0)
        self.podgroups = SharedInformer(self.client, flavor.resource)
        classes = SharedInformer(self.client, PRIORITY_CLASSES)
        for name, value in (("high", 1000), ("low", 10)):
            classes.store.upsert({"metadata": {"name": name}, "value": value})
        self.expectations = ControllerExpectations()
        self.recorder = EventRecorder(self.client, "test-gang")
        self.framework = MXNetFramework()
        self.gang = GangScheduling(flavor, self.framework, self.client, [self.podgroups], PriorityClasses(classes),
                                   self.recorder, self.expectations)

    def ctx(self, job: dict[str, Any]) -> JobContext:
        spec, errors = self.framework.parse(job)
        assert spec is not None, errors
        return JobContext("ns/j", job, spec, self.framework)

    def cache(self, obj: dict[str, Any]) -> None:
        self.podgroups.store.upsert(obj)


@pytest.fixture
def volcano() -> Iterator[Gang]:
    gang = Gang(Volcano())
    yield gang
    gang.client.close()


# --- whether pods wait ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("group", "holds"), [
    (podgroup(), True),                                   # Volcano has not looked at it yet
    (podgroup(phase="Pending"), True),
    (podgroup(phase="Inqueue"), False),                   # admitted
    (podgroup(phase="Running"), False),
    (podgroup(phase="Inqueue", deleting=True), True),     # on its way out: pods would join a group that goes
    # the spec asked, by value ("5.5" CPUs are "5500m"): no update
    (podgroup(phase="Inqueue", spec={**ASKED, "minResources": {"cpu": "5.5", "memory": "5376Mi"}}), False),
])
def test_pods_wait_until_volcano_admits_the_gang(volcano: Gang, group: dict, holds: bool) -> None:
    volcano.cache(group)
    state = volcano.gang.sync(volcano.ctx(mxjob()))
    assert (state.holds_pods, state.error, state.podgroup) == (holds, None, group)


@pytest.mark.parametrize("group", [podgroup(owner_uid="another-job"), podgroup(controller=False)])
def test_a_podgroup_the_job_does_not_control_holds_its_pods_and_is_an_error(volcano: Gang, group: dict) -> None:
    volcano.cache(group)
    state = volcano.gang.sync(volcano.ctx(mxjob()))
    assert state.holds_pods and isinstance(state.error, PodGroupNameTakenError)
    assert str(state.error) == 'podgroup "j" already exists and is not controlled by MXJob j'


def test_coscheduling_never_holds_pods() -> None:
    gang = Gang(SchedulerPlugins("sp-scheduler"))
    try:
        gang.cache(podgroup(phase="Pending", spec={"minMember": 4, "minResources": {
            "cpu": "5500m", "memory": "5376Mi"}}))
        state = gang.gang.sync(gang.ctx(mxjob()))
        assert (state.holds_pods, state.error) == (False, None)
    finally:
        gang.client.close()


# --- what the job asks --------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("policy", "spec"), [
    (None, ASKED),
    ({"schedulingPolicy": {"minAvailable": 2}},    # the two workers: their class's value is the highest
     {"minMember": 2, "queue": "default", "minResources": {"cpu": "4", "memory": "4Gi"}}),
    ({"schedulingPolicy": {"minAvailable": 3, "queue": "research", "priorityClass": "high"}},
     {"minMember": 3, "queue": "research", "priorityClassName": "high",
      "minResources": {"cpu": "5", "memory": "5Gi"}}),
])
def test_the_podgroup_spec_comes_from_the_jobs_templates_and_the_cached_priority_values(
        volcano: Gang, policy: dict | None, spec: dict) -> None:
    assert volcano.gang.request_spec(volcano.ctx(mxjob(policy)), None) == spec


def test_an_existing_volcano_group_keeps_its_queue(volcano: Gang) -> None:
    ctx = volcano.ctx(mxjob({"schedulingPolicy": {"queue": "research"}}))
    assert volcano.gang.request_spec(ctx, {"queue": "old-queue"})["queue"] == "old-queue"


@pytest.mark.parametrize(("named", "scheduler"), [("", "volcano"), ("volcano", "volcano"),
                                                  ("my-scheduler", "my-scheduler")])
def test_a_new_pod_joins_the_group_and_keeps_a_scheduler_its_template_names(volcano: Gang, named: str,
                                                                            scheduler: str) -> None:
    ctx = volcano.ctx(mxjob(scheduler_name=named))
    template = volcano.framework.pod_template(ctx.spec, "Worker", 0)
    volcano.gang.decorate(ctx, "Worker", template)
    assert template["spec"]["schedulerName"] == scheduler
    assert {k: template["metadata"]["annotations"][k] for k in ("scheduling.k8s.io/group-name",
                                                                "volcano.sh/task-spec")} == {
        "scheduling.k8s.io/group-name": "j", "volcano.sh/task-spec": "worker"}


# --- release ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("group", [None, podgroup(owner_uid="another-job"), podgroup(deleting=True)])
def test_a_release_leaves_alone_a_group_that_is_not_ours_or_already_going(volcano: Gang, group: dict | None) -> None:
    if group is not None:
        volcano.cache(group)
    volcano.gang.release(volcano.ctx(mxjob()), finished=True)   # a DELETE would fail: nothing listens
    assert volcano.expectations.pending(podgroup_key("ns/j")) is None


def test_a_release_already_expected_is_not_sent_again(volcano: Gang) -> None:
    volcano.cache(podgroup(phase="Running"))
    volcano.expectations.raise_expectations(podgroup_key("ns/j"), dels=1)   # deleted by an earlier pass
    volcano.gang.release(volcano.ctx(mxjob()), finished=True)
    assert volcano.expectations.pending(podgroup_key("ns/j")) == (0, 1)


# --- the PodGroup informer's handlers -----------------------------------------------------------------------------

class Handlers:
    def __init__(self) -> None:
        self.queued: list[str] = []
        self.expectations = ControllerExpectations()
        self.jobs = {"ns/j": {"metadata": {"namespace": "ns", "name": "j", "uid": UID}}}
        self.handlers = PodGroupHandlers(kind="MXJob", group="kubeflow.org", resolve_job=self.jobs.get,
                                         enqueue=self.queued.append, expectations=self.expectations)
        self.key = podgroup_key("ns/j")


def test_the_expectations_of_a_jobs_podgroup_are_its_own_record() -> None:
    assert podgroup_key("ns/j") == ExpectationKey("ns/j", "podgroups", "")
    assert podgroup_key("ns/j") != podgroup_key("ns/k")


@pytest.mark.parametrize("deleted", [podgroup(), DeletedFinalStateUnknown("ns/j", podgroup())])
def test_a_created_and_a_deleted_group_are_observed_and_wake_the_job(deleted: Any) -> None:
    h = Handlers()
    h.expectations.raise_expectations(h.key, adds=1, dels=1)
    h.handlers.on_add(podgroup())
    assert h.expectations.pending(h.key) == (0, 1)
    h.handlers.on_delete(deleted)
    assert h.expectations.pending(h.key) == (0, 0) and h.queued == ["ns/j", "ns/j"]


@pytest.mark.parametrize("group", [podgroup(owner_uid="old-job-uid"), podgroup(controller=False),
                                   podgroup(kind="TFJob")])
def test_a_group_no_job_of_ours_controls_wakes_nothing_and_satisfies_nothing(group: dict) -> None:
    h = Handlers()
    h.expectations.raise_expectations(h.key, adds=1, dels=1)
    h.handlers.on_add(group)
    h.handlers.on_update(podgroup(rv="1"), {**group, "metadata": {**group["metadata"], "resourceVersion": "9"}})
    h.handlers.on_delete(group)
    assert h.expectations.pending(h.key) == (1, 1) and h.queued == []


def test_a_phase_change_wakes_the_job_and_a_resync_does_not() -> None:
    h = Handlers()
    h.handlers.on_update(podgroup(rv="5"), podgroup(rv="5"))
    assert h.queued == []
    h.handlers.on_update(podgroup(rv="5", phase="Pending"), podgroup(rv="6", phase="Inqueue"))   # admitted
    assert h.queued == ["ns/j"]
