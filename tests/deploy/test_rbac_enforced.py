"""Every permission the shipped RBAC grants the MXJob controller is needed, proven against the API server enforcing it.

For each permission (one verb on one resource of one role: ``manifests/install``'s ClusterRoles and leader-election
Role, and the optional gang-scheduling component's ClusterRole) a test removes exactly that one from the rendered
manifests, applies the rest on a TLS server enforcing RBAC, runs the controller as its ServiceAccount with
in-cluster configuration, and walks the shortest scenario that needs the permission. It stops at the first 403 and
checks that the refusal is visible where it belongs:

- ``event``: a Warning event on the MXJob carrying kube's 403 message (the request was made for that job: a child
  created, adopted or deleted, the status written, the job re-read or deleted, its PodGroup managed);
- ``log``: an error line of the controller carrying it (what is not one job's: its caches' list and watch, the event
  writes themselves, the leader-election Lease);
- ``startup``: ``run``'s start-up check refuses to start, naming it (the CRD check).

Each scenario also has a goal it reaches only with every permission: ``test_..._with_the_shipped_rbac`` walks every
scenario with the manifests as shipped and sees each goal reached, without a single refused request.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mxjob_controller.core.job_controller import CacheSyncTimeoutError
from mxjob_controller.frameworks import MXNET
from mxjob_controller.kube.timefmt import now_micro, now_rfc3339
from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.local.apiserver.server import APIServer, ServerOptions
from mxjob_controller.manager.crd_check import StartupError, frameworks_to_run
from mxjob_controller.runtime.client import Client
from mxjob_controller.runtime.leaderelection import LeaderElectionConfig, LeaderElector, leader_election_client
from tests import gang_support as gs
from tests.manifests import INSTALL_NAMESPACE, render
from tests.rbac import Permission, Policy, ServiceAccount
from tests.reconciler_support import CONTROLLER_AGENT, SERVICE_ACCOUNT, Harness, jobs_path, mxjob
from tests.support import Kube, wait_for

# Each test starts the embedded API server or a process of its own (no server fixture).
pytestmark = pytest.mark.integration

NS = "default"
JOB = "j"
TIMEOUT = 20.0
CONTROLLER = ServiceAccount(INSTALL_NAMESPACE, SERVICE_ACCOUNT)
CR, MX, LE = ("ClusterRole/mxjob-controller", "ClusterRole/mxjob-controller-mxjobs",
              f"Role/{INSTALL_NAMESPACE}/mxjob-controller-leader-election")
GANG = "ClusterRole/mxjob-controller-gang-scheduling"
VOLCANO, PLUGINS = "scheduling.volcano.sh", "scheduling.x-k8s.io"
LEASE = "mxjob-controller"


class Walk:
    """One scenario's run: the harness, what it started (stopped at the end), and its goal."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.electors: list[LeaderElector] = []
        self.goal: Callable[[], Any] = lambda: True
        self.startup_error: StartupError | None = None

    def start(self, **options: Any) -> None:
        """The controller; a start whose caches cannot sync (list refused) is left at that."""
        try:
            self.h.start(cache_sync_timeout=1.0, **options)
        except CacheSyncTimeoutError:
            pass

    def job(self, **spec: Any) -> dict[str, Any]:
        return self.h.create_job(mxjob(JOB, scheduler=0, server=0, worker=spec.pop("worker", 1), **spec))

    def has_condition(self, ctype: str) -> bool:
        reply = self.h.kube.get(jobs_path(NS, JOB))
        return reply.ok and any(c["type"] == ctype and c["status"] == "True"
                                for c in (reply.body.get("status") or {}).get("conditions") or ())

    def close(self) -> None:
        for elector in self.electors:
            elector.stop(5.0)
        self.h.close()


# --- the scenarios ------------------------------------------------------------------------------------------------

