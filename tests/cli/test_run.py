"""``mxjob-controller run`` as a process against the embedded API server: the start-up CRD check and its messages,
the endpoints, the graceful stop on SIGTERM/SIGINT (exit 0 within 10 s, no thread left), ``--namespace`` scoping
proven from the audit log, and leader election between two processes (only the leader reconciles; a SIGTERM hands
over within 2 s).

A job counts as reconciled once the controller wrote its first status (the ``Created`` condition); the full
lifecycle of a job through separate ``local up`` and ``run`` processes is ``test_e2e_run.py``.
"""

from __future__ import annotations

import ctypes
import platform
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from mxjob_controller import __version__
from mxjob_controller.local.apiserver.http.faults import FaultRule
from tests.gang_support import install, volcano_crd
from tests.kubelet_sim import KubeletSim
from tests.run_process import LOCAL_PORTS, UA_PREFIX, RunProcess, clean_env, install_crds, install_mxjob_crd, mxjob
from tests.support import Kube, wait_for

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MXJOBS = "/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/mxjob-controller"
RECONCILED = "controller_runtime_reconcile_total"

#: The client budget's first request: does the server advertise API Priority and Fairness? (verb, path, resource,
#: name, code; see runtime/client/budget.py)
BUDGET_PROBE = ("get", "/version", "", "", 200)


def create_namespace(kube: Kube, name: str) -> None:
    assert kube.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": name}}).status == 201


def created(kube: Kube, namespace: str, name: str) -> bool:
    """The controller wrote the job's first status: it was reconciled."""
    job = kube.get(MXJOBS.format(ns=namespace) + f"/{name}").body
    return any(c["type"] == "Created" for c in (job.get("status") or {}).get("conditions") or ())


def running(kube: Kube, namespace: str, name: str) -> bool:
    job = kube.get(MXJOBS.format(ns=namespace) + f"/{name}").body
    return any(c["type"] == "Running" and c["status"] == "True"
               for c in (job.get("status") or {}).get("conditions") or ())


def pods_of(kube: Kube, namespace: str) -> list[str]:
    return [p["metadata"]["name"] for p in kube.get(f"/api/v1/namespaces/{namespace}/pods").body["items"]]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_run_serves_endpoints_reconciles_and_stops_cleanly_within_10s(apiserver, kube, kubeconfig, sig):
    install_mxjob_crd(apiserver)
    assert kube.post(MXJOBS.format(ns="default"), mxjob("before")).status == 201
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--threadiness", "2"]) as proc:
        proc.wait_running()
        assert proc.get("/healthz") == (200, "ok")
        wait_for(lambda: proc.get("/readyz") == (200, "ok"), timeout=10, what="/readyz ok")
        status, verbose = proc.get("/readyz?verbose")
        assert status == 200 and "[+]controller ok" in verbose
        assert kube.post(MXJOBS.format(ns="default"), mxjob("after")).status == 201
        wait_for(lambda: created(kube, "default", "before") and created(kube, "default", "after"), timeout=20,
                 what="both jobs reconciled")
        # The status is written before the children (issue 16): the pods follow within the same reconcile.
        wait_for(lambda: sorted(pods_of(kube, "default")) == ["after-worker-0", "before-worker-0"], timeout=20,
                 what="both jobs' pods")
        # A reconcile is counted when it returns, after the children it created.
        wait_for(lambda: (proc.metric(RECONCILED, controller="mxjob-controller", result="success") or 0) >= 2,
                 timeout=10, what="two reconciles counted")
        assert proc.metric(RECONCILED, controller="mxjob-controller", result="success") >= 2
        wait_for(lambda: proc.metric("training_operator_jobs_created_total", job_namespace="default",
                                     framework="mxnet") == 2, timeout=10, what="two jobs counted")
        assert proc.metric("controller_runtime_max_concurrent_reconciles", controller="mxjob-controller") == 2
        assert proc.metric("process_start_time_seconds") is not None
        _status, text = proc.get("/metrics")
        assert not [line for line in text.splitlines() if line.split("{")[0].split(" ")[0].endswith("_created")], \
            "no *_created series (Go operators expose none)"
        code, seconds = proc.stop(sig)
    assert code == 0, proc.output()
    assert seconds < 10, f"took {seconds:.1f}s to stop"
    messages = [r["msg"] for r in proc.records()]
    assert "stopped cleanly" in messages
    assert not [m for m in messages if m.startswith("threads still running")], proc.output()


