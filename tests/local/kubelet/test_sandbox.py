"""The pod sandbox on real processes (checked in /proc): a job editor cannot read the cluster's credentials, another
pod's files or processes; nothing a container starts outlives its pod or ``local up`` (even killed by SIGKILL);
``limits.memory`` ends in OOMKilled (exit 137) and ``limits.cpu`` holds; ``runAsUser``/``runAsNonRoot`` as kube
honours them."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mxjob_controller.local.apiserver.server import ServerOptions
from mxjob_controller.local.cluster import ClusterOptions, LocalCluster
from mxjob_controller.local.kubelet.options import KubeletOptions
from mxjob_controller.runtime.cache_keys import CONTROLLER_UID_INDEX
from tests.local_support import (
    PID_NAMESPACE,
    boot_seconds,
    container_status,
    get_pod,
    job_editor,
    local_cluster,
    namespace_processes,
    pod_file,
    pod_path,
    script_pod,
    wait_phase,
)
from tests.run_process import clean_env
from tests.support import Kube, Kubectl, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.geteuid() != 0 and not Path("/proc/self/ns/user").exists(),
                                                   reason="needs namespaces")]

ROOT = Path(__file__).resolve().parents[3]
PODS = "/api/v1/namespaces/default/pods"
MXJOBS = "/apis/kubeflow.org/v1/namespaces/{ns}/mxjobs"


@pytest.fixture
def local(tmp_path):
    with local_cluster(tmp_path, controller=True) as parts:
        yield parts


PROBE = """
import json, os, sys
seen = {}
for name, path in json.loads(sys.argv[1]).items():
    try:
        with open(path, "rb") as f:
            seen[name] = f"read {len(f.read())} bytes"
    except OSError as e:
        seen[name] = e.strerror
seen["processes"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
seen["uid"] = os.getuid()
print(json.dumps(seen), flush=True)
"""


def test_a_job_editor_cannot_read_the_clusters_credentials_nor_other_pods(tmp_path):
    """Issue 32's escalation: a ServiceAccount with only ``kubeflow-mxjobs-edit`` creates an MXJob whose Scheduler
    tries the admin kubeconfig, the server's TLS folder, the kubelet's logs and another pod's files."""
    tmp_path.chmod(0o777)
    cluster = LocalCluster(ClusterOptions(server=ServerOptions(tls=True, bookmark_interval=0.2), threadiness=2,
                                          kubelet_options=KubeletOptions(workdir=str(tmp_path), stop_grace=1.0)))
    cluster.start()
    try:
        admin_kubeconfig = cluster.server.write_kubeconfig(tmp_path / "kubeconfig")   # in the pods' own folder
        kubectl = Kubectl(admin_kubeconfig, tmp_path / "kubectl-cache")
        job_editor(kubectl)
        admin = Kube(cluster.server.url, token=cluster.server.admin_token, ca_file=cluster.server.ca_file)
        editor = Kube(cluster.server.url, token=cluster.server.issue_service_account_token("team", "editor"),
                      ca_file=cluster.server.ca_file)
        assert editor.post("/api/v1/namespaces/team/pods", script_pod("direct", "pass", namespace="team")).status \
            == 403
        # A victim: another pod, with a file in its /tmp and its log on the kubelet's disk.
        victim = script_pod("victim", "import pathlib, time; pathlib.Path('/tmp/secret').write_text('s3cret'); "
                                      "print('victim up', flush=True); time.sleep(300)", namespace="team")
        assert admin.post("/api/v1/namespaces/team/pods", victim).ok
        victim_pod = wait_for(lambda: (p := admin.get("/api/v1/namespaces/team/pods/victim").body)
                              .get("status", {}).get("phase") == "Running" and p, timeout=30, what="the victim")
        victim_log = cluster.kubelet.logs.path(victim_pod["metadata"]["uid"], "main", 0)
        wait_for(lambda: victim_log.exists() and "victim up" in victim_log.read_text(), timeout=20,
                 what="the victim's log")
        targets = {"admin kubeconfig": str(admin_kubeconfig), "CA": cluster.server.ca_file,
                   "serving certificate": str(Path(cluster.server.ca_file).with_name("tls.crt")),
                   "TLS key": str(Path(cluster.server.ca_file).with_name("tls.key")),
                   "victim log": str(victim_log), "victim /tmp": "/tmp/secret",
                   "root's home": "/root/.bash_history"}
        replica = {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [
            {"name": "mxnet", "image": "mxnet/python", "command": ["python", "-c", PROBE, json.dumps(targets)]}]}}}
        job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "escalate", "namespace": "team"},
               "spec": {"jobMode": "MXTrain", "runPolicy": {"cleanPodPolicy": "None"},
                        "mxReplicaSpecs": {"Scheduler": replica, "Server": replica, "Worker": replica}}}
        reply = editor.post(MXJOBS.format(ns="team"), job)
        assert reply.ok, reply.body
        pod = wait_for(lambda: (p := admin.get("/api/v1/namespaces/team/pods/escalate-scheduler-0")).ok and
                       p.body.get("status", {}).get("phase") in ("Succeeded", "Failed") and p.body,
                       timeout=60, what="the scheduler's probe")
        assert pod["status"]["phase"] == "Succeeded", pod["status"]
        seen = admin.get("/api/v1/namespaces/team/pods/escalate-scheduler-0/log").body   # one line of JSON
        assert isinstance(seen, dict), seen
        assert seen["uid"] == 65534
        for name in targets:
            assert seen[name] in ("Permission denied", "No such file or directory"), (name, seen[name])
        assert seen["processes"] == [1, 2], "only the sandbox's init and the probe itself are visible"
        admin.close()
        editor.close()
    finally:
        assert cluster.stop(20.0)


