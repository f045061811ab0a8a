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
from typing import Any

from mxjob_controller.api.constants import SCHEDULER, SERVER, WORKER
from mxjob_controller.api.view import JobView
from mxjob_controller.core.labels import child_name

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


def mx_config(job: JobView, replica_type: str, index: int) -> dict[str, Any]:
    return {"cluster": cluster_spec(job), "labels": labels_spec(job),
            "task": {"type": replica_type.lower(), "index": index}}


def mx_config_json(config: dict[str, Any]) -> str:
    return json.dumps(config, separators=(",", ":"), ensure_ascii=False)


def dmlc_env(job: JobView, replica_type: str, index: int) -> list[dict[str, str]]:
    """The variables the controller adds for one replica, in upstream's order."""
    config = mx_config(job, replica_type, index)
    scheduler = config["cluster"].get(SCHEDULER.lower()) or []
    root = scheduler[0] if scheduler else {"url": "", "port": 0}
    role = replica_type.lower()
    env = [
        (MX_CONFIG, mx_config_json(config)),
        ("DMLC_PS_ROOT_PORT", str(root["port"])),
        ("DMLC_PS_ROOT_URI", root["url"]),
        ("DMLC_NUM_SERVER", str(len(config["cluster"].get(SERVER.lower()) or []))),
        ("DMLC_NUM_WORKER", str(len(config["cluster"].get(WORKER.lower()) or []))),
        ("DMLC_ROLE", role),
        ("DMLC_USE_KUBERNETES", "1"),
    ]
    if role == WORKER.lower():
        env.append(("DMLC_WORKER_ID", str(index)))
    return [{"name": name, "value": value} for name, value in env]


def with_env(env: list[Any] | None, additions: list[dict[str, str]]) -> list[Any]:
    """The user's ``env`` followed by each addition whose name the user did not set."""
    user = list(env or [])
    taken = {e.get("name") for e in user if isinstance(e, dict)}
    return user + [dict(a) for a in additions if a["name"] not in taken]


def wired_template(job: JobView, replica_type: str, index: int) -> dict[str, Any]:
    """A fresh copy of the replica's pod template with the MXNet environment on every container."""
    template = job.replicas[replica_type].pod_template()
    additions = dmlc_env(job, replica_type, index)
    for container in (template.get("spec") or {}).get("containers") or []:
        if isinstance(container, dict):
            container["env"] = with_env(container.get("env"), additions)
    return template
