"""The local scheduler on a real local cluster (API server over HTTP, controller, kubelet running processes): a sweep
queues within ``--capacity``, a Volcano gang binds all together or not at all, priority orders the queue, and a
gated pod cannot be bound. What ran when is read back from the API: its watch history, replayed from before the
jobs were submitted, is the order in which pods were bound and ended."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.gang_support import priority_class, volcano
from tests.local_support import local_cluster, pod_path, script_pod, wait_phase
from tests.support import Kube, wait_for

pytestmark = pytest.mark.slow

PODS = "/api/v1/namespaces/default/pods"
MXJOBS = "/apis/kubeflow.org/v1/namespaces/default/mxjobs"
SHORT = "import time; time.sleep(0.2)"
LONG = "import time; time.sleep(300)"


def mxjob(name: str, cpu: str, *, workers: int = 2, others: bool = True, **template_spec: Any) -> dict[str, Any]:
    """An MXJob whose every replica requests ``cpu`` and sleeps a moment; all its pods run to the end
    (``cleanPodPolicy: None``)."""
    def replica(count: int) -> dict[str, Any]:
        container = {"name": "mxnet", "image": "python:3.11-slim", "command": ["python", "-c", SHORT],
                     "resources": {"requests": {"cpu": cpu}}}
        return {"replicas": count, "restartPolicy": "Never",
                "template": {"spec": {"containers": [container], **template_spec}}}
    spec: dict[str, Any] = {"runPolicy": {"cleanPodPolicy": "None"}, "mxReplicaSpecs": {"Worker": replica(workers)}}
    if others:   # a distributed job: 1 scheduler, 1 server and the workers
        spec.update(jobMode="MXTrain")
        spec["mxReplicaSpecs"].update(Scheduler=replica(1), Server=replica(1))
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name, "namespace": "default"},
            "spec": spec}


def succeeded(kube: Kube, name: str) -> bool:
    status = kube.get(f"{MXJOBS}/{name}").body.get("status") or {}
    return any(c["type"] == "Succeeded" and c["status"] == "True" for c in status.get("conditions") or [])


def pods_rv(kube: Kube) -> str:
    return kube.get(PODS).body["metadata"]["resourceVersion"]


def history(kube: Kube, since: str, done: Any) -> list[dict[str, Any]]:
    """Every pod event after resourceVersion ``since``, replayed by a watch until ``done(events)``."""
    events: list[dict[str, Any]] = []
    for event in kube.watch(PODS, timeout=30, resourceVersion=since):
        events.append(event)
        if done(events):
            return events
    raise AssertionError(f"the watch ended before the history was complete ({len(events)} events)")


def bound_and_running(events: list[dict[str, Any]]) -> list[set[str]]:
    """After each event: the pods bound and not yet ended (or gone)."""
    state: dict[str, bool] = {}
    out = []
    for event in events:
        pod = event["object"]
        name = pod["metadata"]["name"]
        alive = event["type"] != "DELETED" and bool(pod["spec"].get("nodeName")) and \
            pod["status"].get("phase") not in ("Succeeded", "Failed")
        state[name] = alive
        out.append({n for n, a in state.items() if a})
    return out


def bind_order(events: list[dict[str, Any]]) -> list[str]:
    order: list[str] = []
    for event in events:
        pod = event["object"]
        if pod["spec"].get("nodeName") and pod["metadata"]["name"] not in order:
            order.append(pod["metadata"]["name"])
    return order


def scheduled_at(pod: dict[str, Any]) -> datetime:
    stamp = next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")["lastTransitionTime"]
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def unschedulable(kube: Kube, name: str) -> dict[str, Any] | None:
    reply = kube.get(pod_path(name))
    if not reply.ok:
        return None
    return next((c for c in reply.body["status"].get("conditions") or []
                 if c["type"] == "PodScheduled" and c["status"] == "False"), None)


def test_a_sweep_runs_within_the_capacity_and_waiting_pods_say_why(tmp_path):
    with local_cluster(tmp_path, controller=True, capacity={"cpu": "2"}) as (_cluster, kube, kubectl):
        node = kube.get("/api/v1/nodes/local").body["status"]
        assert node["capacity"]["cpu"] == node["allocatable"]["cpu"] == "2"
        since = pods_rv(kube)
        names = [f"sweep-{i}" for i in range(10)]
        for name in names:
            assert kube.post(MXJOBS, mxjob(name, "250m")).ok
        # A pod that waits says so as kube-scheduler says it, on the pod and in a FailedScheduling event.
        waiting = wait_for(lambda: next((c for p in kube.get(PODS).body["items"]
                                         if (c := unschedulable(kube, p["metadata"]["name"]))), None),
                           timeout=60, what="a pod marked unschedulable")
        assert waiting["reason"] == "Unschedulable"
        assert waiting["message"] == "0/1 nodes are available: 1 Insufficient cpu."
        events = wait_for(lambda: [e for e in kube.get("/api/v1/namespaces/default/events").body["items"]
                                   if e["reason"] == "FailedScheduling"], timeout=30, what="FailedScheduling")
        assert events[0]["type"] == "Warning" and events[0]["source"]["component"] == "default-scheduler"
        assert events[0]["message"] == "0/1 nodes are available: 1 Insufficient cpu."
        for name in names:
            wait_for(lambda n=name: succeeded(kube, n), timeout=180, what=f"job {name} succeeded")
        wait_for(lambda: all(p["status"]["phase"] == "Succeeded" for p in kube.get(PODS).body["items"]),
                 timeout=60, what="every pod ended")

        def complete(seen: list[dict[str, Any]]) -> bool:
            ended = {e["object"]["metadata"]["name"] for e in seen if e["object"]["status"].get("phase") ==
                     "Succeeded"}
            return len(ended) == 40
        running = bound_and_running(history(kube, since, complete))
        # 8 pods of 250m fill 2 CPUs: never more bound and running at once (2 jobs' worth), and the node was used.
        assert max(len(r) for r in running) <= 8, max(running, key=len)
        assert max(len(r) for r in running) >= 4
        assert "Insufficient cpu" in kubectl.ok("get", "events", "--field-selector", "reason=FailedScheduling")


def test_a_volcano_gang_binds_all_together_or_not_at_all(tmp_path):
    with local_cluster(tmp_path, controller=True, capacity={"cpu": "2"}, gang_scheduler_name="volcano") as (
            _cluster, kube, _kubectl):
        podgroups = volcano(kube)
        blocker = script_pod("blocker", LONG, container={"resources": {"requests": {"cpu": "1500m"}}})
        assert kube.post(PODS, blocker).ok
        wait_phase(kube, "blocker", "Running")
        job = mxjob("gang", "250m", schedulerName="volcano")
        job["spec"]["runPolicy"]["schedulingPolicy"] = {"minAvailable": 4}
        assert kube.post(MXJOBS, job).ok
        # 4 x 250m do not fit in the 500m left: Volcano keeps the group Pending, so no pod is created or bound.
        group = podgroups.wait("default", "gang")
        assert group["spec"]["minMember"] == 4 and group["spec"]["minResources"] == {"cpu": "1"}
        wait_for(lambda: (podgroups.get("default", "gang") or {}).get("status", {}).get("phase") == "Pending",
                 timeout=30, what="podgroup Pending")
        assert not [p for p in kube.get(PODS).body["items"] if p["metadata"]["name"].startswith("gang-")
                    and p["spec"].get("nodeName")]
        since = pods_rv(kube)
        groups_since = kube.get(podgroups.path("default")).body["metadata"]["resourceVersion"]
        assert kube.delete(pod_path("blocker")).ok
        wait_for(lambda: succeeded(kube, "gang"), timeout=90, what="gang job succeeded")
        pods = [p for p in kube.get(PODS).body["items"] if p["metadata"]["name"].startswith("gang-")]
        assert len(pods) == 4
        times = sorted(scheduled_at(p) for p in pods)
        assert (times[-1] - times[0]).total_seconds() <= 1.0, times   # one pass (timestamps are whole seconds)

        def all_bound(seen: list[dict[str, Any]]) -> bool:
            return len([n for n in bind_order(seen) if n.startswith("gang-")]) == 4
        events = history(kube, since, all_bound)
        # Until the last gang pod was bound, none of them had started: no partial gang ran.
        last_bind = max(i for i, e in enumerate(events) if e["object"]["spec"].get("nodeName")
                        and e["object"]["metadata"]["name"].startswith("gang-"))
        assert not [e for e in events[:last_bind] if e["object"]["metadata"]["name"].startswith("gang-")
                    and e["object"]["status"].get("phase") in ("Running", "Succeeded")]
        # The PodGroup followed Volcano's phases: admitted (Inqueue) once room freed, Running once the gang was bound.
        phases: list[str] = []
        for event in kube.watch(podgroups.path("default"), timeout=30, resourceVersion=groups_since):
            phase = (event["object"].get("status") or {}).get("phase")
            if phase and phase not in phases:
                phases.append(phase)
            if "Running" in phases or event["type"] == "DELETED":
                break
        assert phases[:2] == ["Inqueue", "Running"], phases


def test_a_volcano_gang_that_can_never_fit_is_marked_unschedulable_saying_what_it_lacks(tmp_path):
    """Five one-CPU workers on a four-CPU node, all or nothing: Volcano would never admit the group. Its PodGroup
    gets Volcano's condition (Unschedulable, NotEnoughResources) and Warning event naming the CPU it lacks, and the
    job a Warning ``PodGroupPending`` saying why its pods are not created; no pod exists."""
    with local_cluster(tmp_path, controller=True, capacity={"cpu": "4"}, gang_scheduler_name="volcano") as (
            _cluster, kube, kubectl):
        podgroups = volcano(kube)
        assert kube.post(MXJOBS, mxjob("huge", "1", workers=5, others=False)).ok
        podgroups.wait("default", "huge")

        def condition() -> dict[str, Any] | None:
            return next((c for c in ((podgroups.get("default", "huge") or {}).get("status") or {}).get(
                "conditions") or [] if c["type"] == "Unschedulable" and c["status"] == "True"), None)
        found = wait_for(condition, timeout=30, what="the PodGroup's Unschedulable condition")
        assert found["reason"] == "NotEnoughResources"
        assert "5/5 tasks in gang unschedulable" in found["message"]
        assert "cpu 5 (the node allocates 4)" in found["message"], found
        said = wait_for(lambda: kubectl.ok(
            "get", "events", "--field-selector", "involvedObject.kind=PodGroup,reason=Unschedulable",
            "-o", "jsonpath={range .items[*]}{.type} {.source.component}: {.message}{end}"), timeout=30,
            what="the PodGroup's Unschedulable event")
        assert said.startswith("Warning volcano: 5/5 tasks in gang unschedulable") and \
            "cpu 5 (the node allocates 4)" in said, said
        job_event = wait_for(lambda: kubectl.ok(
            "get", "events", "--field-selector", "involvedObject.kind=MXJob,reason=PodGroupPending",
            "-o", "jsonpath={.items[*].message}"), timeout=30, what="the job's PodGroupPending event")
        assert "PodGroup default/huge is unschedulable: 5/5 tasks in gang unschedulable" in job_event
        assert "cpu 5 (the node allocates 4)" in job_event
        assert not [p for p in kube.get(PODS).body["items"] if p["metadata"]["name"].startswith("huge-")]


def test_a_higher_priority_job_submitted_later_binds_first(tmp_path):
    with local_cluster(tmp_path, controller=True, capacity={"cpu": "2"}) as (_cluster, kube, _kubectl):
        priority_class(kube, "high", 1000)
        assert kube.post(PODS, script_pod("blocker", LONG, container={"resources": {"requests": {"cpu": "2"}}})).ok
        wait_phase(kube, "blocker", "Running")
        since = pods_rv(kube)
        assert kube.post(MXJOBS, mxjob("low", "2", workers=1, others=False)).ok
        wait_for(lambda: unschedulable(kube, "low-worker-0"), timeout=30, what="low waits")
        assert kube.post(MXJOBS, mxjob("high", "2", workers=1, others=False, priorityClassName="high")).ok
        high = wait_for(lambda: unschedulable(kube, "high-worker-0") and kube.get(pod_path("high-worker-0")).body,
                        timeout=30, what="high waits")
        assert high["spec"]["priority"] == 1000    # admission resolved the class
        assert kube.get(pod_path("low-worker-0")).body["spec"]["priority"] == 0
        assert kube.delete(pod_path("blocker")).ok
        for name in ("low", "high"):
            wait_for(lambda n=name: succeeded(kube, n), timeout=60, what=f"job {name} succeeded")
        order = bind_order(history(kube, since, lambda seen: {"low-worker-0", "high-worker-0"} <= set(
            bind_order(seen))))
        assert order.index("high-worker-0") < order.index("low-worker-0")


def test_gated_pods_wait_and_cannot_be_bound(tmp_path):
    with local_cluster(tmp_path) as (_cluster, kube, _kubectl):
        assert kube.post(PODS, script_pod("gated", "print('x')", schedulingGates=[{"name": "example.com/hold"}])).ok
        reply = kube.post(pod_path("gated") + "/binding", {"apiVersion": "v1", "kind": "Binding",
                                                           "metadata": {"name": "gated"},
                                                           "target": {"kind": "Node", "name": "local"}})
        assert reply.status == 409
        assert reply.body["reason"] == "Conflict"
        assert reply.body["message"] == ('Operation cannot be fulfilled on pods/binding "gated": pod gated has '
                                         'non-empty .spec.schedulingGates')
        gated = kube.get(pod_path("gated")).body
        assert not gated["spec"].get("nodeName")
        assert [(c["type"], c["status"], c["reason"], c["message"]) for c in gated["status"]["conditions"]] == [
            ("PodScheduled", "False", "SchedulingGated", "Scheduling is blocked due to non-empty scheduling gates")]
        # Lifting the gate lets the scheduler bind it.
        assert kube.patch(pod_path("gated"), {"spec": {"schedulingGates": None}}).ok
        assert wait_phase(kube, "gated", "Succeeded")["spec"]["nodeName"] == "local"
        # An unknown priority class is refused at create, as kube's Priority admission refuses it.
        reply = kube.post(PODS, script_pod("classless", "print('x')", priorityClassName="nope"))
        assert reply.status == 403
        assert reply.body["message"] == 'pods "classless" is forbidden: no PriorityClass with name nope was found'


def test_a_backlog_is_not_rewritten_while_it_waits_and_a_freed_slot_binds_the_next_pod_at_once(tmp_path):
    """Three pods fill a node of ``pods: 3``; five more wait. Cluster events that cannot make them fit (the node's
    labels changed: kube retries waiting pods on a NodeUpdate) make the queue try them again, which writes nothing:
    their PodScheduled condition is unchanged, so their resourceVersion is, and no FailedScheduling event is added.
    Then one running pod is deleted: a waiting pod binds in its place promptly (no 5-minute wait, no backoff to sit
    out)."""
    with local_cluster(tmp_path, capacity={"pods": "3"}) as (cluster, kube, _kubectl):
        names = [f"backlog-{i}" for i in range(8)]
        for name in names:
            assert kube.post(PODS, script_pod(name, LONG)).ok

        def pods() -> dict[str, dict[str, Any]]:
            return {p["metadata"]["name"]: p for p in kube.get(PODS).body["items"]}

        def settled() -> bool:
            now = pods()
            return sum(p["status"].get("phase") == "Running" for p in now.values()) == 3 and sum(
                bool(unschedulable(kube, n)) for n, p in now.items() if not p["spec"].get("nodeName")) == 5
        wait_for(settled, timeout=60, what="3 pods running and 5 marked unschedulable")
        before = pods()
        waiting = sorted(n for n, p in before.items() if not p["spec"].get("nodeName"))
        assert len(waiting) == 5
        assert unschedulable(kube, waiting[0])["message"] == "0/1 nodes are available: 1 Too many pods."

        def failed_scheduling() -> int:
            return sum(e.get("count") or 1 for e in kube.get("/api/v1/namespaces/default/events").body["items"]
                       if e["reason"] == "FailedScheduling")
        queue = cluster.scheduler.queue
        wait_for(lambda: queue.stats().unschedulable == 5, timeout=30, what="the 5 pods in unschedulablePods")
        events = wait_for(lambda: failed_scheduling() >= 5 and failed_scheduling(), timeout=30,
                          what="their FailedScheduling events")
        attempts = queue.stats().attempts
        for nudge in range(3):
            assert kube.patch("/api/v1/nodes/local", {"metadata": {"labels": {"example.com/nudge": str(nudge)}}}).ok
            wait_for(lambda n=nudge: queue.stats().attempts >= attempts + 5 * (n + 1) and
                     queue.stats().unschedulable + queue.stats().backoff == 5, timeout=30,
                     what=f"the waiting pods tried again after nudge {nudge}")
        assert queue.stats().moves.get("NodeUpdate", 0) >= 3
        # one attempt per pod per nudge: a retry that writes nothing sets off no further retry
        assert queue.stats().attempts == attempts + 15
        after = pods()
        assert {n: after[n]["metadata"]["resourceVersion"] for n in waiting} == \
            {n: before[n]["metadata"]["resourceVersion"] for n in waiting}
        assert failed_scheduling() == events
        # A slot freed: the first waiting pod in the queue's order binds in its place.
        victim = next(n for n, p in after.items() if p["spec"].get("nodeName"))
        assert kube.delete(pod_path(victim), {"gracePeriodSeconds": 0}).ok
        wait_for(lambda: kube.get(pod_path(victim)).status == 404, timeout=30, what=f"{victim} gone")
        bound = wait_for(lambda: [n for n in waiting if pods()[n]["spec"].get("nodeName")], timeout=5,
                         what="a waiting pod bound in the freed slot")
        assert len(bound) == 1
