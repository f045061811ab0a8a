"""The MXNet framework adapter (mxnet/framework.py): the replica types in the API's order, the master role, the
services' port, its API resource and operator name."""

from __future__ import annotations

from mxjob_controller.mxnet.framework import MXNetFramework
from tests.mxnet_support import replica, view


def test_the_adapter() -> None:
    framework = MXNetFramework()
    job = view({"Scheduler": replica(1), "Server": replica(2), "Worker": replica(1)})
    assert list(framework.replica_types(job)) == ["Scheduler", "Server", "Worker"]
    assert [framework.is_master(job, t, 0) for t in ("Scheduler", "Server", "Worker")] == [False, True, False]
    assert framework.service_ports(job, "Server") == [{"name": "mxjob-port", "port": 9091}]
    assert (framework.resource.api_version, framework.resource.kind, framework.operator_name) == (
        "kubeflow.org/v1", "MXJob", "mxjob-controller")
