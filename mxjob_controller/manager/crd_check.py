"""The first requests ``run`` makes: are the job CRDs installed, and may we see them? Which frameworks run.

Why a dedicated check: without it, a missing CRD or missing RBAC shows up as informers retrying 404s or 403s
forever, with the pod Running and nothing reconciled. The check turns each cause into one message that says what
to do, and the process exits 1. It is a single cluster-scoped GET of one named object per framework (what the
ClusterRole's ``resourceNames`` rule allows), made whatever ``--namespace`` says.

Which frameworks: those ``--frameworks`` names, each of whose CRD must be there (else exit 1); without the flag,
the defaults: MXJob, whose CRD must be there as always, and TFJob and GenericJob where their CRDs are installed (and
readable): a cluster without one gets a warning and no controller of that kind, not a failure.
"""

from __future__ import annotations

import logging
from typing import Any

from mxjob_controller import __version__
from mxjob_controller.frameworks import DEFAULT_FRAMEWORKS, FRAMEWORKS, OPTIONAL_BY_DEFAULT, FrameworkEntry
from mxjob_controller.runtime.client import CRDS, Client, Forbidden, KubeError, NotFound, TransportError, Unauthorized

log = logging.getLogger(__name__)

INSTALL_HINT = (f"install it with `kubectl apply -k manifests/crd` from this project's source tree or release "
                f"archive (v{__version__}), or install everything with `kubectl apply -k manifests/install`")


class StartupError(Exception):
    """The process cannot start; the message says why and what to do (printed as is, exit code 1)."""


class CRDUnavailableError(StartupError):
    """The framework's CRD is not there for us (absent, not readable under our RBAC, or too old): a lasting state of
    the cluster, which lets an optional framework be left out. Anything else (the API unreachable, our credentials
    refused, a 5xx) may pass, so it never silently turns a framework off."""


def check_crd(client: Client, entry: FrameworkEntry, timeout: float = 30.0) -> dict[str, Any]:
    """The framework's CRD; :class:`StartupError` when it is absent, does not serve the version the controller
    uses, or is not readable."""
    what = f"customresourcedefinitions/{entry.crd_name}"
    try:
        crd = client.get(CRDS, entry.crd_name, timeout=timeout)
    except NotFound:
        raise CRDUnavailableError(f"the {entry.kind} CRD ({entry.crd_name}) is not installed: {INSTALL_HINT}") \
            from None
    except Forbidden as e:
        raise CRDUnavailableError(f"RBAC is missing: the controller may not get {what} ({e.message}); apply "
                           "manifests/rbac (`kubectl apply -k manifests/install` does) and check that the pod runs "
                           "as the mxjob-controller service account") from None
    except Unauthorized as e:
        raise StartupError(f"the API server at {client.config.host} rejected our credentials ({e.message}); "
                           f"check the kubeconfig or service-account token ({client.config.source})") from None
    except TransportError as e:
        raise StartupError(f"cannot reach the API server at {client.config.host} ({client.config.source}): "
                           f"{e}") from None
    except KubeError as e:
        raise StartupError(f"checking {what} failed: {e}") from None
    version = entry.framework().resource.version
    served = [v.get("name") for v in (crd.get("spec") or {}).get("versions") or () if v.get("served")]
    if version not in served:
        raise CRDUnavailableError(f"the installed {entry.kind} CRD does not serve {version} (it serves "
                           f"{', '.join(served) or 'nothing'}): it is older than this controller; {INSTALL_HINT}")
    return crd


def frameworks_to_run(client: Client, requested: tuple[str, ...], timeout: float = 30.0) -> tuple[str, ...]:
    """The frameworks to reconcile: ``requested`` (each CRD checked, :class:`StartupError` for the first one that
    fails), or without a request the defaults, an optional one left out with a warning when its CRD is unavailable
    (any other failure is an error: a transient one must not turn a framework off for the process's life)."""
    chosen: list[str] = []
    for name in requested or DEFAULT_FRAMEWORKS:
        entry = FRAMEWORKS[name]
        try:
            check_crd(client, entry, timeout)
        except CRDUnavailableError as e:
            if requested or name not in OPTIONAL_BY_DEFAULT:
                raise
            log.warning("not reconciling %ss: %s (with --frameworks %s it would be an error)", entry.kind, e, name)
            continue
        chosen.append(name)
    return tuple(chosen)
