"""Issue 44's attacks on the pod sandbox, each as it was tried, against ``local up`` run as root and as an ordinary
user (a uid of its own, through ``setpriv``): a ``runAsUser: 0`` pod created by the admin, and one an MXJob of the
``kubeflow-mxjobs-edit`` user starts, tries to read the kubeconfig, the TLS folder and the token directory, to
take the covers off them, to write /etc, the checkout, ``.venv`` and the working directory, and to plant a
``json.py`` and an edited ``sandbox_init.py`` for the next pod; its capabilities are checked from inside and its
ids from the host. Then a second pod runs in the same working directory and must find nothing planted."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from mxjob_controller.local.kubelet.sandbox import blocked_ancestor
from mxjob_controller.local.kubelet.security_context import DEFAULT_CAPABILITIES, RunAs, capability_mask
from tests.local_support import job_editor, namespace_processes, script_pod
from tests.run_process import clean_env
from tests.support import Kube, Kubectl, wait_for

ROOT = Path(__file__).resolve().parents[3]
ROOT_RUNNER = os.geteuid() == 0
#: The ordinary user ``local up`` runs as in the second variant: a uid of its own when the tests run as root (no
#: passwd entry needed), else the tests' own user.
USER_ID = 46244 if ROOT_RUNNER else os.geteuid()
ETC_FILE = "/etc/mxjob-sandbox-attack"

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/ns/user").exists(), reason="needs namespaces")]

#: One line of JSON: what the pod could do. argv[1]: {"read": {name: path}, "write": {name: path}, "covers": [path]}.
ATTACK = r"""
import ctypes, json, os, sys
plan = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)
seen = {"read": {}, "write": {}, "umount": {}}
status = open("/proc/self/status").read()
seen["cap_eff"] = int(status.split("CapEff:")[1].split()[0], 16)
seen["uid"] = os.getuid()
seen["user_ns"] = os.readlink("/proc/self/ns/user")
seen["pid_ns"] = os.readlink("/proc/self/ns/pid")
seen["dev"] = sorted(os.listdir("/dev"))
for name, path in plan["read"].items():
    try:
        with open(path, "rb") as f:
            seen["read"][name] = "read %d bytes" % len(f.read())
    except OSError as e:
        seen["read"][name] = e.strerror
for path in plan["covers"]:
    for flags in (0, 2):   # umount, then MNT_DETACH (umount -l)
        done = libc.umount2(path.encode(), flags) == 0
        seen["umount"][f"{path} {flags}"] = "UNMOUNTED" if done else os.strerror(ctypes.get_errno())
for name, path in plan["write"].items():
    try:   # opened for writing, nothing written: a file of the host that could be opened is not changed
        os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))
        seen["write"][name] = "WROTE"
    except OSError as e:
        seen["write"][name] = e.strerror
for folder in (".", "/tmp"):   # the json.py planting: a module the next pod's `import json` would run
    try:
        with open(os.path.join(folder, "json.py"), "w") as f:
            f.write("print('PLANTED by the attacker')\n")
        seen["write"]["json.py in " + folder] = "WROTE"
    except OSError as e:
        seen["write"]["json.py in " + folder] = e.strerror
print(json.dumps(seen), flush=True)
import time
time.sleep(float(plan.get("stay", 0)))
"""

NEXT_POD = "import json, sys; print('json from', json.__file__, flush=True)"


@dataclass
class Cluster:
    """A ``local up`` as some user, and what an attacker would go for."""

    who: str
    admin: Kube
    kubectl: Kubectl
    editor: Kube
    workdir: Path
    secrets: dict[str, str]        # name → path of a cluster file a pod must not read
    secret_values: list[str]       # what none of those files may leak into a pod's log
    python: str                    # the interpreter local up runs (and so its pods find first on their PATH)


def _interpreter_for(uid: int) -> tuple[list[str], dict[str, str]] | None:
    """An interpreter the user ``uid`` can run this project with: this one, or the system's of the same version
    with this one's packages (this one may live under a home the user cannot enter)."""
    packages = os.pathsep.join([str(ROOT), *[p for p in sys.path if "site-packages" in p]])
    for python, extra in ((sys.executable, {}),
                          (f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}",
                           {"PYTHONPATH": packages})):
        if blocked_ancestor(os.path.realpath(python), RunAs(uid, uid)) is not None:
            continue   # under a folder the user may not enter (a root-only home)
        cmd = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", python]
        env = {"PATH": "/usr/bin:/bin", "HOME": "/", "LANG": "C.UTF-8", **extra}   # an ordinary user's
        if shutil.which("setpriv") and os.path.exists(python) and subprocess.run(
                [*cmd, "-c", "import mxjob_controller.cli, kubernetes"], env=env, cwd="/", capture_output=True,
                timeout=60, check=False).returncode == 0:
            return [*cmd], env
    return None


