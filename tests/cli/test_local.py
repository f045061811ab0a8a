"""`mxjob-controller local up` as a user runs it: a separate process, a kubeconfig that appears only when the
server is ready, kubectl working against it, and a clean stop on SIGTERM or SIGINT."""

import copy
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from mxjob_controller.cli.local import packaged_crds
from mxjob_controller.local.scheduler.scheduler import podgroup_crds
from tests.support import Kube, Kubectl, wait_for


def start_local_up(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    kubeconfig = tmp_path / "kc" / "config"
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up", "--port", "0",
                             "--kubeconfig-out", str(kubeconfig), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, kubeconfig


def read_lines(proc: subprocess.Popen) -> tuple[list[str], threading.Thread]:
    """What ``proc`` prints, line by line as it comes (a thread reads its stdout into the list)."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True, name="local-up-stdout")
    reader.start()
    return lines, reader


def wait_ready(proc: subprocess.Popen, kubeconfig: Path) -> None:
    def ready():
        if proc.poll() is not None:
            raise AssertionError(f"local up exited early: {proc.communicate()}")
        return kubeconfig.exists()
    wait_for(ready, timeout=30, what="the kubeconfig of local up")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.integration
def test_local_up_serves_kubectl_and_stops_cleanly(tmp_path, sig):
    proc, kubeconfig = start_local_up(tmp_path)
    try:
        wait_ready(proc, kubeconfig)
        config = yaml.safe_load(kubeconfig.read_text())
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        server = cluster["server"]   # HTTPS by default, the CA and an administrator's token in the kubeconfig
        assert server.startswith("https://127.0.0.1:") and not server.endswith(":0")
        assert cluster["certificate-authority-data"] and user["token"]
        assert oct(os.stat(kubeconfig).st_mode & 0o777) == "0o600"
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        assert "namespace/default" in kubectl.ok("get", "namespaces", "-o", "name").split()
        assert "kubernetes-admin" in kubectl.ok("auth", "whoami")
        crds = kubectl.ok("get", "crds", "-o", "name").split()
        # the project's CRDs, and the PodGroups of the gang schedulers the local scheduler acts as
        assert crds == sorted(f"customresourcedefinition.apiextensions.k8s.io/{c['metadata']['name']}"
                              for c in packaged_crds() + podgroup_crds())
    finally:
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert f"Kubeconfig written to {kubeconfig}" in out
    assert not kubeconfig.exists(), "the kubeconfig of a stopped server is removed"


@pytest.mark.integration
def test_local_up_no_crds(tmp_path):
    """Also kube's flow-control and request-timeout flags: 40 + 9 seats give global-default 4 (49 · 20 / 245), and
    a list slower than the request timeout gets kubectl's 504 error; and ``--gpus``: the node advertises those."""
    proc, kubeconfig = start_local_up(tmp_path, "--no-crds", "--no-controller", "--max-requests-inflight", "40",
                                      "--max-mutating-requests-inflight", "9", "--request-timeout", "0.5",
                                      "--fault", "verb=list,resource=configmaps,latency=3", "--gpus", "1,3")
    try:
        wait_ready(proc, kubeconfig)
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        assert kubectl.ok("get", "crds", "-o", "name").strip() == ""
        assert 'apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 4' in \
            kubectl.ok("get", "--raw", "/metrics").splitlines()
        slow = kubectl.run("get", "configmaps")
        assert slow.returncode == 1 and "Error from server (Timeout)" in slow.stderr, slow.stderr
        assert kubectl.ok("get", "node", "local", "-o", r"jsonpath={.status.capacity.nvidia\.com/gpu}") == "2"
    finally:
        proc.terminate()
        out, _err = proc.communicate(timeout=15)
    assert proc.returncode == 0
    assert "GPUs: nvidia.com/gpu 2 (devices 1,3), each container given its own" in out


@pytest.mark.integration
def test_local_up_reports_a_busy_port(tmp_path):
    first, kubeconfig = start_local_up(tmp_path)
    try:
        wait_ready(first, kubeconfig)
        port = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"].rsplit(":", 1)[1]
        second = subprocess.run([sys.executable, "-m", "mxjob_controller", "local", "up", "--port", port,
                                 "--kubeconfig-out", str(tmp_path / "other")],
                                capture_output=True, text=True, timeout=30, check=False)
        assert second.returncode != 0
        assert "Address already in use" in second.stderr or "address already in use" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.terminate()
        first.communicate(timeout=15)


@pytest.mark.integration
def test_local_up_tls_runs_a_job_with_every_part_authenticated(tmp_path):
    """``--tls`` (the default, still accepted): HTTPS with the CA in the kubeconfig and an administrator's token,
    RBAC enforced; the embedded controller and kubelet are users of their own (in system:masters) and run a job to
    success."""
    proc, kubeconfig = start_local_up(tmp_path, "--tls")
    try:
        wait_ready(proc, kubeconfig)
        config = yaml.safe_load(kubeconfig.read_text())
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        assert cluster["server"].startswith("https://127.0.0.1:") and cluster["certificate-authority-data"]
        assert user["token"] and oct(os.stat(kubeconfig).st_mode & 0o777) == "0o600"
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        assert "kubernetes-admin" in kubectl.ok("auth", "whoami")
        job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "j", "namespace": "default"},
               "spec": {"mxReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
                   "containers": [{"name": "mxnet", "image": "mxnet/python:1.9.1",
                                   "command": [sys.executable, "-c", "print('done')"]}]}}}}}}
        kubectl.ok("create", "-f", "-", input=yaml.safe_dump(job))
        wait_for(lambda: "Succeeded" in kubectl.ok("get", "mxjob", "j", "-o",
                                                   "jsonpath={.status.conditions[?(@.status=='True')].type}"),
                 timeout=60, what="the job succeeded")
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "(authorization: RBAC)" in out
    assert user["token"] not in out + err


