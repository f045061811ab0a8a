"""How a TFJob's processes find each other: ``TF_CONFIG``, as training-operator 1.9 builds it (one deliberate
difference: a ``TF_CONFIG`` the user set wins; 1.9 appended its own after it, and the last one wins). Pure.

    {"cluster":{"ps":["j-ps-0.ns.svc:2222"],"worker":["j-worker-0.ns.svc:2222","j-worker-1.ns.svc:2222"]},
     "task":{"type":"worker","index":1},"environment":"cloud"}

- ``cluster``: every replica type present (the evaluator too, since training-operator #1146), lower case, keys
  sorted (Go marshals a map so); each replica's address is its headless Service's DNS name
  ``<job>-<type>-<i>.<namespace>.svc``, plus ``.<domain>`` when the operator runs with ``CUSTOM_CLUSTER_DOMAIN``,
  and the ``tfjob-port`` of that replica type's ``tensorflow`` container;
- ``task``: the replica's own lower-case type and index; ``environment: "cloud"`` (read by TF <= 1.3);
- with ``enableDynamicWorker`` the sparse form instead, where a worker knows only itself and the parameter servers
  (``{"cluster":{"worker":{"<i>":"<host>"},"ps":[...]},"task":{...}}``), a parameter server only itself, any other
  type nothing (``"worker":{},"ps":[]``); a job without PS gives a worker ``"ps":null``, as Go's nil slice;
- only into the first container named ``tensorflow``, appended after the user's variables (a ``TF_CONFIG`` the
  user set is left as it is); and not at all for a job of one replica in all (nothing to find).

Compact JSON with Go's field order, byte for byte what 1.9 writes (tests/tensorflow/test_wiring.py holds its
vectors).
"""

from __future__ import annotations

import json
from typing import Any

from mxjob_controller.core.child_writes import with_env
from mxjob_controller.core.framework import per_job
from mxjob_controller.core.job_vocabulary import child_name
from mxjob_controller.tensorflow.api import CONTAINER, PS, WORKER, TFJobView

TF_CONFIG = "TF_CONFIG"
CLUSTER_DOMAIN_ENV = "CUSTOM_CLUSTER_DOMAIN"   # the operator's environment variable training-operator reads


def host(job: TFJobView, replica_type: str, index: int, cluster_domain: str = "") -> str:
    """``<job>-<type>-<i>.<ns>.svc[.<domain>]:<port>``: where replica ``index`` of ``replica_type`` listens."""
    name = f"{child_name(job.name, replica_type, index)}.{job.namespace}.svc"
    if cluster_domain:
        name += f".{cluster_domain}"
    return f"{name}:{job.replicas[replica_type].port}"


@per_job
def cluster_spec(job: TFJobView, cluster_domain: str = "") -> dict[str, list[str]]:
    """Lower-case type → every replica's address, keys sorted. Once per parsed job (``per_job``: every pod's
    ``TF_CONFIG`` lists every replica); shared, not to be changed."""
    return {rtype.lower(): [host(job, rtype, i, cluster_domain) for i in range(replica.replicas)]
            for rtype, replica in sorted(job.replicas.items(), key=lambda item: item[0].lower())}


def is_distributed(job: TFJobView) -> bool:
    """More than one replica in all: only then is there a cluster to describe (training-operator #1078)."""
    return sum(replica.replicas for replica in job.replicas.values()) != 1


def tf_config(job: TFJobView, replica_type: str, index: int, cluster_domain: str = "") -> dict[str, Any]:
    """The ``TF_CONFIG`` object of one replica (dicts in Go's field order)."""
    cluster = cluster_spec(job, cluster_domain)
    rtype = replica_type.lower()
    task = {"type": rtype, "index": index}
    if not job.enable_dynamic_worker:
        return {"cluster": cluster, "task": task, "environment": "cloud"}
    workers: dict[str, str] = {}
    ps: list[str] | None = []
    if rtype == PS.lower():
        ps = [cluster[rtype][index]]
    elif rtype == WORKER.lower():
        ps = cluster.get(PS.lower())   # None (null) without parameter servers, as 1.9's nil slice
        workers[str(index)] = cluster[rtype][index]
    return {"cluster": {"worker": workers, "ps": ps}, "task": task}


def tf_config_json(config: dict[str, Any]) -> str:
    return json.dumps(config, separators=(",", ":"), ensure_ascii=False)


@per_job
def _cluster_json(job: TFJobView, cluster_domain: str) -> str:
    return tf_config_json(cluster_spec(job, cluster_domain))


def _tf_config_value(job: TFJobView, replica_type: str, index: int, cluster_domain: str) -> str:
    """``tf_config_json(tf_config(...))``, with the cluster encoded once per job (the usual, non-dynamic form)."""
    if job.enable_dynamic_worker:
        return tf_config_json(tf_config(job, replica_type, index, cluster_domain))
    task = tf_config_json({"type": replica_type.lower(), "index": index})
    return f'{{"cluster":{_cluster_json(job, cluster_domain)},"task":{task},"environment":"cloud"}}'


def wired_template(job: TFJobView, replica_type: str, index: int, cluster_domain: str = "") -> dict[str, Any]:
    """A fresh copy of the replica's pod template with ``TF_CONFIG`` on its ``tensorflow`` container."""
    template = job.replicas[replica_type].pod_template()
    if not is_distributed(job):
        return template
    for container in (template.get("spec") or {}).get("containers") or []:
        if isinstance(container, dict) and container.get("name") == CONTAINER:
            value = _tf_config_value(job, replica_type, index, cluster_domain)
            container["env"] = with_env(container.get("env"), [{"name": TF_CONFIG, "value": value}])
            break
    return template