@pytest.fixture(params=["root", "user"])
def cluster(request, tmp_path) -> Iterator[Cluster]:
    who = request.param
    # Not under pytest's folder, which only root may enter: the ordinary user's local up starts in it.
    base = Path(tempfile.mkdtemp(prefix="mxjob-attack-"))
    base.chmod(0o755)
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    work, temp = base / "work", base / "tmp"
    work.mkdir()
    temp.mkdir()
    if who == "root" and not ROOT_RUNNER:
        pytest.skip("local up as root needs the tests to run as root")
    if who == "root" or not ROOT_RUNNER:
        prefix, env = [sys.executable], clean_env()
    else:
        found = _interpreter_for(USER_ID)
        if found is None:
            pytest.skip(f"no interpreter uid {USER_ID} can run this project with")
        prefix, env = found
        for path in (base, work, temp):
            os.chown(path, USER_ID, USER_ID)
    kubeconfig, token_dir = work / "kubeconfig", work / "serviceaccount"
    up = subprocess.Popen([*prefix, "-m", "mxjob_controller", "local", "up", "--port", "0", "--no-webhooks",
                           "--kubeconfig-out", str(kubeconfig), "--serviceaccount", "team/editor",
                           "--token-dir", str(token_dir), "--threadiness", "2"],
                          cwd=work, env={**env, "TMPDIR": str(temp)}, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: kubeconfig.exists() or up.poll() is not None, timeout=90, what="local up's kubeconfig")
        assert up.poll() is None, up.communicate(timeout=10)[0]
        kubectl = Kubectl(kubeconfig, tmp_path / "kubectl-cache")
        job_editor(kubectl)
        admin = Kube.from_kubeconfig(kubeconfig)
        token = wait_for(lambda: (token_dir / "token").exists() and (token_dir / "token").read_text().strip(),
                         timeout=30, what="the editor's token")
        editor = Kube(admin.api.configuration.host, token=token, ca_file=str(token_dir / "ca.crt"))
        # The server's TLS folder (its key is never on disk: it lives in memory once loaded).
        tls = next(temp.glob("mxjob-apiserver-tls-*"))
        secrets = {"kubeconfig": str(kubeconfig), "TLS folder": str(tls), "CA": str(tls / "ca.crt"),
                   "token": str(token_dir / "token"), "token dir": str(token_dir)}
        values = [yaml.safe_load(kubeconfig.read_text())["users"][0]["user"]["token"], token]
        yield Cluster(who, admin, kubectl, editor, work, secrets, [v for v in values if v],
                      os.path.basename(prefix[-1]))
        admin.close()
        editor.close()
    finally:
        up.send_signal(signal.SIGTERM)
        try:
            up.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            up.kill()
            up.communicate(timeout=30)
        Path(ETC_FILE).unlink(missing_ok=True)


def _plan(cluster: Cluster, stay: float = 0) -> str:
    writes = {"/etc": ETC_FILE, "the checkout": str(ROOT / "README.md"), ".venv": str(ROOT / ".venv" / "pyvenv.cfg"),
              "sandbox_init.py": str(ROOT / "mxjob_controller" / "local" / "kubelet" / "sandbox_init.py"),
              "the working directory": str(cluster.workdir / "planted"), "its own /tmp": "/tmp/mine"}
    return json.dumps({"read": {**cluster.secrets, "the kernel log": "/dev/kmsg"}, "write": writes, "stay": stay,
                       "covers": [cluster.secrets["kubeconfig"], cluster.secrets["token dir"],
                                  cluster.secrets["TLS folder"], "/"]})