@pytest.mark.integration
def test_local_up_kubelet_none_leaves_mxjob_port_9091_and_the_services_on_it(tmp_path):
    """``--kubelet none``: no process will bind a job's ports, so none is rewritten (the job-port admission runs
    only with ``--kubelet process``): an MXJob keeps ``mxjob-port: 9091`` as written, a type without the port
    gets the default 9091 as on a cluster, and its Services and pods' wiring say 9091."""
    proc, kubeconfig = start_local_up(tmp_path, "--kubelet", "none", "--threadiness", "1")
    try:
        wait_ready(proc, kubeconfig)
        kube = Kube.from_kubeconfig(kubeconfig)

        def replica(port: bool) -> dict:
            container = {"name": "mxnet", "image": "mxnet/python:1.9.1", "command": ["python", "-c", "pass"]}
            if port:
                container["ports"] = [{"name": "mxjob-port", "containerPort": 9091}]
            return {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}
        job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "p", "namespace": "default"},
               "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": {
                   "Scheduler": replica(True), "Server": replica(True), "Worker": replica(False)}}}
        created = kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", job)
        assert created.status == 201, created.body
        assert "local.mxjob-controller.kubeflow.org/assigned-ports" not in (
            created.body["metadata"].get("annotations") or {})
        # As written, but for the Worker's port, which admission defaults as on a cluster (the webhook's defaulting).
        wanted = copy.deepcopy(job["spec"]["mxReplicaSpecs"])
        wanted["Worker"]["template"]["spec"]["containers"][0]["ports"] = [{"name": "mxjob-port", "containerPort": 9091}]
        assert created.body["spec"]["mxReplicaSpecs"] == wanted, "the ports as written, 9091 where none was"

        selector = {"labelSelector": "training.kubeflow.org/job-name=p"}
        def services() -> dict | None:
            items = kube.get("/api/v1/namespaces/default/services", **selector).body["items"]
            return {s["metadata"]["name"]: s["spec"]["ports"] for s in items} if len(items) == 3 else None
        found = wait_for(services, timeout=30, what="the job's 3 Services")
        assert {name: [(p["name"], p["port"]) for p in ports] for name, ports in found.items()} == {
            f"p-{t}-0": [("mxjob-port", 9091)] for t in ("scheduler", "server", "worker")}
        reply = wait_for(lambda: r if (r := kube.get("/api/v1/namespaces/default/pods/p-worker-0")).ok else None,
                         timeout=30, what="the worker's pod")
        env = {e["name"]: e.get("value") for e in reply.body["spec"]["containers"][0]["env"]}
        assert env["DMLC_PS_ROOT_PORT"] == "9091" and '"port":9091' in env["MX_CONFIG"]
        assert reply.body["status"].get("phase") == "Pending", "no kubelet runs it"
        kube.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


