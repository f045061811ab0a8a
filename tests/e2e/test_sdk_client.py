"""The Kubeflow Training SDK (``kubeflow-training==1.8.1``, the last release with MXJob) as a client of the local
cluster, unchanged: ``TrainingClient`` creates an MXJob and a TFJob from its own models, waits for their conditions,
gets and lists them, lists their pods, reads their logs (followed and not), updates and deletes them.

The SDK runs with the ``kubernetes`` client of its release (29.0.0; 37.x rewrote the models the SDK's are built on),
not with this project's pin of it: in a virtualenv of its own (cached, ``tests/cached_builds.py``), through
``tests/sdk_driver.py``; this side checks what the SDK returned against the API server's state read with the
official client and kubectl.

The jobs live in a namespace that also holds every MXJob and TFJob under ``examples/`` (some without ``runPolicy``,
one in the inline 2019 shape, two in v1alpha1): ``list_jobs`` deserialises each, and fails for the whole namespace
when one lacks ``runPolicy`` — what admission's defaulting (``kubeflow_api/defaults.py``) prevents.
"""

from __future__ import annotations

import ast
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cached_builds import sdk_venv
from tests.local_support import local_cluster
from tests.manifests import ROOT
from tests.run_process import clean_env
from tests.support import Kube, Kubectl, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sdk")]

DRIVER = ROOT / "tests" / "sdk_driver.py"
NAMESPACE = "sdk"
JOBS = {"MXJob": ("sdk-mxjob", "mxjobs"), "TFJob": ("sdk-tfjob", "tfjobs")}
KINDS = sorted(JOBS)