@pytest.mark.parametrize("started_by", ["a-shell", "a-shell-that-ignores-sigquit"])
def test_sigquit_prints_every_threads_stack_and_exits_as_a_go_controller_does(apiserver, kube, kubeconfig,
                                                                            started_by):
    """What an operator (or a test whose controller will not stop) needs of a process that hangs: where each thread
    is. A background job of a non-interactive shell starts with SIGQUIT ignored; Go's runtime dumps and exits anyway,
    and so does ``run``."""
    install_mxjob_crd(apiserver)
    trap = "trap '' QUIT; " if started_by.endswith("ignores-sigquit") else ""
    command = shlex.join([sys.executable, "-m", "mxjob_controller", "run", "--kubeconfig", str(kubeconfig),
                          *LOCAL_PORTS])
    with RunProcess([], argv=["/bin/sh", "-c", f"{trap}exec {command}"]) as proc:
        proc.wait_running()
        proc.proc.send_signal(signal.SIGQUIT)
        try:
            code = proc.wait_exit(30)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running 30 s after SIGQUIT:\n{proc.output()[-5000:]}") from None
        assert code == -signal.SIGQUIT, proc.output()[-5000:]
    out = proc.output()
    # the main thread waiting in the manager, and the controller's own threads (workers, informers) beside it
    assert "Current thread" in out and "mxjob_controller/manager/process.py" in out, out[-3000:]
    assert out.count("mxjob_controller/runtime/") >= 3, out[-3000:]


def test_a_missing_crd_exits_1_saying_how_to_install_it(apiserver, kubeconfig):
    proc = RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS]).start()
    try:
        assert proc.wait_exit(30) == 1
    finally:
        proc.kill()
    errors = [r for r in proc.records() if r["level"] == "error"]
    assert len(errors) == 1, proc.output()
    assert "the MXJob CRD (mxjobs.kubeflow.org) is not installed" in errors[0]["msg"]
    assert "kubectl apply -k manifests/crd" in errors[0]["msg"]
    assert "Traceback" not in proc.output()
    # It asked for exactly that one object, and nothing else was attempted.
    requests = apiserver.audit.records(user_agent=UA_PREFIX)
    assert [(r.verb, r.path, r.resource, r.name, r.code) for r in requests] == [
        BUDGET_PROBE, ("get", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mxjobs.kubeflow.org",
                       "customresourcedefinitions", "mxjobs.kubeflow.org", 404)]


def test_without_the_optional_crds_only_mxjobs_are_reconciled_with_a_warning_for_each(apiserver, kube, kubeconfig):
    install_mxjob_crd(apiserver)
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS]) as proc:
        proc.wait_running()
        assert kube.post(MXJOBS.format(ns="default"), mxjob("alone")).status == 201
        wait_for(lambda: created(kube, "default", "alone"), timeout=20, what="the MXJob reconciled")
        for controller in ("tfjob-controller", "genericjob-controller"):
            assert proc.metric(RECONCILED, controller=controller, result="success") is None, f"no {controller}"
        assert proc.stop()[0] == 0
    warnings = [r["msg"] for r in proc.records() if r["level"] == "warning"]
    assert warnings == [f"not reconciling {kind}s: the {kind} CRD ({crd}) is not installed: install it "
                        "with `kubectl apply -k manifests/crd` from this project's source tree or release archive "
                        f"(v{__version__}), or install everything with `kubectl apply -k manifests/install` (with "
                        f"--frameworks {name} it would be an error)"
                        for kind, crd, name in (("TFJob", "tfjobs.kubeflow.org", "tensorflow"),
                                                ("GenericJob", "genericjobs.batch.tensorstack.dev", "generic"))], \
        proc.output()
    assert not [r for r in apiserver.audit.records(user_agent=UA_PREFIX) if r.resource in ("tfjobs", "genericjobs")]


def test_a_transient_error_checking_the_tfjob_crd_is_an_error_not_a_silent_skip(apiserver, kubeconfig):
    """Only a CRD that is not there for us lets the optional TFJob controller be left out; a 5xx while checking
    might pass, and skipping on it would turn TFJobs off for the process's life."""
    install_crds(apiserver)
    apiserver.faults.add(FaultRule(verb="get", resource="customresourcedefinitions", name="tfjobs.kubeflow.org",
                                   code=500))
    proc = RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS]).start()
    try:
        assert proc.wait_exit(60) == 1
    finally:
        proc.kill()
    errors = [r["msg"] for r in proc.records() if r["level"] == "error"]
    assert len(errors) == 1 and "checking customresourcedefinitions/tfjobs.kubeflow.org failed" in errors[0], \
        proc.output()
    assert not [r for r in proc.records() if r["level"] == "warning" and "not reconciling" in r["msg"]]


