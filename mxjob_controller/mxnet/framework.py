"""MXNet as the job-controller core sees it: the adapter implementing ``core.framework.Framework``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mxjob_controller.core.framework import Verdict
from mxjob_controller.core.pods import ReplicaState
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kubeflow_api.constants import GROUP, MANAGED_BY_OURS
from mxjob_controller.kubeflow_api.status import ReplicaCounts
from mxjob_controller.mxnet import api as c
from mxjob_controller.mxnet import status_rules, wiring
from mxjob_controller.mxnet.api import JobView, mxjob_replica_counts, parse_job, with_mxjob_replica_counts
from mxjob_controller.runtime.client import Resource

MXJOBS = Resource(GROUP, c.STORAGE_VERSION, c.PLURAL, kind=c.KIND)
OPERATOR_NAME = "mxjob-controller"   # training-operator's controller name for MXJobs: drop-in labels
FRAMEWORK_NAME = "mxnet"


class MXNetFramework:
    resource = MXJOBS
    operator_name = OPERATOR_NAME
    framework_name = FRAMEWORK_NAME
    group_label = GROUP
    default_container = c.DEFAULT_CONTAINER_NAME
    managers = MANAGED_BY_OURS
    reconciler_class = None   # the core's JobReconciler: Kubeflow's job model

    def parse(self, obj: dict[str, Any]) -> tuple[JobView | None, list[FieldError]]:
        return parse_job(obj)

    def replica_types(self, job: JobView) -> Sequence[str]:
        return list(job.replicas)  # already in the API's order: Scheduler, Server, Worker, Tuner*

    def pod_template(self, job: JobView, replica_type: str, index: int) -> dict[str, Any]:
        return wiring.wired_template(job, replica_type, index)

    def service_ports(self, job: JobView, replica_type: str) -> list[dict[str, Any]]:
        return [{"name": c.DEFAULT_PORT_NAME, "port": job.replicas[replica_type].port}]

    def is_master(self, job: JobView, replica_type: str, index: int) -> bool:
        return replica_type == c.SERVER  # upstream's IsMasterRole for MXNet

    def decide(self, job: JobView, states: Mapping[str, ReplicaState]) -> Verdict:
        return status_rules.decide(job, states)

    def with_replica_counts(self, status: Mapping[str, Any], counts: Mapping[str, ReplicaCounts]) -> dict[str, Any]:
        return with_mxjob_replica_counts(status, counts)

    def replica_counts(self, status: Mapping[str, Any] | None) -> dict[str, ReplicaCounts]:
        return mxjob_replica_counts(status)   # replicaStatuses, else the Go mxnet-operator's mxReplicaStatuses
