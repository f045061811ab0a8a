"""The local scheduler's decisions, table-tested on plain values: kube's fit rules and message, the queue's order,
gangs all-or-nothing, Volcano's enqueue and both schedulers' PodGroup phases. (The node's ``--capacity``:
tests/local/kubelet/test_node.py.)"""

from __future__ import annotations

from fractions import Fraction

import pytest

from mxjob_controller.core.podgroups import VOLCANO
from mxjob_controller.local.scheduler.placement import (
    COSCHEDULING,
    GroupView,
    WaitingPod,
    amounts,
    coscheduling_phase,
    enqueue,
    node_usage,
    placement_view,
    plan,
    pod_requests,
    shortfalls,
    unschedulable_message,
    volcano_phase,
)

F = Fraction
MI = 1024 * 1024


def _container(**requests: str) -> dict:
    return {"name": "c", "resources": {"requests": requests}} if requests else {"name": "c"}


@pytest.mark.parametrize(("spec", "expected"), [
    # the sum of app containers
    ({"containers": [_container(cpu="250m", memory="1Gi"), _container(cpu="250m", memory="1Gi")]},
     {"cpu": F(1, 2), "memory": F(2048 * MI)}),
    # no requests: kube-scheduler's non-zero defaults, per container
    ({"containers": [_container(), _container(cpu="1")]}, {"cpu": F(11, 10), "memory": F(400 * MI)}),
    # the largest init container wins over a smaller sum
    ({"initContainers": [_container(cpu="2", memory="1Mi")], "containers": [_container(cpu="500m", memory="1Mi")]},
     {"cpu": F(2), "memory": F(MI)}),
    # a sidecar (restartable init container) runs beside the app containers and after-starting init containers
    ({"initContainers": [{**_container(cpu="1", memory="1Mi"), "restartPolicy": "Always"},
                         _container(cpu="1", memory="1Mi")],
      "containers": [_container(cpu="500m", memory="1Mi")]}, {"cpu": F(2), "memory": F(2 * MI)}),
    # pod overhead on top; extended resources count as any other
    ({"containers": [_container(cpu="1", memory="1Mi", **{"nvidia.com/gpu": "2"})],
      "overhead": {"cpu": "100m", "memory": "1Mi"}},
     {"cpu": F(11, 10), "memory": F(2 * MI), "nvidia.com/gpu": F(2)}),
])
def test_effective_pod_requests(spec, expected):
    assert pod_requests(spec) == expected


def test_the_placement_view_keeps_what_placement_reads_and_drops_the_environment():
    sidecar = {**_container(cpu="1", memory="1Mi"), "restartPolicy": "Always", "image": "envoy",
               "env": [{"name": "A", "value": "a"}]}
    app = {**_container(cpu="500m", memory="1Mi", **{"nvidia.com/gpu": "1"}), "image": "mxnet",
           "command": ["python", "train.py"], "env": [{"name": "MX_CONFIG", "value": "x" * 50_000}],
           "volumeMounts": [{"name": "data", "mountPath": "/data"}]}
    pod = {"metadata": {"name": "p", "uid": "u", "managedFields": [{"manager": "m"}], "labels": {"a": "b"}},
           "spec": {"initContainers": [sidecar], "containers": [app], "overhead": {"cpu": "100m"},
                    "nodeName": "", "schedulerName": "volcano", "priority": 7},
           "status": {"phase": "Pending"}}
    full_requests = pod_requests(pod["spec"])
    view = placement_view(pod)
    assert pod_requests(view["spec"]) == full_requests == {"cpu": F(8, 5), "memory": F(2 * MI),
                                                           "nvidia.com/gpu": F(1)}
    assert view["spec"]["containers"] == [{"name": "c", "resources": app["resources"]}]
    assert view["spec"]["initContainers"] == [{"name": "c", "resources": sidecar["resources"],
                                               "restartPolicy": "Always"}]
    assert "managedFields" not in view["metadata"] and view["metadata"]["labels"] == {"a": "b"}
    assert {k: view["spec"][k] for k in ("overhead", "schedulerName", "priority")} == {
        "overhead": {"cpu": "100m"}, "schedulerName": "volcano", "priority": 7}
    assert placement_view({"metadata": {"name": "bare"}}) == {"metadata": {"name": "bare"}}


