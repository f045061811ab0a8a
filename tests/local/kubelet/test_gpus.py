"""GPUs on the local cluster (``--gpus 0,1,2,3``: declared, so no GPU is needed), over HTTP as a user meets them:
the Node advertises ``nvidia.com/gpu: 4``; pods and MXJob workers asking for 2 each print their
``CUDA_VISIBLE_DEVICES`` and never see the same device; a pod's devices go back to the node when it ends and are
given again; a third job's worker waits (Unschedulable) while the four are taken; a container asking for none sees
none (not the host's ``CUDA_VISIBLE_DEVICES``); a restarted container keeps its devices; a pod bound past the
scheduler to taken devices is rejected as kube's kubelet rejects it (``UnexpectedAdmissionError``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.local_support import (
    PYTHON,
    container_status,
    kubelet_events,
    local_cluster,
    pod_path,
    script_pod,
    wait_phase,
)
from tests.support import wait_for

pytestmark = pytest.mark.slow

PODS = "/api/v1/namespaces/default/pods"
MXJOBS = "/apis/kubeflow.org/v1/namespaces/default/mxjobs"
FOUR = ("0", "1", "2", "3")
SHOWN = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")


@pytest.fixture(scope="module")
def gpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpus")
    with local_cluster(folder, controller=True, gpus=FOUR) as (_cluster, kube, kubectl):
        yield kube, kubectl, folder


def show_then_wait(marker: Path | None = None, fail_first: Path | None = None) -> str:
    """A container's script: print what it sees of the GPUs (one JSON line); then, with ``marker``, run until that
    file exists; with ``fail_first``, exit 1 the first time (the file says it ran before)."""
    lines = ["import json, os, pathlib, sys, time",
             f"print(json.dumps({{k: os.environ.get(k) for k in {SHOWN!r}}}), flush=True)"]
    if fail_first is not None:
        lines += [f"ran = pathlib.Path({str(fail_first)!r})", "if ran.exists():", "    sys.exit(0)", "ran.touch()"]
    if marker is not None:
        lines += [f"marker = pathlib.Path({str(marker)!r})", "end = time.monotonic() + 120",
                  "while not marker.exists() and time.monotonic() < end:", "    time.sleep(0.05)"]
    if fail_first is not None:
        lines += ["sys.exit(1)"]
    return "\n".join(lines) + "\n"


def gpu_pod(name: str, count: int | None, script: str, **spec) -> dict:
    resources = {"limits": {"nvidia.com/gpu": str(count)}} if count is not None else {}
    return script_pod(name, script, container={"resources": resources}, **spec)


def seen(kube, name: str, previous: bool = False) -> dict:
    """What pod ``name``'s container printed of its GPUs (waits for the line)."""
    query = {"previous": "true"} if previous else {}

    def line():
        reply = kube.get(pod_path(name) + "/log", **query)
        if not reply.ok or not reply.body:
            return None
        return reply.body if isinstance(reply.body, dict) else json.loads(reply.body.splitlines()[0])
    return wait_for(line, timeout=60, interval=0.1, what=f"pod {name}'s GPUs in its log")


def devices(env: dict) -> set[str]:
    assert env["NVIDIA_VISIBLE_DEVICES"] == env["CUDA_VISIBLE_DEVICES"] and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    return set(env["CUDA_VISIBLE_DEVICES"].split(","))


def test_the_node_advertises_the_declared_gpus(gpus):
    kube, kubectl, _folder = gpus
    status = kube.get("/api/v1/nodes/local").body["status"]
    assert status["capacity"]["nvidia.com/gpu"] == status["allocatable"]["nvidia.com/gpu"] == "4"
    assert kubectl.ok("get", "node", "local", "-o", r"jsonpath={.status.allocatable.nvidia\.com/gpu}") == "4"