def test_setsid_cannot_escape_the_pod(local):
    cluster, kube, _kubectl = local
    escape = ("import os, pathlib, subprocess, sys, time\n"
              "subprocess.Popen(['setsid', 'sleep', '1000'])\n"
              f"pathlib.Path('/tmp', os.environ['HOSTNAME']).write_text({PID_NAMESPACE})\n"
              "time.sleep(float(sys.argv[1]))\n")
    for name, stay in (("exits", "0.5"), ("stays", "300")):
        pod = script_pod(name, escape)
        pod["spec"]["containers"][0]["command"].append(stay)
        assert kube.post(PODS, pod).ok
    def written(name: str) -> bool:   # the file exists before its text is in it
        record = pod_file(cluster, name, f"/tmp/{name}")
        return record.exists() and bool(record.read_text())
    wait_for(lambda: written("exits") and written("stays"), timeout=30, what="both up")
    stays = pod_file(cluster, "stays", "/tmp/stays").read_text()
    assert len(namespace_processes(stays)) == 3, "init, the script and setsid's sleep"
    both_up = boot_seconds()   # a namespace's number may go to another test's container once it is gone
    wait_phase(kube, "exits", "Succeeded")
    exits = pod_file(cluster, "exits", "/tmp/exits").read_text()
    assert namespace_processes(exits, both_up) == [], "the sleep outlived its container"
    assert kube.delete(pod_path("stays")).ok
    wait_for(lambda: kube.get(pod_path("stays")).status == 404, timeout=30, what="the pod removed")
    assert namespace_processes(stays, both_up) == []


def test_each_pod_has_its_own_dev_shm_and_run_lock(local):
    """Issue 44: ``/run/lock`` was the host's, shared by every pod (a lock file one pod took, another saw). Each
    container now has a private tmpfs at ``/dev/shm`` and ``/run/lock``: what one pod writes there, another pod and the
    host never see."""
    _cluster, kube, _kubectl = local
    plant = ("import os, pathlib, time\n"
             "for folder in ('/run/lock', '/dev/shm'):\n"
             "    pathlib.Path(folder, 'planted-by-a-pod').write_text(os.environ['HOSTNAME'])\n"
             "print('planted', flush=True)\n"
             "time.sleep(300)\n")
    assert kube.post(PODS, script_pod("planter", plant)).ok
    wait_for(lambda: (r := kube.get(pod_path("planter") + "/log")).ok and "planted" in str(r.body), timeout=30,
             what="the planter's files written")
    look = ("import json, os\n"
            "print(json.dumps({folder: sorted(os.listdir(folder)) for folder in ('/run/lock', '/dev/shm')}))\n")
    assert kube.post(PODS, script_pod("looker", look)).ok
    wait_phase(kube, "looker", "Succeeded", "Failed")
    seen = kube.get(pod_path("looker") + "/log").body
    assert seen == {"/run/lock": [], "/dev/shm": []}, seen
    for folder in ("/run/lock", "/dev/shm"):
        assert not Path(folder, "planted-by-a-pod").exists(), f"the host's {folder} got the pod's file"
    assert kube.delete(pod_path("planter")).ok


