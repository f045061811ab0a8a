"""``mxjob-controller local run`` as a user runs it, on real processes: the real MXNet example (and its failing and
restarted variants), the MXTune example, the TensorFlow-free TFJob check (every replica reaching every peer through
TF_CONFIG, replicas of one type sharing port 2222 on addresses of their own) and the TFJob examples, and its exit
codes (0, 1, 2, 124, 130) with no process left behind."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.local_support import boot_seconds, namespace_processes, pid_alive
from tests.run_process import clean_env
from tests.support import Kubectl, wait_for

# One xdist worker runs them one after the other: ``local run`` works in (and writes its kubeconfig under) the
# checkout, the directory these tests start it in.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("local-run")]

ROOT = Path(__file__).resolve().parents[2]
DIGITS = ROOT / "examples" / "mxnet-digits" / "mxjob.yaml"
MXTUNE = ROOT / "examples" / "mxtune" / "mxjob.yaml"
ACCURACY = re.compile(r"^\[mxnet-digits-worker-(\d)\] epoch (\d+) test-accuracy ([0-9.]+)$", re.M)


def local_run(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mxjob_controller", "local", "run", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, check=False, env=clean_env())


def digits_job(tmp_path: Path, *, in_tmp_path: bool = False, **env: str) -> Path:
    """The example with extra environment on its workers, written to a file of the test's own. ``in_tmp_path``: the
    workers start in ``tmp_path`` (opened to every user), the one folder of the test a sandboxed container sees."""
    job = yaml.safe_load(DIGITS.read_text())
    container = job["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    if in_tmp_path:
        tmp_path.chmod(0o777)
        container["workingDir"] = str(tmp_path)
        container["command"] = [str(ROOT / a) if a.startswith("examples/") else a for a in container["command"]]
    container["env"] = [e for e in container.get("env", []) if e["name"] not in env] + \
        [{"name": k, "value": v} for k, v in env.items()]
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    return path


def final_line(out: str, job: str) -> str:
    return [line for line in out.splitlines() if f"default/{job} " in line][-1]


def worker_job(name: str, script: str, *, replicas: int = 1, **resources: dict[str, Any]) -> dict[str, Any]:
    """An MXJob of ``replicas`` Workers running ``python -c script``, with these ``resources`` (requests, limits)."""
    container = {"name": "mxnet", "image": "python:3.11-slim", "command": ["python", "-c", script],
                 **({"resources": resources} if resources else {})}
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name},
            "spec": {"mxReplicaSpecs": {"Worker": {"replicas": replicas, "template": {"spec": {
                "containers": [container]}}}}}}


def test_the_real_mxnet_example_trains_to_90_percent_though_a_worker_killed_once_is_restarted(tmp_path):
    """The example as shipped (10 epochs, 90%), with worker 0 SIGKILLed once at its start: the ExitCode policy
    restarts it and the job trains to the example's own accuracy and succeeds. (One training serves the two checks
    that each ran one before: the example's accuracy and the restart of a killed worker.)"""
    # In the worker's own /tmp, which follows its name: the pod the controller recreates finds it.
    run = local_run("--logs", "--timeout", "240", str(digits_job(tmp_path, in_tmp_path=True,
                                                                 CRASH_ONCE_MARKER="/tmp/crashed-once")))
    assert run.returncode == 0, run.stdout + run.stderr
    kill = "[mxnet-digits-worker-0] worker 0 kills itself with SIGKILL (CRASH_ONCE_MARKER)"
    assert run.stdout.count(kill) == 1, "the worker crashed once, and its replacement found the mark"
    crashed = run.stdout.index(kill)
    assert "[mxnet-digits-worker-0] epoch 10 test-accuracy" in run.stdout[crashed:], "the replacement never trained"
    epochs = ACCURACY.findall(run.stdout)
    assert {w for w, _e, _a in epochs} == {"0", "1"}, run.stdout
    last = {w: float(a) for w, e, a in epochs if e == "10"}
    assert len(last) == 2 and min(last.values()) >= 0.9, run.stdout
    assert f"[mxnet-digits-worker-0] final test accuracy {last['0']:.3f} after 10 epochs" in run.stdout
    assert "Succeeded  Scheduler 1 succeeded · Server 1 succeeded · Worker 2 succeeded" in \
        final_line(run.stdout, "mxnet-digits")
    assert "all 1 job(s) succeeded" in run.stdout


