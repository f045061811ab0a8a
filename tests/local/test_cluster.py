"""The whole local cluster: MXJobs and TFJobs run through the real controllers and the local kubelet, jobs side by
side get scheduler ports of their own, replicas of one type share their port on loopback addresses of their own (and
collide without them), deleting a job kills its processes, and ``local up`` leaves no process behind when it
stops."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from mxjob_controller.local.apiserver.server import ServerOptions
from mxjob_controller.local.cluster import ClusterOptions, LocalCluster
from mxjob_controller.local.job_ports import ANNOTATION
from mxjob_controller.local.kubelet import kubelet as kubelet_module
from mxjob_controller.local.kubelet.addresses import PodAddresses
from mxjob_controller.local.kubelet.options import KubeletOptions
from tests.local_support import group_alive, group_of, local_cluster, script_pod
from tests.run_process import clean_env
from tests.support import Kube, Kubectl, wait_for

pytestmark = pytest.mark.slow

# A DMLC-style rendezvous without MXNet: the scheduler listens on DMLC_PS_ROOT_PORT (on every address, as ps-lite
# does) until every server and worker has said hello through DMLC_PS_ROOT_URI; everyone exits 0 once it has.
RENDEZVOUS = """
import os, socket, sys, time
role, root, port = os.environ["DMLC_ROLE"], os.environ["DMLC_PS_ROOT_URI"], int(os.environ["DMLC_PS_ROOT_PORT"])
if role == "scheduler":
    expected = int(os.environ["DMLC_NUM_SERVER"]) + int(os.environ["DMLC_NUM_WORKER"])
    listener = socket.create_server(("", port))
    for _ in range(expected):
        conn, _addr = listener.accept()
        print("hello from", conn.recv(100).decode(), flush=True)
        conn.sendall(b"ok")
        conn.close()
    sys.exit(0)
deadline = time.time() + 60
while True:
    try:
        with socket.create_connection((root, port), timeout=5) as conn:
            conn.sendall(f"{role} {os.environ.get('DMLC_WORKER_ID', '')}".encode())
            sys.exit(0 if conn.recv(2) == b"ok" else 1)
    except OSError:
        if time.time() > deadline:
            raise
        time.sleep(0.1)