def test_local_up_killed_by_sigkill_leaves_no_container(tmp_path):
    tmp_path.chmod(0o777)
    kubeconfig = tmp_path / "kubeconfig"
    up = subprocess.Popen([sys.executable, "-m", "mxjob_controller", "local", "up", "--port", "0", "--no-controller",
                           "--no-webhooks", "--kubeconfig-out", str(kubeconfig)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=clean_env(), cwd=tmp_path)
    try:
        wait_for(lambda: kubeconfig.exists() or up.poll() is not None, timeout=60, what="local up's kubeconfig")
        kube = Kube.from_kubeconfig(kubeconfig)
        sleeper = f"import os, time; print({PID_NAMESPACE}, flush=True); time.sleep(300)"
        assert kube.post(PODS, script_pod("sleeper", sleeper)).ok
        def first_line() -> str:
            reply = kube.get(pod_path("sleeper") + "/log")
            return str(reply.body or "") if reply.ok and str(reply.body or "").endswith("\n") else ""
        log = wait_for(first_line, timeout=30, what="the container's first line")
        kube.close()
        namespace = log.strip()
        assert namespace_processes(namespace)
    finally:
        up.kill()
        output = up.communicate(timeout=30)[0]
    wait_for(lambda: namespace_processes(namespace) == [], timeout=5, what="every container process gone")
    assert "Pod sandbox: each container in its own PID and mount namespace" in output
    assert "memory: limits.memory enforced" in output or "memory: NOT enforced" in output
    # What it left in the temporary directory (its sandbox, its logs, its TLS folders) goes when the next starts.
    left = list(Path(tempfile.gettempdir()).glob(f"mxjob-*-{up.pid}-*"))
    assert {p.name.split(f"-{up.pid}-")[0] for p in left} >= {"mxjob-sandbox", "mxjob-local-logs",
                                                               "mxjob-apiserver-tls"}, left
    with LocalCluster(ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=False, webhooks=False,
                                     kubelet_options=KubeletOptions(workdir=str(tmp_path)))):
        assert not [p for p in left if p.exists()], "the next local cluster removed them"


MEMORY_LIMITED = Path("/sys/fs/cgroup/memory").is_dir() or Path("/sys/fs/cgroup/cgroup.controllers").is_file()


def enforced(cluster: LocalCluster, controller: str) -> bool:
    sandbox = cluster.kubelet.sandbox
    return sandbox.cgroups is not None and controller in sandbox.cgroups.hierarchies


HOG = "import time\nblocks = []\nfor _ in range(80):\n    blocks.append(bytearray(8 << 20))\ntime.sleep(5)\n"


def test_over_its_memory_limit_a_container_is_oom_killed(local):
    cluster, kube, _kubectl = local
    if not enforced(cluster, "memory"):
        pytest.skip("no writable memory cgroup here: local up reports it as not enforced")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    pod = script_pod("hog", HOG, container={"resources": {"limits": {"memory": "200Mi"}}})
    assert kube.post(PODS, pod).ok
    ended = container_status(wait_phase(kube, "hog", "Failed", timeout=60))["state"]["terminated"]
    assert (ended["exitCode"], ended["reason"]) == (137, "OOMKilled")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50 * 1024, "local up's memory grew"