def _log(cluster: Cluster, namespace: str, pod: str) -> str:
    """The pod's log as kubectl prints it ("" while there is none)."""
    run = cluster.kubectl.run("logs", "-n", namespace, pod)
    return run.stdout if run.returncode == 0 else ""


def _ended(kube: Kube, namespace: str, pod: str) -> dict:
    return wait_for(lambda: (r := kube.get(f"/api/v1/namespaces/{namespace}/pods/{pod}")).ok and
                    r.body.get("status", {}).get("phase") in ("Succeeded", "Failed") and r.body,
                    timeout=90, what=f"pod {namespace}/{pod} ended")


def _running_log(cluster: Cluster, namespace: str, pod: str) -> str:
    def report() -> str:
        text = _log(cluster, namespace, pod)
        return text if text.endswith("\n") else ""
    try:
        return wait_for(report, timeout=90, what=f"pod {namespace}/{pod}'s report")
    except AssertionError as e:   # say what became of the pod
        status = cluster.admin.get(f"/api/v1/namespaces/{namespace}/pods/{pod}").body.get("status")
        raise AssertionError(f"{e}; the pod's status: {status}") from None


def _check(cluster: Cluster, log: str) -> dict:
    for value in cluster.secret_values:
        assert value not in log, "a cluster secret reached the pod's log"
    seen = json.loads(log.splitlines()[0])
    assert seen["uid"] == 0
    for name, result in seen["read"].items():
        assert result in ("Permission denied", "No such file or directory", "read 0 bytes", "Is a directory"), \
            (cluster.who, name, result)
    assert not [k for k, v in seen["umount"].items() if v == "UNMOUNTED"], seen["umount"]
    wrote = {k for k, v in seen["write"].items() if v == "WROTE"}
    assert wrote == {"its own /tmp", "json.py in /tmp"}, (cluster.who, seen["write"])
    assert not Path(ETC_FILE).exists()
    # Root inside: containerd's capabilities and no more, in a user namespace that is not the host's.
    assert seen["cap_eff"] == capability_mask({}), (hex(seen["cap_eff"]), DEFAULT_CAPABILITIES)
    assert seen["user_ns"] != os.readlink("/proc/self/ns/user")
    # A /dev of its own: the runtime's default devices (and GPUs'), no disk, no kernel log.
    assert set(seen["dev"]) - {"fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
                               "tty", "urandom", "zero"} <= {d for d in seen["dev"] if d.startswith("nvidia")}
    return seen


def _host_uids(pid_namespace: str) -> set[int]:
    """The real uids, as the host sees them, of every process in a pod's PID namespace."""
    uids = set()
    for pid in namespace_processes(pid_namespace):
        status = Path(f"/proc/{pid}/status").read_text()
        uids.add(int(status.split("Uid:")[1].split()[0]))
    return uids


def _expected_host_uid_ok(cluster: Cluster, uids: set[int]) -> bool:
    if cluster.who == "user":
        return uids == {USER_ID}
    return bool(uids) and min(uids) >= 65536   # a block of the pod's own, above the host's users


def test_a_root_pod_of_the_admin_cannot_reach_the_host_or_plant_for_the_next_pod(cluster):
    pod = script_pod("root", ATTACK, securityContext={"runAsUser": 0},
                     container={"command": [cluster.python, "-c", ATTACK]})
    pod["spec"]["containers"][0]["command"].append(_plan(cluster, stay=300))
    pod["spec"]["terminationGracePeriodSeconds"] = 1
    assert cluster.admin.post("/api/v1/namespaces/default/pods", pod).ok
    seen = _check(cluster, _running_log(cluster, "default", "root"))
    uids = _host_uids(seen["pid_ns"])
    assert _expected_host_uid_ok(cluster, uids), (cluster.who, uids)
    assert cluster.admin.delete("/api/v1/namespaces/default/pods/root").ok
    # The next pod, in the same working directory: `import json` is the standard library's.
    next_pod = script_pod("next", NEXT_POD, container={"command": [cluster.python, "-c", NEXT_POD]})
    assert cluster.admin.post("/api/v1/namespaces/default/pods", next_pod).ok
    assert _ended(cluster.admin, "default", "next")["status"]["phase"] == "Succeeded"
    log = _log(cluster, "default", "next")
    assert "PLANTED" not in log and "json from /" in log and "/json/__init__.py" in log, log