def test_pods_get_devices_of_their_own_given_back_when_they_end(gpus, monkeypatch):
    kube, _kubectl, folder = gpus
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")   # the host's: no container may inherit it
    for name in ("a", "b"):
        assert kube.post(PODS, gpu_pod(name, 2, show_then_wait(folder / f"{name}-done"))).ok
    assert kube.post(PODS, gpu_pod("plain", None, show_then_wait())).ok
    a, b = devices(seen(kube, "a")), devices(seen(kube, "b"))
    assert len(a) == len(b) == 2 and not a & b and a | b == set(FOUR), (a, b)
    assert seen(kube, "plain") == {"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "void",
                                   "CUDA_DEVICE_ORDER": None}, "no GPU asked for, none seen"
    wait_phase(kube, "plain", "Succeeded")

    # a ends: its devices, the only free ones, go to the next pod; b keeps its own.
    (folder / "a-done").touch()
    wait_phase(kube, "a", "Succeeded", timeout=60)
    assert kube.post(PODS, gpu_pod("c", 2, show_then_wait(folder / "c-done"))).ok
    assert devices(seen(kube, "c")) == a

    # Every device is held: a pod bound past the scheduler is refused at admission, as kube's kubelet refuses it,
    # and nothing of it runs.
    ran = folder / "refused-ran"
    refused = gpu_pod("refused", 1, f"import pathlib; pathlib.Path({str(ran)!r}).touch()", nodeName="local")
    assert kube.post(PODS, refused).ok
    message = ("Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1, "
               "Available: 0, which is unexpected")
    pod = wait_phase(kube, "refused", "Failed", timeout=60)
    assert (pod["status"]["reason"], pod["status"]["message"]) == ("UnexpectedAdmissionError",
                                                                   f"Pod was rejected: {message}")
    assert "containerStatuses" not in pod["status"] and "conditions" not in pod["status"]
    assert wait_for(lambda: kubelet_events(kube, "refused"), timeout=10) == [
        ("Warning", "UnexpectedAdmissionError", message)]
    assert not ran.exists()

    # Once b and c end, all four are free again (the refused pod holds none).
    (folder / "b-done").touch()
    (folder / "c-done").touch()
    for name in ("b", "c"):
        wait_phase(kube, name, "Succeeded", timeout=60)
    assert kube.post(PODS, gpu_pod("all", 4, show_then_wait())).ok
    assert devices(seen(kube, "all")) == set(FOUR)
    wait_phase(kube, "all", "Succeeded", timeout=60)


def test_a_restarted_container_keeps_its_devices(gpus):
    kube, _kubectl, folder = gpus
    assert kube.post(PODS, gpu_pod("first", 2, show_then_wait(folder / "first-done"))).ok
    assert devices(seen(kube, "first")) == {"0", "1"}
    flaky = gpu_pod("flaky", 2, show_then_wait(folder / "flaky-go", fail_first=Path("/tmp/flaky-ran")),
                    restart_policy="OnFailure")
    assert kube.post(PODS, flaky).ok
    held = devices(seen(kube, "flaky"))
    assert held == {"2", "3"}
    # The lower devices come free; the container then fails and is restarted in place: it keeps its own.
    (folder / "first-done").touch()
    wait_phase(kube, "first", "Succeeded", timeout=60)
    (folder / "flaky-go").touch()
    pod = wait_phase(kube, "flaky", "Succeeded", timeout=60)
    assert container_status(pod)["restartCount"] == 1
    assert devices(seen(kube, "flaky", previous=True)) == devices(seen(kube, "flaky")) == held


def mxjob(name: str, script: str) -> dict:
    container = {"name": "mxnet", "image": "mxnet/python:1.9.1", "command": [PYTHON, "-c", script],
                 "resources": {"limits": {"nvidia.com/gpu": "2"}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": name, "namespace": "default"},
            "spec": {"mxReplicaSpecs": {"Worker": {
                "replicas": 1, "restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}}}}


def test_two_mxjobs_asking_for_two_gpus_per_worker_never_share_one(gpus):
    kube, kubectl, folder = gpus
    for name in ("j1", "j2"):
        created = kube.post(MXJOBS, mxjob(name, show_then_wait(folder / "jobs-done")))
        assert created.status == 201, created.body
    one, two = devices(seen(kube, "j1-worker-0")), devices(seen(kube, "j2-worker-0"))
    assert len(one) == len(two) == 2 and not one & two, (one, two)
    for name in ("j1-worker-0", "j2-worker-0"):
        wait_phase(kube, name, "Running", timeout=30)   # both at once: each runs until the test says
    # A third job's worker waits: the node's four devices are taken, so the scheduler does not bind it.
    assert kube.post(MXJOBS, mxjob("j3", show_then_wait(folder / "j3-done"))).status == 201

    def unschedulable():
        pod = kube.get(pod_path("j3-worker-0")).body if kube.get(pod_path("j3-worker-0")).ok else {}
        return next((c for c in (pod.get("status") or {}).get("conditions") or []
                     if c["type"] == "PodScheduled" and c["status"] == "False"), None)
    condition = wait_for(unschedulable, timeout=30, what="j3's worker held back by the scheduler")
    assert condition["reason"] == "Unschedulable"
    assert condition["message"] == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    assert not kube.get(pod_path("j3-worker-0")).body["spec"].get("nodeName")
    (folder / "jobs-done").touch()
    three = devices(seen(kube, "j3-worker-0"))   # bound once the first two gave their devices back
    assert len(three) == 2
    (folder / "j3-done").touch()
    for name in ("j1", "j2", "j3"):
        wait_for(lambda n=name: "Succeeded" in kubectl.ok(
            "get", "mxjob", n, "-o", "jsonpath={.status.conditions[?(@.status=='True')].type}"),
            timeout=60, what=f"MXJob {name} succeeded")
