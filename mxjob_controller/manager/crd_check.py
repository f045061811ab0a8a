"""The first request ``run`` makes: is the MXJob CRD installed, and may we see it?

Why a dedicated check: without it, a missing CRD or missing RBAC shows up as informers retrying 404s or 403s
forever, with the pod Running and nothing reconciled. The check turns each cause into one message that says what
to do, and the process exits 1. It is a single cluster-scoped GET of one named object (what the ClusterRole's
``resourceNames`` rule allows), made whatever ``--namespace`` says.
"""

from __future__ import annotations

from typing import Any

from mxjob_controller import __version__
from mxjob_controller.api.constants import CRD_NAME, STORAGE_VERSION
from mxjob_controller.runtime.client import CRDS, Client, Forbidden, KubeError, NotFound, TransportError, Unauthorized

INSTALL_HINT = (f"install it with `kubectl apply -k manifests/crd` from this project's source tree or release "
                f"archive (v{__version__}), or install everything with `kubectl apply -k manifests/install`")


class StartupError(Exception):
    """The process cannot start; the message says why and what to do (printed as is, exit code 1)."""


def check_mxjob_crd(client: Client, timeout: float = 30.0) -> dict[str, Any]:
    """The MXJob CRD; :class:`StartupError` when it is absent, not served as ``v1``, or not readable."""
    what = f"customresourcedefinitions/{CRD_NAME}"
    try:
        crd = client.get(CRDS, CRD_NAME, timeout=timeout)
    except NotFound:
        raise StartupError(f"the MXJob CRD ({CRD_NAME}) is not installed: {INSTALL_HINT}") from None
    except Forbidden as e:
        raise StartupError(f"RBAC is missing: the controller may not get {what} ({e.message}); apply "
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
    served = [v.get("name") for v in (crd.get("spec") or {}).get("versions") or () if v.get("served")]
    if STORAGE_VERSION not in served:
        raise StartupError(f"the installed MXJob CRD does not serve {STORAGE_VERSION} (it serves "
                           f"{', '.join(served) or 'nothing'}): it is older than this controller; {INSTALL_HINT}")
    return crd