def test_a_framework_asked_for_needs_its_crd(apiserver, kubeconfig):
    install_mxjob_crd(apiserver)
    proc = RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--frameworks", "tensorflow"]).start()
    try:
        assert proc.wait_exit(30) == 1
    finally:
        proc.kill()
    errors = [r for r in proc.records() if r["level"] == "error"]
    assert len(errors) == 1 and "the TFJob CRD (tfjobs.kubeflow.org) is not installed" in errors[0]["msg"]
    requests = apiserver.audit.records(user_agent=UA_PREFIX)
    assert [(r.verb, r.resource, r.name, r.code) for r in requests] == [
        BUDGET_PROBE[:1] + BUDGET_PROBE[2:], ("get", "customresourcedefinitions", "tfjobs.kubeflow.org", 404)], \
        "the MXJob CRD is not asked for"


def test_with_both_crds_both_kinds_are_reconciled_and_counted_apart(apiserver, kube, kubeconfig):
    install_crds(apiserver)
    tfjob = yaml.safe_load((ROOT / "examples" / "tensorflow" / "tfjob-dist.yaml").read_text())
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS]) as proc:
        proc.wait_running()
        assert kube.post(MXJOBS.format(ns="default"), mxjob("mx")).status == 201
        assert kube.post("/apis/kubeflow.org/v1/namespaces/default/tfjobs", tfjob).status == 201
        wait_for(lambda: created(kube, "default", "mx") and any(
            c["type"] == "Created" for c in (kube.get("/apis/kubeflow.org/v1/namespaces/default/tfjobs/tf-dist")
                                             .body.get("status") or {}).get("conditions") or ()),
            timeout=20, what="both jobs reconciled")
        for framework in ("mxnet", "tensorflow"):
            wait_for(lambda f=framework: proc.metric("training_operator_jobs_created_total", job_namespace="default",
                                                     framework=f) == 1, timeout=10, what=f"{framework} counted")
        for controller in ("mxjob-controller", "tfjob-controller"):
            wait_for(lambda c=controller: (proc.metric(RECONCILED, controller=c, result="success") or 0) >= 1,
                     timeout=10, what=f"a successful reconcile counted for {controller} (once it has returned)")
            assert proc.metric("workqueue_adds_total", name=controller, controller=controller) >= 1
        assert proc.stop()[0] == 0
    assert [r["msg"] for r in proc.records() if r["level"] == "warning"] == []


def test_gang_scheduling_without_the_podgroup_crd_exits_1_naming_it(apiserver, kubeconfig):
    install_mxjob_crd(apiserver)
    proc = RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--gang-scheduler-name", "volcano"]).start()
    try:
        assert proc.wait_exit(30) == 1
    finally:
        proc.kill()
    errors = [r for r in proc.records() if r["level"] == "error"]
    assert len(errors) == 1, proc.output()
    assert "podgroups.scheduling.volcano.sh" in errors[0]["msg"]
    assert "Traceback" not in proc.output()


def test_gang_scheduling_with_volcano_creates_a_podgroup(apiserver, kube, kubeconfig):
    install_mxjob_crd(apiserver)
    install(kube, volcano_crd())
    assert kube.post(MXJOBS.format(ns="default"), mxjob("gang")).status == 201
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--enable-gang-scheduling"]) as proc:
        proc.wait_running()
        path = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups/gang"
        wait_for(lambda: kube.get(path).status == 200, timeout=20, what="the job's PodGroup")
        group = kube.get(path).body
        assert group["spec"]["minMember"] == 1  # the single-worker example: every replica
        assert group["metadata"]["ownerReferences"][0]["kind"] == "MXJob"
        assert pods_of(kube, "default") == []  # Volcano has not admitted the gang yet


def test_a_forbidden_crd_check_says_rbac_is_missing(apiserver, kubeconfig):
    install_mxjob_crd(apiserver)
    apiserver.faults.add(FaultRule(verb="get", resource="customresourcedefinitions", code=403,
                                   message='customresourcedefinitions.apiextensions.k8s.io "mxjobs.kubeflow.org" is '
                                           'forbidden: User "system:serviceaccount:kubeflow:mxjob-controller" '
                                           'cannot get resource "customresourcedefinitions"'))
    proc = RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS]).start()
    try:
        assert proc.wait_exit(30) == 1
    finally:
        proc.kill()
    error = next(r for r in proc.records() if r["level"] == "error")
    assert error["msg"].startswith("cannot start: RBAC is missing")
    assert "manifests/rbac" in error["msg"]