@pytest.mark.parametrize(("requests", "used", "pods", "reasons"), [
    ({"cpu": "1"}, {"cpu": "1", "pods": "1"}, 1, []),
    ({"cpu": "1100m"}, {"cpu": "1", "pods": "1"}, 1, ["Insufficient cpu"]),
    ({"cpu": "1", "memory": "5Gi", "example.com/foo": "1"}, {"pods": "0"}, 1,
     ["Insufficient example.com/foo", "Insufficient memory"]),
    ({"nvidia.com/gpu": "1"}, {"pods": "0"}, 1, ["Insufficient nvidia.com/gpu"]),     # the node has none
    ({"cpu": "100m"}, {"pods": "3"}, 1, ["Too many pods"]),
    ({"cpu": "100m"}, {"pods": "1"}, 2, []),
    ({"cpu": "100m"}, {"pods": "2"}, 2, ["Too many pods"]),
])
def test_shortfalls(requests, used, pods, reasons):
    allocatable = amounts({"cpu": "2", "memory": "4Gi", "pods": "3"})
    assert shortfalls(amounts(requests), allocatable, amounts(used), pods=pods) == reasons


def test_kube_message_lists_every_reason_sorted():
    assert unschedulable_message(["Insufficient cpu"]) == "0/1 nodes are available: 1 Insufficient cpu."
    assert unschedulable_message(["Too many pods", "Insufficient memory", "Insufficient cpu"]) == \
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods."


def test_node_usage_counts_pods():
    assert node_usage([{"cpu": F(1)}, {"cpu": F(1, 2)}]) == {"cpu": F(3, 2), "pods": F(2)}


NODE = amounts({"cpu": "2", "memory": "4Gi", "pods": "110"})


def pod(name: str, cpu: str = "250m", priority: int = 0, created: str = "2026-01-01T00:00:00Z",
        group: str | None = None) -> WaitingPod:
    return WaitingPod(f"default/{name}", priority, created, {"cpu": amounts({"c": cpu})["c"]}, group)


def test_fits_in_priority_then_age_order_and_smaller_pods_pass_a_big_one():
    waiting = [pod("old", cpu="1", created="2026-01-01T00:00:01Z"),
               pod("new-high", cpu="1", priority=100, created="2026-01-01T00:00:09Z"),
               pod("oldest", cpu="1", created="2026-01-01T00:00:00Z"),
               pod("huge", cpu="3", priority=1000),
               pod("small", cpu="500m", created="2026-01-01T00:00:05Z")]
    decision = plan(waiting, {}, NODE, {"cpu": F(0), "pods": F(0)})
    assert decision.bind == ["default/new-high", "default/oldest"]
    assert decision.waiting == {"default/huge": "0/1 nodes are available: 1 Insufficient cpu.",
                                "default/old": "0/1 nodes are available: 1 Insufficient cpu.",
                                "default/small": "0/1 nodes are available: 1 Insufficient cpu."}


def group(flavor: str = VOLCANO, **fields) -> GroupView:
    return GroupView(**{"key": "default/job", "flavor": flavor, "min_member": 4, "phase": "Inqueue", **fields})


@pytest.mark.parametrize(("free_cpu", "members", "the_group", "bound"), [
    # 4 x 250m fit in 1 CPU: all bind together
    ("1", 4, group(), 4),
    # they do not: none binds
    ("900m", 4, group(), 0),
    # fewer pods than minMember exist: none binds, even though they fit
    ("2", 3, group(), 0),
    # minResources larger than the pods' requests must fit too, while no pod is bound
    ("1", 4, group(min_resources={"cpu": F(3, 2)}), 0),
    # minMember 2 of 4: two bind as a gang, the others as they fit
    ("600m", 4, group(min_member=2), 2),
    # already running (minMember bound): the rest bind one by one
    ("500m", 2, group(min_member=2, bound=2), 2),
    # Volcano has not admitted the group: nothing binds
    ("2", 4, group(phase="Pending"), 0),
    # coscheduling has no admission step
    ("1", 4, group(COSCHEDULING, phase="Scheduling"), 4),
    # no such PodGroup (yet)
    ("2", 4, None, 0),
])
def test_gangs_bind_all_or_nothing(free_cpu, members, the_group, bound):
    used = {"cpu": F(2) - amounts({"c": free_cpu})["c"], "pods": F(0)}
    waiting = [pod(f"job-{i}", group="default/job") for i in range(members)]
    groups = {"default/job": the_group} if the_group else {}
    decision = plan(waiting, groups, NODE, used)
    assert len(decision.bind) == bound
    assert len(decision.waiting) == members - bound


