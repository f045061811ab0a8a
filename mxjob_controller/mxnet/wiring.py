"""How an MXJob's processes find each other: the environment every container of every replica gets. Pure.

As Kubeflow's operators set it (training-operator ``pkg/controller.v1/mxnet/mxnet.go``), appended after the user's
own variables, in this order:

- ``MX_CONFIG``: compact JSON ``{"cluster": {<type>: [{"url": <pod name>, "port": <mxjob-port>}, ...]},
  "labels": {<type>: <TVM RPC key or "">}, "task": {"type": <type>, "index": <i>}}``, types in lower case, map keys
  sorted (byte-for-byte what Go's ``json.Marshal`` wrote);
- ``DMLC_PS_ROOT_PORT``: the Scheduler's ``mxjob-port`` (``"0"`` without a Scheduler, as upstream);
- ``DMLC_PS_ROOT_URI``: ``<job>-scheduler-0``, the bare service name (``""`` without a Scheduler);
- ``DMLC_NUM_SERVER``, ``DMLC_NUM_WORKER``: the replica counts; ``DMLC_ROLE``: the lower-case type;
- ``DMLC_USE_KUBERNETES=1``; and on workers only ``DMLC_WORKER_ID=<i>`` (BytePS needs it).

A variable the user set explicitly in a container's ``env`` is left as the user set it (not duplicated).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mxjob_controller.core.child_writes import with_env
from mxjob_controller.core.framework import per_job
from mxjob_controller.core.job_vocabulary import child_name
from mxjob_controller.mxnet.api import SCHEDULER, SERVER, WORKER, JobView

MX_CONFIG = "MX_CONFIG"


def cluster_spec(job: JobView) -> dict[str, list[dict[str, Any]]]:
    """Lower-case type → every replica's address (pod name, which its headless service resolves) and port."""
    return {rtype.lower(): [{"url": child_name(job.name, rtype, i), "port": replica.port}
                            for i in range(replica.replicas)]
            for rtype, replica in sorted(job.replicas.items(), key=lambda item: item[0].lower())}


def labels_spec(job: JobView) -> dict[str, str]:
    """Lower-case type → its AutoTVM RPC key ("" when none)."""
    return {rtype.lower(): replica.tvm_label
            for rtype, replica in sorted(job.replicas.items(), key=lambda item: item[0].lower())}


def mx_config_json(config: dict[str, Any]) -> str:
    return json.dumps(config, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class _JobWiring:
    """What every replica of one job shares: ``MX_CONFIG`` up to its task, and the DMLC variables of the cluster."""

    config_head: str    # '{"cluster":…,"labels":…,"task":'
    root_port: str
    root_uri: str
    servers: str
    workers: str


@per_job
def _job_wiring(job: JobView) -> _JobWiring:
    """The job's shared wiring, once per parsed job (built per pod, it was 11% of the controller's CPU creating a
    1/32/256 job: ``make bench``, ``large_job``)."""
    cluster = cluster_spec(job)
    head = mx_config_json({"cluster": cluster, "labels": labels_spec(job)})
    scheduler = cluster.get(SCHEDULER.lower()) or []
    root = scheduler[0] if scheduler else {"url": "", "port": 0}
    return _JobWiring(config_head=head[:-1] + ',"task":', root_port=str(root["port"]), root_uri=root["url"],
                      servers=str(len(cluster.get(SERVER.lower()) or [])),
                      workers=str(len(cluster.get(WORKER.lower()) or [])))


def dmlc_env(job: JobView, replica_type: str, index: int) -> list[dict[str, str]]:
    """The variables the controller adds for one replica, in upstream's order."""
    wiring = _job_wiring(job)
    role = replica_type.lower()
    env = [
        (MX_CONFIG, wiring.config_head + mx_config_json({"type": role, "index": index}) + "}"),
        ("DMLC_PS_ROOT_PORT", wiring.root_port),
        ("DMLC_PS_ROOT_URI", wiring.root_uri),
        ("DMLC_NUM_SERVER", wiring.servers),
        ("DMLC_NUM_WORKER", wiring.workers),
        ("DMLC_ROLE", role),
        ("DMLC_USE_KUBERNETES", "1"),
    ]
    if role == WORKER.lower():
        env.append(("DMLC_WORKER_ID", str(index)))
    return [{"name": name, "value": value} for name, value in env]


def wired_template(job: JobView, replica_type: str, index: int) -> dict[str, Any]:
    """A fresh copy of the replica's pod template with the MXNet environment on every container."""
    template = job.replicas[replica_type].pod_template()
    additions = dmlc_env(job, replica_type, index)
    for container in (template.get("spec") or {}).get("containers") or []:
        if isinstance(container, dict):
            container["env"] = with_env(container.get("env"), additions)
    return template