def created(w: Walk) -> None:
    """A new job: its service and pod created (blockOwnerDeletion: the finalizers rule), its status written."""
    w.start()
    w.job()
    w.goal = lambda: w.has_condition("Created") and len(w.h.pods(NS, JOB)) == len(w.h.services(NS, JOB)) == 1


def squatters(w: Walk) -> None:
    """A pod and a service holding the child's name, controlled by the job, without its labels (the old
    operator's): the create meets 409, the object is read, and adopted with a label patch."""
    job = w.job()
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": JOB, "uid": job["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    meta = {"name": f"{JOB}-worker-0", "namespace": NS, "ownerReferences": [owner]}
    for path, body in (("pods", {"spec": {"containers": [{"name": "mxnet", "image": "mxjob/test:1"}]}}),
                       ("services", {"spec": {"clusterIP": "None", "ports": [{"name": "p", "port": 9091}]}})):
        kind = "Pod" if path == "pods" else "Service"
        assert w.h.kube.post(f"/api/v1/namespaces/{NS}/{path}",
                             {"apiVersion": "v1", "kind": kind, "metadata": meta, **body}).status == 201
    w.start()
    w.goal = lambda: len(w.h.pods(NS, JOB)) == len(w.h.services(NS, JOB)) == 1   # found by our labels: adopted


def event_repeated(w: Walk) -> None:
    """A pending pod deleted by a user is recreated: the same event again is a PATCH of its count."""
    created(w)
    wait_for(w.goal, timeout=TIMEOUT, what="the first pod")
    first = w.h.pods(NS, JOB)[0]["metadata"]["uid"]
    assert w.h.kube.delete(f"/api/v1/namespaces/{NS}/pods/{JOB}-worker-0").ok
    wait_for(lambda: [p for p in w.h.pods(NS, JOB) if p["metadata"]["uid"] != first], timeout=TIMEOUT,
             what="the pod recreated")
    w.goal = lambda: any(e.get("count", 1) >= 2 for e in w.h.events(NS, reason="SuccessfulCreatePod"))


def restarted(w: Walk) -> None:
    """restartPolicy ExitCode: a pod OOM-killed (137, retryable) is deleted and created anew."""
    w.start()
    w.job(restart_policy="ExitCode")
    [pod] = w.h.wait_children(NS, JOB, 1)
    w.h.kubelet.run(NS, f"{JOB}-worker-0")
    wait_for(lambda: w.has_condition("Running"), timeout=TIMEOUT, what="the job running")
    w.h.kubelet.fail(NS, f"{JOB}-worker-0", exit_code=137, reason="OOMKilled")
    first = pod["metadata"]["uid"]
    w.goal = lambda: [p for p in w.h.pods(NS, JOB) if p["metadata"]["uid"] != first]


def scaled_down(w: Walk) -> None:
    """Two workers scaled down to one: the last worker's pod and service are deleted."""
    w.start()
    w.job(worker=2)
    w.h.wait_children(NS, JOB, 2)
    w.h.patch_job(NS, JOB, {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 1}}}})
    w.goal = lambda: len(w.h.pods(NS, JOB)) == len(w.h.services(NS, JOB)) == 1


def finished_before(w: Walk) -> None:
    """A job that succeeded a moment ago, seen first by this controller: its terminal event is looked up (a LIST
    of events) before it is written."""
    w.job()
    now = now_rfc3339()
    status = {"conditions": [{"type": "Created", "status": "True", "lastTransitionTime": now},
                             {"type": "Succeeded", "status": "True", "reason": "MXJobSucceeded",
                              "message": "done", "lastUpdateTime": now, "lastTransitionTime": now}],
              "replicaStatuses": {}, "startTime": now, "completionTime": now}
    assert w.h.kube.patch(jobs_path(NS, JOB) + "/status", {"status": status}).ok
    w.start()
    w.goal = lambda: w.h.events(NS, reason="MXJobSucceeded")