def test_a_worker_that_exits_1_fails_the_job_and_is_named(tmp_path):
    run = local_run("--timeout", "240", str(digits_job(tmp_path, FAIL_WORKER_ID="1")))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "default/mxnet-digits failed: MXJob mxnet-digits has failed because 1 Worker replica(s) failed: " \
           "mxnet-digits-worker-1 exited with code 1" in run.stdout
    assert "--- pod mxnet-digits-worker-1 container mxnet exited with 1 (Error); its last lines:" in run.stdout
    assert "[mxnet-digits-worker-1] worker 1 exits 1 (FAIL_WORKER_ID)" in run.stdout


def test_the_mxtune_example():
    run = local_run("--logs", "--timeout", "120", str(MXTUNE))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "[mxtune-tuner-0] best configuration: tile 12 (cost 1.0)" in run.stdout
    # The tracker's Service name resolves to its pod's own loopback address (local/kubelet/addresses.py).
    assert re.search(r"^\[mxtune-tunerserver-0\] registered with the tracker at 127\.\d+\.\d+\.\d+:\d+ ", run.stdout,
                     re.M), run.stdout
    assert "Succeeded  TunerTracker 1 succeeded · TunerServer 1 succeeded · Tuner 1 succeeded" in \
        final_line(run.stdout, "mxtune")


TF_CHECK = ROOT / "examples" / "tf-config-check" / "tfjob.yaml"
REACHED = re.compile(r"^\[tf-config-check-([a-z]+-\d)\] \1 reached ([a-z]+-\d) at (127\.\d+\.\d+\.\d+):(\d+)$", re.M)


def test_the_tensorflow_free_check_every_replica_reaches_every_peer():
    run = local_run("--logs", "--timeout", "120", str(TF_CHECK))
    assert run.returncode == 0, run.stdout + run.stderr
    replicas = {"chief-0", "ps-0", "ps-1", "worker-0", "worker-1"}
    reached = REACHED.findall(run.stdout)
    assert {(a, b) for a, b, _ip, _port in reached} == {(a, b) for a in replicas for b in replicas if a != b}
    addresses = {b: ip for _a, b, ip, _port in reached}
    assert len(set(addresses.values())) == 5 and "127.0.0.1" not in addresses.values(), "an address each"
    assert {port for *_, port in reached} == {"2222"}, "every type on the default tfjob-port"
    for replica in replicas:
        assert f"[tf-config-check-{replica}] {replica} reached every peer and was reached by every peer (4)" in \
            run.stdout
    assert "Succeeded  Chief 1 succeeded · PS 2 succeeded · Worker 2 succeeded" in final_line(run.stdout,
                                                                                               "tf-config-check")


def test_the_tfjob_examples_run_to_success_side_by_side():
    run = local_run("--logs", "--timeout", "120", str(ROOT / "examples" / "tensorflow" / "tfjob-dist.yaml"),
                    str(ROOT / "examples" / "tensorflow" / "tfjob-run-policy.yaml"))
    assert run.returncode == 0, run.stdout + run.stderr
    # The Chief decides: the job may succeed while a worker or the PS is still finishing (then reaped).
    assert "Succeeded  Chief 1 succeeded" in final_line(run.stdout, "tf-dist")
    assert "Succeeded  PS 1 succeeded · Worker 2 succeeded" in final_line(run.stdout, "tf-run-policy")
    assert "[tf-run-policy-worker-1] {'type': 'worker', 'index': 1}" in run.stdout
    assert "all 2 job(s) succeeded" in run.stdout


GENERIC = ROOT / "examples" / "generic"
CHECKED_IN = re.compile(r"^\[rendezvous-worker-(\d)\] worker-\1 of 3: checked in with (127\.\d+\.\d+\.\d+):7070$", re.M)


