"""The local kubelet at its limits, through the API as a user meets them: any int64 grace period (a pod, a namespace
and an MXJob template with the int64 maximum all go, the kubelet waiting at most its cap and saying so in an event),
a container without a command under each restart policy, and the env chain that doubles at each step (it fails with
``CreateContainerConfigError`` naming the variable, and the kubelet's memory does not grow)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.local_support import (
    container_status,
    get_pod,
    group_alive,
    group_of,
    kubelet_events,
    local_cluster,
    pod_path,
    script_pod,
    wait_phase,
)
from tests.support import wait_for

pytestmark = pytest.mark.slow

PODS = "/api/v1/namespaces/default/pods"
INT64_MAX = 9223372036854775807
CAP = 1.0   # the kubelet's max_grace_period in these tests
IGNORES_SIGTERM = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\n"
                   "time.sleep(300)\n")
SLEEPS = "import time; time.sleep(300)"


def running_group(kube, name: str, namespace: str = "default", container: str = "main") -> int:
    pod = wait_for(lambda: (p := get_pod(kube, name, namespace)) and p["status"].get("phase") == "Running" and p,
                   timeout=30, what=f"pod {namespace}/{name} running")
    return group_of(pod, container)


def test_int64_max_grace_periods_delete_a_pod_a_namespace_and_an_mxjob(tmp_path):
    with local_cluster(tmp_path, controller=True, max_grace_period=CAP) as (_cluster, kube, kubectl):
        # activeDeadlineSeconds stops the containers with the pod's own grace period: capped the same way. The
        # deadline is shortened once the container ignores SIGTERM (a SIGTERM during Python's start-up would kill it).
        late = script_pod("late", IGNORES_SIGTERM, terminationGracePeriodSeconds=INT64_MAX, activeDeadlineSeconds=3600)
        assert kube.post(PODS, late).ok

        # A pod that ignores SIGTERM: the kubelet waits its cap, not 292 billion years, then SIGKILLs.
        assert kube.post(PODS, script_pod("stubborn", IGNORES_SIGTERM, terminationGracePeriodSeconds=INT64_MAX)).ok
        stubborn = running_group(kube, "stubborn")
        kubectl.ok("delete", "pod", "stubborn", "--timeout=30s")
        assert get_pod(kube, "stubborn") is None and not group_alive(stubborn)
        assert wait_for(lambda: (said := kubelet_events(kube, "stubborn")) and len(said) >= 4 and said,
                        timeout=10) == [
            ("Normal", "Created", "Created container: main"), ("Normal", "Started", "Started container main"),
            ("Warning", "GracePeriodCapped", f"Grace period {INT64_MAX}s is longer than the local kubelet waits: "
                                             f"containers get {CAP:g}s after SIGTERM, then SIGKILL"),
            ("Normal", "Killing", "Stopping container main")]

        # A namespace holding such a pod finishes terminating.
        kubectl.ok("create", "namespace", "doomed")
        assert kube.post("/api/v1/namespaces/doomed/pods",
                         script_pod("p", SLEEPS, namespace="doomed", terminationGracePeriodSeconds=INT64_MAX)).ok
        doomed = running_group(kube, "p", "doomed")
        kubectl.ok("delete", "namespace", "doomed", "--timeout=30s")
        assert kube.get("/api/v1/namespaces/doomed").status == 404 and not group_alive(doomed)

        # An MXJob whose template asks for it: deleting the job removes its pod and stops its process.
        job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "forever"},
               "spec": {"mxReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
                   "terminationGracePeriodSeconds": INT64_MAX,
                   "containers": [{"name": "mxnet", "image": "mxnet/python", "command": ["python", "-c", SLEEPS]}],
               }}}}}}
        assert kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", job).ok
        stored = kube.get("/apis/kubeflow.org/v1/namespaces/default/mxjobs/forever").body
        assert stored["spec"]["mxReplicaSpecs"]["Worker"]["template"]["spec"]["terminationGracePeriodSeconds"] == \
            INT64_MAX
        worker = running_group(kube, "forever-worker-0", container="mxnet")
        assert get_pod(kube, "forever-worker-0")["spec"]["terminationGracePeriodSeconds"] == INT64_MAX
        kubectl.ok("delete", "mxjob", "forever", "--timeout=30s")
        wait_for(lambda: get_pod(kube, "forever-worker-0") is None, timeout=30, what="the job's pod removed")
        wait_for(lambda: not group_alive(worker), timeout=10, what="the job's process stopped")

        wait_for(lambda: "up" in kubectl.run("logs", "late").stdout, timeout=30, what="late's SIGTERM ignored")
        assert kube.patch(pod_path("late"), {"spec": {"activeDeadlineSeconds": 1}}).ok
        pod = wait_phase(kube, "late", "Failed", timeout=20)
        assert pod["status"]["reason"] == "DeadlineExceeded"
        assert container_status(pod)["state"]["terminated"]["exitCode"] == 128 + signal.SIGKILL
        said = wait_for(lambda: (events := kubelet_events(kube, "late")) and len(events) >= 4 and events, timeout=10)
        assert [e[1] for e in said] == ["Created", "Started", "GracePeriodCapped", "Killing"]


def test_without_a_command_a_restarting_pod_retries_with_back_off_each_try_a_restart(tmp_path):
    with local_cluster(tmp_path) as (_cluster, kube, _kubectl):
        for policy in ("OnFailure", "Always"):
            body = script_pod(f"nocmd-{policy.lower()}", "", restart_policy=policy)
            del body["spec"]["containers"][0]["command"]
            assert kube.post(PODS, body).ok
        for policy in ("OnFailure", "Always"):
            name = f"nocmd-{policy.lower()}"
            pod = wait_for(lambda n=name: (p := get_pod(kube, n)) and (p["status"].get("containerStatuses") or [{}])[
                0].get("restartCount", 0) >= 2 and p, timeout=20, what=f"two restarts of {name}")
            status = container_status(pod)
            assert status["state"]["waiting"]["reason"] == "CreateContainerError"
            assert "images are not run locally" in status["state"]["waiting"]["message"]
            ended = status["lastState"]["terminated"]
            assert (ended["exitCode"], ended["reason"], ended.get("startedAt")) == (128, "CreateContainerError", None)
            events = kubelet_events(kube, name)
            assert [e[:2] for e in events] == [("Warning", "Failed")], "said once, not at every try"


def _memory_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/self/status")


def _config_error(kube, name: str, container: str = "main") -> dict | None:
    """The pod once its container waits with something other than ContainerCreating."""
    pod = get_pod(kube, name)
    statuses = (pod or {}).get("status", {}).get("containerStatuses") or []
    waiting = next((s["state"].get("waiting") for s in statuses if s["name"] == container), None) or {}
    return pod if waiting.get("reason") not in (None, "ContainerCreating") else None


def test_an_env_chain_that_doubles_fails_naming_the_variable_and_memory_stays_flat(tmp_path):
    """A 1.2 KB pod (or MXJob) whose 26 variables double at each step would need 256 MiB for its last one."""
    clear_refs = Path("/proc/self/clear_refs")
    if not clear_refs.exists():
        pytest.skip("no /proc/self/clear_refs to reset the peak resident set (Linux only)")
    chain = [{"name": "V0", "value": "xxxxxxxx"}] + [
        {"name": f"V{n}", "value": f"$(V{n - 1})$(V{n - 1})"} for n in range(1, 26)]
    body = script_pod("doubling", "print('never')", container={"env": chain, "args": ["$(V25)"]})
    assert len(str(body)) < 2000, "a small pod"
    job = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "doubling"},
           "spec": {"mxReplicaSpecs": {"Worker": {"replicas": 1, "restartPolicy": "Never", "template": {"spec": {
               "containers": [{"name": "mxnet", "image": "mxnet/python", "env": chain,
                               "command": ["python", "-c", "print('never')"], "args": ["$(V25)"]}]}}}}}}
    with local_cluster(tmp_path, controller=True) as (_cluster, kube, _kubectl):
        clear_refs.write_text("5")   # the peak resident set (VmHWM) starts again from what is resident now
        before = _memory_kib("VmRSS")
        assert kube.post(PODS, body).ok
        assert kube.post("/apis/kubeflow.org/v1/namespaces/default/mxjobs", job).ok
        pod = wait_for(lambda: _config_error(kube, "doubling"), timeout=20, what="the pod's error")
        worker = wait_for(lambda: _config_error(kube, "doubling-worker-0", "mxnet"), timeout=30,
                          what="the MXJob worker's error")
        grown_mib = (_memory_kib("VmHWM") - before) / 1024
        for failed, container in ((pod, "main"), (worker, "mxnet")):
            waiting = container_status(failed, container)["state"]["waiting"]
            assert waiting["reason"] == "CreateContainerConfigError"
            assert waiting["message"].startswith("environment variable V14 is longer than Linux takes after $(VAR) "
                                                 "expansion: at most 131072 bytes per string (MAX_ARG_STRLEN")
            assert failed["status"]["phase"] == "Pending"
        assert grown_mib < 50, f"the peak resident set grew by {grown_mib:.0f} MiB"
        print(f"peak resident set growth while the pod and the MXJob's worker failed: {grown_mib:.1f} MiB")
        assert wait_for(lambda: kubelet_events(kube, "doubling"), timeout=10) == [
            ("Warning", "Failed", f"Error: {container_status(pod)['state']['waiting']['message']}")]
        assert kube.delete(pod_path("doubling")).ok
        wait_for(lambda: get_pod(kube, "doubling") is None, timeout=20, what="the pod removed")