def test_a_root_pod_of_a_job_editor_cannot_either(cluster):
    """Issue 44's second path: the editor may not create pods, but an MXJob's template made one root."""
    assert cluster.editor.post("/api/v1/namespaces/team/pods", script_pod("direct", "pass", namespace="team")) \
        .status == 403
    replica = {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
        "securityContext": {"runAsUser": 0},
        "containers": [{"name": "mxnet", "image": "mxnet/python",
                        "command": [cluster.python, "-c", ATTACK, _plan(cluster)]}]}}}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "escalate", "namespace": "team"},
           "spec": {"jobMode": "MXTrain", "runPolicy": {"cleanPodPolicy": "None"},
                    "mxReplicaSpecs": {"Scheduler": replica, "Server": replica, "Worker": replica}}}
    reply = cluster.editor.post("/apis/kubeflow.org/v1/namespaces/team/mxjobs", job)
    assert reply.ok, reply.body
    for pod in ("escalate-scheduler-0", "escalate-server-0", "escalate-worker-0"):
        wait_for(lambda p=pod: cluster.admin.get(f"/api/v1/namespaces/team/pods/{p}").ok, timeout=60,
                 what=f"the job's pod {pod}")
        ended = _ended(cluster.admin, "team", pod)
        assert ended["status"]["phase"] == "Succeeded", (ended["status"], _log(cluster, "team", pod))
        _check(cluster, _log(cluster, "team", pod))
    # What it could not read it could not use: the editor still may not read Secrets.
    assert cluster.editor.get("/api/v1/namespaces/kube-system/secrets").status == 403


def test_fields_the_kubelet_cannot_honour_are_refused_naming_them(cluster):
    privileged = script_pod("privileged", "pass", container={"securityContext": {"privileged": True}})
    reply = cluster.admin.post("/api/v1/namespaces/default/pods", privileged)
    assert reply.status == 403, reply.body
    assert reply.body["message"] == (
        'pods "privileged" is forbidden: the local kubelet cannot honour spec.containers[0].securityContext.'
        "privileged: Forbidden: the local kubelet runs no privileged container (root in a pod is an unprivileged "
        "user of this machine)")
    host = script_pod("host", "pass", hostPID=True, volumes=[{"name": "etc", "hostPath": {"path": "/etc"}}])
    message = cluster.admin.post("/api/v1/namespaces/default/pods", host).body["message"]
    assert "spec.hostPID: Forbidden" in message and "spec.volumes[0].hostPath: Forbidden" in message, message
    # Through a job: the controller's create is refused the same way, and the job says so in an event.
    replica = {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"hostIPC": True, "containers": [
        {"name": "mxnet", "image": "mxnet/python", "command": ["python", "-c", "pass"]}]}}}
    job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "ipc", "namespace": "team"},
           "spec": {"jobMode": "MXTrain", "mxReplicaSpecs": {"Scheduler": replica, "Server": replica,
                                                              "Worker": replica}}}
    assert cluster.editor.post("/apis/kubeflow.org/v1/namespaces/team/mxjobs", job).ok

    def refused() -> str:
        events = cluster.admin.get("/api/v1/namespaces/team/events").body["items"]
        return next((e["message"] for e in events if e["involvedObject"]["name"] == "ipc"
                     and e["reason"] == "FailedCreatePod"), "")
    message = wait_for(refused, timeout=60, what="the job's FailedCreatePod event")
    assert "is forbidden: the local kubelet cannot honour spec.hostIPC: Forbidden" in message, message
