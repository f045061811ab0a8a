"""End to end, as a user runs it (``tests/e2e.py``): ``local up`` and ``run`` as separate processes, the install
applied with ``kubectl apply -k``, the distributed example taken from Created through Running to Succeeded, the
endpoints answering, SIGTERM ending each process with 0 within 10 s and a standby taking over within 2 s.

RBAC proven, not guessed: every request the controller made in that run (identified by its user agent in the
server's audit log) is allowed by the rules of ``manifests/install``, and every permission those rules grant the
controller was used.
"""

from __future__ import annotations

import sys

import pytest

from tests.e2e import run_end_to_end
from tests.manifests import INSTALL_NAMESPACE, render
from tests.rbac import Permission, Policy, Request, ServiceAccount, audit_report

pytestmark = pytest.mark.slow

CONTROLLER = ServiceAccount(INSTALL_NAMESPACE, "mxjob-controller")
# Permissions granted although this run does not use them, and why. Keep it empty unless there is a reason.
EXCEPTIONS: dict[Permission, str] = {
    Permission("ClusterRole/mxjob-controller", "", "events", "list"):
        "the terminal event's look-up when a controller starts and finds a recently finished job "
        "(tests/test_runtime_events_priority.py); this run's job is deleted by its TTL before the handover",
}


def check(outcome) -> None:
    assert outcome.conditions == {"Created": "True", "Running": "False", "Succeeded": "True"}
    assert outcome.metrics == {"created": 1.0, "successful": 1.0, "deleted": 1.0, "standby_reconciles": None}
    assert all(seconds < 10 for seconds in outcome.stop_seconds), outcome.stop_seconds
    assert outcome.handover_seconds < 2.0, f"handover took {outcome.handover_seconds:.2f}s"
    report = audit_report(Policy.from_documents(render("install")), CONTROLLER,
                          map(Request.of_audit_line, outcome.audit), EXCEPTIONS)
    assert report.denied == [], "requests the manifests do not allow:\n" + "\n".join(map(str, report.denied))
    assert report.unused == [], "granted but never used:\n" + "\n".join(map(str, report.unused))
    verbs = {(r["verb"], r["resource"], r["subresource"]) for r in outcome.audit}
    assert {("patch", "events", ""), ("patch", "mxjobs", "status"), ("get", "mxjobs", "")} <= verbs, \
        "the rarer paths were walked"


def test_end_to_end_from_the_checkout(tmp_path):
    check(run_end_to_end([sys.executable, "-m", "mxjob_controller"], tmp_path))