@pytest.mark.integration
def test_local_up_tls_on_every_address_gives_clients_the_loopback_address(tmp_path):
    """``--host 0.0.0.0 --tls``: the kubeconfig names 127.0.0.1 (in the serving certificate), not 0.0.0.0 (in no
    certificate, and no destination), and kubectl verifies the server there."""
    proc, kubeconfig = start_local_up(tmp_path, "--tls", "--host", "0.0.0.0", "--no-controller", "--kubelet", "none")
    try:
        wait_ready(proc, kubeconfig)
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("https://127.0.0.1:") and not server.endswith(":0")
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        assert "namespace/default" in kubectl.ok("get", "namespaces", "-o", "name").split()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"listening on {server}" in out


@pytest.mark.integration
def test_local_up_insecure_http_serves_plain_http_without_credentials(tmp_path):
    """``--insecure-http``: plain HTTP as before TLS became the default; no CA, no token, everything allowed."""
    proc, kubeconfig = start_local_up(tmp_path, "--insecure-http", "--no-controller", "--kubelet", "none")
    try:
        wait_ready(proc, kubeconfig)
        config = yaml.safe_load(kubeconfig.read_text())
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        assert cluster["server"].startswith("http://127.0.0.1:") and "certificate-authority-data" not in cluster
        assert user == {}
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        assert kubectl.ok("auth", "can-i", "delete", "nodes").strip() == "yes"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"listening on {cluster['server']}\n" in out, "no authorization mode is named: none is enforced"


@pytest.mark.parametrize(("args", "says"), [
    (["--serviceaccount", "kubeflow/mxjob-controller"], "--serviceaccount and --token-dir go together"),
    (["--token-dir", "sa"], "--serviceaccount and --token-dir go together"),
    (["--serviceaccount", "kubeflow/mxjob-controller", "--token-dir", "sa", "--insecure-http"],
     "--serviceaccount needs TLS (drop --insecure-http)"),
    (["--serviceaccount", "mxjob-controller", "--token-dir", "sa", "--tls"], "expected NAMESPACE/NAME"),
    (["--authorization", "abac"], "'abac' is not one of 'rbac', 'always-allow'"),
])
def test_local_up_refuses_contradicting_security_flags(tmp_path, args, says):
    from click.testing import CliRunner

    from mxjob_controller.cli import main

    result = CliRunner().invoke(main, ["local", "up", "--kubeconfig-out", str(tmp_path / "kc"), *args])
    assert result.exit_code == 2 and says in result.output, result.output
    assert not (tmp_path / "kc").exists()


@pytest.mark.parametrize("command", [["local", "up"], ["local", "run", "job.yaml"]])
@pytest.mark.parametrize(("value", "says"), [
    ("0,x", "Invalid value for --gpus: '0,x': expected auto, none or device indices separated by commas "
            "(e.g. 0,1,2,3); 'x' is not a device index"),
    ("2,0,2", "Invalid value for --gpus: '2,0,2': device 2 is listed more than once"),
    ("all", "Invalid value for --gpus: 'all': expected auto, none or device indices"),
])
def test_local_up_and_run_refuse_a_bad_gpus_value_naming_the_flag(tmp_path, monkeypatch, command, value, says):
    from click.testing import CliRunner

    from mxjob_controller.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "job.yaml").write_text("{}\n")
    result = CliRunner().invoke(main, [*command, "--kubeconfig-out", str(tmp_path / "kc"), "--gpus", value])
    assert result.exit_code == 2 and says in " ".join(result.output.split()), result.output
    assert not (tmp_path / "kc").exists()


@pytest.mark.integration
def test_local_up_serves_the_controllers_metrics_for_prometheus(tmp_path):
    """``--metrics-bind-address``: the embedded controllers' ``/metrics``, as ``run`` serves them, count a job
    run through kubectl (the names manifests/monitoring's dashboard and alerts read)."""
    import urllib.request

    proc, kubeconfig = start_local_up(tmp_path, "--metrics-bind-address", "127.0.0.1:0")
    lines, reader = read_lines(proc)
    try:
        wait_ready(proc, kubeconfig)
        url = wait_for(lambda: next((line.split(": ", 1)[1].strip() for line in list(lines)
                                     if line.startswith("Controller metrics: ")), None), timeout=30,
                       what="the metrics URL printed")
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "counted"},
               "spec": {"mxReplicaSpecs": {"Worker": {"restartPolicy": "Never", "template": {"spec": {
                   "containers": [{"name": "mxnet", "image": "mxnet/python",
                                   "command": [sys.executable, "-c", "print('done')"]}]}}}}}}
        kubectl.ok("create", "-f", "-", input=yaml.safe_dump(job))

        def scraped() -> str | None:
            with urllib.request.urlopen(url, timeout=10) as reply:
                text = reply.read().decode()
            done = 'training_operator_jobs_successful_total{framework="mxnet",job_namespace="default"} 1.0'
            return text if done in text.splitlines() else None
        text = wait_for(scraped, timeout=60, what="the job counted as succeeded")
        assert 'training_operator_jobs_created_total{framework="mxnet",job_namespace="default"} 1.0' in \
            text.splitlines()
        assert 'controller_runtime_max_concurrent_reconciles{controller="mxjob-controller"} 4.0' in text.splitlines()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.join(10)
    assert proc.returncode == 0


