"""End to end, as a user runs it (``tests/e2e/scenario.py``): ``local up`` and ``run`` as separate processes, an install
applied with ``kubectl apply -k``, the examples taken from Created through Running to Succeeded, the endpoints
answering, SIGTERM ending each process with 0 within 10 s and a standby taking over within 2 s. Four installs: all
three frameworks (``manifests/install``), MXJobs only, TFJobs only and GenericJobs only
(``manifests/overlays/{mxnet,tensorflow,generic}-only``).

RBAC proven, not guessed, for each: every request the controller made in that run (identified by its user agent in
the server's audit log) is allowed by the rules of that install (and what every cluster grants every client:
discovery, where the GenericJob controller asks whether the T9k PodGroups are served), and every permission those
rules grant the controller was used.
"""

from __future__ import annotations

import sys

import pytest

from tests.e2e.scenario import INSTALLS, Outcome, run_end_to_end
from tests.manifests import INSTALL_NAMESPACE, render
from tests.rbac import BOOTSTRAP, Permission, Policy, Request, ServiceAccount, audit_report

pytestmark = pytest.mark.slow

CONTROLLER = ServiceAccount(INSTALL_NAMESPACE, "mxjob-controller")
DISCOVERY = "ClusterRole/system:discovery"   # the cluster's, not ours: only what it allows matters
# Permissions granted although a run does not use them, and why. Keep it empty unless there is a reason.
EXCEPTIONS: dict[Permission, str] = {
    Permission("ClusterRole/mxjob-controller", "", "events", "list"):
        "the terminal event's look-up when a controller starts and finds a recently finished MXJob or TFJob "
        "(tests/runtime/test_events_priority.py); this run's Kubeflow jobs are deleted by their TTL before the "
        "handover (the GenericJob-only install does not grant it: GenericJob has no such look-up)",
    **{Permission(f"ClusterRole/mxjob-controller-{plural}", group, f"{plural}/finalizers", "update"):
       "setting blockOwnerDeletion on a child where the OwnerReferencesPermissionEnforcement admission plugin runs "
       "(OpenShift enables it): an admission check, not a request, so no audit record shows it "
       "(tests/deploy/test_rbac_enforced.py proves it needed, on the embedded server enforcing RBAC)"
       for plural, group in (("mxjobs", "kubeflow.org"), ("tfjobs", "kubeflow.org"),
                             ("genericjobs", "batch.tensorstack.dev"))},
}


def check(outcome: Outcome, install: str = "install") -> None:
    scenarios = INSTALLS[install]
    assert outcome.conditions == {scenario.kind: scenario.final for scenario in scenarios}
    assert outcome.metrics == {scenario.kind: scenario.counted for scenario in scenarios}
    assert outcome.standby_reconciles is None, "a standby reconciles nothing"
    assert all(seconds < 10 for seconds in outcome.stop_seconds), outcome.stop_seconds
    assert outcome.handover_seconds < 2.0, f"handover took {outcome.handover_seconds:.2f}s"
    report = audit_report(Policy.from_documents([*render(install), *BOOTSTRAP]), CONTROLLER,
                          map(Request.of_audit_line, outcome.audit), EXCEPTIONS)
    assert report.denied == [], "requests the manifests do not allow:\n" + "\n".join(map(str, report.denied))
    unused = [p for p in report.unused if p.role != DISCOVERY]
    assert unused == [], "granted but never used:\n" + "\n".join(map(str, unused))
    verbs = {(r["verb"], r["resource"], r["subresource"]) for r in outcome.audit}
    for scenario in scenarios:
        assert {("patch", "events", ""), ("patch", scenario.plural, "status"), ("get", scenario.plural, "")} <= verbs, \
            "the rarer paths were walked"
    left_out = [s for s in INSTALLS["install"] if s not in scenarios]
    assert not [r for r in outcome.audit if r["resource"] in {s.plural for s in left_out}
                or r["name"] in {s.crd_name for s in left_out}
                or any(f"/{group}/" in r["path"] for s in left_out for group in s.own_groups)], \
        "nothing of the frameworks left out is asked for"


@pytest.mark.parametrize("install", list(INSTALLS))
def test_end_to_end_from_the_checkout(tmp_path, install):
    check(run_end_to_end([sys.executable, "-m", "mxjob_controller"], tmp_path, install), install)
