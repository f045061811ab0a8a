"""Issue 16's controller defects, end to end against the embedded API server: a job's size is bounded, a large job is
created in slices while small jobs get their turn, deleting it stops its creates at once, and a new job gets one
status write (no 409 from a stale cache)."""

from __future__ import annotations

import time

import yaml

from mxjob_controller.core.framework import MAX_REPLICAS_PER_JOB, MAX_REPLICAS_PER_TYPE
from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.runtime.reconcile_trace import read_trace
from tests.reconciler_support import DEADLINE, Harness, jobs_path, mxjob
from tests.support import Kubectl, wait_for

NS = "default"
KUBE_QPS, KUBE_BURST = 20.0, 30   # the controller's defaults (training-operator's --kube-api-qps/--kube-api-burst)



def test_a_billion_replicas_are_refused_at_submit_naming_the_field_and_the_limit(h: Harness, kubectl: Kubectl) -> None:
    body = mxjob("huge", worker=1)
    body["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 1_000_000_000
    done = kubectl.run("apply", "-f", "-", input=yaml.safe_dump(body))
    assert done.returncode != 0
    assert "spec.mxReplicaSpecs.Worker.replicas" in done.stderr and f"{MAX_REPLICAS_PER_TYPE}" in done.stderr, \
        done.stderr
    assert h.kube.get(jobs_path(NS, "huge")).status == 404


def test_too_many_replicas_in_all_fail_the_job_with_the_limit_and_create_nothing(h: Harness) -> None:
    """Each type within its limit (the CRD's schema accepts it), the sum over: the controller refuses it."""
    controller = h.start()
    each = MAX_REPLICAS_PER_JOB // 2 + 1
    h.create_job(mxjob("big", scheduler=1, server=each, worker=each))
    failed = h.wait_condition(NS, "big", "Failed")
    assert failed["reason"] == "MXJobFailedValidation"
    assert f"spec.mxReplicaSpecs: Invalid value: {2 * each + 1}" in failed["message"]
    assert f"at most {MAX_REPLICAS_PER_JOB} replicas in all" in failed["message"]
    h.settle(controller, f"{NS}/big")
    assert h.writes("create", "pods") == [] and h.writes("create", "services") == []


def test_a_small_job_gets_its_status_while_a_large_one_is_created_and_deleting_it_stops_its_creates(
        h: Harness) -> None:
    """One worker thread and the default client budget (20 requests/s), as `run` starts by default: a 2,000-child
    job (1,000 pods and their services) takes ~100 s to create, yet a 1/1/1 job submitted after it shows Created
    within 5 s, and once the large job is deleted its creates stop within 2 s."""
    controller = h.start(threadiness=1, qps=KUBE_QPS, burst=KUBE_BURST)
    h.create_job(mxjob("large", scheduler=1, server=1, worker=998))
    wait_for(lambda: len(h.writes("create", "services")) >= 40, timeout=DEADLINE, what="the large job under way")
    large = h.job(NS, "large")
    assert (large.get("status") or {}).get("conditions"), "the large job has its status before all its children"
    submitted = time.time()
    h.create_job(mxjob("small", scheduler=1, server=1, worker=1))
    created = h.wait_condition(NS, "small", "Created", timeout=DEADLINE)
    waited = time.time() - submitted
    assert waited < 5.0, f"the small job waited {waited:.1f}s for its first status"
    assert created["message"] == "MXJob small is created."
    h.wait_children(NS, "small", 3)
    deleted = time.time()
    assert h.kube.delete(jobs_path(NS, "large")).ok
    wait_for(lambda: h.kube.get(jobs_path(NS, "large")).status == 404, timeout=DEADLINE, what="the large job gone")
    h.settle(controller, f"{NS}/small")
    late = [r for kind in ("pods", "services") for r in h.writes("create", kind, since=deleted + 2.0)]
    assert late == [], f"{len(late)} creates more than 2 s after the large job was deleted"
    made = len(h.writes("create", "pods")) + len(h.writes("create", "services"))
    assert made < 2000, "the large job was created to the end although it was deleted"


def test_a_new_job_gets_one_status_write_and_no_conflict(h: Harness) -> None:
    """Its pods' events come before the job's own update (here: the MXJob watch lags, re-opened after each event
    with a delay): the reconcile they cause must not PATCH again from the stale cached job (that was a 409 and a
    retry for every new job)."""
    lag = h.apiserver.faults.add(FaultRule(verb="watch", resource="mxjobs", latency=0.5, watch_events=1))
    controller = h.start(threadiness=2)
    names = [f"j{i}" for i in range(4)]
    for name in names:
        h.create_job(mxjob(name, scheduler=1, server=1, worker=2))
    for name in names:
        h.wait_children(NS, name, 4)
        h.wait_condition(NS, name, "Created")
    wait_for(lambda: all(h.reconciles(controller, f"{NS}/{name}") >= 2 for name in names), timeout=DEADLINE,
             what="the reconciles the children's events cause")
    h.apiserver.faults.clear()
    for name in names:
        h.settle(controller, f"{NS}/{name}")
    assert lag.fired > 0
    writes = h.writes("patch", "mxjobs", subresource="status")
    assert [r.code for r in writes] == [200] * len(names), [(r.name, r.code) for r in writes]
    assert sorted(r.name for r in writes) == sorted(names)


def test_a_failed_first_status_write_is_sent_again_at_once_not_after_the_queue(h: Harness) -> None:
    """A 500 on the conditional status PATCH is retried in place (it cannot overwrite anything): under load, a
    failed reconcile would go to the back of a long queue and leave a new job without status for seconds."""
    fault = h.apiserver.faults.add(FaultRule(verb="patch", resource="mxjobs", subresource="status", code=500,
                                             count=1))
    controller = h.start()
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    h.wait_condition(NS, "j", "Created")
    assert fault.fired == 1
    # The 200's audit record is written as the server answers, after the test can see the condition: wait for it.
    codes = wait_for(lambda: c if len(c := [r.code for r in h.writes("patch", "mxjobs", subresource="status")]) >= 2
                     else None, timeout=DEADLINE, what="the status writes audited")
    assert codes == [500, 200]
    h.wait_children(NS, "j", 3)
    failed = [r for r in read_trace(controller.options.trace_path) if r["result"] == "error"]
    assert failed == []
