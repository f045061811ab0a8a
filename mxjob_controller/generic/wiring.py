"""The pod template of one GenericJob replica: the type's template, then the run mode's overrides, then the
variables, then T9k's labels and scheduler. Pure.

1. **Debug mode** (``runMode.debug.enabled``): the first container runs the type's debug command (default ``sleep
   inf``) with no ``args`` (``sleep inf <args>`` would fail); ``skipInitContainer`` drops the init containers.
   Types without a debug entry get the defaults. (GenericJob has no framework container, so "the" container is
   the first.)
2. **After a pause** (the job was paused and is not any more): a type with a ``resumeSpecs`` entry gets its
   ``command`` / ``args`` in the first container where given, and no init containers with ``skipInitContainer``;
   this holds for every pod created from then on, restarts included (a resumed job resumes from its checkpoint).
3. **Variables** (``generic/variables.py``) in every container's command, args and env values, the overrides'
   included.
4. **Labels**: ``genericjob: <job>``, ``genericjob-replica: <job>-<type>-<rank>``, ``tensorstack.dev/component:
   genericjob``, ``tensorstack.dev/component-type: user`` (T9k's), beside the core's ``training.kubeflow.org/*``.
5. **T9k scheduler** (``spec.scheduler.t9kScheduler``, while its PodGroup API is served): ``schedulerName`` and the
   labels ``scheduler.tensorstack.dev/group-name: <job>``, ``…/queue: <queue>``, ``…/role: <type>``.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller.generic import variables
from mxjob_controller.generic.api import (
    DEBUG_COMMAND,
    LABEL_COMPONENT,
    LABEL_COMPONENT_TYPE,
    LABEL_JOB,
    LABEL_REPLICA,
    GenericJobView,
    Override,
)

SCHEDULER_GROUP_LABEL = "scheduler.tensorstack.dev/group-name"
SCHEDULER_QUEUE_LABEL = "scheduler.tensorstack.dev/queue"
SCHEDULER_ROLE_LABEL = "scheduler.tensorstack.dev/role"
COMPONENT = "genericjob"
COMPONENT_TYPE = "user"


def _override(pod_spec: dict[str, Any], override: Override, *, debug: bool) -> None:
    if override.skip_init_containers:
        pod_spec.pop("initContainers", None)
    containers = pod_spec.get("containers") or []
    if not containers:
        return
    first = containers[0]
    if debug:
        first["command"] = list(override.command or DEBUG_COMMAND)
        first.pop("args", None)
        return
    if override.command is not None:
        first["command"] = list(override.command)
    if override.args is not None:
        first["args"] = list(override.args)


def wired_template(job: GenericJobView, replica_type: str, rank: int) -> dict[str, Any]:
    """A fresh pod template (``metadata`` + ``spec``) for one replica; the core adds name, its labels, owner and
    ``restartPolicy: Never``."""
    template = job.replicas[replica_type].pod_template()
    pod_spec = template.setdefault("spec", {})
    if job.debug:
        _override(pod_spec, job.debug_overrides.get(replica_type) or Override(), debug=True)
    elif job.resumed and replica_type in job.resume_overrides:
        _override(pod_spec, job.resume_overrides[replica_type], debug=False)
    variables.substitute_pod_spec(pod_spec, job.variables(replica_type, rank))
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    labels.update({LABEL_JOB: job.name, LABEL_REPLICA: variables.host(job.name, replica_type, rank),
                   LABEL_COMPONENT: COMPONENT, LABEL_COMPONENT_TYPE: COMPONENT_TYPE})
    if job.scheduler is not None and job.scheduler_name:
        pod_spec["schedulerName"] = job.scheduler_name
        labels.update({SCHEDULER_GROUP_LABEL: job.name, SCHEDULER_QUEUE_LABEL: job.scheduler.queue,
                       SCHEDULER_ROLE_LABEL: replica_type})
    return template
