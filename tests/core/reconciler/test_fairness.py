"""Issue 16's controller defects, end to end against the embedded API server: a job's size is bounded, a large job is
created in slices while small jobs get their turn, deleting it stops its creates at once (issue 48: those waiting in
the client for a token or a retry too), and a new job gets one status write (no 409 from a stale cache)."""

from __future__ import annotations

import time
from typing import Any

import yaml

from mxjob_controller.core.framework import MAX_REPLICAS_PER_JOB, MAX_REPLICAS_PER_TYPE
from mxjob_controller.core.job_controller import JobController
from mxjob_controller.local.apiserver.http.faults import FaultRule
from mxjob_controller.runtime.expectations import pods_key, services_key
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
    within 5 s, and once the large job is deleted its creates stop within 1 s (issue 48: 15 or 16 creates came 0.7-0.8 s
    after the delete while they waited for their tokens; none more than 0.15 s after it since they are cancelled)."""
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
    late = [r for kind in ("pods", "services") for r in h.writes("create", kind, since=deleted + 1.0)]
    assert late == [], f"{len(late)} creates more than 1 s after the large job was deleted"
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


def _creates(h: Harness, since: float | None = None) -> list[Any]:
    return [r for kind in ("pods", "services") for r in h.writes("create", kind, since=since)]


def _pending_creates(controller: JobController, key: str, types: tuple[str, ...]) -> int:
    """Creations the job's expectations still wait for, pods and services of every type."""
    pending = [controller.expectations.pending(k(key, t)) for k in (pods_key, services_key) for t in types]
    return sum(p[0] for p in pending if p is not None)


def test_creates_waiting_for_their_tokens_are_not_sent_once_the_job_has_a_deletion_timestamp(h: Harness) -> None:
    """Issue 48: a create that passed its pass's checks may still wait in the client for a token; once its job is
    being deleted it must not go out. A burst of 20 and a token every 20 s: the status write and 19 creates go at
    once, three more of the same slow-start batch wait 20, 40 and 60 s for theirs. The job is deleted (a finalizer
    keeps it, with its deletionTimestamp): the job informer's handler cancels the pass, the three waits end, nothing
    more is sent, the pass ends at once and the expectations the three raised are lowered again (a later pass is not
    held up waiting for creations that never happen)."""
    controller = h.start(qps=0.05, burst=20)
    key, types = f"{NS}/held", ("Scheduler", "Server", "Worker")
    body = mxjob("held", scheduler=1, server=1, worker=18)
    body["metadata"]["finalizers"] = ["test.kubeflow.org/hold"]
    h.create_job(body)
    # 19 creates sent and seen by the informer; exactly the three of the batch waiting for a token still expected.
    wait_for(lambda: len(_creates(h)) == 19 and _pending_creates(controller, key, types) == 3, timeout=DEADLINE,
             what="19 creates sent and 3 waiting for their tokens")
    finished = h.reconciles(controller, key)   # the pass is still under way: its batch waits
    deleted = time.time()
    assert h.kube.delete(jobs_path(NS, "held")).ok
    wait_for(lambda: h.reconciles(controller, key) > finished, timeout=DEADLINE,
             what="the pass over the deleted job ended")
    wait_for(lambda: controller.expectations.job_satisfied(key), timeout=DEADLINE,
             what="the cancelled creates' expectations lowered")
    assert _creates(h, since=deleted) == [], "a create waiting for its token went out after the deletion"
    assert len(_creates(h)) == 19
    assert h.job(NS, "held")["metadata"].get("deletionTimestamp")
    h.patch_job(NS, "held", {"metadata": {"finalizers": None}})
    wait_for(lambda: h.kube.get(jobs_path(NS, "held")).status == 404, timeout=DEADLINE, what="the job gone")


def test_a_create_waiting_out_a_429s_retry_after_is_not_sent_again_once_the_job_is_deleted(h: Harness) -> None:
    """Issue 48: the server turns the first pod create away with 429 and Retry-After: 30; the client would send it
    again 30-36 s later. The job is deleted meanwhile: the job informer's DELETE cancels the pass, the retry's wait
    ends, nothing is sent again, and the pass ends at once."""
    rule = h.apiserver.faults.add(FaultRule(verb="create", resource="pods", code=429, retry_after=30, count=1))
    controller = h.start()
    key = f"{NS}/j"
    h.create_job(mxjob("j", scheduler=1, server=1, worker=1))
    wait_for(lambda: [r.code for r in h.writes("create", "pods")] == [429], timeout=DEADLINE,
             what="the first pod create turned away")
    assert rule.fired == 1
    finished = h.reconciles(controller, key)   # the pass is still under way: its batch waits for the retry
    deleted = time.time()
    assert h.kube.delete(jobs_path(NS, "j")).ok
    wait_for(lambda: h.reconciles(controller, key) > finished, timeout=DEADLINE,
             what="the pass over the deleted job ended")
    assert _creates(h, since=deleted) == [], "the retry of a create went out after the deletion"
    assert [r.code for r in h.writes("create", "pods")] == [429]
