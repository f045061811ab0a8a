"""Is the chosen gang scheduler's PodGroup API served? Asked once, when the controller starts.

Why at start: without the PodGroup CRD every job would fail its first PodGroup write and sit retrying, and the
PodGroup informer would never sync; one clear error naming the CRD to install is better. The question goes to
discovery (``/apis/<group>/<version>``), what every client may read, so it needs no RBAC of its own (training-
operator asked its REST mapper the same).
"""

from __future__ import annotations

from mxjob_controller.core.podgroups import PodGroupFlavor
from mxjob_controller.runtime.client import Client, NotFound, Resource

INSTALL_HINTS = {
    "volcano": "install Volcano (https://volcano.sh), which ships it",
    "scheduler-plugins": "install scheduler-plugins' coscheduling (https://github.com/kubernetes-sigs/"
                         "scheduler-plugins), which ships it",
}


class PodGroupAPIMissingError(RuntimeError):
    """Gang scheduling is on, but the API server does not serve the chosen scheduler's PodGroups."""


def is_served(client: Client, resource: Resource, timeout: float = 30.0) -> bool:
    """Whether the API server serves ``resource`` (its group version's discovery lists it). Errors other than a
    404 (the API server unreachable...) propagate."""
    try:
        served = client.request("GET", f"/apis/{resource.group}/{resource.version}", timeout=timeout) or {}
    except NotFound:
        return False
    return any(r.get("name") == resource.plural for r in served.get("resources") or () if isinstance(r, dict))


def require_podgroup_api(client: Client, flavor: PodGroupFlavor, timeout: float = 30.0) -> None:
    """Return if ``flavor``'s PodGroups are served; raise :class:`PodGroupAPIMissingError` (saying which CRD to
    install) if not. Other errors (the API server unreachable...) propagate as they are."""
    resource = flavor.resource
    if is_served(client, resource, timeout):
        return
    raise PodGroupAPIMissingError(
        f"gang scheduling with {flavor.name} (scheduler {flavor.scheduler_name!r}) needs the PodGroup CRD "
        f"{flavor.crd_name} ({resource.api_version}), which this cluster does not serve: "
        f"{INSTALL_HINTS.get(flavor.name, 'install it')}, or start the controller without --gang-scheduler-name")
