"""The MXJob controller: the framework-neutral job controller (``core/job_controller.py``) run with MXNet.

    controller = MXJobController(client, ControllerOptions(namespaces=("team-a",), threadiness=4,
                                                           registry=registry)).start()

Kept as a name of its own because it is what the project has always offered (tests, benchmarks and embedders
construct it); everything it does is :class:`~mxjob_controller.core.job_controller.JobController`'s.
"""

from __future__ import annotations

from mxjob_controller.core.framework import Framework
from mxjob_controller.core.job_controller import (
    CacheSyncTimeoutError,
    ControllerOptions,
    JobController,
    StartCancelledError,
)
from mxjob_controller.core.podgroups import PodGroupAPIMissingError
from mxjob_controller.mxnet.framework import OPERATOR_NAME, MXNetFramework
from mxjob_controller.runtime.client import Client

CONTROLLER_NAME = OPERATOR_NAME

__all__ = ["CONTROLLER_NAME", "CacheSyncTimeoutError", "ControllerOptions", "MXJobController",
           "PodGroupAPIMissingError", "StartCancelledError"]


class MXJobController(JobController):
    """A :class:`JobController` whose framework defaults to MXNet."""

    def __init__(self, client: Client, options: ControllerOptions | None = None,
                 framework: Framework | None = None) -> None:
        super().__init__(client, options, framework or MXNetFramework())
