"""PodGroups, the gang-scheduling objects: one per job, named after it, in one of two flavours.

- ``volcano`` (``scheduling.volcano.sh/v1beta1``): pods are held back until Volcano admits the group
  (``Inqueue``), see :mod:`.volcano`;
- any other scheduler name: scheduler-plugins' coscheduling (``scheduling.x-k8s.io/v1alpha1``) with that
  scheduler name, see :mod:`.scheduler_plugins`.

A flavour knows its API resource, the PodGroup spec for a job's :class:`GangRequest`, how a pod joins the group
(scheduler name, annotation or label), and whether the group's state holds pod creation back.
"""

from __future__ import annotations

from mxjob_controller.core.podgroups.flavor import GangRequest, PodGroupFlavor, same_spec
from mxjob_controller.core.podgroups.scheduler_plugins import SchedulerPlugins
from mxjob_controller.core.podgroups.volcano import VOLCANO, Volcano

__all__ = ["GangRequest", "PodGroupFlavor", "flavor_for", "same_spec"]

OFF = ("", "none")


def flavor_for(gang_scheduler_name: str | None) -> PodGroupFlavor | None:
    """The flavour a ``--gang-scheduler-name`` selects: None (off) for unset, "" or "none"; Volcano for "volcano"
    (any case, as training-operator compares it); scheduler-plugins with that scheduler name otherwise."""
    name = (gang_scheduler_name or "").strip()
    if name.lower() in OFF:
        return None
    if name.lower() == VOLCANO:
        return Volcano()
    return SchedulerPlugins(name)