def test_logs_show_every_container_however_quickly_it_ran_and_its_pod_was_removed(tmp_path):
    """Two workers that print a line and exit at once, cleanPodPolicy All: pods that start, end and are removed
    between two looks at the API still have their output shown (read from the kubelet's files as they start)."""
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "quick"},
           "spec": {"runPolicy": {"cleanPodPolicy": "All"}, "successPolicy": "AllWorkers", "tfReplicaSpecs": {
               "Worker": {"replicas": 2, "template": {"spec": {"containers": [{
                   "name": "tensorflow", "image": "python:3.11-slim",
                   "command": ["sh", "-c", "echo done $HOSTNAME"]}]}}}}}}
    path = tmp_path / "quick.yaml"
    path.write_text(yaml.safe_dump(job))
    for _ in range(3):   # each run races differently; every one must show both
        run = local_run("--logs", "--timeout", "120", str(path))
        assert run.returncode == 0, run.stdout + run.stderr
        shown = sorted(set(re.findall(r"^\[(quick-worker-\d)\] done quick-worker-\d$", run.stdout, re.M)))
        assert shown == ["quick-worker-0", "quick-worker-1"], run.stdout


def test_gpus_flag_gives_each_worker_a_declared_device_of_its_own(tmp_path):
    """``--gpus 5,7``: two TFJob workers asking for one GPU each, running at once (each listens on an abstract
    socket named after it, reaches the other's and stays until the other has reached its own: pods share no
    writable file, and the first to finish must not leave before its peer has seen it), see one declared device
    each, never the same."""
    tmp_path.chmod(0o777)
    token = f"gpus-{time.monotonic_ns()}"
    script = ("import os, socket, time\n"
              f"me = os.environ['HOSTNAME']\nname = lambda pod: '\\0{token}-' + pod\n"
              "listener = socket.socket(socket.AF_UNIX)\nlistener.bind(name(me))\nlistener.listen()\n"
              "other = 'gpus-worker-1' if me.endswith('-0') else 'gpus-worker-0'\n"
              "end = time.monotonic() + 60\n"
              "while time.monotonic() < end:\n"
              "    try:\n        socket.socket(socket.AF_UNIX).connect(name(other))\n        break\n"
              "    except OSError:\n        time.sleep(0.05)\n"
              "else:\n    raise SystemExit('never reached ' + other)\n"
              "listener.settimeout(60)\nlistener.accept()\n"
              "print('sees', os.environ['CUDA_VISIBLE_DEVICES'], os.environ['NVIDIA_VISIBLE_DEVICES'], flush=True)\n")
    job = {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "gpus"},
           "spec": {"successPolicy": "AllWorkers", "tfReplicaSpecs": {"Worker": {"replicas": 2, "template": {
               "spec": {"containers": [{"name": "tensorflow", "image": "python:3.11-slim",
                                        "command": ["python", "-c", script], "workingDir": str(tmp_path),
                                        "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}}}
    path = tmp_path / "gpus.yaml"
    path.write_text(yaml.safe_dump(job))
    run = local_run("--logs", "--gpus", "5,7", "--timeout", "120", str(path))
    assert run.returncode == 0, run.stdout + run.stderr
    found = re.findall(r"^\[(gpus-worker-\d)\] sees (\d) (\d)$", run.stdout, re.M)
    assert sorted(worker for worker, _cuda, _nvidia in found) == ["gpus-worker-0", "gpus-worker-1"], run.stdout
    assert all(cuda == nvidia for _worker, cuda, nvidia in found), found
    assert sorted(cuda for _worker, cuda, _nvidia in found) == ["5", "7"], run.stdout


LOUD_FAILURE = "import sys\nfor i in range(1, 31):\n    print(f'line {i}', flush=True)\nsys.exit(4)\n"
SLEEPER = "import time; time.sleep(120)"


def failing_job(kind: str) -> dict[str, Any]:
    """A job of ``kind`` whose worker 0 prints 30 lines and exits 4 while worker 1 sleeps, under a policy that
    deletes every pod once it has failed: MXJob's default (no cleanPodPolicy given), TFJob's and GenericJob's
    ``All``."""
    def container(name: str) -> dict[str, Any]:
        # worker 0 fails loudly, the others sleep until cleanPodPolicy stops them (stopped: not a failure)
        script = f"import os\nexec({LOUD_FAILURE!r} if os.environ['HOSTNAME'].endswith('-0') else {SLEEPER!r})"
        return {"name": name, "image": "python:3.11-slim", "command": ["python", "-c", script]}
    template = {"spec": {"containers": [container({"MXJob": "mxnet", "TFJob": "tensorflow"}.get(kind, "main"))]}}
    if kind == "MXJob":
        spec: dict[str, Any] = {"mxReplicaSpecs": {"Worker": {"replicas": 2, "template": template}}}
        return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": "loud"}, "spec": spec}
    if kind == "TFJob":
        spec = {"runPolicy": {"cleanPodPolicy": "All"}, "tfReplicaSpecs": {"Worker": {"replicas": 2,
                                                                                      "template": template}}}
        return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": "loud"}, "spec": spec}
    spec = {"cleanUpPolicy": "All", "replicaSpecs": [{"type": "worker", "replicas": 2, "template": template,
                                                      "restartPolicy": {"policy": "Never"}}],
            "failureRules": [{"worker": [0]}]}
    return {"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": kind, "metadata": {"name": "loud"}, "spec": spec}


@pytest.mark.parametrize(("kind", "runs"), [("MXJob", 2), ("TFJob", 1), ("GenericJob", 1)])
def test_a_failed_containers_last_20_lines_are_printed_though_its_pod_was_deleted(tmp_path, kind, runs):
    """Issue 34: the pods are deleted as soon as the job fails; the lines come from the kubelet's record of the
    container's end, made before the failure could be seen, so every run prints them (no race with deletion)."""
    path = tmp_path / "loud.json"
    path.write_text(json.dumps(failing_job(kind)))
    container = {"MXJob": "mxnet", "TFJob": "tensorflow"}.get(kind, "main")
    for _ in range(runs):
        run = local_run("--timeout", "120", str(path))
        assert run.returncode == 1, run.stdout + run.stderr
        lines = run.stdout.splitlines()
        header = f"--- pod loud-worker-0 container {container} exited with 4 (Error); its last lines:"
        assert header in lines, run.stdout
        start = lines.index(header) + 1
        assert lines[start:start + 20] == [f"[loud-worker-0] line {i}" for i in range(11, 31)], run.stdout
        assert "[loud-worker-0] line 10" not in lines
        assert not [line for line in lines if line.startswith("--- pod loud-worker-1")], \
            "a container the kubelet stopped (cleanPodPolicy) did not fail: " + run.stdout


def test_the_generic_job_examples_talk_over_their_substituted_service_hosts_and_succeed():
    run = local_run("--logs", "--timeout", "120", str(GENERIC / "rendezvous.yaml"),
                    str(GENERIC / "generic-example.yaml"))
    assert run.returncode == 0, run.stdout + run.stderr
    checked_in = CHECKED_IN.findall(run.stdout)
    assert sorted(rank for rank, _ip in checked_in) == ["0", "1", "2"], run.stdout
    [address] = {ip for _rank, ip in checked_in}
    assert address != "127.0.0.1", "the server's Service host resolves to its own pod's address"
    assert "[rendezvous-server-0] server-0: all 3 workers checked in: ranks [0, 1, 2]" in run.stdout
    assert "Succeeded  4 succeeded" in final_line(run.stdout, "rendezvous")
    assert "[generic-example-master-0] master 0 of 3 masters and 3 workers" in run.stdout
    # master 0 alone fulfils the first rule: the job may succeed before every replica ran (the rest are cleaned up
    # or still starting)
    assert "Succeeded " in final_line(run.stdout, "generic-example")
    assert "all 2 job(s) succeeded" in run.stdout


def test_a_generic_job_failed_by_its_rule_names_the_rule_and_the_pod(tmp_path):
    job = yaml.safe_load((GENERIC / "generic-example.yaml").read_text())
    job["spec"] = {"replicaSpecs": [job["spec"]["replicaSpecs"][1]], "failureRules": [{"worker": [2]}],
                   "successRules": [{"worker": [0, 1, 2]}]}
    job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["command"] = [
        "python", "-c",
        "import sys; print('$(type) $(rank) of $(replicas[worker])'); sys.exit(3 if $(rank) == 2 else 0)"]
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(job))
    run = local_run("--timeout", "60", str(path))
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'default/generic-example failed: The job is failed with rule: {"worker":["2"]}' in run.stdout, run.stdout
    assert "--- pod generic-example-worker-2 container main exited with 3 (Error); its last lines:" in run.stdout
    assert "[generic-example-worker-2] worker 2 of 3" in run.stdout


def sleeper_job(tmp_path: Path) -> Path:
    """Two pods that start a child each, then sleep; their scripts name ``tmp_path``, by which the test finds their
    processes (and so their PID namespaces) on this machine."""
    tmp_path.chmod(0o777)
    script = (f"# {tmp_path} #\nimport subprocess, sys, time\n"
              f"child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)  # {tmp_path} #'])\n"
              "time.sleep(300)\n")
    replica = {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [
        {"name": "mxnet", "image": "python:3.11-slim", "command": ["python", "-c", script],
         "workingDir": str(tmp_path)}]}}}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "sleepy"},
           "spec": {"mxReplicaSpecs": {"Scheduler": replica, "Worker": replica}}}
    path = tmp_path / "sleepy.json"
    path.write_text(json.dumps(job))
    return path


_SEEN: dict[Path, dict[str, float]] = {}   # tmp_path → PID namespace of a sleeper → when it was seen alive


def recorded_namespaces(tmp_path: Path) -> list[str]:
    """The PID namespaces of the sleepers (``sleeper_job``) seen so far, looked for among this machine's processes
    now: each once its script and the script's child both run there (both name ``tmp_path``), with that time."""
    seen = _SEEN.setdefault(tmp_path, {})
    own = os.readlink("/proc/self/ns/pid")
    named: dict[str, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f"# {tmp_path} #".encode() not in f.read():
                    continue
            namespace = os.readlink(f"/proc/{entry}/ns/pid")
        except OSError:
            continue
        if namespace != own:
            named[namespace] = named.get(namespace, 0) + 1
    for namespace, count in named.items():
        if count >= 2:
            seen.setdefault(namespace, boot_seconds())
    return list(seen)


def recorded_pids(tmp_path: Path) -> list[int]:
    """Every live process of the two pods, found by their PID namespaces. Only processes born before a namespace
    was seen alive count: once it is gone its number may go to another test's container."""
    return [p for namespace, seen_at in _SEEN.get(tmp_path, {}).items()
            for p in namespace_processes(namespace, born_before=seen_at)]


def test_a_container_without_a_command_fails_its_job_in_seconds_saying_why():
    """The vendor's TFJob gives only ``args`` (its image's entrypoint would run them): nothing can run here, so the
    pods fail at once (restartPolicy Never) and the run ends, where it used to wait for the whole --timeout."""
    run = local_run("--timeout", "120", str(ROOT / "examples" / "cloud-api" / "create-tfjob.json"))
    assert run.returncode == 1, run.stdout + run.stderr
    # Which replicas the failing reconcile has seen fail depends on timing: the PS, the Worker, or both.
    failed = (r"^kube-test/tfjob-test failed: TFJob tfjob-test has failed because .*replica\(s\) failed: "
              r"(.*; )?tfjob-test-(ps|worker)-0 exited with code 128 \(CreateContainerError\)")
    assert re.search(failed, run.stdout, re.M), run.stdout
    failed_at = re.search(r"^\[ *([0-9.]+)s\] kube-test/tfjob-test  Failed", run.stdout, re.M)
    assert failed_at and float(failed_at.group(1)) < 30, run.stdout
    assert 'no command specified for container "tensorflow": images are not run locally' in run.stderr


def test_pod_security_restricted_fails_a_job_whose_pods_it_refuses_saying_why():
    """``--pod-security restricted``: the example's pods set no securityContext, so each create is refused; the
    controller would retry for ever, ``local run`` fails the job at once with kube's PodSecurity text."""
    run = local_run("--pod-security", "restricted", "--timeout", "120", str(DIGITS))
    assert run.returncode == 1, run.stdout + run.stderr
    failed = (r'^default/mxnet-digits failed: pods "mxnet-digits-(scheduler|server|worker)-0" is forbidden: violates '
              r'PodSecurity "restricted:latest": allowPrivilegeEscalation != false \(container "mxnet" must set '
              r"securityContext.allowPrivilegeEscalation=false\), .* \(the namespace's pod-security.kubernetes.io "
              r"labels or `local run --pod-security` set the level\)$")
    assert re.search(failed, run.stdout, re.M), run.stdout
    assert "Failed     a pod refused by PodSecurity" in run.stdout


def test_timeout_exits_124_and_stops_everything(tmp_path):
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "run", "--timeout", "4",
                             str(sleeper_job(tmp_path))], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=clean_env())
    while True:   # the sleepers' namespaces are found while they run
        recorded_namespaces(tmp_path)
        try:
            out, err = proc.communicate(timeout=0.1)
            break
        except subprocess.TimeoutExpired:
            continue
    run = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    assert run.returncode == 124, run.stdout + run.stderr
    assert "timed out after 4s: not finished: default/sleepy (Running)" in run.stdout
    assert time.monotonic() - started < 60
    assert len(recorded_namespaces(tmp_path)) == 2 and not recorded_pids(tmp_path)


def test_ctrl_c_exits_130_with_no_orphans(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "run", str(sleeper_job(tmp_path))],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        wait_for(lambda: len(recorded_namespaces(tmp_path)) == 2 or proc.poll() is not None, timeout=60,
                 what="both pods running")
        pids = recorded_pids(tmp_path)
        assert len(pids) >= 6 and all(pid_alive(p) for p in pids)   # in each pod: init, script, its child
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "interrupted" in out
    assert not any(pid_alive(p) for p in pids)
    assert not recorded_pids(tmp_path)


@pytest.mark.parametrize(("flags", "scheme"), [((), "https"), (("--insecure-http",), "http")])
def test_kubectl_works_with_the_run_kubeconfig_https_by_default(tmp_path, flags, scheme):
    """While the jobs run, kubectl reads the run's kubeconfig as written: HTTPS with its CA and an administrator's
    token by default, plain HTTP without credentials with --insecure-http."""
    kubeconfig = tmp_path / "run-kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "run", *flags, "--kubeconfig-out",
                             str(kubeconfig), str(sleeper_job(tmp_path))],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        wait_for(lambda: kubeconfig.exists() or proc.poll() is not None, timeout=60, what="the run's kubeconfig")
        cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
        assert cluster["server"].startswith(f"{scheme}://127.0.0.1:")
        assert ("certificate-authority-data" in cluster) == (scheme == "https")
        kubectl = Kubectl(kubeconfig, tmp_path / "cache")
        wait_for(lambda: "mxjob.kubeflow.org/sleepy" in kubectl.ok("get", "mxjobs", "-o", "name").split(),
                 timeout=30, what="the run's job, through kubectl")
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert not kubeconfig.exists()


