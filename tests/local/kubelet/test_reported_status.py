"""The pod status the local kubelet reports (local/kubelet/reported_status.py), table-tested: the phase from
container statuses (the kubelet's getPhase) and conditions that keep their transition times."""

from __future__ import annotations

import pytest

from mxjob_controller.local.kubelet.reported_status import conditions, phase

RUN = {"state": {"running": {"startedAt": "t"}}}
OK = {"state": {"terminated": {"exitCode": 0}}}
BAD = {"state": {"terminated": {"exitCode": 1}}}
WAIT = {"state": {"waiting": {"reason": "ContainerCreating"}}}
BACKOFF = {"state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": {"exitCode": 1}}}


@pytest.mark.parametrize(("policy", "init", "app", "terminal", "expected"), [
    ("Never", [], [WAIT], False, "Pending"),
    ("Never", [], [RUN, WAIT], False, "Pending"),
    ("Never", [], [RUN, OK], False, "Running"),
    ("Never", [], [OK, OK], False, "Succeeded"),
    ("Never", [], [OK, BAD], False, "Failed"),
    ("OnFailure", [], [OK, BAD], False, "Running"),     # the failed one restarts
    ("OnFailure", [], [OK, OK], False, "Succeeded"),
    ("Always", [], [OK, OK], False, "Running"),          # everything restarts
    ("Always", [], [BACKOFF], False, "Running"),
    ("Never", [RUN], [WAIT], False, "Pending"),
    ("Never", [BAD], [WAIT], False, "Failed"),           # a failed init container fails a Never pod
    ("OnFailure", [BACKOFF], [WAIT], False, "Pending"),  # ... and is retried otherwise
    ("OnFailure", [OK], [RUN], False, "Running"),
    ("Always", [], [OK, BAD], True, "Failed"),           # stopped for good: nothing restarts
    ("Always", [], [OK, OK], True, "Succeeded"),
    ("OnFailure", [BAD], [WAIT], True, "Failed"),
])
def test_phase(policy, init, app, terminal, expected):
    assert phase(policy, init, app, terminal) == expected


def test_conditions_keep_their_transition_time():
    app = [{"name": "a", "ready": True}]
    first = conditions("Running", [], app, [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "t0"}],
                       "t1")
    assert [c["type"] for c in first] == ["PodScheduled", "PodReadyToStartContainers", "Initialized", "Ready",
                                          "ContainersReady"]
    again = conditions("Running", [], app, first, "t2")
    assert {c["lastTransitionTime"] for c in again[1:]} == {"t1"}
    done = conditions("Succeeded", [], [{"name": "a", "ready": False}], again, "t3")
    ready = next(c for c in done if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["lastTransitionTime"]) == ("False", "PodCompleted", "t3")