def test_an_oom_killed_worker_is_restarted_under_exit_code(local):
    cluster, kube, _kubectl = local
    if not enforced(cluster, "memory"):
        pytest.skip("no writable memory cgroup here")
    # The worker's /tmp is its own and follows its name: the pod the controller recreates after the OOM kill finds
    # the mark its predecessor left, and tells the Scheduler (over its port, as ps-lite would) it lives again.
    script = ("import os, pathlib, socket, time\nmarker = pathlib.Path('/tmp/oom-once')\n"
              "if not marker.exists():\n    marker.write_text('x')\n    blocks = []\n"
              "    while True:\n        blocks.append(bytearray(8 << 20))\n"
              "pathlib.Path('/tmp/second-life').write_text('x')\n"
              "address = (os.environ['DMLC_PS_ROOT_URI'], int(os.environ['DMLC_PS_ROOT_PORT']))\n"
              "deadline = time.monotonic() + 60\n"
              "while True:\n    try:\n        socket.create_connection(address, timeout=5).sendall(b'second life')\n"
              "        break\n    except OSError:\n        if time.monotonic() > deadline:\n            raise\n"
              "        time.sleep(0.1)\nprint('second life', flush=True)\n")
    # The Scheduler's success ends an MXJob (default success rule): it ends once the worker lives again (the Server,
    # still running, is then stopped).
    waits_for_the_restart = ("import os, socket, sys\n"
                             "listener = socket.create_server(('', int(os.environ['DMLC_PS_ROOT_PORT'])))\n"
                             "listener.settimeout(120)\n"
                             "while True:\n    peer, _ = listener.accept()\n    peer.settimeout(10)\n"
                             "    if peer.recv(64) == b'second life':\n"
                             "        print('heard: second life', flush=True)\n        break\n")
    replica = {"replicas": 1, "restartPolicy": "ExitCode", "template": {"spec": {"containers": [
        {"name": "mxnet", "image": "mxnet/python", "command": ["python", "-c", script],
         "resources": {"limits": {"memory": "200Mi"}}}]}}}
    scheduler = {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [
        {"name": "mxnet", "image": "mxnet/python", "command": ["python", "-c", waits_for_the_restart]}]}}}
    server = {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [
        {"name": "mxnet", "image": "mxnet/python", "command": ["python", "-c", "import time; time.sleep(300)"]}]}}}
    # cleanPodPolicy None: the worker's pod (and so its places, read below) stays once the job is done.
    job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "oom", "namespace": "default"},
           "spec": {"jobMode": "MXTrain", "runPolicy": {"cleanPodPolicy": "None"},
                    "mxReplicaSpecs": {"Scheduler": scheduler, "Server": server, "Worker": replica}}}
    assert kube.post(MXJOBS.format(ns="default"), job).ok

    def succeeded() -> bool:
        conditions = (kube.get(MXJOBS.format(ns="default") + "/oom").body.get("status") or {}).get("conditions")
        return any(c["type"] == "Succeeded" and c["status"] == "True" for c in conditions or [])
    wait_for(succeeded, timeout=90, what="the job succeeded")
    worker = kube.get("/api/v1/namespaces/default/pods/oom-worker-0").body
    assert pod_file(cluster, worker, "/tmp/oom-once").exists()
    assert pod_file(cluster, worker, "/tmp/second-life").exists()

    def reasons() -> set[tuple[str, str]]:
        items = kube.get("/api/v1/namespaces/default/events").body["items"]
        return {(e["reason"], e["message"]) for e in items if e["involvedObject"]["name"] == "oom"}
    wait_for(lambda: ("ExitedWithCode", "Pod: default.oom-worker-0 exited with code 137") in reasons() and
             any(r == "MXJobRestarting" for r, _m in reasons()), timeout=30, what="the 137 and the restart")



def test_a_replica_recreated_after_all_its_controllers_pods_went_finds_its_places(local):
    """A job restarting every replica deletes them all before it creates their successors (seconds later, after a
    failed write or a backoff): the kubelet's sweep in between keeps the controller's places (chaos found a worker
    whose second life missed its first life's mark)."""
    cluster, kube, _kubectl = local
    if not cluster.kubelet.sandbox.namespaces:
        pytest.skip("no pod sandbox here: a pod's /tmp is this machine's")
    owner = kube.post("/api/v1/namespaces/default/configmaps",
                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "replica-owner"}}).body
    controller = {"apiVersion": "v1", "kind": "ConfigMap", "name": "replica-owner", "uid": owner["metadata"]["uid"],
                  "controller": True}
    script = "import pathlib; m = pathlib.Path('/tmp/mark'); print('found' if m.exists() else 'new'); m.write_text('x')"
    pod = script_pod("replica-0", script)
    pod["metadata"]["ownerReferences"] = [controller]
    assert kube.post(PODS, pod).ok
    first = wait_phase(kube, "replica-0", "Succeeded", timeout=60)
    assert pod_file(cluster, first, "/tmp/mark").exists()
    assert kube.delete(PODS + "/replica-0", gracePeriodSeconds=0).ok
    kubelet = cluster.kubelet
    wait_for(lambda: get_pod(kube, "replica-0") is None and not kubelet._gone_pending and
             ("default", "replica-0") not in {(w.namespace, w.name) for w in kubelet._workers.values()} and
             not kubelet._pods.store.by_index(CONTROLLER_UID_INDEX, owner["metadata"]["uid"]),
             timeout=30, what="the pod gone from the API, the kubelet and its cache")
    kubelet.sandbox.release_places(kubelet._places_in_use())   # the housekeeping's sweep, with no pod of it left
    assert kube.post(PODS, pod).ok
    wait_phase(kube, "replica-0", "Succeeded", timeout=60)
    assert kube.get(PODS + "/replica-0/log").body.strip() == "found"


