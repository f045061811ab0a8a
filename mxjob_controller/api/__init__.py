"""The MXJob API: names, defaults, validation, the reconciler's typed view, status shape and the CRD.

Pure functions over plain dicts (JSON as the API server sends it): no I/O, no threads.
"""

from mxjob_controller.api.defaults import apply_defaults
from mxjob_controller.api.run_policy import RunPolicy, SchedulingPolicy
from mxjob_controller.api.validation import validate_job
from mxjob_controller.api.view import JobView, ReplicaView, parse_job

__all__ = ["JobView", "ReplicaView", "RunPolicy", "SchedulingPolicy", "apply_defaults", "parse_job", "validate_job"]