def test_an_unreachable_api_server_exits_1(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]   # closed again: nothing listens there
    proc = RunProcess(["--master", f"http://127.0.0.1:{port}", *LOCAL_PORTS]).start()
    try:
        assert proc.wait_exit(60) == 1
    finally:
        proc.kill()
    error = next(r for r in proc.records() if r["level"] == "error")
    assert error["msg"].startswith(f"cannot start: cannot reach the API server at http://127.0.0.1:{port}")


def test_a_busy_port_exits_1_naming_the_flags(apiserver, kubeconfig):
    install_mxjob_crd(apiserver)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = RunProcess(["--kubeconfig", str(kubeconfig), "--metrics-bind-address", f"127.0.0.1:{port}",
                           "--health-probe-bind-address", "127.0.0.1:0"]).start()
        try:
            assert proc.wait_exit(30) == 1
        finally:
            proc.kill()
    error = next(r for r in proc.records() if r["level"] == "error")
    assert "--metrics-bind-address" in error["msg"] and "ddress already in use" in error["msg"]


def test_namespace_flag_lists_and_watches_only_those_namespaces(apiserver, kube, kubeconfig):
    install_mxjob_crd(apiserver)
    for ns in ("a", "b", "c"):
        create_namespace(kube, ns)
        assert kube.post(MXJOBS.format(ns=ns), mxjob(f"job-{ns}", ns)).status == 201
    started = time.time()
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--namespace", "a",
                     "--namespace", "c"]) as proc:
        proc.wait_running()
        assert kube.post(MXJOBS.format(ns="b"), mxjob("late-b", "b")).status == 201
        assert kube.post(MXJOBS.format(ns="a"), mxjob("late-a", "a")).status == 201
        wait_for(lambda: created(kube, "a", "late-a") and created(kube, "a", "job-a") and created(kube, "c", "job-c"),
                 timeout=20, what="the jobs of a and c reconciled")
        assert proc.stop()[0] == 0
    assert created(kube, "a", "job-a") and not created(kube, "b", "job-b") and not created(kube, "b", "late-b")
    assert pods_of(kube, "b") == [] and sorted(pods_of(kube, "a")) == ["job-a-worker-0", "late-a-worker-0"]
    ours = apiserver.audit.records(user_agent=UA_PREFIX, since=started - 1)
    assert not [r for r in ours if r.namespace == "b"], "nothing in b: not read, not written"
    reads = [r for r in ours if r.verb in ("list", "watch")]
    assert {(r.resource, r.namespace) for r in reads} == {(res, ns) for res in ("mxjobs", "pods", "services")
                                                          for ns in ("a", "c")}
    cluster_scoped = [(r.verb, r.resource, r.name, r.code) for r in ours if not r.namespace]
    # The budget's probe: once, its answer shared by the main client and the informers' (each keeps its own bucket).
    assert [r.path for r in ours if r.path == "/version"] == ["/version"]
    cluster_scoped = [c for c in cluster_scoped if c != BUDGET_PROBE[:1] + BUDGET_PROBE[2:]]
    assert cluster_scoped == [("get", "customresourcedefinitions", "mxjobs.kubeflow.org", 200),
                              ("get", "customresourcedefinitions", "tfjobs.kubeflow.org", 404),
                              ("get", "customresourcedefinitions", "genericjobs.batch.tensorstack.dev", 404)]


def test_the_lease_namespace_comes_from_pod_namespace(apiserver, kube, kubeconfig):
    install_mxjob_crd(apiserver)
    create_namespace(kube, "operators")
    env = clean_env(POD_NAMESPACE="operators")
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--leader-elect"], env=env) as proc:
        proc.wait_running()
        lease = kube.get(LEASE.format(ns="operators"))
        assert lease.status == 200 and lease.body["spec"]["holderIdentity"]
        assert proc.stop()[0] == 0
    assert kube.get(LEASE.format(ns="operators")).body["spec"].get("holderIdentity", "") == "", "released on stop"