def cpu_seconds(pids: list[int]) -> float:
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError):
            pass
    return total / ticks


def test_a_cpu_limit_of_500m_holds(local):
    cluster, kube, _kubectl = local
    if not enforced(cluster, "cpu"):
        pytest.skip("no writable cpu cgroup here")
    spin = (f"import os, pathlib, threading\npathlib.Path('/tmp/ns').write_text({PID_NAMESPACE})\n"
            "def spin():\n    while True:\n        pass\n"
            "for _ in range(2):\n    threading.Thread(target=spin, daemon=True).start()\nspin()\n")
    pod = script_pod("spin", spin, container={"resources": {"limits": {"cpu": "500m"}}})
    assert kube.post(PODS, pod).ok
    record = wait_for(lambda: (r := pod_file(cluster, "spin", "/tmp/ns")).exists() and r.read_text(), timeout=30,
                      what="the spinner")
    pids = namespace_processes(record)
    start_cpu, start = cpu_seconds(pids), time.monotonic()
    time.sleep(3.0)   # a measurement window, not a wait for a condition
    used = (cpu_seconds(pids) - start_cpu) / (time.monotonic() - start)
    assert used <= 0.6, f"the container used {used:.2f} cores under a 500m limit"
    assert kube.delete(pod_path("spin")).ok


@pytest.mark.parametrize(("pod_sc", "container_sc", "message"), [
    ({"runAsNonRoot": True}, {"runAsUser": 0},
     'container\'s runAsUser breaks non-root policy (pod: "p_default({uid})", container: main)'),
    ({"runAsNonRoot": True}, {}, None),                          # nobody by default: allowed
    ({"runAsUser": 1234, "runAsGroup": 2345, "supplementalGroups": [3456]}, {}, None),
    ({"runAsUser": 1234}, {"runAsUser": 4321, "runAsGroup": 7}, None),   # the container's own wins
    ({}, {"allowPrivilegeEscalation": False}, None),                   # no_new_privs set
])
def test_security_context_as_kube_honours_it(local, pod_sc, container_sc, message):
    _cluster, kube, _kubectl = local
    script = ("import os, re; nnp = re.search(r'NoNewPrivs:\\s+(\\d)', open('/proc/self/status').read()).group(1); "
              "print(nnp, os.getuid(), os.getgid(), sorted(os.getgroups()), flush=True)")
    pod = script_pod("p", script, securityContext=pod_sc, container={"securityContext": container_sc})
    assert kube.post(PODS, pod).ok
    if message is not None:
        def waiting():
            statuses = ((get_pod(kube, "p") or {}).get("status") or {}).get("containerStatuses") or []
            state = statuses[0]["state"].get("waiting") if statuses else None
            return state if state and state["reason"] == "CreateContainerConfigError" else None
        state = wait_for(waiting, timeout=30, what="CreateContainerConfigError")
        assert state["message"] == message.format(uid=get_pod(kube, "p")["metadata"]["uid"])
        return
    wait_phase(kube, "p", "Succeeded")
    nnp, uid, gid, groups = kube.get(pod_path("p") + "/log").body.split(" ", 3)
    assert nnp == ("1" if container_sc.get("allowPrivilegeEscalation") is False else "0")
    want_uid = container_sc.get("runAsUser", pod_sc.get("runAsUser", 65534))
    want_gid = container_sc.get("runAsGroup", pod_sc.get("runAsGroup", 65534))
    assert (int(uid), int(gid)) == (want_uid, want_gid)
    assert json.loads(groups) == sorted(pod_sc.get("supplementalGroups", []))