@pytest.mark.parametrize(("args", "code", "says"), [
    (("no-such-file.yaml",), 2, "does not exist"),
    ((), 2, "Missing argument"),
    (("--capacity", "cpu=lots", str(DIGITS)), 2, "Invalid value for --capacity: cpu=lots"),
])
def test_usage_errors_exit_2(args, code, says):
    run = local_run(*args, timeout=60)
    assert run.returncode == code and says in run.stderr


def test_a_sweep_larger_than_the_capacity_shows_its_queue(tmp_path):
    """Three one-CPU jobs on a one-CPU node run one after the other; the waiting ones are shown queued, in order,
    with the scheduler's reason, and all succeed."""
    jobs = [worker_job(f"sweep-{i}", "import time; time.sleep(1)", requests={"cpu": "1"}) for i in range(3)]
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump_all(jobs))
    run = local_run("--capacity", "cpu=1", "--timeout", "120", str(path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all 3 job(s) succeeded" in run.stdout
    waiting = "pod(s) waiting (0/1 nodes are available: 1 Insufficient cpu.)"
    assert re.search(rf"default/sweep-[12] .* queued #2: 1 {re.escape(waiting)}", run.stdout), run.stdout
    assert re.search(rf"default/sweep-[12] .* queued #1: 1 {re.escape(waiting)}", run.stdout), run.stdout


def test_an_invalid_job_is_refused_with_the_field_named(tmp_path):
    bad: dict[str, Any] = yaml.safe_load(DIGITS.read_text())
    bad["spec"]["mxReplicaSpecs"]["Worker"]["replicas"] = -1
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    run = local_run(str(path), timeout=60)
    assert run.returncode == 1
    assert "MXJob default/mxnet-digits:" in run.stderr and "spec.mxReplicaSpecs.Worker.replicas" in run.stderr


def test_a_failed_container_belongs_to_the_job_that_controls_it_not_to_a_namesake_of_another_kind(tmp_path):
    """An MXJob and a TFJob may share a name and namespace (and so their pods' names): a failure report names only
    the failed job's containers, by the uid of their pods' controller; of a pod recreated under its name only the
    newest instance counts, and a container the kubelet stopped (its pod deleted) did not fail."""
    from mxjob_controller.local.kubelet.logs import LogStore

    store = LogStore(tmp_path)

    def ran(pod_uid: str, owner: str, code: int, *, pod: str = "same-worker-0", stopped: bool = False) -> None:
        path = store.path(pod_uid, "main", 0)
        path.parent.mkdir(parents=True)
        path.write_text(f"{pod_uid}\n")
        store.started(path, "ns", pod, owner)
        store.ended(path, {"exitCode": code, "reason": "Error" if code else "Completed"}, stopped=stopped)

    ran("mx-pod", "mx-job", 4)
    ran("tf-pod", "tf-job", 3)
    ran("tf-pod-1", "tf-job", 143, pod="same-worker-1", stopped=True)
    ran("mx-retry-old", "mx-job", 5, pod="same-worker-1")
    ran("mx-retry-new", "mx-job", 0, pod="same-worker-1")
    assert [(i.path.parent.parent.name, end.terminated["exitCode"]) for i, end in store.failed("mx-job")] == [
        ("mx-pod", 4)]
    assert [(i.path.parent.parent.name, end.terminated["exitCode"]) for i, end in store.failed("tf-job")] == [
        ("tf-pod", 3)]
    assert store.failed("") == [] and store.failed("other") == []


def test_a_gang_that_can_never_fit_fails_fast_naming_what_it_lacks(tmp_path):
    """Volcano's gangs on a 4-CPU node, a job of five 1-CPU workers all or nothing: Volcano would never admit the
    group (the PodGroup says so, tests/local/scheduler/test_scheduler.py); ``local run`` ends at once, as it does for
    a pod that can never fit, naming what the gang needs and what the node has."""
    job = worker_job("huge", "print(1)", replicas=5, requests={"cpu": "1"})
    path = tmp_path / "huge.yaml"
    path.write_text(yaml.safe_dump(job))
    run = local_run("--gang-scheduler-name", "volcano", "--capacity", "cpu=4", "--timeout", "2m", str(path))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "default/huge failed: the gang of default/huge (PodGroup default/huge, minMember 5) can never be " \
           "scheduled on this machine: it needs cpu 5 (the node has 4) at once; `local run --capacity` declares a " \
           "larger node" in run.stdout, run.stdout
    failed_at = re.search(r"^\[ *([0-9.]+)s\] default/huge  Failed", run.stdout, re.M)
    assert failed_at and float(failed_at.group(1)) <= 10, run.stdout


def test_a_pod_asking_for_gpus_the_node_lacks_is_told_of_gpus_not_capacity(tmp_path):
    job = worker_job("gpu", "print(1)", limits={"nvidia.com/gpu": 2})
    path = tmp_path / "gpu.yaml"
    path.write_text(yaml.safe_dump(job))
    run = local_run("--gpus", "none", "--timeout", "1m", str(path))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "pod gpu-worker-0 can never be scheduled on this machine: it asks for nvidia.com/gpu 2 (the node has " \
           "0); `local run --gpus 0,1,…` declares GPUs (device indices) for the node" in run.stdout, run.stdout


def test_a_volcano_gang_waiting_for_room_says_why_then_runs(tmp_path):
    """Two one-CPU gangs on a one-CPU node: Volcano admits one; the other's pods are not even created, and its
    line says why (its PodGroup's Unschedulable condition) until room frees; both succeed."""
    jobs = [worker_job(f"gang-{i}", "import time; time.sleep(2)", requests={"cpu": "1"}) for i in range(2)]
    path = tmp_path / "gangs.yaml"
    path.write_text(yaml.safe_dump_all(jobs))
    run = local_run("--gang-scheduler-name", "volcano", "--capacity", "cpu=1", "--timeout", "2m", str(path))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "all 2 job(s) succeeded" in run.stdout
    assert re.search(r"default/gang-[01]  Created .* PodGroup Unschedulable: 1/1 tasks in gang unschedulable: "
                     r"resource in cluster is overused: Insufficient cpu for its minResources", run.stdout), run.stdout
