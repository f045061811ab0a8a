"""The defaults of a GenericJob written into the stored job at admission (the defaulting webhook, and the local
cluster's API server), so that ``kubectl get -o yaml`` shows what the controller will do. They are the ones the
typed view reads (``api.py``: a job created where no webhook runs behaves the same), in T9k's API reference's words:

- ``cleanUpPolicy: None`` (keep every pod, for reading logs);
- each replica spec ``replicas: 1`` and ``restartPolicy: {policy: OnFailure, limit: 0}``, a missing half filled in
  (``limit`` 0 is the budget: nothing restarts until it is raised);
- a ``scheduler.t9kScheduler`` gets ``queue: default`` and ``priority: 0``.

The debug command (``["sleep", "inf"]``) is not written: it is what a debug run does, not part of the job. Total:
malformed input is copied as it is (validation reports it), never an exception.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.core.finished_jobs import CLEAN_NONE
from mxjob_controller.core.podgroups import DEFAULT_QUEUE
from mxjob_controller.generic.api import DEFAULT_POLICY
from mxjob_controller.kube.jsoncopy import deep_copy
from mxjob_controller.kubeflow_api.constants import DEFAULT_REPLICAS


def admission_defaults(job: dict[str, Any]) -> dict[str, Any]:
    """A defaulted deep copy of ``job``; the argument is not modified."""
    out = deep_copy(job)
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    if spec.get("cleanUpPolicy") is None:
        spec["cleanUpPolicy"] = CLEAN_NONE
    replicas = spec.get("replicaSpecs")
    for replica in replicas if isinstance(replicas, list) else ():
        if isinstance(replica, dict):
            _default_replica(replica)
    scheduler = spec.get("scheduler")
    t9k = scheduler.get("t9kScheduler") if isinstance(scheduler, dict) else None
    if isinstance(t9k, dict):
        if t9k.get("queue") is None:
            t9k["queue"] = DEFAULT_QUEUE
        if t9k.get("priority") is None:
            t9k["priority"] = 0
    return out


def _default_replica(replica: dict[str, Any]) -> None:
    if replica.get("replicas") is None:
        replica["replicas"] = DEFAULT_REPLICAS
    policy = replica.get("restartPolicy")
    if policy is None:
        policy = replica["restartPolicy"] = {}
    if isinstance(policy, dict):
        if policy.get("policy") is None:
            policy["policy"] = DEFAULT_POLICY
        if policy.get("limit") is None:
            policy["limit"] = 0