def status_conflict(w: Walk) -> None:
    """The first status write conflicts (409): the job is re-read from the API."""
    rule = w.h.apiserver.faults.add(FaultRule(verb="patch", resource="mxjobs", subresource="status", code=409,
                                              count=1, user_agent=CONTROLLER_AGENT))
    w.start()
    w.job()
    w.goal = lambda: rule.fired == 1 and w.has_condition("Created")


def expired(w: Walk) -> None:
    """ttlSecondsAfterFinished 0: the job is deleted as soon as it succeeded."""
    w.start()
    w.job(runPolicy={"ttlSecondsAfterFinished": 0})
    w.h.wait_children(NS, JOB, 1)
    w.h.kubelet.run(NS, f"{JOB}-worker-0")
    w.h.kubelet.succeed(NS, f"{JOB}-worker-0")
    w.goal = lambda: w.h.kube.get(jobs_path(NS, JOB)).status == 404


def crd_check(w: Walk) -> None:
    """``run``'s start-up check: one GET of the MXJob CRD by name."""
    with Client(w.h.client_config(-1, 1), component="controller", program="mxjob-controller") as client:
        try:
            chosen = frameworks_to_run(client, (MXNET,), timeout=10)
        except StartupError as e:
            w.startup_error = e
            return
    w.goal = lambda: chosen == (MXNET,)


def _elect(w: Walk) -> LeaderElector:
    config = leader_election_client(w.h.client_config(-1, 1), "leader-election", program="mxjob-controller")
    w.h.clients.append(config)
    elector = LeaderElector(config, LeaderElectionConfig(LEASE, INSTALL_NAMESPACE, retry_period=0.2,
                                                         lease_duration=2.0, renew_deadline=1.5))
    w.electors.append(elector.start())
    return elector


def _lease(w: Walk, holder: str) -> None:
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": LEASE, "namespace": INSTALL_NAMESPACE},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 3600, "renewTime": now_micro(),
                     "acquireTime": now_micro(), "leaseTransitions": 0}}
    assert w.h.kube.post(f"/apis/coordination.k8s.io/v1/namespaces/{INSTALL_NAMESPACE}/leases", body).status == 201


def _holds(w: Walk, elector: LeaderElector) -> bool:
    reply = w.h.kube.get(f"/apis/coordination.k8s.io/v1/namespaces/{INSTALL_NAMESPACE}/leases/{LEASE}")
    return reply.ok and reply.body["spec"].get("holderIdentity") == elector.config.identity


def lease_created(w: Walk) -> None:
    """No Lease yet: the first candidate reads (404) and creates it."""
    elector = _elect(w)
    w.goal = lambda: _holds(w, elector)


def lease_taken_over(w: Walk) -> None:
    """A released Lease (no holder): read, then taken by an update."""
    _lease(w, "")
    elector = _elect(w)
    w.goal = lambda: _holds(w, elector)


def lease_watched(w: Walk) -> None:
    """A Lease another replica holds: the standby watches it (fieldSelector metadata.name) and takes it the moment
    it is released."""
    _lease(w, "the-other-replica")
    elector = _elect(w)
    wait_for(lambda: w.h.apiserver.audit.records(resource="leases", verb="get", user_agent=CONTROLLER_AGENT),
             timeout=TIMEOUT, what="the standby reading the Lease")
    path = f"/apis/coordination.k8s.io/v1/namespaces/{INSTALL_NAMESPACE}/leases/{LEASE}"
    released = False

    def goal() -> bool:
        nonlocal released
        if not released:   # released once the standby watches: it takes over at once, well within the lease
            if not w.h.apiserver.store.watchers("coordination.k8s.io/leases"):
                return False
            lease = w.h.kube.get(path).body
            assert w.h.kube.put(path, {**lease, "spec": {**lease["spec"], "holderIdentity": ""}}).ok
            released = True
        return _holds(w, elector)
    w.goal = goal


