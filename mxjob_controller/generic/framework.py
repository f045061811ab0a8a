"""GenericJob as the job-controller core sees it: the adapter implementing ``core.framework.Framework``.

The core's child machinery (adoption, surplus deletion, slow-start creation under expectations, clean-up, exit
events) is used as for MXJob and TFJob; the job model is T9k's, not Kubeflow's, so the reconcile loop is GenericJob's
own (``generic/reconciler.py``, named by :attr:`GenericFramework.reconciler_class`). Children are labelled
``training.kubeflow.org/operator-name: genericjob-controller`` (what the caches select) and T9k's labels
(``generic/wiring.py``); events come from ``genericjob-controller``; job metrics carry ``framework="generic"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mxjob_controller.generic import api, wiring
from mxjob_controller.generic.reconciler import GenericJobReconciler
from mxjob_controller.generic.scheduler import T9K_SCHEDULER_NAME
from mxjob_controller.kube.field_errors import FieldError
from mxjob_controller.runtime.client import Resource

GENERICJOBS = Resource(api.GROUP, api.VERSION, api.PLURAL, kind=api.KIND)


class GenericFramework:
    resource = GENERICJOBS
    operator_name = api.OPERATOR_NAME
    framework_name = api.FRAMEWORK_NAME
    group_label = ""          # no older operator's children to adopt
    default_container = ""    # no framework container: a pod's first container speaks for it
    managers: tuple[str, ...] = ()   # GenericJob has no runPolicy.managedBy
    reconciler_class = GenericJobReconciler

    def __init__(self, scheduler_name: str = T9K_SCHEDULER_NAME) -> None:
        """``scheduler_name``: given to the pods of jobs that ask for the T9k scheduler."""
        self.scheduler_name = scheduler_name

    def parse(self, obj: dict[str, Any]) -> tuple[api.GenericJobView | None, list[FieldError]]:
        return api.parse_genericjob(obj)

    def replica_types(self, job: api.GenericJobView) -> Sequence[str]:
        return list(job.replicas)   # spec order

    def pod_template(self, job: api.GenericJobView, replica_type: str, index: int) -> dict[str, Any]:
        return wiring.wired_template(job, replica_type, index)

    def service_ports(self, job: api.GenericJobView, replica_type: str) -> list[dict[str, Any]] | None:
        """No ``spec.service``, no Services (T9k: "Defaults to empty and no service will be created")."""
        return None if job.service_ports is None else [dict(p) for p in job.service_ports]

    def is_master(self, job: api.GenericJobView, replica_type: str, index: int) -> bool:
        return False   # no job-role=master: GenericJob names no master