def example_jobs() -> list[tuple[Path, dict[str, Any]]]:
    """Every MXJob and TFJob in the YAML files under ``examples/``, with its file (``cloud-api/`` holds request
    bodies for another API, not manifests)."""
    found = []
    for path in sorted((ROOT / "examples").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") in JOBS and doc["apiVersion"].startswith("kubeflow.org/"):
                found.append((path, doc))
    return found


@pytest.fixture(scope="module")
def sdk_python() -> Path:
    """The SDK's own virtualenv (made once, then cached); its interpreter."""
    return sdk_venv() / "python"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[tuple[Kube, Kubectl]]:
    """One local cluster (kubelet and controllers) for the module, its namespace holding every example job."""
    tmp_path = tmp_path_factory.mktemp("sdk-cluster")
    with local_cluster(tmp_path, controller=True) as (_cluster, kube, kubectl):
        kubectl.ok("create", "namespace", NAMESPACE)
        for path, _doc in example_jobs():
            kubectl.ok("create", "-n", NAMESPACE, "-f", str(path))
        yield kube, kubectl


def sdk(python: Path, kubectl: Kubectl, scenario: str) -> Any:
    """Run one scenario of the driver, for both jobs, in the SDK's virtualenv; what it printed, parsed."""
    jobs = [f"{kind}={name}" for kind, (name, _plural) in JOBS.items()]
    done = subprocess.run([str(python), str(DRIVER), str(kubectl.kubeconfig), NAMESPACE, scenario, *jobs],
                          capture_output=True, text=True, timeout=400, check=False, env=clean_env(), cwd=ROOT)
    assert done.returncode == 0, f"sdk_driver {scenario} failed:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def sdk_run(sdk_python, cluster) -> dict[str, Any]:
    """The SDK's flow up to ``update_job`` for each kind, then ``list_jobs`` of each kind and ``get_job`` of every job
    listed: one driver run."""
    return sdk(sdk_python, cluster[1], "run")


@pytest.fixture(scope="module")
def flows(sdk_run) -> dict[str, Any]:
    return sdk_run["flows"]


def job_path(kind: str) -> str:
    name, plural = JOBS[kind]
    return f"/apis/kubeflow.org/v1/namespaces/{NAMESPACE}/{plural}/{name}"


@pytest.mark.parametrize("kind", KINDS)
def test_created_from_sdk_models_the_job_runs_and_succeeds(flows, cluster, kind):
    kube, _kubectl = cluster
    flow = flows[kind]
    assert "Running" in flow["running"]["conditions"]
    assert flow["succeeded"]["conditions"][-1] == "Succeeded" and flow["isJobSucceeded"] is True
    stored = kube.get(job_path(kind)).body
    assert [c["type"] for c in stored["status"]["conditions"] if c["status"] == "True"][-1] == "Succeeded"
    model = "KubeflowOrgV1MXJob" if kind == "MXJob" else "KubeflowOrgV1TFJob"
    assert flow["get"]["class"] == model and flow["get"]["name"] == JOBS[kind][0]
    assert flow["get"]["cleanPodPolicy"] == stored["spec"]["runPolicy"]["cleanPodPolicy"] == "None"
    replicas = {"MXJob": {"Scheduler": 1, "Server": 1, "Worker": 1}, "TFJob": {"Worker": 2}}[kind]
    assert flow["get"]["replicas"] == replicas


@pytest.mark.parametrize("kind", KINDS)
def test_get_job_pods_and_logs_followed_and_not(flows, cluster, kind):
    _kube, kubectl = cluster
    flow = flows[kind]
    name = JOBS[kind][0]
    selector = f"training.kubeflow.org/job-name={name}"
    pods = sorted(p["metadata"]["name"] for p in kubectl.json("get", "pods", "-n", NAMESPACE, "-l", selector)["items"])
    assert flow["pods"] == pods
    master = {"MXJob": f"{name}-server-0", "TFJob": f"{name}-worker-0"}[kind]   # upstream's IsMasterRole
    workers = {"MXJob": [f"{name}-worker-0"], "TFJob": [f"{name}-worker-0", f"{name}-worker-1"]}[kind]
    assert flow["workerPods"] == workers
    log = kubectl.ok("logs", "-n", NAMESPACE, master)
    assert list(flow["logs"]) == [master] and flow["logs"][master] == log
    # Followed, the SDK reads the stream line by line (kubernetes' Watch) and joins the lines without their newlines.
    assert set(flow["masterPhases"]) <= {"Running", "Succeeded"}
    assert flow["followed"] == {master: log.replace("\n", "")}
    assert flow["logs"][master].splitlines() == [f"line {i} of {master}" for i in range(8)]
    assert sorted(flow["workerLogs"]) == workers
    for pod in workers:
        assert flow["workerLogs"][pod].splitlines() == [f"line {i} of {pod}" for i in range(8)]


def test_list_jobs_returns_every_job_of_the_namespace_examples_included(sdk_run, cluster):
    _kube, kubectl = cluster
    examples = example_jobs()
    for kind in KINDS:
        listed = sdk_run["lists"][kind]
        stored = kubectl.json("get", JOBS[kind][1], "-n", NAMESPACE)["items"]
        expected = {doc["metadata"]["name"] for _path, doc in examples if doc["kind"] == kind} | {JOBS[kind][0]}
        assert sorted(j["name"] for j in listed) == sorted(j["metadata"]["name"] for j in stored) == sorted(expected)
        model = "KubeflowOrgV1MXJob" if kind == "MXJob" else "KubeflowOrgV1TFJob"
        assert {j["class"] for j in listed} == {model}
        def fixed(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:   # the example jobs still run
            return [{k: v for k, v in summary.items() if k != "conditions"} for summary in summaries]
        assert fixed(sdk_run["gets"][kind]) == fixed(listed)     # get_job of each job, examples included
        # Every job is stored with a runPolicy (the SDK's model requires one); cleanPodPolicy is under it, except in a
        # job of the inline 2019 shape, which keeps it inline (where the SDK's model has no field for it).
        by_name = {j["metadata"]["name"]: j["spec"] for j in stored}
        assert {j["name"]: j["cleanPodPolicy"] for j in listed} == \
            {name: spec["runPolicy"].get("cleanPodPolicy") for name, spec in by_name.items()}
        assert all(spec["runPolicy"].get("cleanPodPolicy") or spec["cleanPodPolicy"] for spec in by_name.values())
    no_run_policy = [path.name for path, doc in examples if "runPolicy" not in doc.get("spec", {})]
    assert "mxjob-dist-train.yaml" in no_run_policy and "tfjob-dist.yaml" in no_run_policy   # what the issue found


@pytest.mark.parametrize("kind", KINDS)
def test_update_job_patches_the_stored_job(flows, cluster, kind):
    kube, _kubectl = cluster
    assert flows[kind]["updated"]["labels"].get("sdk-updated") == "yes"
    stored = kube.get(job_path(kind)).body
    assert stored["metadata"]["labels"]["sdk-updated"] == "yes"
    assert [c["type"] for c in stored["status"]["conditions"] if c["status"] == "True"][-1] == "Succeeded"


def test_delete_job_removes_the_jobs(flows, sdk_python, cluster):
    kube, kubectl = cluster
    assert sdk(sdk_python, kubectl, "delete") == {"deleted": sorted(name for name, _plural in JOBS.values())}
    for kind in KINDS:
        wait_for(lambda kind=kind: kube.get(job_path(kind)).status == 404, timeout=30, what=f"{kind} gone")


def readme_snippet() -> str:
    """The Python block of the SDK section of the local-cluster guide (tests/e2e/test_readme_flows.py holds every
    document's blocks to being run somewhere)."""
    text = (ROOT / "docs/local-cluster.md").read_text()
    section = text[text.index("## From Python: the Kubeflow Training SDK"):]
    return section[section.index("```python\n") + len("```python\n"):section.index("\n```", section.index("```python"))]


def test_the_readme_sdk_snippet_runs_as_written(sdk_python, cluster):
    """Verbatim but for the kubeconfig's path: creates, waits for, lists, reads and deletes ``default/hello``."""
    kube, kubectl = cluster
    script = readme_snippet().replace('".mxjob-local/kubeconfig"', repr(str(kubectl.kubeconfig)))
    done = subprocess.run([str(sdk_python), "-c", script], capture_output=True, text=True, timeout=300, check=False,
                          env=clean_env(), cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    names, pods, logs = done.stdout.splitlines()[-3:]
    assert names == "['hello']"
    assert sorted(ast.literal_eval(pods)) == ["hello-scheduler-0", "hello-server-0", "hello-worker-0"]
    assert logs == "{'hello-worker-0': 'hello\\n'}"
    wait_for(lambda: kube.get("/apis/kubeflow.org/v1/namespaces/default/mxjobs/hello").status == 404, timeout=30,
             what="mxjob hello gone")