def _gang(w: Walk, group: str) -> gs.PodGroups:
    gs.install(w.h.kube, gs.volcano_crd() if group == VOLCANO else gs.scheduler_plugins_crd())
    return gs.volcano(w.h.kube) if group == VOLCANO else gs.scheduler_plugins(w.h.kube)


def _scheduler(group: str) -> str:
    return "volcano" if group == VOLCANO else "my-coscheduler"


def podgroup_created(w: Walk, group: str) -> None:
    """Gang scheduling: the job's PodGroup created (its priority classes cached)."""
    groups = _gang(w, group)
    w.start(gang_scheduler_name=_scheduler(group))
    w.job()
    w.goal = lambda: groups.get(NS, JOB)


def podgroup_released(w: Walk, group: str) -> None:
    """Gang scheduling: the job's PodGroup deleted once the job has succeeded."""
    groups = _gang(w, group)
    w.start(gang_scheduler_name=_scheduler(group))
    w.job()
    groups.wait(NS, JOB)
    groups.set_phase(NS, JOB, "Running")   # the scheduler admits the gang: its pods may be created
    w.h.wait_children(NS, JOB, 1)
    w.h.kubelet.run(NS, f"{JOB}-worker-0")
    w.h.kubelet.succeed(NS, f"{JOB}-worker-0")
    w.goal = lambda: w.has_condition("Succeeded") and groups.get(NS, JOB) is None


def podgroup_adopted(w: Walk, group: str) -> None:
    """A PodGroup of the job's name the Go operator made (the job its controller, no labels): the create meets 409,
    it is read and adopted with a label patch."""
    groups = _gang(w, group)
    job = w.job()
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": JOB, "uid": job["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    assert w.h.kube.post(groups.path(NS), {"apiVersion": f"{group}/{'v1beta1' if group == VOLCANO else 'v1alpha1'}",
                                           "kind": "PodGroup", "spec": {"minMember": 1},
                                           "metadata": {"name": JOB, "ownerReferences": [owner]}}).status == 201
    w.start(gang_scheduler_name=_scheduler(group))
    w.goal = lambda: ((groups.get(NS, JOB) or {}).get("metadata") or {}).get("labels")


# --- the table ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    permission: Permission
    scenario: Callable[[Walk], None]
    where: str                       # event | log | startup
    install: str = "install"
    says: str = ""                   # what the 403 says, when not kube's "cannot <verb> resource ..."

    @property
    def id(self) -> str:
        p = self.permission
        group = f".{p.group}" if p.group in (VOLCANO, PLUGINS) else ""
        return f"{p.resource}{group}-{p.verb}"

    @property
    def message(self) -> str:
        p = self.permission
        if self.says:
            return self.says
        resource, _, sub = p.resource.partition("/")
        return f'cannot {p.verb} resource "{resource}{"/" + sub if sub else ""}" in API group "{p.group}"'


def _children(resource: str, deleting: Callable[[Walk], None]) -> list[Case]:
    """``deleting``: a scenario in which the controller deletes one of these children (creating one with its job
    as owner needs no delete: owner-reference admission asks for it on updates only, as upstream)."""
    return [Case(Permission(CR, "", resource, "get"), squatters, "event"),
            Case(Permission(CR, "", resource, "list"), created, "log"),
            Case(Permission(CR, "", resource, "watch"), created, "log"),
            Case(Permission(CR, "", resource, "create"), created, "event"),
            Case(Permission(CR, "", resource, "patch"), squatters, "event"),
            Case(Permission(CR, "", resource, "delete"), deleting, "event")]


def _flavored(scenario: Callable[[Walk, str], None], group: str) -> Callable[[Walk], None]:
    """``scenario`` for one gang-scheduling flavor, named after both (a test id, one run per name)."""
    def walk(w: Walk) -> None:
        scenario(w, group)
    walk.__name__ = f"{scenario.__name__}-{'volcano' if group == VOLCANO else 'scheduler-plugins'}"
    return walk


