"""End to end, as a user runs it (``tests/e2e.py``): ``local up`` and ``run`` as separate processes, an install
applied with ``kubectl apply -k``, the examples taken from Created through Running to Succeeded, the endpoints
answering, SIGTERM ending each process with 0 within 10 s and a standby taking over within 2 s. Three installs: both
frameworks (``manifests/install``), MXJobs only and TFJobs only (``manifests/overlays/{mxnet,tensorflow}-only``).

RBAC proven, not guessed, for each: every request the controller made in that run (identified by its user agent in
the server's audit log) is allowed by the rules of that install, and every permission those rules grant the
controller was used.
"""

from __future__ import annotations

import sys

import pytest

from tests.e2e import INSTALLS, Outcome, run_end_to_end
from tests.manifests import INSTALL_NAMESPACE, render
from tests.rbac import Permission, Policy, Request, ServiceAccount, audit_report

pytestmark = pytest.mark.slow

CONTROLLER = ServiceAccount(INSTALL_NAMESPACE, "mxjob-controller")
# Permissions granted although a run does not use them, and why. Keep it empty unless there is a reason.
EXCEPTIONS: dict[Permission, str] = {
    Permission("ClusterRole/mxjob-controller", "", "events", "list"):
        "the terminal event's look-up when a controller starts and finds a recently finished job "
        "(tests/test_runtime_events_priority.py); this run's job is deleted by its TTL before the handover",
    **{Permission(f"ClusterRole/mxjob-controller-{plural}", "kubeflow.org", f"{plural}/finalizers", "update"):
       "setting blockOwnerDeletion on a child where the OwnerReferencesPermissionEnforcement admission plugin runs "
       "(OpenShift enables it): an admission check, not a request, so no audit record shows it "
       "(tests/test_rbac_enforced.py proves it needed, on the embedded server enforcing RBAC)"
       for plural in ("mxjobs", "tfjobs")},
}


def check(outcome: Outcome, install: str = "install") -> None:
    kinds = [scenario.kind for scenario in INSTALLS[install]]
    assert outcome.conditions == {kind: {"Created": "True", "Running": "False", "Succeeded": "True"}
                                  for kind in kinds}
    assert outcome.metrics == {kind: {"created": 1.0, "successful": 1.0, "deleted": 1.0} for kind in kinds}
    assert outcome.standby_reconciles is None, "a standby reconciles nothing"
    assert all(seconds < 10 for seconds in outcome.stop_seconds), outcome.stop_seconds
    assert outcome.handover_seconds < 2.0, f"handover took {outcome.handover_seconds:.2f}s"
    report = audit_report(Policy.from_documents(render(install)), CONTROLLER,
                          map(Request.of_audit_line, outcome.audit), EXCEPTIONS)
    assert report.denied == [], "requests the manifests do not allow:\n" + "\n".join(map(str, report.denied))
    assert report.unused == [], "granted but never used:\n" + "\n".join(map(str, report.unused))
    verbs = {(r["verb"], r["resource"], r["subresource"]) for r in outcome.audit}
    for scenario in INSTALLS[install]:
        assert {("patch", "events", ""), ("patch", scenario.plural, "status"), ("get", scenario.plural, "")} <= verbs, \
            "the rarer paths were walked"
    other = {s.plural for s in INSTALLS["install"]} - {s.plural for s in INSTALLS[install]}
    assert not [r for r in outcome.audit if r["resource"] in other or r["name"] in {f"{p}.kubeflow.org"
                                                                                    for p in other}], \
        "nothing of the framework left out is asked for"


@pytest.mark.parametrize("install", list(INSTALLS))
def test_end_to_end_from_the_checkout(tmp_path, install):
    check(run_end_to_end([sys.executable, "-m", "mxjob_controller"], tmp_path, install), install)