@pytest.mark.integration
def test_kubectl_explain_shows_the_schemas_descriptions(tmp_path):
    proc, kubeconfig = start_local_up(tmp_path, "--kubelet", "none", "--metrics-bind-address", "0")
    try:
        wait_ready(proc, kubeconfig)
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        explained = " ".join(kubectl.ok("explain", "mxjob.spec").split())
        assert "DESCRIPTION: The desired state of the job: its replica specs" in explained, explained
        assert "<empty>" not in explained
        assert "Fail the job after this many retries." in explained
        assert "A distributed TensorFlow training job." in " ".join(kubectl.ok("explain", "tfjob").split())
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


@pytest.mark.integration
def test_local_up_says_where_a_failed_jobs_logs_went(tmp_path):
    """With MXJob's default cleanPodPolicy (All) a failed job's pods, and their logs, are deleted as it fails: the
    console says so and how to keep them; with None it names the kubectl command that shows them, which works."""
    proc, kubeconfig = start_local_up(tmp_path, "--metrics-bind-address", "0")
    lines, reader = read_lines(proc)
    try:
        wait_ready(proc, kubeconfig)
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        for name, policy in (("gone", None), ("kept", "None")):
            job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name},
                   "spec": {"mxReplicaSpecs": {"Worker": {"restartPolicy": "Never", "template": {"spec": {
                       "containers": [{"name": "mxnet", "image": "mxnet/python", "command": [
                           sys.executable, "-c", "print('about to fail', flush=True); raise SystemExit(3)"]}]}}}}}}
            if policy:
                job["spec"]["runPolicy"] = {"cleanPodPolicy": policy}
            kubectl.ok("create", "-f", "-", input=yaml.safe_dump(job))

        def said(start: str) -> list[str] | None:
            found = [i for i, line in enumerate(list(lines)) if line.startswith(start)]
            return lines[found[0]:found[0] + 2] if found and len(lines) > found[0] + 1 else None
        gone = wait_for(lambda: said("MXJob default/gone failed: "), timeout=60, what="the failure said")
        assert "gone-worker-0 exited with code 3" in gone[0], gone
        assert gone[1].startswith("  its pods were deleted as it failed (All: the job's clean-up policy), their logs "
                                  "with them"), gone
        assert "set spec.runPolicy.cleanPodPolicy: None" in gone[1]
        kept = wait_for(lambda: said("MXJob default/kept failed: "), timeout=60, what="the failure said")
        command = kept[1].strip().removeprefix("its pods are kept: ")
        assert command == "kubectl logs -n default -l training.kubeflow.org/job-name=kept --all-containers --prefix"
        assert "about to fail" in kubectl.ok(*command.split()[1:])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.join(10)
    assert proc.returncode == 0


def test_the_clis_defaults_are_those_of_the_modules_that_own_them():
    """cli/local.py keeps the job ports' default `local up --help` shows, so that loading it loads no cluster."""
    from mxjob_controller.cli import local as cli_local
    from mxjob_controller.local.job_ports import DEFAULT_RANGE

    assert f"{DEFAULT_RANGE[0]}-{DEFAULT_RANGE[1]}" == cli_local.DEFAULT_JOB_PORTS


@pytest.mark.integration
def test_local_run_speaks_first_for_little_cpu_and_a_ctrl_c_then_stops_it(tmp_path):
    """Its first line comes before the cluster's modules load: the process has used at most half a CPU second by
    then (CPU, not wall time: a busy machine does not change it much); a Ctrl-C right after ends the run, 130."""
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "j"},
                                   "spec": {"mxReplicaSpecs": {"Worker": {"template": {"spec": {"containers": [
                                       {"name": "mxnet", "image": "x", "command": ["true"]}]}}}}}}))
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "run", "--kubeconfig-out",
                             str(tmp_path / "kc"), str(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline() == "Starting a local cluster…\n"
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        assert cpu <= 0.5, f"{cpu:.2f} CPU s before the first line"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