def _gang_cases(group: str) -> list[Case]:
    gang = "overlays/gang-scheduling"
    created_, adopted, released = (_flavored(s, group) for s in (podgroup_created, podgroup_adopted,
                                                                  podgroup_released))
    return [Case(Permission(GANG, group, "podgroups", "get"), adopted, "event", gang),
            Case(Permission(GANG, group, "podgroups", "list"), created_, "log", gang),
            Case(Permission(GANG, group, "podgroups", "watch"), created_, "log", gang),
            Case(Permission(GANG, group, "podgroups", "create"), created_, "event", gang),
            Case(Permission(GANG, group, "podgroups", "patch"), adopted, "event", gang),
            Case(Permission(GANG, group, "podgroups", "delete"), released, "event", gang)]


CASES: list[Case] = [
    *_children("pods", restarted),
    *_children("services", scaled_down),
    Case(Permission(CR, "", "events", "list"), finished_before, "log"),
    Case(Permission(CR, "", "events", "create"), created, "log"),
    Case(Permission(CR, "", "events", "patch"), event_repeated, "log"),
    Case(Permission(MX, "apiextensions.k8s.io", "customresourcedefinitions", "get", "mxjobs.kubeflow.org"),
         crd_check, "startup"),
    Case(Permission(MX, "kubeflow.org", "mxjobs", "get"), status_conflict, "event"),
    Case(Permission(MX, "kubeflow.org", "mxjobs", "list"), created, "log"),
    Case(Permission(MX, "kubeflow.org", "mxjobs", "watch"), created, "log"),
    Case(Permission(MX, "kubeflow.org", "mxjobs", "delete"), expired, "event"),
    Case(Permission(MX, "kubeflow.org", "mxjobs/status", "patch"), created, "event"),
    Case(Permission(MX, "kubeflow.org", "mxjobs/finalizers", "update"), created, "event",
         says="cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on"),
    Case(Permission(LE, "coordination.k8s.io", "leases", "create"), lease_created, "log"),
    Case(Permission(LE, "coordination.k8s.io", "leases", "get", LEASE), lease_created, "log"),
    Case(Permission(LE, "coordination.k8s.io", "leases", "update", LEASE), lease_taken_over, "log"),
    Case(Permission(LE, "coordination.k8s.io", "leases", "watch", LEASE), lease_watched, "log"),
    *_gang_cases(VOLCANO),
    *_gang_cases(PLUGINS),
    Case(Permission(GANG, "scheduling.k8s.io", "priorityclasses", "list"),
         _flavored(podgroup_created, VOLCANO), "log", "overlays/gang-scheduling"),
    Case(Permission(GANG, "scheduling.k8s.io", "priorityclasses", "watch"),
         _flavored(podgroup_created, VOLCANO), "log", "overlays/gang-scheduling"),
]


def without(docs: list[dict[str, Any]], p: Permission) -> list[dict[str, Any]]:
    """``docs`` with exactly the permission ``p`` taken out of its role (a rule shared with other resources or
    verbs is split so that they stay)."""
    docs = copy.deepcopy(docs)
    for doc in docs:
        meta = doc["metadata"]
        ref = f"{doc['kind']}/{meta['namespace'] + '/' if doc['kind'] == 'Role' else ''}{meta['name']}"
        if doc["kind"] not in ("Role", "ClusterRole") or ref != p.role:
            continue
        rules = []
        for rule in doc.get("rules") or ():
            names = rule.get("resourceNames") or []
            if (p.group in rule.get("apiGroups", ()) and p.resource in rule.get("resources", ())
                    and p.verb in rule["verbs"] and (p.resource_name in names if p.resource_name else not names)):
                if others := [r for r in rule["resources"] if r != p.resource]:
                    rules.append({**rule, "resources": others})
                if verbs := [v for v in rule["verbs"] if v != p.verb]:
                    rules.append({**rule, "resources": [p.resource], "verbs": verbs})
            else:
                rules.append(rule)
        doc["rules"] = rules
    return docs


