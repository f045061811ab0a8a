"""The gang-scheduling component's RBAC, proven from the audit log like the install's (``test_e2e_run.py``): the
controller walks every gang-scheduling path for Volcano and for scheduler-plugins (a PodGroup created, one left by
the Go operator adopted after a 409, one patched on a real change, one deleted when its job finishes, priority
classes cached), and every request it made is allowed by ``manifests/overlays/gang-scheduling``, while every
permission the component grants was used."""

from __future__ import annotations

import pytest

from mxjob_controller.local.apiserver.server import APIServer
from tests import gang_support as gs
from tests.manifests import INSTALL_NAMESPACE, render
from tests.rbac import BOOTSTRAP, Policy, Request, ServiceAccount, audit_report
from tests.reconciler_support import CONTROLLER_AGENT, Harness, mxjob
from tests.support import wait_for

pytestmark = pytest.mark.slow

NS = "default"
CONTROLLER = ServiceAccount(INSTALL_NAMESPACE, "mxjob-controller")
GANG_ROLE = "ClusterRole/mxjob-controller-gang-scheduling"



def walk(h: Harness, groups: gs.PodGroups, api_version: str, scheduler: str, admitted_phase: str) -> None:
    """Adopt a PodGroup the Go operator left, create one, patch it on a real change, delete it at the end."""
    adopted = h.create_job(mxjob("adopted", scheduler=0, server=0, worker=1))
    owner = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "name": "adopted",
             "uid": adopted["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    reply = h.kube.post(groups.path(NS), {"apiVersion": api_version, "kind": "PodGroup",
                                          "metadata": {"name": "adopted", "ownerReferences": [owner]},
                                          "spec": {"minMember": 1}})
    assert reply.status == 201, reply.body
    controller = h.start(gang_scheduler_name=scheduler)
    wait_for(lambda: (groups.get(NS, "adopted") or {}).get("metadata", {}).get("labels"), what="adoption")

    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    groups.wait(NS, "j")
    groups.set_phase(NS, "j", admitted_phase)
    h.wait_children(NS, "j", 3)
    h.patch_job(NS, "j", {"spec": {"mxReplicaSpecs": {"Worker": {"replicas": 2}}}})
    wait_for(lambda: (groups.get(NS, "j") or {}).get("spec", {}).get("minMember") == 4, what="minMember 4")
    h.wait_children(NS, "j", 4)
    h.run_all(NS, "j")
    h.wait_condition(NS, "j", "Running")
    h.kubelet.succeed(NS, "j-scheduler-0")
    h.wait_condition(NS, "j", "Succeeded")
    groups.wait_gone(NS, "j")
    h.stop(controller)


def test_the_gang_component_grants_exactly_what_gang_scheduling_uses(apiserver: APIServer, h: Harness) -> None:
    gs.install(h.kube, gs.volcano_crd())
    gs.install(h.kube, gs.scheduler_plugins_crd())
    gs.priority_class(h.kube, "high", 1000)
    walk(h, gs.volcano(h.kube), "scheduling.volcano.sh/v1beta1", "volcano", "Inqueue")
    for name in ("adopted", "j"):
        assert h.kube.delete(f"/apis/kubeflow.org/v1/namespaces/{NS}/mxjobs/{name}").ok
    wait_for(lambda: not h.kube.get(f"/api/v1/namespaces/{NS}/pods").body["items"], what="the first jobs' pods gone")
    walk(h, gs.scheduler_plugins(h.kube), "scheduling.x-k8s.io/v1alpha1", "my-coscheduler", "Scheduled")

    # A watch is audited when its stream ends, a moment after the controller stopped.
    for group in ("scheduling.volcano.sh", "scheduling.x-k8s.io"):
        wait_for(lambda g=group: [r for r in apiserver.audit.records(user_agent=CONTROLLER_AGENT, verb="watch")
                                  if r.group == g], what=f"the audited watch of {group} podgroups")
    requests = [Request.of_audit(r) for r in apiserver.audit.records(user_agent=CONTROLLER_AGENT)]
    # Whether a scheduler's PodGroup API is served is asked through discovery, which every cluster grants.
    policy = Policy.from_documents([*render("overlays/gang-scheduling"), *BOOTSTRAP])
    report = audit_report(policy, CONTROLLER, requests)
    assert report.denied == [], "requests the manifests do not allow:\n" + "\n".join(map(str, report.denied))
    unused = [p for p in report.unused if p.role == GANG_ROLE]
    assert unused == [], "granted by the gang component but never used:\n" + "\n".join(map(str, unused))
