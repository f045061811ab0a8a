"""Drives the Kubeflow Training SDK (``kubeflow-training==1.8.1``) the way its users do, inside the SDK's own
virtualenv (``tests/e2e/test_sdk_client.py`` makes it): this file imports nothing of the project.

    python sdk_driver.py KUBECONFIG NAMESPACE SCENARIO KIND=NAME...

prints one JSON document on stdout: what the SDK's calls returned, reduced to plain values for the test to assert on.
Scenarios: ``run`` (per job: create from SDK models, wait, get, pods, logs followed and not, succeeded, update; then
``list_jobs`` of each kind and ``get_job`` of every job listed) and ``delete``. An SDK call that raises ends the
driver with a traceback (exit 1).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from kubeflow.training import TrainingClient, constants, models
from kubernetes.client import V1Container, V1ObjectMeta, V1PodSpec, V1PodTemplateSpec

# Every replica prints a few numbered lines, spaced so that a followed log really streams, then exits 0.
SCRIPT = ("import os, time\n"
          "for i in range(LINES):\n"
          "    print('line', i, 'of', os.environ['HOSTNAME'], flush=True)\n"
          "    time.sleep(0.2)\n")
LINES = 8
WAIT = {"polling_interval": 1, "wait_timeout": 180, "timeout": 30}


def replica(container: str, replicas: int) -> models.KubeflowOrgV1ReplicaSpec:
    command = ["python", "-c", SCRIPT.replace("LINES", str(LINES))]
    spec = V1PodSpec(containers=[V1Container(name=container, image="python:3.11-slim", command=command)],
                     termination_grace_period_seconds=5)
    return models.KubeflowOrgV1ReplicaSpec(replicas=replicas, restart_policy="Never",
                                           template=V1PodTemplateSpec(spec=spec))


def mxjob(name: str, namespace: str) -> models.KubeflowOrgV1MXJob:
    """Scheduler, Server and Worker (the Server is the SDK's ``is_master`` pod for MXJob)."""
    specs = {t: replica(constants.MXJOB_CONTAINER, 1) for t in ("Scheduler", "Server", "Worker")}
    return models.KubeflowOrgV1MXJob(
        api_version=constants.API_VERSION, kind=constants.MXJOB_KIND,
        metadata=V1ObjectMeta(name=name, namespace=namespace),
        spec=models.KubeflowOrgV1MXJobSpec(job_mode="MXTrain", mx_replica_specs=specs,
                                           run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy="None")))


def tfjob(name: str, namespace: str) -> models.KubeflowOrgV1TFJob:
    """Two Workers and no Chief (worker 0 is the SDK's ``is_master`` pod for TFJob)."""
    return models.KubeflowOrgV1TFJob(
        api_version=constants.API_VERSION, kind=constants.TFJOB_KIND,
        metadata=V1ObjectMeta(name=name, namespace=namespace),
        spec=models.KubeflowOrgV1TFJobSpec(tf_replica_specs={"Worker": replica(constants.TFJOB_CONTAINER, 2)},
                                           run_policy=models.KubeflowOrgV1RunPolicy(clean_pod_policy="None")))


def job_summary(job: Any) -> dict[str, Any]:
    """What a deserialised job holds: its model class, name, run policy and conditions."""
    spec = job.spec
    specs = getattr(spec, "mx_replica_specs", None) or getattr(spec, "tf_replica_specs", None) or {}
    return {"class": type(job).__name__, "name": job.metadata.name, "labels": job.metadata.labels or {},
            "cleanPodPolicy": spec.run_policy.clean_pod_policy,
            "replicas": {t: s.replicas for t, s in specs.items()},
            "restartPolicies": {t: s.restart_policy for t, s in specs.items()},
            "conditions": [c.type for c in (job.status.conditions if job.status else None) or []
                           if c.status == "True"]}


def wait_master_running(client: TrainingClient, name: str, timeout: float = 120) -> list[str]:
    """Poll the SDK's pod listing until the master pod runs: ``get_job_logs(follow=True)`` skips Pending pods."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        phases = [p.status.phase for p in client.get_job_pods(name, is_master=True)]
        if phases and all(phase != "Pending" for phase in phases):
            return phases
        time.sleep(0.2)
    raise TimeoutError(f"the master pod of {name} did not leave Pending")


def run(client: TrainingClient, namespace: str, kind: str, name: str) -> dict[str, Any]:
    job = mxjob(name, namespace) if kind == constants.MXJOB_KIND else tfjob(name, namespace)
    out: dict[str, Any] = {}
    client.create_job(job)
    out["running"] = job_summary(client.wait_for_job_conditions(name, expected_conditions={"Running"}, **WAIT))
    out["masterPhases"] = wait_master_running(client, name)
    out["followed"] = client.get_job_logs(name, follow=True)[0]
    out["succeeded"] = job_summary(client.wait_for_job_conditions(name, **WAIT))
    out["isJobSucceeded"] = client.is_job_succeeded(name)
    out["get"] = job_summary(client.get_job(name))
    out["pods"] = sorted(p.metadata.name for p in client.get_job_pods(name))
    out["workerPods"] = sorted(client.get_job_pod_names(name, replica_type="worker"))
    out["logs"] = client.get_job_logs(name)[0]
    out["workerLogs"] = client.get_job_logs(name, is_master=False, replica_type="worker")[0]
    updated = client.get_job(name)
    updated.metadata.labels = {**(updated.metadata.labels or {}), "sdk-updated": "yes"}
    # The whole job goes as a merge patch: with the resourceVersion read, it would be a compare-and-swap that a status
    # write of the controller (a replica's pod finishing after the job succeeded) in between turns into a 409.
    updated.metadata.resource_version = None
    client.update_job(updated, name)
    out["updated"] = job_summary(client.get_job(name))
    return out


def main(kubeconfig: str, namespace: str, scenario: str, *jobs: str) -> None:
    """Each of ``jobs`` is ``KIND=NAME``; one process for them all (importing the SDK costs seconds of CPU)."""
    clients = {kind: (TrainingClient(config_file=kubeconfig, namespace=namespace, job_kind=kind), name)
               for kind, name in (job.split("=", 1) for job in jobs)}
    if scenario == "run":   # every flow first, then the listings: they see every job
        result: Any = {"flows": {kind: run(client, namespace, kind, name) for kind, (client, name) in clients.items()}}
        result["lists"] = {kind: [job_summary(job) for job in client.list_jobs()]
                           for kind, (client, _name) in clients.items()}
        result["gets"] = {kind: [job_summary(client.get_job(job["name"])) for job in result["lists"][kind]]
                          for kind, (client, _name) in clients.items()}
    elif scenario == "delete":
        for client, name in clients.values():
            client.delete_job(name)
        result = {"deleted": sorted(name for _client, name in clients.values())}
    else:
        raise SystemExit(f"unknown scenario {scenario!r}")
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(*sys.argv[1:])