"""

SLEEPER = ("import subprocess, sys, time\n"
           "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
           "print('up', flush=True)\ntime.sleep(300)\n")


def mxjob(name: str, script: str, *, workers: int = 2, servers: int = 1, port: int | None = None) -> dict[str, Any]:
    def replica(count: int) -> dict[str, Any]:
        container: dict[str, Any] = {"name": "mxnet", "image": "mxnet/python:1.9.1",
                                     "command": ["python", "-c", script]}
        if port is not None:
            container["ports"] = [{"name": "mxjob-port", "containerPort": port}]
        return {"replicas": count, "restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"jobMode": "MXTrain", "runPolicy": {"cleanPodPolicy": "None"},
                     "mxReplicaSpecs": {"Scheduler": replica(1), "Server": replica(servers),
                                        "Worker": replica(workers)}}}


def job_path(name: str) -> str:
    return f"/apis/kubeflow.org/v1/namespaces/default/mxjobs/{name}"


def condition(kube: Kube, name: str, ctype: str) -> bool:
    status = kube.get(job_path(name)).body.get("status") or {}
    return any(c["type"] == ctype and c["status"] == "True" for c in status.get("conditions") or [])


def job_pods(kube: Kube, name: str) -> list[dict[str, Any]]:
    return kube.get("/api/v1/namespaces/default/pods",
                    labelSelector=f"training.kubeflow.org/job-name={name}").body["items"]


def all_running(kube: Kube, name: str, count: int) -> list[dict[str, Any]] | None:
    pods = job_pods(kube, name)
    return pods if len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods) else None


def test_a_job_created_as_soon_as_the_api_takes_writes_runs_once_the_rest_has_started(tmp_path):
    """Issue 48: ``api_ready`` is called while the kubelet (made, not started), scheduler and controllers still
    start on threads of their own (``local run`` sends its dry runs there). A job created then is stored with its
    scheduler ports, and runs to its end."""
    tmp_path.chmod(0o777)
    seen: dict[str, Any] = {}

    def submit(kubelet: Any) -> None:
        seen["kubelet made"] = kubelet is not None
        early = Kube.of(cluster.server)
        try:
            seen["created"] = early.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs",
                                         mxjob("early", RENDEZVOUS, workers=1))
        finally:
            early.close()

    cluster = LocalCluster(ClusterOptions(server=ServerOptions(bookmark_interval=0.2), threadiness=2,
                                          job_ports=(21000, 21999),
                                          kubelet_options=KubeletOptions(workdir=str(tmp_path), stop_grace=1.0)))
    cluster.start(api_ready=submit)
    try:
        assert seen["kubelet made"] and seen["created"].ok, seen
        assert ANNOTATION in seen["created"].body["metadata"]["annotations"]
        kube = Kube.of(cluster.server)
        wait_for(lambda: condition(kube, "early", "Succeeded") or condition(kube, "early", "Failed"), timeout=90,
                 what="the early job finished")
        assert condition(kube, "early", "Succeeded")
        kube.close()
    finally:
        assert cluster.stop(20.0), "the local cluster did not stop cleanly"


def test_jobs_side_by_side_each_get_their_own_scheduler_port(tmp_path):
    with local_cluster(tmp_path, controller=True, job_ports=(21000, 21999)) as (_cluster, kube, kubectl):
        for name in ("first", "second"):
            assert kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", mxjob(name, RENDEZVOUS)).ok
        explicit = mxjob("explicit", RENDEZVOUS, workers=1, port=22345)
        assert kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", explicit).ok
        for name in ("first", "second", "explicit"):
            wait_for(lambda n=name: condition(kube, n, "Succeeded") or condition(kube, n, "Failed"), timeout=90,
                     what=f"job {name} finished")
            assert condition(kube, name, "Succeeded"), kubectl.run("describe", "mxjob", name).stdout
        ports = {}
        for name in ("first", "second"):
            job = kube.get(job_path(name)).body
            assigned = dict(item.split("=") for item in job["metadata"]["annotations"][ANNOTATION].split(","))
            assert set(assigned) == {"Scheduler", "Server", "Worker"}
            ports[name] = int(assigned["Scheduler"])
            container = job["spec"]["mxReplicaSpecs"]["Scheduler"]["template"]["spec"]["containers"][0]
            assert {"name": "mxjob-port", "containerPort": ports[name]} in [
                {k: p[k] for k in ("name", "containerPort")} for p in container["ports"]]
            hello = kubectl.ok("logs", f"{name}-scheduler-0")
            assert sorted(hello.split("\n")[:-1]) == ["hello from server ", "hello from worker 0",
                                                      "hello from worker 1"]
        assert ports["first"] != ports["second"] and all(21000 <= p <= 21999 for p in ports.values())
        explicit_job = kube.get(job_path("explicit")).body
        assert ANNOTATION not in (explicit_job["metadata"].get("annotations") or {})
        assert "DMLC_PS_ROOT_PORT" in kubectl.ok("get", "pod", "explicit-worker-0", "-o", "json")
        env = kubectl.json("get", "pod", "explicit-worker-0")["spec"]["containers"][0]["env"]
        assert {"name": "DMLC_PS_ROOT_PORT", "value": "22345"} in env


def test_a_busy_port_is_skipped_and_an_exhausted_range_is_the_jobs_event_not_a_503(tmp_path):
    """Issue 44: one pod bound the whole ``--job-ports`` range and every new MXJob failed with 503. A port something
    holds is skipped; with none left, the job is created all the same, keeping 9091, and says why in an event."""
    with local_cluster(tmp_path, job_ports=(24200, 24204)) as (_cluster, kube, kubectl):
        squatter = script_pod("squatter", "import socket, time\nheld = []\nfor port in (24200, 24201):\n"
                                          "    s = socket.socket()\n    s.bind(('', port))\n    s.listen()\n"
                                          "    held.append(s)\nprint('bound', flush=True)\ntime.sleep(300)\n")
        assert kube.post("/api/v1/namespaces/default/pods", squatter).ok
        wait_for(lambda: kubectl.run("logs", "squatter").stdout == "bound\n", timeout=30, what="the ports held")
        assert kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", mxjob("first", RENDEZVOUS)).ok
        assigned = kube.get(job_path("first")).body["metadata"]["annotations"][ANNOTATION]
        ports = sorted(int(item.split("=")[1]) for item in assigned.split(","))
        assert ports == [24202, 24203, 24204], "the two ports the pod holds were skipped"
        for name in ("second", "third"):   # the range is used up: created, each told why
            reply = kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", mxjob(name, RENDEZVOUS))
            assert reply.status == 201, reply.body
            assert ANNOTATION not in (kube.get(job_path(name)).body["metadata"].get("annotations") or {})

            def warned(job: str = name) -> str:
                items = kube.get("/api/v1/namespaces/default/events",
                                 fieldSelector=f"involvedObject.name={job}").body["items"]
                return next((e["message"] for e in items if e["reason"] == "JobPortsExhausted"), "")
            message = wait_for(warned, timeout=30, what=f"job {name}'s JobPortsExhausted event")
            assert message.startswith("no free port for this job's scheduler in the local cluster's range "
                                      "24200-24204"), message
            assert "it keeps mxjob-port 9091" in message
        assert kube.post("/api/v1/namespaces/default/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "still-served"}}).status == 201


def test_an_apply_of_the_original_manifest_keeps_the_ports_the_job_was_given(tmp_path):
    """A client-side ``kubectl apply`` replaces the containers' ports with the manifest's (none): each type gets
    back the port it was given, so a scaled-up job's new pods still find its scheduler; a type whose own port the
    update drops gets one from the range."""
    job = mxjob("kept", SLEEPER, workers=1)
    server = job["spec"]["mxReplicaSpecs"]["Server"]["template"]["spec"]["containers"][0]
    server["ports"] = [{"name": "mxjob-port", "containerPort": 24500}]
    with local_cluster(tmp_path, job_ports=(24000, 24099)) as (_cluster, kube, kubectl):
        kubectl.ok("apply", "-f", "-", input=json.dumps(job))
        given = kube.get(job_path("kept")).body["metadata"]["annotations"][ANNOTATION]
        job["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = 3
        del server["ports"]
        assert kubectl.ok("apply", "-f", "-", input=json.dumps(job)) == "mxjob.kubeflow.org/kept configured\n"
        stored = kube.get(job_path("kept")).body
        assigned = dict(item.split("=") for item in stored["metadata"]["annotations"][ANNOTATION].split(","))
        assert f"Scheduler={assigned['Scheduler']},Worker={assigned['Worker']}" == given
        assert len({assigned["Scheduler"], assigned["Worker"], assigned["Server"]}) == 3
        assert 24000 <= int(assigned["Server"]) <= 24099
        for rtype, port in assigned.items():
            container = stored["spec"]["mxReplicaSpecs"][rtype]["template"]["spec"]["containers"][0]
            assert [p["containerPort"] for p in container["ports"] if p["name"] == "mxjob-port"] == [int(port)]
        assert stored["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] == 3
        # The same manifest again: the patch still drops the ports, the port admission puts them back before the
        # strategy compares the specs, so nothing is written (no new generation, no new version).
        kubectl.ok("apply", "-f", "-", input=json.dumps(job))
        again = kube.get(job_path("kept")).body["metadata"]
        assert (again["generation"], again["resourceVersion"]) == (stored["metadata"]["generation"],
                                                                   stored["metadata"]["resourceVersion"])


def test_a_port_the_user_takes_over_is_no_longer_kept_for_the_job(tmp_path):
    """Once the user names a type's port, the annotation forgets the one the cluster gave; a port another job has
    declared since is never handed back."""
    with local_cluster(tmp_path, job_ports=(24100, 24199)) as (_cluster, kube, kubectl):
        a = mxjob("a", SLEEPER, workers=1)
        kubectl.ok("apply", "-f", "-", input=json.dumps(a))
        given = int(assigned_of(kube, "a")["Scheduler"])
        scheduler = a["spec"]["mxReplicaSpecs"]["Scheduler"]["template"]["spec"]["containers"][0]
        scheduler["ports"] = [{"name": "mxjob-port", "containerPort": 24300}]   # outside the range: never given
        kubectl.ok("apply", "-f", "-", input=json.dumps(a))
        assert "Scheduler" not in assigned_of(kube, "a")
        b = mxjob("b", SLEEPER, workers=1, port=given)   # another job declares the port A was given
        assert kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", b).ok
        del scheduler["ports"]
        kubectl.ok("apply", "-f", "-", input=json.dumps(a))
        now = int(assigned_of(kube, "a")["Scheduler"])
        assert now != given and 24100 <= now <= 24199


def assigned_of(kube: Kube, name: str) -> dict[str, str]:
    text = (kube.get(job_path(name)).body["metadata"].get("annotations") or {}).get(ANNOTATION) or ""
    return dict(item.split("=") for item in text.split(",") if item)


ROOT = Path(__file__).resolve().parents[2]


def test_two_real_mxnet_jobs_at_once_both_succeed(tmp_path):
    """Real ps-lite on one machine: 1 scheduler, 1 server, 2 workers (dist_sync) per job, two jobs side by side."""
    example = yaml.safe_load((ROOT / "examples" / "mxnet-digits" / "mxjob.yaml").read_text())
    with local_cluster(tmp_path, controller=True, job_ports=(23000, 23999), workdir=ROOT) as (_c, kube, kubectl):
        for name in ("digits-a", "digits-b"):
            job = json.loads(json.dumps(example))
            job["metadata"]["name"] = name
            worker = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
            worker["env"] = [{"name": "EPOCHS", "value": "3"}, {"name": "MIN_ACCURACY", "value": "0.8"}]
            assert kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", job).ok
        for name in ("digits-a", "digits-b"):
            wait_for(lambda n=name: condition(kube, n, "Succeeded") or condition(kube, n, "Failed"), timeout=180,
                     what=f"job {name} finished")
            assert condition(kube, name, "Succeeded"), kubectl.run("logs", f"{name}-worker-0").stdout
            assert "epoch 3 test-accuracy" in kubectl.ok("logs", f"{name}-worker-1")
            counts = kube.get(job_path(name)).body["status"]["replicaStatuses"]
            assert counts == {"Scheduler": {"succeeded": 1}, "Server": {"succeeded": 1}, "Worker": {"succeeded": 2}}


TF_CHECK = ROOT / "examples" / "tf-config-check" / "tfjob.yaml"


def tfjob_outcome(kube: Kube, name: str) -> str:
    status = kube.get(f"/apis/kubeflow.org/v1/namespaces/default/tfjobs/{name}").body.get("status") or {}
    return next((c["type"] for c in status.get("conditions") or () if c["type"] in ("Succeeded", "Failed")
                 and c["status"] == "True"), "")


@pytest.mark.parametrize("own_addresses", [True, False], ids=["own-addresses", "all-on-127.0.0.1"])
def test_replicas_of_one_type_share_their_port_on_addresses_of_their_own(tmp_path, monkeypatch, own_addresses):
    """Two PS and two Workers all listen on tfjob-port 2222, each on its TF_CONFIG address: with an address per
    pod the job succeeds; with every pod on 127.0.0.1 (as before, and where 127.0.0.0/8 is not all loopback) the
    second replica of a type cannot bind and the job fails, so the addresses are what makes it work."""
    if not own_addresses:
        monkeypatch.setattr(kubelet_module, "PodAddresses", lambda: PodAddresses(enabled=False))
    job = yaml.safe_load(TF_CHECK.read_text())
    with local_cluster(tmp_path, controller=True, workdir=ROOT) as (cluster, kube, kubectl):
        assert kube.post("/apis/kubeflow.org/v1/namespaces/default/tfjobs", job).ok
        outcome = wait_for(lambda: tfjob_outcome(kube, "tf-config-check"), timeout=120, what="the job finished")
        pods = {p["metadata"]["name"]: p for p in job_pods(kube, "tf-config-check")}
        if own_addresses:
            assert outcome == "Succeeded", kubectl.run("describe", "tfjob", "tf-config-check").stdout
            ips = {name: p["status"]["podIP"] for name, p in pods.items()}
            assert len(ips) == 5 and len(set(ips.values())) == 5
            assert ips == {name: cluster.kubelet.addresses.address("default", name) for name in ips}
            assert "ps-1 reached worker-0 at " + ips["tf-config-check-worker-0"] + ":2222" in \
                kubectl.ok("logs", "tf-config-check-ps-1")
        else:
            assert outcome == "Failed"
            # The job's pods listed anew each time: the first to fail can fail the job before its last replicas
            # are created (a start now costs a fork, not an interpreter), and one of those may be the one that
            # could not bind.
            wait_for(lambda: any("Address already in use" in kubectl.run("logs", p["metadata"]["name"]).stdout
                                 for p in job_pods(kube, "tf-config-check")),
                     timeout=30, what="a replica that could not bind its type's port")


def test_deleting_the_mxjob_kills_its_processes(tmp_path):
    with local_cluster(tmp_path, controller=True) as (_cluster, kube, _kubectl):
        assert kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", mxjob("sleepy", SLEEPER)).ok
        pods = wait_for(lambda: all_running(kube, "sleepy", 4), timeout=60, what="every pod running")
        groups = [group_of(p, "mxnet") for p in pods]
        assert all(group_alive(g) for g in groups)
        assert kube.delete(job_path("sleepy")).ok
        wait_for(lambda: not job_pods(kube, "sleepy"), timeout=60, what="the job's pods removed")
        wait_for(lambda: not any(group_alive(g) for g in groups), timeout=10, what="every process gone")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_local_up_runs_a_job_and_leaves_no_process_when_it_stops(tmp_path, sig):
    kubeconfig, output = tmp_path / "kubeconfig", tmp_path / "local-up.log"
    tmp_path.chmod(0o777)   # the containers' working directory: they run as nobody
    with open(output, "w") as out:
        up = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up", "--port", "0",
                               "--kubeconfig-out", str(kubeconfig)], stdout=out, stderr=subprocess.STDOUT,
                              text=True, env=clean_env(), cwd=tmp_path)
    try:
        wait_for(lambda: kubeconfig.exists() or up.poll() is not None, timeout=60, what="local up's kubeconfig")
        assert up.poll() is None, output.read_text()
        kubectl = Kubectl(kubeconfig, tmp_path / "kubectl-cache")
        kube = Kube.from_kubeconfig(kubeconfig)
        # The banner is logged once the kubeconfig is written: poll for it rather than race it.
        wait_for(lambda: "Local cluster running: API server, MXJob and TFJob controllers, kubelet"
                 in output.read_text() or up.poll() is not None, timeout=30, what="local up's banner")
        assert up.poll() is None, output.read_text()
        kubectl.ok("create", "-f", "-", input=json.dumps(mxjob("tree", SLEEPER)))
        pods = wait_for(lambda: all_running(kube, "tree", 4), timeout=60, what="every pod running")
        wait_for(lambda: kubectl.ok("logs", "tree-worker-1") == "up\n", timeout=20, what="the worker's output")
        groups = [group_of(p, "mxnet") for p in pods]
        kube.close()
    finally:
        up.send_signal(sig)
        up.wait(timeout=30)
    assert up.returncode == 0, output.read_text()
    assert not any(group_alive(g) for g in groups), "a container process outlived local up"
    assert not kubeconfig.exists()


def test_no_crds_needs_no_controller(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mxjob_controller", "local", "up", "--no-crds",
                          "--kubeconfig-out", str(tmp_path / "kc")], capture_output=True, text=True, timeout=60,
                         check=False, env=clean_env())
    assert run.returncode == 2 and "--no-controller" in run.stderr




@pytest.mark.parametrize("free_port_if_taken", [True, False])
def test_a_taken_metrics_address_never_keeps_the_cluster_from_starting_by_default(free_port_if_taken):
    """local up's default metrics address, held by another process at the moment of binding (no probe beforehand
    to race with), moves to a free port; an address the user chose fails naming it, not the API server's."""
    from mxjob_controller.local.apiserver.server import ServerOptions
    from mxjob_controller.local.cluster import ClusterOptions, LocalCluster

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = f"127.0.0.1:{holder.getsockname()[1]}"
        options = ClusterOptions(server=ServerOptions(), controller=True, kubelet=False, crds=True, webhooks=False,
                                 threadiness=1, metrics_bind_address=taken,
                                 metrics_free_port_if_taken=free_port_if_taken)
        cluster = LocalCluster(options)
        if not free_port_if_taken:
            with pytest.raises(OSError) as raised:
                cluster.start()
            assert raised.value.filename == f"{taken} (the controllers' metrics)"
            assert cluster.stop(20.0)
            return
        cluster.start()
        try:
            url = cluster.metrics.metrics_server.url
            assert not url.endswith(taken.rpartition(":")[2])
            with urllib.request.urlopen(url + "/metrics", timeout=10) as reply:
                assert b"mxjob" in reply.read()
        finally:
            assert cluster.stop(20.0)
