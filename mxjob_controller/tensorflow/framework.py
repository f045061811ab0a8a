"""TensorFlow as the job-controller core sees it: the adapter implementing ``core.framework.Framework``.

Names as training-operator 1.9 gives them to TFJobs, so its selectors and dashboards keep working: children
labelled ``training.kubeflow.org/operator-name: tfjob-controller`` (and ``job-name``, ``replica-type``,
``replica-index``; ``job-role: master`` on the Chief/Master, or on worker 0 when there is none), no legacy labels;
events from ``tfjob-controller``; job metrics with ``framework="tensorflow"``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from mxjob_controller.core.framework import Verdict
from mxjob_controller.core.pods import ReplicaState
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.kubeflow_api.constants import MANAGED_BY_OURS
from mxjob_controller.kubeflow_api.status import ReplicaCounts
from mxjob_controller.runtime.client import Resource
from mxjob_controller.tensorflow import api, status_rules, wiring

TFJOBS = Resource(api.GROUP, api.VERSION, api.PLURAL, kind=api.KIND)


class TensorFlowFramework:
    resource = TFJOBS
    operator_name = api.OPERATOR_NAME
    framework_name = api.FRAMEWORK_NAME
    group_label = ""   # training-operator's labels only: tf-operator v1.0's were tf-* names, not adopted
    default_container = api.CONTAINER
    managers = MANAGED_BY_OURS
    reconciler_class = None   # the core's JobReconciler: Kubeflow's job model

    def __init__(self, cluster_domain: str | None = None) -> None:
        """``cluster_domain``: appended to the hosts in ``TF_CONFIG`` (default: ``$CUSTOM_CLUSTER_DOMAIN``)."""
        self.cluster_domain = os.environ.get(wiring.CLUSTER_DOMAIN_ENV, "") if cluster_domain is None \
            else cluster_domain

    def parse(self, obj: dict[str, Any]) -> tuple[api.TFJobView | None, list[FieldError]]:
        return api.parse_tfjob(obj)

    def replica_types(self, job: api.TFJobView) -> Sequence[str]:
        return list(job.replicas)   # already in the API's order: Chief, Master, PS, Worker, Evaluator

    def pod_template(self, job: api.TFJobView, replica_type: str, index: int) -> dict[str, Any]:
        return wiring.wired_template(job, replica_type, index, self.cluster_domain)

    def service_ports(self, job: api.TFJobView, replica_type: str) -> list[dict[str, Any]]:
        """Every named port of the replica's ``tensorflow`` container (training-operator's ``GetPortsFromJob``)."""
        return [{"name": name, "port": port} for name, port in job.replicas[replica_type].ports]

    def is_master(self, job: api.TFJobView, replica_type: str, index: int) -> bool:
        if job.has_chief:
            return replica_type in api.CHIEF_TYPES
        return replica_type == api.WORKER and index == 0

    def decide(self, job: api.TFJobView, states: Mapping[str, ReplicaState]) -> Verdict:
        return status_rules.decide(job, states)

    def with_replica_counts(self, status: Mapping[str, Any], counts: Mapping[str, ReplicaCounts]) -> dict[str, Any]:
        return api.with_tfjob_replica_counts(status, counts)

    def replica_counts(self, status: Mapping[str, Any] | None) -> dict[str, ReplicaCounts]:
        return api.tfjob_replica_counts(status)