def test_two_processes_only_the_leader_reconciles_and_sigterm_hands_over_within_2s(apiserver, kube, kubeconfig):
    install_mxjob_crd(apiserver)
    create_namespace(kube, "kubeflow")
    args = ["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--leader-elect", "--leader-election-namespace",
            "kubeflow"]
    created_total = "training_operator_jobs_created_total"
    lease_path = LEASE.format(ns="kubeflow")

    def holder() -> str:
        reply = kube.get(lease_path)
        return reply.body["spec"].get("holderIdentity", "") if reply.status == 200 else ""

    first, second = RunProcess(args).start(), RunProcess(args)
    try:
        first.wait_running()
        first_id = wait_for(holder, timeout=10, what="a lease holder")
        second.start()
        second.wait_log(lambda r: "attempting to acquire the lease" in r.get("msg", ""), what="second campaigning")
        assert first.metric("leader_election_master_status", name="mxjob-controller") == 1
        assert second.metric("leader_election_master_status", name="mxjob-controller") == 0
        assert second.get("/readyz") == (200, "ok"), "a standby is ready"
        assert kube.post(MXJOBS.format(ns="default"), mxjob("j1")).status == 201
        wait_for(lambda: created(kube, "default", "j1"), timeout=20, what="the leader reconciling")
        # The job is counted after the status write that recorded Created.
        wait_for(lambda: first.metric(created_total, job_namespace="default"), timeout=20, what="j1 counted")
        assert first.metric(created_total, job_namespace="default") == 1
        # The standby built no controller at all: no reconcile, no work queue, no job counted.
        assert second.metric(RECONCILED, result="success") is None and second.metric(created_total) is None
        assert second.metric("workqueue_adds_total") is None
        assert holder() == first_id

        sent = time.monotonic()
        first.proc.send_signal(signal.SIGTERM)
        second_id = wait_for(lambda: (h := holder()) and h != first_id and h, timeout=10, what="a new holder")
        handover = time.monotonic() - sent
        assert first.wait_exit(15) == 0, first.output()
        second.wait_running()
        KubeletSim(kube).run("default", "j1-worker-0")
        wait_for(lambda: running(kube, "default", "j1"), timeout=20, what="the new leader writing Running")
        assert second.metric("leader_election_master_status", name="mxjob-controller") == 1
        # A reconcile is counted when it returns, after the status write it made.
        wait_for(lambda: second.metric(RECONCILED, result="success"), timeout=20, what="a reconcile counted")
        assert second.metric(RECONCILED, result="success") >= 1
        assert not second.metric(created_total, job_namespace="default"), "a new leader does not count j1 again"
        assert handover < 2.0, f"handover took {handover:.2f}s"
        assert second_id in " ".join(r["msg"] for r in second.records() if "acquired the lease" in r.get("msg", ""))
        assert second.stop()[0] == 0
    finally:
        first.kill()
        second.kill()


def test_losing_the_lease_stops_reconciling_and_exits_1(apiserver, kube, kubeconfig):
    """Renewals fail (the API server answers 500 to the Lease): after the renew deadline (10 s) the process stops
    taking work, gives in-flight reconciles LOST_DRAIN seconds, and exits 1 without releasing (it cannot)."""
    install_mxjob_crd(apiserver)
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS, "--leader-elect",
                     "--leader-election-namespace", "default"]) as proc:
        proc.wait_running()
        broken = time.monotonic()
        apiserver.faults.add(FaultRule(verb=("get", "update"), resource="leases", code=500))
        assert proc.wait_exit(30) == 1
        seconds = time.monotonic() - broken
    assert 8 < seconds < 16, f"exited {seconds:.1f}s after renewals began to fail"
    messages = [r["msg"] for r in proc.records()]
    assert "controller stopping: no new reconciles; in-flight ones get 2.0s" in messages
    assert any(m.startswith("exiting: lost the leader-election Lease") for m in messages), proc.output()


_TGKILL = {"x86_64": 234, "aarch64": 131}   # the syscall's number: a signal to one thread of another process


@pytest.mark.skipif(platform.machine() not in _TGKILL, reason="tgkill's number unknown here")
def test_a_sigterm_the_kernel_gives_another_thread_still_stops_run_at_once(apiserver, kubeconfig):
    """A process's signal goes to whichever of its threads the kernel picks; the handler runs on the main thread
    only once that thread runs again. Sent here to a thread other than the main one (``tgkill``), as the kernel
    may send a SIGTERM: the stop still begins within a second, not after the main thread's idle wait (30 s)."""
    install_mxjob_crd(apiserver)
    libc = ctypes.CDLL(None, use_errno=True)
    with RunProcess(["--kubeconfig", str(kubeconfig), *LOCAL_PORTS]) as proc:
        proc.wait_running()
        pid = proc.proc.pid
        other = next(int(t.name) for t in sorted(Path(f"/proc/{pid}/task").iterdir(), key=lambda p: int(p.name))
                     if int(t.name) != pid)
        started = time.monotonic()
        assert libc.syscall(_TGKILL[platform.machine()], pid, other, signal.SIGTERM) == 0, ctypes.get_errno()
        assert proc.wait_exit(15) == 0
        assert time.monotonic() - started < 5, proc.output()[-2000:]
    assert any(r["msg"] == "received SIGTERM: stopping" for r in proc.records())
