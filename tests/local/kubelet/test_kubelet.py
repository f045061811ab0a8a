"""The local kubelet on real processes: pods created over HTTP run as Python scripts, and what the API then says
(phases, exit codes, restarts, deletion, logs through ``kubectl logs``) is what a kubelet would report."""

from __future__ import annotations

import json
import os
import re
import select
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.local_support import (
    boot_seconds,
    container_status,
    get_pod,
    group_alive,
    group_of,
    kubelet_events,
    local_cluster,
    namespace_processes,
    pid_alive,
    pod_file,
    pod_path,
    script_pod,
    wait_phase,
)
from tests.support import wait_for

pytestmark = pytest.mark.slow

PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def local(tmp_path):
    with local_cluster(tmp_path) as parts:
        yield parts


def test_node_and_binding(local):
    _cluster, kube, kubectl = local
    node = kube.get("/api/v1/nodes/local").body
    assert {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"] == "True"
    assert node["status"]["addresses"][0] == {"type": "InternalIP", "address": "127.0.0.1"}
    assert kube.post(PODS, script_pod("p", "print('hi')")).ok
    pod = wait_phase(kube, "p", "Succeeded")
    assert pod["spec"]["nodeName"] == "local"
    assert {c["type"] for c in pod["status"]["conditions"]} >= {"PodScheduled", "Initialized", "Ready"}
    # Binding a bound pod again is kube's conflict.
    reply = kube.post(pod_path("p") + "/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                                                    "target": {"kind": "Node", "name": "other"}})
    assert reply.status == 409
    assert reply.body["message"] == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to ' \
                                    'node "local"'
    # A pod for a scheduler this cluster does not run is left alone: Pending, unbound, and its logs are empty (no
    # node, no log). (The local scheduler acts as default-scheduler, Volcano and scheduler-plugins.)
    assert kube.post(PODS, script_pod("gang", "print('x')", schedulerName="my-scheduler")).ok
    assert kube.get(pod_path("gang")).body["status"]["phase"] == "Pending"
    assert kubectl.run("logs", "gang").stdout == ""
    assert not kube.get(pod_path("gang")).body["spec"].get("nodeName")


@pytest.mark.parametrize(("script", "code", "reason", "phase"), [
    ("print('done')", 0, "Completed", "Succeeded"),
    ("import sys; sys.exit(3)", 3, "Error", "Failed"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 137, "Error", "Failed"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", 143, "Error", "Failed"),
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", 139, "Error", "Failed"),
])
def test_exit_codes_and_signals_are_reported_exactly(local, script, code, reason, phase):
    cluster, kube, _kubectl = local
    assert kube.post(PODS, script_pod("p", script)).ok
    pod = wait_phase(kube, "p", "Succeeded", "Failed")
    assert pod["status"]["phase"] == phase
    ended = container_status(pod)["state"]["terminated"]
    assert (ended["exitCode"], ended["reason"]) == (code, reason)
    assert ended["startedAt"] <= ended["finishedAt"]
    assert ended["containerID"].startswith("process://")
    assert pod["status"]["podIP"] == cluster.kubelet.addresses.address("default", "p") != "127.0.0.1"
    assert pod["status"]["hostIP"] == "127.0.0.1" and pod["status"]["startTime"]
    assert container_status(pod)["restartCount"] == 0


FLAKY = """
import pathlib, sys
marker = pathlib.Path({marker!r})
n = int(marker.read_text()) + 1 if marker.exists() else 1
marker.write_text(str(n))
print(f"attempt {{n}}", flush=True)
sys.exit(0 if n >= {succeed_at} else 1)
"""


def test_on_failure_restarts_in_place_with_restart_count(local):
    cluster, kube, kubectl = local
    # In the pod's own /tmp, which its containers' restarts keep.
    assert kube.post(PODS, script_pod("p", FLAKY.format(marker="/tmp/attempts", succeed_at=3),
                                      restart_policy="OnFailure")).ok
    pod = wait_phase(kube, "p", "Succeeded")
    status = container_status(pod)
    assert status["restartCount"] == 2 and pod_file(cluster, "p", "/tmp/attempts").read_text() == "3"
    assert status["state"]["terminated"]["exitCode"] == 0
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert kubectl.ok("logs", "p") == "attempt 3\n"
    assert kubectl.ok("logs", "p", "--previous") == "attempt 2\n"


def test_never_does_not_restart(local):
    cluster, kube, _kubectl = local
    assert kube.post(PODS, script_pod("p", FLAKY.format(marker="/tmp/attempts", succeed_at=3))).ok
    pod = wait_phase(kube, "p", "Failed")
    assert container_status(pod)["restartCount"] == 0 and pod_file(cluster, "p", "/tmp/attempts").read_text() == "1"


def test_always_restarts_with_crash_loop_back_off(tmp_path):
    with local_cluster(tmp_path, backoff=5.0) as (_cluster, kube, _kubectl):
        assert kube.post(PODS, script_pod("p", "print('bye')", restart_policy="Always")).ok

        def backing_off():
            pod = get_pod(kube, "p")
            statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
            waiting = statuses[0]["state"].get("waiting") if statuses else None
            return pod if waiting and waiting["reason"] == "CrashLoopBackOff" else None
        pod = wait_for(backing_off, timeout=20, what="CrashLoopBackOff")
        status = container_status(pod)
        assert status["restartCount"] == 1  # the first restart is immediate, the second waits
        assert status["state"]["waiting"]["message"].startswith("back-off 5s restarting failed container=main pod=p_")
        assert status["lastState"]["terminated"]["reason"] == "Completed"
        assert pod["status"]["phase"] == "Running"


def test_container_events_are_the_kubelets_created_started_backoff_and_killing(tmp_path):
    """What ``kubectl describe pod`` shows of a crash-looping container, then of its deletion: each event names the
    container (``fieldPath``), with the kubelet's reasons and messages."""
    with local_cluster(tmp_path, backoff=5.0) as (_cluster, kube, kubectl):
        assert kube.post(PODS, script_pod("p", "import time, sys; time.sleep(0.2); sys.exit(2)",
                                          restart_policy="Always")).ok

        def lifecycle() -> list[tuple[str, str, str]] | None:
            said = kubelet_events(kube, "p")
            return said if ("Warning", "BackOff") in [e[:2] for e in said] else None
        pod = get_pod(kube, "p")
        ref = f"p_default({pod['metadata']['uid']})"
        # started twice (the first restart is immediate: the same event again, counted), then the back-off
        assert wait_for(lifecycle, timeout=30, what="the back-off said") == [
            ("Normal", "Created", "Created container: main"), ("Normal", "Started", "Started container main"),
            ("Warning", "BackOff", f"Back-off restarting failed container main in pod {ref}")]
        events = [e for e in kube.get("/api/v1/namespaces/default/events",
                                      fieldSelector="involvedObject.name=p").body["items"]
                  if e["source"]["component"] == "kubelet"]
        assert {e["involvedObject"].get("fieldPath") for e in events} == {"spec.containers{main}"}
        assert wait_for(lambda: [e["count"] for e in kube.get(
            "/api/v1/namespaces/default/events", fieldSelector="involvedObject.name=p,reason=Started").body[
            "items"]] == [2], timeout=10, what="the second start counted")

        assert kube.post(PODS, script_pod("long", "import time; print('up', flush=True); time.sleep(60)")).ok
        wait_for(lambda: "up" in kubectl.run("logs", "long").stdout, timeout=30, what="the container running")
        kubectl.ok("delete", "pod", "long", "--timeout=30s")
        assert wait_for(lambda: (said := kubelet_events(kube, "long")) and len(said) == 3 and said, timeout=10) == [
            ("Normal", "Created", "Created container: main"), ("Normal", "Started", "Started container main"),
            ("Normal", "Killing", "Stopping container main")]


def test_the_kubelets_events_have_kubes_event_budget(local):
    """eventRecordQPS 50 and eventBurst 100, on a client of their own: a burst of pod starts (two events each)
    writes most of its events after the starts, never before a status write, as a node's kubelet does."""
    cluster, _kube, _kubectl = local
    events_client = cluster.kubelet.events.client
    assert (events_client.config.qps, events_client.config.burst) == (50.0, 100)
    assert events_client is not cluster.kubelet.client


TREE = """
import os, signal, subprocess, sys, time, pathlib
{ignore}
child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                          "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
                          "print(g.pid, flush=True); time.sleep(300)"], stdout=subprocess.PIPE, text=True)
grandchild = int(child.stdout.readline())
pathlib.Path({pids!r}).write_text(os.readlink('/proc/self/ns/pid'))
print("tree up", flush=True)
time.sleep(300)
"""


@pytest.mark.parametrize("ignores_sigterm", [False, True])
def test_graceful_deletion_kills_the_whole_process_tree(local, ignores_sigterm):
    cluster, kube, _kubectl = local
    ignore = "signal.signal(signal.SIGTERM, signal.SIG_IGN)" if ignores_sigterm else ""
    body = script_pod("tree", TREE.format(ignore=ignore, pids="/tmp/pids"))
    body["spec"]["terminationGracePeriodSeconds"] = 1
    assert kube.post(PODS, body).ok
    # The file exists before its text is in it (CI read it empty and found no process): wait for the whole "pid:[n]".
    def recorded() -> str:
        pids_file = pod_file(cluster, "tree", "/tmp/pids")
        return pids_file.read_text() if pids_file.exists() and pids_file.read_text().endswith("]") else ""
    namespace = wait_for(recorded, timeout=20, what="the process tree")
    assert namespace != os.readlink("/proc/self/ns/pid"), "the container has a PID namespace of its own"
    pids = namespace_processes(namespace)
    assert len(pids) >= 4, "the sandbox's init, the container's process, its child and grandchild"
    pgid = group_of(wait_phase(kube, "tree", "Running"))
    started, deleting = time.monotonic(), boot_seconds()
    assert kube.delete(pod_path("tree")).ok
    wait_for(lambda: kube.get(pod_path("tree")).status == 404, timeout=20, what="the pod removed")
    took = time.monotonic() - started
    assert not any(pid_alive(p) for p in pids) and not group_alive(pgid)
    assert namespace_processes(namespace, born_before=deleting) == []
    if ignores_sigterm:
        assert took >= 1.0, "SIGKILL came before the grace period ended"


def test_logs_follow_previous_tail_and_waiting(local, tmp_path):
    _cluster, kube, kubectl = local
    gate = tmp_path / "gate"
    counting = ("import time, pathlib\nfor i in range(5):\n    print(f'line {i}', flush=True)\n"
                f"while not pathlib.Path({str(gate)!r}).exists():\n    time.sleep(0.05)\nprint('end', flush=True)\n")
    assert kube.post(PODS, script_pod("p", counting)).ok
    wait_for(lambda: "line 4" in kubectl.run("logs", "p").stdout, timeout=20, what="the running pod's output")
    assert kubectl.ok("logs", "p", "--tail=2") == "line 3\nline 4\n"
    follower = kubectl.popen("logs", "-f", "p")
    assert follower.stdout is not None
    # Attached once it has printed what was already there; only then does the container go on.
    ready, _, _ = select.select([follower.stdout], [], [], 20)
    assert ready, "kubectl logs -f printed nothing"
    first = os.read(follower.stdout.fileno(), 65536).decode()  # raw: communicate() below reads the rest
    gate.touch()
    out, err = follower.communicate(timeout=20)
    assert follower.returncode == 0, err
    assert first + out == "".join(f"line {i}\n" for i in range(5)) + "end\n"
    previous = kubectl.run("logs", "p", "--previous")
    assert previous.returncode != 0
    assert 'previous terminated container "main" in pod "p" not found' in previous.stderr

    # An app container behind an init container that has not finished is waiting to start.
    body = script_pod("later", "print('main')")
    wait_gate = f"import time, pathlib\nwhile not pathlib.Path({str(gate) + '2'!r}).exists(): time.sleep(0.05)"
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "command": ["python", "-c", wait_gate]}]
    assert kube.post(PODS, body).ok
    wait_for(lambda: (get_pod(kube, "later") or {}).get("status", {}).get("initContainerStatuses"), timeout=20)
    waiting = kubectl.run("logs", "later", "-c", "main")
    assert waiting.returncode != 0
    assert 'container "main" in pod "later" is waiting to start: PodInitializing' in waiting.stderr
    Path(str(gate) + "2").touch()
    wait_phase(kube, "later", "Succeeded")
    assert kubectl.ok("logs", "later", "-c", "main") == "main\n"


def test_logs_timestamps_since_time_and_since_seconds(local, tmp_path):
    """Issue 33: ``timestamps`` prefixes each line with the kubelet's time (RFC3339NanoFixed), ``sinceTime`` and
    ``sinceSeconds`` keep the lines written since, and they combine with ``tailLines`` and ``limitBytes``."""
    _cluster, kube, _kubectl = local
    gate = tmp_path / "gate"
    script = ("import time, pathlib\nfor i in range(3):\n    print(f'early-{i}', flush=True)\n"
              f"while not pathlib.Path({str(gate)!r}).exists():\n    time.sleep(0.02)\n"
              "print('late-0', flush=True)\nprint('late-1', flush=True)\n"
              f"while not pathlib.Path({str(gate) + '2'!r}).exists():\n    time.sleep(0.02)\n")
    before = time.time()
    assert kube.post(PODS, script_pod("stamped", script)).ok
    log = f"{pod_path('stamped')}/log"

    def text(**query: str) -> str:
        reply = kube.request("GET", log, query=query, accept="*/*")
        assert reply.status == 200, reply.body
        return reply.body or ""

    def stamps(body: str) -> list[tuple[float, str]]:
        out = []
        for line in body.splitlines():
            stamp, _, rest = line.partition(" ")
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", stamp), line
            out.append((datetime.fromisoformat(stamp[:26] + "+00:00").timestamp(), rest))
        return out

    wait_phase(kube, "stamped", "Running")
    early = wait_for(lambda: s if len(s := stamps(text(timestamps="true"))) == 3 and s == stamps(
        text(timestamps="true")) else None, timeout=20, what="the early lines, seen by the kubelet")
    assert [line for _, line in early] == ["early-0", "early-1", "early-2"]
    middle = time.time()   # every early line was seen (and stamped) before this; the late ones come after
    assert before - 1 <= early[0][0] <= early[-1][0] <= middle
    gate.touch()
    # Until the kubelet's clock has seen them, lines are stamped "now": wait for stamps that stay put.
    wait_for(lambda: "late-1" in (a := text(timestamps="true")) and a == text(timestamps="true"), timeout=20,
             what="the late lines, seen by the kubelet")
    stamped_all = stamps(text(timestamps="true"))
    assert [line for _, line in stamped_all] == ["early-0", "early-1", "early-2", "late-0", "late-1"]
    times = [t for t, _ in stamped_all]
    assert times == sorted(times) and times[3] > middle
    since = datetime.fromtimestamp(middle, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert text(sinceTime=since) == "late-0\nlate-1\n"
    assert text(sinceTime=since, tailLines="1") == "late-1\n"
    assert text(sinceTime=since, timestamps="true", limitBytes="31") == text(timestamps="true", tailLines="2")[:31]
    assert text(sinceSeconds="3600") == "early-0\nearly-1\nearly-2\nlate-0\nlate-1\n"
    assert text(tailLines="2", timestamps="true").endswith("late-1\n")
    Path(str(gate) + "2").touch()
    wait_phase(kube, "stamped", "Succeeded")
    assert text(sinceTime=since) == "late-0\nlate-1\n", "kept once the container has ended"


ENV = "import json, os, sys; print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'exe': sys.executable}))"


def test_environment_as_a_kubelet_builds_it(local, tmp_path):
    cluster, kube, kubectl = local
    assert kube.post("/api/v1/namespaces/default/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
        "spec": {"clusterIP": "None", "ports": [{"port": 5432}]}}).ok
    assert kube.post("/api/v1/namespaces/default/services", {   # a replica's Service: its pod's own address
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "peer"},
        "spec": {"clusterIP": "None", "selector": {"app": "peer"}, "ports": [{"port": 2222}]}}).ok
    assert kube.post("/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"mode": "fast"}}).ok
    body = script_pod("env", ENV, container={"workingDir": str(tmp_path), "env": [
        {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "GREETING", "value": "hi $(POD) $$(POD) $(UNKNOWN)"},
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
        {"name": "DB", "value": "tcp://db:5432,db.default:1,db.default.svc.cluster.local:2,dbx:3,db-1:4"},
        {"name": "PEER", "value": "peer.default.svc:2222"},
        {"name": "LATER", "value": "later.default.svc:2222,later:1"},
        {"name": "OMP_NUM_THREADS", "value": "3"}]})
    assert kube.post(PODS, body).ok
    wait_phase(kube, "env", "Succeeded")
    seen = json.loads(kubectl.ok("logs", "env"))
    env = seen["env"]
    assert (env["POD"], env["NODE"], env["HOSTNAME"]) == ("env", "local", "env")
    assert env["IP"] == cluster.kubelet.addresses.address("default", "env") != "127.0.0.1", "the pod's own address"
    assert env["GREETING"] == "hi env $(POD) $(UNKNOWN)"
    assert env["MODE"] == "fast" and env["OMP_NUM_THREADS"] == "3"
    assert env["DB"] == "tcp://127.0.0.1:5432,127.0.0.1:1,127.0.0.1:2,dbx:3,db-1:4", "no selector: this machine"
    assert env["PEER"] == f"{cluster.kubelet.addresses.address('default', 'peer')}:2222" != "127.0.0.1:2222"
    assert env["LATER"] == f"{cluster.kubelet.addresses.address('default', 'later')}:2222,later:1", \
        "a Service's DNS form resolves before the Service exists; a bare word does not"
    assert seen["cwd"] == str(tmp_path)
    assert Path(seen["exe"]).parent == Path(env["PATH"].split(":")[0])

    # No OMP_NUM_THREADS in the pod: one thread, every container sharing this machine's cores.
    assert kube.post(PODS, script_pod("env2", ENV)).ok
    wait_phase(kube, "env2", "Succeeded")
    assert json.loads(kubectl.ok("logs", "env2"))["env"]["OMP_NUM_THREADS"] == "1"


NO_COMMAND = ('no command specified for container "main": images are not run locally, so there is no image '
              "entrypoint to fall back on; give the container a command")


def test_containers_that_cannot_start_say_why(local):
    _cluster, kube, _kubectl = local
    body = script_pod("cfg", "print('ok')", container={"env": [
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "later", "key": "x"}}}]})
    assert kube.post(PODS, body).ok

    def waiting_reason(name):
        pod = get_pod(kube, name) or {}
        statuses = pod.get("status", {}).get("containerStatuses") or []
        return statuses and statuses[0]["state"].get("waiting", {}).get("reason")
    wait_for(lambda: waiting_reason("cfg") == "CreateContainerConfigError", timeout=20)
    assert container_status(get_pod(kube, "cfg"))["state"]["waiting"]["message"] == 'configmap "later" not found'
    assert kube.post("/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "later"}, "data": {"x": "1"}}).ok
    wait_phase(kube, "cfg", "Succeeded", timeout=30)

    assert wait_for(lambda: (said := kubelet_events(kube, "cfg")) and len(said) >= 3 and said, timeout=10) == [
        ("Warning", "Failed", 'Error: configmap "later" not found'), ("Normal", "Created", "Created container: main"),
        ("Normal", "Started", "Started container main")]

    # No command, and no image entrypoint here: a kubelet's CreateContainerError, then (it can never start) the end
    # of a container that failed to start, so restartPolicy Never fails the pod at once.
    no_command = script_pod("nocmd", "")
    del no_command["spec"]["containers"][0]["command"]
    created = kube.post(PODS, no_command).body
    pod = wait_phase(kube, "nocmd", "Failed", timeout=20)
    ended = container_status(pod)["state"]["terminated"]
    assert (ended["exitCode"], ended["reason"], ended["message"]) == (128, "CreateContainerError", NO_COMMAND)
    seen = []
    for event in kube.watch(PODS, timeout=10, resourceVersion=created["metadata"]["resourceVersion"],
                            fieldSelector="metadata.name=nocmd"):
        seen.append(next(iter(container_status(event["object"])["state"].values()), {}).get("reason")
                    if event["object"]["status"].get("containerStatuses") else None)
        if event["object"]["status"].get("phase") == "Failed":
            break
    assert "CreateContainerError" in seen[:-1], f"a watcher sees the waiting reason first: {seen}"
    assert wait_for(lambda: kubelet_events(kube, "nocmd"), timeout=10) == [
        ("Warning", "Failed", f"Error: {NO_COMMAND}")]

    missing = script_pod("noexe", "", container={"command": ["no-such-program-here"]})
    assert kube.post(PODS, missing).ok
    pod = wait_phase(kube, "noexe", "Failed")
    ended = container_status(pod)["state"]["terminated"]
    assert (ended["exitCode"], ended["reason"]) == (128, "StartError")
    assert "no-such-program-here" in ended["message"]


def test_pod_active_deadline(local):
    """A running container past the deadline gets SIGTERM. The deadline counts from the pod's start, not the
    container's: the test shortens it (a mutable field) once the command runs, so a slow start cannot turn it into
    the never-started case (ContainerStatusUnknown, 137), which kube reports too."""
    _cluster, kube, kubectl = local
    assert kube.post(PODS, script_pod("slow", "import time; print('up', flush=True); time.sleep(60)",
                                      activeDeadlineSeconds=3600)).ok
    wait_for(lambda: "up" in kubectl.run("logs", "slow").stdout, timeout=30, what="the container's command running")
    assert kube.patch(pod_path("slow"), {"spec": {"activeDeadlineSeconds": 1}}).ok
    pod = wait_phase(kube, "slow", "Failed", timeout=20)
    assert pod["status"]["reason"] == "DeadlineExceeded"
    assert container_status(pod)["state"]["terminated"]["exitCode"] == 128 + signal.SIGTERM