SYSCALLS = ("import ctypes, os, re\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "def call(nr, *args):\n    done = libc.syscall(nr, *args)\n"
            "    return 'ok' if done >= 0 else os.strerror(ctypes.get_errno())\n"
            "mode = re.search(r'Seccomp:\\s+(\\d)', open('/proc/self/status').read()).group(1)\n"
            "print(mode, call(272, 0x10000000), call(250, 0, 0, 0, 0, 0), flush=True)\n")   # unshare(USER), keyctl


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the runtime's default profile is known for x86_64")
@pytest.mark.parametrize(("container_sc", "want"), [
    ({}, "0 ok Invalid argument"),                                              # Unconfined: no filter
    ({"seccompProfile": {"type": "RuntimeDefault"}}, "2 Operation not permitted Operation not permitted"),
    ({"seccompProfile": {"type": "RuntimeDefault"}, "capabilities": {"add": ["SYS_ADMIN"]}},
     "2 ok Operation not permitted"),                                           # SYS_ADMIN unlocks unshare
])
def test_seccomp_runtime_default_is_the_runtimes_default_filter(local, container_sc, want):
    _cluster, kube, _kubectl = local
    assert kube.post(PODS, script_pod("sc", SYSCALLS, container={"securityContext": container_sc})).ok
    wait_phase(kube, "sc", "Succeeded")
    assert kube.get(pod_path("sc") + "/log").body.strip() == want


def test_an_image_user_of_root_is_refused_under_run_as_non_root(tmp_path):
    """``--container-user 0``: the "image" runs as root, so ``runAsNonRoot`` without a runAsUser is kube's error."""
    tmp_path.chmod(0o777)
    options = ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=False, webhooks=False,
                             kubelet_options=KubeletOptions(workdir=str(tmp_path), container_user=(0, 0)))
    with LocalCluster(options) as cluster:
        kube = Kube(cluster.server.url)
        assert kube.post(PODS, script_pod("p", "pass", securityContext={"runAsNonRoot": True})).ok

        def waiting():
            statuses = ((get_pod(kube, "p") or {}).get("status") or {}).get("containerStatuses") or []
            return statuses and statuses[0]["state"].get("waiting", {}).get("reason") == "CreateContainerConfigError" \
                and statuses[0]["state"]["waiting"]
        state = wait_for(waiting, timeout=30, what="CreateContainerConfigError")
        uid = get_pod(kube, "p")["metadata"]["uid"]
        assert state["message"] == f'container has runAsNonRoot and image will run as root (pod: "p_default({uid})", ' \
                                   'container: main)'
        kube.close()


def test_the_sandbox_can_be_turned_off(tmp_path):
    options = ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=False, webhooks=False,
                             kubelet_options=KubeletOptions(workdir=str(tmp_path), sandbox=False))
    with LocalCluster(options) as cluster:
        assert cluster.kubelet.sandbox.report()[0].startswith("Pod sandbox OFF: turned off (--no-sandbox).")
        kube = Kube(cluster.server.url)
        assert kube.post(PODS, script_pod("p", f"import os; print({PID_NAMESPACE}, os.getuid())")).ok
        wait_phase(kube, "p", "Succeeded")
        assert kube.get(pod_path("p") + "/log").body.split() == [os.readlink("/proc/self/ns/pid"), str(os.getuid())]
        events = kube.get("/api/v1/namespaces/default/events").body["items"]
        assert [e["reason"] for e in events if e["involvedObject"]["kind"] == "Node"] == ["SandboxDisabled"]
        kube.close()


def test_a_pod_cannot_fork_past_its_pids_limit(tmp_path):
    tmp_path.chmod(0o777)
    options = ClusterOptions(server=ServerOptions(bookmark_interval=0.2), controller=False, webhooks=False,
                             kubelet_options=KubeletOptions(workdir=str(tmp_path), pod_pids_limit=20))
    with LocalCluster(options) as cluster:
        if not enforced(cluster, "pids"):
            pytest.skip("no writable pids cgroup here")
        kube = Kube(cluster.server.url)
        fork = ("import os, sys, time\nkids = 0\ntry:\n    for _ in range(40):\n        if os.fork() == 0:\n"
                "            time.sleep(30)\n            os._exit(0)\n        kids += 1\nexcept OSError as e:\n"
                "    print('refused after', kids, e.strerror, flush=True)\n    sys.exit(0)\nsys.exit(1)\n")
        assert kube.post(PODS, script_pod("forker", fork)).ok
        wait_phase(kube, "forker", "Succeeded", timeout=60)
        assert kube.get(pod_path("forker") + "/log").body.startswith("refused after ")
        kube.close()