def test_gang_messages():
    waiting = [pod(f"job-{i}", group="default/job") for i in range(3)]
    decision = plan(waiting, {"default/job": group()}, NODE, {"pods": F(0)})
    assert decision.waiting["default/job-0"] == ("0/1 nodes are available: pre-filter pod job-0 cannot find enough "
                                                 "sibling pods, current pods number: 3, minMember of group: 4.")
    decision = plan([*waiting, pod("job-3", group="default/job")], {"default/job": group()}, NODE,
                    {"cpu": F(2), "pods": F(1)})
    assert set(decision.waiting.values()) == {"0/1 nodes are available: 1 Insufficient cpu."}


def test_volcano_enqueue_admits_what_fits_beyond_admitted_groups():
    groups = [group(key="default/a", phase="Pending", min_resources={"cpu": F(1)}, created="2"),
              group(key="default/b", phase="Inqueue", min_resources={"cpu": F(1, 2)}),
              group(key="default/c", phase="Pending", min_resources={"cpu": F(1)}, created="1"),
              group(key="default/d", phase="Pending", min_resources={"cpu": F(1, 2)}, created="3"),
              group(key="default/e", phase="Pending", min_resources={"cpu": F(1)}, priority=10, created="4")]
    # 2 CPUs, 1/2 taken, 1/2 reserved by b: 1 left; e (priority) takes it; a and c wait, d (1/2) does not fit
    assert enqueue(groups, NODE, {"cpu": F(1, 2), "pods": F(1)}) == ["default/e"]
    # nothing taken: 3/2 free beyond b; e takes 1, then c and a (1 each, oldest first) do not fit, d does
    assert enqueue(groups, NODE, {"pods": F(0)}) == ["default/e", "default/d"]
    # with e admitted earlier (Inqueue, nothing bound), c is next in age order
    admitted = [g if g.key != "default/e" else group(key="default/e", phase="Inqueue", min_resources={"cpu": F(1)})
                for g in groups]
    assert enqueue(admitted, NODE, {"pods": F(0)}) == ["default/d"]


@pytest.mark.parametrize(("fields", "phase"), [
    ({"phase": "Pending", "pods": 0}, "Pending"),                   # only enqueue leaves Pending
    ({"phase": "Inqueue", "pods": 4, "bound": 2}, "Inqueue"),
    ({"phase": "Inqueue", "pods": 4, "bound": 4}, "Running"),
    ({"phase": "Running", "pods": 4, "bound": 1, "succeeded": 3}, "Running"),
    ({"phase": "Running", "pods": 4, "succeeded": 4}, "Completed"),
    ({"phase": "Running", "pods": 4, "bound": 2}, "Pending"),        # pods lost: back to Pending (jobStatus)
])
def test_volcano_phases(fields, phase):
    assert volcano_phase(group(**fields)) == phase


@pytest.mark.parametrize(("fields", "phase"), [
    ({"phase": "", "pods": 2}, "Pending"),
    ({"phase": "Pending", "pods": 4}, "Scheduling"),
    ({"phase": "Scheduling", "pods": 4, "bound": 4}, "Scheduled"),
    ({"phase": "Scheduled", "pods": 4, "bound": 4, "running": 4}, "Running"),
    ({"phase": "Running", "pods": 4, "bound": 3, "running": 3, "failed": 1}, "Failed"),
    ({"phase": "Running", "pods": 4, "succeeded": 4}, "Finished"),
    ({"phase": "Scheduling", "pods": 3}, "Pending"),
])
def test_coscheduling_phases(fields, phase):
    assert coscheduling_phase(group(COSCHEDULING, **fields)) == phase
