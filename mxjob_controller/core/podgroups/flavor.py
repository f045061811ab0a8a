"""What every PodGroup flavour provides, what a job asks of its gang, and how two PodGroup specs compare."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mxjob_controller.kube.quantity import normalized
from mxjob_controller.runtime.client import Resource


@dataclass(frozen=True, slots=True)
class GangRequest:
    """What a job asks of its gang: computed from its run policy and replicas (``core/gang_request.py``)."""

    min_member: int
    queue: str = ""                        # "" lets the flavour choose (Volcano: "default")
    priority_class: str = ""
    min_resources: Mapping[str, str] = field(default_factory=dict)   # canonical quantities
    schedule_timeout_seconds: int | None = None


class PodGroupFlavor(Protocol):
    name: str               # "volcano", "scheduler-plugins": for logs and messages
    resource: Resource      # the PodGroup API
    crd_name: str           # the CRD to install when the API is missing
    scheduler_name: str     # what pods' ``schedulerName`` becomes

    def spec(self, request: GangRequest, current: Mapping[str, Any] | None) -> dict[str, Any]:
        """The PodGroup spec for ``request``; ``current`` is the existing group's spec (None when creating)."""
        ...

    def decorate(self, template: dict[str, Any], job_name: str, replica_type: str) -> None:
        """Make a pod template join the job's group (in place); a scheduler name already set is kept."""
        ...

    def holds_pods(self, podgroup: Mapping[str, Any] | None) -> bool:
        """Whether no pod may be created yet, given the group as the cache shows it (None: not seen yet)."""
        ...


def _comparable(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """A spec with empty values dropped (the Go types omit them) and quantities in canonical form."""
    out: dict[str, Any] = {}
    for key, value in (spec or {}).items():
        if value in (None, "", 0, {}, []) and value is not False:
            continue
        if key == "minResources" and isinstance(value, Mapping):
            out[key] = {name: normalized(q) for name, q in value.items()}
        else:
            out[key] = value
    return out


def same_spec(current: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """Whether a PodGroup's spec already is ``desired``, by value: ``"1000m"`` is ``"1"``, an absent field is an
    empty one. Only a real difference is worth an update."""
    return _comparable(current) == _comparable(desired)