@pytest.fixture
def walk(tmp_path: Path) -> Iterator[Callable[[str, list[dict[str, Any]]], Walk]]:
    """Start a TLS server enforcing RBAC, apply ``docs`` (rendered from an install), and hand back a Walk."""
    made: list[tuple[APIServer, Kube, Walk]] = []

    def make(install: str, docs: list[dict[str, Any]]) -> Walk:
        server = APIServer(ServerOptions(tls=True, bookmark_interval=0.2)).start()
        kube = Kube.of(server)
        h = Harness(server, kube, tmp_path)
        h.service_account_dir = h.apply_rbac(install, docs)
        made.append((server, kube, Walk(h)))
        return made[-1][2]

    yield make
    for server, kube, w in made:
        w.close()
        kube.close()
        server.stop()


def refusals(server: APIServer) -> list[str]:
    return [f"{r.code} {r.verb} {r.path}" for r in server.audit.records(user_agent=CONTROLLER_AGENT)
            if r.code in (401, 403)]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_without_this_permission_the_controller_stops_at_a_visible_403(case: Case, walk, caplog):
    caplog.set_level(logging.INFO)
    rendered = render(case.install)
    docs = without(rendered, case.permission)
    assert Policy.from_documents(docs).permissions(CONTROLLER) == \
        Policy.from_documents(rendered).permissions(CONTROLLER) - {case.permission}, "exactly one removed"
    w = walk(case.install, docs)
    case.scenario(w)
    if case.where == "startup":
        assert w.startup_error is not None and case.message in str(w.startup_error)
        assert "RBAC is missing" in str(w.startup_error)
        return
    if case.where == "event":
        def warned() -> list[dict[str, Any]]:
            return [e for e in w.h.events(NS) if e["type"] == "Warning" and case.message in e["message"]
                    and e["involvedObject"]["kind"] == "MXJob" and e["involvedObject"]["name"] == JOB]
        event = wait_for(warned, timeout=TIMEOUT, what=f"a Warning event on the MXJob saying {case.message!r}")[0]
        assert "forbidden" in event["message"]
        reasons = {e["reason"] for e in warned()}
        assert reasons == {"Forbidden"} or "Forbidden" not in reasons, \
            f"a refusal already reported (FailedCreatePod...) is not reported again: {reasons}"
    errors = wait_for(lambda: [r for r in caplog.records if r.levelno >= logging.ERROR
                               and case.message in r.getMessage()], timeout=TIMEOUT,
                      what=f"an error log line saying {case.message!r}")
    if not case.says:   # (kube's owner-reference admission names no user: its RBAC reason is empty)
        assert f'User "system:serviceaccount:{INSTALL_NAMESPACE}:{SERVICE_ACCOUNT}"' in errors[0].getMessage()
    assert refusals(w.h.apiserver), "the server refused a request of the controller"
    assert not [r for r in caplog.records if r.exc_info and "forbidden" in r.getMessage()], \
        "a refusal is reported in words, not with a traceback"


def _distinct_scenarios() -> list[tuple[str, str, Callable[[Walk], None]]]:
    """One of each scenario (the gang ones once per flavor)."""
    seen: dict[str, tuple[str, str, Callable[[Walk], None]]] = {}
    for case in CASES:
        name = case.scenario.__name__
        seen.setdefault(name, (name, case.install, case.scenario))
    return sorted(seen.values())


@pytest.mark.parametrize(("name", "install", "scenario"), _distinct_scenarios(),
                         ids=[s[0] for s in _distinct_scenarios()])
def test_every_scenario_reaches_its_goal_with_the_shipped_rbac(name, install, scenario, walk, caplog):
    w = walk(install, render(install))
    scenario(w)
    assert w.startup_error is None
    wait_for(w.goal, timeout=TIMEOUT, what=f"{name}: its goal")
    assert refusals(w.h.apiserver) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "no error logged"
